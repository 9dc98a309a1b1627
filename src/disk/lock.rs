//! The loop's locks: kernel locks (`File::try_lock`, flock) held for the supervisor's whole life.
//! The kernel drops them when the process dies, so "is it running?" is "can I take the lock?".
//!
//! Two files are locked. `$STUDIO_AGENTS_HOME/locks/<hash of the artifact path>.lock` is the one
//! that counts: it lies outside the agent's workspace, so an agent that deletes, replaces or
//! garbles `wiggum/.lock` cannot let a second supervisor in. `wiggum/.lock` is kept for people
//! and tools that look beside the loop; the supervisor re-establishes it when it disappears.
//!
//! Who holds a lock is the kernel's word: the pid written inside counts only when that
//! process's own open files show it holding the lock (`/proc/<pid>/fdinfo`), else the kernel's
//! lock table (`/proc/locks`, slow: reading it waits out an RCU grace period) names the holder.
//! The start time, topic and exe written inside are for display and for an identity check
//! before any signal is sent. Finding out whether a lock is free takes it for a moment, so a
//! supervisor taking its lock tries again for a few milliseconds before it calls it held.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::disk::layout::Layout;
use crate::error::{Error, IoContext, Result};
use crate::sys::procs;

/// Who holds the lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// The supervisor's pid.
    pub pid: u32,
    /// Its start time in clock ticks since boot (pid reuse guard).
    pub start_ticks: u64,
    /// Its executable.
    pub exe: String,
    /// When it took the lock (RFC 3339; empty when the file's text was unreadable).
    pub since: String,
    /// The topic of the loop it runs (empty when unknown).
    #[serde(default)]
    pub topic: String,
}

impl Holder {
    /// Whether `pid` is still the very process that wrote this: same start time and, when it
    /// can be read, the same executable (a rebuilt binary reads as "… (deleted)").
    #[must_use]
    pub fn is_same_process(&self) -> bool {
        let started = procs::stat(self.pid.cast_signed())
            .is_some_and(|s| s.is_running() && s.start_ticks == self.start_ticks);
        let exe = exe_of(self.pid);
        started && exe.is_none_or(|e| self.exe.is_empty() || e == self.exe)
    }

    /// The holder as `/proc` describes `pid` now (when the file's text is garbled or lies).
    fn from_proc(pid: u32, text: Option<Holder>) -> Holder {
        let (since, topic) = text.map_or_else(Default::default, |t| (t.since, t.topic));
        Holder {
            pid,
            start_ticks: procs::stat(pid.cast_signed()).map_or(0, |s| s.start_ticks),
            exe: exe_of(pid).unwrap_or_default(),
            since,
            topic,
        }
    }
}

fn exe_of(pid: u32) -> Option<String> {
    std::fs::read_link(format!("/proc/{pid}/exe"))
        .ok()
        .map(|p| {
            let s = p.display().to_string();
            s.strip_suffix(" (deleted)")
                .map_or(s.clone(), str::to_string)
        })
}

/// A held lock. Dropping it (or dying) releases it.
#[derive(Debug)]
pub struct Guard {
    file: File,
    path: PathBuf,
    me: Holder,
}

impl Guard {
    /// The lock file's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Make sure the file at the path is still the one this guard locks, with our holder in it:
    /// a deleted or replaced file is locked anew, a garbled one rewritten. Returns whether
    /// anything had to be done; an error when another process holds the new file.
    pub fn ensure(&mut self) -> Result<bool> {
        let ours = self.file.metadata().at(&self.path, "stat lock file")?;
        let same = std::fs::symlink_metadata(&self.path)
            .is_ok_and(|m| m.dev() == ours.dev() && m.ino() == ours.ino());
        if same {
            if read_holder(&mut self.file).as_ref() == Some(&self.me) {
                return Ok(false);
            }
            write_holder(&mut self.file, &self.path, &self.me)?;
            return Ok(true);
        }
        if let Some(dir) = self.path.parent()
            && !dir.is_dir()
        {
            crate::sys::fsutil::create_dir_all(dir)?;
        }
        let mut file = open(&self.path)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(Error::AlreadyRunning(format!(
                    "{} was replaced and another process holds the new one",
                    self.path.display()
                )));
            }
            Err(TryLockError::Error(e)) => return Err(e).at(&self.path, "lock"),
        }
        write_holder(&mut file, &self.path, &self.me)?;
        self.file = file;
        Ok(true)
    }
}

