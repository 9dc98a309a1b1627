//! The machine's `/dev/shm` as a run sees it where no mount namespace gives it one of its own:
//! a ledger of what was there before the run, so that what the run adds is counted against its
//! memory ceiling while it runs (a tmpfs file is memory no process's resident size shows) and
//! removed when it ends. Only what is new since the run began, owned by the run's user, and held
//! open by no process left is ever removed.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// What `/dev/shm` held before a run: every file and directory in it (the whole tree, bounded),
/// by inode — a file the run renames or links elsewhere is still not the run's.
#[derive(Debug)]
pub struct ShmLedger {
    dir: PathBuf,
    uid: u32,
    before: HashSet<u64>,
}

/// At most this many entries are looked at (a tree past it is counted and swept in part).
const MAX_ENTRIES: usize = 100_000;

/// Every entry under `dir` (links not followed), with its metadata, the deepest last.
fn walk(dir: &Path) -> Vec<(PathBuf, std::fs::Metadata)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if out.len() >= MAX_ENTRIES {
                return out;
            }
            let Ok(m) = e.path().symlink_metadata() else {
                continue;
            };
            if m.is_dir() {
                todo.push(e.path());
            }
            out.push((e.path(), m));
        }
    }
    out
}

impl ShmLedger {
    /// The entries of `dir` now; `None` when it cannot be read (nothing to count or remove).
    #[must_use]
    pub fn open(dir: &Path, uid: u32) -> Option<ShmLedger> {
        std::fs::read_dir(dir).ok()?;
        let before = walk(dir).into_iter().map(|(_, m)| m.ino()).collect();
        Some(ShmLedger {
            dir: dir.to_path_buf(),
            uid,
            before,
        })
    }

    /// The files and directories the run added (an inode new since the ledger was made, owned by
    /// its user), with the memory each holds (allocated blocks, not the apparent size: a sparse
    /// file holds none), directories after what they hold.
    fn added(&self) -> Vec<(PathBuf, std::fs::Metadata)> {
        let mut added: Vec<_> = walk(&self.dir)
            .into_iter()
            .filter(|(_, m)| !self.before.contains(&m.ino()) && m.uid() == self.uid)
            .collect();
        added.reverse();
        added
    }

    /// The memory the run's files hold there now, in bytes (a file linked twice counted once).
    #[must_use]
    pub fn bytes(&self) -> u64 {
        let mut seen = HashSet::new();
        self.added()
            .iter()
            .filter(|(_, m)| m.is_file() && seen.insert(m.ino()))
            .map(|(_, m)| m.blocks() * 512)
            .sum()
    }

    /// Remove what the run added and no live process holds open or mapped; returns the files
    /// removed and their size. Called once every process of the run is gone. Only what lies in
    /// an entry of `/dev/shm`'s own that is new may go — never a file new in a directory that
    /// was there (another program's tree: a repository, a build on tmpfs, written by the same
    /// user while the run ran), nor a new directory a process works in or that holds a
    /// repository.
    #[must_use]
    pub fn sweep(&self) -> Vec<(PathBuf, u64)> {
        let added = self.added();
        if added.is_empty() {
            return Vec::new();
        }
        let held = held_open(&self.dir);
        let busy = worked_in(&self.dir);
        // The run's entries at the top: new ones (each looked into once).
        let tops: HashSet<PathBuf> = added
            .iter()
            .map(|(p, _)| p)
            .filter(|p| p.parent() == Some(self.dir.as_path()))
            .filter(|top| !busy.contains(*top) && !holds_repository(top))
            .cloned()
            .collect();
        let mut removed = Vec::new();
        for (path, m) in added {
            if !self.top_of(&path).is_some_and(|t| tops.contains(&t)) {
                continue;
            }
            if m.is_dir() {
                // Emptied by now unless something in it is held: then it stays.
                let _kept = std::fs::remove_dir(&path);
            } else if !held.contains(&path) && std::fs::remove_file(&path).is_ok() {
                removed.push((path, m.blocks() * 512));
            }
        }
        removed
    }

    /// The entry of the ledger's directory that `path` lies in (or is).
    fn top_of(&self, path: &Path) -> Option<PathBuf> {
        let first = path.strip_prefix(&self.dir).ok()?.components().next()?;
        Some(self.dir.join(first))
    }
}

/// The entries of `dir` some process works in: its directory or its root lies in them.
fn worked_in(dir: &Path) -> HashSet<PathBuf> {
    let mut busy = HashSet::new();
    for p in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        for link in ["cwd", "root"] {
            if let Ok(at) = std::fs::read_link(p.path().join(link))
                && let Ok(rel) = at.strip_prefix(dir)
                && let Some(first) = rel.components().next()
            {
                busy.insert(dir.join(first));
            }
        }
    }
    busy
}

/// Whether a directory holds a repository (`.git` in it or anywhere under it, bounded).
fn holds_repository(top: &Path) -> bool {
    top.is_dir()
        && walk(top)
            .iter()
            .any(|(p, _)| p.file_name().is_some_and(|n| n == ".git"))
}

