//! Command-line definitions (clap) and printing. One module per subcommand; no business logic
//! here beyond turning flags into library calls. The top of the tree: may import every part,
//! and nothing imports it.

// Doc comments here are clap's help text: `[agents]` names a TOML table and `<topic>` a
// placeholder, not a link or an HTML tag.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

pub(crate) mod answer;
pub(crate) mod cgroup_watch;
pub(crate) mod common;
pub(crate) mod control;
pub(crate) mod delegate;
pub(crate) mod diff;
pub(crate) mod doctor;
pub(crate) mod events;
pub(crate) mod forget;
pub(crate) mod gate;
pub(crate) mod inspect;
pub(crate) mod panel;
pub(crate) mod pr;
pub(crate) mod remote;
pub mod sandbox_exec;
pub(crate) mod serve;
pub(crate) mod sign;
pub(crate) mod skill;
pub(crate) mod start;
pub(crate) mod status;
pub(crate) mod worktree;

use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser, Subcommand};

/// Ralph loops as a daemon: a fresh agent process per iteration, memory on disk, an isolated
/// evaluator gate, and a git commit per accepted iteration.
#[derive(Debug, Parser)]
#[command(name = "studio-agents", version, propagate_version = true)]
#[command(
    after_help = "Examples:\n  studio-agents wiggum start research --artifact-path ./artifacts/research\n  studio-agents wiggum status\n  studio-agents wiggum stop research\n\nExit codes:\n  0    success (a loop that completed or was stopped; gate: PASS)\n  1    runtime failure (a loop that failed: breaker, error; gate: FAIL or ERROR)\n  2    bad usage or input: a flag, a file, a settings key (nothing is written)\n  3    already running (start, forget), or not running / not paused (stop, pause, resume)\n  130  interrupted (Ctrl-C in the foreground, after a clean stop)"
)]
pub struct Cli {
    /// Settings file layered over $STUDIO_AGENTS_HOME/wiggum.toml and the loop's wiggum.toml.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Top,
}

/// Top-level commands.
#[derive(Debug, Subcommand)]
pub enum Top {
    /// Ralph loops with the Wiggum gate.
    #[command(subcommand)]
    Wiggum(Wiggum),
    /// Single-shot delegation: one agent run on a task file produces an artifact.
    #[command(subcommand)]
    Delegate(delegate::Delegate),
    /// A skill that teaches agents the Wiggum loop: `skill install <dir>`, `skill show`.
    #[command(subcommand)]
    Skill(skill::Skill),
    /// Print shell completions: `studio-agents completions bash > /etc/bash_completion.d/studio-agents`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff): `studio-agents man | man -l -`.
    Man,
    /// Internal: confine this process with a policy, then run the command (every agent run
    /// goes through it).
    #[command(name = "sandbox-exec", hide = true)]
    SandboxExec(sandbox_exec::SandboxArgs),
    /// Internal: kill the supervisor's runs' cgroups when it dies outright.
    #[command(name = "cgroup-watch", hide = true)]
    CgroupWatch(cgroup_watch::WatchArgs),
}

