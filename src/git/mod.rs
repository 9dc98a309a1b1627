//! git2 at the edge: find or create the repository, check it before a loop starts (`preflight`),
//! snapshot what is dirty under the loop's directory (`snapshot`), commit exactly the paths an
//! iteration changed (`commit`), the commit subjects (`subject`), diff. May import `disk`,
//! `config` and `sys`.

mod attributes;
mod commit;
pub mod filters;
pub mod forge;
pub mod generated;
pub mod history;
pub mod patch;
mod pathstatus;
pub mod preflight;
pub mod remote;
pub mod rules;
mod snapshot;
pub mod subject;
pub mod text_diff;
pub mod worktree;

use std::path::{Path, PathBuf};

use git2::{Oid, Repository};

pub use commit::Pending;
pub use snapshot::Snapshot;

use crate::error::{Error, GitContext, Result};

/// Git's "skip-worktree" index flag (sparse checkout): such files are absent from the work tree on
/// purpose, and libgit2's status reports them as deleted.
const SKIP_WORKTREE: u16 = 0x4000;

/// The mode of a submodule's entry (a commit in the tree).
const GITLINK: u32 = 0o160_000;

/// The iteration number and sha of HEAD when it is an iteration commit (`Wiggum iteration N:
/// …`) of the loop on `artifact`: one that changed that loop's own `wiggum/`. Another loop's
/// commit on the same repository (on another artifact directory) is not this loop's iteration.
/// Never creates a repository.
#[must_use]
pub fn head_iteration(artifact: &Path) -> Option<(u32, String)> {
    let repo = Repository::discover(artifact).ok()?;
    let head = repo.head().ok()?.peel_to_commit().ok()?;
    let n = subject::parse_iteration(head.message().ok()?)?;
    let workdir = repo.workdir()?.canonicalize().ok()?;
    let ours = artifact
        .canonicalize()
        .ok()?
        .strip_prefix(&workdir)
        .ok()?
        .join("wiggum");
    let tree = head.tree().ok()?;
    let parent = head.parent(0).ok().and_then(|p| p.tree().ok());
    let diff = repo
        .diff_tree_to_tree(parent.as_ref(), Some(&tree), None)
        .ok()?;
    let touched = diff.deltas().any(|d| {
        [d.new_file().path(), d.old_file().path()]
            .into_iter()
            .flatten()
            .any(|p| p.starts_with(&ours))
    });
    touched.then(|| (n, head.id().to_string()))
}

/// Where HEAD points: a branch (`refs/heads/main`) or a commit (detached).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeadRef {
    /// On a branch (the full ref name).
    Branch(String),
    /// Detached.
    Detached,
}

impl HeadRef {
    /// Read `<git_dir>/HEAD` (a few bytes: `ref: refs/heads/main` or a commit id).
    #[must_use]
    pub fn read(git_dir: &Path) -> Option<HeadRef> {
        let text = crate::sys::fsutil::read_capped(&git_dir.join("HEAD"), 4096).ok()?;
        // As git reads it: ASCII white space only (a no-break space is part of a name).
        let ascii = |c: char| c.is_ascii_whitespace();
        Some(match text.trim_matches(ascii).strip_prefix("ref:") {
            Some(r) => HeadRef::Branch(r.trim_matches(ascii).to_string()),
            None => HeadRef::Detached,
        })
    }

    /// For people: `` `main` ``, or `a detached HEAD`.
    #[must_use]
    pub fn shown(&self) -> String {
        match self {
            HeadRef::Branch(r) => format!("`{}`", short(r)),
            HeadRef::Detached => "a detached HEAD".to_string(),
        }
    }
}

/// A branch's name as people type it (`main` for `refs/heads/main`).
fn short(r: &str) -> &str {
    r.strip_prefix("refs/heads/").unwrap_or(r)
}

/// Why the loop must not commit now: HEAD left the branch (or detached HEAD) the loop started
/// on — a `git switch` or `git checkout` in another shell. `None` while it is where it was.
#[must_use]
pub fn head_moved(git_dir: &Path, at_start: &HeadRef) -> Option<String> {
    let now = HeadRef::read(git_dir)?;
    (now != *at_start).then(|| {
        let back = match at_start {
            HeadRef::Branch(r) => format!("`git switch {}`", short(r)),
            HeadRef::Detached => "`git switch --detach <the loop's last commit>`".to_string(),
        };
        let where_now = match &now {
            HeadRef::Branch(_) => format!("HEAD is on {}", now.shown()),
            HeadRef::Detached => "HEAD is detached".to_string(),
        };
        format!(
            "{where_now} but the loop commits on {} (a `git switch` or `git checkout` in another shell?); switch back with {back}",
            at_start.shown()
        )
    })
}

