//! The process table and friends read from `/proc` (Linux): the files are read here (one small
//! read each, no size probe); their text is parsed by `procfs-core`, the parsing half of the
//! `procfs` crate.

use std::fs::{self, File};
use std::io::Read;
use std::path::Path;

use procfs_core::process::StatM;
use procfs_core::{FromBufRead, FromRead, LockType, Locks, Uptime};

use super::Stat;

/// A `/proc` file's bytes: the files asked for here are small, and their size is not known up
/// front (the kernel says 0), so one read into a buffer that holds them, not a stat first.
fn read(path: impl AsRef<Path>) -> Option<Vec<u8>> {
    let mut buf = Vec::with_capacity(1024);
    File::open(path).ok()?.read_to_end(&mut buf).ok()?;
    Some(buf)
}

/// The kernel's `stat` line of a process, parsed: `None` unless it has the shape the kernel
/// writes (`<pid> (<comm>) <state> …`; the command name may hold spaces and parentheses).
fn kernel_stat(text: &[u8]) -> Option<procfs_core::process::Stat> {
    // The parser trims the text and slices it one byte before the first `(` and two after the
    // last `)`; text where those are not the spaces the kernel writes is no stat line (and is
    // never handed to it).
    let line = String::from_utf8_lossy(text);
    let t = line.trim().as_bytes();
    let open = t.iter().position(|b| *b == b'(')?;
    let close = t.iter().rposition(|b| *b == b')')?;
    let shaped = open >= 1
        && t[open - 1] == b' '
        && close > open
        && t.get(close + 1) == Some(&b' ')
        && close + 2 < t.len();
    shaped
        .then(|| procfs_core::process::Stat::from_read(text).ok())
        .flatten()
}

/// Parse the text of `/proc/<pid>/stat`.
#[must_use]
pub fn parse_stat(text: &str) -> Option<Stat> {
    let k = kernel_stat(text.as_bytes())?;
    Some(Stat {
        pid: k.pid,
        ppid: k.ppid,
        pgrp: k.pgrp,
        session: k.session,
        state: k.state,
        start_ticks: k.starttime,
    })
}

/// The stat of one process, if it exists.
#[must_use]
pub fn stat(pid: i32) -> Option<Stat> {
    let text = read(format!("/proc/{pid}/stat"))?;
    parse_stat(&String::from_utf8_lossy(&text))
}

/// Every process visible in `/proc`.
#[must_use]
pub fn all() -> Vec<Stat> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(stat)
        .collect()
}

/// This process and all its descendants, read by following each process's `children` lists
/// (`/proc/<pid>/task/<tid>/children`) instead of every process in `/proc`; `None` when the
/// kernel does not provide those lists.
#[must_use]
pub fn family() -> Option<Vec<Stat>> {
    let me = stat(std::process::id().cast_signed())?;
    let mut out = vec![me];
    let mut frontier = vec![me.pid];
    let mut first = true;
    while let Some(pid) = frontier.pop() {
        let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let list = read(t.path().join("children"));
            if first && list.is_none() {
                return None;
            }
            first = false;
            let list = list.unwrap_or_default();
            for child in String::from_utf8_lossy(&list).split_whitespace() {
                if let Some(s) = child.parse().ok().and_then(stat)
                    && !out.iter().any(|o| o.pid == s.pid)
                {
                    out.push(s);
                    frontier.push(s.pid);
                }
            }
        }
    }
    Some(out)
}

/// The process's command line, one argument each.
#[must_use]
pub fn args(pid: i32) -> Option<Vec<Vec<u8>>> {
    let raw = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(
        raw.split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(<[u8]>::to_vec)
            .collect(),
    )
}

/// Whether the process's environment holds `KEY=value` exactly.
#[must_use]
pub fn has_env(pid: i32, key: &str, value: &str) -> bool {
    let Ok(env) = fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let want = format!("{key}={value}");
    env.split(|b| *b == 0).any(|kv| kv == want.as_bytes())
}

/// The pid holding a `flock` on the file with device `dev` and inode `ino`, as the kernel says
/// in `/proc/locks` (the lock file's text can be garbled; this cannot).
#[must_use]
pub fn flock_holder(dev: u64, ino: u64) -> Option<i32> {
    let text = read("/proc/locks")?;
    flock_pid(String::from_utf8_lossy(&text).lines(), dev, ino)
}

