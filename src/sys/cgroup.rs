//! One cgroup (v2) per agent run, where this process may make one below its own: everything the
//! run starts lives in it whatever it does to escape the process group and the environment token
//! (`setsid`, `env -i`, a double fork), so stopping the run ends with `cgroup.kill`; the memory
//! ceiling becomes `memory.max` and `[safety] max_processes` becomes `pids.max` where those
//! controllers are on (the kernel enforces them, no polling). Without a writable cgroup v2
//! hierarchy the loop says so once and keeps the process-group and token nets.

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// [`writable_base`], asked once per process.
#[must_use]
pub fn base() -> Option<&'static Path> {
    static BASE: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    BASE.get_or_init(writable_base).as_deref()
}

/// The cgroup v2 directory this process lives in, when it can make groups below it.
#[must_use]
pub fn writable_base() -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mount = mounts.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        (right.split_whitespace().next() == Some("cgroup2"))
            .then(|| left.split_whitespace().nth(4).map(PathBuf::from))
            .flatten()
    })?;
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let rel = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    let base = mount.join(rel.trim().trim_start_matches('/'));
    let probe = base.join(format!("studio-agents-probe-{}", std::process::id()));
    std::fs::create_dir(&probe).ok()?;
    std::fs::remove_dir(&probe).ok()?;
    Some(base)
}

/// The group of the run with `token` under `base`.
#[must_use]
pub fn group_path(base: &Path, token: &str) -> PathBuf {
    let safe: String = token
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    base.join(format!("studio-agents-{safe}"))
}

/// What the kernel enforces of a run's group.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// `memory.max` set.
    pub memory: bool,
    /// `pids.max` set.
    pub pids: bool,
}

/// Which ceilings the groups made under `base` can hold (the controllers its
/// `cgroup.subtree_control` turns on for them).
#[must_use]
pub fn controllers(base: &Path) -> Limits {
    let on = std::fs::read_to_string(base.join("cgroup.subtree_control")).unwrap_or_default();
    let has = |c: &str| on.split_whitespace().any(|w| w == c);
    Limits {
        memory: has("memory"),
        pids: has("pids"),
    }
}

/// For the sandbox line: what the runs' cgroups give on this machine.
#[must_use]
pub fn describe() -> String {
    match base() {
        None => {
            "no cgroup v2 group can be made: runs are stopped by process group and token".into()
        }
        Some(b) => {
            let c = controllers(b);
            match (c.pids, c.memory) {
                (true, true) => "a cgroup per run (pids and memory ceilings)".into(),
                (true, false) => "a cgroup per run (pids ceiling; memory polled)".into(),
                (false, true) => "a cgroup per run (memory ceiling; no pids controller: max_processes not enforced)".into(),
                (false, false) => "a cgroup per run (no pids or memory controller: max_processes not enforced, memory polled)".into(),
            }
        }
    }
}

