//! One way to run an agent. Every agent run — planning, an iteration, a revision round, a
//! delegation, the standalone gate's producer — is built here from the agent's spec and the
//! phase, and run here: the prompt written beside the log, the contract's environment, the
//! agent's own `env` and `cwd`, the limits, a fresh token. What an agent may see and do (its
//! environment, its sandbox, its ceilings) is decided in this one place.

use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::watch;

use super::liveness::{Liveness, PromiseWatch};
use super::output::{self, RunReport};
use super::process::{self, Job, JobEvent, ProcessEnd, StopLevel};
use super::sandbox;
use super::spec::{self, AgentSpec};
use crate::config::{Safety, SandboxMode};
use crate::disk::records::RunFacts;
use crate::error::Result;
use crate::sys::{fsutil, timing};

mod validation;
pub use validation::validation_job;

/// Why an agent runs (`WIGGUM_PHASE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentPhase {
    /// Writing `fix_plan.md` before iteration 1.
    Planning,
    /// One iteration of the loop.
    Iteration,
    /// A revision round of the gate.
    Revision,
    /// A single-shot delegation that writes an artifact.
    Delegation,
}

impl AgentPhase {
    /// The name agents see in `WIGGUM_PHASE`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            AgentPhase::Planning => "planning",
            AgentPhase::Iteration => "iteration",
            AgentPhase::Revision => "revision",
            AgentPhase::Delegation => "delegation",
        }
    }
}

/// Where and how one agent run happens.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The phase.
    pub phase: AgentPhase,
    /// The iteration (0 outside iterations; the round for a standalone revision).
    pub iteration: u32,
    /// The loop's topic (`TOPIC`; a label for standalone runs).
    pub topic: String,
    /// The directory the agent works in (`ARTIFACT_PATH`; its `cwd` is relative to it).
    pub root: PathBuf,
    /// The loop's `wiggum/` (`WIGGUM_DIR`), when there is a loop.
    pub wiggum_dir: Option<PathBuf>,
    /// Where the prompt and the log go (the records, out of the agent's sight).
    pub dir: PathBuf,
    /// The directory the agent works in for this run (`ITERATION_DIR`).
    pub work_dir: PathBuf,
    /// The prompt file's stem (`prompt` → `prompt.md`).
    pub stem: String,
    /// A separate file for stdout (answers read back).
    pub stdout: Option<PathBuf>,
    /// Sampling temperature for producers that call a model (`WIGGUM_TEMPERATURE`).
    pub temperature: Option<f64>,
    /// Wall limit.
    pub limit: Duration,
    /// SIGTERM-to-SIGKILL grace.
    pub grace: Duration,
    /// The token every process of the run inherits (from [`process::new_token`]); the caller
    /// records it before the spawn.
    pub token: String,
    /// The harness settings (`[safety]`): environment, sandbox, ceilings, liveness.
    pub safety: Safety,
    /// Whether the run may write the whole repository (a `code` loop) or only its artifact
    /// directory (documents: least privilege), plus its temp dir, its CLI's state and
    /// `[safety] writable` either way.
    pub repo_wide: bool,
    /// A file watch over the work tree already running (the loop's); without one the run
    /// watches for itself.
    pub activity: Option<crate::sys::watch::Shared>,
}

impl Launch {
    /// A run of `phase` for `topic`, in `root`, its prompt and log in `dir` (the records), under
    /// `safety`: working in `root` (`ITERATION_DIR`), the wall limit and kill grace of
    /// `[safety]`, a fresh token named after `label`; no loop (`wiggum_dir`), no stdout file, no
    /// temperature, iteration 0, the artifact directory only, no shared watch. What differs is
    /// set with struct update syntax (`Launch { stdout: …, ..Launch::for_phase(…) }`).
    #[must_use]
    pub fn for_phase(
        phase: AgentPhase,
        topic: &str,
        root: PathBuf,
        dir: PathBuf,
        safety: &Safety,
        label: &str,
    ) -> Launch {
        Launch {
            phase,
            iteration: 0,
            topic: topic.to_string(),
            work_dir: root.clone(),
            root,
            wiggum_dir: None,
            dir,
            stem: "prompt".into(),
            stdout: None,
            temperature: None,
            limit: Duration::from_secs(safety.max_time_per_iteration),
            grace: Duration::from_secs(safety.kill_grace_secs),
            token: process::new_token(label),
            safety: safety.clone(),
            repo_wide: false,
            activity: None,
        }
    }

