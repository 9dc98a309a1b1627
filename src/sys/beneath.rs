//! File IO under the agent-writable tree that never follows a link.
//!
//! An agent may put a symbolic link wherever a file or directory of the loop belongs
//! (`wiggum/runs.jsonl` → `~/.bashrc`, `wiggum/final` → `/etc`). The supervisor runs with the
//! user's rights, so a write through such a link is the agent writing where it may not. Every
//! path under a *guarded root* (the loop's writable root, registered once by the supervisor and by
//! commands that write into a loop) is opened relative to a directory handle of that root, with the
//! kernel refusing every symlink and `..` on the way (`openat2` with `RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS`; on kernels before 5.6, one `openat(O_NOFOLLOW)` per component, which is
//! just as race-free). A check with `symlink_metadata` before an open would be a race, not a fix.
//!
//! The root itself is the user's directory, canonicalised at `start`: it is opened with
//! `O_NOFOLLOW`, so an agent that swaps the whole directory for a link is refused too.
//! Paths outside every guarded root (`$STUDIO_AGENTS_HOME`, the temp dir) are opened as usual.

use std::ffi::OsStr;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};
use std::sync::RwLock;

use rustix::fs::{AtFlags, CWD, Mode, OFlags};

static ROOTS: RwLock<Vec<PathBuf>> = RwLock::new(Vec::new());

/// Guard `root` (absolute, without links of its own): from now on the supervisor follows no link
/// below it. Idempotent.
pub fn guard(root: &Path) {
    let mut roots = ROOTS
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !roots.iter().any(|r| r == root) {
        roots.push(root.to_path_buf());
    }
}

/// The guarded root `path` lies strictly below, and the rest of the path; `None` when it is not
/// under one (or names a root itself).
fn split(path: &Path) -> Option<(PathBuf, PathBuf)> {
    let roots = ROOTS
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    roots
        .iter()
        .filter_map(|r| {
            let rest = path.strip_prefix(r).ok()?;
            (!rest.as_os_str().is_empty()).then(|| (r.clone(), rest.to_path_buf()))
        })
        // The deepest root decides (a loop's artifact root inside its repository).
        .max_by_key(|(r, _)| r.as_os_str().len())
}

/// An open directory and the name of an entry in it.
pub struct Entry {
    /// The directory, reached without following a link.
    pub dir: OwnedFd,
    /// The entry's name (one component).
    pub name: PathBuf,
}

fn link_refused(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "a symbolic link, `..` or a file where a directory belongs on the way to {} (the loop follows no link the agent may have planted)",
            path.display()
        ),
    )
}

const DIR_FLAGS: OFlags = OFlags::DIRECTORY
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC)
    .union(OFlags::RDONLY);

fn open_root(root: &Path) -> io::Result<OwnedFd> {
    rustix::fs::openat(CWD, root, DIR_FLAGS, Mode::empty()).map_err(io::Error::from)
}

/// The components of `rel`, refusing anything but plain names.
fn names(rel: &Path) -> io::Result<Vec<&OsStr>> {
    rel.components()
        .map(|c| match c {
            Component::Normal(n) => Ok(n),
            _ => Err(io::Error::from(io::ErrorKind::InvalidInput)),
        })
        .collect()
}

/// Open directory `rel` below `root` following no link (`openat2`, else one component at a
/// time).
fn open_dir_in(root: &OwnedFd, rel: &[&OsStr]) -> io::Result<OwnedFd> {
    if rel.is_empty() {
        return rustix::io::fcntl_dupfd_cloexec(root, 0).map_err(io::Error::from);
    }
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::ResolveFlags;
        let joined: PathBuf = rel.iter().collect();
        match rustix::fs::openat2(
            root,
            &joined,
            DIR_FLAGS,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
        ) {
            // No `openat2` (Linux < 5.6), or a seccomp filter that refuses it.
            Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM) => walk(root, rel),
            other => other.map_err(io::Error::from),
        }
    }
    // Elsewhere (macOS) one `openat(O_NOFOLLOW)` per component: as race-free.
    #[cfg(not(target_os = "linux"))]
    walk(root, rel)
}

/// The fallback for kernels without `openat2` (and seccomp filters that refuse it), and the way
/// on macOS.
fn walk(root: &OwnedFd, rel: &[&OsStr]) -> io::Result<OwnedFd> {
    let mut fd = rustix::fs::openat(root, ".", DIR_FLAGS, Mode::empty())?;
    for name in rel {
        fd = rustix::fs::openat(&fd, *name, DIR_FLAGS, Mode::empty())?;
    }
    Ok(fd)
}

/// A link (or `..`) on the way is reported as such; other errors as they are.
fn named(e: io::Error, path: &Path) -> io::Error {
    if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error())
        || e.raw_os_error() == Some(rustix::io::Errno::XDEV.raw_os_error())
        || e.raw_os_error() == Some(rustix::io::Errno::NOTDIR.raw_os_error())
        || e.kind() == io::ErrorKind::InvalidInput
    {
        link_refused(path)
    } else {
        e
    }
}

