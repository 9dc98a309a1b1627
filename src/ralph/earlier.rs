//! An earlier iteration's directory is the loop's record of that iteration: what its commit
//! holds, and what the result is copied from. A later run that changes a file there has the
//! change put back as HEAD holds it (a file HEAD does not hold there is removed), and — as with
//! the loop's other protected files — its iteration is rejected; the change is never committed.
//! An iteration no commit holds (committing is off) has no record to put back from. The folders
//! on the way to an iteration's directory are the loop's own too: a link or a file a run left in
//! their place is removed before the loop writes there, never followed.

use std::path::{Path, PathBuf};

use crate::disk::layout::{Layout, iteration_number};
use crate::error::Result;
use crate::git::Repo;
use crate::sys::fsutil;

/// The directory (relative to the artifact dir) of the iteration before `n` that `rel` lies in,
/// if it lies in one under `wiggum/`. Pure.
#[must_use]
pub fn earlier_dir(rel: &Path, n: u32) -> Option<&Path> {
    if rel.components().next()?.as_os_str() != "wiggum" {
        return None;
    }
    rel.ancestors().find(|a| {
        a.file_name()
            .and_then(|f| f.to_str())
            .and_then(iteration_number)
            .is_some_and(|i| i < n)
    })
}

/// Put back what the run of iteration `n` changed (`changed`, relative to the artifact dir) in
/// an earlier iteration's committed directory. The paths put back, as the records name them.
pub fn put_back(repo: &Repo, layout: &Layout, n: u32, changed: &[PathBuf]) -> Result<Vec<String>> {
    let mut back = Vec::new();
    for rel in changed {
        let Some(dir) = earlier_dir(rel, n) else {
            continue;
        };
        if !repo.in_head(dir) {
            continue;
        }
        let path = layout.root().join(rel);
        // A link or a file the run put where a directory on the way was is not followed.
        if let Some(parent) = path.parent() {
            clear_planted(&layout.wiggum(), parent)?;
        }
        if std::fs::symlink_metadata(&path).is_ok_and(|m| !m.is_file()) {
            fsutil::remove_dir_all_opt(&path)?;
        }
        match repo.head_blob(rel) {
            Some(bytes) => write_back(&path, &bytes)?,
            None => fsutil::remove_dir_all_opt(&path)?,
        }
        back.push(rel.display().to_string());
    }
    if !back.is_empty() {
        tracing::warn!(
            "iteration {n}: the agent changed an earlier iteration's files ({}); put back as committed",
            back.join(", ")
        );
    }
    Ok(back)
}

/// Remove what is not a real directory on the way from `wiggum/` down to `dir` (a link or a file
/// an earlier agent left there), so the supervisor makes them again and writes into its own.
pub fn clear_planted(wiggum: &std::path::Path, dir: &std::path::Path) -> Result<()> {
    let mut on_the_way: Vec<&std::path::Path> = dir
        .ancestors()
        .take_while(|a| *a != wiggum && a.starts_with(wiggum))
        .collect();
    on_the_way.reverse();
    for a in on_the_way {
        let planted = std::fs::symlink_metadata(a).is_ok_and(|m| !m.is_dir());
        if planted {
            tracing::warn!(
                "{}: not a directory (a link or a file an agent left); removed and made again",
                a.display()
            );
            fsutil::remove_dir_all_opt(a)?;
        }
    }
    Ok(())
}

/// Write `bytes` at `path` under an earlier iteration's directory, making the directories on the
/// way again when the run deleted them.
fn write_back(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(parent) = path.parent() {
        fsutil::create_dir_all(parent)?;
    }
    fsutil::atomic_write(path, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_iteration_deleted_or_linked_away_is_written_again_as_committed() {
        let d = tempfile::tempdir().unwrap();
        let l = Layout::new(d.path());
        let repo = Repo::open_or_init(d.path()).unwrap();
        std::fs::create_dir_all(l.iteration_dir(1)).unwrap();
        std::fs::write(l.iteration_artifact(1), "# one\n").unwrap();
        let rel = PathBuf::from("wiggum/iterations/001-100/iteration-001/artifact.md");
        repo.commit_paths(std::slice::from_ref(&rel), "one", "t", "t@example.com")
            .unwrap();
        let planted = PathBuf::from("wiggum/iterations/001-100/iteration-001/a.md");
        std::fs::write(d.path().join(&planted), "more").unwrap();
        let changed = [planted.clone(), rel.clone()];
        assert!(put_back(&repo, &l, 1, &changed).unwrap().is_empty());
        std::fs::remove_dir_all(l.iteration_dir(1)).unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), l.iteration_dir(1)).unwrap();
        let back = put_back(&repo, &l, 2, &changed).unwrap();
        assert_eq!(back.len(), 2, "{back:?}");
        assert!(
            std::fs::symlink_metadata(l.iteration_dir(1))
                .unwrap()
                .is_dir()
        );
        assert_eq!(
            std::fs::read_to_string(l.iteration_artifact(1)).unwrap(),
            "# one\n"
        );
        assert!(!d.path().join(&planted).exists());
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    }

    #[test]
    fn only_an_earlier_iteration_s_directory_is_earlier() {
        for (rel, n, want) in [
            (
                "wiggum/iterations/001-100/iteration-001/artifact.md",
                2,
                Some("wiggum/iterations/001-100/iteration-001"),
            ),
            (
                "wiggum/iterations/001-100/iteration-002/artifact.md",
                2,
                None,
            ),
            (
                "wiggum/iterations/001-100/iteration-003/artifact.md",
                2,
                None,
            ),
            ("wiggum/fix_plan.md", 2, None),
            ("notes/iteration-001/a.md", 2, None),
            (
                "wiggum/iterations/001-100/iteration-001.attempt-1.x/a.md",
                2,
                None,
            ),
        ] {
            assert_eq!(
                earlier_dir(Path::new(rel), n),
                want.map(Path::new),
                "{rel} {n}"
            );
        }
    }
}