    /// The prompt file of this run.
    #[must_use]
    pub fn prompt_file(&self) -> PathBuf {
        self.dir.join(format!("{}.md", self.stem))
    }

    /// The prompt as the agent is handed it: a copy in its private temp dir, since the records
    /// (where [`Launch::prompt_file`] keeps it) are out of the agent's sight.
    #[must_use]
    pub fn handed_prompt(&self) -> PathBuf {
        self.tmp().join(format!("{}.md", self.stem))
    }

    /// The run's private temp dir (`TMPDIR`), writable to it, removed after the run.
    #[must_use]
    pub fn tmp(&self) -> PathBuf {
        tmp_dir(&self.token)
    }
}

/// The private temp dir of the run with `token` (removed after the run, or by the recovery of a
/// supervisor that died during it).
#[must_use]
pub fn tmp_dir(token: &str) -> PathBuf {
    std::env::temp_dir().join(format!("studio-agents-{token}"))
}

/// Where an agent may write: the repository's work tree holding `dir` (the directory itself
/// when there is none) — unless that tree holds the user's home or `$STUDIO_AGENTS_HOME` (a
/// repository at `~`, as some keep their dotfiles): then `dir` alone, so the loop's locks and
/// records, the copies of the user's work and the rest of the home stay out of reach.
#[must_use]
pub fn work_root(dir: &Path) -> PathBuf {
    let mut keep_out: Vec<PathBuf> = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .into_iter()
        .collect();
    keep_out.extend(crate::config::home_dir().ok());
    let keep_out: Vec<PathBuf> = keep_out
        .into_iter()
        .map(|p| p.canonicalize().unwrap_or(p))
        .collect();
    writable_root(dir, &keep_out)
}

/// The directories of the other loops of this store (`wiggum/`: their memory, state and
/// records) that lie under `root`, where a run may write: bound read-only in its mount
/// namespace, so no agent rewrites another loop's plan, question or run records.
fn other_loops(root: &Path, own: Option<&Path>) -> Vec<PathBuf> {
    let Ok(home) = crate::config::home_dir() else {
        return Vec::new();
    };
    crate::disk::registry::all(&home)
        .unwrap_or_default()
        .into_iter()
        .map(|(_, artifact)| artifact.join("wiggum"))
        .filter(|w| w.starts_with(root) && Some(w.as_path()) != own && w.is_dir())
        .collect()
}

/// [`work_root`] with the directories to keep out given.
#[must_use]
pub fn writable_root(dir: &Path, keep_out: &[PathBuf]) -> PathBuf {
    let tree = dir
        .ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(dir);
    if tree != dir && keep_out.iter().any(|k| k.starts_with(tree)) {
        dir.to_path_buf()
    } else {
        tree.to_path_buf()
    }
}

