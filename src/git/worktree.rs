//! A loop in a linked worktree of its own (`start --worktree`), and its way back: a merge of its
//! branch into the branch it started from, computed in memory first so a conflict leaves the
//! user's branch, index and work tree exactly as they were (libgit2, the way `git merge` does
//! it); the worktree removed once merged (`clean`).

use std::path::{Path, PathBuf};

use git2::{BranchType, Repository, WorktreeAddOptions, WorktreePruneOptions};

use crate::error::{Error, GitContext, Result};

/// A loop's worktree, as made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Made {
    /// The main work tree of the repository.
    pub repo: PathBuf,
    /// The linked worktree's directory.
    pub worktree: PathBuf,
    /// The loop's branch (`wiggum/<topic>`).
    pub branch: String,
    /// The branch HEAD was on when it was made (where `merge` goes back to).
    pub from: String,
    /// The artifact directory inside the worktree.
    pub artifact: PathBuf,
    /// This call made the worktree (it was not there before): [`undo`] takes it away again.
    pub made_now: bool,
    /// The commit the branch pointed at when this call made the worktree.
    pub base: String,
    /// This call made the branch too.
    pub branch_made_now: bool,
}

/// The branch of a topic's loop.
#[must_use]
pub fn branch_of(topic: &str) -> String {
    format!("wiggum/{topic}")
}

/// The repository holding `dir`, as a main work tree; refused (exit 2) where a worktree cannot
/// hold the loop faithfully: no repository, a bare one, a sparse checkout (a new worktree would
/// check out every file), a submodule or a repository with submodules (a new worktree would hold
/// them empty).
fn main_repo(dir: &Path) -> Result<(Repository, PathBuf)> {
    let flag = |why: String| Error::input(format!("--worktree {}: {why}", dir.display()));
    let repo = Repository::discover(dir)
        .map_err(|_| flag("not inside a git repository (a worktree needs one)".into()))?;
    let repo = if repo.is_worktree() {
        // Started from inside a linked worktree: its main repository holds the branches.
        Repository::open(repo.commondir()).git_at(dir, "open the main repository")?
    } else {
        repo
    };
    if repo.is_bare() {
        return Err(flag("the repository is bare".into()));
    }
    let workdir = repo
        .workdir()
        .ok_or_else(|| flag("the repository has no work tree".into()))?
        .canonicalize()
        .at_path(dir, "resolve the work tree")?;
    if repo.path().components().any(|c| c.as_os_str() == "modules") {
        return Err(flag(
            "it is inside a submodule; start the loop in the submodule's own clone".into(),
        ));
    }
    let config = repo.config().git_at(dir, "read the config")?;
    if config.get_bool("core.sparseCheckout").unwrap_or(false) {
        return Err(flag(
            "the repository uses a sparse checkout, and a new worktree would check out every file; run the loop without --worktree".into(),
        ));
    }
    if workdir.join(".gitmodules").exists() {
        return Err(flag(
            "the repository has submodules, which a new worktree would hold empty; run the loop without --worktree".into(),
        ));
    }
    Ok((repo, workdir))
}

