//! The original `artifact.md` is the user's: a document loop's runs read it and write their
//! iteration's copy. It is kept (a copy in the loop's records, out of the agent's sight, with its
//! mode beside it) before each iteration's run and put back after it when the run changed its
//! bytes or its mode; when the run wrote nothing to its iteration's artifact, its edit of the
//! original becomes that artifact (the agent wrote to the wrong file) — unless the edit is larger
//! than the loop takes of a file. The run line says which, so "before" figures always measure the
//! original as the user left it. A start after a supervisor died during a run puts it back first,
//! before anything reads it.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::disk::layout::Layout;
use crate::error::{IoContext, Result};
use crate::sys::{fsutil, spare};

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

/// What a run did to the original (each is put back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edit {
    /// Deleted it, or put something else in its place.
    Deleted,
    /// Wrote to it, and the edit became the iteration's artifact.
    Taken,
    /// Wrote to it.
    Restored,
    /// Wrote to it, leaving it this many bytes: more than the loop takes of a file.
    TooLarge(u64),
    /// Changed its mode (to this one) and nothing else.
    Mode(u32),
}

/// The kept copy of the original, and its mode beside it. Both stay between runs, saved
/// through their spares (`sys::spare`: a run makes and frees no file here); the mode file says
/// [`CHECKED`] once the run that held them was checked.
fn kept(layout: &Layout) -> (PathBuf, PathBuf) {
    let records = layout.records();
    (records.join("original.md"), records.join("original.mode"))
}

/// The mode file's word for "no run holds the copy".
const CHECKED: &str = "-";

/// Whether the kept copy is a run's whose supervisor never checked it (a copy with a mode
/// beside it, or with none: a crash before the mode was written, with nothing run yet).
fn held(layout: &Layout) -> bool {
    let (copy, mode_file) = kept(layout);
    copy.is_file()
        && fsutil::read_opt(&mode_file)
            .ok()
            .flatten()
            .is_none_or(|m| m.trim() != CHECKED)
}

/// The file the original will be once a start has recovered it: the copy kept before a run
/// whose supervisor died, when there is one; else the original itself.
#[must_use]
pub fn as_recovered(layout: &Layout) -> PathBuf {
    if held(layout) {
        kept(layout).0
    } else {
        layout.original_artifact()
    }
}

/// Write the kept copy's bytes over the original (whatever is in its place goes), with `mode`.
fn restore(copy: &Path, original: &Path, mode: u32) -> Result<()> {
    if std::fs::symlink_metadata(original).is_ok_and(|m| !m.is_file()) {
        fsutil::remove_dir_all_opt(original)?;
    }
    let bytes = std::fs::read(copy).at(copy, "read")?;
    fsutil::atomic_write(original, &bytes)?;
    set_mode(original, mode)
}

fn set_mode(path: &Path, mode: u32) -> Result<()> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .at(path, "set the mode of")
}

/// The mode of the regular file at `path`; `None` when there is none (gone, a link, a
/// directory).
fn file_mode(path: &Path) -> Option<u32> {
    std::fs::symlink_metadata(path)
        .ok()
        .filter(std::fs::Metadata::is_file)
        .map(|m| m.permissions().mode() & 0o7777)
}