/// Whether process `pid` holds a `flock` on the file with device `dev` and inode `ino`, asked
/// of the process's own open files: each descriptor's `/proc/<pid>/fdinfo` lists the locks it
/// holds, with the locked file's device and inode (no open file of the process is touched).
/// Unlike reading `/proc/locks` — which takes the kernel's global file-lock semaphore for
/// writing and so waits out an RCU grace period, ~10 ms on an idle machine — this costs a
/// directory listing and a few small reads. `false` when it cannot tell.
#[must_use]
pub fn holds_flock(pid: u32, dev: u64, ino: u64) -> bool {
    let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fdinfo")) else {
        return false;
    };
    fds.flatten().any(|fd| {
        read(fd.path())
            .is_some_and(|info| fdinfo_has_flock(&String::from_utf8_lossy(&info), pid, dev, ino))
    })
}

/// Whether an `fdinfo` text lists a granted `FLOCK` of `pid` on the file `dev`/`ino`: its
/// `lock:` lines are lines of `/proc/locks`.
fn fdinfo_has_flock(info: &str, pid: u32, dev: u64, ino: u64) -> bool {
    let locks = info.lines().filter_map(|l| l.strip_prefix("lock:"));
    flock_pid(locks, dev, ino).is_some_and(|p| u32::try_from(p) == Ok(pid))
}

/// The pid of the granted `FLOCK` on the file `dev`/`ino` among lines of `/proc/locks`. A
/// waiter's line (`1: -> FLOCK …`) names a process that does not hold the lock; the parser
/// reads it like the holder's, so it is left out first. A line the parser refuses is skipped.
fn flock_pid<'a>(lines: impl Iterator<Item = &'a str>, dev: u64, ino: u64) -> Option<i32> {
    let (maj, min) = (nix::sys::stat::major(dev), nix::sys::stat::minor(dev));
    lines
        .map(str::trim)
        .filter(|l| !l.split_whitespace().any(|w| w == "->"))
        .filter_map(|l| Locks::from_buf_read(l.as_bytes()).ok())
        .flat_map(|Locks(locks)| locks)
        .find(|l| {
            l.lock_type == LockType::FLock
                && u64::from(l.devmaj) == maj
                && u64::from(l.devmin) == min
                && l.inode == ino
        })
        .and_then(|l| l.pid)
}

/// Resident memory of a process in bytes (0 when it is gone).
#[must_use]
pub fn rss_bytes(pid: i32) -> u64 {
    let pages = read(format!("/proc/{pid}/statm"))
        .and_then(|t| StatM::from_read(t.as_slice()).ok())
        .map_or(0, |m| m.resident);
    let page = nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .and_then(|p| u64::try_from(p).ok())
        .unwrap_or(4096);
    pages * page
}