trait AtPath<T> {
    fn at_path(self, p: &Path, action: &'static str) -> Result<T>;
}

impl<T> AtPath<T> for std::io::Result<T> {
    fn at_path(self, p: &Path, action: &'static str) -> Result<T> {
        use crate::error::IoContext;
        self.at(p, action)
    }
}

/// Make (or find again) the worktree of `topic` for the artifact directory `artifact`: on
/// branch `wiggum/<topic>` from the current HEAD, at `<parent>/<topic>` (`parent` by default
/// `.git/wiggum-worktrees`). The artifact's files the worktree lacks (not yet committed) are
/// copied in, never over what is there.
pub fn make(topic: &str, artifact: &Path, parent: Option<&Path>) -> Result<Made> {
    let artifact = artifact
        .canonicalize()
        .at_path(artifact, "resolve the artifact directory")?;
    let (repo, workdir) = main_repo(&artifact)?;
    let rel = artifact
        .strip_prefix(&workdir)
        .map_err(|_| {
            Error::input(format!(
                "--worktree {}: not inside the work tree {}",
                artifact.display(),
                workdir.display()
            ))
        })?
        .to_path_buf();
    let branch = branch_of(topic);
    let name = format!("wiggum-{topic}");
    let worktree = match parent {
        Some(p) => p.join(topic),
        None => repo.path().join("wiggum-worktrees").join(topic),
    };
    let (head, from) = head_and_name(&repo, &artifact)?;
    if let Ok(wt) = repo.find_worktree(&name)
        && wt.validate().is_ok()
    {
        // Made before: the loop resumes there.
        let at = wt.path().to_path_buf();
        return Ok(Made {
            repo: workdir,
            artifact: at.join(&rel),
            worktree: at,
            branch,
            from,
            made_now: false,
            branch_made_now: false,
            base: String::new(),
        });
    }
    let (branch_made_now, base) = add_worktree(&repo, &name, &worktree, &branch, &head, topic)?;
    let mapped = worktree.join(&rel);
    copy_missing(&artifact, &mapped)?;
    Ok(Made {
        repo: workdir,
        worktree,
        branch,
        from,
        artifact: mapped,
        made_now: true,
        branch_made_now,
        base,
    })
}

/// HEAD, and the name a loop's branch is made from (the branch, or the commit when detached).
fn head_and_name<'r>(
    repo: &'r Repository,
    artifact: &Path,
) -> Result<(git2::Reference<'r>, String)> {
    let head = repo.head().map_err(|_| {
        Error::input(format!(
            "--worktree {}: the repository has no commit yet to branch from",
            artifact.display()
        ))
    })?;
    let from = head.shorthand().unwrap_or("HEAD").to_string();
    let from = if head.is_branch() {
        from
    } else {
        head.target().map_or(from, |o| o.to_string())
    };
    Ok((head, from))
}

/// Add the worktree `name` at `worktree` on `branch` (made from `head` when missing); a worktree
/// of that name whose directory was removed by hand is forgotten first, and a directory there
/// that is not it is refused. Returns whether the branch was made now, and the commit it starts
/// at.
fn add_worktree(
    repo: &Repository,
    name: &str,
    worktree: &Path,
    branch: &str,
    head: &git2::Reference<'_>,
    topic: &str,
) -> Result<(bool, String)> {
    if let Ok(wt) = repo.find_worktree(name) {
        wt.prune(Some(WorktreePruneOptions::new().valid(true)))
            .git_at(worktree, "prune the removed worktree")?;
    }
    if worktree.exists() {
        return Err(Error::input(format!(
            "--worktree: {} exists and is not loop `{topic}`'s worktree; move it away",
            worktree.display()
        )));
    }
    let workdir = repo.workdir().unwrap_or(repo.path());
    let commit = head.peel_to_commit().git_at(workdir, "read HEAD")?;
    let (reference, made_now) = match repo.find_branch(branch, BranchType::Local) {
        Ok(b) => (b, false),
        Err(_) => (
            repo.branch(branch, &commit, false)
                .git_at(workdir, "create the loop's branch")?,
            true,
        ),
    };
    if let Some(p) = worktree.parent() {
        crate::sys::fsutil::create_dir_all(p)?;
    }
    let mut opts = WorktreeAddOptions::new();
    opts.reference(Some(reference.get()));
    repo.worktree(name, worktree, Some(&opts))
        .git_at(worktree, "add the loop's worktree")?;
    let base = reference
        .get()
        .target()
        .map(|o| o.to_string())
        .unwrap_or_default();
    Ok((made_now, base))
}

/// The commit a local branch of the repository at `repo` points at, if there is one.
#[must_use]
pub fn branch_head(repo: &Path, branch: &str) -> Option<String> {
    let r = Repository::open(repo).ok()?;
    let b = r.find_branch(branch, BranchType::Local).ok()?;
    b.get().target().map(|o| o.to_string())
}

