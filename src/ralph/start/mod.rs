//! `start`: check every input before anything is written (exit 2 leaves the directory untouched),
//! then lay out the loop's directory, register the topic, and recover from a dead predecessor.

use std::path::{Path, PathBuf};

use chrono::Utc;
use tokio::sync::watch;

use super::agent_choice;
use super::context::Loop;
use super::decide::Breaker;
use super::runner::Runner;
use super::templates;
use super::theirs;
use crate::agent::process::StopLevel;
use crate::agent::spec::{self, AgentSpec};
use crate::config::{self, Settings, Sources};
use crate::disk::layout::Layout;
use crate::error::{Error, Result};

use crate::disk::state::{Harness, LoopState};
use crate::disk::{registry, requests};
use crate::git::Repo;
use crate::quality::types::{self, ArtifactType};
use crate::sys::fsutil;

/// What the user asked for on the command line.
#[derive(Debug, Clone, Default)]
pub struct StartOpts {
    /// The topic.
    pub topic: String,
    /// `--artifact-path` (a registered topic's path when omitted).
    pub artifact_path: Option<PathBuf>,
    /// `--max-iterations`.
    pub max_iterations: Option<u32>,
    /// `--quality-threshold`.
    pub quality_threshold: Option<f64>,
    /// `--pass-threshold`.
    pub pass_threshold: Option<f64>,
    /// `--max-rounds`.
    pub max_rounds: Option<u32>,
    /// `--agent`.
    pub agent: Option<String>,
    /// `--agent-cmd`.
    pub agent_cmd: Option<String>,
    /// `--evaluator`.
    pub evaluator: Option<String>,
    /// `--panel`.
    pub panel: bool,
    /// `--config`.
    pub config: Option<PathBuf>,
    /// `--reset-breaker`: forget what the breakers remember from earlier runs.
    pub reset_breaker: bool,
    /// `--type`: the artifact type (research, design, code, generic or a `[types]` entry).
    pub kind: Option<String>,
    /// `--validate`, `--no-validate`, `--spec`: what settles a code loop.
    pub code: super::work::setup::CodeFlags,
    /// What the harness enforces, as probed by the `start` that detached this daemon a moment
    /// ago on the same kernel (the probe runs a helper process: once per start is enough).
    pub probed: Option<crate::disk::state::Harness>,
}

/// A checked start, nothing written yet.
#[derive(Debug)]
pub struct Prepared {
    /// The topic.
    pub topic: String,
    /// The loop's paths (absolute).
    pub layout: Layout,
    /// Effective settings (flags applied).
    pub settings: Settings,
    /// The agent.
    pub agent: AgentSpec,
    /// The producer of revisions.
    pub producer: AgentSpec,
    /// The agents that run while the agent waits on a usage limit, in order.
    pub fallbacks: Vec<AgentSpec>,
    /// The agent that plans, when `[defaults] planning_agent` names another.
    pub planning: Option<AgentSpec>,
    /// The evaluator's name.
    pub evaluator: String,
    /// `$STUDIO_AGENTS_HOME`.
    pub home: PathBuf,
    /// Warnings `start` prints once (uncommitted work left out, hooks skipped).
    pub notes: Vec<String>,
    /// No repository holds the artifact directory: the loop makes one (`git init`), said once.
    pub new_repository: bool,
    /// The user's work anywhere the agents may write (relative to `work_root`): what
    /// `theirs::keep` copies out of their reach before any agent runs.
    pub at_risk: Vec<PathBuf>,
    /// Where the agents may write (the work tree, or the artifact dir alone).
    pub work_root: PathBuf,
    /// What confines the agents.
    pub harness: Harness,
    /// Forget the breakers' history.
    pub reset_breaker: bool,
    /// What "good" means for this artifact.
    pub artifact_type: ArtifactType,
}

impl Prepared {
    /// The placeholders filled when the memory files are first written.
    #[must_use]
    pub fn start_vars(&self) -> Vec<(&'static str, String)> {
        use super::work::setup;
        let mut vars =
            templates::start_vars(&self.topic, &self.layout, &self.settings.defaults.promise);
        vars.push(("type_requirements", self.artifact_type.requirements()));
        vars.push(("repo", self.work_root.display().to_string()));
        vars.push((
            "spec",
            setup::spec_words(&self.settings, self.layout.root()),
        ));
        vars.push(("validation", setup::validation_words(&self.settings)));
        vars
    }

