//! The settings structs (DESIGN §6). Every table refuses unknown keys; every field has a default,
//! so any one layer may be partial.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// All settings of a loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Loop-wide defaults.
    pub defaults: Defaults,
    /// Weights of the built-in heuristic quality metrics.
    pub quality_metrics: QualityWeights,
    /// Limits that keep an unattended loop safe.
    pub safety: Safety,
    /// Backpressure run after every iteration.
    pub validation: Validation,
    /// The Wiggum gate.
    pub gate: GateSettings,
    /// How accepted iterations are committed.
    pub git: GitSettings,
    /// Commands told about the loop's events (notifications).
    pub hooks: Hooks,
    /// What happens to the loop's branch when it ends: a pull request.
    pub finish: Finish,
    /// Built-in notification sinks: webhooks, ntfy, Slack, Discord, the desktop.
    #[serde(skip_serializing_if = "Notify::is_empty")]
    pub notify: Notify,
    /// Named agents: a command line, or a table.
    pub agents: BTreeMap<String, super::AgentEntry>,
    /// Named evaluators.
    pub evaluators: BTreeMap<String, super::EvaluatorEntry>,
    /// Prices per model, to turn reported tokens into cost (over the built-in ones).
    pub prices: BTreeMap<String, Price>,
    /// Artifact types of the user's own (over the built-in research, design, code, generic).
    pub types: BTreeMap<String, TypeDef>,
}

/// `[types.<name>]`: what "good" means for one kind of artifact.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TypeDef {
    /// The sections an artifact of this type must have (headings), in order.
    pub sections: Vec<String>,
    /// A directory whose `PROMPT.md`, `PLANNING_PROMPT.md`, `AGENT.md` replace the built-in
    /// templates (relative paths are taken from `$STUDIO_AGENTS_HOME`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub templates: Option<std::path::PathBuf>,
    /// Weights of the built-in metrics for this type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weights: Option<QualityWeights>,
    /// What the metrics look for, in words (named in the planning prompt).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub looks_for: Option<String>,
    /// The task type the gate's rubric is told (default: the type's name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_type: Option<String>,
    /// The agent a loop of this type runs unless `--agent`/`--agent-cmd` say otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

/// `[prices."model"]`: USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Per million input tokens.
    pub input_per_mtok: f64,
    /// Per million output tokens.
    pub output_per_mtok: f64,
}

/// List prices of the presets' common models (USD per million tokens, input/output), used when
/// `[prices]` has no entry; an agent reporting its own cost is never priced.
const BUILTIN_PRICES: [(&str, f64, f64); 10] = [
    ("claude-opus-4", 15.0, 75.0),
    ("claude-sonnet-4", 3.0, 15.0),
    ("claude-haiku-4", 1.0, 5.0),
    ("gpt-5", 1.25, 10.0),
    ("gpt-5-codex", 1.25, 10.0),
    ("gpt-4.1", 2.0, 8.0),
    ("o3", 2.0, 8.0),
    ("gemini-2.5-pro", 1.25, 10.0),
    ("gemini-2.5-flash", 0.3, 2.5),
    ("deepseek-chat", 0.27, 1.1),
];

impl Settings {
    /// The price of `model`: `[prices]` first, then the built-in list.
    #[must_use]
    pub fn price(&self, model: &str) -> Option<Price> {
        price_of(&self.prices, model)
    }
}

/// The price of `model` in `prices`, else in the built-in list.
#[must_use]
pub fn price_of(prices: &BTreeMap<String, Price>, model: &str) -> Option<Price> {
    {
        prices.get(model).copied().or_else(|| {
            BUILTIN_PRICES
                .iter()
                .find(|(m, _, _)| *m == model)
                .map(|(_, i, o)| Price {
                    input_per_mtok: *i,
                    output_per_mtok: *o,
                })
        })
    }
}