fn me(topic: &str) -> Holder {
    let pid = std::process::id();
    Holder {
        pid,
        start_ticks: procs::stat(pid.cast_signed()).map_or(0, |s| s.start_ticks),
        exe: std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        since: chrono::Utc::now().to_rfc3339(),
        topic: topic.to_string(),
    }
}

/// Open (or create, 0600) a lock file; a symlink planted at the path is removed, never followed.
fn open(path: &Path) -> Result<File> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| !m.is_file()) {
        crate::sys::fsutil::remove_file_opt(path)?;
    }
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
        .open(path)
        .at(path, "open lock file")
}

fn read_holder(file: &mut File) -> Option<Holder> {
    let mut s = String::new();
    file.rewind().ok()?;
    file.take(4096).read_to_string(&mut s).ok()?;
    serde_json::from_str(&s).ok()
}

fn write_holder(file: &mut File, path: &Path, h: &Holder) -> Result<()> {
    let json = serde_json::to_string(h).unwrap_or_default();
    file.set_len(0).at(path, "truncate lock file")?;
    file.rewind().at(path, "rewind lock file")?;
    // Not fsync'd: after a crash the kernel's lock is gone with its holder, and a stale text is
    // never trusted on its own (`held_by`).
    file.write_all(json.as_bytes()).at(path, "write lock file")
}

/// How long a lock may stay held before it counts as a loop's: a reader finding out whether the
/// lock is held (`holder`) takes it for a few microseconds.
const PROBE_MOMENT: std::time::Duration = std::time::Duration::from_millis(15);

/// Take the lock for loop `topic` or say who has it (exit code 3).
pub fn acquire(path: &Path, topic: &str) -> Result<Guard> {
    acquire_within(path, topic, PROBE_MOMENT)
}

/// [`acquire`], waiting out a holder for up to `patience` (in doubling steps from 1 ms).
fn acquire_within(path: &Path, topic: &str, patience: std::time::Duration) -> Result<Guard> {
    if let Some(dir) = path.parent() {
        crate::sys::fsutil::create_dir_all(dir)?;
    }
    let mut file = open(path)?;
    let mut pause = std::time::Duration::from_millis(1);
    let mut waited = std::time::Duration::ZERO;
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(TryLockError::WouldBlock) if waited + pause <= patience => {
                std::thread::sleep(pause); // allow: a probe's moment
                waited += pause;
                pause *= 2;
            }
            Err(TryLockError::WouldBlock) => {
                let h = held_by(&mut file);
                return Err(Error::AlreadyRunning(already(topic, &h, path)));
            }
            Err(TryLockError::Error(e)) => return Err(e).at(path, "lock"),
        }
    }
    let me = me(topic);
    write_holder(&mut file, path, &me)?;
    Ok(Guard {
        file,
        path: path.to_path_buf(),
        me,
    })
}

/// "loop `x` is already running: …", naming the topic that really holds it.
#[must_use]
pub fn already(topic: &str, h: &Holder, path: &Path) -> String {
    if h.topic.is_empty() {
        // The holder has not written its name yet (it took the lock a moment ago) or the file
        // is garbled: which loop it is, `list` tells.
        return format!(
            "another loop is already running on this artifact directory (pid {}; lock {}); see: studio-agents wiggum list",
            h.pid,
            path.display()
        );
    }
    let whose = if h.topic == topic {
        format!("loop `{topic}` is already running")
    } else {
        format!(
            "loop `{}` is already running on this artifact directory (asked for `{topic}`)",
            h.topic
        )
    };
    let since = if h.since.is_empty() {
        String::new()
    } else {
        format!(", since {}", h.since)
    };
    format!(
        "{whose} (pid {}{since}; lock {}); stop it with: studio-agents wiggum stop {}",
        h.pid,
        path.display(),
        h.topic
    )
}

