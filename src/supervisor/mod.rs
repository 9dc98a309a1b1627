//! Running a loop: in this process (`--foreground`) or detached as a daemon (its own session, no
//! terminal, stdin from /dev/null, output to `wiggum/daemon.log`). Either way the supervisor holds
//! the loop's lock for its whole life, is a child subreaper, and turns SIGTERM/SIGINT into a
//! graceful stop (the second one forces).

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;

use crate::agent::kill;
use crate::agent::process::StopLevel;
use crate::config;
use crate::disk::layout::Layout;
use crate::disk::lock;
use crate::disk::requests;
use crate::disk::state::Status;
use crate::error::{Error, IoContext, Result};
use crate::ralph::start::{self, Prepared, StartOpts};

/// Set in the detached child so it logs to `daemon.log`.
const DAEMON_ENV: &str = "STUDIO_AGENTS_DAEMON";
const LOG_ROTATE_BYTES: u64 = 5 * 1024 * 1024;

fn check_not_running(p: &Prepared) -> Result<()> {
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

fn print_notes(p: &Prepared) {
    for n in &p.notes {
        eprintln!("warning: {n}");
    }
}

/// Run the loop in this process. Returns the exit code.
pub fn run_foreground(opts: &StartOpts) -> Result<i32> {
    let home = config::home_dir()?;
    let p = start::prepare(opts, &home)?;
    check_not_running(&p)?;
    let daemonized = std::env::var_os(DAEMON_ENV).is_some();
    if !daemonized {
        print_notes(&p);
    }
    start::init(&p)?;
    init_logging(&p.layout, daemonized)?;
    crate::sys::runtime::runtime()?.block_on(serve(p))
}

async fn serve(p: Prepared) -> Result<i32> {
    let _home = lock::acquire(&lock::home_lock(&p.home, p.layout.root()), &p.topic)?;
    watch_lock(lock::acquire(&p.layout.lock(), &p.topic)?);
    kill::become_subreaper();
    let (tx, rx) = watch::channel(StopLevel::None);
    spawn_signal_handler(tx, p.layout.control())?;
    let mut lp = start::open(p, rx).await?;
    let reason = match lp.run().await {
        Ok(r) => r,
        Err(e) => {
            lp.runner.state.status = Status::Failed;
            lp.runner.state.stop_reason = Some(crate::disk::state::StopReason::Error);
            lp.runner.state.stop_detail = Some(e.to_string());
            lp.runner.save()?;
            return Err(e);
        }
    };
    kill::reap_adopted();
    Ok(match reason.final_status() {
        Status::Failed => 1,
        _ => 0,
    })
}

fn spawn_signal_handler(
    tx: watch::Sender<StopLevel>,
    control_path: std::path::PathBuf,
) -> Result<()> {
    let sig = |k: SignalKind| {
        signal(k).map_err(|e| Error::runtime(format!("cannot install a signal handler: {e}")))
    };
    let mut term = sig(SignalKind::terminate())?;
    let mut int = sig(SignalKind::interrupt())?;
    let mut hup = sig(SignalKind::hangup())?;
    tokio::spawn(async move {
        let mut count = 0;
        loop {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
                _ = hup.recv() => { tracing::info!("SIGHUP ignored"); continue; }
            }
            count += 1;
            if count == 1 {
                tracing::info!("stop requested: stopping the agent (a second signal forces)");
                let _sent = tx.send(StopLevel::Now);
                if let Some(g) = requests::read(&control_path).stop_grace_secs {
                    let tx = tx.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(Duration::from_secs(g)).await;
                        let _sent = tx.send(StopLevel::Force);
                    });
                }
            } else {
                tracing::warn!("second stop signal: forcing");
                let _sent = tx.send(StopLevel::Force);
            }
        }
    });
    Ok(())
}

fn init_logging(layout: &Layout, daemonized: bool) -> Result<()> {
    use tracing_subscriber::EnvFilter;
    let filter =
        EnvFilter::try_from_env("STUDIO_AGENTS_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    if daemonized {
        let appender = tracing_appender::rolling::never(layout.wiggum(), "daemon.log");
        let _already = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(false)
            .with_writer(appender)
            .try_init();
    } else {
        let _already = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_writer(std::io::stderr)
            .try_init();
    }
    Ok(())
}

/// Keep `daemon.log` bounded: past the size, shift it to `.1` (… `.3`) before a new daemon starts.
fn rotate_log(path: &Path) -> Result<()> {
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
    Ok(a)
}

/// Start the loop as a daemon and return once it holds its lock (within about a second).
/// Returns whether the settings ask to attach the live view (`auto_watch`, on a terminal).
pub fn detach(opts: &StartOpts) -> Result<bool> {
    let home = config::home_dir()?;
    let p = start::prepare(opts, &home)?;
    check_not_running(&p)?;
    print_notes(&p);
    start::init(&p)?;
    let log_path = p.layout.daemon_log();
    rotate_log(&log_path)?;
    let log = crate::sys::fsutil::open_append(&log_path)?;
    let err = log.try_clone().at(&log_path, "clone handle")?;
    let exe = std::env::current_exe()
        .map_err(|e| Error::runtime(format!("cannot find own executable: {e}")))?;
    let args = child_args(opts, p.layout.root())?;
    let mut cmd = process_wrap::std::CommandWrap::with_new(&exe, |c| {
        c.args(&args)
            .env(DAEMON_ENV, "1")
            .current_dir("/")
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err);
    });
    cmd.wrap(process_wrap::std::ProcessSession);
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::runtime(format!("cannot start the daemon: {e}")))?;
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child
            .try_wait()
            .map_err(|e| Error::runtime(format!("daemon: {e}")))?
        {
            let last = crate::sys::fsutil::read_tail(&log_path, 4096)?
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(str::to_string)
                .unwrap_or_default();
            let code = status.code().unwrap_or(1);
            let msg = last.trim_start_matches("error: ").to_string();
            return Err(match code {
                2 => Error::input(msg),
                3 => Error::AlreadyRunning(msg),
                _ => Error::runtime(format!("the daemon exited at once ({status}): {msg}")),
            });
        }
        if lock::find(&p.home, &p.layout)?.is_some_and(|h| h.pid == pid) {
            break;
        }
        if Instant::now() >= deadline {
            return Err(Error::runtime(format!(
                "the daemon (pid {pid}) did not take its lock within 10 s; see {}",
                log_path.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(20)); // allow: parent poll before exit
    }
    let t = &p.topic;
    println!("started loop `{t}` (pid {pid})");
    println!("  artifact: {}", p.layout.root().display());
    println!("  log:      {}", log_path.display());
    println!("  watch:    studio-agents wiggum watch {t}");
    println!("  status:   studio-agents wiggum status {t}");
    println!("  stop:     studio-agents wiggum stop {t}");
    Ok(p.settings.defaults.auto_watch && std::io::IsTerminal::is_terminal(&std::io::stdout()))
}