/// Take away what [`make`] made now (a start refused after it): the worktree, git's record of
/// it and the branch when this call made them, and the folder of worktrees when it is left empty.
pub fn undo(topic: &str, made: &Made) -> Result<()> {
    // Never once the loop has opened there (its state written) or its branch moved on: that
    // is work, not a refused start's leftovers.
    let opened = made.artifact.join("wiggum").join("state.json").exists();
    if !made.made_now || opened || branch_head(&made.repo, &made.branch) != Some(made.base.clone())
    {
        return Ok(());
    }
    remove(&made.repo, topic, &made.worktree, made.branch_made_now)?;
    // Only when empty: a folder that holds anything stays.
    if let Some(parent) = made.worktree.parent() {
        let _kept = std::fs::remove_dir(parent);
    }
    if let Ok(r) = Repository::open(&made.repo) {
        let _kept = std::fs::remove_dir(r.path().join("worktrees"));
    }
    Ok(())
}

/// Copy the files under `from` that `to` lacks (regular files and directories; the loop's own
/// `wiggum/` and links are left out).
fn copy_missing(from: &Path, to: &Path) -> Result<()> {
    use crate::error::IoContext;
    crate::sys::fsutil::create_dir_all(to)?;
    for e in std::fs::read_dir(from).at(from, "read the artifact directory")? {
        let e = e.at(from, "read the artifact directory")?;
        let name = e.file_name();
        if name == "wiggum" || name == ".git" {
            continue;
        }
        let (src, dst) = (e.path(), to.join(&name));
        let kind = e.file_type().at(&src, "read the file type")?;
        if kind.is_dir() {
            copy_missing(&src, &dst)?;
        } else if kind.is_file() && !dst.exists() {
            std::fs::copy(&src, &dst).at(&dst, "copy into the worktree")?;
        }
    }
    Ok(())
}

/// How to merge a loop's branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum How {
    /// Fast-forward when possible, else a merge commit (`git merge`).
    #[default]
    Merge,
    /// Always a merge commit.
    NoFf,
    /// Only a fast-forward.
    FfOnly,
    /// One commit on the target with the branch's changes.
    Squash,
}

/// How a merge ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Merged {
    /// The target now holds the branch: at this commit, fast-forwarded or not.
    Done {
        /// The target's new head.
        commit: String,
        /// Whether it was a fast-forward.
        fast_forward: bool,
    },
    /// The target already holds every commit of the branch.
    UpToDate,
    /// Nothing changed: these paths conflict.
    Conflicts(Vec<String>),
    /// Nothing changed: `--ff-only`, and the target has moved on.
    NotFastForward,
    /// Nothing changed: the user's uncommitted changes in the target's work tree touch these
    /// paths, which the merge would change.
    Dirty(Vec<String>),
}

/// Merge `branch` into `into` in the repository at `repo`. The target's ref moves only after
/// the work tree that has it checked out (if any) was updated without touching a file the user
/// changed; on anything short of success nothing is changed.
pub fn merge(repo: &Path, branch: &str, into: &str, how: How, message: &str) -> Result<Merged> {
    let r = Repository::open(repo).git_at(repo, "open the repository")?;
    let theirs = branch_commit(&r, repo, branch)?;
    let (refname, ours) = target_head(&r, repo, into)?;
    if ours.id() == theirs.id()
        || r.graph_descendant_of(ours.id(), theirs.id())
            .git_at(repo, "compare the branches")?
    {
        return Ok(Merged::UpToDate);
    }
    let can_ff = r
        .graph_descendant_of(theirs.id(), ours.id())
        .git_at(repo, "compare the branches")?;
    let (new, fast_forward) = match how {
        How::FfOnly if !can_ff => return Ok(Merged::NotFastForward),
        How::FfOnly | How::Merge if can_ff => (theirs.id(), true),
        _ => match merge_commit(&r, repo, &ours, &theirs, how, message)? {
            Ok(id) => (id, false),
            Err(paths) => return Ok(Merged::Conflicts(paths)),
        },
    };
    let dirty = follow_in_worktree(&r, repo, &refname, &ours, new)?;
    if !dirty.is_empty() {
        return Ok(Merged::Dirty(dirty));
    }
    r.reference(&refname, new, true, &format!("wiggum merge {branch}"))
        .git_at(repo, "move the target branch")?;
    Ok(Merged::Done {
        commit: new.to_string(),
        fast_forward,
    })
}

