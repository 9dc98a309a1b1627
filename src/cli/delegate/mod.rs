//! `delegate`: one agent, one shot, one artifact — the delegation that precedes a loop (ADR
//! 0015's phase 4). `start` runs an agent on a task file; the result lands in
//! `<dir>/artifact.md` beside `task.md` and `metadata.json` (type, agent, times, exit, cost);
//! `--detach` runs it in the background, controlled like a loop (`status`, `stop`, `list`);
//! `view` and `artifact-path` show what it produced; `--then-wiggum` chains a detached Wiggum
//! loop that needs no other flag.

use std::path::{Path, PathBuf};

use chrono::Utc;
use clap::{Args, Subcommand};
use tokio::sync::watch;

mod control;

use super::common;
use crate::agent::launch::{self, AgentPhase, Launch};
use crate::agent::process::StopLevel;
use crate::agent::spec;
use crate::config;
use crate::disk::delegation::{self, Delegation, DelegationStatus};
use crate::disk::layout::Layout;
use crate::disk::registry;
use crate::error::{Error, IoContext, Result};
use crate::ralph::start::StartOpts;
use crate::ralph::templates;
use crate::sys::fsutil;

/// `delegate` subcommands.
#[derive(Debug, Subcommand)]
pub enum Delegate {
    /// Run an agent once on a task file; its result becomes the artifact.
    #[command(
        after_help = "Examples:\n  studio-agents delegate start monarch task.md --type research --agent claude\n  studio-agents delegate start monarch task.md --type research --detach --then-wiggum"
    )]
    Start(DelegateArgs),
    /// Where a delegation is: running, done, failed, stopped (or dead).
    Status(TopicArg),
    /// Stop a detached delegation (its agent's whole tree).
    Stop(TopicArg),
    /// Every delegation: topic, status, type, agent, artifact.
    List,
    /// Print the artifact a delegation produced (paged on a terminal).
    View(TopicArg),
    /// Print the path of the artifact a delegation produced.
    ArtifactPath(TopicArg),
}

/// A delegation's topic.
#[derive(Debug, Args)]
pub struct TopicArg {
    /// The topic.
    pub topic: String,
}

/// Flags of `delegate start`.
#[derive(Debug, Args, Clone)]
pub struct DelegateArgs {
    /// The topic (also the Wiggum loop's, with --then-wiggum).
    pub topic: String,
    /// The task, in Markdown.
    pub task: PathBuf,
    /// Artifact type: research, design, code, generic or a [types] entry (recorded in
    /// metadata.json; the loop on the artifact measures it so).
    #[arg(long = "type", value_name = "NAME", default_value = "generic")]
    pub kind: String,
    /// Agent: an [agents] entry or a preset.
    #[arg(long, value_name = "NAME", conflicts_with = "agent_cmd")]
    pub agent: Option<String>,
    /// Any command as the agent (prompt on stdin).
    #[arg(long, value_name = "CMD")]
    pub agent_cmd: Option<String>,
    /// Where the artifact goes (default: $STUDIO_AGENTS_HOME/artifacts/<date>-<topic>).
    #[arg(long, value_name = "DIR")]
    pub artifact_path: Option<PathBuf>,
    /// Run in the background; `delegate status|stop <topic>` control it.
    #[arg(long)]
    pub detach: bool,
    /// Then start a detached Wiggum loop on the artifact with the same agent.
    #[arg(long)]
    pub then_wiggum: bool,
}

/// Run a `delegate` subcommand.
pub fn run(d: &Delegate, config_file: Option<PathBuf>) -> Result<i32> {
    match d {
        Delegate::Start(a) => start(a, config_file),
        Delegate::Status(t) => control::status(&t.topic),
        Delegate::Stop(t) => control::stop(&t.topic),
        Delegate::List => control::list(),
        Delegate::View(t) => {
            let (_, path) = control::artifact_of(&t.topic)?;
            common::page(&fsutil::read(&path)?);
            Ok(0)
        }
        Delegate::ArtifactPath(t) => {
            println!("{}", control::artifact_of(&t.topic)?.1.display());
            Ok(0)
        }
    }
}

