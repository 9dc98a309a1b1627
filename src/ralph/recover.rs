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
    // The state lay in the agent's reach: the process it names must be ours (our program) as
    // well as the same one (its start time), else a forged pid would have the user told to
    // kill some process of theirs.
    let ours = crate::sys::procs::args(s.pid.cast_signed()).is_some_and(|a| {
        a.first().is_some_and(|p| {
            use std::os::unix::ffi::OsStrExt;
            std::path::Path::new(std::ffi::OsStr::from_bytes(p)).file_name()
                == Some(std::ffi::OsStr::new("studio-agents"))
        })
    });
    let same = s
        .pid_start_ticks
        .is_none_or(|ticks| ticks == now.start_ticks);
    (ours && same).then_some(s.pid)
}

/// Clean up after a dead predecessor: kill what its agent left, record the interrupted
/// iteration, discard its directory. Returns (previous state, last completed iteration).
pub async fn recover(layout: &Layout) -> Result<(Option<LoopState>, u32)> {
    // The state first: a state.json that does not parse falls back on its spare (a temp file).
    let prev = previous_state(layout)?;
    remove_interrupted_writes(layout)?;
    refuse_a_live_supervisor(layout, prev.as_ref())?;
    stop_the_agent_left(prev.as_ref()).await;
    // Before anything else reads the repository: what the protected files held before the
    // dead supervisor's last run, put back where that run changed them.
    restore_what_was_planted(layout)?;
    remove_the_runs_leftovers(prev.as_ref())?;
    refresh_the_records_copy(layout)?;
    let completed = completed_iterations(layout)?;
    put_the_interrupted_iteration_aside(layout, prev.as_ref(), completed)?;
    Ok((prev, completed))
}

/// Temp files of writes a crash interrupted: their content never became the file's. And the
/// attempt's plan where an earlier version kept it, in the agent's reach: never read.
fn remove_interrupted_writes(layout: &Layout) -> Result<()> {
    let old = layout.old_plan_backup();
    if std::fs::symlink_metadata(&old).is_ok()
        && let Err(e) = fsutil::remove_dir_all_opt(&old)
    {
        tracing::warn!("{e}");
    }
    for dir in [layout.wiggum(), layout.final_dir()] {
        let n = fsutil::remove_stale_temps(&dir)?;
        if n > 0 {
            tracing::warn!(
                "removed {n} temp file(s) of interrupted writes in {}",
                dir.display()
            );
        }
    }
    Ok(())
}

/// The state the predecessor left; one that does not parse is moved aside (and said).
fn previous_state(layout: &Layout) -> Result<Option<LoopState>> {
    Ok(match state::load_for_start(&layout.state())? {
        Loaded::Ok(s) => Some(*s),
        Loaded::Missing => None,
        Loaded::Before(st, to, why) => {
            tracing::warn!(
                "state.json did not parse ({why}); moved aside to {}; the save before it is used",
                to.display()
            );
            eprintln!(
                "warning: state.json did not parse; kept as {}; the loop goes on from the save before it",
                to.display()
            );
            Some(*st)
        }
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
    })
}

/// The previous run's supervisor may be alive: its lock files are the agent's to delete
/// (`wiggum/.lock`), and a start under another `$STUDIO_AGENTS_HOME` holds another home lock.
/// Its agent is killed only when it is verifiably gone.
fn refuse_a_live_supervisor(layout: &Layout, prev: Option<&LoopState>) -> Result<()> {
    if let Some(s) = prev
        && let Some(pid) = live_supervisor(s)
    {
        return Err(crate::error::Error::AlreadyRunning(format!(
            "loop `{}` on {} is still run by its supervisor (pid {pid}), though its lock file is gone (an agent may have deleted it) or it runs under another $STUDIO_AGENTS_HOME; stop it with `kill -TERM {pid}`, then start again",
            s.topic,
            layout.root().display()
        )));
    }
    Ok(())
}