/// The job of one agent run: the one constructor every agent run goes through. The harness is
/// decided here: the environment from the allow-list, the sandbox policy, the ceilings and the
/// liveness watch, a deny-list for CLIs that accept one.
#[must_use]
pub fn job(agent: &AgentSpec, l: &Launch) -> Job {
    let t = &agent.table;
    let safety = &l.safety;
    let program = sandbox::env::program_of(&t.command);
    let prompt_file = l.handed_prompt();
    let env = run_env(agent, l, &program);
    let mut command = spec::command_line(t, &prompt_file);
    if program == "claude" && !safety.deny_tools.is_empty() {
        let tools = safety.deny_tools.join(",").replace('\'', "");
        command.push_str(&format!(" --disallowedTools '{tools}'"));
    }
    let root = if l.repo_wide {
        work_root(&l.root)
    } else {
        l.root.clone()
    };
    let home = std::env::var_os("HOME").map_or_else(PathBuf::new, PathBuf::from);
    let state = sandbox::policy::state_dirs(&program, &home, &env);
    let mut policy = sandbox::policy::build(safety, &root, &l.tmp(), &state);
    policy.read_only = sandbox::policy::protected(&root, l.wiggum_dir.as_deref());
    policy
        .read_only
        .extend(other_loops(&root, l.wiggum_dir.as_deref()));
    policy.hidden = hidden_store(&root);
    policy.hidden.extend(
        sandbox::policy::secret_places(&home, &program, &safety.readable)
            .into_iter()
            .filter(|p| p.symlink_metadata().is_ok() && !root.starts_with(p)),
    );
    policy.when_enforced = sandbox::env::when_enforced(&program, nix::unistd::geteuid().is_root());
    if let Ok(store) = crate::config::home_dir() {
        policy.close_ports(&sandbox::dashboard::ports(&store));
    }
    policy.home_layer = super::home::home_layer(&home, &root, &l.root, &l.tmp(), safety);
    Job {
        command,
        cwd: t
            .cwd
            .as_ref()
            .map_or_else(|| l.root.clone(), |c| l.root.join(c)),
        env,
        stdin: t.stdin.then_some(prompt_file),
        log: l.dir.join("agent.log"),
        stdout: l.stdout.clone(),
        limit: l.limit,
        grace: l.grace,
        token: l.token.clone(),
        env_clear: true,
        sandbox: Some(policy),
        liveness: Some(Liveness {
            idle: Duration::from_secs(safety.max_idle_secs),
            watch: root,
            activity: l.activity.clone(),
            max_memory: safety.max_memory_mb.saturating_mul(1 << 20),
            max_log: safety.max_log_mb.saturating_mul(1 << 20),
            promise: None,
            #[cfg(target_os = "linux")]
            shm: None,
        }),
    }
}

/// The run's environment: what the allow-list lets through of ours, its private temp dir, the
/// contract's variables, and the agent's own settings last.
fn run_env(agent: &AgentSpec, l: &Launch, program: &str) -> Vec<(String, String)> {
    let path = |p: &Path| p.display().to_string();
    let mut env = sandbox::env::allowed(std::env::vars(), program, &l.safety.env_allow);
    env.push(("TMPDIR".into(), path(&l.tmp())));
    env.extend([
        ("ITERATION".into(), l.iteration.to_string()),
        (
            "PREV_ITERATION".into(),
            l.iteration.saturating_sub(1).to_string(),
        ),
        ("ITERATION_DIR".into(), path(&l.work_dir)),
        ("ARTIFACT_PATH".into(), path(&l.root)),
        ("TOPIC".into(), l.topic.clone()),
        ("WIGGUM_PHASE".into(), l.phase.as_str().into()),
        ("PROMPT_FILE".into(), path(&l.handed_prompt())),
    ]);
    if let Some(w) = &l.wiggum_dir {
        env.push(("WIGGUM_DIR".into(), path(w)));
    }
    if let Some(temp) = l.temperature {
        env.push(("WIGGUM_TEMPERATURE".into(), temp.to_string()));
    }
    env.extend(agent.table.env.iter().map(|(k, v)| (k.clone(), v.clone())));
    env
}