/// The holder of a locked file: the kernel's pid, the text's details when they agree. The pid
/// the text names is asked first whether it holds the lock (its own open files say so, cheaply);
/// only when it does not — a garbled or stale text — is the kernel's whole lock table read.
fn held_by(file: &mut File) -> Holder {
    let text = read_holder(file);
    let meta = file.metadata().ok();
    if let (Some(t), Some(m)) = (&text, &meta)
        && procs::holds_flock(t.pid, m.dev(), m.ino())
    {
        return t.clone();
    }
    let kernel = meta
        .and_then(|m| procs::flock_holder(m.dev(), m.ino()))
        .and_then(|p| u32::try_from(p).ok());
    match (kernel, text) {
        (Some(pid), Some(t)) if t.pid == pid => t,
        (Some(pid), text) => Holder::from_proc(pid, text),
        (None, Some(t)) => t,
        (None, None) => Holder::from_proc(0, None),
    }
}

/// Whether process `pid` holds the lock at `path` (and says so in it), found without probing
/// the lock, so a process about to take it is never in the way.
#[must_use]
pub fn held_by_pid(path: &Path, pid: u32) -> bool {
    let Ok(mut file) = File::open(path) else {
        return false;
    };
    let named = read_holder(&mut file).is_some_and(|h| h.pid == pid);
    named
        && file
            .metadata()
            .is_ok_and(|m| procs::holds_flock(pid, m.dev(), m.ino()))
}

/// Who holds the lock now, or `None` if no one does (or there is no lock file).
pub fn holder(path: &Path) -> Result<Option<Holder>> {
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).at(path, "open lock file"),
    };
    match file.try_lock() {
        // Nobody holds it; closing the file lets it go again.
        Ok(()) => Ok(None),
        Err(TryLockError::WouldBlock) => Ok(Some(held_by(&mut file))),
        Err(TryLockError::Error(e)) => Err(e).at(path, "probe lock"),
    }
}

/// The lock under `$STUDIO_AGENTS_HOME` for the loop on `root` (out of the agent's reach).
#[must_use]
pub fn home_lock(home: &Path, root: &Path) -> PathBuf {
    home.join("locks")
        .join(format!("{}.lock", Layout::key(root)))
}