/// `[defaults]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Defaults {
    /// Iteration limit (≥ 1).
    pub max_iterations: u32,
    /// Outer-loop quality threshold, 0–1.
    pub quality_threshold: f64,
    /// Gate pass threshold, 0–10.
    pub pass_threshold: f64,
    /// Gate rounds (≥ 1).
    pub max_rounds: u32,
    /// Agent name (an `[agents]` entry or a built-in preset).
    pub agent: String,
    /// Agents that run, in this order, while the agent waits on a usage limit; the loop goes
    /// back to its agent after the limit's reset.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fallback_agents: Vec<String>,
    /// The agent that writes the plan (an `[agents]` entry or a preset), when it is not the one
    /// that runs the iterations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planning_agent: Option<String>,
    /// Evaluator name (an `[evaluators]` entry or `heuristic`).
    pub evaluator: String,
    /// Attach the live view after `start`.
    pub auto_watch: bool,
    /// The completion promise: a line of agent output equal to this ends the loop.
    pub promise: String,
    /// `check` (the promise ends the loop only with the plan done and the gate passed) or
    /// `trust` (any promise ends it).
    pub promise_check: PromiseCheck,
    /// Run the three-persona panel after the evaluator.
    pub panel: bool,
    /// Headings of `fix_plan.md` whose items are optional (never hold the loop open).
    pub optional_sections: Vec<String>,
    /// The artifact type (`research`, `design`, `code`, `generic` or a `[types]` entry), when
    /// neither `start --type` nor a delegation's `metadata.json` names one.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Where the loop runs: `none` (in the artifact directory as it is) or `worktree` (in a
    /// linked worktree of its own, on branch `wiggum/<topic>`; `start --worktree`).
    #[serde(skip_serializing_if = "Isolation::is_none")]
    pub isolation: Isolation,
    /// Where worktrees are made (default: `.git/wiggum-worktrees/` of the repository).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree_dir: Option<std::path::PathBuf>,
    /// A code loop's spec: files the agents read and never modify (relative to the artifact
    /// directory; `start --spec`). Empty: the artifact directory's `artifact.md`, if any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub spec: Vec<std::path::PathBuf>,
    /// Copies of the user's work (`$STUDIO_AGENTS_HOME/kept/`) older than this many days are
    /// removed at the next `start`; 0 keeps them forever.
    #[serde(skip_serializing_if = "is_default_keep_days")]
    pub keep_days: u32,
    /// Keep the machine from idle sleep while an agent of this loop runs.
    pub keep_awake: bool,
}

/// The days kept copies are kept by default.
pub const KEEP_DAYS: u32 = 30;

fn is_default_keep_days(days: &u32) -> bool {
    *days == KEEP_DAYS
}

/// `[defaults] isolation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Isolation {
    /// The loop runs in the artifact directory as it is.
    #[default]
    None,
    /// The loop runs in a linked worktree on a branch of its own.
    Worktree,
}

impl Isolation {
    fn is_none(&self) -> bool {
        *self == Isolation::None
    }
}

/// The headings whose plan items are optional, by default.
pub const OPTIONAL_SECTIONS: [&str; 4] = ["optional", "future", "nice to have", "later"];

impl Default for Defaults {
    fn default() -> Self {
        Self {
            max_iterations: 10,
            quality_threshold: 0.85,
            pass_threshold: 8.0,
            max_rounds: 3,
            agent: "claude".into(),
            fallback_agents: Vec::new(),
            planning_agent: None,
            evaluator: "heuristic".into(),
            auto_watch: false,
            promise: "<promise>COMPLETE</promise>".into(),
            promise_check: PromiseCheck::Check,
            panel: false,
            optional_sections: OPTIONAL_SECTIONS.iter().map(|s| (*s).to_string()).collect(),
            kind: None,
            isolation: Isolation::None,
            worktree_dir: None,
            spec: Vec::new(),
            keep_days: KEEP_DAYS,
            keep_awake: true,
        }
    }
}

/// `[finish]`: the pull request of `wiggum pr`, and whether a loop that ends done opens it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Finish {
    /// Push the branch and open (or update) its pull request when the loop ends done.
    pub pull_request: bool,
    /// `github`, `gitlab`, `gitea` or `forgejo` (default: from the remote's URL).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forge: Option<ForgeKind>,
    /// The remote pushed to (default `origin`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
    /// The forge's API base, for a self-hosted forge (default: from the remote's host).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api: Option<String>,
    /// `owner/name` on the forge (default: from the remote's URL).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    /// The branch the pull request goes into (default: the branch a worktree loop started
    /// from, else the remote's default branch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// The environment variable holding the forge's token (default `GITHUB_TOKEN`,
    /// `GITLAB_TOKEN` or `GITEA_TOKEN`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_env: Option<String>,
}

