//! Run one command as a supervised job: its own session and process group (setsid through
//! process-wrap), stdin from a file, stdout+stderr straight into a log file (so output survives a
//! supervisor crash), a wall limit, a stop control, and a kill-tree at the end, always.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use process_wrap::tokio::{CommandWrap, ProcessSession};
use tokio::sync::watch;

use super::kill;
pub use crate::disk::records::Ending;
use crate::error::{Error, IoContext, Result};

/// Set by a detaching `start` in its daemon's environment so it logs to `daemon.log`. No run
/// the daemon spawns inherits it: a `studio-agents` started by an agent, a hook or a
/// validation command is a `start` of its own, not a daemon.
pub const DAEMON_ENV: &str = "STUDIO_AGENTS_DAEMON";

/// The harness a detaching `start` probed, handed to its daemon (JSON); never inherited by
/// the daemon's runs either.
pub const HARNESS_ENV: &str = "STUDIO_AGENTS_PROBED_HARNESS";

/// How urgently the supervisor wants the current job gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum StopLevel {
    /// Keep going.
    #[default]
    None,

    /// Stop now: SIGTERM, grace, SIGKILL.
    Now,
    /// Stop now without waiting out the grace period.
    Force,
}

/// One command to run. Its fields are the `agent` module's own: an agent's job is built only by
/// `agent::launch::job` (in its harness), and everything else — validation commands, hooks, a
/// command evaluator, all configured by the user and run as they are — by [`Job::trusted`].
#[derive(Debug, Clone)]
pub struct Job {
    /// Shell command line, run with `sh -c`.
    pub(in crate::agent) command: String,
    /// Working directory.
    pub(in crate::agent) cwd: PathBuf,
    /// Extra environment.
    pub(in crate::agent) env: Vec<(String, String)>,
    /// A file fed as stdin (none: /dev/null).
    pub(in crate::agent) stdin: Option<PathBuf>,
    /// Where stderr goes (appended), and stdout too unless `stdout` is set.
    pub(in crate::agent) log: PathBuf,
    /// A separate file for stdout (created or truncated), for answers read back.
    pub(in crate::agent) stdout: Option<PathBuf>,
    /// Wall limit.
    pub(in crate::agent) limit: Duration,
    /// SIGTERM-to-SIGKILL grace.
    pub(in crate::agent) grace: Duration,
    /// The per-run token every descendant inherits.
    pub(in crate::agent) token: String,
    /// Start from an empty environment (`env` is then all the job sees, with the token).
    pub(in crate::agent) env_clear: bool,
    /// Confine the job: its leader is our own `sandbox-exec`, which applies this, then runs
    /// the script.
    pub(in crate::agent) sandbox: Option<crate::agent::sandbox::Policy>,
    /// Watch the job while it runs: idle time and the memory of its tree.
    pub(in crate::agent) liveness: Option<super::liveness::Liveness>,
}

impl Job {
    /// A command the user configured (a validation command, a hook, a command evaluator), run as
    /// it is: with the supervisor's environment and `env`, no sandbox, no liveness watch; stdin
    /// from /dev/null, stderr and stdout appended to `log`.
    #[must_use]
    pub fn trusted(
        command: impl Into<String>,
        cwd: PathBuf,
        env: Vec<(String, String)>,
        log: PathBuf,
        limit: Duration,
        grace: Duration,
        role: &str,
    ) -> Job {
        Job {
            command: command.into(),
            cwd,
            env,
            stdin: None,
            log,
            stdout: None,
            limit,
            grace,
            token: new_token(role),
            env_clear: false,
            sandbox: None,
            liveness: None,
        }
    }

    /// Feed `file` on stdin.
    #[must_use]
    pub fn with_stdin(mut self, file: PathBuf) -> Job {
        self.stdin = Some(file);
        self
    }

    /// Write stdout to `file` (created or truncated) instead of the log.
    #[must_use]
    pub fn with_stdout(mut self, file: PathBuf) -> Job {
        self.stdout = Some(file);
        self
    }