fn start(a: &DelegateArgs, config_file: Option<PathBuf>) -> Result<i32> {
    registry::check_topic(&a.topic)?;
    let task = std::fs::read_to_string(&a.task)
        .map_err(|e| Error::input(format!("{}: cannot read the task: {e}", a.task.display())))?;
    let settings = common::settings(config_file.clone())?;
    let agent = spec::resolve(&settings, a.agent.as_deref(), a.agent_cmd.as_deref())?;
    spec::check_installed(&settings, &agent, a.agent.is_some())?;
    let (kind, warning) =
        crate::quality::types::resolve(&a.kind, &settings.types, settings.quality_metrics);
    if let Some(w) = warning {
        eprintln!("warning: {w}");
    }
    let home = config::home_dir()?;
    let dir = match &a.artifact_path {
        Some(p) => p.clone(),
        None => {
            home.join("artifacts")
                .join(format!("{}-{}", Utc::now().format("%Y-%m-%d"), a.topic))
        }
    };
    let dir = std::path::absolute(&dir)
        .map_err(|e| Error::input(format!("--artifact-path {}: {e}", dir.display())))?;
    crate::disk::registry::check_path("--artifact-path", &dir)?;
    let layout = Layout::for_loop(&home, &dir);
    if layout.original_artifact().exists() {
        return Err(Error::input(format!(
            "{} exists already: delegation writes a new artifact (start a loop on it instead: studio-agents wiggum start {} --artifact-path {})",
            layout.original_artifact().display(),
            a.topic,
            layout.root().display()
        )));
    }
    if a.detach {
        return detach(a, config_file.as_deref(), &dir);
    }
    fsutil::create_dir_all(layout.root())?;
    fsutil::atomic_write(&layout.task(), task.as_bytes())?;
    let mut rec = Delegation {
        topic: a.topic.clone(),
        agent_type: kind.name.clone(),
        agent: agent.name.clone(),
        agent_command: agent.table.command.clone(),
        task_file: "task.md".into(),
        created_at: Utc::now(),
        status: DelegationStatus::Running,
        pid: Some(std::process::id()),
        ended_at: None,
        exit: None,
        cost_usd: None,
        note: None,
    };
    delegation::write(&layout.metadata(), &rec)?;
    // The topic names this artifact from now on: status, stop, and `wiggum start <topic>`.
    registry::register(&home, &a.topic, layout.root())?;
    let prompt = templates::render(
        include_str!("../../../templates/DELEGATE_PROMPT.md"),
        &[
            ("topic", a.topic.clone()),
            ("task", task),
            ("artifact_path", layout.root().display().to_string()),
            ("type_requirements", kind.requirements()),
        ],
    );
    let work = layout.delegation_dir();
    fsutil::create_dir_all(&work)?;
    let launch = Launch {
        stdout: Some(work.join("answer.md")),
        repo_wide: kind.writes_repository(),
        ..Launch::for_phase(
            AgentPhase::Delegation,
            &a.topic,
            layout.root().to_path_buf(),
            work.clone(),
            &settings.safety,
            &format!("delegate-{}", a.topic),
        )
    };
    crate::agent::kill::become_supervisor();
    let rt = crate::sys::runtime::runtime()?;
    let outcome = rt.block_on(async {
        let (tx, mut rx) = watch::channel(StopLevel::None);
        // SIGTERM (`delegate stop`) or SIGINT: stop the agent's tree, record why.
        let signals = tokio::spawn(async move {
            use tokio::signal::unix::{SignalKind, signal};
            let (Ok(mut term), Ok(mut int)) = (
                signal(SignalKind::terminate()),
                signal(SignalKind::interrupt()),
            ) else {
                return;
            };
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            let _closed = tx.send(StopLevel::Now);
        });
        let run = launch::run(&agent, &launch, &prompt, "", &mut rx, |_| {}).await;
        signals.abort();
        run
    });
    rec.pid = None;
    rec.ended_at = Some(Utc::now());
    let run = match outcome {
        Ok(run) => run,
        Err(e) => {
            rec.status = DelegationStatus::Failed;
            rec.note = Some(e.to_string());
            delegation::write(&layout.metadata(), &rec)?;
            return Err(e);
        }
    };
    rec.exit = Some(run.outcome.ending.to_string());
    rec.cost_usd = run.report.cost_usd;
    let failure = if run.outcome.ending == crate::disk::records::Ending::Stopped {
        rec.status = DelegationStatus::Stopped;
        Some(format!(
            "the delegation was stopped; see {}",
            run.log.display()
        ))
    } else if !run.outcome.ending.success() {
        Some(format!(
            "the agent {}; see {}",
            run.outcome.ending,
            run.log.display()
        ))
    } else if !layout.original_artifact().exists() && run.report.text.trim().is_empty() {
        Some(format!(
            "the agent wrote no artifact.md and printed nothing; see {}",
            run.log.display()
        ))
    } else {
        None
    };
    if let Some(why) = failure {
        if rec.status == DelegationStatus::Running {
            rec.status = DelegationStatus::Failed;
        }
        rec.note = Some(why.clone());
        delegation::write(&layout.metadata(), &rec)?;
        return Err(Error::runtime(why));
    }
    if !layout.original_artifact().exists() {
        fsutil::atomic_write(
            &layout.original_artifact(),
            run.report.text.trim_start().as_bytes(),
        )?;
    }
    rec.status = DelegationStatus::Done;
    delegation::write(&layout.metadata(), &rec)?;
    println!("artifact: {}", layout.original_artifact().display());
    if !a.then_wiggum {
        println!(
            "refine it with: studio-agents wiggum start {} (artifact: {})",
            a.topic,
            layout.root().display()
        );
        return Ok(0);
    }
    let opts = StartOpts {
        topic: a.topic.clone(),
        artifact_path: Some(layout.root().to_path_buf()),
        agent: a.agent.clone(),
        agent_cmd: a.agent_cmd.clone(),
        config: config_file,
        ..StartOpts::default()
    };
    crate::supervisor::detach(&opts)?;
    Ok(0)
}

