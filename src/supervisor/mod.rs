//! Running a loop: in this process (`--foreground`) or detached as a daemon (its own session, no
//! terminal, stdin from /dev/null, output to `wiggum/daemon.log`). Either way the supervisor holds
//! the loop's lock for its whole life, is a child subreaper, and turns SIGTERM/SIGINT into a
//! graceful stop (the second one forces). `detach`, `signals` and `logging` are its parts;
//! `remote` runs a loop whose state is a git branch (a Kubernetes Job's pod). May import `ralph`
//! and everything below it.

pub mod control;
pub mod delegation;
mod detach;
mod finish;
mod logging;
pub mod remote;
mod signals;
pub mod spawn_self;

use std::time::Duration;

use tokio::sync::watch;

pub use detach::{Ready, detach, wait_until_ready};

use crate::agent::kill;
use crate::agent::process::{DAEMON_ENV, HARNESS_ENV, StopLevel};
use crate::config;
use crate::disk::lock;
use crate::disk::state::Step;
use crate::error::{Error, Result};
use crate::ralph::start::{self, Prepared, StartOpts};

pub(crate) fn check_not_running(p: &Prepared) -> Result<()> {
    if let Some(h) = lock::find(&p.home, &p.layout)? {
        return Err(Error::AlreadyRunning(lock::already(
            &p.topic,
            &h,
            &p.layout.lock(),
        )));
    }
    Ok(())
}

/// Keep `wiggum/.lock` in place while the loop runs: an agent that deletes, replaces or
/// garbles it finds it back within a second (the home lock is what keeps others out).
fn watch_lock(mut guard: lock::Guard) {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            match guard.ensure() {
                Ok(true) => tracing::warn!(
                    "{} was deleted, replaced or garbled; re-established",
                    guard.path().display()
                ),
                Ok(false) => {}
                Err(e) => tracing::error!("{e}"),
            }
        }
    });
}