/// The head commit of the loop's `branch`.
fn branch_commit<'r>(r: &'r Repository, repo: &Path, branch: &str) -> Result<git2::Commit<'r>> {
    r.find_branch(branch, BranchType::Local)
        .map_err(|_| Error::input(format!("no branch `{branch}` in {}", repo.display())))?
        .get()
        .peel_to_commit()
        .git_at(repo, "read the loop's branch")
}

/// The target branch `into`: its ref's full name and its head commit.
fn target_head<'r>(
    r: &'r Repository,
    repo: &Path,
    into: &str,
) -> Result<(String, git2::Commit<'r>)> {
    let target = r.find_branch(into, BranchType::Local).map_err(|_| {
        Error::input(format!(
            "--into {into}: no such branch in {}",
            repo.display()
        ))
    })?;
    let refname = target
        .get()
        .name()
        .map_err(|_| Error::input(format!("--into {into}: not a UTF-8 ref name")))?
        .to_string();
    let ours = target
        .get()
        .peel_to_commit()
        .git_at(repo, "read the target branch")?;
    Ok((refname, ours))
}

/// Merge (or squash) `theirs` into `ours` in memory and write the commit, touching no ref:
/// its id, or the conflicting paths.
fn merge_commit(
    r: &Repository,
    repo: &Path,
    ours: &git2::Commit<'_>,
    theirs: &git2::Commit<'_>,
    how: How,
    message: &str,
) -> Result<std::result::Result<git2::Oid, Vec<String>>> {
    let mut index = r
        .merge_commits(ours, theirs, None)
        .git_at(repo, "merge in memory")?;
    if index.has_conflicts() {
        let mut paths: Vec<String> = index
            .conflicts()
            .git_at(repo, "list the conflicts")?
            .flatten()
            .filter_map(|c| c.our.or(c.their).or(c.ancestor))
            .map(|e| String::from_utf8_lossy(&e.path).to_string())
            .collect();
        paths.sort();
        paths.dedup();
        return Ok(Err(paths));
    }
    let sig = r
        .signature()
        .or_else(|_| git2::Signature::now("wiggum", "wiggum@studio-agents.local"))
        .git_at(repo, "make a signature")?;
    let tree = index
        .write_tree_to(r)
        .git_at(repo, "write the merged tree")?;
    let tree = r.find_tree(tree).git_at(repo, "read the merged tree")?;
    let parents: Vec<&git2::Commit<'_>> = if how == How::Squash {
        vec![ours]
    } else {
        vec![ours, theirs]
    };
    let id = r
        .commit(None, &sig, &sig, message, &tree, &parents)
        .git_at(repo, "write the merge commit")?;
    Ok(Ok(id))
}

/// The work tree that has the target checked out follows it to `new`, as `git merge` updates
/// it, unless the user's uncommitted changes touch what would change: those paths (none when
/// it followed, or no work tree has the target).
fn follow_in_worktree(
    r: &Repository,
    repo: &Path,
    refname: &str,
    ours: &git2::Commit<'_>,
    new: git2::Oid,
) -> Result<Vec<String>> {
    let new_commit = r.find_commit(new).git_at(repo, "read the new head")?;
    let checked_out = r
        .head()
        .ok()
        .and_then(|h| h.name().ok().map(str::to_string))
        .is_some_and(|h| h == refname);
    if !checked_out || r.is_bare() {
        return Ok(Vec::new());
    }
    let changed = changed_paths(r, ours, &new_commit)?;
    let dirty = dirty_among(r, &changed)?;
    if !dirty.is_empty() {
        return Ok(dirty);
    }
    let mut co = git2::build::CheckoutBuilder::new();
    co.safe();
    for p in &changed {
        co.path(p);
    }
    let tree = new_commit.tree().git_at(repo, "read the new tree")?;
    r.checkout_tree(tree.as_object(), Some(&mut co))
        .git_at(repo, "update the work tree")?;
    Ok(Vec::new())
}