/// Make the group, with `memory.max` (bytes, 0: none) and `pids.max` (0: none) where the
/// controllers are on.
pub fn create(path: &Path, memory: u64, pids: u64) -> io::Result<Limits> {
    match std::fs::create_dir(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let set = |file: &str, value: u64| {
        value > 0 && std::fs::write(path.join(file), value.to_string()).is_ok()
    };
    Ok(Limits {
        memory: set("memory.max", memory),
        pids: set("pids.max", pids),
    })
}

/// Move the calling process into the group (what it starts follows).
pub fn join(path: &Path) -> io::Result<()> {
    std::fs::write(path.join("cgroup.procs"), "0")
}

/// Whether the calling process is in the group at `path` (as `/proc/self/cgroup` names it,
/// relative to the cgroup v2 root).
#[must_use]
pub fn is_member(path: &Path) -> bool {
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    own.lines()
        .filter_map(|l| l.strip_prefix("0::"))
        .map(|rel| rel.trim().trim_start_matches('/'))
        .any(|rel| !rel.is_empty() && path.ends_with(rel))
}

/// The processes in the group.
#[must_use]
pub fn members(path: &Path) -> Vec<i32> {
    std::fs::read_to_string(path.join("cgroup.procs"))
        .map(|s| s.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// Kill everything in the group (`cgroup.kill`, Linux ≥ 5.14; else SIGKILL to each member),
/// wait up to `within` for it to empty, and remove it. Returns the pids that were still in it.
pub fn kill_and_remove(path: &Path, within: Duration) -> Vec<i32> {
    if !path.is_dir() {
        return Vec::new();
    }
    let found = members(path);
    if !found.is_empty() && std::fs::write(path.join("cgroup.kill"), "1").is_err() {
        for pid in &found {
            nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(*pid),
                nix::sys::signal::Signal::SIGKILL,
            )
            .ok();
        }
    }
    wait_empty(path, within);
    if let Err(e) = std::fs::remove_dir(path)
        && e.kind() != io::ErrorKind::NotFound
    {
        tracing::warn!("cannot remove the run's cgroup {}: {e}", path.display());
    }
    found
}

/// Whether the group holds a process, as its `cgroup.events` says (`None`: unreadable).
fn populated(events: &Path) -> Option<bool> {
    let text = std::fs::read_to_string(events).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("populated "))
        .map(|v| v.trim() != "0")
}

/// Wait up to `within` for the group to hold no process. The kernel tells each change of
/// `populated` in `cgroup.events` as a modification of that file: watched (inotify) before it is
/// read, so no change is missed and nothing is polled. Without the file or a watch, its members
/// are looked at every 10 ms. A group already empty (the common case: the run's leader reaped,
/// its process group gone) is not watched at all: closing a watch waits out a grace period of
/// the kernel's (~10 ms). Returns whether it emptied.
fn wait_empty(path: &Path, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    let events = path.join("cgroup.events");
    let busy = || populated(&events).unwrap_or_else(|| !members(path).is_empty());
    if !busy() {
        return true;
    }
    let watch = watch_events(&events);
    loop {
        let busy = busy();
        let left = deadline.saturating_duration_since(Instant::now());
        if !busy || left.is_zero() {
            return !busy;
        }
        match &watch {
            Some(w) => wait_modified(w, left),
            None => std::thread::sleep(left.min(Duration::from_millis(10))),
        }
    }
}

#[cfg(target_os = "linux")]
type EventsWatch = nix::sys::inotify::Inotify;
#[cfg(not(target_os = "linux"))]
type EventsWatch = ();

/// A watch on the modifications of `events`.
#[cfg(target_os = "linux")]
fn watch_events(events: &Path) -> Option<EventsWatch> {
    use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
    let watch = Inotify::init(InitFlags::IN_CLOEXEC | InitFlags::IN_NONBLOCK).ok()?;
    watch.add_watch(events, AddWatchFlags::IN_MODIFY).ok()?;
    Some(watch)
}

#[cfg(not(target_os = "linux"))]
fn watch_events(_events: &Path) -> Option<EventsWatch> {
    None
}

/// Until the watched file is modified, or `within` passes.
#[cfg(target_os = "linux")]
fn wait_modified(watch: &EventsWatch, within: Duration) {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd;
    let ms = u16::try_from(within.as_millis().max(1)).unwrap_or(u16::MAX);
    let mut fds = [PollFd::new(watch.as_fd(), PollFlags::POLLIN)];
    if poll(&mut fds, PollTimeout::from(ms)).is_ok_and(|n| n > 0) {
        // Drained: the next modification wakes the next wait.
        let _seen = watch.read_events();
    }
}

#[cfg(not(target_os = "linux"))]
fn wait_modified(_watch: &EventsWatch, within: Duration) {
    std::thread::sleep(within.min(Duration::from_millis(10)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_is_named_by_the_token_and_only_by_safe_characters() {
        assert_eq!(
            group_path(Path::new("/sys/fs/cgroup/x"), "loop-3-123/../x"),
            PathBuf::from("/sys/fs/cgroup/x/studio-agents-loop-3-123____x")
        );
    }

    #[test]
    fn a_process_that_escapes_its_session_is_killed_with_its_group() {
        let Some(base) = writable_base() else {
            eprintln!("no writable cgroup v2 here: the fallback is tested by the loop's tests");
            return;
        };
        let path = group_path(&base, &format!("unit-{}", std::process::id()));
        create(&path, 0, 0).unwrap();
        // A shell that joins the group, then leaves its session and forks twice.
        // (The backgrounded `setsid` child is in the group from its fork on: nothing to wait for.)
        let script = format!(
            "echo 0 > {}/cgroup.procs; setsid sh -c '(sleep 60 &) ; sleep 60' &",
            path.display()
        );
        let status = std::process::Command::new("sh")
            .args(["-c", &script])
            .status()
            .unwrap();
        assert!(status.success());
        let before = members(&path);
        assert!(!before.is_empty(), "the escapees are in the group");
        let killed = kill_and_remove(&path, Duration::from_secs(2));
        assert_eq!(killed.len(), before.len());
        assert!(!path.exists());
        for pid in before {
            assert!(
                std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .map_or(true, |s| s.contains(") Z")),
                "{pid} lives on"
            );
        }
    }
}