/// `wiggum` subcommands.
#[derive(Debug, Subcommand)]
pub enum Wiggum {
    /// Start a loop (detached unless --foreground).
    #[command(
        after_help = "Examples:\n  studio-agents wiggum start research --artifact-path ./art --agent claude\n  studio-agents wiggum start demo --artifact-path /tmp/demo --agent-cmd ./my-agent.sh --foreground\n  studio-agents wiggum start docs --artifact-path ./docs-loop --max-iterations 5 --evaluator judge --panel"
    )]
    Start(start::StartArgs),
    /// Merge a loop's branch (`start --worktree`) back into the branch it started from; a
    /// conflict changes nothing and lists the paths (exit 1).
    #[command(
        after_help = "Examples:\n  studio-agents wiggum merge research\n  studio-agents wiggum merge research --squash --into main\n  studio-agents wiggum merge --all"
    )]
    Merge(worktree::MergeArgs),
    /// Remove a loop's worktree once its branch is merged (the branch is kept unless
    /// --delete-branch).
    #[command(
        after_help = "Examples:\n  studio-agents wiggum clean research\n  studio-agents wiggum clean research --delete-branch"
    )]
    Clean(worktree::CleanArgs),
    /// Stop a running loop: SIGTERM to the supervisor, which stops its agent (grace, then SIGKILL).
    #[command(
        after_help = "Examples:\n  studio-agents wiggum stop research\n  studio-agents wiggum stop research --after-iteration\n  studio-agents wiggum stop research --timeout 30"
    )]
    Stop(control::StopArgs),
    /// Take the loop's `wiggum/wiggum.toml` as it is now: `start` refuses one that changed since
    /// it was last allowed (the agent can write it), or, before a first start, one that weakens
    /// the harness (--artifact-path names a loop that never ran).
    #[command(
        after_help = "Examples:\n  studio-agents wiggum allow research\n  studio-agents wiggum allow docs --artifact-path repo/docs"
    )]
    Allow(control::AllowArgs),
    /// Forget a loop: its registration and records under $STUDIO_AGENTS_HOME (refused while it
    /// runs); its directory, wiggum/ and commits stay. --kept removes the copies of your work too.
    #[command(
        after_help = "Examples:\n  studio-agents wiggum forget research\n  studio-agents wiggum forget research --kept"
    )]
    Forget(forget::ForgetArgs),
    /// What this machine enforces around an agent run, and what it cannot (exit 1 when
    /// `[safety] sandbox = "required"` would refuse to run).
    #[command(
        after_help = "Examples:\n  studio-agents wiggum doctor\n  studio-agents wiggum doctor --json"
    )]
    Doctor(doctor::DoctorArgs),
    /// Pause a running loop at the next iteration boundary.
    #[command(after_help = "Example:\n  studio-agents wiggum pause research")]
    Pause(TopicArg),
    /// Resume a paused loop.
    #[command(after_help = "Example:\n  studio-agents wiggum resume research")]
    Resume(TopicArg),
    /// Show one loop (or all) from the state on disk.
    #[command(
        after_help = "Examples:\n  studio-agents wiggum status research\n  studio-agents wiggum status --json"
    )]
    Status(status::StatusArgs),
    /// The live view: status, metrics, the agent's output; keys to stop, pause, resume, add a sign.
    #[command(
        after_help = "Example:\n  studio-agents wiggum watch research    # q leaves the view, the loop continues"
    )]
    Watch(TopicArg),
    /// List every registered loop.
    #[command(
        after_help = "Examples:\n  studio-agents wiggum list\n  studio-agents wiggum list --json"
    )]
    List(status::ListArgs),
    /// Run the Wiggum gate alone on one document; the best round's content is written back.
    #[command(
        after_help = "Examples:\n  studio-agents wiggum gate \"Explain flock\" notes.md\n  studio-agents wiggum gate \"Explain flock\" notes.md --evaluator judge --producer mine --json"
    )]
    Gate(gate::GateArgs),
    /// Run the three-persona panel alone on one document (it never gates).
    #[command(
        after_help = "Examples:\n  studio-agents wiggum panel \"Explain flock\" notes.md --model judge\n  studio-agents wiggum panel \"Explain flock\" notes.md --model llamacpp --json"
    )]
    Panel(panel::PanelArgs),
    /// Print an iteration's agent log (the latest by default).
    #[command(
        after_help = "Examples:\n  studio-agents wiggum logs research\n  studio-agents wiggum logs research --iteration 3\n  studio-agents wiggum logs research --follow"
    )]
    Logs(inspect::LogsArgs),
    /// Serve the local dashboard: every loop, charts, diffs, live updates, controls.
    #[command(
        after_help = "Examples:\n  studio-agents wiggum serve\n  studio-agents wiggum serve --bind 127.0.0.1:9000"
    )]
    Serve(serve::ServeArgs),
    /// Print the loop's events as JSON lines (runs, gate rounds, commits, waits, the end).
    #[command(
        after_help = "Examples:\n  studio-agents wiggum events research\n  studio-agents wiggum events research --follow\n  studio-agents wiggum events research --since 8h"
    )]
    Events(events::EventsArgs),
    /// Show the patch an iteration committed (the latest committed by default).
    #[command(
        after_help = "Examples:\n  studio-agents wiggum diff research\n  studio-agents wiggum diff research --iteration 2\n  studio-agents wiggum diff research --stat"
    )]
    Diff(diff::DiffArgs),
    /// One line per iteration: outcome, gate, scores, time, commit.
    #[command(
        after_help = "Examples:\n  studio-agents wiggum summary research\n  studio-agents wiggum summary research --json"
    )]
    Summary(inspect::SummaryArgs),
    /// Push a loop's branch and open its pull request (GitHub, GitLab, Gitea/Forgejo), the
    /// summary as its description; a second run updates the same one.
    #[command(
        after_help = "Examples:\n  studio-agents wiggum pr research\n  GITLAB_TOKEN=... studio-agents wiggum pr docs"
    )]
    Pr(pr::PrArgs),
    /// Signs: lessons for the agent, appended to AGENT.md.
    #[command(subcommand)]
    Sign(sign::Sign),
    /// Answer the question a loop's agent asked; the next run's prompt carries it.
    #[command(
        after_help = "Examples:\n  studio-agents wiggum answer research \"Yes, update the migration too\"\n  studio-agents wiggum answer research \"Never touch prod.env\" --sign    # also a sign in AGENT.md"
    )]
    Answer(answer::AnswerArgs),
    /// Analytics over runs.jsonl: r1, pass rate, rounds, composite, failure taxonomy.
    #[command(
        after_help = "Examples:\n  studio-agents wiggum report\n  studio-agents wiggum report research docs --json"
    )]
    Report(inspect::ReportArgs),
    /// Render a loop as Kubernetes objects (a Job and a ConfigMap) to run it on a cluster.
    #[command(
        after_help = "Examples:\n  studio-agents wiggum manifest research --kubernetes --image registry.example.com/studio-agents:claude --remote git@example.com:team/notes.git --secret agent-keys | kubectl apply -f -\n  studio-agents wiggum manifest research --kubernetes -o k8s/"
    )]
    Manifest(remote::ManifestArgs),
    /// A loop whose state is a git branch: clone, claim, run in the foreground, push after
    /// every accepted iteration (a Kubernetes Job's entrypoint).
    #[command(
        name = "run-remote",
        after_help = "Example:\n  studio-agents wiggum run-remote research --remote git@example.com:team/notes.git --work /work/loop"
    )]
    RunRemote(remote::RunRemoteArgs),
}