/// `[finish] forge`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ForgeKind {
    /// github.com or GitHub Enterprise.
    Github,
    /// gitlab.com or a self-hosted GitLab.
    Gitlab,
    /// Gitea, and Forgejo (Codeberg), which speaks the same API.
    #[serde(alias = "forgejo")]
    Gitea,
}

/// `[quality_metrics]`: weights of the built-in metrics (ADR 0015).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QualityWeights {
    /// Sections present and substantive.
    pub completeness_weight: f64,
    /// Claims backed by evidence.
    pub verification_weight: f64,
    /// Readable, structured.
    pub clarity_weight: f64,
    /// Concrete steps.
    pub actionability_weight: f64,
}

impl Default for QualityWeights {
    fn default() -> Self {
        Self {
            completeness_weight: 0.25,
            verification_weight: 0.30,
            clarity_weight: 0.20,
            actionability_weight: 0.25,
        }
    }
}

/// `[safety]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Safety {
    /// Stop the loop (reason `budget`) before its spend would cross this, in USD (0: none).
    pub max_cost_per_loop: f64,
    /// Stop the loop before its tokens (agents and evaluators) cross this (0: none).
    pub max_tokens_per_loop: u64,
    /// Stop the loop after this many seconds of wall time (0: none).
    pub max_time_per_loop: u64,
    /// Wall limit of one agent run, in seconds.
    pub max_time_per_iteration: u64,
    /// Pause before this iteration until `resume` (0 = never).
    pub require_human_review_at_iteration: u32,
    /// Seconds between SIGTERM and SIGKILL when an agent is stopped.
    pub kill_grace_secs: u64,
    /// Fresh retries of a crashed iteration before the breaker trips.
    pub max_crash_retries: u32,
    /// Iterations in a row without any change before the breaker trips.
    pub max_no_change_iterations: u32,
    /// What the loop does when an agent asks a question instead of working.
    pub on_question: OnQuestion,
    /// Questions in a row (no run between them changed anything) that pause the loop (0: never).
    pub max_questions: u32,
    /// Agent runs in a row ending on the same error (numbers, paths and ids aside) (0: off).
    pub max_repeated_errors: u32,
    /// Trip when a run's output shrinks by more than this percentage against the mean of the
    /// three before it (0: off).
    pub max_output_shrink_percent: u32,
    /// Validation failures in a row before the breaker trips (0: off).
    pub max_validation_failures: u32,
    /// Extra environment variables an agent may see (names, `*` as a suffix wildcard).
    pub env_allow: Vec<String>,
    /// Kernel confinement of agent runs.
    pub sandbox: SandboxMode,
    /// Extra directories (or files) an agent may write to.
    pub writable: Vec<std::path::PathBuf>,
    /// When not empty, the only places an agent may read (system directories are added).
    pub readable: Vec<std::path::PathBuf>,
    /// The TCP connections an agent may make: `"any"`, `"none"`, or a list of ports.
    pub network: Network,
    /// Memory ceiling of an agent's whole process tree, in MB (0 = none).
    pub max_memory_mb: u64,
    /// The largest file (its apparent size) an iteration may change, in MB (0 = none): a larger
    /// one is never read, hashed or committed, and the iteration is rejected naming it.
    pub max_file_mb: u64,
    /// Ceiling of one run's output (its log), in MB (0 = none): past it the run is killed and
    /// its log cut back, so a runaway agent cannot fill the disk overnight.
    pub max_log_mb: u64,
    /// End a run that printed nothing and changed no file for this long, in seconds (0 = never).
    pub max_idle_secs: u64,
    /// Stop an agent that printed the completion promise and lingers this long, in seconds.
    pub promise_grace_secs: u64,
    /// Agent runs per hour at most (0: no limit); past it the loop waits.
    pub max_calls_per_hour: u32,
    /// First wait after a limit answer without a reset time, in seconds (doubling, ≤ 1 h).
    pub limit_backoff_secs: u64,
    /// Extra patterns (regular expressions) of output lines that mean "wait and retry".
    pub limit_patterns: Vec<String>,
    /// Extra patterns of output lines that mean "this will not work": the loop stops.
    pub fatal_patterns: Vec<String>,
    /// CPU seconds of each process of an agent run (0 = no limit).
    pub max_cpu_secs: u64,
    /// Open files of each process of an agent run (0 = inherited).
    pub max_open_files: u64,
    /// Tools the agent may not use, for presets that accept a deny-list (claude).
    pub deny_tools: Vec<String>,
    /// Completion claims in a row not taken before the loop ends as `promise_rejected` (0: never).
    pub max_premature_promises: u32,
    /// Processes (and threads) of one agent run at most, where cgroup v2's `pids` controller is
    /// on (0: no ceiling): a fork bomb stops there.
    pub max_processes: u64,
    /// Whether an agent may make Unix sockets (`"deny"`: the user's tmux, ssh-agent and
    /// desktop bus are out of reach; `socketpair` always works).
    pub unix_sockets: UnixSockets,
}