    /// Where its output goes.
    #[must_use]
    pub fn log(&self) -> &std::path::Path {
        &self.log
    }
}

/// The result of a job.
#[derive(Debug, Clone)]
pub struct ProcessEnd {
    /// How it ended.
    pub ending: Ending,
    /// Its pid (= its process group and session id).
    pub pid: u32,
    /// Wall time.
    pub duration: Duration,
    /// Descendants that needed SIGKILL (`kill::terminate` logs them).
    #[allow(dead_code, reason = "the tests read it to prove a SIGKILL was needed")]
    pub killed: Vec<i32>,
}

/// The job's log (appended) and stdout file (truncated), created private to the user (0600).
fn open_log(job: &Job) -> Result<(File, File)> {
    let err = crate::sys::fsutil::open_append(&job.log)?;
    let out = match &job.stdout {
        Some(p) => OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(p)
            .at(p, "create stdout file")?,
        None => err.try_clone().at(&job.log, "clone log handle")?,
    };
    Ok((out, err))
}

/// What a job tells its owner while it runs. The owner's answer to `Spawned` says whether
/// the gate opens (false: it stays shut, and the job ends without running its command); to
/// `Stopping` it is not asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobEvent {
    /// It started with this pid (= process group), waiting at its gate.
    Spawned(u32),
    /// A stop request arrived: its tree is being terminated.
    Stopping,
}

/// The job's shell script (`agent::script`): the gate, then the command.
fn gated(job: &Job) -> String {
    let stdin = job.stdin.as_ref().map_or_else(
        || "/dev/null".to_string(),
        |p| format!("'{}'", p.display().to_string().replace('\'', r"'\''")),
    );
    super::script::gated(&job.command, &stdin, GATE_CLOSED)
}

/// The shell a job's script runs in: `/bin/sh` by its path, as `system()` and `popen()` do
/// (the command inside it is still found on `PATH`); `sh` by name would try every directory of
/// `PATH` before it for each run.
const SHELL: &str = "/bin/sh";

/// The program and arguments of a job: `sh -c SCRIPT`, behind our `sandbox-exec` when confined.
fn argv(job: &Job, script: String) -> Result<(PathBuf, Vec<String>)> {
    let Some(policy) = job.sandbox.as_ref().filter(|p| p.needs_helper()) else {
        return Ok((SHELL.into(), vec!["-c".into(), script]));
    };
    let (exe, mut args) = helper(policy)?;
    args.extend([SHELL.to_string(), "-c".into(), script]);
    Ok((exe, args))
}

/// Our own `sandbox-exec` applying `policy`: the program and its arguments up to `--`, the
/// command to confine to be appended (the executable: [`crate::agent::sandbox::helper_exe`]).
pub fn helper(policy: &crate::agent::sandbox::Policy) -> Result<(PathBuf, Vec<String>)> {
    let (exe, mut args) = crate::agent::sandbox::helper_exe().map_err(Error::runtime)?;
    let policy = serde_json::to_string(policy)
        .map_err(|e| Error::runtime(format!("serialise the sandbox policy: {e}")))?;
    args.extend(["--policy".to_string(), policy, "--".into()]);
    Ok((exe, args))
}

/// The small helper executable's name (`src/bin/`).
pub const SMALL_HELPER: &str = crate::agent::sandbox::SMALL_HELPER;