/// Say what `start` found, and keep a copy of the user's uncommitted work before any agent runs.
pub(crate) fn print_notes(p: &Prepared) -> Result<()> {
    eprintln!("{}", p.harness.sandbox);
    if p.new_repository {
        eprintln!(
            "note: {} is in no git repository; the loop makes one there (git init) and commits each accepted iteration to it",
            p.layout.root().display()
        );
    }
    eprintln!("{}", awake_line(p.settings.defaults.keep_awake));
    for n in &p.notes {
        eprintln!("warning: {n}");
    }
    let days = p.settings.defaults.keep_days;
    let gone = crate::disk::kept::prune(&p.home, &p.topic, chrono::Utc::now(), days)?;
    if !gone.is_empty() {
        eprintln!(
            "note: removed {} kept cop{} older than {days} days ([defaults] keep_days): {}",
            gone.len(),
            if gone.len() == 1 { "y" } else { "ies" },
            gone.iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if let Some(n) = crate::ralph::theirs::keep(&p.work_root, &p.at_risk, &p.home, &p.topic)? {
        eprintln!("note: {n}");
    }
    Ok(())
}

/// Whether idle sleep will be held off while agents run, asked once at start.
fn awake_line(enabled: bool) -> String {
    let probed = if enabled {
        crate::sys::awake::probe()
    } else {
        Ok(())
    };
    crate::sys::awake::line(enabled, &probed)
}

/// The ceiling of libgit2's object cache in the supervisor, and the largest tree it keeps.
const GIT_CACHE_BYTES: usize = 8 << 20;
const GIT_CACHE_TREE_BYTES: usize = 64 << 10;

/// Run the loop in this process. Returns the exit code.
pub fn run_foreground(opts: &StartOpts, verbose: bool) -> Result<i32> {
    crate::sys::kernel::keep_freed_heap();
    crate::sys::kernel::bounded_git_cache(GIT_CACHE_BYTES, GIT_CACHE_TREE_BYTES);
    // Not dumpable: no process of the same user (an agent with the sandbox off, say) reads the
    // supervisor's environment or memory through /proc or ptrace; as root, the agents run with
    // no capability to override it.
    #[cfg(target_os = "linux")]
    if let Err(e) = nix::sys::prctl::set_dumpable(false) {
        tracing::warn!("cannot make the supervisor undumpable: {e}");
    }
    let home = config::home_dir()?;
    let daemonized = std::env::var_os(DAEMON_ENV).is_some();
    let mut opts = opts.clone();
    if daemonized {
        opts.probed = std::env::var(HARNESS_ENV)
            .ok()
            .and_then(|j| serde_json::from_str(&j).ok());
    }
    // A daemon takes its locks before anything else: the `start` that detached it checked
    // everything it is about to read again, and waits for exactly this.
    let early = if daemonized {
        Some(lock_early(&opts, &home)?)
    } else {
        None
    };
    let p = start::prepare(&opts, &home)?;
    match &early {
        Some(g) if g.0.path() != lock::home_lock(&p.home, p.layout.root()) => {
            return Err(Error::runtime(format!(
                "the artifact directory moved while the daemon started ({})",
                p.layout.root().display()
            )));
        }
        Some(_) => {}
        None => check_not_running(&p)?,
    }
    if !daemonized {
        print_notes(&p)?;
        // A daemon's files were written by the `start` that detached it, a moment ago, and its
        // log rotated before its output was pointed at it.
        start::init(&p)?;
        detach::rotate_log(&p.layout.daemon_log())?;
    }
    logging::init(&p.layout, daemonized, verbose)?;
    // People read progress lines: on stdout here, in daemon.log when detached.
    crate::ralph::progress::init(!daemonized, p.settings.defaults.max_iterations);
    crate::sys::runtime::runtime()?.block_on(serve(p, early))
}

/// The home lock and `wiggum/.lock` of the loop a daemon's arguments name (its `start` passes
/// the artifact directory as an absolute path).
fn lock_early(opts: &StartOpts, home: &std::path::Path) -> Result<(lock::Guard, lock::Guard)> {
    let given = opts
        .artifact_path
        .as_ref()
        .ok_or_else(|| Error::input("--artifact-path is required"))?;
    let root = given
        .canonicalize()
        .map_err(|e| Error::input(format!("--artifact-path {}: {e}", given.display())))?;
    take_locks(
        home,
        &crate::disk::layout::Layout::for_loop(home, root),
        &opts.topic,
    )
}

/// The loop's two locks, the home one (the one that counts) first.
fn take_locks(
    home: &std::path::Path,
    layout: &crate::disk::layout::Layout,
    topic: &str,
) -> Result<(lock::Guard, lock::Guard)> {
    let home_lock = lock::acquire(&lock::home_lock(home, layout.root()), topic)?;
    Ok((home_lock, lock::acquire(&layout.lock(), topic)?))
}

/// A watcher beside the supervisor (outside every run's cgroup) that, within a fifth of a
/// second of the supervisor dying outright, kills its runs' cgroups where there are cgroups,
/// and the running agent's tree the state names where the kernel has no parent-death signal
/// for it (macOS). It exits by itself once the supervisor is gone; its environment is empty
/// (it needs nothing of ours).
fn spawn_cgroup_watcher(limit_secs: u64, state: &std::path::Path) -> Option<std::process::Child> {
    let base = crate::sys::cgroup::base();
    let orphans_need_it = !cfg!(target_os = "linux");
    if base.is_none() && !orphans_need_it {
        return None;
    }
    let exe = spawn_self::own_exe().ok()?;
    let mut cmd = std::process::Command::new(exe);
    cmd.args([
        "cgroup-watch",
        "--parent",
        &std::process::id().to_string(),
        "--limit-secs",
        &limit_secs.to_string(),
    ]);
    if let Some(base) = base {
        cmd.arg("--base").arg(base);
    }
    if orphans_need_it {
        cmd.arg("--state").arg(state);
    }
    cmd.env_clear()
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| tracing::warn!("cannot start the cgroup watcher: {e}"))
        .ok()
}

async fn serve(p: Prepared, early: Option<(lock::Guard, lock::Guard)>) -> Result<i32> {
    let (_home, artifact_lock) = match early {
        Some(locks) => locks,
        None => take_locks(&p.home, &p.layout, &p.topic)?,
    };
    watch_lock(artifact_lock);
    kill::become_supervisor();
    // While the supervisor is stopped, the watcher keeps a run's wall limit (and its grace).
    let s = &p.settings.safety;
    let _watcher = spawn_cgroup_watcher(
        s.max_time_per_iteration
            .saturating_add(s.kill_grace_secs)
            .saturating_add(2),
        &p.layout.state(),
    );
    let (tx, rx) = watch::channel(StopLevel::None);
    signals::spawn_handler(tx, Some(p.layout.requests()))?;
    let finishing = p.settings.finish.clone();
    let mut lp = start::open(p, rx).await?;
    let reason = match lp.run().await {
        Ok(r) => r,
        Err(e) => {
            let root = lp.runner.layout.root().to_path_buf();
            if !root.is_dir() {
                // Moved or deleted while the loop ran: whatever failed, that is why; nothing
                // is recreated at the old place (`status` shows the loop `missing`).
                return Err(Error::runtime(format!(
                    "the loop's directory went away while it ran: {}",
                    crate::disk::handle::gone(&lp.runner.topic, &root)
                )));
            }
            // The loop's own error is the one to report; a refused step or a failed save is
            // logged beside it.
            let failed = lp
                .runner
                .state
                .step(Step::Fail(e.to_string()), chrono::Utc::now());
            if let Err(save) = failed.and_then(|()| lp.runner.save()) {
                tracing::error!("{save}");
            }
            discard_spares(&lp.runner.layout);
            return Err(e);
        }
    };
    kill::reap_adopted();
    if finish::wanted(&finishing, reason) {
        finish::pull_request(&lp.runner.topic).await;
    }
    discard_spares(&lp.runner.layout);
    let interrupted = signals::INTERRUPTED.load(std::sync::atomic::Ordering::Relaxed);
    Ok(match reason.ending() {
        crate::disk::state::Ending::Failed => 1,
        // Ctrl-C in the foreground: a clean stop, reported as an interrupt (128 + SIGINT).
        _ if interrupted && reason == crate::disk::state::StopReason::UserStop => 130,
        _ => 0,
    })
}

/// The loop is done saving: the spares beside its state, its spend and its run records go
/// (`sys::spare`), and the plan's copy when no attempt holds it.
fn discard_spares(layout: &crate::disk::layout::Layout) {
    crate::sys::spare::discard(&layout.state());
    crate::ralph::original::discard(layout);
    crate::ralph::guard::persist::discard(layout.records());
    crate::ralph::attempt_plan::discard(layout);
    crate::sys::spare::discard(&layout.spend());
}
