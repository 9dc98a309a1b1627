//! Kill-tree: every process an agent started dies with its run. Two nets catch them: the agent's
//! process group (it is a session leader), and an environment token every descendant inherits,
//! which also finds helpers that `setsid` away. The supervisor is a child subreaper, so orphans
//! are reparented to it and reaped here rather than lingering as zombies. Every check reads
//! `/proc` once: the group's members, the token holders among our own descendants (as a
//! subreaper, every escaped helper is one) and the zombies to reap all come from that one pass
//! — for a run of ours, a pass over our descendants alone, following the kernel's `children`
//! lists.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
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

/// Whether we are a child subreaper: then every process that escaped an agent's group stays
/// among our descendants, and only they need their environment read for the token.
static SUBREAPER: AtomicBool = AtomicBool::new(false);

/// Become a child subreaper (Linux), so orphaned descendants are reparented to us; and turn
/// core dumps off for us and every process we start (a dump of an agent holds its secrets).
pub fn become_supervisor() {
    if let Err(e) = nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_CORE, 0, 0) {
        tracing::warn!("cannot turn core dumps off: {e}");
    }
    #[cfg(target_os = "linux")]
    match nix::sys::prctl::set_child_subreaper(true) {
        Ok(()) => SUBREAPER.store(true, Ordering::Relaxed),
        Err(e) => tracing::warn!("cannot become a child subreaper: {e}; orphans go to init"),
    }
}

/// Pids descending from `root` (not `root` itself), from one reading of the process table.
#[must_use]
pub fn descendants(all: &[Stat], root: i32) -> BTreeSet<i32> {
    let mut out = BTreeSet::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for s in all.iter().filter(|s| s.ppid == parent) {
            if out.insert(s.pid) {
                frontier.push(s.pid);
            }
        }
    }
    out
}

/// Whether `pgid` is a run this process started and we are a subreaper: then every member and
/// escaped helper of it is one of our descendants.
fn is_ours(pgid: i32) -> bool {
    SUBREAPER.load(Ordering::Relaxed) && MANAGED.lock().is_ok_and(|m| m.contains(&pgid))
}

/// The run's processes still running in one reading of the process table: members of `pgid`,
/// and token holders — among our descendants when the run is ours (its escaped helpers cannot
/// be anywhere else), anywhere for a run a dead supervisor left.
fn survivors_in(all: &[Stat], pgid: i32, token: &str) -> Vec<Stat> {
    let me = std::process::id().cast_signed();
    let ours = is_ours(pgid).then(|| descendants(all, me));
    all.iter()
        .filter(|s| s.pid != me && s.is_running())
        .filter(|s| {
            s.pgrp == pgid
                || (ours.as_ref().is_none_or(|o| o.contains(&s.pid))
                    && procs::has_env(s.pid, TOKEN_VAR, token))
        })
        .copied()
        .collect()
}

/// One reading of the processes that can belong to the run `pgid`: for a run of ours, our own
/// descendants (following the kernel's `children` lists is a few reads instead of every
/// process in `/proc`), else every process.
fn reading(pgid: i32) -> Vec<Stat> {
    is_ours(pgid)
        .then(procs::family)
        .flatten()
        .unwrap_or_else(procs::all)
}

/// Everything still running that belongs to the run: members of `pgid` and token holders.
#[must_use]
pub fn survivors(pgid: i32, token: &str) -> Vec<Stat> {
    survivors_in(&reading(pgid), pgid, token)
}

/// SIGKILL every running process that carries `token` in its environment (what a dead
/// supervisor's run left, where its process group cannot be trusted); returns their pids.
pub fn kill_token_holders(token: &str) -> Vec<i32> {
    let holders: Vec<i32> = procs::all()
        .iter()
        .filter(|s| s.is_running() && procs::has_env(s.pid, TOKEN_VAR, token))
        .map(|s| s.pid)
        .collect();
    for pid in &holders {
        let _gone = kill(Pid::from_raw(*pid), Signal::SIGKILL);
    }
    holders
}

/// Send `sig` to the group and to every token holder (and its own group, when it left ours).
pub fn signal_all(pgid: i32, token: &str, sig: Signal) -> usize {
    // ESRCH (the group is already gone) is what we want: not an error.
    let _gone = killpg(Pid::from_raw(pgid), sig);
    signal_escaped(pgid, token, sig)
}

/// Send `sig` to the token holders that left the group `pgid` (and to their own groups).
fn signal_escaped(pgid: i32, token: &str, sig: Signal) -> usize {
    let all = reading(pgid);
    let me_pgrp = all
        .iter()
        .find(|s| s.pid == std::process::id().cast_signed())
        .map(|s| s.pgrp);
    let holders: Vec<Stat> = survivors_in(&all, pgid, token)
        .into_iter()
        .filter(|s| s.pgrp != pgid)
        .collect();
    for s in &holders {
        let _gone = kill(Pid::from_raw(s.pid), sig);
        if Some(s.pgrp) != me_pgrp && s.pgrp > 1 {
            let _gone = killpg(Pid::from_raw(s.pgrp), sig);
        }
        if sig == Signal::SIGTERM {
            let _continued = kill(Pid::from_raw(s.pid), Signal::SIGCONT);
        }
    }
    holders.len()
}

