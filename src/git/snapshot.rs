//! What is dirty under the loop's directory, and where HEAD is. Taken before and after each agent
//! run: the difference is exactly what the agent changed, and exactly what the loop may commit.
//!
//! A full snapshot walks the work tree (libgit2's status, using the index's stat cache as
//! `git status` does). [`Repo::refresh`] instead updates an earlier snapshot for the paths a file
//! watch saw touched, one path at a time (`pathstatus.rs`); it walks when it cannot be sure:
//! the watch lost events, HEAD moved, or someone else wrote the index.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use git2::{Oid, Status, StatusOptions, Statuses};

use super::commit::Pending;
use super::{GITLINK, Repo, SKIP_WORKTREE};
use crate::disk::layout::Layout;
use crate::error::{GitContext, Result};

/// Dirty paths under the artifact dir (relative to it) with the blob id of their content (`None`
/// when deleted or unreadable), and HEAD. Two equal snapshots mean "no change".
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Snapshot {
    pub(super) head: Option<Oid>,
    pub(super) files: BTreeMap<PathBuf, Option<Oid>>,
    /// The index file's identity when the snapshot was taken: another writer shows here.
    pub(super) index: Option<IndexStamp>,
    /// Dirty paths whose index entry differs from HEAD's (staged work): only for these does a
    /// refresh need HEAD's tree.
    pub(super) staged: BTreeSet<PathBuf>,
}

/// The user's work [`Repo::work_found`] found.
#[derive(Debug, Default)]
pub struct Found {
    /// Anywhere an agent may write, relative to the work tree's root.
    pub at_risk: Vec<PathBuf>,
    /// Dirty under the artifact dir, relative to it.
    pub dirty: Vec<PathBuf>,
}

/// Modification time (ns), size and inode of the index file.
pub(super) type IndexStamp = (i128, u64, u64);

/// Past this many touched paths, one walk is cheaper than asking about each.
const MAX_TOUCHED: usize = 20_000;

impl Snapshot {
    /// Paths (relative to the artifact dir) whose content differs between two snapshots: the
    /// files the loop commits.
    #[must_use]
    pub fn changed_paths(&self, before: &Snapshot) -> Vec<PathBuf> {
        let mut out: BTreeSet<PathBuf> = self
            .files
            .iter()
            .filter(|(p, oid)| before.files.get(*p) != Some(oid))
            .map(|(p, _)| p.clone())
            .collect();
        out.extend(
            before
                .files
                .keys()
                .filter(|p| !self.files.contains_key(*p))
                .cloned(),
        );
        out.into_iter().collect()
    }

    /// [`Self::changed_paths`] for people and run records; an agent that committed everything
    /// itself still shows as a change.
    #[must_use]
    pub fn changed_since(&self, before: &Snapshot) -> Vec<String> {
        let mut out: Vec<String> = self
            .changed_paths(before)
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        if out.is_empty() && self.head != before.head {
            out.push("(commits made by the agent)".into());
        }
        out
    }

    /// Whether `rel` (relative to the artifact dir) is dirty.
    #[must_use]
    pub fn holds(&self, rel: &Path) -> bool {
        self.files.contains_key(rel)
    }

    /// Every dirty path (relative to the artifact dir).
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.files.keys().map(PathBuf::as_path)
    }

    /// Forget every path at or under `rel` (paths order by component, so they are adjacent).
    fn forget(&mut self, rel: &Path) {
        let under: Vec<PathBuf> = self
            .files
            .range(rel.to_path_buf()..)
            .take_while(|(p, _)| p.starts_with(rel))
            .map(|(p, _)| p.clone())
            .collect();
        for p in under {
            self.files.remove(&p);
        }
        // `staged` stays: a refresh runs only while HEAD and the index are unchanged.
    }
}

impl Repo {
    /// What is dirty under the artifact dir, leaving out the supervisor's own files and files a
    /// sparse checkout keeps out of the work tree.
    pub fn snapshot(&self) -> Result<Snapshot> {
        // Before libgit2's walk reads the rules of every directory.
        super::rules::clear_odd_above(&self.workdir, [self.scope.join("x").as_path()]);
        super::rules::clear_odd_under(&self.workdir.join(&self.scope));
        let index = self.index_stamp();
        let head = self.head();
        let mut opts = StatusOptions::new();
        opts.include_untracked(true)
            .recurse_untracked_dirs(true)
            .include_ignored(false)
            .exclude_submodules(false)
            .pathspec(self.pathspec());
        let statuses = self
            .repo
            .statuses(Some(&mut opts))
            .git_at(&self.workdir, "read status")?;
        let sparse = self.skip_worktree_paths()?;
        let mut snap = Snapshot {
            head,
            files: BTreeMap::new(),
            index,
            staged: BTreeSet::new(),
        };
        self.absorb(&mut snap, &statuses, |p| sparse.contains(p));
        Ok(snap)
    }

