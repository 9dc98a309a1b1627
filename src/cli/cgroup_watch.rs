//! `studio-agents cgroup-watch --parent PID [--base PATH] [--state PATH]` (hidden): started by
//! a loop's supervisor beside it, outside every run's cgroup. When the supervisor dies outright
//! (`kill -9`, the OOM killer) the agent's leader dies with it on Linux (the parent-death
//! signal), but what the run started elsewhere in its group would live on until the next
//! `start`; this watcher sees its parent gone within a fifth of a second (it polls its parent:
//! the same on every platform) and kills every group of the loop's runs (`--base`), and the
//! running agent's whole tree the state names, by process group and token (`--state`: where
//! there are no cgroups and no parent-death signal, as on macOS). It exits when the supervisor
//! stops it at the loop's end.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

/// Flags of `cgroup-watch`.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// The supervisor's pid.
    #[arg(long)]
    pub parent: i32,
    /// The cgroup directory the supervisor makes its runs' groups in.
    #[arg(long)]
    pub base: Option<PathBuf>,
    /// The loop's `state.json`: its running agent (process group and token) is stopped.
    #[arg(long)]
    pub state: Option<PathBuf>,
    /// A run's wall limit, in seconds: while the supervisor is stopped (SIGSTOP, Ctrl-Z), the
    /// watcher keeps it (0: none).
    #[arg(long, default_value_t = 0)]
    pub limit_secs: u64,
}

/// The groups of the supervisor `parent`'s runs under `base`:
/// `studio-agents-<topic>-<n>-<its pid>-<nanos>`.
fn groups(base: &std::path::Path, parent: i32) -> Vec<PathBuf> {
    let pid = parent.to_string();
    std::fs::read_dir(base)
        .map(|rd| {
            rd.flatten()
                .filter(|e| {
                    let name = e.file_name().to_string_lossy().to_string();
                    name.starts_with("studio-agents-")
                        && name.rsplit('-').nth(1) == Some(pid.as_str())
                })
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `pid` is stopped (`T`, or `t` under a tracer).
fn stopped(pid: i32) -> bool {
    crate::sys::procs::stat(pid).is_some_and(|s| s.state == 'T' || s.state == 't')
}

/// Watch; returns once the parent is gone and its groups are killed.
pub fn run(a: &WatchArgs) -> i32 {
    while nix::unistd::getppid().as_raw() == a.parent {
        std::thread::sleep(Duration::from_millis(200));
        if a.limit_secs > 0 && stopped(a.parent) {
            // The supervisor cannot keep its runs' limits while stopped: the watcher does.
            for g in a.base.iter().flat_map(|b| groups(b, a.parent)) {
                let age = std::fs::metadata(&g)
                    .and_then(|m| m.created().or_else(|_| m.modified()))
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .unwrap_or_default();
                if age > Duration::from_secs(a.limit_secs) {
                    crate::sys::cgroup::kill_and_remove(&g, Duration::from_secs(2));
                }
            }
        }
    }
    for g in a.base.iter().flat_map(|b| groups(b, a.parent)) {
        crate::sys::cgroup::kill_and_remove(&g, Duration::from_secs(2));
    }
    if let Some(path) = &a.state {
        stop_the_agent(path);
    }
    0
}

/// Stop the agent run `state.json` names (its group and what carries its token), as a `start`
/// after a crash does.
fn stop_the_agent(path: &std::path::Path) {
    let Some(run) = crate::disk::state::read(path)
        .ok()
        .flatten()
        .and_then(|s| s.agent_run().cloned())
    else {
        return;
    };
    let (Some(pgid), Ok(rt)) = (run.pgid, crate::sys::runtime::runtime()) else {
        return;
    };
    rt.block_on(crate::agent::kill::terminate(
        pgid,
        &run.token,
        Duration::from_secs(2),
        || false,
        std::future::pending(),
        || {},
    ));
}
