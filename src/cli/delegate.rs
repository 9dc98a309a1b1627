//! `delegate start <topic> <task.md>`: one agent, one shot, one artifact — the delegation that
//! precedes a loop (ADR 0015's phase 4). The result lands in `<dir>/artifact.md` beside
//! `task.md` and `metadata.json`; `--then-wiggum` chains a detached Wiggum loop on it.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};
use tokio::sync::watch;

use super::common;
use crate::agent::launch::{self, AgentPhase, Launch};
use crate::agent::process::{self, StopLevel};
use crate::agent::spec;
use crate::config;
use crate::disk::layout::Layout;
use crate::disk::registry;
use crate::error::{Error, Result};
use crate::ralph::start::StartOpts;
use crate::ralph::templates;
use crate::sys::fsutil;

/// `delegate` subcommands.
#[derive(Debug, Subcommand)]
pub enum Delegate {
    /// Run an agent once on a task file; its result becomes the artifact.
    #[command(
        after_help = "Examples:\n  studio-agents delegate start monarch task.md --agent claude\n  studio-agents delegate start monarch task.md --agent claude --then-wiggum"
    )]
    Start(DelegateArgs),
}

/// Flags of `delegate start`.
#[derive(Debug, Args)]
pub struct DelegateArgs {
    /// The topic (also the Wiggum loop's, with --then-wiggum).
    pub topic: String,
    /// The task, in Markdown.
    pub task: PathBuf,
    /// Agent: an [agents] entry or a preset.
    #[arg(long, value_name = "NAME", conflicts_with = "agent_cmd")]
    pub agent: Option<String>,
    /// Any command as the agent (prompt on stdin).
    #[arg(long, value_name = "CMD")]
    pub agent_cmd: Option<String>,
    /// Where the artifact goes (default: $STUDIO_AGENTS_HOME/artifacts/<topic>).
    #[arg(long, value_name = "DIR")]
    pub artifact_path: Option<PathBuf>,
    /// Then start a detached Wiggum loop on the artifact with the same agent.
    #[arg(long)]
    pub then_wiggum: bool,
}

/// Run `delegate start`.
pub fn run(d: &Delegate, config_file: Option<PathBuf>) -> Result<i32> {
    let Delegate::Start(a) = d;
    registry::check_topic(&a.topic)?;
    let task = std::fs::read_to_string(&a.task)
        .map_err(|e| Error::input(format!("{}: cannot read the task: {e}", a.task.display())))?;
    let settings = common::settings(config_file.clone())?;
    let agent = spec::resolve(&settings, a.agent.as_deref(), a.agent_cmd.as_deref())?;
    spec::check_installed(&settings, &agent, a.agent.is_some())?;
    let dir = match &a.artifact_path {
        Some(p) => p.clone(),
        None => config::home_dir()?.join("artifacts").join(&a.topic),
    };
    let layout = Layout::for_loop(
        &config::home_dir()?,
        std::path::absolute(&dir)
            .map_err(|e| Error::input(format!("--artifact-path {}: {e}", dir.display())))?,
    );
    if layout.original_artifact().exists() {
        return Err(Error::input(format!(
            "{} exists already: delegation writes a new artifact (start a loop on it instead: studio-agents wiggum start {} --artifact-path {})",
            layout.original_artifact().display(),
            a.topic,
            layout.root().display()
        )));
    }
    fsutil::create_dir_all(layout.root())?;
    fsutil::atomic_write(&layout.task(), task.as_bytes())?;
    let meta = serde_json::json!({"agent_type": agent.name, "topic": a.topic,
        "task_file": "task.md", "created_at": chrono::Utc::now()});
    fsutil::atomic_write(
        &layout.metadata(),
        serde_json::to_string_pretty(&meta)
            .unwrap_or_default()
            .as_bytes(),
    )?;
    let prompt = templates::render(
        include_str!("../../templates/DELEGATE_PROMPT.md"),
        &[
            ("topic", a.topic.clone()),
            ("task", task),
            ("artifact_path", layout.root().display().to_string()),
        ],
    );
    let work = layout.delegation_dir();
    fsutil::create_dir_all(&work)?;
    let launch = Launch {
        phase: AgentPhase::Delegation,
        iteration: 0,
        topic: a.topic.clone(),
        root: layout.root().to_path_buf(),
        wiggum_dir: None,
        dir: work.clone(),
        work_dir: layout.root().to_path_buf(),
        stem: "prompt".into(),
        stdout: Some(work.join("answer.md")),
        temperature: None,
        limit: Duration::from_secs(settings.safety.max_time_per_iteration),
        grace: Duration::from_secs(settings.safety.kill_grace_secs),
        token: process::new_token(&format!("delegate-{}", a.topic)),
        safety: settings.safety.clone(),
        activity: None,
    };
    let (_tx, mut rx) = watch::channel(StopLevel::None);
    crate::agent::kill::become_supervisor();
    let run = crate::sys::runtime::runtime()?.block_on(launch::run(
        &agent,
        &launch,
        &prompt,
        "",
        &mut rx,
        |_| {},
    ))?;
    let out = &run.outcome;
    if !out.ending.success() {
        return Err(Error::runtime(format!(
            "the agent {}; see {}",
            out.ending,
            run.log.display()
        )));
    }
    if !layout.original_artifact().exists() {
        let text = &run.report.text;
        if text.trim().is_empty() {
            return Err(Error::runtime(format!(
                "the agent wrote no artifact.md and printed nothing; see {}",
                run.log.display()
            )));
        }
        fsutil::atomic_write(&layout.original_artifact(), text.trim_start().as_bytes())?;
    }
    println!("artifact: {}", layout.original_artifact().display());
    // The topic now names this artifact: `wiggum start <topic>` needs no other flag.
    registry::register(&config::home_dir()?, &a.topic, layout.root())?;
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