    /// What the loop works on: a document or the repository's code.
    #[must_use]
    pub fn kind(&self) -> super::work::Kind {
        super::work::Kind::of(&self.artifact_type)
    }

    /// The artifact type's own template directory (relative ones from the home), if any.
    #[must_use]
    pub fn own_templates(&self) -> Option<PathBuf> {
        self.artifact_type.templates.as_ref().map(|d| {
            if d.is_absolute() {
                d.clone()
            } else {
                self.home.join(d)
            }
        })
    }
}

fn flag<T>(
    name: &str,
    v: Option<T>,
    check: impl Fn(T) -> std::result::Result<(), String>,
) -> Result<()>
where
    T: Copy,
{
    match v {
        Some(x) => check(x).map_err(|m| Error::input(format!("{name} {m}"))),
        None => Ok(()),
    }
}

/// Check everything; write nothing. A list of steps, each refusing with exit 2 what it cannot
/// take: the flags, the loop's directory, the settings, what it works on, its agents and
/// evaluator, its inputs, then what `start` says and what the harness will enforce.
pub fn prepare(opts: &StartOpts, home: &Path) -> Result<Prepared> {
    check_flags(opts)?;
    let layout = loop_layout(opts, home)?;
    registry::check_free(home, &opts.topic, layout.root())?;
    let mut settings = load_settings(opts, home, &layout)?;
    let (artifact_type, mut notes) = settle_kind(opts, &layout, &mut settings)?;
    let agents = resolve_agents(opts, &layout, &artifact_type, &mut settings)?;
    let evaluator = check_evaluator(opts, &settings, &layout)?;
    check_inputs(&settings, &layout)?;
    let (repo_notes, new_repository) = repository_notes(&settings, &layout)?;
    notes.splice(0..0, repo_notes);
    // A daemon's `start` has walked the tree and copied the work a moment ago: no second walk.
    let detached_daemon = opts.probed.is_some();
    let work_root = crate::agent::launch::work_root(layout.root());
    let theirs = if detached_daemon {
        theirs::Theirs::default()
    } else {
        theirs::find(&layout, &work_root)?
    };
    notes.extend(theirs::note(&layout, &theirs.uncommitted));
    let at_risk = theirs.at_risk;
    let harness = match &opts.probed {
        Some(h) => h.clone(),
        None => harness(&settings, &agents.agent, &layout, &artifact_type)?,
    };
    Ok(Prepared {
        topic: opts.topic.clone(),
        layout,
        settings,
        agent: agents.agent,
        producer: agents.producer,
        fallbacks: agents.fallbacks,
        planning: agents.planning,
        evaluator,
        home: home.to_path_buf(),
        notes,
        new_repository,
        at_risk,
        work_root,
        harness,
        reset_breaker: opts.reset_breaker,
        artifact_type,
    })
}

/// The topic and the numeric flags, each in its range.
fn check_flags(opts: &StartOpts) -> Result<()> {
    registry::check_topic(&opts.topic)?;
    flag("--max-iterations", opts.max_iterations, |v| {
        config::check_positive(v.into())
    })?;
    flag(
        "--quality-threshold",
        opts.quality_threshold,
        config::check_unit,
    )?;
    flag("--pass-threshold", opts.pass_threshold, config::check_score)?;
    flag("--max-rounds", opts.max_rounds, |v| {
        config::check_positive(v.into())
    })
}

/// The loop's directory (the flag's, or the registered topic's), checked and guarded: from here
/// on the supervisor follows no link under what the agent may write; a settings file changed
/// since it was last allowed is refused.
fn loop_layout(opts: &StartOpts, home: &Path) -> Result<Layout> {
    let p = &match &opts.artifact_path {
        Some(p) => p.clone(),
        None => registry::lookup(home, &opts.topic)?.ok_or_else(|| {
            Error::input(format!(
                "--artifact-path is required: no loop `{}` is registered yet",
                opts.topic
            ))
        })?,
    };
    if !p.is_dir() {
        return Err(Error::input(match &opts.artifact_path {
            Some(_) => format!("--artifact-path {}: not a directory", p.display()),
            None => format!(
                "loop `{}`: {}",
                opts.topic,
                crate::disk::handle::gone(&opts.topic, p)
            ),
        }));
    }
    let root = p
        .canonicalize()
        .map_err(|e| Error::input(format!("--artifact-path {}: {e}", p.display())))?;
    registry::check_path("--artifact-path", &root)?;
    let studio_home = home.canonicalize().unwrap_or_else(|_| home.to_path_buf());
    if studio_home.starts_with(&root) {
        return Err(Error::input(format!(
            "--artifact-path {}: holds $STUDIO_AGENTS_HOME ({}), where the loop keeps its locks and records out of the agent's reach; choose a directory of its own",
            p.display(),
            home.display()
        )));
    }
    let layout = Layout::for_loop(home, root);
    crate::sys::beneath::guard(layout.root());
    crate::sys::beneath::guard(&crate::agent::launch::work_root(layout.root()));
    check_allowed(home, &layout, &opts.topic)?;
    Ok(layout)
}

