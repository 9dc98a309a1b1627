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
    let theirs = if detached_daemon {
        Vec::new()
    } else {
        theirs::uncommitted(&layout)?
    };
    notes.extend(theirs::note(&layout, &theirs));
    let work_root = crate::agent::launch::work_root(layout.root());
    let at_risk = if detached_daemon {
        Vec::new()
    } else {
        theirs::at_risk(&layout, &work_root)?
    };
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

/// Refuse a loop settings file that changed since a person last allowed it (exit 2, with the
/// changed keys): it lies in the agent's reach. A loop that never ran takes a file that only
/// tunes it (`max_iterations`, thresholds…), and refuses one that names what weakens the harness
/// (a command, a hook, an agent, a wider sandbox) until `allow`: anything could have written it.
pub fn check_allowed(home: &Path, layout: &Layout, topic: &str) -> Result<()> {
    let Some(found) = fsutil::read_opt(&layout.config())? else {
        return Ok(());
    };
    let allowed = fsutil::read_opt(&layout.allowed_settings())?;
    if allowed.as_deref() == Some(found.as_str()) {
        return Ok(());
    }
    let first = allowed.is_none() && !layout.runs_copy().exists();
    let mut changes = changes_since_allowed(home, layout)?;
    if first {
        changes.retain(|c| c.weakens);
    }
    if changes.is_empty() {
        // Only comments or layout changed, or a first file that only tunes: nothing to ask.
        return Ok(());
    }
    Err(Error::input(unallowed_message(
        layout, topic, &changes, first,
    )))
}

/// The keys the loop's settings file changes: from the bytes a person last allowed, else (a
/// loop this home never ran) what the file changes in the settings the loop would have without
/// it (the home's file and the defaults). The file must parse (the error names its line).
fn changes_since_allowed(home: &Path, layout: &Layout) -> Result<Vec<config::allow::KeyChange>> {
    let found = config::parse_layer(&layout.config(), false)?.unwrap_or_default();
    if let Some(a) = fsutil::read_opt(&layout.allowed_settings())? {
        return Ok(config::allow::diff(
            &a.parse::<toml::Table>().unwrap_or_default(),
            &found,
        ));
    }
    let effective = |loop_file: Option<PathBuf>| -> Result<toml::Table> {
        let s = config::load(&Sources {
            home: Some(home.join("wiggum.toml")),
            loop_file,
            explicit: None,
        })?;
        Ok(config::to_toml(&s)?
            .parse::<toml::Table>()
            .unwrap_or_default())
    };
    Ok(config::allow::diff(
        &effective(None)?,
        &effective(Some(layout.config()))?,
    ))
}

/// The program as the commands a refusal prints name it (with the home when it is not the
/// default one, so the command works as printed).
fn program() -> String {
    super::progress::program(crate::config::home_to_name().as_deref())
}

/// What `start` says of a settings file it does not take: the keys, and how to allow them.
fn unallowed_message(
    layout: &Layout,
    topic: &str,
    changes: &[config::allow::KeyChange],
    first: bool,
) -> String {
    let n = changes.len();
    let s = if n == 1 { "" } else { "s" };
    let weak = changes.iter().filter(|c| c.weakens).count();
    let (what, allow) = if first {
        (
            format!("never allowed for this loop, {n} key{s} weakening the harness"),
            format!(
                "{} wiggum allow {topic} --artifact-path {}",
                program(),
                super::progress::shell_word(layout.root())
            ),
        )
    } else {
        let weak = if weak > 0 {
            format!(", {weak} of them weakening the harness")
        } else {
            String::new()
        };
        (
            format!("changed since it was last allowed ({n} key{s}{weak})"),
            format!("{} wiggum allow {topic}", program()),
        )
    };
    let keys: Vec<String> = changes.iter().map(|c| format!("  {c}")).collect();
    format!(
        "{}: {what}; the agent can write this file, so it is not taken silently — review it, then `{allow}` (or put it back)\n{}",
        layout.config().display(),
        keys.join("\n")
    )
}

/// `wiggum allow`: take the loop's settings file as it is now. Returns what changed.
pub fn allow(home: &Path, layout: &Layout) -> Result<Vec<config::allow::KeyChange>> {
    let found = fsutil::read_opt(&layout.config())?.unwrap_or_default();
    let changes = changes_since_allowed(home, layout)?;
    fsutil::create_dir_all(layout.records())?;
    fsutil::atomic_write(&layout.allowed_settings(), found.as_bytes())?;
    Ok(changes)
}

