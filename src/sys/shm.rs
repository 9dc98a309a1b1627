//! The machine's `/dev/shm` as a run sees it where no mount namespace gives it one of its own:
//! a ledger of what was there before the run, so that what the run adds is counted against its
//! memory ceiling while it runs (a tmpfs file is memory no process's resident size shows) and
//! removed when it ends. Only what is new since the run began, owned by the run's user, and held
//! open by no process left is ever removed.

use std::collections::HashSet;
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// What `/dev/shm` held before a run.
#[derive(Debug)]
pub struct ShmLedger {
    dir: PathBuf,
    uid: u32,
    before: HashSet<(OsString, u64)>,
}

impl ShmLedger {
    /// The entries of `dir` now; `None` when it cannot be read (nothing to count or remove).
    #[must_use]
    pub fn open(dir: &Path, uid: u32) -> Option<ShmLedger> {
        let before = std::fs::read_dir(dir)
            .ok()?
            .flatten()
            .filter_map(|e| Some((e.file_name(), e.metadata().ok()?.ino())))
            .collect();
        Some(ShmLedger {
            dir: dir.to_path_buf(),
            uid,
            before,
        })
    }

    /// The files the run added (new since the ledger was made, owned by its user), with the
    /// memory each holds (allocated blocks, not the apparent size: a sparse file holds none).
    fn added(&self) -> Vec<(PathBuf, u64)> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|e| {
                let m = e.metadata().ok()?;
                let new = !self.before.contains(&(e.file_name(), m.ino()));
                (new && m.uid() == self.uid && !m.is_dir()).then(|| (e.path(), m.blocks() * 512))
            })
            .collect()
    }

    /// The memory the run's files hold there now, in bytes.
    #[must_use]
    pub fn bytes(&self) -> u64 {
        self.added().iter().map(|(_, b)| b).sum()
    }

    /// Remove what the run added and no live process holds open or mapped; returns what was
    /// removed and its size. Called once every process of the run is gone.
    #[must_use]
    pub fn sweep(&self) -> Vec<(PathBuf, u64)> {
        let added = self.added();
        if added.is_empty() {
            return added;
        }
        let held = held_open(&self.dir);
        added
            .into_iter()
            .filter(|(p, _)| !held.contains(p))
            .filter(|(p, _)| std::fs::remove_file(p).is_ok())
            .collect()
    }
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
        // Someone else's file (another owner) is never the run's.
        let other = ShmLedger::open(dir, uid + 1).unwrap();
        std::fs::write(dir.join("later"), "x").unwrap();
        assert!(other.sweep().is_empty());
    }
}