/// The layered settings with the flags applied, every name they refer to resolved.
fn load_settings(opts: &StartOpts, home: &Path, layout: &Layout) -> Result<Settings> {
    let sources = Sources {
        home: Some(home.join("wiggum.toml")),
        loop_file: Some(layout.config()),
        explicit: opts.config.clone(),
    };
    let mut settings = config::load(&sources)?;
    config::check_names(&settings, &sources, &spec::PRESETS)?;
    let d = &mut settings.defaults;
    if let Some(v) = opts.max_iterations {
        d.max_iterations = v;
    }
    if let Some(v) = opts.quality_threshold {
        d.quality_threshold = v;
    }
    if let Some(v) = opts.pass_threshold {
        d.pass_threshold = v;
    }
    if let Some(v) = opts.max_rounds {
        d.max_rounds = v;
    }
    if let Some(v) = &opts.agent {
        d.agent.clone_from(v);
    }
    if let Some(v) = &opts.evaluator {
        d.evaluator.clone_from(v);
    }
    d.panel |= opts.panel || std::env::var("WIGGUM_PANEL").is_ok_and(|v| v == "1");
    Ok(settings)
}

/// What the loop works on: the artifact type (`--type`, else a delegation's record before the
/// loop has settings of its own, else `[defaults] type`, else generic) and what follows from
/// it (`work::setup`). Returns the type and the lines `start` says about it.
fn settle_kind(
    opts: &StartOpts,
    layout: &Layout,
    settings: &mut Settings,
) -> Result<(ArtifactType, Vec<String>)> {
    let fresh = !layout.config().exists();
    let kind = opts
        .kind
        .clone()
        .or_else(|| fresh.then(|| delegated(layout, "agent_type")).flatten())
        .or_else(|| settings.defaults.kind.clone())
        .unwrap_or_else(|| "generic".into());
    refuse_finished_neighbour(opts, layout, settings)?;
    let (artifact_type, unknown) = types::resolve(&kind, &settings.types, settings.quality_metrics);
    if let Some(why) = unknown {
        return Err(Error::input(why));
    }
    settings.defaults.kind = Some(artifact_type.name.clone());
    let mut notes: Vec<String> = Vec::new();
    notes.extend(super::work::setup::apply(
        settings,
        &opts.code,
        super::work::Kind::of(&artifact_type),
        layout.root(),
        &crate::agent::launch::work_root(layout.root()),
    )?);
    Ok((artifact_type, notes))
}

/// A directory whose loop ran as another topic: a new topic there would go on with that loop's
/// iterations (or, at its limit, end at once) under a name it never had. Refused, naming whose it
/// is and how to go on.
fn refuse_finished_neighbour(opts: &StartOpts, layout: &Layout, settings: &Settings) -> Result<()> {
    let Ok(Some(prev)) = crate::disk::state::read(&layout.state()) else {
        return Ok(());
    };
    if prev.topic.is_empty() || prev.topic == opts.topic {
        return Ok(());
    }
    // A topic let go (`forget`, or one of another home) no longer holds its directory.
    let registered = crate::config::home_dir().ok().and_then(|home| {
        crate::disk::registry::lookup(&home, &prev.topic)
            .ok()
            .flatten()
    });
    if registered.is_none() {
        return Ok(());
    }
    // A loop running there is refused as such (exit 3), naming its pid.
    if crate::disk::lock::holder(&layout.lock())
        .ok()
        .flatten()
        .is_some()
    {
        return Ok(());
    }
    let max = prev.max_iterations.max(1);
    let sa = super::progress::program(crate::config::home_to_name().as_deref());
    let go_on = if prev.current_iteration >= max {
        format!(
            "`{sa} wiggum start {} --max-iterations {}`",
            prev.topic,
            prev.current_iteration + settings.defaults.max_iterations
        )
    } else {
        format!("`{sa} wiggum start {}`", prev.topic)
    };
    Err(Error::input(format!(
        "--artifact-path {}: the loop there is `{}`, which has run {} of {max} iterations; go on with {go_on}, or choose a directory of its own for `{}`",
        layout.root().display(),
        prev.topic,
        prev.current_iteration,
        opts.topic
    )))
}

