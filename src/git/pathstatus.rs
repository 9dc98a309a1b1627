//! Whether a few paths are dirty, asked one path at a time: the index entry found by binary
//! search, the work tree's content hashed, HEAD's entry read only for paths the last snapshot
//! knew to be staged. It answers what libgit2's status answers for those paths, without status's
//! iterators over the whole index, HEAD's tree and every directory on the way — whose cost grows
//! with the repository and with the loop's own committed history.
//!
//! It relies on what [`Repo::refresh`] checked first: HEAD and the index are what they were when
//! the earlier snapshot was taken, so a path that was clean then still has an index entry equal
//! to HEAD's, and one that was not staged still has not.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use git2::{Index, IndexEntry, Oid, Status};

use super::Repo;
use super::snapshot::Snapshot;
use super::{GITLINK, SKIP_WORKTREE};
use crate::disk::layout::Layout;
use crate::error::{GitContext, Result};

const LINK: u32 = 0o120_000;
const FILE: u32 = 0o100_644;
const EXEC: u32 = 0o100_755;

/// A blob (or link, or commit) id and its git mode.
type Entry = (Oid, u32);

/// Settings that change what "equal" means, read once per refresh.
struct Rules<'a> {
    filemode: bool,
    autocrlf: bool,
    /// Whether an attribute source could name a conversion for the refreshed paths (asked
    /// once, when a path first needs it).
    converts: std::cell::OnceCell<bool>,
    /// The refreshed paths, for that question.
    paths: &'a BTreeSet<PathBuf>,
}

impl Repo {
    /// Bring `snap` (a copy of `prev` with everything under `specs` forgotten) up to date for
    /// `specs`: repository-relative paths, a directory standing for everything under it.
    pub(super) fn refresh_paths(
        &self,
        snap: &mut Snapshot,
        prev: &Snapshot,
        index: &Index,
        specs: &BTreeSet<PathBuf>,
    ) -> Result<()> {
        // Before libgit2 reads any rule on the way to them.
        super::rules::clear_odd_above(&self.workdir, specs.iter().map(PathBuf::as_path));
        let mut candidates = BTreeSet::new();
        for spec in specs {
            candidates.insert(spec.clone());
            self.candidates_under(spec, index, prev, &mut candidates);
        }
        let config = self.repo.config().ok();
        let flag = |key: &str, default: bool| {
            config
                .as_ref()
                .and_then(|c| c.get_bool(key).ok())
                .unwrap_or(default)
        };
        let rules = Rules {
            filemode: flag("core.filemode", true),
            autocrlf: config
                .as_ref()
                .and_then(|c| c.get_string("core.autocrlf").ok())
                .is_some_and(|v| v != "false"),
            converts: std::cell::OnceCell::new(),
            paths: &candidates,
        };
        for p in &candidates {
            let Some(rel) = self.rel_to_artifact(p) else {
                continue;
            };
            if Layout::is_supervisor_path(rel) {
                continue;
            }
            let idx = index.get_path(p, 0);
            if idx
                .as_ref()
                .is_some_and(|e| e.flags_extended & SKIP_WORKTREE != 0)
            {
                continue;
            }
            let staged = prev.staged.contains(rel);
            if let Some(content) = self.path_state(p, idx.as_ref(), staged, &rules)? {
                snap.files.insert(rel.to_path_buf(), content);
            }
        }
        Ok(())
    }

    /// Everything under the directory `spec` that may be dirty: the work tree's files (not
    /// inside ignored directories, nested repositories as one entry), the index's entries and
    /// the paths the last snapshot held.
    fn candidates_under(
        &self,
        spec: &Path,
        index: &Index,
        prev: &Snapshot,
        out: &mut BTreeSet<PathBuf>,
    ) {
        let full = self.workdir.join(spec);
        let is_dir = std::fs::symlink_metadata(&full).is_ok_and(|m| m.is_dir());
        let gitlink = index.get_path(spec, 0).is_some_and(|e| e.mode == GITLINK);
        if is_dir && !gitlink && !full.join(".git").exists() {
            self.walk_dir(spec, index, out);
        }
        let mut prefix = spec.as_os_str().as_bytes().to_vec();
        prefix.push(b'/');
        if let Ok(mut i) = index.find_prefix(prefix.as_slice()) {
            while let Some(e) = index.get(i) {
                if !e.path.starts_with(&prefix) {
                    break;
                }
                out.insert(PathBuf::from(OsStr::from_bytes(&e.path)));
                i += 1;
            }
        }
        if let Some(rel) = self.rel_to_artifact(spec) {
            let rel = rel.to_path_buf();
            for p in prev.files.range(rel.clone()..) {
                if !p.0.starts_with(&rel) {
                    break;
                }
                out.insert(self.scope.join(p.0));
            }
        }
    }

