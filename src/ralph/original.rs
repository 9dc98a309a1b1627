//! The original `artifact.md` is the user's: a document loop's runs read it and write their
//! iteration's copy. It is kept (a copy in the loop's records, out of the agent's sight) before
//! each iteration's run and put back after it when the run changed it; when the run wrote
//! nothing to its iteration's artifact, its edit of the original becomes that artifact (the agent
//! wrote to the wrong file). The run line says which, so "before" figures always measure the
//! original as the user left it.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::disk::layout::Layout;
use crate::error::{IoContext, Result};
use crate::sys::fsutil;

/// What the original and the iteration's artifact held before a run.
#[derive(Debug)]
pub struct Held {
    /// The copy of the original in the loop's records.
    copy: PathBuf,
    /// The iteration's artifact as the run found it (its seed).
    seed: Option<String>,
    /// The original's permissions, put back with it.
    mode: u32,
}

/// Write the kept copy's bytes over the original, with `mode` when given (else the mode the
/// file there has).
fn restore(copy: &Path, original: &Path, mode: Option<u32>) -> Result<()> {
    let bytes = std::fs::read(copy).at(copy, "read")?;
    fsutil::atomic_write(original, &bytes)?;
    if let Some(mode) = mode {
        std::fs::set_permissions(original, std::fs::Permissions::from_mode(mode))
            .at(original, "set the mode of")?;
    }
    Ok(())
}

/// What became of a run's edit of the original. Pure.
#[must_use]
pub fn said(n: u32, deleted: bool, taken: bool) -> String {
    match (deleted, taken) {
        (true, _) => "deleted the original; the original restored".to_string(),
        (false, true) => {
            format!(
                "wrote to the original; taken as iteration {n}'s artifact and the original restored"
            )
        }
        (false, false) => "wrote to the original; the original restored".to_string(),
    }
}

/// Keep the original and iteration `n`'s seed before a run of a `document` loop (none for a
/// code loop, whose `artifact.md` is its spec, or when there is no original).
pub fn hold(layout: &Layout, n: u32, document: bool) -> Result<Option<Held>> {
    let original = layout.original_artifact();
    if !document || !original.is_file() {
        return Ok(None);
    }
    fsutil::create_dir_all(layout.records())?;
    let copy = layout.records().join("original.md");
    fsutil::copy_file(&original, &copy)?;
    let mode = std::fs::metadata(&original)
        .at(&original, "read the mode of")?
        .permissions()
        .mode()
        & 0o7777;
    Ok(Some(Held {
        copy,
        seed: fsutil::read_opt(&layout.iteration_artifact(n))?,
        mode,
    }))
}

/// After a run of iteration `n`: put the original back when the run changed it, its edit taken
/// as the iteration's artifact when the run left that as it found it and `may_take` (an
/// iteration's own run; a revision round's edit of the original is no revision of the
/// iteration's document). What became of it, if anything did.
pub fn put_back(
    layout: &Layout,
    n: u32,
    held: Option<Held>,
    may_take: bool,
) -> Result<Option<String>> {
    let Some(held) = held else {
        return Ok(None);
    };
    let original = layout.original_artifact();
    if fsutil::same_content(&original, &held.copy)? {
        fsutil::remove_file_opt(&held.copy)?;
        return Ok(None);
    }
    let deleted = !original.is_file() || crate::sys::beneath::is_link(&original);
    let artifact = layout.iteration_artifact(n);
    let untouched = fsutil::read_opt(&artifact).ok().flatten() == held.seed;
    let taken =
        may_take && !deleted && untouched && artifact.parent().is_some_and(std::path::Path::is_dir);
    if taken {
        fsutil::copy_file(&original, &artifact)?;
    }
    if deleted {
        fsutil::remove_dir_all_opt(&original)?;
    }
    restore(&held.copy, &original, Some(held.mode))?;
    fsutil::remove_file_opt(&held.copy)?;
    let what = said(n, deleted, taken);
    let at = if n == 0 {
        "planning".to_string()
    } else {
        format!("iteration {n}")
    };
    tracing::warn!("{at}: the agent {what}");
    Ok(Some(what))
}

/// At a start after a supervisor died during a run: the original as it was before that run,
/// put back when the run changed it. Whether it was.
pub fn restore_after_crash(layout: &Layout) -> Result<bool> {
    let copy = layout.records().join("original.md");
    if !copy.is_file() {
        return Ok(false);
    }
    let original = layout.original_artifact();
    let changed = !fsutil::same_content(&original, &copy)?;
    if changed {
        if crate::sys::beneath::is_link(&original) || original.is_dir() {
            fsutil::remove_dir_all_opt(&original)?;
        }
        restore(&copy, &original, None)?;
        tracing::warn!(
            "{}: changed by a run whose supervisor died; put back as it was before that run",
            original.display()
        );
    }
    fsutil::remove_file_opt(&copy)?;
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_became_of_an_edit_of_the_original_is_said() {
        assert_eq!(
            said(2, false, true),
            "wrote to the original; taken as iteration 2's artifact and the original restored"
        );
        assert_eq!(
            said(2, false, false),
            "wrote to the original; the original restored"
        );
        assert_eq!(
            said(2, true, false),
            "deleted the original; the original restored"
        );
    }

    #[test]
    fn an_edit_of_the_original_is_put_back_and_taken_when_the_artifact_was_not_written() {
        let d = tempfile::tempdir().unwrap();
        let l = Layout::new(d.path());
        std::fs::write(l.original_artifact(), "# Mine\n").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let readable = std::fs::Permissions::from_mode(0o644);
        std::fs::set_permissions(l.original_artifact(), readable).unwrap();
        std::fs::create_dir_all(l.iteration_dir(2)).unwrap();
        std::fs::write(l.iteration_artifact(2), "# Mine\n").unwrap();
        let held = hold(&l, 2, true).unwrap();
        std::fs::write(l.original_artifact(), "# Mine\n\nMore.\n").unwrap();
        let what = put_back(&l, 2, held, true).unwrap();
        assert!(what.unwrap().contains("taken as iteration 2's artifact"));
        assert_eq!(
            std::fs::read_to_string(l.original_artifact()).unwrap(),
            "# Mine\n"
        );
        assert_eq!(mode(&l.original_artifact()), 0o644);
        assert_eq!(
            std::fs::read_to_string(l.iteration_artifact(2)).unwrap(),
            "# Mine\n\nMore.\n"
        );
        // A run that deletes it: put back, its mode with it.
        let held = hold(&l, 2, true).unwrap();
        std::fs::remove_file(l.original_artifact()).unwrap();
        let what = put_back(&l, 2, held, true).unwrap();
        assert_eq!(
            what.as_deref(),
            Some("deleted the original; the original restored")
        );
        assert_eq!(mode(&l.original_artifact()), 0o644);
        // A run that leaves the original alone: nothing said, nothing kept.
        let held = hold(&l, 2, true).unwrap();
        assert_eq!(put_back(&l, 2, held, true).unwrap(), None);
        assert!(!l.records().join("original.md").exists());
        // A supervisor that died during a run: the next start puts the original back.
        let _held = hold(&l, 2, true).unwrap();
        std::fs::write(l.original_artifact(), "# Mine, edited\n").unwrap();
        assert!(restore_after_crash(&l).unwrap());
        assert_eq!(
            std::fs::read_to_string(l.original_artifact()).unwrap(),
            "# Mine\n"
        );
        assert!(!restore_after_crash(&l).unwrap());
    }
}