/// The loop's agents.
struct Agents {
    agent: AgentSpec,
    producer: AgentSpec,
    fallbacks: Vec<AgentSpec>,
    planning: Option<AgentSpec>,
}

/// The agent (flags, else a delegation's record, else the type's own, else the settings'), its
/// fallbacks and the producer of revisions, each installed or refused.
fn resolve_agents(
    opts: &StartOpts,
    layout: &Layout,
    artifact_type: &ArtifactType,
    settings: &mut Settings,
) -> Result<Agents> {
    let fresh = !layout.config().exists();
    let no_flags = opts.agent.is_none() && opts.agent_cmd.is_none();
    // An agent given as a bare command (`--agent-cmd`) has only its command on record.
    let delegation = (no_flags && fresh)
        .then(|| delegated(layout, "agent"))
        .flatten()
        .and_then(|name| match name.as_str() {
            "custom" => delegated(layout, "agent_command").map(agent_choice::Delegated::Command),
            _ => Some(agent_choice::Delegated::Named(name)),
        });
    let choice = agent_choice::resolve_agent(
        opts.agent.as_deref(),
        opts.agent_cmd.as_deref(),
        delegation.as_ref(),
        artifact_type.agent.as_deref(),
        |name| spec::named(settings, name).is_some(),
    );
    let (agent_flag, agent_cmd) = (choice.name, choice.command);
    let agent = spec::resolve(settings, agent_flag.as_deref(), agent_cmd.as_deref())?;
    if agent_flag.is_some() {
        settings.defaults.agent.clone_from(&agent.name);
    }
    if let Some(cmd) = &agent_cmd {
        // The effective settings remember the command, so a restart needs no flags.
        settings
            .agents
            .insert(agent.name.clone(), config::AgentEntry::Command(cmd.clone()));
        settings.defaults.agent.clone_from(&agent.name);
    }
    spec::check_installed(settings, &agent, opts.agent.is_some())?;
    if let Some(cmd) = &agent_cmd {
        spec::check_command(cmd)?;
    }
    let fallbacks = spec::fallbacks(settings, &agent)?;
    let planning = spec::planning(settings, &agent)?;
    let producer = match &settings.gate.producer {
        Some(name) => spec::named(settings, name)
            .ok_or_else(|| Error::input(format!("[gate] producer: unknown agent `{name}`")))?,
        None => agent.clone(),
    };
    Ok(Agents {
        agent,
        producer,
        fallbacks,
        planning,
    })
}

/// The evaluator (and its panel) resolves; returns its name.
fn check_evaluator(opts: &StartOpts, settings: &Settings, layout: &Layout) -> Result<String> {
    let origin = if opts.evaluator.is_some() {
        "--evaluator"
    } else {
        "[defaults] evaluator"
    };
    let evaluator = settings.defaults.evaluator.clone();
    let (_tx, rx) = watch::channel(StopLevel::None);
    let mut judge =
        crate::gate::evaluator::resolve(settings, &evaluator, origin, layout.wiggum(), rx)?;
    if settings.defaults.panel {
        judge.enable_panel(settings, "--panel")?;
    }
    Ok(evaluator)
}

/// The artifact the gate judges exists, and nothing the loop reads whole is past what it reads
/// (refused now, before anything is written, not found at the first read). The original is
/// judged as the start will have recovered it: a run whose supervisor died may have deleted or
/// replaced it, and `open` puts it back before anything reads it.
fn check_inputs(settings: &Settings, layout: &Layout) -> Result<()> {
    let original = super::original::as_recovered(layout);
    if settings.gate.target == config::GateTarget::Artifact && !original.is_file() {
        return Err(Error::input(format!(
            "--artifact-path {}: no artifact.md (the gate judges it; set [gate] target = \"diff\" or \"off\" for other loops)",
            layout.root().display()
        )));
    }
    let inputs = std::iter::once(original).chain(
        super::templates::FILES
            .iter()
            .map(|(name, _)| layout.memory(name)),
    );
    for file in inputs {
        if let Ok(m) = std::fs::metadata(&file)
            && m.len() > crate::sys::fsutil::TEXT_CAP
        {
            return Err(Error::input(format!(
                "{}: {} bytes, larger than the {} the loop reads of it; make it smaller",
                file.display(),
                m.len(),
                crate::sys::fsutil::TEXT_CAP
            )));
        }
    }
    Ok(())
}

