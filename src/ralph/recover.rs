//! Recovery after a supervisor died (kill -9, power loss): kill what its agent left running,
//! record the interrupted iteration, move its partial directory aside, and say where to resume.
//! Conservative, like pueue's restore: nothing half-done is trusted, nothing is deleted.

use chrono::Utc;

use crate::agent::kill;
use crate::disk::layout::Layout;
use crate::disk::runlog::{self, RunRecord};
use crate::disk::state::{self, Loaded, LoopState};
use crate::error::Result;
use crate::sys::fsutil;

/// The pid of the supervisor `s` names, when that very process still runs (its pid and start
/// time; a state an earlier version wrote has no start time: then a live process of ours with
/// that pid counts). Never this process.
fn live_supervisor(s: &LoopState) -> Option<u32> {
    if s.pid == 0 || s.pid == std::process::id() || !s.status().is_live() {
        return None;
    }
    let now = crate::sys::procs::stat(s.pid.cast_signed()).filter(|p| p.is_running())?;
    let same = match s.pid_start_ticks {
        Some(ticks) => ticks == now.start_ticks,
        None => crate::sys::procs::args(s.pid.cast_signed()).is_some_and(|a| {
            a.first().is_some_and(|p| {
                use std::os::unix::ffi::OsStrExt;
                std::path::Path::new(std::ffi::OsStr::from_bytes(p)).file_name()
                    == Some(std::ffi::OsStr::new("studio-agents"))
            })
        }),
    };
    same.then_some(s.pid)
}

/// Clean up after a dead predecessor: kill what its agent left, record the interrupted
/// iteration, discard its directory. Returns (previous state, last completed iteration).
pub async fn recover(layout: &Layout) -> Result<(Option<LoopState>, u32)> {
    // Temp files of writes a crash interrupted: their content never became the file's.
    for dir in [layout.wiggum(), layout.final_dir()] {
        let n = fsutil::remove_stale_temps(&dir)?;
        if n > 0 {
            tracing::warn!(
                "removed {n} temp file(s) of interrupted writes in {}",
                dir.display()
            );
        }
    }
    let prev = match state::load_for_start(&layout.state())? {
        Loaded::Ok(s) => Some(*s),
        Loaded::Missing => None,
        Loaded::MovedAside(to, why) => {
            tracing::warn!(
                "state.json did not parse ({why}); moved aside to {}",
                to.display()
            );
            eprintln!(
                "warning: state.json did not parse; kept as {}",
                to.display()
            );
            None
        }
    };
    // The previous run's supervisor may be alive: its lock files are the agent's to delete
    // (`wiggum/.lock`), and a start under another `$STUDIO_AGENTS_HOME` holds another home lock.
    // Its agent is killed only when it is verifiably gone.
    if let Some(s) = &prev
        && let Some(pid) = live_supervisor(s)
    {
        return Err(crate::error::Error::AlreadyRunning(format!(
            "loop `{}` on {} is still run by its supervisor (pid {pid}), though its lock file is gone (an agent may have deleted it) or it runs under another $STUDIO_AGENTS_HOME; stop it with `kill -TERM {pid}`, then start again",
            s.topic,
            layout.root().display()
        )));
    }
    if let Some(s) = &prev
        && let Some(run) = s.agent_run()
        && let (Some(pgid), token) = (run.pgid, run.token.clone())
    {
        let found: Vec<i32> = kill::survivors(pgid, &token)
            .iter()
            .map(|p| p.pid)
            .collect();
        if found.is_empty() {
            tracing::info!("nothing of the previous run's agent (group {pgid}) is left");
        } else {
            tracing::warn!(
                "stopping what the previous run left behind (group {pgid}): pids {found:?}"
            );
        }
        let left = kill::terminate(
            pgid,
            &token,
            std::time::Duration::from_secs(2),
            || false,
            std::future::pending(),
            || {},
        )
        .await;
        if !left.is_empty() {
            tracing::warn!("killed (SIGKILL) what ignored SIGTERM: pids {left:?}");
        }
    }
    // Before anything else reads the repository: what the protected files held before the
    // dead supervisor's last run, put back where that run changed them.
    let planted = super::guard::persist::restore_after_crash(layout.records())?;
    if !planted.is_empty() {
        let what = format!(
            "the run a dead supervisor left changed {}; restored",
            planted.join(", ")
        );
        tracing::warn!("{what}");
        eprintln!("warning: {what}");
    }
    // Its private temp dir too (its token is on disk before its spawn, its group only after),
    // and its cgroup with whatever escaped the nets above.
    if let Some(token) = prev
        .as_ref()
        .and_then(|s| s.agent_run())
        .map(|r| r.token.as_str())
        && !token.is_empty()
    {
        if let Some(base) = crate::sys::cgroup::base() {
            let left = crate::sys::cgroup::kill_and_remove(
                &crate::sys::cgroup::group_path(base, token),
                std::time::Duration::from_secs(2),
            );
            if !left.is_empty() {
                tracing::warn!("killed what was left in the previous run's cgroup: pids {left:?}");
            }
        }
        fsutil::remove_dir_all_opt(&crate::agent::launch::tmp_dir(token))?;
    }
    // The records' copy of the run log starts from the loop's own (which a stopped loop's
    // users may have kept, moved or trimmed).
    if layout.runs_copy() != layout.runs() {
        fsutil::create_dir_all(layout.records())?;
        if layout.runs().exists() {
            fsutil::copy_file(&layout.runs(), &layout.runs_copy())?;
        } else {
            fsutil::remove_file_opt(&layout.runs_copy())?;
        }
    }
    let runs = runlog::read(&layout.runs())?;
    let mut completed = runs
        .iter()
        .filter(|r| r.completes_iteration())
        .map(|r| r.iteration)
        .max()
        .unwrap_or(0);
    // Committed, but the supervisor died before its run record was written: not interrupted.
    if let Some((n, sha)) = crate::git::head_iteration(layout.root())
        && n > completed
    {
        runlog::record(layout, &RunRecord::recovered(n, Utc::now(), Some(sha)))?;
        completed = n;
    }
    let interrupted = prev
        .as_ref()
        .is_some_and(|s| s.status().is_live() && s.current_iteration > completed);
    if interrupted {
        // The plan goes back to what it was when the discarded attempt began.
        super::iteration::restore_plan(layout)?;
    } else {
        fsutil::remove_file_opt(&layout.plan_backup())?;
    }
    if let Some(s) = &prev
        && interrupted
    {
        let rec = RunRecord::recovered(s.current_iteration, s.updated_at, None);
        runlog::record(layout, &rec)?;
    }
    // Any iteration directory past the last completed one is a partial leftover.
    for n in completed + 1
        ..=prev
            .as_ref()
            .map_or(0, |s| s.current_iteration)
            .max(completed + 1)
    {
        super::iteration::move_aside(layout, n, "interrupted")?;
    }
    Ok((prev, completed))
}