/// A git operation (rebase, merge, cherry-pick…) in progress in `repo`, for people (libgit2
/// reads the state from the repository's files at each call).
fn busy_in(repo: &Repository, workdir: &Path) -> Option<String> {
    let state = repo.state();
    (state != git2::RepositoryState::Clean).then(|| {
        format!(
            "{}: a git operation ({state:?}) is in progress",
            workdir.display()
        )
    })
}

/// [`Repo::busy`] for a caller that holds only the git dir (a wait that must not borrow the
/// loop's handle): opens the repository for the question.
#[must_use]
pub fn busy_at(git_dir: &Path) -> Option<String> {
    let repo = Repository::open(git_dir).ok()?;
    let workdir = repo.workdir().map(Path::to_path_buf)?;
    let workdir = workdir.canonicalize().unwrap_or(workdir);
    busy_in(&repo, &workdir)
}

/// The repository holding a loop's artifact directory.
pub struct Repo {
    repo: Repository,
    workdir: PathBuf,
    /// The artifact dir relative to the work tree ("" when they are the same).
    scope: PathBuf,
    /// How the `git` commands the loop runs are confined (the agent's sandbox and environment:
    /// what the repository configures is the agent's input); `None` runs them as they are.
    confine: Option<filters::Confine>,
    /// Files larger than this (apparent size, bytes) are never read nor hashed: a snapshot
    /// tells them by their size, time and inode.
    max_file: u64,
}

impl Repo {
    /// Open the repository containing `artifact`, or init one there.
    pub fn open_or_init(artifact: &Path) -> Result<Repo> {
        let repo = match Repository::discover(artifact) {
            Ok(r) if !r.is_bare() => r,
            // Only where there is no repository: one that is there but refused (another
            // user's) must not get a second one inside it.
            Err(e) => {
                preflight::refused_discovery(artifact, &e)?;
                Repository::init(artifact).git_at(artifact, "init a repository")?
            }
            Ok(_) => Repository::init(artifact).git_at(artifact, "init a repository")?,
        };
        Self::wrap(repo, artifact)
    }

    /// Open the repository containing `artifact`; never creates one.
    pub fn open(artifact: &Path) -> Result<Repo> {
        let repo = Repository::discover(artifact).git_at(artifact, "find the repository")?;
        Self::wrap(repo, artifact)
    }

    fn wrap(repo: Repository, artifact: &Path) -> Result<Repo> {
        let workdir = repo
            .workdir()
            .ok_or_else(|| Error::runtime(format!("{} has no work tree", artifact.display())))?
            .canonicalize()
            .map_err(|e| Error::runtime(format!("canonicalise work tree: {e}")))?;
        let canon = artifact
            .canonicalize()
            .map_err(|e| Error::runtime(format!("canonicalise {}: {e}", artifact.display())))?;
        let scope = canon
            .strip_prefix(&workdir)
            .unwrap_or(Path::new(""))
            .to_path_buf();
        Ok(Repo {
            repo,
            workdir,
            scope,
            confine: None,
            max_file: u64::MAX,
        })
    }

    /// Read and hash no file larger than `bytes` (0: no limit).
    pub fn limit_file_size(&mut self, bytes: u64) {
        self.max_file = if bytes == 0 { u64::MAX } else { bytes };
    }

