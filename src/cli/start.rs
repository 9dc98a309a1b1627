//! `wiggum start`.

use std::path::PathBuf;

use clap::Args;

use crate::error::Result;
use crate::ralph::start::StartOpts;
use crate::supervisor;

/// Flags of `start`.
#[derive(Debug, Args, Clone)]
pub struct StartArgs {
    /// The loop's name (letters, digits, '-', '_', '.').
    pub topic: String,
    /// The artifact directory (holds artifact.md; wiggum/ is created inside). Optional when the
    /// topic is registered: a restart needs no flags.
    #[arg(long, value_name = "DIR")]
    pub artifact_path: Option<PathBuf>,
    /// Iteration limit (≥ 1).
    #[arg(long, value_name = "N")]
    pub max_iterations: Option<u32>,
    /// Outer-loop quality threshold, 0–1.
    #[arg(long, value_name = "F")]
    pub quality_threshold: Option<f64>,
    /// Gate pass threshold, 0–10.
    #[arg(long, value_name = "S")]
    pub pass_threshold: Option<f64>,
    /// Gate rounds per iteration (≥ 1).
    #[arg(long, value_name = "R")]
    pub max_rounds: Option<u32>,
    /// Agent: an [agents] entry or a preset (claude, codex, gemini, kiro-cli, aider, opencode, amp).
    #[arg(long, value_name = "NAME", conflicts_with = "agent_cmd")]
    pub agent: Option<String>,
    /// Any command as the agent (run with sh -c; prompt on stdin).
    #[arg(long, value_name = "CMD")]
    pub agent_cmd: Option<String>,
    /// Evaluator: an [evaluators] entry or `heuristic`.
    #[arg(long, value_name = "NAME")]
    pub evaluator: Option<String>,
    /// Artifact type: research, design, code, generic or a [types] entry (default: a
    /// delegation's metadata.json, else [defaults] type, else generic).
    #[arg(long = "type", value_name = "NAME")]
    pub kind: Option<String>,
    /// Run the three-persona panel after the evaluator.
    #[arg(long)]
    pub panel: bool,
    /// A validation command, run in the repository after every iteration (repeatable; over
    /// [validation] commands). A code loop without one proposes the project's own.
    #[arg(long, value_name = "CMD", conflicts_with = "no_validate")]
    pub validate: Vec<String>,
    /// Run a code loop without validation (no test command proposed).
    #[arg(long)]
    pub no_validate: bool,
    /// A code loop's spec: a file the agents read and never modify, relative to the artifact
    /// directory (repeatable; default: its artifact.md).
    #[arg(long, value_name = "PATH")]
    pub spec: Vec<PathBuf>,
    /// Resolve settings, agent, evaluator, sandbox and limits, render the prompt it would feed,
    /// print all of it; run and write nothing.
    #[arg(long, conflicts_with_all = ["foreground", "watch"])]
    pub dry_run: bool,
    /// With `--dry-run`: print it as JSON.
    #[arg(long, requires = "dry_run")]
    pub json: bool,
    /// Forget what the breakers remember (repeated errors, shrinking output, validation
    /// failures) from earlier runs of this loop.
    #[arg(long)]
    pub reset_breaker: bool,
    /// Attach the live view after starting (also `[defaults] auto_watch`).
    #[arg(long, conflicts_with = "foreground")]
    pub watch: bool,
    /// Run in this process instead of detaching.
    #[arg(long)]
    pub foreground: bool,
    /// Run in a linked worktree of its own, on branch `wiggum/<topic>` from the current HEAD
    /// (also `[defaults] isolation = "worktree"`); `merge` brings it back.
    #[arg(long)]
    pub worktree: bool,
    /// In the foreground, print the log's records on stderr too (not only warnings).
    #[arg(short, long, requires = "foreground")]
    pub verbose: bool,
}

impl StartArgs {
    /// The library's view of the flags.
    #[must_use]
    pub fn opts(&self, config: Option<PathBuf>) -> StartOpts {
        StartOpts {
            topic: self.topic.clone(),
            artifact_path: self.artifact_path.clone(),
            max_iterations: self.max_iterations,
            quality_threshold: self.quality_threshold,
            pass_threshold: self.pass_threshold,
            max_rounds: self.max_rounds,
            agent: self.agent.clone(),
            agent_cmd: self.agent_cmd.clone(),
            evaluator: self.evaluator.clone(),
            panel: self.panel,
            config,
            reset_breaker: self.reset_breaker,
            probed: None,
            kind: self.kind.clone(),
            code: crate::ralph::work::setup::CodeFlags {
                validate: self.validate.clone(),
                no_validate: self.no_validate,
                spec: self.spec.clone(),
            },
        }
    }
}

/// Run `start`; returns the exit code. A start refused (exit 2 or 3) after its worktree was
/// made takes the worktree away again: a refusal leaves things as they were.
pub fn run(args: &StartArgs, config: Option<PathBuf>) -> Result<i32> {
    let mut opts = args.opts(config);
    anchor_agent_cmd(&mut opts);
    if args.dry_run {
        return dry_run(args, &opts);
    }
    let made = super::worktree::before_start(&mut opts, args.worktree)?;
    let started = start(args, &opts);
    if let (Err(e), Some(made)) = (&started, &made)
        && matches!(e.exit_code(), 2 | 3)
    {
        match super::worktree::undo_start(&opts.topic, made) {
            Ok(()) => eprintln!(
                "note: the start was refused; worktree {} is taken away again",
                made.worktree.display()
            ),
            Err(undo) => eprintln!("warning: {undo}"),
        }
    }
    started
}

/// A relative program is the file beside the user, not one in the artifact directory where
/// the agent runs: made absolute here, so the daemon and a restart run the same file.
fn anchor_agent_cmd(opts: &mut StartOpts) {
    if let Some(cmd) = &opts.agent_cmd
        && let Ok(cwd) = std::env::current_dir()
        && let Some((anchored, path)) =
            crate::agent::spec::anchor_program(cmd, &cwd, |p| p.is_file())
    {
        eprintln!(
            "note: --agent-cmd runs {} (taken from {}; the agent runs in the artifact directory)",
            path.display(),
            cwd.display()
        );
        opts.agent_cmd = Some(anchored);
    }
}

/// `--dry-run`: what the start would do, written nowhere.
fn dry_run(args: &StartArgs, opts: &StartOpts) -> Result<i32> {
    let home = crate::config::home_dir()?;
    let p = crate::ralph::start::prepare(opts, &home)?;
    let d = crate::ralph::dry_run::plan(&p)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&d).unwrap_or_default());
    } else {
        println!("{}", crate::ralph::dry_run::text(&d));
    }
    Ok(0)
}

/// The start itself: in this process, or detached (and watched when asked).
fn start(args: &StartArgs, opts: &StartOpts) -> Result<i32> {
    if args.foreground {
        return supervisor::run_foreground(opts, args.verbose);
    }
    let auto_watch = supervisor::detach(opts)?;
    if args.watch || auto_watch {
        return crate::view::watch::run(&args.topic, crate::supervisor::control::request_stop);
    }
    Ok(0)
}
