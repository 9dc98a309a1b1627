//! `start` without `--foreground`: the same start re-run in a new session (no terminal, stdin
//! from `/dev/null`, working directory `/`, absolute paths), its output in `wiggum/daemon.log`;
//! returns once the daemon holds its lock.

use std::path::Path;
use std::time::{Duration, Instant};

use super::{DAEMON_ENV, HARNESS_ENV, check_not_running, print_notes};
use crate::config;
use crate::disk::lock;
use crate::error::{Error, IoContext, Result};
use crate::ralph::start::{self, StartOpts};

const LOG_ROTATE_BYTES: u64 = 5 * 1024 * 1024;

/// Keep `daemon.log` bounded: past the size, shift it to `.1` (… `.3`) before a new supervisor
/// (detached or in the foreground) starts writing to it.
pub(super) fn rotate_log(path: &Path) -> Result<()> {
    let big = std::fs::metadata(path).is_ok_and(|m| m.len() > LOG_ROTATE_BYTES);
    if !big {
        return Ok(());
    }
    for i in (1..3).rev() {
        let from = path.with_extension(format!("log.{i}"));
        if from.exists() {
            std::fs::rename(&from, path.with_extension(format!("log.{}", i + 1)))
                .at(&from, "rotate")?;
        }
    }
    std::fs::rename(path, path.with_extension("log.1")).at(path, "rotate")
}

/// The daemon's command line: the same start, with absolute paths, in the foreground.
fn child_args(o: &StartOpts, root: &Path) -> Result<Vec<String>> {
    let mut a: Vec<String> = vec!["wiggum".into(), "start".into(), o.topic.clone()];
    a.extend([
        "--artifact-path".into(),
        root.display().to_string(),
        "--foreground".into(),
    ]);
    let mut opt = |flag: &str, v: Option<String>| {
        if let Some(v) = v {
            a.push(flag.into());
            a.push(v);
        }
    };
    opt("--max-iterations", o.max_iterations.map(|v| v.to_string()));
    opt(
        "--quality-threshold",
        o.quality_threshold.map(|v| v.to_string()),
    );
    opt("--pass-threshold", o.pass_threshold.map(|v| v.to_string()));
    opt("--max-rounds", o.max_rounds.map(|v| v.to_string()));
    opt("--agent", o.agent.clone());
    opt("--agent-cmd", o.agent_cmd.clone());
    opt("--evaluator", o.evaluator.clone());
    opt("--type", o.kind.clone());
    let config = match &o.config {
        Some(c) => Some(
            std::path::absolute(c)
                .map_err(|e| Error::input(format!("--config {}: {e}", c.display())))?
                .display()
                .to_string(),
        ),
        None => None,
    };
    opt("--config", config);
    if o.panel {
        a.push("--panel".into());
    }
    if o.reset_breaker {
        a.push("--reset-breaker".into());
    }
    for cmd in &o.code.validate {
        a.extend(["--validate".into(), cmd.clone()]);
    }
    if o.code.no_validate {
        a.push("--no-validate".into());
    }
    for s in &o.code.spec {
        a.extend(["--spec".into(), s.display().to_string()]);
    }
    Ok(a)
}