/// The directory holding `path` and its name, when `path` is under a guarded root; `None` when
/// it is not (the caller opens it as usual).
pub fn parent(path: &Path) -> io::Result<Option<Entry>> {
    let Some((root, rel)) = split(path) else {
        return Ok(None);
    };
    let parts = names(&rel).map_err(|_| link_refused(path))?;
    let Some((name, dirs)) = parts.split_last() else {
        return Ok(None);
    };
    let root_fd = open_root(&root).map_err(|e| named(e, path))?;
    let dir = open_dir_in(&root_fd, dirs).map_err(|e| named(e, path))?;
    Ok(Some(Entry {
        dir,
        name: PathBuf::from(name),
    }))
}

/// Open a file under a guarded root with `flags` (`O_NOFOLLOW` and `O_CLOEXEC` added); `None`
/// when `path` is not guarded.
pub fn open(path: &Path, flags: OFlags, mode: u32) -> io::Result<Option<std::fs::File>> {
    let Some(e) = parent(path)? else {
        return Ok(None);
    };
    let fd = rustix::fs::openat(
        &e.dir,
        &e.name,
        flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        // The permission bits fit every platform's mode type (`u16` on macOS).
        Mode::from_bits_truncate(rustix::fs::RawMode::try_from(mode & 0o7777).unwrap_or(0o600)),
    )
    .map_err(|err| named(err.into(), path))?;
    Ok(Some(std::fs::File::from(fd)))
}

/// Whether the entry at `path` (guarded or not) is a symbolic link, without following it.
#[must_use]
pub fn is_link(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// `mkdir -p` below a guarded root, following no link; `false` when `path` is not guarded.
pub fn create_dir_all(path: &Path) -> io::Result<bool> {
    let Some((root, rel)) = split(path) else {
        return Ok(false);
    };
    let parts = names(&rel).map_err(|_| link_refused(path))?;
    let mut fd = open_root(&root).map_err(|e| named(e, path))?;
    for name in parts {
        match rustix::fs::mkdirat(&fd, name, Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(e) => return Err(e.into()),
        }
        fd = rustix::fs::openat(&fd, name, DIR_FLAGS, Mode::empty())
            .map_err(|e| named(e.into(), path))?;
    }
    Ok(true)
}

/// Replace `path` below a guarded root with `bytes`: a temp file beside it, renamed over it (a
/// link in its place is replaced, never followed). `None` when `path` is not guarded.
pub fn atomic_write(
    path: &Path,
    bytes: &[u8],
    before_rename: impl FnOnce() -> crate::error::Result<()>,
) -> crate::error::Result<Option<()>> {
    use crate::error::IoContext;
    use std::io::Write;
    let Some(e) = parent(path).at(path, "write")? else {
        return Ok(None);
    };
    let tmp = temp_name(&e.name);
    let fd = rustix::fs::openat(
        &e.dir,
        &tmp,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )
    .map_err(io::Error::from)
    .at(path, "create a temp file beside")?;
    let written = (|| -> crate::error::Result<()> {
        let mut f = std::fs::File::from(fd);
        f.write_all(bytes).at(path, "write")?;
        // A replaced regular file keeps its mode; a new one (or one replacing a link) stays 0600.
        if let Ok(old) = rustix::fs::statat(&e.dir, &e.name, AtFlags::SYMLINK_NOFOLLOW)
            && rustix::fs::FileType::from_raw_mode(old.st_mode) == rustix::fs::FileType::RegularFile
        {
            rustix::fs::fchmod(&f, Mode::from_raw_mode(old.st_mode & 0o7777))
                .map_err(io::Error::from)
                .at(path, "set the mode of")?;
        }
        before_rename()?;
        rustix::fs::renameat(&e.dir, &tmp, &e.dir, &e.name)
            .map_err(io::Error::from)
            .at(path, "rename a temp file over")
    })();
    if written.is_err() {
        // The temp file is ours; failing to remove it leaves a `.tmp` that start cleans up.
        rustix::fs::unlinkat(&e.dir, &tmp, AtFlags::empty()).ok();
    }
    written.map(Some)
}

fn temp_name(name: &Path) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    PathBuf::from(format!(
        ".{}.{}{:x}{:x}.tmp",
        name.display(),
        std::process::id(),
        nanos,
        N.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Remove the entry at `path` below a guarded root: a link is removed as a link, a directory with
/// everything in it (nothing below is followed). `Ok(false)` when `path` is not guarded.
pub fn remove(path: &Path) -> io::Result<bool> {
    let e = match parent(path) {
        Ok(Some(e)) => e,
        Ok(None) => return Ok(false),
        // Nothing on the way: nothing to remove.
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(true),
        Err(e) => return Err(e),
    };
    remove_at(&e.dir, &e.name)?;
    Ok(true)
}

/// How deep the removal descends before it moves a deeper directory up beside the top one
/// (to be removed from there): the open directories and the stack stay bounded, however deep a
/// tree an agent made.
const DEPTH: usize = 64;

/// One directory being emptied: its descriptor, its name in its parent, what is left in it.
struct Frame {
    fd: OwnedFd,
    name: PathBuf,
    left: Vec<PathBuf>,
}

/// Remove `path` with everything in it where it is not under a guarded root (its parent
/// reached as usual; nothing below it followed), however deep: as [`remove`] does below one.
pub fn remove_anywhere(path: &Path) -> io::Result<()> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "no directory to remove it from",
        ));
    };
    let parent = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    // The parent as its path names it (`/tmp` may be a link, as on macOS).
    let flags = OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::RDONLY;
    let dir = match rustix::fs::openat(CWD, parent, flags, Mode::empty()) {
        Ok(d) => d,
        Err(rustix::io::Errno::NOENT) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    remove_at(&dir, Path::new(name))
}