/// A field a delegation recorded in `metadata.json` (`agent`, `agent_type`), if any.
fn delegated(layout: &Layout, key: &str) -> Option<String> {
    let text = fsutil::read_opt(&layout.metadata()).ok()??;
    let meta: serde_json::Value = serde_json::from_str(&text).ok()?;
    meta.get(key)?.as_str().map(str::to_string)
}

/// Lay out `wiggum/`: memory files (existing ones kept), the effective `wiggum.toml`, the registry.
pub fn init(p: &Prepared) -> Result<()> {
    fsutil::create_dir_all(&p.layout.wiggum())?;
    templates::write_missing(
        &p.layout,
        &p.start_vars(),
        p.own_templates().as_deref(),
        p.kind(),
    )?;
    let effective = config::to_toml(&p.settings)?;
    fsutil::atomic_write(&p.layout.config(), effective.as_bytes())?;
    // What the supervisor wrote is allowed, and the effective settings pinned, out of the
    // agent's reach.
    fsutil::create_dir_all(p.layout.records())?;
    fsutil::atomic_write(&p.layout.allowed_settings(), effective.as_bytes())?;
    fsutil::atomic_write(&p.layout.pinned_settings(), effective.as_bytes())?;
    registry::register(&p.home, &p.topic, p.layout.root())
}

fn describe_task(
    layout: &Layout,
    topic: &str,
    kind: &ArtifactType,
    settings: &Settings,
) -> Result<(String, String)> {
    let task_type = kind.task_type.clone();
    if let Some(t) = fsutil::read_opt(&layout.task())? {
        return Ok((t.chars().take(2000).collect(), task_type));
    }
    // A code change is judged against its spec: the task is the spec's text (its start).
    if kind.writes_repository() {
        let spec: Vec<std::path::PathBuf> = if settings.defaults.spec.is_empty() {
            vec![layout.original_artifact()]
        } else {
            settings
                .defaults
                .spec
                .iter()
                .map(|s| layout.root().join(s))
                .collect()
        };
        let text: String = spec
            .iter()
            .filter_map(|f| fsutil::read_capped(f, 64 << 10).ok())
            .collect::<Vec<_>>()
            .join("\n\n");
        if !text.trim().is_empty() {
            let text: String = text.chars().take(4000).collect();
            return Ok((format!("{topic}: {}", text.trim()), task_type));
        }
    }
    let title = fsutil::read_opt(&layout.original_artifact())?
        .and_then(|a| {
            a.lines()
                .find(|l| l.starts_with('#'))
                .map(|l| l.trim_start_matches('#').trim().to_string())
        })
        .unwrap_or_default();
    Ok((
        format!("{topic}: {title}")
            .trim_end_matches(": ")
            .to_string(),
        task_type,
    ))
}

/// Open the loop for running: recovery, fresh state, repository.
pub async fn open(p: Prepared, control_rx: watch::Receiver<StopLevel>) -> Result<Loop> {
    let layout = p.layout.clone();
    let (prev, completed) = super::recover::recover(&layout).await?;
    super::original::restore_after_crash(&layout)?;
    // Requests were for the previous run (a pause, a stop after its iteration): a start is fresh.
    requests::clear(&layout.requests())?;
    let repo = open_repository(&p)?;
    let state = fresh_state(&p, prev, completed);
    let (task, task_type) = describe_task(&layout, &p.topic, &p.artifact_type, &p.settings)?;
    let mut runner = runner_of(&p, &repo, state, control_rx);
    let tracker = super::changes::Tracker::start(&repo, &runner.layout);
    runner.activity = tracker.shared();
    runner.save()?;
    let work = super::work::Kind::of(&p.artifact_type);
    Ok(Loop {
        tracker,
        work,
        validation: super::work::Tracked::default(),
        left_out: Vec::new(),
        revision_tampered: Vec::new(),
        revision_notes: Vec::new(),
        revision_costs: Vec::new(),
        spec: super::work::SpecCopy::take(
            work,
            &super::work::setup::spec_files(&p.settings, p.layout.root()),
        ),
        runner,
        run_id: format!("{}-{}", p.topic, Utc::now().timestamp_millis()),
        settings: p.settings,
        primary: p.agent.clone(),
        agent: p.agent,
        producer: p.producer,
        fallbacks: p.fallbacks,
        planning: p.planning,
        evaluator: p.evaluator,
        repo,
        task_type,
        task,
        artifact_type: p.artifact_type,
        breaker: Breaker::default(),
        promise_taken: None,
        promise_rejected: None,
        done: completed,
    })
}