/// Once every process of the run is gone: remove what it left in a shared `/dev/shm`.
fn sweep_shm(job: &Job) {
    #[cfg(target_os = "linux")]
    if let Some(ledger) = job.liveness.as_ref().and_then(|l| l.shm.as_ref()) {
        for (path, bytes) in ledger.sweep() {
            tracing::warn!(
                "removed {} ({} KB) the run left in the machine's shared memory",
                path.display(),
                bytes >> 10
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = job;
}

/// The job's leader: awaited through tokio's child handling, or through its pidfd when it was
/// born in its run's cgroup. Alone: process-wrap's group wait would block on any lingering
/// member.
enum Leader {
    Child(Box<dyn process_wrap::tokio::ChildWrapper>),
    #[cfg(target_os = "linux")]
    Born(crate::sys::pidfd::Exit),
}

impl Leader {
    async fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        match self {
            Leader::Child(c) => c.wait().await,
            #[cfg(target_os = "linux")]
            Leader::Born(e) => e.wait().await,
        }
    }
}

/// Start the job's program in its own session, killed with the supervisor: straight into the
/// run's cgroup where the kernel can (no move into it after the start, which costs a grace
/// period of the kernel's each time), else as any child, the helper joining the group itself.
fn spawn(
    job: &Job,
    program: &std::path::Path,
    args: &[String],
    stdio: [std::os::fd::OwnedFd; 3],
) -> std::io::Result<(u32, Leader)> {
    #[cfg(target_os = "linux")]
    if let Some(group) = job.sandbox.as_ref().and_then(|p| p.cgroup.as_ref())
        && job.env_clear
    {
        use crate::sys::kernel::born;
        use std::os::fd::AsFd;
        let mut env: Vec<(String, String)> = job
            .env
            .iter()
            .filter(|(k, _)| k != DAEMON_ENV && k != HARNESS_ENV && k != kill::TOKEN_VAR)
            .cloned()
            .collect();
        env.push((kill::TOKEN_VAR.to_string(), job.token.clone()));
        let spawned = born::spawn(born::Spawn {
            program,
            args,
            env: &env,
            cwd: &job.cwd,
            stdio: [stdio[0].as_fd(), stdio[1].as_fd(), stdio[2].as_fd()],
            group,
        });
        match spawned {
            Ok(b) => {
                return Ok((
                    b.pid.cast_unsigned(),
                    Leader::Born(crate::sys::pidfd::Exit::new(b.pidfd)?),
                ));
            }
            Err(born::Refused::Start(e)) => return Err(e),
            Err(born::Refused::Clone(e)) => {
                tracing::debug!("cannot start the run in its cgroup directly ({e}): it joins it");
            }
        }
    }
    let [stdin, out, err] = stdio;
    let mut cmd = CommandWrap::with_new(program, |c| {
        if job.env_clear {
            c.env_clear();
        }
        c.args(args)
            .current_dir(&job.cwd)
            .envs(job.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env_remove(DAEMON_ENV)
            .env_remove(HARNESS_ENV)
            .env(kill::TOKEN_VAR, &job.token)
            .stdin(Stdio::from(stdin))
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err));
    });
    cmd.wrap(ProcessSession);
    cmd.wrap(crate::sys::kernel::KillWithParent);
    let child = cmd.spawn()?;
    let pid = child
        .id()
        .ok_or_else(|| std::io::Error::other("spawned job has no pid"))?;
    Ok((pid, Leader::Child(child.into_inner())))
}

/// The exit code of a job whose gate never opened (its supervisor died before recording it).
pub const GATE_CLOSED: i32 = 125;

/// Spawn the job, report its events, and supervise it to its end.
pub async fn run(
    job: &Job,
    stops: &mut watch::Receiver<StopLevel>,
    mut on_event: impl FnMut(JobEvent) -> bool,
) -> Result<ProcessEnd> {
    let (out, err) = open_log(job)?;
    let (gate_out, mut gate_in) =
        std::io::pipe().map_err(|e| Error::runtime(format!("cannot make a pipe: {e}")))?;
    let script = gated(job);
    let (program, args) = argv(job, script)?;
    let started = Instant::now();
    let spawning = crate::sys::timing::step("process.spawn");
    let (pid, mut leader) = spawn(
        job,
        &program,
        &args,
        [gate_out.into(), out.into(), err.into()],
    )
    .map_err(|e| Error::runtime(format!("cannot spawn `{}`: {e}", job.command)))?;
    drop(spawning);
    let pgid = pid.cast_signed();
    kill::manage(pgid);
    crate::sys::failpoint::hit("job-spawned")?;
    // Recorded (and whatever else its owner does before the command may run, its stdin file
    // written among it): open the gate. A job that already died has no reader; that is its own
    // ending. One whose stdin cannot be read never runs its command.
    let mut unready = None;
    if on_event(JobEvent::Spawned(pid)) {
        match job
            .stdin
            .as_ref()
            .map(|p| File::open(p).at(p, "open stdin file"))
        {
            Some(Err(e)) => unready = Some(e),
            _ => {
                let _opened = std::io::Write::write_all(&mut gate_in, b"\n");
            }
        }
    }
    drop(gate_in);
    let ending = supervise(job, stops, &mut leader, pgid).await?;
    let _ending = crate::sys::timing::step("process.terminate");
    let forced = stops.clone();
    let leader_exit = async {
        let _status = leader.wait().await;
    };
    let killed = kill::terminate(
        pgid,
        &job.token,
        job.grace,
        || *forced.borrow() >= StopLevel::Force,
        leader_exit,
        || {
            if ending == Ending::Stopped {
                let _asked = on_event(JobEvent::Stopping);
            }
        },
    )
    .await;
    // The leader is dead by now; collect its status through tokio.
    let reap = leader.wait().await;
    kill::unmanage(pgid);
    if ending == Ending::OutputLimit {
        cut_logs(job);
    }
    if let Err(e) = reap {
        tracing::debug!("reaping {pid}: {e}");
    }
    sweep_shm(job);
    if let Some(e) = unready {
        return Err(e);
    }
    Ok(ProcessEnd {
        ending,
        pid,
        duration: started.elapsed(),
        killed,
    })
}

/// Wait for the job's end: its leader's exit, its wall limit, a stop asked for, or what its
/// liveness watch ends it for (idle, memory, output), whichever comes first.
async fn supervise(
    job: &Job,
    stops: &mut watch::Receiver<StopLevel>,
    leader: &mut Leader,
    pgid: i32,
) -> Result<Ending> {
    let deadline = tokio::time::sleep(job.limit);
    tokio::pin!(deadline);
    // A closed stop channel means nobody can ask for a stop: wait for the other two.
    let stop = async {
        if stops.wait_for(|l| *l >= StopLevel::Now).await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    let watched = async {
        match &job.liveness {
            Some(l) => {
                super::liveness::watch(l, &job.log, job.stdout.as_deref(), pgid, &job.token).await
            }
            None => std::future::pending().await,
        }
    };
    let _waiting = crate::sys::timing::step("process.wait");
    let status = tokio::select! {
        s = leader.wait() => Ok(s),
        () = &mut deadline => Err(Ending::TimedOut),
        () = stop => Err(Ending::Stopped),
        e = watched => Err(e),
    };
    Ok(match status {
        Ok(s) => {
            let s = s.map_err(|e| Error::runtime(format!("waiting for `{}`: {e}", job.command)))?;
            match (s.code(), s.signal()) {
                (Some(code), _) => Ending::Exited { code },
                (None, Some(signal)) => Ending::Signaled { signal },
                (None, None) => Ending::Exited { code: -1 },
            }
        }
        Err(other) => other,
    })
}

/// A run ended for its output: each log past the ceiling cut to it (its head kept).
fn cut_logs(job: &Job) {
    let Some(l) = &job.liveness else {
        return;
    };
    for file in std::iter::once(&job.log).chain(job.stdout.as_ref()) {
        let over = std::fs::metadata(file).is_ok_and(|m| m.len() > l.max_log);
        if over && let Err(e) = super::liveness::cut_log(file, l.max_log) {
            tracing::warn!("{e}");
        }
    }
}

/// A fresh token for one job.
#[must_use]
pub fn new_token(label: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{label}-{}-{nanos}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(dir: &std::path::Path, command: &str, limit_ms: u64) -> Job {
        Job {
            command: command.into(),
            cwd: dir.to_path_buf(),
            env: vec![],
            stdin: None,
            log: dir.join("log"),
            stdout: None,
            limit: Duration::from_millis(limit_ms),
            grace: Duration::from_millis(300),
            token: new_token("unit"),
            env_clear: false,
            sandbox: None,
            liveness: None,
        }
    }

    #[tokio::test]
    async fn a_closed_control_channel_never_stops_a_job() {
        let d = tempfile::tempdir().unwrap();
        let (tx, mut rx) = watch::channel(StopLevel::None);
        drop(tx);
        let out = run(
            &job(d.path(), "sleep 0.2; echo done", 5000),
            &mut rx,
            |_| true,
        )
        .await
        .unwrap();
        assert_eq!(out.ending, Ending::Exited { code: 0 });
        assert_eq!(
            std::fs::read_to_string(d.path().join("log")).unwrap(),
            "done\n"
        );
    }

    #[tokio::test]
    async fn the_wall_limit_kills_a_term_ignoring_group() {
        let d = tempfile::tempdir().unwrap();
        let (_tx, mut rx) = watch::channel(StopLevel::None);
        let j = job(d.path(), "trap '' TERM; sleep 30 & sleep 30", 200);
        let out = run(&j, &mut rx, |_| true).await.unwrap();
        assert_eq!(out.ending, Ending::TimedOut);
        assert!(!out.killed.is_empty(), "SIGKILL was needed");
        assert!(kill::survivors(out.pid.cast_signed(), &j.token).is_empty());
    }

    #[tokio::test]
    async fn a_stop_request_ends_the_job_as_stopped() {
        let d = tempfile::tempdir().unwrap();
        let (tx, mut rx) = watch::channel(StopLevel::None);
        let j = job(d.path(), "sleep 30", 60_000);
        let stopper = async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            tx.send(StopLevel::Now).unwrap();
        };
        let (out, ()) = tokio::join!(run(&j, &mut rx, |_| true), stopper);
        assert_eq!(out.unwrap().ending, Ending::Stopped);
    }

    #[tokio::test]
    async fn the_job_reads_its_own_stdin_after_the_gate() {
        let d = tempfile::tempdir().unwrap();
        let (_tx, mut rx) = watch::channel(StopLevel::None);
        let input = d.path().join("it's the prompt.md");
        std::fs::write(&input, "the prompt\n").unwrap();
        let mut j = job(d.path(), "cat; echo done", 5000);
        j.stdin = Some(input);
        let mut spawned = false;
        let out = run(&j, &mut rx, |e| {
            if matches!(e, JobEvent::Spawned(_)) {
                spawned = true;
            }
            true
        })
        .await
        .unwrap();
        assert!(spawned);
        assert_eq!(out.ending, Ending::Exited { code: 0 });
        assert_eq!(
            std::fs::read_to_string(d.path().join("log")).unwrap(),
            "the prompt\ndone\n"
        );
        let none = run(&job(d.path(), "wc -c", 5000), &mut rx, |_| true)
            .await
            .unwrap();
        assert_eq!(none.ending, Ending::Exited { code: 0 });
    }

    #[tokio::test]
    async fn exit_codes_and_signals_are_told_apart() {
        let d = tempfile::tempdir().unwrap();
        let (_tx, mut rx) = watch::channel(StopLevel::None);
        let e = run(&job(d.path(), "exit 7", 5000), &mut rx, |_| true)
            .await
            .unwrap()
            .ending;
        assert_eq!(e, Ending::Exited { code: 7 });
        let s = run(&job(d.path(), "kill -KILL $$", 5000), &mut rx, |_| true)
            .await
            .unwrap()
            .ending;
        assert_eq!(s, Ending::Signaled { signal: 9 });
        assert!(s.killed() && !s.success());
    }
}
