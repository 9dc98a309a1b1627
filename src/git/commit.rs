//! Committing exactly the iteration's paths. The new tree is HEAD's tree with those paths
//! replaced by what the work tree holds (or removed when gone): the user's staged entries, files
//! a sparse checkout keeps out of the work tree, and uncommitted work the agent did not touch
//! never enter it. Afterwards the index entries of those paths (only) are set to what was
//! committed, so `git status` is clean for them and whatever the user had staged stays staged.

use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use git2::build::TreeUpdateBuilder;
use git2::{ErrorCode, FileMode, IndexEntry, IndexTime, Oid, Signature};

use super::Repo;
use crate::disk::layout::Layout;
use crate::error::{GitContext, Result};

/// A tree ready to be committed on top of `parent`.
#[derive(Debug, Clone)]
pub struct Pending {
    tree: Oid,
    parent: Option<Oid>,
    /// The committed paths (repository-relative) with what the tree holds for each (`None`:
    /// removed), so the index is set without reading the tree back.
    paths: Vec<(PathBuf, Option<(Oid, FileMode)>)>,
    /// The commit made of it, once made.
    made: Option<Oid>,
}

impl Pending {
    /// The commit it was put on top of (after any rebuild on a moved HEAD).
    #[must_use]
    pub fn parent(&self) -> Option<Oid> {
        self.parent
    }

    /// The commit made of it, once [`Repo::finish`] made it.
    #[must_use]
    pub fn made(&self) -> Option<Oid> {
        self.made
    }
}

/// How many times a commit is rebuilt on a HEAD that another writer moved meanwhile.
const REBUILDS: u32 = 10;

/// Files up to this size are stored as blobs from memory (`Repo::store_file`).
const IN_MEMORY: u64 = 1024 * 1024;

impl Repo {
    /// Build the tree HEAD + `paths` (relative to the artifact dir; the runtime files are left
    /// out). `None` when it equals HEAD's tree: nothing to commit.
    pub fn stage_tree(&self, paths: &[PathBuf]) -> Result<Option<Pending>> {
        let mut entries = Vec::new();
        // Read once a commit, not once a file.
        let strict = self.strict_crlf();
        let repo_rels: Vec<PathBuf> = paths
            .iter()
            .filter(|rel| !Layout::is_runtime_path(rel))
            .map(|rel| self.scope.join(rel))
            .collect();
        let external = super::attributes::could_set(
            &self.repo,
            &self.workdir,
            repo_rels.iter().map(PathBuf::as_path),
            &super::filters::EXTERNAL,
        );
        for repo_rel in repo_rels {
            let entry = self.work_entry(&repo_rel, strict, external)?;
            entries.push((repo_rel, entry));
        }
        let (pending, base) = self.on_head(entries)?;
        crate::sys::failpoint::hit("commit-after-stage")?;
        if pending.parent.is_some() && base == pending.tree {
            return Ok(None);
        }
        Ok(Some(pending))
    }

    /// HEAD's tree with `entries` put in (or removed where `None`), and HEAD's tree itself;
    /// entries to remove that HEAD does not hold are dropped.
    fn on_head(
        &self,
        mut entries: Vec<(PathBuf, Option<(Oid, FileMode)>)>,
    ) -> Result<(Pending, Oid)> {
        let parent = self.head();
        let base = self.tree_of(parent)?;
        entries.retain(|(p, e)| e.is_some() || base.get_path(p).is_ok());
        // `core.fileMode = false` (a file system whose exec bits mean nothing, as NTFS under
        // WSL): a file keeps the mode git has for it, a new one is not executable — as git does.
        let filemode = self
            .repo
            .config()
            .and_then(|c| c.get_bool("core.filemode"))
            .unwrap_or(true);
        if !filemode {
            for (p, e) in &mut entries {
                if let Some((_, mode @ (FileMode::Blob | FileMode::BlobExecutable))) = e {
                    *mode = match base.get_path(p).map(|t| t.filemode()) {
                        Ok(0o100_755) => FileMode::BlobExecutable,
                        _ => FileMode::Blob,
                    };
                }
            }
        }
        // libgit2 replaces an entry only by one of its kind: a directory made a file or a link
        // (or a file made a directory) has its old entry removed first.
        let cleared = self.kind_changes_cleared(&base, &entries)?;
        let under = cleared.as_ref().unwrap_or(&base);
        let mut update = TreeUpdateBuilder::new();
        for (p, e) in &entries {
            match e {
                Some((oid, mode)) => {
                    update.upsert(p, *oid, *mode);
                }
                None if under.get_path(p).is_ok() => {
                    update.remove(p);
                }
                None => {}
            }
        }
        let tree = update
            .create_updated(&self.repo, under)
            .git_at(&self.workdir, "build the commit's tree")?;
        let pending = Pending {
            tree,
            parent,
            paths: entries,
            made: None,
        };
        Ok((pending, base.id()))
    }