/// Make the run's cgroup where this machine allows one, with its ceilings, and point the
/// helper at it. `None`: the process group and token are the nets.
fn run_group(job: &mut Job, l: &Launch) -> Option<PathBuf> {
    let _t = timing::step("cgroup.make");
    let policy = job
        .sandbox
        .as_mut()
        .filter(|p| p.mode != crate::config::SandboxMode::Off)?;
    let path = crate::sys::cgroup::group_path(crate::sys::cgroup::base()?, &l.token);
    match crate::sys::cgroup::create(
        &path,
        l.safety.max_memory_mb.saturating_mul(1 << 20),
        l.safety.max_processes,
    ) {
        Ok(_) => {
            policy.cgroup = Some(path.clone());
            Some(path)
        }
        Err(e) => {
            tracing::warn!("cannot make the run's cgroup {}: {e}", path.display());
            None
        }
    }
}

/// The last net: whatever left the process group and the token behind goes with the run's
/// group.
fn remove_group(group: Option<&Path>) {
    let _t = timing::step("cgroup.remove");
    let Some(g) = group else {
        return;
    };
    let left = crate::sys::cgroup::kill_and_remove(g, Duration::from_secs(2));
    if !left.is_empty() {
        tracing::warn!(
            "killed {} process(es) of the run that escaped its process group: {left:?}",
            left.len()
        );
    }
}

/// When step timings are logged and the run has a helper: where it writes its own (the run's
/// records, out of the agent's sight; the helper opens the file before it confines itself).
fn helper_timings(job: &mut Job, l: &Launch) -> Option<PathBuf> {
    let policy = job.sandbox.as_mut().filter(|p| p.needs_helper())?;
    timing::enabled().then(|| {
        let path = l.dir.join("helper-timings");
        policy.timings = Some(path.clone());
        path
    })
}

/// The helper's steps, as it wrote them (`start=<unix µs> <step>=<µs> …`), logged as the
/// supervisor's own: `helper.start` is from `spawned` (just before the spawn) to the helper's
/// first instruction of its own.
fn record_helper_timings(path: Option<&Path>, spawned: DateTime<Utc>) {
    let Some(path) = path else {
        return;
    };
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let _gone = std::fs::remove_file(path);
    for (name, value) in text.split_whitespace().filter_map(|w| w.split_once('=')) {
        let Ok(us) = value.parse::<i64>() else {
            continue;
        };
        let took = if name == "start" {
            us - spawned.timestamp_micros()
        } else {
            us
        };
        let took = Duration::from_micros(u64::try_from(took).unwrap_or(0));
        timing::record(&format!("helper.{name}"), took);
    }
}

/// The store of every loop's records (`$STUDIO_AGENTS_HOME`) and the directories of every
/// loop's home layer (`policy::layer_bases`), kept out of a run's sight, not only out of its
/// reach — unless the run's writable root lies inside one.
fn hidden_store(root: &Path) -> Vec<PathBuf> {
    let uid = nix::unistd::geteuid().as_raw();
    let store = crate::config::home_dir()
        .ok()
        .map(|h| h.canonicalize().unwrap_or(h));
    let ours = sandbox::policy::layer_bases(&std::env::temp_dir(), uid);
    // Loops started with another temp dir keep their layers elsewhere: the store knows where.
    let bases = match &store {
        Some(s) if cfg!(target_os = "linux") => crate::agent::home::known_layer_bases(s, &ours),
        _ => ours,
    };
    store
        .into_iter()
        .chain(bases)
        .filter(|h| !root.starts_with(h))
        .collect()
}