/// Who runs the loop on `layout`: the home lock's holder, else the artifact lock's.
pub fn find(home: &Path, layout: &Layout) -> Result<Option<Holder>> {
    match holder(&home_lock(home, layout.root()))? {
        Some(h) => Ok(Some(h)),
        None => holder(&layout.lock()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn already_names_the_loop_that_holds_the_lock_or_none_when_unknown() {
        let h = |topic: &str| Holder {
            pid: 7,
            start_ticks: 1,
            exe: String::new(),
            since: String::new(),
            topic: topic.into(),
        };
        let p = Path::new("/l");
        let cases = [
            (
                "x",
                "loop `x` is already running (pid 7; lock /l); stop it with: studio-agents wiggum stop x",
            ),
            (
                "p",
                "loop `p` is already running on this artifact directory (asked for `q`) (pid 7; lock /l); stop it with: studio-agents wiggum stop p",
            ),
            (
                "",
                "another loop is already running on this artifact directory (pid 7; lock /l); see: studio-agents wiggum list",
            ),
        ];
        for (holder, want) in cases {
            let asked = if holder == "x" { "x" } else { "q" };
            assert_eq!(already(asked, &h(holder), p), want, "holder {holder:?}");
        }
    }

    #[test]
    fn a_probe_holding_the_lock_for_a_moment_does_not_keep_a_loop_out() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(".lock");
        std::fs::write(&p, "").unwrap();
        // What `holder` does: take the lock to see whether it is free, then let it go. The
        // probe is held when the loop first tries (taken before) and let go while it waits (a
        // patience no scheduler delay reaches: the point is the wait, not its length).
        let probe = File::open(&p).unwrap();
        probe.try_lock().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let taker = std::thread::spawn(move || {
            let g = acquire_within(&p, "t", std::time::Duration::from_secs(30));
            tx.send(()).unwrap();
            (g, p)
        });
        assert!(
            rx.recv_timeout(std::time::Duration::from_millis(50))
                .is_err(),
            "the loop took a lock that was held"
        );
        drop(probe);
        let (g, p) = taker.join().unwrap();
        let g = g.unwrap();
        assert!(held_by_pid(&p, std::process::id()));
        assert!(!held_by_pid(&p, std::process::id() + 1));
        drop(g);
        assert!(!held_by_pid(&p, std::process::id()), "released");
    }

    #[test]
    fn a_lock_text_naming_another_live_process_is_not_believed() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(".lock");
        let _g = acquire(&p, "t").unwrap();
        // Rewritten (through another descriptor) to name a live process that holds nothing.
        let forged = r#"{"pid":1,"start_ticks":1,"exe":"/sbin/init","since":"","topic":"x"}"#;
        std::fs::write(&p, forged).unwrap();
        let h = holder(&p).unwrap().unwrap();
        assert_eq!(h.pid, std::process::id());
        assert!(!held_by_pid(&p, 1));
    }

    #[test]
    fn second_acquire_fails_with_holder_then_frees_on_drop() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(".lock");
        let g = acquire(&p, "t").unwrap();
        let e = acquire(&p, "other").unwrap_err();
        assert_eq!(e.exit_code(), 3);
        let msg = e.to_string();
        assert!(
            msg.contains(&format!("pid {}", std::process::id())),
            "{msg}"
        );
        assert!(
            msg.contains(
                "loop `t` is already running on this artifact directory (asked for `other`)"
            ),
            "{msg}"
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

    #[test]
    fn a_garbled_lock_file_still_names_its_holder_from_the_kernel() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(".lock");
        let mut g = acquire(&p, "t").unwrap();
        std::fs::write(&p, b"\x00\x01garbage{{{").unwrap();
        let h = holder(&p).unwrap().unwrap();
        assert_eq!(h.pid, std::process::id());
        assert!(h.is_same_process());
        // The guard puts its holder back.
        assert!(g.ensure().unwrap());
        assert_eq!(holder(&p).unwrap().unwrap().topic, "t");
        assert!(!g.ensure().unwrap());
    }

    #[test]
    fn a_deleted_or_replaced_lock_file_is_locked_anew() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(".lock");
        let mut g = acquire(&p, "t").unwrap();
        std::fs::remove_file(&p).unwrap();
        assert_eq!(holder(&p).unwrap(), None);
        assert!(g.ensure().unwrap());
        assert_eq!(holder(&p).unwrap().unwrap().pid, std::process::id());
        // Replaced by a symlink to a file of the user's: the link is removed, the file untouched.
        let victim = d.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        std::fs::remove_file(&p).unwrap();
        std::os::unix::fs::symlink(&victim, &p).unwrap();
        assert!(g.ensure().unwrap());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert!(acquire(&p, "x").is_err());
    }

    #[test]
    fn home_locks_differ_per_artifact_and_read_well() {
        let a = home_lock(Path::new("/h"), Path::new("/w/research notes"));
        let b = home_lock(Path::new("/h"), Path::new("/x/research notes"));
        assert_ne!(a, b);
        let name = a.file_name().unwrap().to_string_lossy().to_string();
        assert!(
            name.starts_with("research_notes-") && name.ends_with(".lock"),
            "{name}"
        );
    }
}