    /// `base` without the entries whose kind `entries` change (a tree where a file or link
    /// comes, a file or link where a tree comes); `None` when there are none.
    fn kind_changes_cleared(
        &self,
        base: &git2::Tree<'_>,
        entries: &[(PathBuf, Option<(Oid, FileMode)>)],
    ) -> Result<Option<git2::Tree<'_>>> {
        let is_tree = |p: &Path| {
            base.get_path(p)
                .is_ok_and(|t| t.kind() == Some(git2::ObjectType::Tree))
        };
        let mut clear: Vec<&Path> = Vec::new();
        for (p, _) in entries.iter().filter(|(_, e)| e.is_some()) {
            if is_tree(p) {
                clear.push(p);
            }
            let above = p.ancestors().skip(1).filter(|a| !a.as_os_str().is_empty());
            clear.extend(above.filter(|a| base.get_path(a).is_ok() && !is_tree(a)));
        }
        if clear.is_empty() {
            return Ok(None);
        }
        clear.sort();
        clear.dedup();
        let mut update = TreeUpdateBuilder::new();
        for p in clear {
            update.remove(p);
        }
        let id = update
            .create_updated(&self.repo, base)
            .git_at(&self.workdir, "build the commit's tree")?;
        let tree = self
            .repo
            .find_tree(id)
            .git_at(&self.workdir, "build the commit's tree")?;
        Ok(Some(tree))
    }

    /// The tree of commit `at` (the empty tree for none).
    pub(super) fn tree_of(&self, at: Option<Oid>) -> Result<git2::Tree<'_>> {
        let wd = &self.workdir;
        let id = match at {
            Some(oid) => {
                return self
                    .repo
                    .find_commit(oid)
                    .and_then(|c| c.tree())
                    .git_at(wd, "read HEAD's tree");
            }
            None => self
                .repo
                .treebuilder(None)
                .and_then(|b| b.write())
                .git_at(wd, "write an empty tree")?,
        };
        self.repo.find_tree(id).git_at(wd, "read a tree")
    }

    /// The paths `pending` commits, relative to the artifact dir.
    #[must_use]
    pub fn committed_paths(&self, pending: &Pending) -> Vec<PathBuf> {
        pending
            .paths
            .iter()
            .filter_map(|(p, _)| self.rel_to_artifact(p).map(Path::to_path_buf))
            .collect()
    }

    /// What a work-tree path holds, written to the object database: a file (with its exec bit),
    /// a symlink, or a submodule's HEAD. `None` when it is gone (or is a plain directory).
    /// `strict_crlf`: [`Self::strict_crlf`]; `external`: whether an attribute could name a
    /// conversion only git has (else none is looked up).
    fn work_entry(
        &self,
        repo_rel: &Path,
        strict_crlf: bool,
        external: bool,
    ) -> Result<Option<(Oid, FileMode)>> {
        let full = self.workdir.join(repo_rel);
        let Ok(meta) = std::fs::symlink_metadata(&full) else {
            return Ok(None);
        };
        if self.beyond_a_link(repo_rel) {
            return Ok(None);
        }
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&full).map_err(|e| crate::error::Error::Io {
                path: full.clone(),
                action: "read the link",
                source: e,
            })?;
            let oid = self
                .store_bytes(target.as_os_str().as_encoded_bytes())
                .git_at(&full, "store a link")?;
            return Ok(Some((oid, FileMode::Link)));
        }
        if meta.is_dir() {
            return Ok(self.content_id(repo_rel).map(|oid| (oid, FileMode::Commit)));
        }
        // A FIFO, socket or device is nothing git tracks: gone, as far as a commit goes.
        if !meta.is_file() {
            return Ok(None);
        }
        let conversion = external
            .then(|| super::filters::external(&self.repo, repo_rel))
            .flatten();
        let oid = match conversion {
            Some(why) => super::filters::hash_with_git(
                &self.repo,
                &self.workdir,
                repo_rel,
                &why,
                self.confine.as_ref(),
            )?,
            None => self.store_file(&full, meta.len(), strict_crlf)?,
        };
        let mode = if meta.permissions().mode() & 0o111 != 0 {
            FileMode::BlobExecutable
        } else {
            FileMode::Blob
        };
        Ok(Some((oid, mode)))
    }

    /// Store a regular file's bytes as a blob, as `git add` does. A small file whose bytes no
    /// conversion of libgit2's can change (no CR, no `$Id`; `core.safecrlf` not strict) is stored
    /// from memory, so a blob the database holds already is found by its id and not written
    /// again — libgit2's write from a path streams every file through a temporary object file,
    /// held or not, and an iteration commits several files it holds (the result beside the
    /// iteration's copy, unchanged settings). Other files go through libgit2's filters.
    fn store_file(&self, full: &Path, len: u64, strict_crlf: bool) -> Result<Oid> {
        if len <= IN_MEMORY && !strict_crlf {
            let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
            // Non-blocking: a FIFO put in the file's place since it was looked at reads empty.
            let read = crate::sys::fsutil::open_read(full)
                .and_then(|f| f.take(IN_MEMORY + 1).read_to_end(&mut bytes));
            let unconverted = |b: &[u8]| !b.contains(&b'\r') && !b.windows(3).any(|w| w == b"$Id");
            if read.is_ok() && bytes.len() as u64 <= IN_MEMORY && unconverted(&bytes) {
                return self.store_bytes(&bytes).git_at(full, "store a file");
            }
        }
        self.repo.blob_path(full).git_at(full, "store a file")
    }

    /// Store `bytes` as a blob through the object database's own write, which finds a blob it
    /// holds already by its id (and freshens it, as git does) before writing anything:
    /// libgit2's blob-from-buffer streams every blob through a new temporary object file,
    /// held or not — and a new file costs more than its bytes on a full file system.
    fn store_bytes(&self, bytes: &[u8]) -> std::result::Result<Oid, git2::Error> {
        self.repo.odb()?.write(git2::ObjectType::Blob, bytes)
    }

    /// Whether `core.safecrlf` makes a conversion that could not be undone an error.
    fn strict_crlf(&self) -> bool {
        self.repo
            .config()
            .and_then(|c| c.get_bool("core.safecrlf"))
            .unwrap_or(false)
    }

    /// Write an index file holding exactly `pending`'s tree, for hooks (`GIT_INDEX_FILE`), as
    /// git does for a commit of chosen paths.
    pub fn write_index_file(&self, pending: &Pending, path: &Path) -> Result<()> {
        let wd = &self.workdir;
        let tree = self
            .repo
            .find_tree(pending.tree)
            .git_at(wd, "read the tree")?;
        let mut index = git2::Index::open(path).git_at(path, "create an index")?;
        index.read_tree(&tree).git_at(path, "fill an index")?;
        index.write().git_at(path, "write an index")
    }

    /// Commit `pending` under the given identity and point the user's index at it for the
    /// committed paths. Returns the new commit's sha. When another writer (a loop on another
    /// directory of the repository, the user in another shell) moved HEAD since the tree was
    /// built, the same entries are put on the new HEAD and the commit is made there, as
    /// `git commit` of those paths would; `pending` then names the new parent.
    pub fn finish(
        &self,
        pending: &mut Pending,
        message: &str,
        name: &str,
        email: &str,
    ) -> Result<String> {
        let wd = &self.workdir;
        let sig = Signature::now(name, email).git_at(wd, "make a signature")?;
        let mut rebuilt = 0;
        let oid = loop {
            let tree = self
                .repo
                .find_tree(pending.tree)
                .git_at(wd, "read the tree")?;
            let parent = match pending.parent {
                Some(oid) => Some(self.repo.find_commit(oid).git_at(wd, "read HEAD")?),
                None => None,
            };
            let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
            match self
                .repo
                .commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
            {
                Ok(oid) => break oid,
                // HEAD moved, or its branch is locked by the writer moving it right now.
                Err(e)
                    if matches!(e.code(), ErrorCode::Modified | ErrorCode::Locked)
                        && rebuilt < REBUILDS =>
                {
                    rebuilt += 1;
                    tracing::info!(
                        "HEAD moved while committing (another writer in {}: {}); committing on the new HEAD",
                        wd.display(),
                        e.message()
                    );
                    if e.code() == ErrorCode::Locked {
                        let pause = std::time::Duration::from_millis(1 << rebuilt.min(8));
                        std::thread::sleep(pause); // allow: another writer holds HEAD's lock
                    }
                    *pending = self.on_head(std::mem::take(&mut pending.paths))?.0;
                }
                Err(e) => return Err(e).git_at(wd, "commit"),
            }
        };
        pending.made = Some(oid);
        if let Err(e) = self.sync_index(&pending.paths) {
            tracing::warn!(
                "committed {oid}, but the index was not updated ({e}); `git status` may list the committed paths until `git reset -q -- <path>`"
            );
        }
        Ok(oid.to_string())
    }

    /// Set the index entries of `paths` to what the commit holds for them; leave every other
    /// entry. The read and the change happen under git's own `index.lock`, taken first (as git
    /// does for `git add`): another writer — a loop on another directory of the repository,
    /// `git add` in another shell — waits, or is waited for. The change is made in the
    /// repository's own index handle (read again only when another wrote the file since it last
    /// looked), and libgit2 writes it the instant the lock is let go, taking the lock again
    /// itself: a writer that took it in between makes that write fail, and it is all done again
    /// from the top — their entries read first — so no write drops another's entries. The
    /// handle then holds what is on disk, and nothing reads the index again after a commit.
    fn sync_index(&self, paths: &[(PathBuf, Option<(Oid, FileMode)>)]) -> Result<()> {
        let wd = &self.workdir;
        let lock_path = self.repo.path().join("index.lock");
        let mut pause = std::time::Duration::from_millis(1);
        let mut lost = 0;
        loop {
            // Waits out a writer that holds the lock (one that took it from us included).
            take_lock(&lock_path, &mut pause)?;
            let mut index = self.repo.index().git_at(wd, "read the index")?;
            let changed = index
                .read(false)
                .git_at(wd, "read the index")
                .and_then(|()| self.set_entries(&mut index, paths));
            // Let go, and write at once (libgit2 takes the lock for its write).
            std::fs::remove_file(&lock_path).ok();
            let written = changed.and_then(|()| index.write().git_at(wd, "write the index"));
            match written {
                Ok(()) => return Ok(()),
                Err(e) => {
                    // What was changed in memory and not written goes.
                    let _reread = index.read(true);
                    let taken = matches!(&e, crate::error::Error::Git { source, .. }
                        if source.code() == git2::ErrorCode::Locked);
                    lost += 1;
                    if !taken || lost >= 10 {
                        return Err(e);
                    }
                }
            }
        }
    }

    /// The index entries of `paths` set to what the commit holds (removed where it holds none).
    fn set_entries(
        &self,
        index: &mut git2::Index,
        paths: &[(PathBuf, Option<(Oid, FileMode)>)],
    ) -> Result<()> {
        let wd = &self.workdir;
        for (p, entry) in paths {
            let old = index.get_path(p, 0);
            match entry {
                Some((id, mode)) => {
                    let meta = std::fs::symlink_metadata(self.workdir.join(p)).ok();
                    let e = index_entry(p, *id, i32::from(*mode), meta.as_ref(), old);
                    index.add(&e).git_at(wd, "update the index")?;
                }
                None if old.is_some() => {
                    index.remove_path(p).git_at(wd, "update the index")?;
                }
                None => {}
            }
        }
        Ok(())
    }
}