    /// The work tree's files under `dir` (repository-relative), recursively; `.git` left out,
    /// ignored directories left out unless the index tracks something inside.
    fn walk_dir(&self, dir: &Path, index: &Index, out: &mut BTreeSet<PathBuf>) {
        // Before libgit2 reads this directory's rules (the ignore lookups below).
        super::rules::clear_odd_in(&self.workdir.join(dir));
        let Ok(rd) = std::fs::read_dir(self.workdir.join(dir)) else {
            return;
        };
        for e in rd.flatten() {
            if e.file_name() == ".git" {
                continue;
            }
            let rel = dir.join(e.file_name());
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                out.insert(rel);
                continue;
            }
            if e.path().join(".git").exists() {
                // A submodule is one entry (its own); status leaves an untracked nested
                // repository out.
                out.insert(rel);
                continue;
            }
            let tracked_inside = {
                let mut prefix = rel.as_os_str().as_bytes().to_vec();
                prefix.push(b'/');
                index.find_prefix(prefix.as_slice()).is_ok()
            };
            if !tracked_inside && self.repo.is_path_ignored(&rel).unwrap_or(false) {
                continue;
            }
            self.walk_dir(&rel, index, out);
        }
    }

    /// What the snapshot holds for `p` (repository-relative): `Some(content)` when it is dirty
    /// (`content` as [`Repo::content_id`]), `None` when it is clean or not a file at all.
    fn path_state(
        &self,
        p: &Path,
        idx: Option<&IndexEntry>,
        staged: bool,
        rules: &Rules<'_>,
    ) -> Result<Option<Option<Oid>>> {
        let index_entry: Option<Entry> = idx.map(|e| (e.id, e.mode));
        let head_entry = if staged {
            self.head_entry(p)?
        } else {
            // Clean or not staged at the last snapshot, and the index has not moved since.
            index_entry
        };
        let full = self.workdir.join(p);
        let work = match std::fs::symlink_metadata(&full) {
            Err(_) => None,
            Ok(m) if m.is_dir() => {
                if index_entry.is_none_or(|e| e.1 != GITLINK) {
                    // A directory where the index has a file: that file is deleted. A plain
                    // directory is no entry of its own.
                    return Ok((index_entry.is_some() || head_entry.is_some()).then_some(None));
                }
                self.content_id(p).map(|oid| (oid, GITLINK))
            }
            Ok(m) => {
                let mode = if m.file_type().is_symlink() {
                    LINK
                } else if !rules.filemode && matches!(index_entry, Some((_, FILE | EXEC))) {
                    index_entry.map_or(FILE, |e| e.1)
                } else if m.permissions().mode() & 0o100 != 0 {
                    EXEC
                } else {
                    FILE
                };
                self.content_id(p).map(|oid| (oid, mode))
            }
        };
        let content = work.map(|w| w.0);
        if index_entry != head_entry {
            return Ok(Some(content));
        }
        let dirty = match (index_entry, work) {
            (None, None) => false,
            (None, Some(_)) => !self.repo.is_path_ignored(p).unwrap_or(false),
            (Some(_), None) => true,
            (Some(i), Some(w)) if i.1 == GITLINK => {
                // A submodule is dirty when its HEAD moved or its own work tree changed.
                i != w || self.worktree_dirty(p)?
            }
            (Some(i), Some(w)) => {
                i != w && (!self.may_filter(p, rules) || self.worktree_dirty(p)?)
            }
        };
        Ok(dirty.then_some(content))
    }

    /// Whether git may convert `p` between the work tree and the object database (line
    /// endings, `filter=`, `ident`, an encoding): then equal content can hash differently, and
    /// only status can tell.
    fn may_filter(&self, p: &Path, rules: &Rules<'_>) -> bool {
        if rules.autocrlf {
            return true;
        }
        let converts = rules.converts.get_or_init(|| {
            let paths = rules.paths.iter().map(PathBuf::as_path);
            super::attributes::could_set(
                &self.repo,
                &self.workdir,
                paths,
                &super::attributes::CONVERTING,
            )
        });
        *converts
            && super::attributes::CONVERTING.iter().any(|attr| {
                self.repo
                    .get_attr(p, attr, git2::AttrCheckFlags::FILE_THEN_INDEX)
                    .ok()
                    .flatten()
                    .is_some()
            })
    }

    /// libgit2's status of one path, for the cases hashing cannot settle.
    fn worktree_dirty(&self, p: &Path) -> Result<bool> {
        let st = self
            .repo
            .status_file(p)
            .git_at(&self.workdir.join(p), "read the status of")?;
        Ok(st.intersects(
            Status::WT_NEW
                | Status::WT_MODIFIED
                | Status::WT_DELETED
                | Status::WT_TYPECHANGE
                | Status::WT_RENAMED,
        ))
    }

    /// HEAD's entry for `p`, if any.
    fn head_entry(&self, p: &Path) -> Result<Option<Entry>> {
        if self.head().is_none() {
            return Ok(None);
        }
        Ok(self.tree_of(self.head())?.get_path(p).ok().map(|e| {
            let mode = u32::try_from(e.filemode()).unwrap_or(FILE);
            (e.id(), mode)
        }))
    }
}