/// `[defaults] promise_check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum PromiseCheck {
    /// A claim is taken only with no open plan item and, with the gate on, the gate passed.
    #[default]
    Check,
    /// Any promise ends the loop.
    Trust,
}

/// `[safety] on_question`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum OnQuestion {
    /// The loop goes on with other items; the question stays open until answered.
    #[default]
    Continue,
    /// The loop pauses before the next iteration until the question is answered (or resumed).
    Pause,
}

/// `[safety] unix_sockets`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum UnixSockets {
    /// No Unix socket is made (a seccomp filter refuses `socket(AF_UNIX, …)`).
    #[default]
    Deny,
    /// Unix sockets as the kernel allows them.
    Allow,
}

impl Default for Safety {
    fn default() -> Self {
        Self {
            max_cost_per_loop: 10.0,
            max_tokens_per_loop: 0,
            max_time_per_loop: 0,
            max_time_per_iteration: 600,
            require_human_review_at_iteration: 0,
            kill_grace_secs: 10,
            max_crash_retries: 2,
            max_no_change_iterations: 3,
            on_question: OnQuestion::Continue,
            max_questions: 3,
            max_repeated_errors: 5,
            max_output_shrink_percent: 70,
            max_validation_failures: 5,
            env_allow: Vec::new(),
            sandbox: SandboxMode::Landlock,
            writable: Vec::new(),
            readable: Vec::new(),
            network: Network::default(),
            max_memory_mb: 0,
            max_file_mb: 50,
            max_log_mb: 1024,
            max_idle_secs: 300,
            promise_grace_secs: 10,
            max_calls_per_hour: 0,
            limit_backoff_secs: 60,
            limit_patterns: Vec::new(),
            fatal_patterns: Vec::new(),
            max_cpu_secs: 0,
            max_open_files: 0,
            deny_tools: Vec::new(),
            unix_sockets: UnixSockets::Deny,
            max_processes: 1024,
            max_premature_promises: 2,
        }
    }
}

/// `[safety] sandbox`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SandboxMode {
    /// Confine with Landlock where the kernel has it; say plainly what is not enforced.
    #[default]
    Landlock,
    /// No kernel confinement (the environment allow-list and the checks still apply).
    Off,
    /// Refuse to run an agent unconfined.
    Required,
}

impl SandboxMode {
    /// The name, as in the settings.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Landlock => "landlock",
            SandboxMode::Off => "off",
            SandboxMode::Required => "required",
        }
    }
}

/// `[safety] network`: `"any"`, `"none"`, or the TCP ports an agent may connect to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Network {
    /// `"any"` or `"none"`.
    Rule(NetworkRule),
    /// Only these TCP ports.
    Ports(Vec<u16>),
}

impl Default for Network {
    fn default() -> Self {
        Network::Rule(NetworkRule::Any)
    }
}