/// Take git's `index.lock` (create it, failing where it exists), waiting for another writer
/// with a pause that doubles up to half a second.
fn take_lock(lock_path: &Path, pause: &mut std::time::Duration) -> Result<()> {
    loop {
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(lock_path)
        {
            Ok(_) => return Ok(()),
            Err(e)
                if e.kind() == std::io::ErrorKind::AlreadyExists
                    && *pause < std::time::Duration::from_millis(500) =>
            {
                std::thread::sleep(*pause); // allow: another writer holds index.lock
                *pause *= 2;
            }
            Err(e) => {
                return Err(crate::error::Error::Io {
                    path: lock_path.to_path_buf(),
                    action: "take the index's lock",
                    source: e,
                });
            }
        }
    }
}

/// An index entry for a committed path, with the work tree's stat data so git sees it clean.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn index_entry(
    path: &Path,
    id: Oid,
    mode: i32,
    meta: Option<&std::fs::Metadata>,
    old: Option<IndexEntry>,
) -> IndexEntry {
    let bytes = path.as_os_str().as_encoded_bytes().to_vec();
    let time = |s: i64, ns: i64| IndexTime::new(s as i32, ns as u32);
    let (ctime, mtime, dev, ino, uid, gid, size) =
        meta.map_or((time(0, 0), time(0, 0), 0, 0, 0, 0, 0), |m| {
            (
                time(m.ctime(), m.ctime_nsec()),
                time(m.mtime(), m.mtime_nsec()),
                m.dev() as u32,
                m.ino() as u32,
                m.uid(),
                m.gid(),
                m.size() as u32,
            )
        });
    // Keep only the sparse-checkout bit of the old entry (never intent-to-add); an extended
    // flag needs the entry's "extended" bit.
    let extended = old.map_or(0, |o| o.flags_extended & super::SKIP_WORKTREE);
    let mut flags = bytes.len().min(0xfff) as u16;
    if extended != 0 {
        flags |= 0x4000;
    }
    IndexEntry {
        ctime,
        mtime,
        dev,
        ino,
        mode: mode as u32,
        uid,
        gid,
        file_size: size,
        id,
        flags,
        flags_extended: extended,
        path: bytes,
    }
}
