//! Loops that run in a worktree of their own: `$STUDIO_AGENTS_HOME/worktrees/<topic>.toml`
//! (out of the agent's reach) says where the worktree is, its branch, the branch it came from
//! and the user's artifact directory, and — once `merge` did it — where and how it was merged.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::sys::fsutil;

/// A loop's worktree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Worktree {
    /// The repository's main work tree.
    pub repo: PathBuf,
    /// The linked worktree's directory.
    pub worktree: PathBuf,
    /// The loop's branch.
    pub branch: String,
    /// The branch it started from (where `merge` goes by default).
    pub from: String,
    /// The artifact directory the user named (in the main work tree).
    pub original: PathBuf,
    /// Set once the branch was merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<MergeRecord>,
}

/// A merge that happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MergeRecord {
    /// The branch merged into.
    pub into: String,
    /// Its head after the merge.
    pub commit: String,
    /// `merge`, `no-ff`, `ff-only`, `squash` (and whether it fast-forwarded).
    pub how: String,
    /// When.
    pub at: DateTime<Utc>,
    /// The branch's head that was merged (absent in records written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tip: Option<String>,
}

impl MergeRecord {
    /// Whether this merge already brought the branch, now at `tip`, into `into`: the same
    /// target, and the branch not moved on since (a record that kept no head covers it). A
    /// squash leaves the branch out of the target's history, so git alone cannot tell.
    #[must_use]
    pub fn covers(&self, into: &str, tip: Option<&str>) -> bool {
        self.into == into
            && match (&self.tip, tip) {
                (Some(then), Some(now)) => then == now,
                (None, _) => true,
                (Some(_), None) => false,
            }
    }
}

fn path_of(home: &Path, topic: &str) -> PathBuf {
    home.join("worktrees").join(format!("{topic}.toml"))
}

/// The worktree record of `topic`, if it runs in one.
pub fn read(home: &Path, topic: &str) -> Result<Option<Worktree>> {
    let path = path_of(home, topic);
    let Some(text) = fsutil::read_opt(&path)? else {
        return Ok(None);
    };
    toml::from_str(&text)
        .map(Some)
        .map_err(|e| Error::input(format!("{}: {}", path.display(), e.message())))
}

/// Write the record of `topic` (atomically).
pub fn write(home: &Path, topic: &str, w: &Worktree) -> Result<()> {
    let path = path_of(home, topic);
    fsutil::create_dir_all(&home.join("worktrees"))?;
    let text = toml::to_string(w)
        .map_err(|e| Error::runtime(format!("{}: cannot write: {e}", path.display())))?;
    fsutil::atomic_write(&path, text.as_bytes())
}

/// Forget the record of `topic`.
pub fn remove(home: &Path, topic: &str) -> Result<()> {
    fsutil::remove_file_opt(&path_of(home, topic))
}

/// Every topic with a worktree record, sorted.
pub fn topics(home: &Path) -> Result<Vec<String>> {
    let dir = home.join("worktrees");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(Vec::new());
    };
    let mut out: Vec<String> = entries
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".toml"))
                .map(str::to_string)
        })
        .collect();
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_merge_covers_the_same_target_while_the_branch_stays() {
        let rec = |tip: Option<&str>| MergeRecord {
            into: "main".into(),
            commit: "c1".into(),
            how: "squash".into(),
            at: Utc::now(),
            tip: tip.map(str::to_string),
        };
        // (record's tip, target asked, branch head now, covered)
        let table = [
            (Some("b1"), "main", Some("b1"), true),
            (Some("b1"), "main", Some("b2"), false),
            (Some("b1"), "release", Some("b1"), false),
            (Some("b1"), "main", None, false),
            (None, "main", Some("b2"), true),
            (None, "release", Some("b2"), false),
        ];
        for (then, into, now, want) in table {
            assert_eq!(rec(then).covers(into, now), want, "{then:?} {into} {now:?}");
        }
    }

    #[test]
    fn a_record_round_trips_and_unknown_keys_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let w = Worktree {
            repo: "/r".into(),
            worktree: "/r/.git/wiggum-worktrees/t".into(),
            branch: "wiggum/t".into(),
            from: "main".into(),
            original: "/r/art".into(),
            merged: None,
        };
        write(d.path(), "t", &w).unwrap();
        assert_eq!(read(d.path(), "t").unwrap(), Some(w));
        assert_eq!(topics(d.path()).unwrap(), vec!["t".to_string()]);
        std::fs::write(path_of(d.path(), "u"), "repo = \"/r\"\nbogus = 1\n").unwrap();
        let e = read(d.path(), "u").unwrap_err().to_string();
        assert!(e.contains("u.toml") && e.contains("bogus"), "{e}");
    }
}