/// Refuse a run that would work, read or write inside the store (`$STUDIO_AGENTS_HOME`), or —
/// `holding`: where no mount namespace can mask it — write or read a directory that holds it
/// (`sandbox::store`).
fn out_of_the_store(
    cwd: &Path,
    policy: Option<&sandbox::Policy>,
    store: &Path,
    holding: bool,
) -> Result<()> {
    let mut roots: Vec<(&Path, &'static str)> = vec![(cwd, "works in")];
    if let Some(p) = policy.filter(|p| p.mode != SandboxMode::Off) {
        roots.extend(p.writable.iter().map(|w| (w.as_path(), "writes")));
        roots.extend(p.readable.iter().flatten().map(|r| (r.as_path(), "reads")));
    }
    match sandbox::store::reached(&roots, store, holding, real_path) {
        None => Ok(()),
        Some((path, how, holds)) => Err(crate::error::Error::input(sandbox::store::refusal(
            path, how, holds, store,
        ))),
    }
}

/// The same refusal for a loop about to start, from the policy its runs will get (the store
/// as `$STUDIO_AGENTS_HOME` names it); `namespace`: whether the probe made a mount namespace.
///
/// # Errors
/// When a writable or readable root of `policy` lies inside the store, or holds it where no
/// namespace can mask it (exit 2).
pub fn check_store_reach(policy: &sandbox::Policy, namespace: bool) -> Result<()> {
    let Ok(store) = crate::config::home_dir() else {
        return Ok(());
    };
    out_of_the_store(Path::new("/"), Some(policy), &real_path(&store), !namespace)
}

/// Whether this process's confined runs get a `/dev/shm` of their own: told by the start's
/// probe of the loop's policy, else probed at the first run that asks.
#[cfg(target_os = "linux")]
static PRIVATE_SHM: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

/// What the start's probe found: its runs' `/dev/shm` (a probe that could not apply the policy
/// tells nothing, and the first run probes again).
pub fn probed(enforced: &sandbox::Enforcement) {
    #[cfg(target_os = "linux")]
    if enforced.filesystem {
        let _first = PRIVATE_SHM.set(enforced.private_shm);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = enforced;
}

/// A ledger of the machine's `/dev/shm` for a confined run that will not get one of its own
/// (mount namespaces switched off, or not to be made here: asked once per process).
#[cfg(target_os = "linux")]
fn shared_shm(policy: Option<&sandbox::Policy>) -> Option<crate::sys::shm::ShmLedger> {
    let policy = policy.filter(|p| p.mode != SandboxMode::Off)?;
    let private = !policy.no_namespace
        && *PRIVATE_SHM.get_or_init(|| {
            let mut probe = policy.clone();
            probe.home_layer = None;
            probe.cgroup = None;
            probe.writable.clear();
            sandbox::probe(&probe).private_shm
        });
    if private {
        return None;
    }
    crate::sys::shm::ShmLedger::open(Path::new("/dev/shm"), nix::unistd::geteuid().as_raw())
}

/// A path as the kernel resolves it (links followed), or as it is when it does not exist.
fn real_path(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

/// A wrapper's program and arguments, and the whole environment of what it runs.
pub type Wrapper = (Vec<String>, Vec<(String, String)>);

/// The confinement of the `git` commands the loop runs itself (a filter driver's conversion),
/// as a wrapper's program and arguments and the whole environment:
/// the agent's sandbox — writes in the work root and the repository's common dir (a linked
/// worktree's objects live there), its environment from the allow-list — so a filter or
/// fsmonitor the repository names runs with no more than an agent could.
///
/// # Errors
/// When the own executable cannot be found.
pub fn git_confinement(
    safety: &Safety,
    artifact_root: &Path,
    common_dir: &Path,
) -> Result<Wrapper> {
    let root = work_root(artifact_root);
    let mut policy = sandbox::policy::build(safety, &root, common_dir, &[]);
    policy.hidden = hidden_store(&root);
    let (exe, mut args) = process::helper(&policy)?;
    args.insert(0, exe.display().to_string());
    Ok((
        args,
        sandbox::env::allowed(std::env::vars(), "git", &safety.env_allow),
    ))
}

/// One finished agent run.
#[derive(Debug)]
pub struct AgentRun {
    /// How the process ended.
    pub outcome: ProcessEnd,
    /// What its output said.
    pub report: RunReport,
    /// The prompt it was fed.
    pub prompt: String,
    /// When it started.
    pub started_at: DateTime<Utc>,
    /// Its log.
    pub log: PathBuf,
    /// The names of the environment variables it was given (never their values).
    pub env_names: Vec<String>,
    /// Protected files it changed (restored by the caller's check).
    pub protected_changed: Vec<String>,
    /// The agent made commits of its own on top of the loop's (its work, though the work tree
    /// may be clean).
    pub committed: bool,
}

/// Run `agent` for `l` with `prompt`; `on_event` sees its events, `promise` is looked for in a
/// streamed log. An answer read back from `stdout` is bounded (past the cap: an error); a log is
/// streamed, whatever its size and bytes.
pub async fn run(
    agent: &AgentSpec,
    l: &Launch,
    prompt: &str,
    promise: &str,
    stops: &mut watch::Receiver<StopLevel>,
    on_event: impl FnMut(JobEvent) -> bool,
) -> Result<AgentRun> {
    let building = timing::step("launch.job");
    let mut job = job(agent, l);
    #[cfg(target_os = "linux")]
    if let Some(watch) = job.liveness.as_mut() {
        watch.shm = shared_shm(job.sandbox.as_ref()).map(std::sync::Arc::new);
    }
    if let Ok(store) = crate::config::home_dir() {
        out_of_the_store(&job.cwd, job.sandbox.as_ref(), &real_path(&store), false)?;
    }
    drop(building);
    make_run_dirs(agent, l, &mut job, prompt, promise)?;
    let group = run_group(&mut job, l);
    let helper_timings = helper_timings(&mut job, l);
    let started_at = Utc::now();
    // The runs of an iteration share its log: this run's part starts here.
    let from = std::fs::metadata(&job.log).map_or(0, |m| m.len());
    let mut unwritten = None;
    let mut on_event = on_event;
    // The prompt's files are written while the process starts (nothing of its command runs
    // before its gate opens, and it reads them only after); a failure keeps the gate shut.
    let outcome = process::run(&job, stops, |event| {
        if matches!(event, JobEvent::Spawned(_))
            && let Err(e) = write_prompt_files(l, prompt)
        {
            unwritten = Some(e);
            return false;
        }
        on_event(event)
    })
    .await;
    record_helper_timings(helper_timings.as_deref(), started_at);
    remove_group(group.as_deref());
    after_run(agent, l, &job)?;
    if let Some(e) = unwritten {
        return Err(e);
    }
    let outcome = outcome?;
    let _scan = timing::step("launch.scan");
    let report = report_of(agent, l, &job, promise, from)?;
    Ok(AgentRun {
        outcome,
        report,
        prompt: prompt.to_string(),
        started_at,
        env_names: job.env.iter().map(|(k, _)| k.clone()).collect(),
        protected_changed: Vec::new(),
        committed: false,
        log: job.log,
    })
}

/// What the run needs before its process is spawned: its records' directory, the promise to
/// watch for, its private temp dir, the CLI's state dirs.
fn make_run_dirs(
    agent: &AgentSpec,
    l: &Launch,
    job: &mut Job,
    prompt: &str,
    promise: &str,
) -> Result<()> {
    let _files = timing::step("launch.dirs");
    fsutil::create_dir_all(&l.dir)?;
    let line = promise.trim();
    if let Some(watch) = job.liveness.as_mut()
        && !line.is_empty()
        && l.stdout.is_none()
    {
        watch.promise = Some(PromiseWatch {
            line: line.to_string(),
            in_prompt: prompt.lines().filter(|p| p.trim() == line).count(),
            grace: Duration::from_secs(l.safety.promise_grace_secs),
        });
    }
    fsutil::create_dir_all(&l.tmp())?;
    super::home::make_state_dirs(agent, &job.env);
    Ok(())
}

/// The prompt kept in the run's records and handed over in its private temp dir (new there:
/// nobody could have read a half-written one before the gate opens).
fn write_prompt_files(l: &Launch, prompt: &str) -> Result<()> {
    let _files = timing::step("launch.files");
    fsutil::atomic_write(&l.prompt_file(), prompt.as_bytes())?;
    fsutil::create_with(&l.handed_prompt(), prompt.as_bytes())
}

/// After the run: its temp dir removed, the CLI's refreshed credentials written back, and the
/// home's layer of a run outside a loop (a delegation, the gate's producer: no later iteration
/// to keep it for) removed.
fn after_run(agent: &AgentSpec, l: &Launch, job: &Job) -> Result<()> {
    let _after = timing::step("launch.after");
    fsutil::remove_dir_all_opt(&l.tmp())?;
    super::home::write_back_credentials(
        &sandbox::env::program_of(&agent.table.command),
        job.sandbox.as_ref(),
    );
    if let Some(h) = job.sandbox.as_ref().and_then(|p| p.home_layer.as_ref())
        && l.wiggum_dir.is_none()
        && let Err(e) = std::fs::remove_dir_all(&h.layer)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(
            "cannot remove the run's home layer {}: {e}",
            h.layer.display()
        );
    }
    Ok(())
}

/// What the run's output says: its answer read back from stdout (bounded), with the usage its
/// part of the log (from byte `from`) holds; else that part, streamed, the promise looked for.
fn report_of(
    agent: &AgentSpec,
    l: &Launch,
    job: &Job,
    promise: &str,
    from: u64,
) -> Result<RunReport> {
    let format = agent.table.output_format;
    Ok(match &l.stdout {
        Some(p) => {
            let mut answer = if p.exists() {
                output::parse(format, &fsutil::read_capped(p, fsutil::ANSWER_CAP)?)
            } else {
                RunReport::default()
            };
            // The answer is stdout; a CLI may print its usage on stderr, which the log holds
            // (codex's `tokens used`).
            answer.fill_usage(&output::scan_file_from(format, &job.log, "", from)?);
            answer
        }
        None => output::scan_file_from(format, &job.log, promise, from)?,
    })
}

impl AgentRun {
    /// What the run contributes to its record.
    #[must_use]
    pub fn facts(&self) -> RunFacts {
        RunFacts {
            started_at: self.started_at,
            pid: self.outcome.pid,
            ending: self.outcome.ending,
            cost_usd: self.report.cost_usd,
            tokens_in: self.report.tokens_in,
            tokens_out: self.report.tokens_out,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{AgentTable, OutputFormat, RevisionOutput};

    fn launch(phase: AgentPhase) -> Launch {
        Launch {
            repo_wide: true,
            phase,
            iteration: 3,
            topic: "t".into(),
            root: "/art".into(),
            wiggum_dir: Some("/art/wiggum".into()),
            dir: "/art/wiggum/iteration-003".into(),
            work_dir: "/art/wiggum/iteration-003".into(),
            stem: "prompt".into(),
            stdout: None,
            temperature: Some(0.3),
            limit: Duration::from_secs(60),
            grace: Duration::from_secs(7),
            token: "tok".into(),
            safety: Safety::default(),
            activity: None,
        }
    }

    #[test]
    fn the_writable_tree_is_the_repository_unless_it_holds_the_home() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        let repo = root.join("repo");
        let art = repo.join("docs/art");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(&art).unwrap();
        let elsewhere = [root.join("home"), root.join("home/.studio-agents")];
        // A repository of its own: its whole work tree.
        assert_eq!(writable_root(&art, &elsewhere), repo);
        // A repository at ~ (dotfiles): the artifact directory alone.
        assert_eq!(writable_root(&art, std::slice::from_ref(&repo)), art);
        assert_eq!(writable_root(&art, &[repo.join(".studio-agents")]), art);
        // No repository: the directory itself.
        let plain = root.join("plain");
        std::fs::create_dir_all(&plain).unwrap();
        assert_eq!(writable_root(&plain, &elsewhere), plain);
    }

    #[test]
    fn every_run_gets_the_contract_environment_and_the_agents_own_settings() {
        let agent = AgentSpec {
            name: "mine".into(),
            table: AgentTable {
                command: "my-agent --file {prompt_file}".into(),
                stdin: false,
                revision_output: RevisionOutput::Stdout,
                output_format: OutputFormat::Plain,
                cwd: Some("sub".into()),
                env: [("MY_KEY".to_string(), "v".to_string())].into(),
                model: None,
            },
        };
        let j = job(&agent, &launch(AgentPhase::Revision));
        let env: std::collections::BTreeMap<_, _> = j.env.iter().cloned().collect();
        for (k, v) in [
            ("ITERATION", "3"),
            ("PREV_ITERATION", "2"),
            ("WIGGUM_PHASE", "revision"),
            ("WIGGUM_DIR", "/art/wiggum"),
            ("ARTIFACT_PATH", "/art"),
            ("TOPIC", "t"),
            ("WIGGUM_TEMPERATURE", "0.3"),
            ("MY_KEY", "v"),
        ] {
            assert_eq!(env.get(k).map(String::as_str), Some(v), "{k}");
        }
        assert_eq!(j.cwd, Path::new("/art/sub"));
        assert_eq!(j.grace, Duration::from_secs(7));
        assert_eq!(j.stdin, None);
        // The prompt is handed over in the run's private temp dir; its record stays out of sight.
        let handed = launch(AgentPhase::Revision).handed_prompt();
        assert!(handed.starts_with(std::env::temp_dir()));
        assert!(
            j.command.contains(&handed.display().to_string()),
            "{}",
            j.command
        );
        assert_eq!(env.get("PROMPT_FILE").map(String::as_str), handed.to_str());
        assert_eq!(j.log, Path::new("/art/wiggum/iteration-003/agent.log"));
        assert!(j.env_clear && j.sandbox.is_some() && j.liveness.is_some());
    }

    #[test]
    fn no_run_works_reads_or_writes_inside_the_store() {
        let agent = AgentSpec {
            name: "sh".into(),
            table: crate::agent::spec::preset("claude").unwrap(),
        };
        let store = Path::new("/home/u/.studio-agents");
        let check = |l: &Launch| {
            let j = job(&agent, l);
            out_of_the_store(&j.cwd, j.sandbox.as_ref(), store, true)
        };
        let mut l = launch(AgentPhase::Iteration);
        assert!(check(&l).is_ok());
        // An artifact inside the store: its work dir is there.
        l.root = store.join("artifacts/x");
        let err = check(&l).unwrap_err();
        assert!(err.to_string().contains("works in"), "{err}");
        // A writable or readable entry inside it, or one that holds it.
        for (writable, readable, how) in [
            (vec![store.join("kept")], vec![], "writes"),
            (vec![], vec![store.join("runs")], "reads"),
            (vec!["/home/u".into()], vec![], "holds the store"),
        ] {
            let mut l = launch(AgentPhase::Iteration);
            l.safety.writable = writable;
            l.safety.readable = readable;
            let err = check(&l).unwrap_err();
            assert!(err.to_string().contains(how), "{err}");
        }
    }

    #[test]
    fn the_deny_list_reaches_clis_that_take_one() {
        let mut l = launch(AgentPhase::Iteration);
        l.safety.deny_tools = vec!["Bash(rm:*)".into(), "WebFetch".into()];
        let claude = crate::agent::spec::preset("claude").unwrap();
        let j = job(
            &AgentSpec {
                name: "claude".into(),
                table: claude,
            },
            &l,
        );
        assert!(
            j.command
                .ends_with(" --disallowedTools 'Bash(rm:*),WebFetch'"),
            "{}",
            j.command
        );
        let codex = crate::agent::spec::preset("codex").unwrap();
        let j = job(
            &AgentSpec {
                name: "codex".into(),
                table: codex,
            },
            &l,
        );
        assert!(!j.command.contains("disallowed"), "{}", j.command);
    }
}
