//! The loop's history is the user's: an agent that rewinds the loop's branch (`git reset --hard
//! HEAD~3`), rewrites a loop commit (`--amend`), deletes the branch or leaves HEAD on another one
//! would drop accepted iterations into the reflog or park the loop. After every agent run the
//! supervisor compares the branch with the last commit it accepted ([`decide`], pure), and puts
//! it back ([`restore`]): the ref to that commit, HEAD on it, the files the agent's rewind took
//! checked out again where the work tree still holds what the rewind left (a file changed since
//! is left alone, as `git checkout` would).

use std::path::Path;

use git2::{Oid, Repository};

use super::HeadRef;
use crate::error::{GitContext, Result};

/// What happened to the loop's history during a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Break {
    /// HEAD left the loop's branch (or its detached HEAD) for another branch or commit.
    Switched(HeadRef),
    /// The loop's branch is gone.
    BranchGone,
    /// The branch no longer holds the last accepted commit (a reset, an amend, a rebase).
    Rewound,
}

impl Break {
    /// For people and the run record.
    #[must_use]
    pub fn describe(&self, branch: &HeadRef) -> String {
        match self {
            Break::Switched(now) => format!(
                "HEAD moved off {} (to {})",
                branch.shown(),
                match now {
                    HeadRef::Branch(_) => now.shown(),
                    HeadRef::Detached => "a detached HEAD".into(),
                }
            ),
            Break::BranchGone => format!("the loop's branch {} was deleted", branch.shown()),
            Break::Rewound => format!(
                "the loop's branch {} no longer holds its last accepted commit",
                branch.shown()
            ),
        }
    }
}

/// The facts after a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    /// Where HEAD points now (`None`: unreadable).
    pub head: Option<HeadRef>,
    /// Whether the loop's branch exists (always, for a detached loop).
    pub branch_exists: bool,
    /// Whether the branch's tip (HEAD, for a detached loop) is the last accepted commit or one
    /// that descends from it (an agent's own commits on top are its work, not a rewind).
    pub holds_last: bool,
    /// Whether the tip is a commit made on top of the last accepted one: the agent committed
    /// its own work.
    pub moved_on: bool,
    /// Whether a git operation (rebase, merge, cherry-pick…) is in progress: someone's work
    /// half done, never undone under them.
    pub busy: bool,
}

/// What broke, if anything. Pure.
#[must_use]
pub fn decide(at_start: &HeadRef, f: &Facts) -> Option<Break> {
    match (&f.head, at_start) {
        (Some(now), _) if now != at_start => Some(Break::Switched(now.clone())),
        _ if !f.branch_exists => Some(Break::BranchGone),
        _ if !f.holds_last => Some(Break::Rewound),
        _ => None,
    }
}

/// Read the facts from the repository at `git_dir` (this runs after every agent run: three
/// small files when nothing moved, else one opening).
#[must_use]
pub fn facts(git_dir: &Path, at_start: &HeadRef, last: &str) -> Option<Facts> {
    unmoved(git_dir, at_start, last).or_else(|| opened(git_dir, at_start, last))
}

/// The facts, read through the opened repository.
fn opened(git_dir: &Path, at_start: &HeadRef, last: &str) -> Option<Facts> {
    let last = Oid::from_str(last).ok()?;
    let repo = Repository::open(git_dir).ok()?;
    let head = HeadRef::read(git_dir);
    let tip = match at_start {
        HeadRef::Branch(r) => repo.refname_to_id(r).ok(),
        HeadRef::Detached => repo.head().ok().and_then(|h| h.target()),
    };
    let above =
        tip.is_some_and(|t| t != last && repo.graph_descendant_of(t, last).unwrap_or(false));
    Some(Facts {
        head,
        branch_exists: tip.is_some(),
        holds_last: tip == Some(last) || above,
        moved_on: above,
        busy: repo.state() != git2::RepositoryState::Clean,
    })
}

/// The files a git operation in progress leaves in the git directory (what libgit2's
/// `git_repository_state` looks for).
const IN_PROGRESS: [&str; 6] = [
    "rebase-merge",
    "rebase-apply",
    "MERGE_HEAD",
    "REVERT_HEAD",
    "CHERRY_PICK_HEAD",
    "BISECT_LOG",
];

/// The facts of a run that moved nothing, read from three files instead of an opened
/// repository: HEAD still names the loop's branch, the branch's own file (a loose ref, which git
/// reads before any packed one) still holds `last`, and no operation is in progress. `None`
/// when any of that is not so, or cannot be told this way (a detached loop, a linked work
/// tree's git directory, a packed branch): then the repository is opened.
fn unmoved(git_dir: &Path, at_start: &HeadRef, last: &str) -> Option<Facts> {
    let HeadRef::Branch(branch) = at_start else {
        return None;
    };
    let plain = branch.starts_with("refs/heads/") && !branch.split('/').any(|c| c == "..");
    if !plain || git_dir.join("commondir").exists() || HeadRef::read(git_dir)? != *at_start {
        return None;
    }
    let tip = crate::sys::fsutil::read_capped(&git_dir.join(branch), 256).ok()?;
    if tip.trim_end() != last || IN_PROGRESS.iter().any(|f| git_dir.join(f).exists()) {
        return None;
    }
    Some(Facts {
        head: Some(at_start.clone()),
        branch_exists: true,
        holds_last: true,
        moved_on: false,
        busy: false,
    })
}