/// The repository checked (`git/preflight.rs`), and what `start` says of it once: hooks the
/// loop's commits skip, signing it cannot do, a promise taken on trust; and whether there is no
/// repository yet (the loop makes one).
fn repository_notes(settings: &Settings, layout: &Layout) -> Result<(Vec<String>, bool)> {
    let findings = crate::git::preflight::check(layout.root())?;
    let mut notes = Vec::new();
    if !findings.hooks.is_empty() && settings.git.hooks == config::GitHooks::Skip {
        notes.push(format!(
            "the loop's commits skip this repository's git hooks ({}); set [git] hooks = \"run\" to run them",
            findings.hooks.join(", ")
        ));
    }
    if findings.signing {
        notes.push(
            "commit.gpgsign is set, but the loop's commits are not signed (the git library cannot run a signing program); sign them afterwards with `git rebase --exec 'git commit --amend --no-edit -n -S' <the commit before the loop>`"
                .to_string(),
        );
    }
    if settings.defaults.promise_check == config::PromiseCheck::Trust {
        notes.push(
            "[defaults] promise_check = \"trust\": any completion promise ends the loop, with plan items open or the gate failing".into(),
        );
    }
    Ok((notes, findings.none))
}

/// What the harness will enforce for this loop's agents, probed on this kernel; `required`
/// refuses to start when the sandbox cannot be enforced.
fn harness(
    settings: &Settings,
    agent: &AgentSpec,
    layout: &Layout,
    kind: &ArtifactType,
) -> Result<Harness> {
    use crate::agent::sandbox::{self, policy};
    let safety = &settings.safety;
    let program = sandbox::env::program_of(&agent.table.command);
    let home = std::env::var_os("HOME").map_or_else(PathBuf::new, PathBuf::from);
    let root = if kind.writes_repository() {
        crate::agent::launch::work_root(layout.root())
    } else {
        layout.root().to_path_buf()
    };
    let tmp = std::env::temp_dir().join("studio-agents-<run>");
    let mut p = policy::build(
        safety,
        &root,
        &tmp,
        &policy::state_dirs(
            &program,
            &home,
            &sandbox::env::allowed(std::env::vars(), &program, &safety.env_allow),
        ),
    );
    p.read_only = policy::protected(&root, Some(&layout.wiggum()));
    p.home_layer = crate::agent::home::home_layer(&home, &root, layout.root(), &tmp, safety);
    let enforced = sandbox::probe(&p);
    crate::agent::launch::probed(&enforced);
    crate::agent::launch::check_store_reach(&p, enforced.read_only)?;
    if safety.sandbox == config::SandboxMode::Required && !enforced.filesystem {
        return Err(Error::input(format!(
            "[safety] sandbox = \"required\": {}; set sandbox = \"landlock\" to run with what the kernel offers",
            enforced.note
        )));
    }
    let sandbox = if enforced.filesystem || safety.sandbox != config::SandboxMode::Off {
        format!("{}; {}", enforced.line(), crate::sys::cgroup::describe())
    } else {
        enforced.line()
    };
    Ok(Harness {
        sandbox,
        writable: p.writable.into_iter().filter(|w| w.exists()).collect(),
        network: match p.ports {
            None => "any".into(),
            Some(ports) if ports.is_empty() => "none".into(),
            Some(ports) => ports
                .iter()
                .map(u16::to_string)
                .collect::<Vec<_>>()
                .join(","),
        },
        max_memory_mb: safety.max_memory_mb,
        max_log_mb: safety.max_log_mb,
        max_idle_secs: safety.max_idle_secs,
        max_time_secs: safety.max_time_per_iteration,
    })
}

/// A field a delegation recorded in `metadata.json` (`agent`, `agent_type`), if any.
fn delegated(layout: &Layout, key: &str) -> Option<String> {
    let text = fsutil::read_opt(&layout.metadata()).ok()??;
    let meta: serde_json::Value = serde_json::from_str(&text).ok()?;
    meta.get(key)?.as_str().map(str::to_string)
}

mod allowed;
mod open;

pub use allowed::{allow, check_allowed};
pub use open::{init, open};