    /// The user's work, from one walk of the work tree (`start` needs both lists before any
    /// agent runs, and a walk of a large tree is what start-up costs):
    /// - `at_risk`: anywhere in the work tree an agent may write (relative to the work tree's
    ///   root), not only under the artifact dir: tracked changes, untracked files, and ignored
    ///   *files* (an `.env`, a local config; an ignored directory — build output, caches — is
    ///   left out whole). The loop's own `wiggum/` under `loop_dir` is not the user's, nor is a
    ///   submodule (its own repository) or a file deleted (HEAD has it).
    /// - `dirty`: what [`Self::snapshot`] would call dirty under the artifact dir (relative to
    ///   it), deletions and dirty submodules included, the supervisor's own files left out.
    ///
    /// A sparse checkout's absent files are neither.
    pub fn work_found(&self, loop_dir: &Path) -> Result<Found> {
        // Before libgit2's walk of the whole work tree reads every directory's rules.
        super::rules::clear_odd_under(&self.workdir);
        let mut opts = StatusOptions::new();
        opts.include_untracked(true)
            .recurse_untracked_dirs(true)
            .include_ignored(true)
            .recurse_ignored_dirs(false)
            .exclude_submodules(false);
        let statuses = self
            .repo
            .statuses(Some(&mut opts))
            .git_at(&self.workdir, "read status")?;
        let index = self.repo.index().git_at(&self.workdir, "read the index")?;
        let mut sparse = BTreeSet::new();
        let mut submodules = BTreeSet::new();
        for e in index.iter() {
            let path = PathBuf::from(OsStr::from_bytes(&e.path));
            if e.flags_extended & SKIP_WORKTREE != 0 {
                sparse.insert(path);
            } else if e.mode == GITLINK {
                submodules.insert(path);
            }
        }
        let mut found = Found::default();
        for e in statuses.iter() {
            let path = e.path_bytes();
            let s = e.status();
            let rel = Path::new(OsStr::from_bytes(path));
            if s.is_empty() || sparse.contains(rel) {
                continue;
            }
            if !s.contains(Status::IGNORED)
                && let Some(mine) = self.rel_to_artifact(rel)
                && !Layout::is_supervisor_path(mine)
            {
                found.dirty.push(mine.to_path_buf());
            }
            if s == Status::WT_DELETED || s == Status::INDEX_DELETED {
                continue; // a file deleted: HEAD has it
            }
            if path.ends_with(b"/") {
                continue; // an ignored (or empty untracked) directory, whole
            }
            if rel.starts_with(loop_dir) || submodules.contains(rel) {
                continue;
            }
            found.at_risk.push(rel.to_path_buf());
        }
        Ok(found)
    }

    /// `prev` brought up to date for `touched` (paths relative to the artifact dir; a directory
    /// stands for everything under it), or a full [`Self::snapshot`] when `touched` is `None`
    /// (unknown), HEAD moved or the index was written by someone else since `prev`.
    pub fn refresh(
        &self,
        prev: &Snapshot,
        touched: Option<&BTreeSet<PathBuf>>,
    ) -> Result<Snapshot> {
        let Some(touched) = touched else {
            return self.snapshot();
        };
        if prev.head != self.head()
            || prev.index.is_none()
            || prev.index != self.index_stamp()
            || touched.len() > MAX_TOUCHED
        {
            return self.snapshot();
        }
        let mut snap = prev.clone();
        if touched.is_empty() {
            return Ok(snap);
        }
        let mut index = self.repo.index().git_at(&self.workdir, "read the index")?;
        index.read(false).git_at(&self.workdir, "read the index")?;
        let mut specs = BTreeSet::new();
        for rel in touched {
            let repo_rel = self.scope.join(rel);
            // A change inside a submodule is a change of the submodule's entry.
            let at = submodule_of(&index, &repo_rel).unwrap_or(repo_rel);
            if let Some(r) = self.rel_to_artifact(&at) {
                snap.forget(r);
            }
            specs.insert(at);
        }
        self.refresh_paths(&mut snap, prev, &index, &specs)?;
        Ok(snap)
    }