/// The paths that differ between two commits.
fn changed_paths(
    r: &Repository,
    a: &git2::Commit<'_>,
    b: &git2::Commit<'_>,
) -> Result<Vec<String>> {
    let at = r.path().to_path_buf();
    let (ta, tb) = (
        a.tree().git_at(&at, "read a tree")?,
        b.tree().git_at(&at, "read a tree")?,
    );
    let diff = r
        .diff_tree_to_tree(Some(&ta), Some(&tb), None)
        .git_at(&at, "diff the trees")?;
    let mut out: Vec<String> = diff
        .deltas()
        .flat_map(|d| [d.old_file().path(), d.new_file().path()])
        .flatten()
        .map(|p| p.to_string_lossy().to_string())
        .collect();
    out.sort();
    out.dedup();
    Ok(out)
}

/// Which of `paths` the user changed (staged or not, or left untracked where the merge would
/// write).
fn dirty_among(r: &Repository, paths: &[String]) -> Result<Vec<String>> {
    let at = r.path().to_path_buf();
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true).recurse_untracked_dirs(true);
    let statuses = r.statuses(Some(&mut opts)).git_at(&at, "read the status")?;
    let mut out: Vec<String> = statuses
        .iter()
        .filter(|s| !s.status().is_ignored() && !s.status().is_empty())
        .filter_map(|s| s.path().ok().map(str::to_string))
        .filter(|p| paths.iter().any(|c| c == p))
        .collect();
    out.sort();
    Ok(out)
}

/// Whether every commit of `branch` is in `into`.
pub fn is_merged(repo: &Path, branch: &str, into: &str) -> Result<bool> {
    let r = Repository::open(repo).git_at(repo, "open the repository")?;
    let id = |name: &str| -> Option<git2::Oid> {
        r.find_branch(name, BranchType::Local).ok()?.get().target()
    };
    let (Some(b), Some(i)) = (id(branch), id(into)) else {
        return Ok(false);
    };
    Ok(b == i
        || r.graph_descendant_of(i, b)
            .git_at(repo, "compare the branches")?)
}

/// The paths changed in a worktree that no commit holds (staged, modified or untracked), the
/// loop's own `wiggum/` records left out.
pub fn uncommitted(worktree: &Path) -> Result<Vec<String>> {
    let r = Repository::open(worktree).git_at(worktree, "open the worktree")?;
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true).recurse_untracked_dirs(true);
    let statuses = r
        .statuses(Some(&mut opts))
        .git_at(worktree, "read the status")?;
    Ok(statuses
        .iter()
        .filter(|s| !s.status().is_ignored() && !s.status().is_empty())
        .filter_map(|s| s.path().ok().map(str::to_string))
        .filter(|p| !p.split('/').any(|c| c == "wiggum"))
        .collect())
}

/// Remove the worktree of `topic` (its directory and git's record of it), and its branch when
/// asked.
pub fn remove(repo: &Path, topic: &str, worktree: &Path, delete_branch: bool) -> Result<()> {
    let r = Repository::open(repo).git_at(repo, "open the repository")?;
    if worktree.exists() {
        std::fs::remove_dir_all(worktree).map_err(|e| Error::Io {
            path: worktree.to_path_buf(),
            action: "remove the worktree",
            source: e,
        })?;
    }
    if let Ok(wt) = r.find_worktree(&format!("wiggum-{topic}")) {
        wt.prune(Some(
            WorktreePruneOptions::new().valid(true).working_tree(true),
        ))
        .git_at(worktree, "prune the worktree")?;
    }
    if delete_branch && let Ok(mut b) = r.find_branch(&branch_of(topic), BranchType::Local) {
        b.delete().git_at(repo, "delete the loop's branch")?;
    }
    Ok(())
}