    /// The paths (relative to the artifact dir) whose file is larger than the limit, with
    /// their sizes: what may not be committed.
    #[must_use]
    pub fn oversized<'a>(&self, paths: impl IntoIterator<Item = &'a Path>) -> Vec<(PathBuf, u64)> {
        paths
            .into_iter()
            .filter_map(|p| {
                let m = std::fs::symlink_metadata(self.workdir.join(&self.scope).join(p)).ok()?;
                (m.is_file() && m.len() > self.max_file).then(|| (p.to_path_buf(), m.len()))
            })
            .collect()
    }

    /// Run every `git` command of this repository behind `confine`.
    pub fn confine(&mut self, confine: filters::Confine) {
        self.confine = Some(confine);
    }

    /// Open the repository afresh, dropping what libgit2 keeps for the handle's life (its
    /// attribute and ignore caches gain entries for every new directory it is asked about).
    pub fn reopen(&mut self) -> Result<()> {
        self.repo =
            Repository::open(self.repo.path()).git_at(&self.workdir, "reopen the repository")?;
        Ok(())
    }

    /// Where HEAD points now.
    #[must_use]
    pub fn head_ref(&self) -> Option<HeadRef> {
        HeadRef::read(self.repo.path())
    }

    /// The work tree's root.
    #[must_use]
    pub fn workdir(&self) -> &Path {
        &self.workdir
    }

    /// The underlying repository (hooks, preflight).
    #[must_use]
    pub fn git(&self) -> &Repository {
        &self.repo
    }

    fn rel_to_artifact<'a>(&self, repo_rel: &'a Path) -> Option<&'a Path> {
        repo_rel.strip_prefix(&self.scope).ok()
    }

    fn pathspec(&self) -> String {
        if self.scope.as_os_str().is_empty() {
            "*".into()
        } else {
            self.scope.display().to_string()
        }
    }

    /// Whether git ignores `rel` (relative to the artifact dir).
    #[must_use]
    pub fn is_ignored(&self, rel: &Path) -> bool {
        let repo_rel = self.scope.join(rel);
        rules::clear_odd_above(&self.workdir, [repo_rel.as_path()]);
        self.repo.is_path_ignored(repo_rel).unwrap_or(false)
    }

    /// Whether `rel` (relative to the artifact dir) is as HEAD and the index hold it (an ignored
    /// file counts as unchanged; what git cannot say, a directory among it, does not).
    #[must_use]
    pub fn unchanged(&self, rel: &Path) -> bool {
        let repo_rel = self.scope.join(rel);
        rules::clear_odd_above(&self.workdir, [repo_rel.as_path()]);
        match self.repo.status_file(&repo_rel) {
            Ok(s) => s.is_empty() || s == git2::Status::IGNORED,
            // Neither in the work tree nor in HEAD or the index: nothing is left there.
            Err(e) => e.code() == git2::ErrorCode::NotFound,
        }
    }

    /// Whether HEAD's tree holds `rel` (relative to the artifact dir).
    #[must_use]
    pub fn in_head(&self, rel: &Path) -> bool {
        self.repo
            .head()
            .and_then(|h| h.peel_to_tree())
            .and_then(|t| t.get_path(&self.scope.join(rel)))
            .is_ok()
    }

    /// What HEAD's tree holds at `rel` (relative to the artifact dir): `None` when it holds no
    /// file there (or there is no HEAD).
    #[must_use]
    pub fn head_blob(&self, rel: &Path) -> Option<Vec<u8>> {
        let tree = self.repo.head().and_then(|h| h.peel_to_tree()).ok()?;
        let entry = tree.get_path(&self.scope.join(rel)).ok()?;
        let blob = entry.to_object(&self.repo).ok()?.into_blob().ok()?;
        Some(blob.content().to_vec())
    }

    /// The current HEAD commit, if any.
    #[must_use]
    pub fn head(&self) -> Option<Oid> {
        self.repo.head().ok().and_then(|h| h.target())
    }

    /// Whether the repository is in the middle of a merge, rebase, cherry-pick, … (a commit
    /// now would land in the user's half-done operation).
    #[must_use]
    pub fn busy(&self) -> Option<String> {
        busy_in(&self.repo, &self.workdir)
    }

    /// Commit `paths` (relative to the artifact dir) on top of HEAD, without hooks. `None` when
    /// they hold what HEAD holds. (The loop commits through [`Pending`]; tests commit at once.)
    #[cfg(test)]
    pub fn commit_paths(
        &self,
        paths: &[PathBuf],
        message: &str,
        name: &str,
        email: &str,
    ) -> Result<Option<String>> {
        match self.stage_tree(paths)? {
            None => Ok(None),
            Some(mut p) => self.finish(&mut p, message, name, email).map(Some),
        }
    }

    /// The patch of commit `sha` against commit `from` (its first parent when `None`), as text:
    /// the commits between included — an agent's own commits under the loop's.
    pub fn commit_patch_from(&self, from: Option<&str>, sha: &str) -> Result<String> {
        let wd = &self.workdir;
        let oid = Oid::from_str(sha).git_at(wd, "parse a commit id")?;
        let commit = self.repo.find_commit(oid).git_at(wd, "find the commit")?;
        let tree = commit.tree().git_at(wd, "read the tree")?;
        let base_tree = match from {
            Some(from) => Some(self.tree_of_commit(from)?),
            None => match commit.parent(0) {
                Ok(p) => Some(p.tree().git_at(wd, "read the parent tree")?),
                Err(_) => None,
            },
        };
        let diff = self
            .repo
            .diff_tree_to_tree(base_tree.as_ref(), Some(&tree), None)
            .git_at(wd, "diff")?;
        patch_text(&diff, wd)
    }

    /// The first parent of commit `sha`, if it has one.
    #[must_use]
    pub fn first_parent(&self, sha: &str) -> Option<String> {
        let oid = Oid::from_str(sha).ok()?;
        let commit = self.repo.find_commit(oid).ok()?;
        commit.parent_id(0).ok().map(|p| p.to_string())
    }

    /// The tree of commit `sha`.
    fn tree_of_commit(&self, sha: &str) -> Result<git2::Tree<'_>> {
        let wd = &self.workdir;
        let oid = Oid::from_str(sha).git_at(wd, "parse a commit id")?;
        self.repo
            .find_commit(oid)
            .and_then(|c| c.tree())
            .git_at(wd, "read a commit's tree")
    }

    /// The paths (relative to the artifact dir) whose content HEAD holds differently from
    /// commit `from`: what commits made on top of it changed there.
    pub fn changed_since_commit(&self, from: &str) -> Result<Vec<PathBuf>> {
        let wd = &self.workdir;
        let Some(head) = self.head() else {
            return Ok(Vec::new());
        };
        let old = self.tree_of_commit(from)?;
        let new = self.tree_of_commit(&head.to_string())?;
        let mut opts = git2::DiffOptions::new();
        if !self.scope.as_os_str().is_empty() {
            opts.pathspec(&self.scope).disable_pathspec_match(true);
        }
        let diff = self
            .repo
            .diff_tree_to_tree(Some(&old), Some(&new), Some(&mut opts))
            .git_at(wd, "diff two commits")?;
        let mut out = Vec::new();
        for d in diff.deltas() {
            for f in [d.old_file(), d.new_file()] {
                if let Some(rel) = f.path().and_then(|p| self.rel_to_artifact(p))
                    && !out.iter().any(|o: &PathBuf| o == rel)
                {
                    out.push(rel.to_path_buf());
                }
            }
        }
        Ok(out)
    }

    /// The changes of `paths` (relative to the artifact dir) in the work tree since commit
    /// `from` (HEAD when `None`), as text: with `from` the last commit the loop made, what an
    /// agent committed of its own is in it too.
    pub fn worktree_patch_from(&self, from: Option<&str>, paths: &[PathBuf]) -> Result<String> {
        let wd = &self.workdir;
        let head_tree = match (from, self.head()) {
            (Some(from), _) => Some(self.tree_of_commit(from)?),
            (None, Some(oid)) => Some(self.tree_of_commit(&oid.to_string())?),
            (None, None) => None,
        };
        let mut opts = git2::DiffOptions::new();
        opts.include_untracked(true)
            .recurse_untracked_dirs(true)
            .show_untracked_content(true)
            .disable_pathspec_match(true);
        for p in paths {
            opts.pathspec(self.scope.join(p));
        }
        if paths.is_empty() {
            return Ok(String::new());
        }
        let diff = self
            .repo
            .diff_tree_to_workdir(head_tree.as_ref(), Some(&mut opts))
            .git_at(wd, "diff the work tree")?;
        patch_text(&diff, wd)
    }
}

fn patch_text(diff: &git2::Diff<'_>, wd: &Path) -> Result<String> {
    let mut out = String::new();
    diff.print(git2::DiffFormat::Patch, |_, _, line| {
        if matches!(line.origin(), '+' | '-' | ' ') {
            out.push(line.origin());
        }
        out.push_str(&String::from_utf8_lossy(line.content()));
        true
    })
    .git_at(wd, "print the diff")?;
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests;
