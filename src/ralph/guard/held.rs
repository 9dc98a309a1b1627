//! What one protected path held, of any file type: a small file's bytes and mode, a link's
//! target, a directory, a large file's size and digest. Read without following a link; put back
//! where it can be.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use md5::{Digest, Md5};

use crate::error::{IoContext, Result};
use crate::sys::fsutil;

/// The most of one protected file kept (configs and hook scripts are small); a larger one is
/// known by its size and digest, so a change to it is seen, though it cannot be put back.
pub const KEEP: u64 = 1024 * 1024;

/// What a protected path held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Held {
    /// Nothing there.
    Absent,
    /// A regular file of at most [`KEEP`] bytes, and its permission bits.
    Bytes(Vec<u8>, u32),
    /// A symbolic link, and where it points.
    Link(PathBuf),
    /// A directory.
    Dir,
    /// A regular file larger than [`KEEP`]: its size and md5.
    Large(u64, [u8; 16]),
    /// A FIFO, socket or device, by its mode.
    Special(u32),
    /// Unreadable: left alone.
    Unknown,
}

impl Held {
    /// What `p` holds now (a link is not followed).
    #[must_use]
    pub fn of(p: &Path) -> Held {
        let meta = match std::fs::symlink_metadata(p) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Held::Absent,
            Err(_) => return Held::Unknown,
        };
        let kind = meta.file_type();
        if kind.is_symlink() {
            return std::fs::read_link(p).map_or(Held::Unknown, Held::Link);
        }
        if kind.is_dir() {
            return Held::Dir;
        }
        if !kind.is_file() {
            return Held::Special(meta.permissions().mode());
        }
        let mode = meta.permissions().mode() & 0o7777;
        let Ok(f) = fsutil::open_read(p) else {
            return Held::Unknown;
        };
        if meta.len() <= KEEP {
            let mut bytes = Vec::new();
            return match f.take(KEEP + 1).read_to_end(&mut bytes) {
                Ok(_) if bytes.len() as u64 <= KEEP => Held::Bytes(bytes, mode),
                _ => Held::Unknown,
            };
        }
        let mut hasher = Md5::new();
        match std::io::copy(&mut std::io::BufReader::new(f), &mut hasher) {
            Ok(n) => Held::Large(n, hasher.finalize().into()),
            Err(_) => Held::Unknown,
        }
    }

    /// The bytes to keep aside as evidence: a file's content, a link's target.
    #[must_use]
    pub fn evidence(&self) -> Option<Vec<u8>> {
        match self {
            Held::Bytes(b, _) => Some(b.clone()),
            Held::Link(t) => Some(format!("a symbolic link to {}\n", t.display()).into_bytes()),
            _ => None,
        }
    }

    /// For people: what kind of thing it is.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Held::Absent => "nothing",
            Held::Bytes(..) | Held::Large(..) => "a file",
            Held::Link(_) => "a symbolic link",
            Held::Dir => "a directory",
            Held::Special(_) => "a FIFO, socket or device",
            Held::Unknown => "something unreadable",
        }
    }
}

/// Put `path` back as it held `was`: what is there now is removed (a link as a link, nothing
/// followed) and the file or link made again. `false` when that cannot be done (a directory, a
/// large file, something unreadable: nothing of it was kept).
pub fn put_back(path: &Path, was: &Held) -> Result<bool> {
    match was {
        Held::Absent => {
            fsutil::remove_dir_all_opt(path)?;
            Ok(true)
        }
        Held::Bytes(bytes, mode) => {
            if !matches!(Held::of(path), Held::Bytes(..) | Held::Absent) {
                fsutil::remove_dir_all_opt(path)?;
            }
            fsutil::atomic_write(path, bytes)?;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(*mode))
                .at(path, "set the mode of")?;
            Ok(true)
        }
        Held::Link(target) => {
            fsutil::remove_dir_all_opt(path)?;
            std::os::unix::fs::symlink(target, path).at(path, "make the link")?;
            Ok(true)
        }
        Held::Dir | Held::Large(..) | Held::Special(_) | Held::Unknown => Ok(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_entry_is_told_apart_and_small_ones_are_put_back() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("hook");
        assert_eq!(Held::of(&p), Held::Absent);
        std::fs::write(&p, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        let file = Held::of(&p);
        assert_eq!(file, Held::Bytes(b"#!/bin/sh\n".to_vec(), 0o755));
        // Replaced by a link: seen, and put back as the executable file it was.
        std::fs::remove_file(&p).unwrap();
        std::os::unix::fs::symlink("/tmp/evil", &p).unwrap();
        assert_eq!(Held::of(&p), Held::Link(PathBuf::from("/tmp/evil")));
        assert!(put_back(&p, &file).unwrap());
        assert_eq!(Held::of(&p), file);
        // A hook over the size kept is still told apart from another of the same size.
        let big = d.path().join("big");
        std::fs::write(&big, vec![b'a'; 2 << 20]).unwrap();
        let was = Held::of(&big);
        assert!(matches!(was, Held::Large(n, _) if n == 2 << 20));
        let mut other = vec![b'a'; 2 << 20];
        other[100] = b'b';
        std::fs::write(&big, other).unwrap();
        assert_ne!(Held::of(&big), was);
        assert!(
            !put_back(&big, &was).unwrap(),
            "a large file cannot be put back"
        );
        assert_eq!(Held::of(d.path()), Held::Dir);
    }
}