/// Stop what the dead supervisor's agent left running (its process group, by its token). The
/// state lay in the agent's reach: its group is taken for the run's only when a process in it
/// carries the run's token (one of this loop's), else only the token's holders are stopped —
/// never a group an agent named there.
async fn stop_the_agent_left(prev: Option<&LoopState>) {
    let Some((st, run)) = prev.and_then(|s| s.agent_run().map(|r| (s, r))) else {
        return;
    };
    let (Some(pgid), token) = (run.pgid, run.token.clone()) else {
        return;
    };
    if !token.starts_with(&format!("{}-", st.topic)) {
        tracing::warn!(
            "the previous run's token in state.json is not this loop's; nothing stopped"
        );
        return;
    }
    let holds = |pid: i32| crate::sys::procs::has_env(pid, kill::TOKEN_VAR, &token);
    let survivors = kill::survivors(pgid, &token);
    let ours = survivors.iter().any(|s| s.pgrp == pgid && holds(s.pid));
    if !ours {
        let holders = kill::kill_token_holders(&token);
        if !holders.is_empty() {
            tracing::warn!("stopped what the previous run left behind: pids {holders:?}");
        }
        return;
    }
    let found: Vec<i32> = survivors.iter().map(|p| p.pid).collect();
    if found.is_empty() {
        tracing::info!("nothing of the previous run's agent (group {pgid}) is left");
    } else {
        tracing::warn!("stopping what the previous run left behind (group {pgid}): pids {found:?}");
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

/// Put back the protected files the dead supervisor's last run changed, and say which.
fn restore_what_was_planted(layout: &Layout) -> Result<()> {
    let planted = super::guard::persist::restore_after_crash(layout.records())?;
    if !planted.is_empty() {
        let what = format!(
            "the run a dead supervisor left changed {}; restored",
            planted.join(", ")
        );
        tracing::warn!("{what}");
        eprintln!("warning: {what}");
    }
    Ok(())
}

/// The previous run's private temp dir (its token is on disk before its spawn, its group only
/// after), and its cgroup with whatever escaped the nets above.
fn remove_the_runs_leftovers(prev: Option<&LoopState>) -> Result<()> {
    let Some(token) = prev
        .and_then(LoopState::agent_run)
        .map(|r| r.token.as_str())
        .filter(|t| !t.is_empty())
    else {
        return Ok(());
    };
    if let Some(base) = crate::sys::cgroup::base() {
        let left = crate::sys::cgroup::kill_and_remove(
            &crate::sys::cgroup::group_path(base, token),
            std::time::Duration::from_secs(2),
        );
        if !left.is_empty() {
            tracing::warn!("killed what was left in the previous run's cgroup: pids {left:?}");
        }
    }
    fsutil::remove_dir_all_opt(&crate::agent::launch::tmp_dir(token))
}

/// The records' copy of the run log starts from the loop's own (which a stopped loop's users
/// may have kept, moved or trimmed).
fn refresh_the_records_copy(layout: &Layout) -> Result<()> {
    if layout.runs_copy() == layout.runs() {
        return Ok(());
    }
    fsutil::create_dir_all(layout.records())?;
    if layout.runs().exists() {
        fsutil::copy_file(&layout.runs(), &layout.runs_copy())
    } else {
        fsutil::remove_file_opt(&layout.runs_copy())
    }
}

/// The last iteration the run log or git shows completed; a commit whose run record the
/// supervisor died before writing is recorded now (it is not interrupted).
fn completed_iterations(layout: &Layout) -> Result<u32> {
    let runs = runlog::read(&layout.runs())?;
    let mut completed = runs
        .iter()
        .filter(|r| r.completes_iteration())
        .map(|r| r.iteration)
        .max()
        .unwrap_or(0);
    if let Some((n, sha)) = crate::git::head_iteration(layout.root())
        && n > completed
    {
        runlog::record(layout, &RunRecord::recovered(n, Utc::now(), Some(sha)))?;
        completed = n;
    }
    Ok(completed)
}

/// An iteration the predecessor was in when it died: the plan goes back to what it was when the
/// discarded attempt began, the interruption is recorded, and any iteration directory past the
/// last completed one is moved aside as a partial leftover.
fn put_the_interrupted_iteration_aside(
    layout: &Layout,
    prev: Option<&LoopState>,
    completed: u32,
) -> Result<()> {
    let interrupted = prev.filter(|s| s.status().is_live() && s.current_iteration > completed);
    if interrupted.is_some() {
        super::iteration::restore_plan(layout)?;
    } else {
        super::attempt_plan::forget(layout)?;
    }
    if let Some(s) = interrupted {
        let rec = RunRecord::recovered(s.current_iteration, s.updated_at, None);
        runlog::record(layout, &rec)?;
    }
    let last = prev.map_or(0, |s| s.current_iteration).max(completed + 1);
    for n in completed + 1..=last {
        super::iteration::move_aside(layout, n, "interrupted")?;
    }
    Ok(())
}