/// Start the loop as a daemon and return once it holds its lock (within about a second).
/// Returns whether the settings ask to attach the live view (`auto_watch`, on a terminal).
pub fn detach(opts: &StartOpts) -> Result<bool> {
    let home = config::home_dir()?;
    let p = start::prepare(opts, &home)?;
    check_not_running(&p)?;
    print_notes(&p)?;
    start::init(&p)?;
    let log_path = p.layout.daemon_log();
    rotate_log(&log_path)?;
    let args = child_args(opts, p.layout.root())?;
    let probed = serde_json::to_string(&p.harness).unwrap_or_default();
    let env = [
        (DAEMON_ENV, std::ffi::OsStr::new("1")),
        (HARNESS_ENV, std::ffi::OsStr::new(&probed)),
        ("STUDIO_AGENTS_HOME", home.as_os_str()),
    ];
    let mut child = super::spawn_self::detached(&args, &env, &log_path, "the daemon")?;
    let pid = child.id();
    let spawned = Instant::now();
    let ready = wait_until_ready(
        child.as_mut(),
        &log_path,
        "the daemon",
        "take its lock",
        // Read, never probed: a probe takes the lock for a moment, and the daemon could meet it.
        // Where a process's open files cannot be read, after a second the probe it is.
        || {
            let home_lock = lock::home_lock(&p.home, p.layout.root());
            Ok(lock::held_by_pid(&home_lock, pid)
                || (spawned.elapsed() > Duration::from_secs(1)
                    && lock::find(&p.home, &p.layout)?.is_some_and(|h| h.pid == pid)))
        },
    )?;
    let ready = match ready {
        Ready::Running => first_step(child.as_mut(), &log_path, &p.layout.state())?,
        finished => finished,
    };
    let t = &p.topic;
    let sa = crate::ralph::progress::program(config::home_to_name().as_deref());
    if ready == Ready::Finished {
        // Nothing was left to do (an empty plan, a threshold already met …): it ended before
        // it was seen running.
        let st = crate::disk::state::read(&p.layout.state()).ok().flatten();
        println!(
            "loop `{t}` (pid {pid}) ended at once{}",
            ended_why(st.as_ref())
        );
        println!("  log:      {}", log_path.display());
        println!("  status:   {sa} wiggum status {t}");
        return Ok(false);
    }
    println!("started loop `{t}` (pid {pid})");
    println!("  artifact: {}", p.layout.root().display());
    println!("  log:      {}", log_path.display());
    println!("  watch:    {sa} wiggum watch {t}");
    println!("  status:   {sa} wiggum status {t}");
    println!("  stop:     {sa} wiggum stop {t}");
    Ok(p.settings.defaults.auto_watch && std::io::IsTerminal::is_terminal(&std::io::stdout()))
}

/// Why a loop that ended before it was seen running ended, from its saved state: `: status
/// (reason; detail)`, or nothing when there is no state to tell.
fn ended_why(st: Option<&crate::disk::state::LoopState>) -> String {
    st.map_or_else(String::new, |s| {
        let status = s.status().as_str();
        match (s.stop_reason(), s.stop_detail()) {
            (Some(r), Some(d)) => format!(": {status} ({}; {d})", r.as_str()),
            (Some(r), None) => format!(": {status} ({})", r.as_str()),
            _ => format!(": {status}"),
        }
    })
}

/// How long `start` waits, once the daemon holds its lock, for its first agent run to begin
/// before it calls the loop started: a loop with nothing left to do ends within moments, and is
/// then said to have ended at once.
const FIRST_STEP: Duration = Duration::from_secs(3);

/// After the lock: the daemon's first agent run begun (or the loop waiting, paused, stopping), or
/// [`FIRST_STEP`] gone by, is [`Ready::Running`]; the daemon ending well first is
/// [`Ready::Finished`], ending badly its error.
fn first_step(
    child: &mut dyn process_wrap::std::ChildWrapper,
    log: &Path,
    state: &Path,
) -> Result<Ready> {
    use crate::disk::phase::Status;
    let begun = || {
        Ok(crate::disk::state::read(state)
            .ok()
            .flatten()
            .is_some_and(|st| {
                st.agent_run().is_some()
                    || matches!(
                        st.status(),
                        Status::Paused | Status::Waiting | Status::Stopping
                    )
            }))
    };
    Ok(poll_child(child, log, "the daemon", FIRST_STEP, begun)?.unwrap_or(Ready::Running))
}

/// A detached child that exited before it was seen ready: [`Ready::Finished`] when it ended
/// well; else its own error — the last line it logged, as input error (2) or "already running"
/// (3) when its exit code says so.
fn exited(status: std::process::ExitStatus, log: &Path, who: &str) -> Result<Ready> {
    if status.success() {
        return Ok(Ready::Finished);
    }
    let last = crate::sys::fsutil::read_tail(log, 4096)?
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(str::to_string)
        .unwrap_or_default();
    let msg = last.trim_start_matches("error: ").to_string();
    Err(match status.code() {
        Some(2) => Error::input(msg),
        Some(3) => Error::AlreadyRunning(msg),
        _ => Error::runtime(format!("{who} exited at once ({status}): {msg}")),
    })
}

/// How a detached child's start ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ready {
    /// It is running and ready.
    Running,
    /// It exited successfully before it was seen ready: it had nothing (left) to do.
    Finished,
}

