//! A copy of the user's uncommitted work, taken at `start` before any agent runs:
//! `$STUDIO_AGENTS_HOME/kept/<topic>/<time>/<path>`. The loop leaves that work out of its
//! commits, but an agent may still run `git checkout -- .`, `git stash` or `rm`; the copy is out
//! of its reach (the sandbox writes only the repository). A start whose files are the same as
//! the newest copy's makes no new one. Ignored files are not copied (build output, caches), nor
//! files past the caps below (named or counted instead).

use std::path::{Path, PathBuf};

use crate::error::{IoContext, Result};
use crate::sys::fsutil;

/// Files larger than this are named, not copied.
pub const MAX_FILE: u64 = 64 << 20;
/// Past this many bytes in one copy the remaining files are named, not copied.
pub const MAX_TOTAL: u64 = 256 << 20;
/// Past this many files in one copy the remaining ones are counted, not copied (`start` stays
/// quick on a tree of untracked build output nobody ignored).
pub const MAX_FILES: usize = 10_000;

/// What [`keep`] did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Kept {
    /// The directory holding the copies (a new one, or the newest earlier one when every file
    /// was already there as it is now). `None` when there was nothing to copy.
    pub dir: Option<PathBuf>,
    /// Files copied now.
    pub copied: usize,
    /// Files left out, with why (too large, unreadable).
    pub skipped: Vec<String>,
}

/// The copies of `topic`'s loops under `home`.
#[must_use]
pub fn topic_dir(home: &Path, topic: &str) -> PathBuf {
    home.join("kept").join(topic)
}

/// Copy `paths` (relative to `root`; files and links — what is gone or a directory is skipped)
/// into `topic_dir/<stamp>/`, unless the newest copy there already holds each of them as it is.
pub fn keep(root: &Path, paths: &[PathBuf], topic_dir: &Path, stamp: &str) -> Result<Kept> {
    let mut out = Kept::default();
    let mut todo = Vec::new();
    for rel in paths {
        let from = root.join(rel);
        let Ok(meta) = std::fs::symlink_metadata(&from) else {
            continue; // deleted: HEAD has it
        };
        if !meta.is_file() && !meta.file_type().is_symlink() {
            continue;
        }
        if meta.is_file() && meta.len() > MAX_FILE {
            out.skipped
                .push(format!("{} (over {} MiB)", rel.display(), MAX_FILE >> 20));
            continue;
        }
        todo.push((rel, from, meta));
    }
    let newest = newest(topic_dir);
    if let Some(prev) = &newest {
        let mut same = true;
        for (rel, from, _) in &todo {
            if !same_entry(from, &prev.join(rel))? {
                same = false;
                break;
            }
        }
        if same {
            out.dir = (!todo.is_empty()).then(|| prev.clone());
            return Ok(out);
        }
    }
    // Each copy is whole on its own: the unchanged files are copied again with the changed.
    let dir = topic_dir.join(stamp);
    let mut total = 0u64;
    let mut over = 0usize;
    for (rel, from, meta) in todo {
        if out.copied >= MAX_FILES {
            over += 1;
            continue;
        }
        let to = dir.join(rel);
        if meta.is_file() && total + meta.len() > MAX_TOTAL {
            out.skipped.push(format!(
                "{} (past {} MiB in all)",
                rel.display(),
                MAX_TOTAL >> 20
            ));
            continue;
        }
        fsutil::create_dir_all(to.parent().unwrap_or(&dir))?;
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&from).at(&from, "read the link")?;
            std::os::unix::fs::symlink(&target, &to).at(&to, "copy the link to")?;
        } else if let Err(e) = std::fs::copy(&from, &to) {
            // Unreadable to us (a file made private to another account): say so.
            out.skipped.push(format!("{} ({e})", rel.display()));
            continue;
        }
        total += meta.len();
        out.copied += 1;
    }
    if over > 0 {
        out.skipped
            .push(format!("{over} more files (past {MAX_FILES} in all)"));
    }
    out.dir = (out.copied > 0).then_some(dir);
    Ok(out)
}

/// The newest copy under `topic_dir` (stamps sort by time).
#[must_use]
pub fn newest(topic_dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(topic_dir)
        .ok()?
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .max()
}

/// Whether the copy `kept` holds what `now` holds (same bytes, or the same link target).
fn same_entry(now: &Path, kept: &Path) -> Result<bool> {
    match (std::fs::read_link(now), std::fs::read_link(kept)) {
        (Ok(a), Ok(b)) => Ok(a == b),
        (Err(_), Err(_)) => fsutil::same_content(now, kept),
        _ => Ok(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(v: &[&str]) -> Vec<PathBuf> {
        v.iter().map(PathBuf::from).collect()
    }

    #[test]
    fn copies_files_and_links_skips_what_is_gone_and_repeats_nothing_unchanged() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("repo");
        std::fs::create_dir_all(root.join("docs")).unwrap();
        std::fs::write(root.join("notes.md"), "mine\n").unwrap();
        std::fs::write(root.join("docs/draft.md"), "draft\n").unwrap();
        std::os::unix::fs::symlink("notes.md", root.join("link")).unwrap();
        let kept = d.path().join("kept/t");
        let all = paths(&["notes.md", "docs/draft.md", "link", "deleted.md", "docs"]);

        let first = keep(&root, &all, &kept, "20261123T010203.000").unwrap();
        let dir = kept.join("20261123T010203.000");
        assert_eq!((first.dir.as_ref(), first.copied), (Some(&dir), 3));
        assert_eq!(
            std::fs::read(dir.join("docs/draft.md")).unwrap(),
            b"draft\n"
        );
        assert_eq!(
            std::fs::read_link(dir.join("link")).unwrap(),
            Path::new("notes.md")
        );

        // Nothing changed: no new copy, the earlier one named.
        let same = keep(&root, &all, &kept, "20261123T020000.000").unwrap();
        assert_eq!(same.dir, Some(dir.clone()));
        assert_eq!(same.copied, 0);
        assert!(!kept.join("20261123T020000.000").exists());

        // One file changed: a new copy, whole (the unchanged ones too).
        std::fs::write(root.join("notes.md"), "mine, later\n").unwrap();
        let later = keep(&root, &all, &kept, "20261123T030000.000").unwrap();
        let dir2 = kept.join("20261123T030000.000");
        assert_eq!((later.dir, later.copied), (Some(dir2.clone()), 3));
        assert_eq!(
            std::fs::read(dir2.join("notes.md")).unwrap(),
            b"mine, later\n"
        );
        assert!(dir2.join("docs/draft.md").is_file());
        assert_eq!(std::fs::read(dir.join("notes.md")).unwrap(), b"mine\n");
    }

    #[test]
    fn past_the_file_cap_the_rest_is_counted_not_copied() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("repo");
        std::fs::create_dir_all(&root).unwrap();
        let all: Vec<PathBuf> = (0..MAX_FILES + 2)
            .map(|i| {
                let p = PathBuf::from(format!("f{i}"));
                std::fs::write(root.join(&p), "x").unwrap();
                p
            })
            .collect();
        let k = keep(&root, &all, &d.path().join("kept/t"), "s").unwrap();
        assert_eq!(k.copied, MAX_FILES);
        assert_eq!(k.skipped, ["2 more files (past 10000 in all)"]);
    }

    #[test]
    fn nothing_to_copy_makes_no_directory() {
        let d = tempfile::tempdir().unwrap();
        let kept = d.path().join("kept/t");
        let k = keep(d.path(), &paths(&["gone.md"]), &kept, "s").unwrap();
        assert_eq!(k, Kept::default());
        assert!(!kept.exists());
    }
}