/// `--detach`: the same delegation in a process of its own session, its output in
/// `<dir>/delegation.log`; returns once its record says it runs.
fn detach(a: &DelegateArgs, config_file: Option<&Path>, dir: &Path) -> Result<i32> {
    fsutil::create_dir_all(dir)?;
    let log_path = dir.join("delegation.log");
    let log = fsutil::open_append(&log_path)?;
    let err = log.try_clone().at(&log_path, "clone handle")?;
    let task = std::path::absolute(&a.task)
        .map_err(|e| Error::input(format!("{}: {e}", a.task.display())))?;
    let exe = std::env::current_exe()
        .map_err(|e| Error::runtime(format!("cannot find own executable: {e}")))?;
    let mut args: Vec<String> = Vec::new();
    if let Some(c) = config_file {
        let c = std::path::absolute(c)
            .map_err(|e| Error::input(format!("--config {}: {e}", c.display())))?;
        args.extend(["--config".into(), c.display().to_string()]);
    }
    args.extend([
        "delegate".into(),
        "start".into(),
        a.topic.clone(),
        task.display().to_string(),
        "--type".into(),
        a.kind.clone(),
        "--artifact-path".into(),
        dir.display().to_string(),
    ]);
    if let Some(n) = &a.agent {
        args.extend(["--agent".into(), n.clone()]);
    }
    if let Some(c) = &a.agent_cmd {
        args.extend(["--agent-cmd".into(), c.clone()]);
    }
    if a.then_wiggum {
        args.push("--then-wiggum".into());
    }
    let mut cmd = process_wrap::std::CommandWrap::with_new(&exe, |c| {
        c.args(&args)
            .current_dir("/")
            .stdin(std::process::Stdio::null())
            .stdout(log)
            .stderr(err);
    });
    cmd.wrap(process_wrap::std::ProcessSession);
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::runtime(format!("cannot start the delegation: {e}")))?;
    let pid = child.id();
    let meta = dir.join("metadata.json");
    let ready = crate::supervisor::wait_until_ready(
        child.as_mut(),
        &log_path,
        "the delegation",
        "start",
        || Ok(delegation::read(&meta).ok().flatten().and_then(|r| r.pid) == Some(pid)),
    )?;
    let t = &a.topic;
    if ready == crate::supervisor::Ready::Finished {
        println!("delegation `{t}` (pid {pid}) ended at once");
        println!("  log:      {}", log_path.display());
        println!("  status:   studio-agents delegate status {t}");
        return Ok(0);
    }
    println!("started delegation `{t}` (pid {pid})");
    println!("  artifact: {}", dir.join("artifact.md").display());
    println!("  log:      {}", log_path.display());
    println!("  status:   studio-agents delegate status {t}");
    println!("  stop:     studio-agents delegate stop {t}");
    Ok(0)
}