    /// `snap` after the commit `pending` that this process made on top of it: HEAD and the index
    /// moved for its paths only. `None` when that is not so — the commit went on a HEAD another
    /// writer had moved, or HEAD moved again since — and only a walk can tell.
    pub fn after_commit(&self, snap: &Snapshot, pending: &Pending) -> Result<Option<Snapshot>> {
        let ours = pending.made().is_some_and(|m| self.head() == Some(m));
        if !ours || pending.parent() != snap.head {
            return Ok(None);
        }
        let touched: BTreeSet<PathBuf> = self.committed_paths(pending).into_iter().collect();
        let base = Snapshot {
            head: self.head(),
            files: snap.files.clone(),
            index: self.index_stamp(),
            // The committed paths' index entries are now HEAD's.
            staged: snap.staged.difference(&touched).cloned().collect(),
        };
        self.refresh(&base, Some(&touched)).map(Some)
    }

    /// Fold status entries into `snap`, leaving out the supervisor's own files, paths outside
    /// the artifact dir and files a sparse checkout keeps out of the work tree.
    fn absorb(&self, snap: &mut Snapshot, statuses: &Statuses<'_>, sparse: impl Fn(&Path) -> bool) {
        for entry in statuses.iter() {
            let repo_rel = PathBuf::from(OsStr::from_bytes(entry.path_bytes()));
            let Some(rel) = self.rel_to_artifact(&repo_rel) else {
                continue;
            };
            if Layout::is_supervisor_path(rel) || sparse(&repo_rel) {
                continue;
            }
            let oid = self.content_id(&repo_rel);
            snap.files.insert(rel.to_path_buf(), oid);
            let in_index = Status::INDEX_NEW
                | Status::INDEX_MODIFIED
                | Status::INDEX_DELETED
                | Status::INDEX_RENAMED
                | Status::INDEX_TYPECHANGE;
            if entry.status().intersects(in_index) {
                snap.staged.insert(rel.to_path_buf());
            }
        }
    }

    /// The index file's identity now (`None` when it cannot be read).
    fn index_stamp(&self) -> Option<IndexStamp> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(self.repo.path().join("index")).ok()?;
        Some((
            i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
            m.size(),
            m.ino(),
        ))
    }

    /// Index entries flagged skip-worktree (empty outside sparse checkouts).
    fn skip_worktree_paths(&self) -> Result<BTreeSet<PathBuf>> {
        let index = self.repo.index().git_at(&self.workdir, "read the index")?;
        Ok(index
            .iter()
            .filter(|e| e.flags_extended & SKIP_WORKTREE != 0)
            .map(|e| PathBuf::from(OsStr::from_bytes(&e.path)))
            .collect())
    }

    /// Whether `repo_rel` lies beyond a link (or a file) in the work tree: a directory on its
    /// way is not one. Git holds no such path (`git add` refuses it as beyond a symbolic link):
    /// it is gone, whatever the link's target holds there.
    pub(super) fn beyond_a_link(&self, repo_rel: &Path) -> bool {
        repo_rel
            .ancestors()
            .skip(1)
            .filter(|a| !a.as_os_str().is_empty())
            .any(|a| std::fs::symlink_metadata(self.workdir.join(a)).map_or(true, |m| !m.is_dir()))
    }

    /// The id of what a work-tree path holds: a file's blob, a symlink's target, a submodule's
    /// HEAD commit; `None` when it is gone (or beyond a link).
    pub(super) fn content_id(&self, repo_rel: &Path) -> Option<Oid> {
        if self.beyond_a_link(repo_rel) {
            return None;
        }
        let full = self.workdir.join(repo_rel);
        let meta = std::fs::symlink_metadata(&full).ok()?;
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&full).ok()?;
            return Oid::hash_object(
                git2::ObjectType::Blob,
                target.as_os_str().as_encoded_bytes(),
            )
            .ok();
        }
        if meta.is_dir() {
            return git2::Repository::open(&full).ok()?.head().ok()?.target();
        }
        // A FIFO, socket or device is nothing git tracks (and opening a FIFO would block).
        if !meta.is_file() {
            return None;
        }
        if meta.len() > self.max_file {
            // Never read: told by what the inode says of it.
            use std::os::unix::fs::MetadataExt;
            let id = format!(
                "oversized {} {}.{} {}",
                meta.len(),
                meta.mtime(),
                meta.mtime_nsec(),
                meta.ino()
            );
            return Oid::hash_object(git2::ObjectType::Blob, id.as_bytes()).ok();
        }
        Oid::hash_file(git2::ObjectType::Blob, &full).ok()
    }
}

/// The submodule (gitlink entry) `repo_rel` lies inside, if any.
fn submodule_of(index: &git2::Index, repo_rel: &Path) -> Option<PathBuf> {
    repo_rel
        .ancestors()
        .skip(1)
        .filter(|a| !a.as_os_str().is_empty())
        .find(|a| index.get_path(a, 0).is_some_and(|e| e.mode == GITLINK))
        .map(Path::to_path_buf)
}
