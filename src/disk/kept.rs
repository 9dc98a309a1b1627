//! A copy of the user's uncommitted work, taken at `start` before any agent runs:
//! `$STUDIO_AGENTS_HOME/kept/<topic>/<time>/<path>`. The loop leaves that work out of its
//! commits, but an agent may still run `git checkout -- .`, `git stash` or `rm`; the copy is out
//! of its reach (the sandbox writes only the repository). A start whose files are the same as
//! the newest copy's makes no new one. Ignored files are not copied (build output, caches), nor
//! any loop's own runtime files (a sibling loop's `wiggum/state.json`, `.lock`, `daemon.log`,
//! `runs.jsonl`: `Layout::is_runtime_path` under any `wiggum/`), nor files past the caps below
//! (named or counted instead). Copies older than `[defaults] keep_days` go at the next start
//! ([`expired`], [`prune`]).

use std::path::{Path, PathBuf};

use chrono::{DateTime, NaiveDateTime, Utc};

use crate::disk::layout::Layout;
use crate::error::{IoContext, Result};
use crate::sys::fsutil;

/// How a copy's directory is named: its UTC time (they sort by it).
pub const STAMP: &str = "%Y%m%dT%H%M%S%.3f";

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
    /// What the copy in `dir` holds (relative paths, in the order given).
    pub held: Vec<PathBuf>,
    /// Their size in bytes.
    pub bytes: u64,
}

/// Whether `rel` is a loop's own runtime file (its lock, state, records, logs) in any loop's
/// `wiggum/`, this one's or a sibling's: the tool's files, not the user's work.
#[must_use]
pub fn is_loop_runtime(rel: &Path) -> bool {
    let parts: Vec<&std::ffi::OsStr> = rel.iter().collect();
    (0..parts.len()).any(|i| {
        parts[i] == "wiggum" && Layout::is_runtime_path(&parts[i..].iter().collect::<PathBuf>())
    })
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
    for rel in paths.iter().filter(|p| !is_loop_runtime(p)) {
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
            out.held = todo.iter().map(|(rel, ..)| (*rel).clone()).collect();
            out.bytes = todo.iter().map(|(_, _, m)| m.len()).sum();
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
        out.held.push(rel.clone());
    }
    out.bytes = total;
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

/// The copies (their directory names, [`STAMP`]) older than `keep_days` at `now`; none when
/// `keep_days` is 0 (kept forever). A name that is no stamp is never taken for old.
#[must_use]
pub fn expired<'a>(names: &[&'a str], now: DateTime<Utc>, keep_days: u32) -> Vec<&'a str> {
    if keep_days == 0 {
        return Vec::new();
    }
    let limit = now - chrono::Duration::days(i64::from(keep_days));
    names
        .iter()
        .copied()
        .filter(|n| NaiveDateTime::parse_from_str(n, STAMP).is_ok_and(|t| t.and_utc() < limit))
        .collect()
}

/// Remove `topic`'s copies under `home` older than `keep_days` ([`expired`]); returns the
/// directories removed.
pub fn prune(home: &Path, topic: &str, now: DateTime<Utc>, keep_days: u32) -> Result<Vec<PathBuf>> {
    let mut gone = Vec::new();
    // One loop's setting (its own file may name it) reaches its own copies only.
    {
        let topic = home.join("kept").join(topic);
        let names: Vec<String> = std::fs::read_dir(&topic)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        for name in expired(&names, now, keep_days) {
            let dir = topic.join(name);
            fsutil::remove_dir_all_opt(&dir)?;
            gone.push(dir);
        }
    }
    gone.sort();
    Ok(gone)
}

/// The copies of one topic (oldest first) with their file count and size.
pub fn copies(topic_dir: &Path) -> Vec<(PathBuf, usize, u64)> {
    let Ok(rd) = std::fs::read_dir(topic_dir) else {
        return Vec::new();
    };
    let mut out: Vec<(PathBuf, usize, u64)> = rd
        .flatten()
        .map(|e| {
            let (n, bytes) = tally(&e.path());
            (e.path(), n, bytes)
        })
        .collect();
    out.sort();
    out
}

