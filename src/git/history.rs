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
    if let Some(same) = unmoved(git_dir, at_start, last) {
        return Some(same);
    }
    repair(git_dir, at_start, last);
    opened(git_dir, at_start, last)
}

/// HEAD and the loop's branch as libgit2 can read them, before it does: a HEAD that is no plain
/// file, or whose words libgit2 cannot parse (git reads more), is written again as the loop
/// started; a branch file that is no plain file (a FIFO libgit2 would wait on for ever, a link
/// git reads as another branch) or holds no commit id is removed, so the branch reads as gone
/// and is put back. Only an agent with `.git` writable (the sandbox off) can leave either.
fn repair(git_dir: &Path, at_start: &HeadRef, last: &str) {
    let head = git_dir.join("HEAD");
    let plain = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file());
    let text = crate::sys::fsutil::read_capped(&head, 4096).unwrap_or_default();
    let parsable = text
        .strip_prefix("ref: ")
        .map(|r| !r.trim_end().is_empty())
        .unwrap_or_else(|| is_commit_id(text.trim_end()));
    if !plain(&head) || !parsable {
        let canonical = match at_start {
            HeadRef::Branch(b) => format!("ref: {b}\n"),
            HeadRef::Detached => format!("{last}\n"),
        };
        match crate::sys::fsutil::atomic_write(&head, canonical.as_bytes()) {
            Ok(()) => tracing::warn!(
                "{}: not a HEAD git and libgit2 both read; written again as the loop started",
                head.display()
            ),
            Err(e) => tracing::warn!("{}: unreadable, and not written again: {e}", head.display()),
        }
    }
    let HeadRef::Branch(branch) = at_start else {
        return;
    };
    let file = git_dir.join(branch);
    let Ok(m) = std::fs::symlink_metadata(&file) else {
        return;
    };
    let holds_an_id = || {
        m.is_file()
            && crate::sys::fsutil::read_capped(&file, 256)
                .is_ok_and(|t| is_commit_id(t.trim_end_matches('\n')) || t.starts_with("ref: "))
    };
    if !m.is_dir() && !holds_an_id() && std::fs::remove_file(&file).is_ok() {
        tracing::warn!(
            "{}: not a branch git and libgit2 both read; removed (the branch is put back)",
            file.display()
        );
    }
}

/// Whether `s` is a commit id as a ref file holds one (40 or 64 lowercase hex digits).
fn is_commit_id(s: &str) -> bool {
    matches!(s.len(), 40 | 64)
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
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
    // Exactly as git writes them, each a plain file: anything else is looked at properly.
    let exactly = |p: &Path, want: &str| {
        std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file())
            && crate::sys::fsutil::read_capped(p, 4096).is_ok_and(|t| t == want)
    };
    if !plain
        || git_dir.join("commondir").exists()
        || !exactly(&git_dir.join("HEAD"), &format!("ref: {branch}\n"))
        || !exactly(&git_dir.join(branch), &format!("{last}\n"))
        || IN_PROGRESS.iter().any(|f| git_dir.join(f).exists())
    {
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

    /// A repository in `w` with one commit (file `a`) on `main`.
    fn on_main(w: &Path) {
        git(w, &["init", "-q", "-b", "main"]);
        std::fs::write(w.join("a"), "0").unwrap();
        git(w, &["add", "a"]);
        git(w, &["commit", "-qm", "zero"]);
    }

    #[test]
    fn a_head_or_branch_file_libgit2_cannot_read_is_mended_before_it_is_asked() {
        let d = tempfile::tempdir().unwrap();
        let w = d.path();
        on_main(w);
        let last = git(w, &["rev-parse", "HEAD"]);
        let git_dir = w.join(".git");
        let main = HeadRef::Branch("refs/heads/main".into());
        let branch = git_dir.join("refs/heads/main");
        let gone = |f: Option<Facts>| f.is_some_and(|f| !f.branch_exists);
        // A FIFO in the branch's place: no wait, the branch reads as gone (and is put back).
        std::fs::remove_file(&branch).unwrap();
        nix::unistd::mkfifo(&branch, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(gone(facts(&git_dir, &main, &last)));
        assert!(!branch.exists());
        // A branch file with a byte after the id that a trim would take for white space.
        std::fs::write(&branch, format!("{last}\u{a0}\n")).unwrap();
        assert!(gone(facts(&git_dir, &main, &last)));
        std::fs::write(&branch, format!("{last}\n")).unwrap();
        // HEAD as git reads it and libgit2 does not: written again as the loop started.
        std::fs::write(git_dir.join("HEAD"), "ref:refs/heads/main").unwrap();
        let f = facts(&git_dir, &main, &last).unwrap();
        assert!(decide(&main, &f).is_none(), "{f:?}");
        assert_eq!(
            std::fs::read_to_string(git_dir.join("HEAD")).unwrap(),
            "ref: refs/heads/main\n"
        );
        // A look-alike branch name is another branch: HEAD moved.
        std::fs::write(git_dir.join("HEAD"), "ref: refs/heads/main\u{a0}\n").unwrap();
        let f = facts(&git_dir, &main, &last).unwrap();
        assert!(
            matches!(decide(&main, &f), Some(Break::Switched(_))),
            "{f:?}"
        );
    }

    #[test]
    fn facts_read_from_files_agree_with_the_opened_repository() {
        let d = tempfile::tempdir().unwrap();
        let w = d.path();
        on_main(w);
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
