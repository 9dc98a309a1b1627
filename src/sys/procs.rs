//! What the supervisor asks of the process table: which processes exist, their parent, group,
//! session, state and start time, whether they carry a given environment token, who holds a
//! lock, and an agent's CPU and memory. On Linux from `/proc` (`linux.rs`); on macOS from the
//! kernel's process info and `KERN_PROCARGS2` (`macos.rs`, through `sys::kernel`). A query the
//! platform cannot answer is empty (`None`, `false`), and callers fall back (a lock is probed,
//! a tree is found by group and token).

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub use linux::*;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
pub use macos::*;

/// What `/proc/<pid>/stat` says of a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// The process.
    pub pid: i32,
    /// Its parent.
    pub ppid: i32,
    /// Its process group.
    pub pgrp: i32,
    /// Its session.
    pub session: i32,
    /// The state letter (`R`, `S`, `Z`, ...).
    pub state: char,
    /// Start time in clock ticks since boot (identity together with the pid).
    pub start_ticks: u64,
}

impl Stat {
    /// Alive and not a zombie.
    #[must_use]
    pub fn is_running(&self) -> bool {
        self.state != 'Z' && self.state != 'X'
    }
}
