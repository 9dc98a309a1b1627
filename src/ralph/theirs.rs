//! The user's own uncommitted work under the artifact directory, at `start`: found (it stays out
//! of the loop's commits), said once, and copied out of the agents' reach (`disk::kept`) before
//! any agent runs.

use std::path::{Path, PathBuf};

use crate::disk::kept;
use crate::disk::layout::Layout;
use crate::error::Result;
use crate::git::Repo;

/// The user's work `start` finds before any agent runs.
#[derive(Debug, Default)]
pub struct Theirs {
    /// Uncommitted changes under the artifact dir that are not the loop's (relative to it):
    /// they stay out of its commits.
    pub uncommitted: Vec<PathBuf>,
    /// The user's work anywhere the agents may write (relative to `work_root`, the writable
    /// root): the uncommitted work under the artifact dir, and tracked changes, untracked and
    /// ignored files elsewhere in the work tree (`git::Repo::work_found`). Kept before any
    /// agent runs.
    pub at_risk: Vec<PathBuf>,
}

/// Both lists, from one walk of the work tree where the writable root is the repository's.
pub fn find(layout: &Layout, work_root: &Path) -> Result<Theirs> {
    let Ok(repo) = Repo::open(layout.root()) else {
        return Ok(Theirs::default());
    };
    // What the loop's own rejected attempts left for a later commit is not the user's work.
    let carried = carried(layout);
    if repo.workdir() != work_root {
        // The artifact dir alone is writable (a repository at the home): what is under it.
        let uncommitted = uncommitted(&repo, &carried, repo.snapshot()?.paths());
        return Ok(Theirs {
            at_risk: uncommitted.clone(),
            uncommitted,
        });
    }
    let loop_dir = layout
        .wiggum()
        .strip_prefix(work_root)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let found = repo.work_found(&loop_dir)?;
    let art = layout
        .root()
        .strip_prefix(work_root)
        .unwrap_or(Path::new(""));
    let loops: Vec<PathBuf> = carried.iter().map(|c| art.join(c)).collect();
    Ok(Theirs {
        uncommitted: uncommitted(&repo, &carried, found.dirty.iter().map(PathBuf::as_path)),
        at_risk: found
            .at_risk
            .into_iter()
            .filter(|p| !loops.contains(p))
            .collect(),
    })
}

/// The paths the loop's state says its rejected attempts left for a later commit (relative to
/// the artifact dir).
fn carried(layout: &Layout) -> Vec<PathBuf> {
    crate::disk::state::read(&layout.state())
        .ok()
        .flatten()
        .map(|s| s.carried_paths)
        .unwrap_or_default()
}

/// Of the `dirty` paths under the artifact dir, those that are not the loop's (its runtime files,
/// what it `carried`): none while the repository has no commit.
fn uncommitted<'a>(
    repo: &Repo,
    carried: &[PathBuf],
    dirty: impl Iterator<Item = &'a Path>,
) -> Vec<PathBuf> {
    if repo.head().is_none() {
        return Vec::new();
    }
    dirty
        .filter(|p| !p.starts_with("wiggum") && !carried.iter().any(|c| c == p))
        .map(Path::to_path_buf)
        .collect()
}

/// What `start` says about the [`Theirs::uncommitted`] work.
#[must_use]
pub fn note(layout: &Layout, theirs: &[PathBuf]) -> Option<String> {
    if theirs.is_empty() {
        return None;
    }
    let shown: Vec<String> = theirs
        .iter()
        .take(8)
        .map(|p| p.display().to_string())
        .collect();
    let more = theirs.len().saturating_sub(shown.len());
    Some(format!(
        "{} uncommitted change(s) under {} will be left out of the loop's commits: {}{}",
        theirs.len(),
        layout.root().display(),
        shown.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    ))
}

/// Keep a copy of the user's uncommitted files out of the agents' reach (`disk::kept`), before
/// any agent runs. Returns what to tell the user ([`kept_line`]).
pub fn keep(root: &Path, theirs: &[PathBuf], home: &Path, topic: &str) -> Result<Option<String>> {
    if theirs.is_empty() {
        return Ok(None);
    }
    let stamp = chrono::Utc::now().format(kept::STAMP).to_string();
    let k = kept::keep(root, theirs, &kept::topic_dir(home, topic), &stamp)?;
    Ok(kept_line(&k))
}

/// How many of the kept paths the start line names.
const NAMED: usize = 5;

/// What `start` says of a copy: where it is, how many files and bytes, the first paths, and
/// what was not copied.
#[must_use]
pub fn kept_line(k: &kept::Kept) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(dir) = &k.dir {
        let n = k.held.len();
        let shown: Vec<String> = k
            .held
            .iter()
            .take(NAMED)
            .map(|p| p.display().to_string())
            .collect();
        let more = match n.saturating_sub(NAMED) {
            0 => String::new(),
            m => format!(" and {m} more"),
        };
        parts.push(format!(
            "a copy of that work, out of the agent's reach, is in {}: {n} file{}, {} ({}{more})",
            dir.display(),
            if n == 1 { "" } else { "s" },
            kept::size(k.bytes),
            shown.join(", ")
        ));
    }
    if !k.skipped.is_empty() {
        parts.push(format!("not copied: {}", k.skipped.join(", ")));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kept_line_says_where_how_much_and_the_first_paths() {
        let held = |n: usize| (0..n).map(|i| PathBuf::from(format!("f{i}.md"))).collect();
        let k = |n, skipped: &[&str]| kept::Kept {
            dir: Some(PathBuf::from("/h/kept/t/s")),
            copied: n,
            skipped: skipped.iter().map(|s| (*s).to_string()).collect(),
            held: held(n),
            bytes: 2048,
        };
        assert_eq!(
            kept_line(&k(1, &[])).unwrap(),
            "a copy of that work, out of the agent's reach, is in /h/kept/t/s: 1 file, 2.0 KiB (f0.md)"
        );
        assert_eq!(
            kept_line(&k(7, &["big.bin (over 64 MiB)"])).unwrap(),
            "a copy of that work, out of the agent's reach, is in /h/kept/t/s: 7 files, 2.0 KiB (f0.md, f1.md, f2.md, f3.md, f4.md and 2 more); not copied: big.bin (over 64 MiB)"
        );
        assert_eq!(kept_line(&kept::Kept::default()), None);
    }
}