/// Memory the processes `pids` hold in files no directory shows: an unlinked `/dev/shm` file or a
/// `memfd` they keep open (each counted once). Their resident size does not show it.
#[must_use]
pub fn held_by(pids: &[i32]) -> u64 {
    let mut seen = HashSet::new();
    let mut total = 0;
    for pid in pids {
        let fds = PathBuf::from(format!("/proc/{pid}/fd"));
        for fd in std::fs::read_dir(&fds).into_iter().flatten().flatten() {
            let Ok(target) = std::fs::read_link(fd.path()) else {
                continue;
            };
            let t = target.to_string_lossy();
            let hidden = t.starts_with("/memfd:")
                || (t.starts_with("/dev/shm/") && t.ends_with(" (deleted)"));
            if !hidden {
                continue;
            }
            if let Ok(m) = std::fs::metadata(fd.path())
                && seen.insert((m.dev(), m.ino()))
            {
                total += m.blocks() * 512;
            }
        }
    }
    total
}

/// The files under `dir` some process holds open or has mapped (`/proc/*/fd`, `/proc/*/maps`).
fn held_open(dir: &Path) -> HashSet<PathBuf> {
    let mut held = HashSet::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return held;
    };
    for p in procs.flatten() {
        let base = p.path();
        for fd in std::fs::read_dir(base.join("fd"))
            .into_iter()
            .flatten()
            .flatten()
        {
            if let Ok(target) = std::fs::read_link(fd.path())
                && target.starts_with(dir)
            {
                held.insert(target);
            }
        }
        // Streamed: a large process's maps run to megabytes.
        let Ok(maps) = std::fs::File::open(base.join("maps")) else {
            continue;
        };
        let prefix = format!("{}/", dir.display());
        for line in
            std::io::BufRead::split(std::io::BufReader::new(maps), b'\n').map_while(Result::ok)
        {
            let line = String::from_utf8_lossy(&line);
            if let Some(at) = line.find(&prefix) {
                held.insert(PathBuf::from(line[at..].trim_end_matches(" (deleted)")));
            }
        }
    }
    held
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_run_added_is_counted_and_swept_unless_held_open() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path();
        std::fs::write(dir.join("before"), vec![1u8; 8192]).unwrap();
        let uid = nix::unistd::geteuid().as_raw();
        let ledger = ShmLedger::open(dir, uid).unwrap();
        assert_eq!(ledger.bytes(), 0);
        std::fs::write(dir.join("added"), vec![1u8; 64 << 10]).unwrap();
        let held = std::fs::File::create(dir.join("held")).unwrap();
        std::fs::write(dir.join("held"), vec![1u8; 4096]).unwrap();
        // A sparse file holds no memory.
        std::fs::File::create(dir.join("sparse"))
            .unwrap()
            .set_len(1 << 30)
            .unwrap();
        assert!(ledger.bytes() >= (64 << 10) + 4096, "{}", ledger.bytes());
        assert!(ledger.bytes() < 1 << 20, "{}", ledger.bytes());
        let mut swept: Vec<String> = ledger
            .sweep()
            .iter()
            .map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        swept.sort();
        assert_eq!(swept, ["added", "sparse"]);
        assert!(dir.join("before").exists() && dir.join("held").exists());
        drop(held);
        // A file that was there before, renamed by the run, is not the run's; a tree the run
        // made is counted and swept whole, a hard link counted once.
        std::fs::rename(dir.join("before"), dir.join("renamed")).unwrap();
        std::fs::create_dir_all(dir.join("d/a/b")).unwrap();
        std::fs::write(dir.join("d/a/b/deep"), vec![1u8; 32 << 10]).unwrap();
        std::fs::hard_link(dir.join("d/a/b/deep"), dir.join("d/link")).unwrap();
        let counted = ledger.bytes() - 4096 /* held */;
        assert!((32 << 10..64 << 10).contains(&counted), "{counted}");
        let _swept = ledger.sweep();
        assert!(dir.join("renamed").exists());
        assert!(!dir.join("d").exists());
        // New files in a directory that was there are someone's tree (the same user's, written
        // while the run ran): counted, never removed; nor a new directory holding a repository.
        std::fs::create_dir_all(dir.join("theirs")).unwrap();
        let ledger = ShmLedger::open(dir, uid).unwrap();
        std::fs::write(dir.join("theirs/index"), vec![1u8; 8192]).unwrap();
        std::fs::create_dir_all(dir.join("repo/.git/objects")).unwrap();
        std::fs::write(dir.join("repo/.git/objects/ab"), "x").unwrap();
        std::fs::write(dir.join("repo/work.txt"), "x").unwrap();
        std::fs::write(dir.join("segment"), vec![1u8; 4096]).unwrap();
        assert!(ledger.bytes() >= 8192, "{}", ledger.bytes());
        let swept: Vec<PathBuf> = ledger.sweep().into_iter().map(|(p, _)| p).collect();
        assert_eq!(swept, [dir.join("segment")]);
        assert!(dir.join("theirs/index").exists());
        assert!(dir.join("repo/work.txt").exists() && dir.join("repo/.git/objects/ab").exists());
        // Nor a new directory a process works in.
        std::fs::create_dir_all(dir.join("busy")).unwrap();
        std::fs::write(dir.join("busy/out"), "x").unwrap();
        let mut worker = std::process::Command::new("sleep")
            .arg("30")
            .current_dir(dir.join("busy"))
            .spawn()
            .unwrap();
        let swept = ledger.sweep();
        worker.kill().unwrap();
        worker.wait().unwrap();
        assert!(swept.is_empty(), "{swept:?}");
        assert!(dir.join("busy/out").exists());
        // Someone else's file (another owner) is never the run's.
        let other = ShmLedger::open(dir, uid + 1).unwrap();
        std::fs::write(dir.join("later"), "x").unwrap();
        assert!(other.sweep().is_empty());
    }
}
