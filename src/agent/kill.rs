//! Kill-tree: every process an agent started dies with its run. Two nets catch them: the agent's
//! process group (it is a session leader), and an environment token every descendant inherits,
//! which also finds helpers that `setsid` away. The supervisor is a child subreaper, so orphans
//! are reparented to it and reaped here rather than lingering as zombies.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;

use nix::sys::signal::{Signal, kill, killpg};
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::Pid;

use crate::sys::procs::{self, Stat};

/// The environment variable carrying the per-run token.
pub const TOKEN_VAR: &str = "STUDIO_AGENTS_RUN";

/// Pids of children spawned and awaited through tokio: the adopted-orphan reaper leaves them be.
static MANAGED: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

/// Mark a pid as awaited by its owner.
pub fn manage(pid: i32) {
    if let Ok(mut m) = MANAGED.lock() {
        m.insert(pid);
    }
}

/// The owner has reaped it.
pub fn unmanage(pid: i32) {
    if let Ok(mut m) = MANAGED.lock() {
        m.remove(&pid);
    }
}

/// Become a child subreaper (Linux), so orphaned descendants are reparented to us.
pub fn become_subreaper() {
    #[cfg(target_os = "linux")]
    if let Err(e) = nix::sys::prctl::set_child_subreaper(true) {
        tracing::warn!("cannot become a child subreaper: {e}; orphans go to init");
    }
}

/// Everything still running that belongs to the run: members of `pgid` and token holders.
#[must_use]
pub fn survivors(pgid: i32, token: &str) -> Vec<Stat> {
    let me = std::process::id().cast_signed();
    let mut seen = BTreeSet::new();
    procs::group_members(pgid)
        .into_iter()
        .chain(procs::with_env(TOKEN_VAR, token))
        .filter(|s| s.pid != me && seen.insert(s.pid))
        .collect()
}

/// Send `sig` to the group and to every token holder (and its own group, when it left ours).
pub fn signal_all(pgid: i32, token: &str, sig: Signal) -> usize {
    let me_pgrp = procs::stat(std::process::id().cast_signed()).map(|s| s.pgrp);
    // ESRCH (the group is already gone) is what we want: not an error.
    let _gone = killpg(Pid::from_raw(pgid), sig);
    let holders = procs::with_env(TOKEN_VAR, token);
    for s in &holders {
        let _gone = kill(Pid::from_raw(s.pid), sig);
        if s.pgrp != pgid && Some(s.pgrp) != me_pgrp && s.pgrp > 1 {
            let _gone = killpg(Pid::from_raw(s.pgrp), sig);
        }
    }
    holders.len()
}

/// Reap zombies that were reparented to us (never a child someone else awaits). Agent trees
/// run in sessions of their own, so a zombie child in our own session is a direct child that
/// its spawner will wait for: it is left alone.
pub fn reap_adopted() {
    let me = std::process::id().cast_signed();
    let my_session = procs::stat(me).map(|s| s.session);
    let managed = MANAGED.lock().map(|m| m.clone()).unwrap_or_default();
    for c in procs::children_of(me) {
        if !c.is_running() && !managed.contains(&c.pid) && Some(c.session) != my_session {
            let _reaped = waitpid(Pid::from_raw(c.pid), Some(WaitPidFlag::WNOHANG));
        }
    }
}

/// SIGTERM everything of the run, wait up to `grace` (polling, reaping as it goes; `force`
/// cuts the wait short), then SIGKILL what is left and wait for it to be gone.
/// Returns the pids that needed SIGKILL.
pub async fn terminate(
    pgid: i32,
    token: &str,
    grace: Duration,
    mut force: impl FnMut() -> bool,
) -> Vec<i32> {
    if survivors(pgid, token).is_empty() {
        reap_adopted();
        return Vec::new();
    }
    signal_all(pgid, token, Signal::SIGTERM);
    let deadline = tokio::time::Instant::now() + grace;
    // An agent that obeys TERM is gone within milliseconds: look again soon, then less often.
    let mut pause = Duration::from_millis(1);
    loop {
        reap_adopted();
        if survivors(pgid, token).is_empty() {
            return Vec::new();
        }
        if force() || tokio::time::Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(25));
    }
    let killed: Vec<i32> = survivors(pgid, token).iter().map(|s| s.pid).collect();
    tracing::warn!("SIGKILL after {grace:?} grace: {killed:?}");
    let hard = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        signal_all(pgid, token, Signal::SIGKILL);
        reap_adopted();
        if survivors(pgid, token).is_empty() || tokio::time::Instant::now() >= hard {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    killed
}