/// Wait for a detached `child` (writing to `log`) to be `ready`: looked at every millisecond for
/// the first 50, then every 2, 4 … 16 ms, for at most 10 s. A child that exits with success
/// first is [`Ready::Finished`]; one that fails ends the wait with its own error — the last line
/// it logged, as input error (2) or "already running" (3) when its exit code says so.
pub fn wait_until_ready(
    child: &mut dyn process_wrap::std::ChildWrapper,
    log: &Path,
    who: &str,
    what: &str,
    ready: impl FnMut() -> Result<bool>,
) -> Result<Ready> {
    match poll_child(child, log, who, Duration::from_secs(10), ready)? {
        Some(r) => Ok(r),
        None => Err(Error::runtime(format!(
            "{who} (pid {}) did not {what} within 10 s; see {}",
            child.id(),
            log.display()
        ))),
    }
}

/// Look at `child` until it exits ([`exited`]) or is `ready` ([`Ready::Running`]): every
/// millisecond for the first 50 (a daemon is ready within a few: a doubling pause would notice
/// it up to twice as late), then every 2, 4 … 16 ms. `None` when `within` went by first.
fn poll_child(
    child: &mut dyn process_wrap::std::ChildWrapper,
    log: &Path,
    who: &str,
    within: Duration,
    mut ready: impl FnMut() -> Result<bool>,
) -> Result<Option<Ready>> {
    let began = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        if let Some(status) = child
            .try_wait()
            .map_err(|e| Error::runtime(format!("{who}: {e}")))?
        {
            return exited(status, log, who).map(Some);
        }
        if ready()? {
            return Ok(Some(Ready::Running));
        }
        if began.elapsed() >= within {
            return Ok(None);
        }
        std::thread::sleep(pause); // allow: parent poll before exit
        if began.elapsed() > Duration::from_millis(50) {
            pause = (pause * 2).min(Duration::from_millis(16));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn child(script: &str, log: &Path) -> Box<dyn process_wrap::std::ChildWrapper> {
        let out = crate::sys::fsutil::open_append(log).unwrap();
        let mut cmd = process_wrap::std::CommandWrap::with_new("sh", |c| {
            c.args(["-c", script]).stderr(out);
        });
        cmd.wrap(process_wrap::std::ProcessSession);
        cmd.spawn().unwrap()
    }

    #[test]
    fn a_loop_that_ended_at_once_says_why_from_its_state() {
        use crate::disk::state::{Ending, LoopState, StopReason};
        let ended = |ending, reason, detail| LoopState::ended(reason, ending, detail);
        for (st, said) in [
            (None, ""),
            (
                Some(ended(Ending::Completed, Some(StopReason::PlanEmpty), None)),
                ": completed (plan_empty)",
            ),
            (
                Some(ended(
                    Ending::Completed,
                    Some(StopReason::PlanEmpty),
                    Some("every item is ticked"),
                )),
                ": completed (plan_empty; every item is ticked)",
            ),
            (
                Some(ended(Ending::Failed, None, Some("ignored"))),
                ": failed",
            ),
        ] {
            assert_eq!(ended_why(st.as_ref()), said);
        }
    }

    #[test]
    fn a_child_that_ends_well_before_it_is_ready_has_finished_and_one_that_fails_says_why() {
        let d = tempfile::tempdir().unwrap();
        let log = d.path().join("daemon.log");
        let never = || Ok(false);
        let mut done = child("exit 0", &log);
        assert_eq!(
            wait_until_ready(done.as_mut(), &log, "it", "start", never).unwrap(),
            Ready::Finished
        );
        let mut bad = child("echo 'error: bad key `x`' >&2; exit 2", &log);
        let e = wait_until_ready(bad.as_mut(), &log, "it", "start", never).unwrap_err();
        assert_eq!(
            (e.exit_code(), e.to_string()),
            (2, "bad key `x`".to_string())
        );
        let mut crashed = child("exit 7", &log);
        let e = wait_until_ready(crashed.as_mut(), &log, "it", "start", never).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("it exited at once (exit status: 7)"),
            "{e}"
        );
        let mut up = child("sleep 5", &log);
        assert_eq!(
            wait_until_ready(up.as_mut(), &log, "it", "start", || Ok(true)).unwrap(),
            Ready::Running
        );
        up.kill().unwrap();
    }
}