/// Files under `dir` (links counted, not followed) and their bytes.
fn tally(dir: &Path) -> (usize, u64) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return (0, 0);
    };
    rd.flatten().fold((0, 0), |(n, b), e| match e.file_type() {
        Ok(t) if t.is_dir() => {
            let (n2, b2) = tally(&e.path());
            (n + n2, b + b2)
        }
        Ok(_) => (n + 1, b + e.metadata().map_or(0, |m| m.len())),
        Err(_) => (n, b),
    })
}

/// `812 B`, `12.4 KiB`, `3.0 MiB`.
#[must_use]
pub fn size(bytes: u64) -> String {
    match bytes {
        0..1024 => format!("{bytes} B"),
        1024..1_048_576 => format!("{:.1} KiB", bytes as f64 / 1024.0),
        _ => format!("{:.1} MiB", bytes as f64 / 1_048_576.0),
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

    #[test]
    fn every_loop_s_runtime_files_are_left_out_the_user_s_own_kept() {
        let cases = [
            ("doc/wiggum/state.json", true),
            ("doc/wiggum/.lock", true),
            ("doc/wiggum/daemon.log", true),
            ("wiggum/runs.jsonl", true),
            ("a/b/wiggum/daemon.log.1", true),
            ("doc/wiggum/fix_plan.md", false),
            ("notes/wiggum/ideas.md", false),
            ("state.json", false),
            ("doc/artifact.md", false),
        ];
        for (rel, runtime) in cases {
            assert_eq!(is_loop_runtime(Path::new(rel)), runtime, "{rel}");
        }
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("repo");
        std::fs::create_dir_all(root.join("doc/wiggum")).unwrap();
        std::fs::write(root.join("doc/wiggum/state.json"), "{}").unwrap();
        std::fs::write(root.join("notes.md"), "mine\n").unwrap();
        let k = keep(
            &root,
            &paths(&["doc/wiggum/state.json", "notes.md"]),
            &d.path().join("kept/t"),
            "s",
        )
        .unwrap();
        assert_eq!((k.copied, k.held, k.bytes), (1, paths(&["notes.md"]), 5));
    }

    #[test]
    fn copies_past_keep_days_expire_and_zero_keeps_them_forever() {
        use chrono::TimeZone;
        let now = Utc.with_ymd_and_hms(2026, 11, 27, 12, 0, 0).unwrap();
        let names = [
            "20261027T110000.000",
            "20261028T130000.000",
            "20261127T010203.456",
            "notes",
        ];
        assert_eq!(expired(&names, now, 30), ["20261027T110000.000"]);
        assert_eq!(expired(&names, now, 1), names[..2]);
        assert!(expired(&names, now, 0).is_empty());

        let d = tempfile::tempdir().unwrap();
        for n in &names[..3] {
            std::fs::create_dir_all(d.path().join("kept/t").join(n)).unwrap();
        }
        std::fs::write(d.path().join("kept/t/20261127T010203.456/a.md"), "abc").unwrap();
        std::fs::create_dir_all(d.path().join("kept/other").join(names[0])).unwrap();
        let gone = prune(d.path(), "t", now, 30).unwrap();
        assert_eq!(gone, [d.path().join("kept/t/20261027T110000.000")]);
        // Another topic's copies are its own loop's to let go.
        assert!(d.path().join("kept/other").join(names[0]).is_dir());
        let left: Vec<(usize, u64)> = copies(&d.path().join("kept/t"))
            .into_iter()
            .map(|(_, n, b)| (n, b))
            .collect();
        assert_eq!(left, [(0, 0), (1, 3)]);
        assert_eq!(
            [size(812), size(12_697), size(3 << 20)],
            ["812 B", "12.4 KiB", "3.0 MiB"]
        );
    }
}
