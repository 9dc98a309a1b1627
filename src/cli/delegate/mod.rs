//! `delegate`: one agent, one shot, one artifact — the delegation that precedes a loop (ADR
//! 0015's phase 4). `start` runs an agent on a task file; the result lands in
//! `<dir>/artifact.md` beside `task.md` and `metadata.json` (type, agent, times, exit, cost);
//! `--detach` runs it in the background, controlled like a loop (`status`, `stop`, `list`);
//! `view` and `artifact-path` show what it produced; `--then-wiggum` chains a detached Wiggum
//! loop that needs no other flag.

use std::path::{Path, PathBuf};

use chrono::Utc;
use clap::{Args, Subcommand};

mod control;

use super::common;
use crate::agent::spec;
use crate::config;
use crate::disk::delegation;
use crate::disk::layout::Layout;
use crate::disk::registry;
use crate::error::{Error, Result};
use crate::ralph::start::StartOpts;
use crate::supervisor::delegation as delegation_run;
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
    /// Where the artifact goes (default: ~/studio-agents/artifacts/<date>-<topic>, said at
    /// start; never inside $STUDIO_AGENTS_HOME).
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
            // The delegation's artifact is an agent's text: shown without control sequences.
            common::page(&crate::sys::term::printable(&fsutil::read(&path)?));
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
            let dir = default_dir(&home, &a.topic)?;
            eprintln!("artifact folder: {}", dir.display());
            dir
        }
    };
    let dir = std::path::absolute(&dir)
        .map_err(|e| Error::input(format!("--artifact-path {}: {e}", dir.display())))?;
    crate::disk::registry::check_path("--artifact-path", &dir)?;
    if within(&dir, &home) {
        return Err(Error::input(format!(
            "--artifact-path {}: inside $STUDIO_AGENTS_HOME ({}), where the agent would see every loop's records and the copies of the user's work; choose a directory outside it",
            dir.display(),
            home.display()
        )));
    }
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
    delegation_run::run(&delegation_run::Request {
        topic: &a.topic,
        task,
        kind: &kind,
        agent: &agent,
        settings: &settings,
        home: &home,
        layout: &layout,
    })?;
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

/// Where a delegation's artifact goes when no `--artifact-path` says: `~/studio-agents/artifacts/
/// <date>-<topic>`, out of the store (the agent works there); the current directory's
/// `<date>-<topic>` when the store is that folder or holds it.
fn default_dir(home: &Path, topic: &str) -> Result<PathBuf> {
    let name = format!("{}-{topic}", Utc::now().format("%Y-%m-%d"));
    let user = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join("studio-agents").join("artifacts"));
    match user {
        Some(d) if !within(&d, home) && !within(home, &d) => Ok(d.join(name)),
        _ => std::env::current_dir()
            .map(|c| c.join(name))
            .map_err(|e| Error::input(format!("the current directory: {e}"))),
    }
}

/// Whether `path` is `dir` or lies inside it (both as they resolve, where they exist).
fn within(path: &Path, dir: &Path) -> bool {
    let real = |p: &Path| {
        // The deepest existing ancestor resolved, the rest as it is.
        let mut base = p.to_path_buf();
        let mut rest = Vec::new();
        while !base.exists() {
            match (base.file_name().map(|n| n.to_os_string()), base.parent()) {
                (Some(n), Some(parent)) => {
                    rest.push(n);
                    base = parent.to_path_buf();
                }
                _ => break,
            }
        }
        let mut out = base.canonicalize().unwrap_or(base);
        out.extend(rest.iter().rev());
        out
    };
    real(path).starts_with(real(dir))
}

/// `--detach`: the same delegation in a process of its own session, its output in
/// `<dir>/delegation.log`; returns once its record says it runs.
fn detach(a: &DelegateArgs, config_file: Option<&Path>, dir: &Path) -> Result<i32> {
    fsutil::create_dir_all(dir)?;
    let log_path = dir.join("delegation.log");
    let task = std::path::absolute(&a.task)
        .map_err(|e| Error::input(format!("{}: {e}", a.task.display())))?;
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
    let mut child =
        crate::supervisor::spawn_self::detached(&args, &[], &log_path, "the delegation")?;
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
    let sa = crate::ralph::progress::program(crate::config::home_to_name().as_deref());
    if ready == crate::supervisor::Ready::Finished {
        println!("delegation `{t}` (pid {pid}) ended at once");
        println!("  log:      {}", log_path.display());
        println!("  status:   {sa} delegate status {t}");
        return Ok(0);
    }
    println!("started delegation `{t}` (pid {pid})");
    println!("  artifact: {}", dir.join("artifact.md").display());
    println!("  log:      {}", log_path.display());
    println!("  status:   {sa} delegate status {t}");
    println!("  stop:     {sa} delegate stop {t}");
    Ok(0)
}