/// Just a topic.
#[derive(Debug, Args)]
pub struct TopicArg {
    /// The loop's topic.
    pub topic: String,
}

/// `completions <shell>`: the completion script on stdout.
pub fn completions(shell: clap_complete::Shell) -> i32 {
    let mut cmd = Cli::command();
    clap_complete::generate(shell, &mut cmd, "studio-agents", &mut std::io::stdout());
    0
}

/// `man`: the man page on stdout.
pub fn man() -> crate::error::Result<i32> {
    let page = clap_mangen::Man::new(Cli::command());
    let mut out = Vec::new();
    page.render(&mut out)
        .map_err(|e| crate::error::Error::runtime(format!("render the man page: {e}")))?;
    std::io::Write::write_all(&mut std::io::stdout(), &out)
        .map_err(|e| crate::error::Error::runtime(format!("print the man page: {e}")))?;
    Ok(0)
}

/// Parse the command line, run the command, and return its exit code (DESIGN §2): the whole
/// of the binary.
#[must_use]
pub fn main() -> i32 {
    let cli = Cli::parse();
    // Commands that print end quietly when their reader goes away; a process that supervises
    // agents (a foreground loop, a delegation) keeps SIGPIPE ignored and handles the error.
    let supervises = matches!(&cli.command, Top::Wiggum(Wiggum::Start(a)) if a.foreground)
        || matches!(&cli.command, Top::Delegate(_));
    if !supervises {
        crate::sys::kernel::default_sigpipe();
    }
    let config = cli.config.clone();
    // Every command that accepts --config checks it, even those that do not read settings.
    if let Some(file) = &config
        && let Err(e) = crate::config::load(&crate::config::Sources {
            explicit: Some(file.clone()),
            ..Default::default()
        })
    {
        eprintln!("error: {e}");
        return e.exit_code();
    }
    let result = match &cli.command {
        Top::Wiggum(w) => match w {
            Wiggum::Start(a) => start::run(a, config),
            Wiggum::Stop(a) => control::stop(a),
            Wiggum::Merge(a) => crate::cli::worktree::merge(a),
            Wiggum::Clean(a) => crate::cli::worktree::clean(a),
            Wiggum::Allow(a) => control::allow(a),
            Wiggum::Forget(a) => forget::run(a),
            Wiggum::Doctor(a) => crate::cli::doctor::doctor(a),
            Wiggum::Pause(a) => control::pause(&a.topic, true),
            Wiggum::Resume(a) => control::pause(&a.topic, false),
            Wiggum::Status(a) => status::status(a),
            Wiggum::Watch(a) => {
                crate::view::watch::run(&a.topic, crate::supervisor::control::request_stop)
            }
            Wiggum::List(a) => status::list(a),
            Wiggum::Gate(a) => gate::run(a, config),
            Wiggum::Panel(a) => panel::run(a, config),
            Wiggum::Logs(a) => inspect::logs(a),
            Wiggum::Diff(a) => diff::run(a),
            Wiggum::Summary(a) => inspect::summary(a),
            Wiggum::Pr(a) => pr::run(a, config.clone()),
            Wiggum::Sign(s) => sign::sign(s),
            Wiggum::Answer(a) => answer::run(a),
            Wiggum::Events(a) => events::run(a),
            Wiggum::Serve(a) => serve::run(a),
            Wiggum::Report(a) => inspect::report_cmd(a),
            Wiggum::Manifest(a) => crate::cli::remote::manifest(a),
            Wiggum::RunRemote(a) => crate::cli::remote::run_remote(a),
        },
        Top::Delegate(d) => delegate::run(d, config),
        Top::Skill(s) => crate::cli::skill::run(s),
        Top::SandboxExec(a) => sandbox_exec::run(a),
        Top::CgroupWatch(a) => Ok(crate::cli::cgroup_watch::run(a)),
        Top::Completions { shell } => Ok(crate::cli::completions(*shell)),
        Top::Man => crate::cli::man(),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            e.exit_code()
        }
    }
}