/// `"any"` or `"none"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetworkRule {
    /// No restriction.
    Any,
    /// No TCP connection at all.
    None,
}

impl Network {
    /// The TCP ports allowed, or `None` when any connection is.
    #[must_use]
    pub fn allowed_ports(&self) -> Option<Vec<u16>> {
        match self {
            Network::Rule(NetworkRule::Any) => None,
            Network::Rule(NetworkRule::None) => Some(Vec::new()),
            Network::Ports(p) => Some(p.clone()),
        }
    }
}

/// `[validation]`: backpressure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Validation {
    /// Shell commands run in the repository after every iteration; any failure rejects it.
    pub commands: Vec<String>,
    /// Files (relative to the artifact dir; `{iteration_dir}` expands) that must exist.
    pub required_files: Vec<String>,
    /// Wall limit of one validation command, in seconds.
    pub timeout_secs: u64,
    /// A code loop without commands proposes the project's own test command (`cargo test`,
    /// `npm test`, ...) from its files; `start --no-validate` turns it off.
    pub detect: bool,
    /// JUnit XML reports the commands write (relative to the repository's top): a report
    /// written during a command's run gives its per-test results.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub junit: Vec<String>,
}

impl Default for Validation {
    fn default() -> Self {
        Self {
            commands: Vec::new(),
            required_files: Vec::new(),
            timeout_secs: 600,
            detect: true,
            junit: Vec::new(),
        }
    }
}

/// What the gate judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum GateTarget {
    /// The iteration's `artifact.md`.
    #[default]
    Artifact,
    /// The iteration's git diff.
    Diff,
    /// No gate; validation commands alone.
    Off,
}

/// What to do with an iteration the gate failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum OnGateFail {
    /// Commit the best round's content and record FAIL.
    #[default]
    KeepBest,
    /// Do not commit; restore the previous accepted artifact.
    Revert,
}

/// `[gate]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GateSettings {
    /// What the gate judges.
    pub target: GateTarget,
    /// Policy on FAIL (and on ERROR after one retry).
    pub on_gate_fail: OnGateFail,
    /// Only dimensions below this are highlighted in the revision prompt.
    pub focus_threshold: f64,
    /// Characters of output the evaluator sees (compressed beyond).
    pub evaluator_input_chars: usize,
    /// Characters of output each panel persona sees.
    pub panel_excerpt_chars: usize,
    /// Evaluator sampling temperature.
    pub evaluator_temperature: f64,
    /// Producer temperature in revision rounds.
    pub revision_temperature: f64,
    /// Panel temperature.
    pub panel_temperature: f64,
    /// Rubric weights by dimension.
    pub weights: BTreeMap<String, f64>,
    /// Evaluator pool: when non-empty, md5(run_id) picks one per run.
    pub pool: Vec<String>,
    /// The producer of revision rounds (an `[agents]` name); the loop's agent by default.
    pub producer: Option<String>,
    /// Custom evaluator prompt template (checked for contamination signals).
    pub evaluator_template: Option<String>,
    /// Custom revision prompt template.
    pub revision_template: Option<String>,
}

impl Default for GateSettings {
    fn default() -> Self {
        Self {
            target: GateTarget::Artifact,
            on_gate_fail: OnGateFail::KeepBest,
            focus_threshold: 7.0,
            evaluator_input_chars: 6000,
            panel_excerpt_chars: 5000,
            evaluator_temperature: 0.0,
            revision_temperature: 0.3,
            panel_temperature: 0.3,
            weights: default_weights(),
            pool: Vec::new(),
            producer: None,
            evaluator_template: None,
            revision_template: None,
        }
    }
}

