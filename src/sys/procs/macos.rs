//! The process table on macOS: `proc_listallpids`/`proc_pidinfo` for a process's parent, group,
//! state, start time, memory and CPU, `getsid` for its session, `KERN_PROCARGS2` for its
//! environment (the calls themselves are `sys::kernel::darwin`'s). There is no lock table to
//! read: who holds a lock is answered by probing it (`disk::lock`), and a tree is followed from
//! the whole table (`family` is `None`).

use super::Stat;
use crate::sys::kernel::darwin;

/// The state letter of a BSD process status (`SIDL`…`SZOMB`), as `ps` shows it.
fn state_of(status: u32) -> char {
    match status {
        1 => 'I',
        2 => 'R',
        3 => 'S',
        4 => 'T',
        5 => 'Z',
        _ => '?',
    }
}

/// The stat of one process, if it exists. `start_ticks` is its start time in microseconds
/// since the epoch (with the pid, who it is).
#[must_use]
pub fn stat(pid: i32) -> Option<Stat> {
    let b = darwin::bsd_info(pid)?;
    let session = nix::unistd::getsid(Some(nix::unistd::Pid::from_raw(pid)))
        .map_or(0, nix::unistd::Pid::as_raw);
    Some(Stat {
        pid: b.pid,
        ppid: b.ppid,
        pgrp: b.pgid,
        session,
        state: state_of(b.status),
        start_ticks: b.start_us,
    })
}

/// Every process the kernel lists.
#[must_use]
pub fn all() -> Vec<Stat> {
    darwin::all_pids().into_iter().filter_map(stat).collect()
}

/// No per-process children lists here: callers read the whole table.
#[must_use]
pub fn family() -> Option<Vec<Stat>> {
    None
}

/// Whether the process's environment holds `KEY=value` exactly.
#[must_use]
pub fn has_env(pid: i32, key: &str, value: &str) -> bool {
    let Some(args) = darwin::procargs(pid) else {
        return false;
    };
    let want = format!("{key}={value}");
    crate::sys::procargs::environment(&args).any(|kv| kv == want.as_bytes())
}

/// The process's command line, one argument each (from `KERN_PROCARGS2`).
#[must_use]
pub fn args(pid: i32) -> Option<Vec<Vec<u8>>> {
    let buf = darwin::procargs(pid)?;
    Some(
        crate::sys::procargs::arguments(&buf)
            .map(<[u8]>::to_vec)
            .collect(),
    )
}

/// No lock table to read on macOS.
#[must_use]
pub fn flock_holder(_dev: u64, _ino: u64) -> Option<i32> {
    None
}

/// No per-descriptor lock listing on macOS: `false` (cannot tell).
#[must_use]
pub fn holds_flock(_pid: u32, _dev: u64, _ino: u64) -> bool {
    false
}

/// Resident memory of a process in bytes (0 when it is gone).
#[must_use]
pub fn rss_bytes(pid: i32) -> u64 {
    darwin::task_info(pid).map_or(0, |t| t.resident_bytes)
}

/// A process's CPU use over its life so far, in percent of one core.
#[must_use]
pub fn cpu_percent(pid: i32) -> Option<f32> {
    let b = darwin::bsd_info(pid)?;
    let t = darwin::task_info(pid)?;
    let now_us = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_micros();
    let alive_us = now_us.checked_sub(u128::from(b.start_us))?;
    #[allow(clippy::cast_precision_loss)]
    let (cpu, alive) = (t.cpu_nanos as f64 / 1000.0, alive_us as f64);
    #[allow(clippy::cast_possible_truncation)]
    (alive > 0.0).then(|| (cpu / alive * 100.0) as f32)
}
