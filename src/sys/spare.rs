//! Replace a small file that is saved many times a second without a new inode each time: the new
//! bytes go into a spare file beside it (`.<name>.spare.tmp`), written in place, and the two are
//! exchanged in one step (`renameat2(RENAME_EXCHANGE)`): readers see the old file or the new one,
//! never half of either, and the spare then holds the old bytes, to be written over next time.
//!
//! Why: a rename over a file frees the file it replaces and needs a new one for the next save.
//! On ext4 without a journal an inode freed in the last minutes is skipped, one by one, by every
//! later creation in its group, and a rename over a file makes ext4 start writing the new one's
//! data at once (`auto_da_alloc`). The loop's state is saved four times an iteration; this makes
//! those saves create and free nothing.
//!
//! The spare is only written over when it is the very file this process wrote at its save
//! before last (same device and inode, one link, ours, a plain file): anything else in its place
//! — a link an agent planted to a file of the user's, a hard link to another name — is removed
//! by name and a new spare is made, so no save ever writes through something it did not make;
//! what cannot be removed makes that save a plain atomic write, never a failed one.
//! Below a guarded root the directory is reached without following a link
//! (`beneath::parent`); elsewhere (the loop's records in the store) it is opened as usual. Where
//! the file system cannot exchange two names (or off Linux) it is a plain atomic write
//! (`fsutil::atomic_write_at`, `fsutil::copy_file`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

#[cfg(target_os = "linux")]
use crate::error::IoContext;
use crate::error::Result;

/// A file's identity: device and inode.
type Id = (u64, u64);

/// For each path saved this way, the files this process wrote at its last two saves: the last is
/// in the path's place, the one before in the spare's (where the next save writes).
static WRITTEN: Mutex<BTreeMap<PathBuf, [Option<Id>; 2]>> = Mutex::new(BTreeMap::new());

/// The spare's name beside `name`.
#[must_use]
pub fn spare_name(name: &str) -> String {
    format!(".{name}.spare.tmp")
}