/// The loop's repository (made where there is none), its file size limit, and the `git`
/// commands it runs confined as an agent is.
fn open_repository(p: &Prepared) -> Result<Repo> {
    let mut repo = Repo::open_or_init(p.layout.root())?;
    repo.limit_file_size(p.settings.safety.max_file_mb.saturating_mul(1 << 20));
    if p.settings.safety.sandbox != config::SandboxMode::Off {
        let common = repo.git().commondir().to_path_buf();
        let (argv, env) =
            crate::agent::launch::git_confinement(&p.settings.safety, p.layout.root(), &common)?;
        repo.confine(crate::git::filters::Confine { argv, env });
    }
    Ok(repo)
}

/// A fresh state (planning), carrying what outlives a run of the supervisor from `prev`.
fn fresh_state(p: &Prepared, prev: Option<LoopState>, completed: u32) -> LoopState {
    let earlier_ms = prev.as_ref().map_or(0, LoopState::ran_ms);
    let prev = prev.unwrap_or_default();
    let mut state = LoopState::default();
    state.earlier_ms = earlier_ms;
    state.best = prev.best.filter(|b| b.iteration <= completed);
    state.topic = p.topic.clone();
    state.artifact_path = p.layout.root().to_path_buf();
    state.current_iteration = completed;
    state.last_committed_iteration = prev.last_committed_iteration.min(completed);
    state.max_iterations = p.settings.defaults.max_iterations;
    state.quality_threshold = p.settings.defaults.quality_threshold;
    state.last_quality = prev.last_quality;
    state.pid = std::process::id();
    state.pid_start_ticks =
        crate::sys::procs::stat(std::process::id().cast_signed()).map(|s| s.start_ticks);
    state.agent = p.agent.name.clone();
    state.planning_agent = p.planning.as_ref().map(|a| a.name.clone());
    state.last_scores = prev.last_scores;
    state.last_gate_score = prev.last_gate_score;
    state.cost_usd = prev.cost_usd;
    state.spend = prev.spend;
    state.trends = if p.reset_breaker {
        crate::disk::state::Trends::default()
    } else {
        prev.trends
    };
    state.reviewed = prev.reviewed;
    state.carried_paths = prev.carried_paths;
    state.harness = Some(p.harness.clone());
    state
}

/// The runner: the loop's places, settings and state, and the protected files as `start`
/// found them.
fn runner_of(
    p: &Prepared,
    repo: &Repo,
    state: LoopState,
    control_rx: watch::Receiver<StopLevel>,
) -> Runner {
    Runner {
        topic: p.topic.clone(),
        layout: p.layout.clone(),
        safety: p.settings.safety.clone(),
        activity: None,
        head: repo
            .head_ref()
            .map(|h| (repo.git().path().to_path_buf(), h)),
        last_accepted: repo.head().map(|o| o.to_string()),
        repo_wide: p.artifact_type.writes_repository(),
        stops: control_rx,
        state,
        promise: p.settings.defaults.promise.clone(),
        prices: p.settings.prices.clone(),
        hooks: p.settings.hooks.clone(),
        sinks: p.settings.notify.clone(),
        deliveries: super::deliver::Deliveries::default(),
        awake: crate::sys::awake::Awake::new(p.settings.defaults.keep_awake),
        protected: super::guard::Protected {
            git_configs: crate::git::preflight::config_files(repo.git(), repo.workdir()),
            hooks_dir: Some(crate::git::preflight::hooks_dir(repo.git(), repo.workdir())),
            loop_config: Some(p.layout.config()),
            git_layout: crate::git::preflight::layout_files(
                repo.git(),
                repo.workdir(),
                p.layout.root(),
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_never_allowed_is_refused_with_a_command_that_works_as_printed() {
        let layout = Layout::for_loop(Path::new("/h"), "/src/my docs");
        let changes = config::allow::diff(
            &toml::Table::new(),
            &"[hooks]\non_stop = \"x\"\n".parse().unwrap(),
        );
        assert_eq!(
            unallowed_message(&layout, "docs", &changes, true),
            "/src/my docs/wiggum/wiggum.toml: never allowed for this loop, 1 key weakening the harness; the agent can write this file, so it is not taken silently — review it, then `studio-agents wiggum allow docs --artifact-path '/src/my docs'` (or put it back)\n  + hooks.on_stop: (unset) → \"x\"  (weakens the harness)"
        );
        assert!(
            unallowed_message(&layout, "docs", &changes, false).starts_with(
                "/src/my docs/wiggum/wiggum.toml: changed since it was last allowed (1 key, 1 of them weakening the harness);"
            )
        );
    }
}