/// A process's CPU use over its life so far, in percent of one core: its user and system time
/// against the time since it started. One read, no sampling interval (`status` never sleeps).
#[must_use]
pub fn cpu_percent(pid: i32) -> Option<f32> {
    let k = kernel_stat(&read(format!("/proc/{pid}/stat"))?)?;
    #[allow(clippy::cast_precision_loss)]
    let (ticks, start) = ((k.utime + k.stime) as f64, k.starttime as f64);
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .map_or(100.0, |v| v as f64);
    let uptime = Uptime::from_read(read("/proc/uptime")?.as_slice())
        .ok()?
        .uptime;
    let alive = uptime - start / hz;
    #[allow(clippy::cast_possible_truncation)]
    (alive > 0.0).then(|| (ticks / hz / alive * 100.0) as f32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_with_spaces_and_parens() {
        // A line as the kernel writes it (52 fields), with a name holding spaces and parentheses.
        let line = "1234 (my (weird) cmd) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 \
                    98765 3133440 363 18446744073709551615 93899627565056 93899627584937 \
                    140728674144288 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 93899627600944 \
                    93899627602560 93900213530624 140728674151136 140728674151156 \
                    140728674151156 140728674152427 0\n";
        let s = parse_stat(line).unwrap();
        assert_eq!(
            (s.pid, s.ppid, s.pgrp, s.session, s.state),
            (1234, 1, 1234, 1234, 'S')
        );
        assert_eq!(s.start_ticks, 98765);
    }

    #[test]
    fn our_own_cpu_is_read_without_sampling() {
        let me = std::process::id().cast_signed();
        let begun = std::time::Instant::now();
        let mut x = 0u64;
        while begun.elapsed() < std::time::Duration::from_millis(50) {
            x = x.wrapping_add(1);
        }
        assert!(x > 0);
        let c = cpu_percent(me).unwrap();
        assert!((0.0..=200.0 * 64.0).contains(&c), "{c}");
        assert_eq!(cpu_percent(i32::MAX), None);
    }

    #[test]
    fn fdinfo_lock_lines_name_the_holder() {
        let dev = nix::sys::stat::makedev(0xfe, 0);
        let (ino, other) = (10_928_453, 1_092_845);
        let held = "pos:\t0\nflags:\t02100000\nmnt_id:\t30\nino:\t10928453\nlock:\t1: FLOCK  ADVISORY  WRITE 16584 fe:00:10928453 0 EOF\n";
        let waiting = "pos:\t0\nlock:\t1: FLOCK  ADVISORY  WRITE 16584 fe:00:10928453 0 EOF\nlock:\t1: -> FLOCK  ADVISORY  WRITE 99 fe:00:10928453 0 EOF\n";
        let posix = "lock:\t1: POSIX  ADVISORY  WRITE 16584 fe:00:10928453 0 EOF\n";
        for (info, pid, file, want) in [
            (held, 16584, ino, true),
            (held, 1658, ino, false),
            (held, 16584, other, false),
            (waiting, 99, ino, false),
            (posix, 16584, ino, false),
            ("pos:\t0\n", 16584, ino, false),
            ("lock:\t1: FLOCK garbled\n", 16584, ino, false),
        ] {
            assert_eq!(
                fdinfo_has_flock(info, pid, dev, file),
                want,
                "{pid} {file} in {info:?}"
            );
        }
    }

    #[test]
    fn a_flock_we_hold_is_found_through_our_own_open_files() {
        use std::os::unix::fs::MetadataExt;
        let d = tempfile::tempdir().unwrap();
        let (held, free) = (d.path().join("held"), d.path().join("free"));
        let f = std::fs::File::create(&held).unwrap();
        let _open = std::fs::File::create(&free).unwrap();
        f.lock().unwrap();
        let me = std::process::id();
        let id = |p: &std::path::Path| {
            let m = std::fs::metadata(p).unwrap();
            (m.dev(), m.ino())
        };
        let ((hd, hi), (fd, fi)) = (id(&held), id(&free));
        assert!(holds_flock(me, hd, hi));
        assert!(!holds_flock(me, fd, fi), "open but not locked");
        assert!(!holds_flock(u32::MAX, hd, hi));
        drop(f);
        assert!(!holds_flock(me, hd, hi), "closed");
    }

    #[test]
    fn our_own_memory_is_measured() {
        let me = std::process::id().cast_signed();
        assert!(rss_bytes(me) > 1 << 20);
        assert_eq!(rss_bytes(i32::MAX), 0);
    }

    #[test]
    fn the_family_holds_our_children_and_theirs() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & wait"])
            .spawn()
            .unwrap();
        let pid = child.id().cast_signed();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut grandchild = None;
        while grandchild.is_none() && std::time::Instant::now() < deadline {
            grandchild = family()
                .unwrap()
                .iter()
                .find(|s| s.ppid == pid)
                .map(|s| s.pid);
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let family = family().unwrap();
        if let Some(g) = grandchild {
            nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(g),
                nix::sys::signal::Signal::SIGKILL,
            )
            .ok();
        }
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(
            family
                .iter()
                .any(|s| s.pid == std::process::id().cast_signed())
        );
        assert!(family.iter().any(|s| s.pid == pid));
        // The shell's own child is found by following the shell's list.
        assert!(grandchild.is_some(), "{family:?}");
    }

    #[test]
    fn reads_ourselves() {
        let me = std::process::id().cast_signed();
        let s = stat(me).expect("own stat");
        assert!(s.is_running());
        assert_eq!(s.pid, me);
    }

    #[test]
    fn the_kernel_names_the_holder_of_a_lock() {
        let locks = "1: POSIX  ADVISORY  WRITE 10 fe:00:42 0 EOF\n\
                     2: FLOCK  ADVISORY  WRITE 77 fe:00:42 0 EOF\n\
                     2: -> FLOCK  ADVISORY  WRITE 78 fe:00:42 0 EOF\n";
        let dev = nix::sys::stat::makedev(0xfe, 0);
        assert_eq!(flock_pid(locks.lines(), dev, 42), Some(77));
        assert_eq!(flock_pid(locks.lines(), dev, 43), None);
        let other = nix::sys::stat::makedev(0xfe, 1);
        assert_eq!(flock_pid(locks.lines(), other, 42), None);
        // A waiter listed before the holder (as a garbled or reordered text could) is no holder.
        let waiter_first = "2: -> FLOCK  ADVISORY  WRITE 78 fe:00:42 0 EOF\n\
                            2: FLOCK  ADVISORY  WRITE 77 fe:00:42 0 EOF\n";
        assert_eq!(flock_pid(waiter_first.lines(), dev, 42), Some(77));
    }

    #[test]
    fn garbage_does_not_parse() {
        for text in [
            "",
            "12 (x) S",
            "(x) S 1 2 3",
            "  (x) S 1 2 3",
            "1 (x)",
            "1 (x)   ",
            "1é(x) S 1 2 3",
            "1 (x)é S 1 2",
            "1 (x",
            "1 x) S",
            ")( 1",
        ] {
            assert!(parse_stat(text).is_none(), "{text:?}");
        }
    }
}
