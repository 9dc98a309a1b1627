//! The loop's lock: `wiggum/.lock`, a kernel lock (`File::try_lock`) held for the supervisor's
//! whole life. The kernel drops it when the process dies, so "is it running?" is "can I take the
//! lock?". The pid, start time and exe written inside are for display and for an identity check
//! before any signal is sent to a recorded pid.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, IoContext, Result};
use crate::procs;

/// Who holds the lock, as written in the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// The supervisor's pid.
    pub pid: u32,
    /// Its start time in clock ticks since boot (pid reuse guard).
    pub start_ticks: u64,
    /// Its executable.
    pub exe: String,
    /// When it took the lock (RFC 3339).
    pub since: String,
}

impl Holder {
    /// Whether `pid` is still the very process that wrote this: same start time and, when it
    /// can be read, the same executable (a rebuilt binary reads as "… (deleted)").
    #[must_use]
    pub fn is_same_process(&self) -> bool {
        let started = procs::stat(self.pid.cast_signed())
            .is_some_and(|s| s.is_running() && s.start_ticks == self.start_ticks);
        let exe = std::fs::read_link(format!("/proc/{}/exe", self.pid))
            .ok()
            .map(|p| {
                let s = p.display().to_string();
                s.strip_suffix(" (deleted)")
                    .map_or(s.clone(), str::to_string)
            });
        started && exe.is_none_or(|e| self.exe.is_empty() || e == self.exe)
    }
}

/// The held lock. Dropping it (or dying) releases it.
#[derive(Debug)]
pub struct Guard {
    _file: File,
    path: PathBuf,
}

impl Guard {
    /// The lock file's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn me() -> Holder {
    let pid = std::process::id();
    Holder {
        pid,
        start_ticks: procs::stat(pid.cast_signed()).map_or(0, |s| s.start_ticks),
        exe: std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        since: chrono::Utc::now().to_rfc3339(),
    }
}

fn open(path: &Path) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
        .at(path, "open lock file")
}

fn read_holder(file: &mut File) -> Option<Holder> {
    let mut s = String::new();
    file.rewind().ok()?;
    file.take(4096).read_to_string(&mut s).ok()?;
    serde_json::from_str(&s).ok()
}

/// Take the lock or say who has it (exit code 3).
pub fn acquire(path: &Path, what: &str) -> Result<Guard> {
    let mut file = open(path)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let who = read_holder(&mut file).map_or_else(
                || "another process".to_string(),
                |h| format!("pid {} (since {})", h.pid, h.since),
            );
            return Err(Error::AlreadyRunning(format!(
                "{what} is already running: {who} holds {}",
                path.display()
            )));
        }
        Err(TryLockError::Error(e)) => return Err(e).at(path, "lock"),
    }
    let json = serde_json::to_string(&me()).unwrap_or_default();
    file.set_len(0).at(path, "truncate lock file")?;
    file.rewind().at(path, "rewind lock file")?;
    file.write_all(json.as_bytes())
        .at(path, "write lock file")?;
    file.sync_data().at(path, "fsync lock file")?;
    Ok(Guard {
        _file: file,
        path: path.to_path_buf(),
    })
}

/// Who holds the lock now, or `None` if no one does (or there is no lock file).
pub fn holder(path: &Path) -> Result<Option<Holder>> {
    if !path.exists() {
        return Ok(None);
    }
    let mut file = open(path)?;
    match file.try_lock() {
        Ok(()) => {
            file.unlock().at(path, "unlock")?;
            Ok(None)
        }
        Err(TryLockError::WouldBlock) => Ok(Some(read_holder(&mut file).unwrap_or(Holder {
            pid: 0,
            start_ticks: 0,
            exe: String::new(),
            since: String::new(),
        }))),
        Err(TryLockError::Error(e)) => Err(e).at(path, "probe lock"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_acquire_fails_with_holder_then_frees_on_drop() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(".lock");
        let g = acquire(&p, "loop t").unwrap();
        let e = acquire(&p, "loop t").unwrap_err();
        assert_eq!(e.exit_code(), 3);
        assert!(
            e.to_string()
                .contains(&format!("pid {}", std::process::id())),
            "{e}"
        );
        let h = holder(&p).unwrap().unwrap();
        assert_eq!(h.pid, std::process::id());
        assert!(h.is_same_process());
        let other_exe = Holder {
            exe: "/usr/bin/something-else".into(),
            ..h.clone()
        };
        assert!(!other_exe.is_same_process());
        let other_start = Holder {
            start_ticks: h.start_ticks + 1,
            ..h.clone()
        };
        assert!(!other_start.is_same_process());
        drop(g);
        assert_eq!(holder(&p).unwrap(), None);
    }
}