/// What a save writes: bytes, or a file's content streamed (never read whole).
#[derive(Clone, Copy)]
enum Content<'a> {
    Bytes(&'a [u8]),
    File(&'a Path),
}

/// Replace `path` with `bytes` through its spare; `failpoint` is hit before the exchange (tests
/// crash there).
///
/// # Errors
/// When the spare cannot be made or written, or the exchange (or the rename it falls back to)
/// fails; the error names `path`.
pub fn replace(path: &Path, bytes: &[u8], failpoint: &str) -> Result<()> {
    save(path, Content::Bytes(bytes), failpoint)
}

/// Replace `to` with a copy of the file `from` through its spare, streamed.
///
/// # Errors
/// When `from` cannot be read, or as [`replace`].
pub fn copy(from: &Path, to: &Path) -> Result<()> {
    save(to, Content::File(from), "atomic-after-temp-write")
}

fn save(path: &Path, content: Content<'_>, failpoint: &str) -> Result<()> {
    #[cfg(target_os = "linux")]
    if let Some(e) = parent(path).at(path, "write")? {
        return exchange(path, &e, content, failpoint);
    }
    plain(path, content, failpoint)
}

/// The usual way: a temp file renamed over `path`.
fn plain(path: &Path, content: Content<'_>, failpoint: &str) -> Result<()> {
    match content {
        Content::Bytes(bytes) => crate::sys::fsutil::atomic_write_at(path, bytes, failpoint),
        Content::File(from) => crate::sys::fsutil::copy_file(from, path),
    }
}

/// The directory holding `path` and its name: reached without following a link below a guarded
/// root, opened as usual elsewhere.
#[cfg(target_os = "linux")]
fn parent(path: &Path) -> std::io::Result<Option<crate::sys::beneath::Entry>> {
    use rustix::fs::{Mode, OFlags};
    if let Some(e) = crate::sys::beneath::parent(path)? {
        return Ok(Some(e));
    }
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Ok(None);
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let dir = rustix::fs::open(dir, flags, Mode::empty())?;
    Ok(Some(crate::sys::beneath::Entry {
        dir,
        name: PathBuf::from(name),
    }))
}

/// The loop is done saving `path`: its spare goes (by name; nothing is left beside the state of
/// a loop that ended). A later save makes a new one.
pub fn discard(path: &Path) {
    if let Ok(mut w) = WRITTEN.lock() {
        w.remove(path);
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    if let Some(spare) = name.map(|n| path.with_file_name(spare_name(&n))) {
        let _gone = crate::sys::fsutil::remove_file_opt(&spare);
    }
}

#[cfg(target_os = "linux")]
fn exchange(
    path: &Path,
    e: &crate::sys::beneath::Entry,
    content: Content<'_>,
    failpoint: &str,
) -> Result<()> {
    use rustix::fs::RenameFlags;
    let name = e.name.to_string_lossy().into_owned();
    let spare = spare_name(&name);
    let expected = WRITTEN
        .lock()
        .ok()
        .and_then(|w| w.get(path).and_then(|ids| ids[0]));
    let Ok(file) = open_spare(e, &spare, expected) else {
        // What is in the spare's place cannot be cleared: this save goes the usual way.
        return plain(path, content, failpoint);
    };
    let id = written(&file, e, content, path)?;
    drop(file);
    crate::sys::failpoint::hit(failpoint)?;
    let swapped = rustix::fs::renameat_with(&e.dir, &spare, &e.dir, &e.name, RenameFlags::EXCHANGE);
    match swapped {
        Ok(()) => {}
        // Nothing to exchange with, or a file system that cannot: the spare takes the name.
        Err(_) => {
            rustix::fs::renameat(&e.dir, &spare, &e.dir, &e.name)
                .map_err(std::io::Error::from)
                .at(path, "rename a temp file over")?;
        }
    }
    if let Ok(mut w) = WRITTEN.lock() {
        let ids = w.entry(path.to_path_buf()).or_default();
        // A plain rename left no spare: the file before is gone.
        *ids = [swapped.is_ok().then_some(ids[1]).flatten(), Some(id)];
    }
    Ok(())
}

/// The spare to write: the file this process wrote at its save before last when it is still
/// there, alone and ours; else whatever is there is removed (by name, never followed) and a
/// new one made.
#[cfg(target_os = "linux")]
fn open_spare(
    e: &crate::sys::beneath::Entry,
    spare: &str,
    expected: Option<Id>,
) -> std::io::Result<std::fs::File> {
    use rustix::fs::{AtFlags, Mode, OFlags};
    let flags = OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
    if let Some(want) = expected
        && let Ok(fd) = rustix::fs::openat(&e.dir, spare, flags, Mode::empty())
    {
        let file = std::fs::File::from(fd);
        if reusable(&file, want) {
            return Ok(file);
        }
    }
    match rustix::fs::unlinkat(&e.dir, spare, AtFlags::empty()) {
        Ok(()) | Err(rustix::io::Errno::NOENT) => {}
        // A directory in its place: it goes, with what is in it, however deep.
        Err(rustix::io::Errno::ISDIR | rustix::io::Errno::PERM) => {
            crate::sys::beneath::remove_entry(&e.dir, Path::new(spare))?;
        }
        Err(err) => return Err(err.into()),
    }
    let fd = rustix::fs::openat(
        &e.dir,
        spare,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )?;
    Ok(std::fs::File::from(fd))
}

/// Whether an opened spare is the file `want` names, a plain file with one link, owned by us.
#[cfg(target_os = "linux")]
fn reusable(file: &std::fs::File, want: Id) -> bool {
    use std::os::unix::fs::MetadataExt;
    file.metadata().is_ok_and(|m| {
        m.is_file()
            && m.nlink() == 1
            && m.uid() == rustix::process::geteuid().as_raw()
            && (m.dev(), m.ino()) == want
    })
}

/// Write `content` over the spare from its start, cut it to its length, give it the mode of
/// the file it replaces (a plain file's; else 0600); its identity. `path`: the file saved, for
/// errors.
#[cfg(target_os = "linux")]
fn written(
    file: &std::fs::File,
    e: &crate::sys::beneath::Entry,
    content: Content<'_>,
    path: &Path,
) -> Result<Id> {
    use rustix::fs::{AtFlags, FileType, Mode};
    use std::os::unix::fs::{FileExt, MetadataExt};
    let len = match content {
        Content::Bytes(bytes) => {
            file.write_all_at(bytes, 0).at(path, "write the spare of")?;
            u64::try_from(bytes.len()).unwrap_or(u64::MAX)
        }
        Content::File(from) => {
            let mut src = crate::sys::fsutil::open_read(from).at(from, "read")?;
            let mut dst = file;
            std::io::Seek::rewind(&mut dst).at(path, "write the spare of")?;
            std::io::copy(&mut src, &mut dst).at(path, "copy into the spare of")?
        }
    };
    let mode = match rustix::fs::statat(&e.dir, &e.name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(old) if FileType::from_raw_mode(old.st_mode) == FileType::RegularFile => {
            old.st_mode & 0o7777
        }
        _ => 0o600,
    };
    let done = || -> std::io::Result<Id> {
        file.set_len(len)?;
        let meta = file.metadata()?;
        if meta.mode() & 0o7777 != mode {
            rustix::fs::fchmod(file, Mode::from_raw_mode(mode))?;
        }
        Ok((meta.dev(), meta.ino()))
    };
    done().at(path, "write the spare of")
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn guarded() -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("root");
        std::fs::create_dir(&root).unwrap();
        crate::sys::beneath::guard(&root);
        (d, root.join("state.json"))
    }

    #[test]
    fn saves_replace_the_file_whole_and_reuse_one_spare() {
        let (_d, path) = guarded();
        let spare = path.with_file_name(spare_name("state.json"));
        for (i, text) in [
            "first, a longer text\n",
            "second\n",
            "third, longer again\n",
            "4\n",
        ]
        .iter()
        .enumerate()
        {
            replace(&path, text.as_bytes(), "none").unwrap();
            assert_eq!(std::fs::read_to_string(&path).unwrap(), *text, "save {i}");
        }
        // From the third save on, the two files trade places: nothing new is made.
        let before = (
            std::fs::metadata(&path).unwrap().ino(),
            std::fs::metadata(&spare).unwrap().ino(),
        );
        replace(&path, b"5\n", "none").unwrap();
        let after = (
            std::fs::metadata(&path).unwrap().ino(),
            std::fs::metadata(&spare).unwrap().ino(),
        );
        assert_eq!((after.0, after.1), (before.1, before.0));
        assert_eq!(std::fs::read_to_string(&spare).unwrap(), "4\n");
        // A loop that ended leaves no spare; a later save still works.
        discard(&path);
        assert!(!spare.exists());
        replace(&path, b"6\n", "none").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "6\n");
    }

    #[test]
    fn a_replaced_file_keeps_its_mode() {
        let (_d, path) = guarded();
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o640))
            .unwrap();
        replace(&path, b"new", "none").unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o7777, 0o640);
    }

    #[test]
    fn nothing_planted_in_the_spares_place_is_written_through() {
        let (d, path) = guarded();
        let spare = path.with_file_name(spare_name("state.json"));
        let user = d.path().join("users-file");
        for plant in ["symlink", "hardlink", "swapped", "directory"] {
            std::fs::write(&user, "the user's").unwrap();
            for text in ["a\n", "b\n", "c\n"] {
                replace(&path, text.as_bytes(), "none").unwrap();
            }
            std::fs::remove_file(&spare).unwrap();
            match plant {
                "symlink" => std::os::unix::fs::symlink(&user, &spare).unwrap(),
                "hardlink" => std::fs::hard_link(&user, &spare).unwrap(),
                "swapped" => std::fs::write(&spare, "another file").unwrap(),
                _ => {
                    // Not empty, deep, and read-only to its owner.
                    let deep = spare.join("a/b/c/d/e");
                    std::fs::create_dir_all(&deep).unwrap();
                    std::fs::write(deep.join("f"), "x").unwrap();
                    std::fs::set_permissions(
                        spare.join("a"),
                        std::os::unix::fs::PermissionsExt::from_mode(0o500),
                    )
                    .unwrap();
                }
            }
            replace(&path, b"d\n", "none").unwrap();
            replace(&path, b"e\n", "none").unwrap();
            assert_eq!(
                std::fs::read_to_string(&user).unwrap(),
                "the user's",
                "{plant}"
            );
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "e\n", "{plant}");
            assert!(
                std::fs::symlink_metadata(&spare).unwrap().is_file(),
                "{plant}"
            );
        }
    }

    #[test]
    fn a_file_outside_every_guarded_root_is_saved_and_copied_through_its_spare_too() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("records").join("original.md");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let spare = path.with_file_name(spare_name("original.md"));
        let from = d.path().join("artifact.md");
        let ids: Vec<u64> = ["# First, longer\n", "# Two\n", "# Third\n"]
            .iter()
            .map(|text| {
                std::fs::write(&from, text).unwrap();
                copy(&from, &path).unwrap();
                assert_eq!(std::fs::read_to_string(&path).unwrap(), *text);
                std::fs::metadata(&path).unwrap().ino()
            })
            .collect();
        // The third save went into the file the first one made: two files in all.
        assert_eq!(ids[0], ids[2]);
        assert!(spare.is_file());
        replace(&path, b"-\n", "none").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "-\n");
        discard(&path);
        assert!(!spare.exists());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "-\n");
    }
}