/// The rubric of a code loop's gate: is the change correct, is it tested, is it in scope (one
/// plan item, no unrelated edits, no deleted tests).
#[must_use]
pub fn code_weights() -> BTreeMap<String, f64> {
    [("correctness", 0.5), ("tests", 0.3), ("scope", 0.2)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

/// The rubric's default weights (seed 000).
#[must_use]
pub fn default_weights() -> BTreeMap<String, f64> {
    [
        ("depth", 0.25),
        ("relevance", 0.20),
        ("completeness", 0.20),
        ("grounded", 0.15),
        ("specificity", 0.10),
        ("structure", 0.10),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// `[hooks]`: commands run on the loop's events, with the event as JSON on stdin and in the
/// environment (`WIGGUM_EVENT`, `TOPIC`, `ITERATION`, `REASON`). A failing hook is logged and
/// never stops the loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Hooks {
    /// After every iteration.
    pub on_iteration_end: Option<String>,
    /// When the loop ends, whatever the reason.
    pub on_stop: Option<String>,
    /// When a budget ends the loop.
    pub on_budget: Option<String>,
    /// When the loop starts waiting out a limit.
    pub on_waiting: Option<String>,
    /// When a breaker ends the loop.
    pub on_breaker: Option<String>,
    /// When the loop wants a person: an agent asked a question, a review checkpoint, a pause
    /// for an answer.
    pub on_needs_human: Option<String>,
    /// Seconds a hook may run.
    pub timeout_secs: u64,
}

impl Default for Hooks {
    fn default() -> Self {
        Self {
            on_iteration_end: None,
            on_stop: None,
            on_budget: None,
            on_waiting: None,
            on_breaker: None,
            on_needs_human: None,
            timeout_secs: 30,
        }
    }
}

/// `[notify]`: where the loop's events are sent without a script of one's own. Each sink names
/// the environment variable holding its URL (webhook URLs carry tokens: never in a settings file
/// the agent can read) and the events it wants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Notify {
    /// Seconds a message may take to deliver, retries included; it never holds up the loop.
    pub deliver_within_secs: u64,
    /// The sinks (`[[notify.sinks]]`).
    pub sinks: Vec<NotifySink>,
}

impl Default for Notify {
    fn default() -> Self {
        Self {
            deliver_within_secs: 30,
            sinks: Vec::new(),
        }
    }
}

impl Notify {
    /// No sink configured.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.sinks.is_empty()
    }
}

/// One `[[notify.sinks]]` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotifySink {
    /// Its kind: the message format.
    pub kind: SinkKind,
    /// The environment variable holding its URL (not for `desktop`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url_env: Option<String>,
    /// The events it is sent.
    #[serde(default = "default_notify_events")]
    pub events: Vec<NotifyEvent>,
}

/// A sink's message format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SinkKind {
    /// A JSON POST of the event.
    Webhook,
    /// An ntfy topic URL: the message as text, its title and tags in headers.
    Ntfy,
    /// A Slack incoming webhook: `{"text": …}`.
    Slack,
    /// A Discord webhook: `{"content": …}`.
    Discord,
    /// `notify-send`, where it is installed.
    Desktop,
}

/// The events a sink can be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotifyEvent {
    /// Every end of the loop, with its reason.
    Stop,
    /// The loop waits for a person (a review checkpoint).
    NeedsHuman,
    /// A breaker ended it, or it waits on a usage limit (with the reset time).
    Stalled,
    /// A budget ended it.
    Budget,
    /// Each iteration's end.
    IterationEnd,
}

fn default_notify_events() -> Vec<NotifyEvent> {
    vec![
        NotifyEvent::Stop,
        NotifyEvent::NeedsHuman,
        NotifyEvent::Stalled,
        NotifyEvent::Budget,
    ]
}

/// `[git]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GitSettings {
    /// Commit accepted iterations.
    pub commit: bool,
    /// Author and committer name.
    pub name: String,
    /// Author and committer email.
    pub email: String,
    /// The repository's `pre-commit` and `commit-msg` hooks: skipped, or run as git runs them.
    pub hooks: GitHooks,
}

/// `[git] hooks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum GitHooks {
    /// The loop's commits bypass the hooks (`start` says so when there are hooks).
    #[default]
    Skip,
    /// `pre-commit` and `commit-msg` run before each commit; a rejecting hook rejects the
    /// iteration like a failed validation.
    Run,
}

impl Default for GitSettings {
    fn default() -> Self {
        Self {
            commit: true,
            name: "wiggum-agent".into(),
            email: "wiggum@studio-agents.local".into(),
            hooks: GitHooks::Skip,
        }
    }
}
