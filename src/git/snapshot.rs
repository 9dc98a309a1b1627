//! What is dirty under the loop's directory, and where HEAD is. Taken before and after each agent
//! run: the difference is exactly what the agent changed, and exactly what the loop may commit.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use git2::{Oid, StatusOptions};

use super::Repo;
use crate::disk::layout::Layout;
use crate::error::{GitContext, Result};

/// Git's "skip-worktree" index flag (sparse checkout): such files are absent from the work tree on
/// purpose, and libgit2's status reports them as deleted.
pub(super) const SKIP_WORKTREE: u16 = 0x4000;

/// Dirty paths under the artifact dir (relative to it) with the blob id of their content (`None`
/// when deleted or unreadable), and HEAD. Two equal snapshots mean "no change".
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Snapshot {
    pub(super) head: Option<Oid>,
    pub(super) files: BTreeMap<PathBuf, Option<Oid>>,
}

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

    /// Every dirty path (relative to the artifact dir).
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.files.keys().map(PathBuf::as_path)
    }
}

impl Repo {
    /// What is dirty under the artifact dir, leaving out the supervisor's own files and files a
    /// sparse checkout keeps out of the work tree.
    pub fn snapshot(&self) -> Result<Snapshot> {
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
        let mut files = BTreeMap::new();
        for entry in statuses.iter() {
            let repo_rel = PathBuf::from(OsStr::from_bytes(entry.path_bytes()));
            if sparse.contains(&repo_rel) {
                continue;
            }
            let Some(rel) = self.rel_to_artifact(&repo_rel) else {
                continue;
            };
            if Layout::is_supervisor_path(rel) {
                continue;
            }
            let oid = self.content_id(&repo_rel);
            files.insert(rel.to_path_buf(), oid);
        }
        Ok(Snapshot {
            head: self.head(),
            files,
        })
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

    /// The id of what a work-tree path holds: a file's blob, a symlink's target, a submodule's
    /// HEAD commit; `None` when it is gone.
    pub(super) fn content_id(&self, repo_rel: &Path) -> Option<Oid> {
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
        Oid::hash_file(git2::ObjectType::Blob, &full).ok()
    }
}