/// Put the loop's branch back at `last` with HEAD on it. Files the rewind changed are checked
/// out from `last` where the work tree holds what the rewind left; others are left as they are.
pub fn restore(git_dir: &Path, at_start: &HeadRef, last: &str) -> Result<()> {
    let repo = Repository::open(git_dir).git_at(git_dir, "open the repository")?;
    let last = Oid::from_str(last).git_at(git_dir, "read the loop's last accepted commit")?;
    let target = repo
        .find_commit(last)
        .git_at(git_dir, "find the loop's last accepted commit")?;
    let target_tree = target.tree().git_at(git_dir, "read the loop's last tree")?;
    // Before HEAD moves: a safe checkout's baseline is HEAD's tree, what the agent's git
    // command synced the work tree to, so only files that still hold it are rewritten.
    let mut co = git2::build::CheckoutBuilder::new();
    co.safe().allow_conflicts(true).recreate_missing(true);
    repo.checkout_tree(target_tree.as_object(), Some(&mut co))
        .git_at(git_dir, "check out the loop's last commit")?;
    match at_start {
        HeadRef::Branch(r) => {
            repo.reference(r, last, true, "wiggum: put the loop's branch back")
                .git_at(git_dir, "put the loop's branch back")?;
            repo.set_head(r)
                .git_at(git_dir, "put HEAD back on the loop's branch")?;
        }
        HeadRef::Detached => {
            repo.set_head_detached(last)
                .git_at(git_dir, "put HEAD back on the loop's last commit")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_broke_is_decided_from_head_the_branch_and_its_tip() {
        let main = HeadRef::Branch("refs/heads/main".into());
        let other = HeadRef::Branch("refs/heads/x".into());
        let f = |head: Option<HeadRef>, exists: bool, holds: bool| Facts {
            moved_on: false,
            busy: false,
            head,
            branch_exists: exists,
            holds_last: holds,
        };
        let table: &[(&HeadRef, Facts, Option<Break>)] = &[
            (&main, f(Some(main.clone()), true, true), None),
            // The agent's own commits on top hold the last accepted one.
            (&main, f(Some(main.clone()), true, true), None),
            (
                &main,
                f(Some(main.clone()), true, false),
                Some(Break::Rewound),
            ),
            (
                &main,
                f(Some(other.clone()), false, false),
                Some(Break::Switched(other.clone())),
            ),
            (
                &main,
                f(Some(HeadRef::Detached), true, true),
                Some(Break::Switched(HeadRef::Detached)),
            ),
            // HEAD still names the deleted branch (an unborn ref).
            (
                &main,
                f(Some(main.clone()), false, false),
                Some(Break::BranchGone),
            ),
            (&main, f(None, true, true), None),
            (
                &HeadRef::Detached,
                f(Some(HeadRef::Detached), true, false),
                Some(Break::Rewound),
            ),
            (
                &HeadRef::Detached,
                f(Some(main.clone()), true, true),
                Some(Break::Switched(main.clone())),
            ),
        ];
        for (at, facts, want) in table {
            assert_eq!(decide(at, facts), *want, "{at:?} {facts:?}");
        }
    }

    /// `git` in `dir`, its trimmed output.
    fn git(dir: &Path, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "core.hooksPath=/dev/null",
            ])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    #[test]
    fn facts_read_from_files_agree_with_the_opened_repository() {
        let d = tempfile::tempdir().unwrap();
        let w = d.path();
        git(w, &["init", "-q", "-b", "main"]);
        std::fs::write(w.join("a"), "0").unwrap();
        git(w, &["add", "a"]);
        git(w, &["commit", "-qm", "zero"]);
        std::fs::write(w.join("a"), "1").unwrap();
        git(w, &["commit", "-qam", "one"]);
        let last = git(w, &["rev-parse", "HEAD"]);
        let git_dir = w.join(".git");
        let main = HeadRef::Branch("refs/heads/main".into());
        let both = || {
            (
                facts(&git_dir, &main, &last),
                opened(&git_dir, &main, &last),
            )
        };
        let calm = Facts {
            head: Some(main.clone()),
            branch_exists: true,
            holds_last: true,
            moved_on: false,
            busy: false,
        };
        // Nothing moved: the files tell it.
        assert!(unmoved(&git_dir, &main, &last).is_some());
        assert_eq!(both(), (Some(calm.clone()), Some(calm.clone())));
        // A packed branch: the opened repository tells it, the same.
        git(w, &["pack-refs", "--all"]);
        assert!(unmoved(&git_dir, &main, &last).is_none());
        assert_eq!(both(), (Some(calm.clone()), Some(calm.clone())));
        // An operation in progress.
        std::fs::write(git_dir.join("MERGE_HEAD"), format!("{last}\n")).unwrap();
        let (fast, slow) = both();
        assert!(fast.as_ref().is_some_and(|f| f.busy), "{fast:?}");
        assert_eq!(fast, slow);
        std::fs::remove_file(git_dir.join("MERGE_HEAD")).unwrap();
        // The agent's own commit on top.
        std::fs::write(w.join("a"), "2").unwrap();
        git(w, &["commit", "-qam", "two"]);
        let (fast, slow) = both();
        assert!(
            fast.as_ref().is_some_and(|f| f.moved_on && f.holds_last),
            "{fast:?}"
        );
        assert_eq!(fast, slow);
        // Rewound below the last accepted commit, and then switched away.
        git(w, &["reset", "-q", "--hard", "HEAD~2"]);
        std::fs::write(w.join("a"), "3").unwrap();
        git(w, &["commit", "-qam", "three"]);
        let (fast, slow) = both();
        assert!(fast.as_ref().is_some_and(|f| !f.holds_last), "{fast:?}");
        assert_eq!(fast, slow);
        git(w, &["switch", "-q", "-c", "other"]);
        let (fast, slow) = both();
        assert_eq!(
            fast.as_ref().and_then(|f| f.head.clone()),
            Some(HeadRef::Branch("refs/heads/other".into()))
        );
        assert_eq!(fast, slow);
    }
}
