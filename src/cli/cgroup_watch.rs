//! `studio-agents cgroup-watch --parent PID --base PATH` (hidden): started by a loop's
//! supervisor beside it, outside every run's cgroup. When the supervisor dies outright
//! (`kill -9`, the OOM killer) the agent's leader dies with it (the parent-death signal), but
//! what the run started elsewhere in its group would live on until the next `start`; this
//! watcher sees its parent gone within a fifth of a second and kills every group of the loop's
//! runs. It exits when the supervisor stops it at the loop's end.

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
    pub base: PathBuf,
}

/// Watch; returns once the parent is gone and its groups are killed.
pub fn run(a: &WatchArgs) -> i32 {
    while nix::unistd::getppid().as_raw() == a.parent {
        std::thread::sleep(Duration::from_millis(200));
    }
    // The supervisor's runs' groups: `studio-agents-<topic>-<n>-<its pid>-<nanos>`.
    let pid = a.parent.to_string();
    if let Ok(rd) = std::fs::read_dir(&a.base) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if name.starts_with("studio-agents-") && name.rsplit('-').nth(1) == Some(pid.as_str()) {
                crate::sys::cgroup::kill_and_remove(&e.path(), Duration::from_secs(2));
            }
        }
    }
    0
}