/// What became of a run's edit of the original. Pure.
#[must_use]
pub fn said(n: u32, edit: Edit) -> String {
    match edit {
        Edit::Deleted => "deleted the original; the original restored".to_string(),
        Edit::Taken => format!(
            "wrote to the original; taken as iteration {n}'s artifact and the original restored"
        ),
        Edit::Restored => "wrote to the original; the original restored".to_string(),
        Edit::TooLarge(len) => format!(
            "wrote to the original, leaving it {len} bytes, more than the loop takes of a file; not taken, the original restored"
        ),
        Edit::Mode(mode) => {
            format!("changed the original's mode to {mode:o}; the original restored")
        }
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
    let (copy, mode_file) = kept(layout);
    let mode = std::fs::metadata(&original)
        .at(&original, "read the mode of")?
        .permissions()
        .mode()
        & 0o7777;
    // The copy first: the mode written says it is whole.
    spare::copy(&original, &copy)?;
    spare::replace(
        &mode_file,
        format!("{mode:o}\n").as_bytes(),
        "atomic-after-temp-write",
    )?;
    Ok(Some(Held {
        copy,
        seed: fsutil::read_opt(&layout.iteration_artifact(n))?,
        mode,
    }))
}

/// What the run did to the original, its mode already put back (so its bytes can be read).
/// `None`: nothing.
fn edit_of(layout: &Layout, n: u32, held: &Held, may_take: bool, cap: u64) -> Result<Option<Edit>> {
    let original = layout.original_artifact();
    let Some(mode) = file_mode(&original) else {
        return Ok(Some(Edit::Deleted));
    };
    if mode != held.mode {
        set_mode(&original, held.mode)?;
    }
    if fsutil::same_content(&original, &held.copy)? {
        return Ok((mode != held.mode).then_some(Edit::Mode(mode)));
    }
    let len = std::fs::metadata(&original).map_or(0, |m| m.len());
    if len > cap {
        return Ok(Some(Edit::TooLarge(len)));
    }
    let artifact = layout.iteration_artifact(n);
    let untouched = fsutil::read_opt(&artifact).ok().flatten() == held.seed;
    let dir = artifact.parent().is_some_and(Path::is_dir);
    Ok(Some(if may_take && untouched && dir {
        Edit::Taken
    } else {
        Edit::Restored
    }))
}

/// After a run of iteration `n`: put the original back (bytes and mode) when the run changed it,
/// its edit taken as the iteration's artifact when the run left that as it found it, `may_take`
/// (an iteration's own run; a revision round's edit of the original is no revision of the
/// iteration's document) and the edit is no larger than `cap`. What became of it, if anything
/// did.
pub fn put_back(
    layout: &Layout,
    n: u32,
    held: Option<Held>,
    may_take: bool,
    cap: u64,
) -> Result<Option<String>> {
    let Some(held) = held else {
        return Ok(None);
    };
    let original = layout.original_artifact();
    let edit = edit_of(layout, n, &held, may_take, cap)?;
    if edit == Some(Edit::Taken) {
        // Read within the cap `edit_of` checked; the iteration's own (seeded) artifact is the
        // loop's work so far.
        let read = |p: &std::path::Path| std::fs::read(p).ok();
        let (was, now) = (read(&held.copy), read(&original));
        let seeded = read(&layout.iteration_artifact(n));
        match (was, now, seeded) {
            (Some(was), Some(now), Some(seeded)) => {
                fsutil::atomic_write(&layout.iteration_artifact(n), &taken(&was, &now, &seeded))?
            }
            _ => fsutil::copy_file(&original, &layout.iteration_artifact(n))?,
        }
    }
    if edit.is_some() {
        restore(&held.copy, &original, held.mode)?;
    }
    forget(layout)?;
    let Some(edit) = edit else {
        return Ok(None);
    };
    let what = said(n, edit);
    let at = if n == 0 {
        "planning".to_string()
    } else {
        format!("iteration {n}")
    };
    tracing::warn!("{at}: the agent {what}");
    Ok(Some(what))
}

/// What an edit of the original becomes as the iteration's artifact: what the agent added at
/// the end of the original (the common case: it appended) added to the loop's work so far
/// (`seeded`, the artifact the iteration started from), so the earlier iterations' work is not
/// lost; any other edit, the edited original whole. Pure.
#[must_use]
pub fn taken(was: &[u8], now: &[u8], seeded: &[u8]) -> Vec<u8> {
    match now.strip_prefix(was) {
        Some(added) if !added.is_empty() && seeded != was => {
            let mut out = seeded.to_vec();
            if !out.is_empty() && !out.ends_with(b"\n") && !added.starts_with(b"\n") {
                out.push(b'\n');
            }
            out.extend_from_slice(added);
            out
        }
        _ => now.to_vec(),
    }
}

/// The kept copy no longer held: its mode file says so (both stay for the next run).
fn forget(layout: &Layout) -> Result<()> {
    let (_, mode_file) = kept(layout);
    spare::replace(
        &mode_file,
        format!("{CHECKED}\n").as_bytes(),
        "atomic-after-temp-write",
    )
}

/// The loop is done: the spares of the copy and its mode go, and the two with them when no
/// run holds them (no copy of the user's document stays in the records).
pub fn discard(layout: &Layout) {
    let (copy, mode_file) = kept(layout);
    spare::discard(&copy);
    spare::discard(&mode_file);
    if !held(layout) {
        let _gone = fsutil::remove_file_opt(&copy);
        let _gone = fsutil::remove_file_opt(&mode_file);
    }
}

/// At a start after a supervisor died during a run: the original as it was before that run, its
/// bytes and mode, put back when the run changed either. Whether it was.
pub fn restore_after_crash(layout: &Layout) -> Result<bool> {
    if !held(layout) {
        return Ok(false);
    }
    let (copy, mode_file) = kept(layout);
    let original = layout.original_artifact();
    let now = file_mode(&original);
    let mode = fsutil::read_opt(&mode_file)?
        .and_then(|m| u32::from_str_radix(m.trim(), 8).ok())
        // A document's permission bits, never set-id or sticky ones (with the sandbox off an
        // agent reaches the records).
        .map(|m| m & 0o777)
        .or(now)
        .unwrap_or(0o644);
    if now.is_some_and(|m| m != mode) {
        set_mode(&original, mode)?;
    }
    let changed = now != Some(mode) || !fsutil::same_content(&original, &copy)?;
    if changed {
        restore(&copy, &original, mode)?;
        tracing::warn!(
            "{}: changed by a run whose supervisor died; put back as it was before that run",
            original.display()
        );
    }
    forget(layout)?;
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_append_to_the_original_is_added_to_the_work_so_far() {
        let was = b"# Kettle\n\nIntro.\n".as_slice();
        let seeded = b"# Kettle\n\nIntro.\n\n## Background\nFrom iteration 1.\n".as_slice();
        // Appended: added to the seeded artifact, iteration 1's section kept.
        let now = [was, b"\n## Measurements\nNew.\n"].concat();
        assert_eq!(
            String::from_utf8(taken(was, &now, seeded)).unwrap(),
            "# Kettle\n\nIntro.\n\n## Background\nFrom iteration 1.\n\n## Measurements\nNew.\n"
        );
        // Edited elsewhere: the edited original whole.
        let rewritten = b"# Kettle, rewritten\n".as_slice();
        assert_eq!(taken(was, rewritten, seeded), rewritten);
        // The first iteration (seeded is the original): the edited original.
        assert_eq!(taken(was, &now, was), now);
    }

    #[test]
    fn what_became_of_an_edit_of_the_original_is_said() {
        assert_eq!(
            said(2, Edit::Taken),
            "wrote to the original; taken as iteration 2's artifact and the original restored"
        );
        assert_eq!(
            said(2, Edit::Restored),
            "wrote to the original; the original restored"
        );
        assert_eq!(
            said(2, Edit::Deleted),
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
        let what = put_back(&l, 2, held, true, 1 << 20).unwrap();
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
        let what = put_back(&l, 2, held, true, 1 << 20).unwrap();
        assert_eq!(
            what.as_deref(),
            Some("deleted the original; the original restored")
        );
        assert_eq!(mode(&l.original_artifact()), 0o644);
        // A run that leaves the original alone: nothing said, nothing held for a start.
        let held = hold(&l, 2, true).unwrap();
        assert_eq!(put_back(&l, 2, held, true, 1 << 20).unwrap(), None);
        assert_eq!(as_recovered(&l), l.original_artifact());
        assert!(!restore_after_crash(&l).unwrap());
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

    #[test]
    fn a_mode_change_is_put_back_and_an_edit_past_the_cap_is_not_taken() {
        let d = tempfile::tempdir().unwrap();
        let l = Layout::new(d.path());
        let original = l.original_artifact();
        std::fs::write(&original, "# Mine\n").unwrap();
        std::fs::set_permissions(&original, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::create_dir_all(l.iteration_dir(1)).unwrap();
        let held = hold(&l, 1, true).unwrap();
        std::fs::set_permissions(&original, std::fs::Permissions::from_mode(0o4777)).unwrap();
        assert_eq!(
            put_back(&l, 1, held, true, 64).unwrap().as_deref(),
            Some("changed the original's mode to 4777; the original restored")
        );
        assert_eq!(file_mode(&original), Some(0o644));
        let held = hold(&l, 1, true).unwrap();
        std::fs::write(&original, "x".repeat(65)).unwrap();
        assert_eq!(
            put_back(&l, 1, held, true, 64).unwrap().as_deref(),
            Some(
                "wrote to the original, leaving it 65 bytes, more than the loop takes of a file; not taken, the original restored"
            )
        );
        assert!(!l.iteration_artifact(1).exists());
        assert_eq!(std::fs::read_to_string(&original).unwrap(), "# Mine\n");
        // A crash copy is what a start checks, and is put back with its mode.
        let _held = hold(&l, 1, true).unwrap();
        std::fs::remove_file(&original).unwrap();
        assert_eq!(as_recovered(&l), l.records().join("original.md"));
        assert!(restore_after_crash(&l).unwrap());
        assert_eq!(file_mode(&original), Some(0o644));
        assert_eq!(as_recovered(&l), original);
    }
}