/// Remove entry `name` of `dir` with everything in it (nothing followed, however deep).
#[cfg(target_os = "linux")]
pub fn remove_entry(dir: &OwnedFd, name: &Path) -> io::Result<()> {
    remove_at(dir, name)
}

fn remove_at(dir: &OwnedFd, name: &Path) -> io::Result<()> {
    let st = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(rustix::io::Errno::NOENT) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::Directory {
        return unlink(dir, name, AtFlags::empty());
    }
    let mut stack = vec![frame(dir, name)?];
    let mut moved = 0u64;
    while let Some(top) = stack.last_mut() {
        let Some(n) = top.left.pop() else {
            let done = stack.pop().map(|f| f.name).unwrap_or_default();
            let parent = stack.last().map_or(dir, |f| &f.fd);
            unlink(parent, &done, AtFlags::REMOVEDIR)?;
            continue;
        };
        let is_dir = rustix::fs::statat(&top.fd, &n, AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|st| {
            rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Directory
        });
        if !is_dir {
            unlink(&top.fd, &n, AtFlags::empty())?;
        } else if stack.len() < DEPTH {
            let f = frame(&stack[stack.len() - 1].fd, &n)?;
            stack.push(f);
        } else {
            // Too deep: up beside the top directory's entries, removed from there (a directory
            // moved to another parent must be writable to its owner: its `..` changes).
            let (first, rest) = stack.split_at_mut(1);
            let from = &rest.last().unwrap_or(&first[0]).fd;
            writable(from, &n);
            let to = loop {
                moved += 1;
                let to = PathBuf::from(format!(".deep-{moved}"));
                match rustix::fs::renameat_with(
                    from,
                    &n,
                    &first[0].fd,
                    &to,
                    rustix::fs::RenameFlags::NOREPLACE,
                ) {
                    Err(rustix::io::Errno::EXIST) => {}
                    Ok(()) => break to,
                    Err(e) => return Err(e.into()),
                }
            };
            first[0].left.push(to);
        }
    }
    Ok(())
}

/// Open directory `name` in `dir` to empty it, with what it holds (made writable first where
/// its owner left it read-only, as `rm -rf` of one's own tree does).
fn frame(dir: &OwnedFd, name: &Path) -> io::Result<Frame> {
    let fd = match rustix::fs::openat(dir, name, DIR_FLAGS, Mode::empty()) {
        Err(rustix::io::Errno::ACCESS) => {
            // Unreadable to its owner: made readable (it was checked a directory just before).
            let _made =
                rustix::fs::chmodat(dir, name, Mode::from_raw_mode(0o700), AtFlags::empty());
            rustix::fs::openat(dir, name, DIR_FLAGS, Mode::empty())?
        }
        other => other?,
    };
    if let Ok(st) = rustix::fs::fstat(&fd)
        && st.st_mode & 0o700 != 0o700
    {
        let _made = rustix::fs::fchmod(&fd, Mode::from_raw_mode((st.st_mode | 0o700) & 0o7777));
    }
    let mut left = Vec::new();
    for entry in rustix::fs::Dir::read_from(&fd)? {
        let entry = entry?;
        let n = entry.file_name().to_bytes();
        if n != b"." && n != b".." {
            left.push(PathBuf::from(
                <OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(n),
            ));
        }
    }
    Ok(Frame {
        fd,
        name: name.to_path_buf(),
        left,
    })
}

/// Directory `name` in `dir` made writable and searchable to its owner, where it is not.
fn writable(dir: &OwnedFd, name: &Path) {
    if let Ok(st) = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
        && rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Directory
        && st.st_mode & 0o700 != 0o700
    {
        let mode = Mode::from_raw_mode((st.st_mode | 0o700) & 0o7777);
        let _made = rustix::fs::chmodat(dir, name, mode, AtFlags::empty());
    }
}

fn unlink(dir: &OwnedFd, name: &Path, flags: AtFlags) -> io::Result<()> {
    match rustix::fs::unlinkat(dir, name, flags) {
        Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests;