/// Reap zombies that were reparented to us (never a child someone else awaits). Agent trees
/// run in sessions of their own, so a zombie child in our own session is a direct child that
/// its spawner will wait for: it is left alone.
pub fn reap_adopted() {
    // Only our direct children can be reaped: our own family is all there is to read.
    reap_in(&procs::family().unwrap_or_else(procs::all));
}

fn reap_in(all: &[Stat]) {
    let me = std::process::id().cast_signed();
    let my_session = all.iter().find(|s| s.pid == me).map(|s| s.session);
    let managed = MANAGED.lock().map(|m| m.clone()).unwrap_or_default();
    for c in all.iter().filter(|s| s.ppid == me) {
        if !c.is_running() && !managed.contains(&c.pid) && Some(c.session) != my_session {
            let _reaped = waitpid(Pid::from_raw(c.pid), Some(WaitPidFlag::WNOHANG));
        }
    }
}

/// Whether anything of the run still runs; reaps what was adopted. A group whose leader still
/// runs answers without reading the process table; otherwise one reading finds the members,
/// the token holders that left the group and the zombies to reap.
fn settled(pgid: i32, token: &str) -> bool {
    if killpg(Pid::from_raw(pgid), None).is_ok()
        && procs::stat(pgid).is_some_and(|s| s.is_running())
    {
        return false;
    }
    let all = reading(pgid);
    reap_in(&all);
    survivors_in(&all, pgid, token).is_empty()
}

/// SIGTERM everything of the run (once), wait up to `grace` — waking at once when
/// `leader_exit` completes (the caller's wait on the group leader: an agent that obeys TERM is
/// seen gone the moment it is), else looking again after 1, 2, 4 … 25 ms for the rest of the
/// group, reaping as it goes; `force` cuts the wait short — then SIGKILL what is left and wait
/// for it to be gone. `signalled` runs once the group has its SIGTERM (the caller records the
/// stop there, so no write stands between a stop and the signal). Returns the pids that needed
/// SIGKILL.
pub async fn terminate(
    pgid: i32,
    token: &str,
    grace: Duration,
    mut force: impl FnMut() -> bool,
    leader_exit: impl std::future::Future<Output = ()>,
    signalled: impl FnOnce(),
) -> Vec<i32> {
    // The group first, before any reading of /proc: a stop takes effect at once. An empty
    // group (the agent exited and left nothing) is the common case: one reading confirms it.
    let sent = killpg(Pid::from_raw(pgid), Signal::SIGTERM);
    // A stopped member would hold the TERM pending until the grace ran out: continue it.
    let _continued = killpg(Pid::from_raw(pgid), Signal::SIGCONT);
    signalled();
    if sent.is_err() && settled(pgid, token) {
        return Vec::new();
    }
    signal_escaped(pgid, token, Signal::SIGTERM);
    let deadline = tokio::time::Instant::now() + grace;
    tokio::pin!(leader_exit);
    let mut leader_gone = false;
    let mut pause = Duration::from_millis(1);
    loop {
        if settled(pgid, token) {
            return Vec::new();
        }
        if force() || tokio::time::Instant::now() >= deadline {
            break;
        }
        let nap = tokio::time::sleep(pause);
        if leader_gone {
            nap.await;
        } else {
            tokio::select! {
                () = &mut leader_exit => leader_gone = true,
                () = nap => {}
            }
        }
        pause = (pause * 2).min(Duration::from_millis(25));
    }
    let killed: Vec<i32> = survivors(pgid, token).iter().map(|s| s.pid).collect();
    tracing::warn!("SIGKILL after {grace:?} grace: {killed:?}");
    let hard = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        signal_all(pgid, token, Signal::SIGKILL);
        if settled(pgid, token) || tokio::time::Instant::now() >= hard {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    killed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(pid: i32, ppid: i32) -> Stat {
        Stat {
            pid,
            ppid,
            pgrp: pid,
            session: pid,
            state: 'S',
            start_ticks: 0,
        }
    }

    #[test]
    fn descendants_follow_parents_to_any_depth_and_nothing_else() {
        // 10 ─ 11 ─ 12 ─ 13 (a setsid grandchild keeps its parent), 10 ─ 14 (adopted orphan);
        // 20 ─ 21 belong to someone else.
        let all = [
            st(10, 1),
            st(11, 10),
            st(12, 11),
            st(13, 12),
            st(14, 10),
            st(20, 1),
            st(21, 20),
        ];
        let cases: [(i32, &[i32]); 4] =
            [(10, &[11, 12, 13, 14]), (12, &[13]), (13, &[]), (20, &[21])];
        for (root, want) in cases {
            let got: Vec<i32> = descendants(&all, root).into_iter().collect();
            assert_eq!(got, want, "root {root}");
        }
    }

    #[test]
    fn a_cycle_in_a_torn_reading_does_not_loop() {
        // Pids are reused: a reading taken while processes come and go can hold a cycle.
        let all = [st(30, 31), st(31, 30)];
        assert_eq!(descendants(&all, 30).len(), 2);
    }
}
