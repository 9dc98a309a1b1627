//! `state.json`: the loop's `LoopState`, rewritten atomically after every change, read by
//! `status`/`list` from any shell without the daemon's help. A corrupt file is moved aside,
//! never overwritten blindly.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

pub use super::phase::{AgentRun, Ending, Phase, Status, Step, StopReason};
use crate::error::{IoContext, Result};
use crate::sys::fsutil;

/// The loop's state, as stored in `state.json` (a documented contract, see docs/json.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LoopState {
    /// The loop's topic.
    pub topic: String,
    /// The artifact directory.
    pub artifact_path: PathBuf,
    /// Where the loop is, with what is true only there (stored as the flat fields `status`,
    /// `stop_reason`, `stop_detail`, `waiting_*` and `agent_*`); changed only by [`Self::step`].
    #[serde(flatten)]
    phase: Phase,
    /// When the loop entered its status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_since: Option<DateTime<Utc>>,
    /// The iteration in progress, or the last one run.
    pub current_iteration: u32,
    /// The last iteration that was committed (accepted), 0 if none.
    pub last_committed_iteration: u32,
    /// The iteration limit.
    pub max_iterations: u32,
    /// The outer loop's quality threshold (0–1).
    pub quality_threshold: f64,
    /// Built-in quality (0–1 overall) of the loop's result, the artifact in `wiggum/final/`.
    pub last_quality: Option<f64>,
    /// When the loop (this run of it) started.
    pub started_at: DateTime<Utc>,
    /// How long the loop's earlier runs took, in milliseconds (its elapsed time counts them).
    #[serde(skip_serializing_if = "is_zero")]
    pub earlier_ms: u64,
    /// When this file was last written.
    pub updated_at: DateTime<Utc>,
    /// The supervisor's pid.
    pub pid: u32,
    /// The supervisor's start time, in clock ticks since boot: with the pid, who it is (a pid
    /// alone may have been reused). Recovery kills a previous run's agent only when that
    /// supervisor is gone.
    pub pid_start_ticks: Option<u64>,
    /// The agent's name or command.
    pub agent: String,
    /// The gate's last per-dimension scores.
    pub last_scores: BTreeMap<String, f64>,
    /// The gate's last weighted score (0–10).
    pub last_gate_score: Option<f64>,
    /// Unchecked items left in `fix_plan.md` (required ones).
    pub items_remaining: Option<usize>,
    /// Unchecked optional items (under an optional section's heading).
    pub items_optional: Option<usize>,
    /// Cost reported by the agent so far, in USD.
    pub cost_usd: f64,
    /// The human-review pause (`require_human_review_at_iteration`) already happened.
    pub reviewed: bool,
    /// What confines the agents: the sandbox line, write roots, network rule, ceilings.
    pub harness: Option<Harness>,
    /// What the loop has spent: known cost, tokens, runs whose cost is unknown.
    pub spend: Spend,
    /// What the breakers remember.
    pub trends: Trends,
    /// Limit answers in a row without a reset time (the backoff's exponent).
    pub limit_waits: u32,
    /// Agents waiting on a usage limit, and until when (`[defaults] fallback_agents` run
    /// meanwhile).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub limited_agents: BTreeMap<String, DateTime<Utc>>,
    /// When the latest agent runs started (for `max_calls_per_hour`).
    pub recent_calls: VecDeque<DateTime<Utc>>,
    /// Names (never values) of the environment variables the last agent run was given.
    pub agent_env: Vec<String>,
    /// The last thing the harness caught (a protected file changed, a ceiling crossed).
    pub last_event: Option<String>,
    /// Completion claims in a row that were not taken (the plan open, the gate failing).
    pub premature_promises: u32,
    /// Why the last claim was not taken, for the next agent's prompt (cleared once used).
    pub promise_note: Option<String>,
    /// Paths (relative to the artifact dir) the loop's agents changed that no commit holds yet:
    /// a rejected or discarded attempt's work, committed with the next accepted iteration.
    pub carried_paths: Vec<PathBuf>,
    /// The question an agent asked that no run has been told the answer to yet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<super::questions::Question>,
    /// Questions a newer one replaced while their answer was on its way: each with its answer,
    /// for the next run's prompt.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub answered: Vec<super::questions::Question>,
    /// Questions a newer one replaced before anyone answered them: open still, each answerable
    /// (`answer --iteration N`), at most ten.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub earlier: Vec<super::questions::Question>,
    /// The agent that writes the plan, when it is not `agent` (`[defaults] planning_agent`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planning_agent: Option<String>,
    /// Iterations in a row that asked instead of working (reset by one that changed anything).
    #[serde(skip_serializing_if = "is_zero_u32")]
    pub questions_in_row: u32,
    /// The accepted iteration whose artifact is `wiggum/final/artifact.md` (document loops).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub best: Option<Best>,
    /// While paused: the iteration the loop waits before (0: between planning's attempts).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paused_before: Option<u32>,
}

fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

/// The accepted iteration whose artifact is the loop's result, and how its gate judged it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Best {
    /// The iteration.
    pub iteration: u32,
    /// The gate's kept score (none when no gate judged it).
    pub score: Option<f64>,
    /// Whether its gate passed (true when no gate judged it).
    pub passed: bool,
    /// The score that passes (`[defaults] pass_threshold`).
    pub pass: f64,
}

impl LoopState {
    /// Where the loop is.
    #[must_use]
    pub fn phase(&self) -> &Phase {
        &self.phase
    }

    /// Its status name.
    #[must_use]
    pub fn status(&self) -> Status {
        self.phase.status()
    }

    /// Why it ended, once it has.
    #[must_use]
    pub fn stop_reason(&self) -> Option<StopReason> {
        self.phase.ended().and_then(|(r, _)| r)
    }

    /// The line on why it ended, once it has.
    #[must_use]
    pub fn stop_detail(&self) -> Option<&str> {
        self.phase.ended().and_then(|(_, d)| d)
    }

    /// The agent run in progress.
    #[must_use]
    pub fn agent_run(&self) -> Option<&AgentRun> {
        self.phase.agent()
    }

    /// Whether it says its loop is alive, by its heartbeat (`updated_at` within `stale_after`
    /// of `now`): how a remote run's claim is judged.
    #[must_use]
    pub fn fresh(&self, now: DateTime<Utc>, stale_after: std::time::Duration) -> bool {
        let age = (now - self.updated_at).to_std().unwrap_or_default();
        self.status().is_live() && age < stale_after
    }

    /// Move to the phase `step` leads to, at `now`; refused (and nothing changed) when the step
    /// makes no sense from here.
    pub fn step(&mut self, step: Step, now: DateTime<Utc>) -> Result<()> {
        let next = self
            .phase
            .step(step)
            .map_err(|e| crate::error::Error::runtime(format!("{}: {e}", self.topic)))?;
        if next.status() != self.phase.status() {
            self.status_since = Some(now);
        }
        self.phase = next;
        Ok(())
    }
}

#[cfg(test)]
impl LoopState {
    /// A state as if read from a file that holds `phase` (for tests of what reads states).
    pub(crate) fn in_phase(phase: Phase) -> Self {
        Self {
            phase,
            ..Self::default()
        }
    }

    /// The state of a loop that ended for `reason`.
    pub(crate) fn ended(reason: Option<StopReason>, ending: Ending, detail: Option<&str>) -> Self {
        Self::in_phase(Phase::Ended {
            ending,
            reason,
            detail: detail.map(str::to_string),
        })
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl LoopState {
    /// Milliseconds the loop has run, every run of it counted, until `end` (now while it runs,
    /// its last write when it ended).
    #[must_use]
    pub fn elapsed_ms(&self, end: DateTime<Utc>) -> u64 {
        let this = u64::try_from((end - self.started_at).num_milliseconds()).unwrap_or(0);
        self.earlier_ms.saturating_add(this)
    }

    /// When the loop's time stopped, for a loop that is not running: the moment it ended (its
    /// ending's `status_since`), not its file's last write — the end's notifications are sent,
    /// and the state saved again, after the completion block said its time. A loop that did
    /// not end (its supervisor gone) stopped at its last write.
    #[must_use]
    pub fn stopped_at(&self) -> DateTime<Utc> {
        match (&self.phase, self.status_since) {
            (Phase::Ended { .. }, Some(at)) => at,
            _ => self.updated_at,
        }
    }

    /// What the earlier runs and this one took, for the next run's `earlier_ms`.
    #[must_use]
    pub fn ran_ms(&self) -> u64 {
        self.elapsed_ms(self.stopped_at())
    }
}

impl Default for LoopState {
    fn default() -> Self {
        let now = Utc::now();
        Self {
            topic: String::new(),
            artifact_path: PathBuf::new(),
            phase: Phase::default(),
            status_since: None,
            current_iteration: 0,
            last_committed_iteration: 0,
            max_iterations: 0,
            quality_threshold: 0.0,
            last_quality: None,
            started_at: now,
            earlier_ms: 0,
            updated_at: now,
            pid: 0,
            pid_start_ticks: None,
            premature_promises: 0,
            promise_note: None,
            agent: String::new(),
            last_scores: BTreeMap::new(),
            last_gate_score: None,
            items_remaining: None,
            items_optional: None,
            cost_usd: 0.0,
            reviewed: false,
            carried_paths: Vec::new(),
            question: None,
            answered: Vec::new(),
            earlier: Vec::new(),
            planning_agent: None,
            questions_in_row: 0,
            best: None,
            paused_before: None,
            limited_agents: BTreeMap::new(),
            harness: None,
            spend: Spend::default(),
            trends: Trends::default(),
            limit_waits: 0,
            recent_calls: VecDeque::new(),
            agent_env: Vec::new(),
            last_event: None,
        }
    }
}

/// How many recent run costs the next run is estimated from.
const RECENT: usize = 5;

/// What the loop has spent so far, as far as anyone reported it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Spend {
    /// Known cost in USD (reported by the agent or evaluator, or priced from tokens).
    pub cost_usd: f64,
    /// Tokens reported (input and output).
    pub tokens: u64,
    /// Runs and calls whose cost is known.
    pub known: u32,
    /// Runs and calls whose cost is not (no cost, and no tokens with a price).
    pub unknown: u32,
    /// The latest known costs of agent runs, for the estimate of the next one.
    pub recent: VecDeque<f64>,
}

impl Spend {
    /// Count one agent run or evaluator call.
    pub fn add(&mut self, cost: Option<f64>, tokens: Option<u64>, agent_run: bool) {
        self.tokens += tokens.unwrap_or(0);
        match cost {
            Some(c) => {
                self.cost_usd += c;
                self.known += 1;
                if agent_run {
                    self.recent.push_back(c);
                    if self.recent.len() > RECENT {
                        self.recent.pop_front();
                    }
                }
            }
            None => self.unknown += 1,
        }
    }

    /// What the next agent run will likely cost: the mean of the latest ones.
    #[must_use]
    pub fn next_run(&self) -> Option<f64> {
        (!self.recent.is_empty())
            .then(|| self.recent.iter().sum::<f64>() / self.recent.len() as f64)
    }

    /// `$1.2340`, `unknown`, or `$0.4200 + unknown` when some of it is not known.
    #[must_use]
    pub fn shown(&self) -> String {
        match (self.known, self.unknown) {
            (0, 0) => "$0.0000".into(),
            (0, _) => "unknown".into(),
            (_, 0) => format!("${:.4}", self.cost_usd),
            _ => format!("${:.4} + unknown", self.cost_usd),
        }
    }
}

/// What the breakers remember across iterations (and restarts, until `--reset-breaker`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Trends {
    /// The normalised last error line of the latest agent runs (empty: none), newest last.
    pub errors: VecDeque<String>,
    /// The output size in bytes of the latest agent runs, newest last.
    pub outputs: VecDeque<u64>,
    /// Validation failures in a row.
    pub validation_failures: u32,
}

/// What confines a loop's agents, as `status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Harness {
    /// `sandbox: landlock ABI 7, enforced` or why not.
    pub sandbox: String,
    /// Where agents may write.
    pub writable: Vec<PathBuf>,
    /// `any`, `none`, or the TCP ports allowed.
    pub network: String,
    /// Memory ceiling of an agent's tree, MB (0: none).
    pub max_memory_mb: u64,
    /// Output ceiling of one run, MB (0: none).
    pub max_log_mb: u64,
    /// Idle limit, seconds (0: none).
    pub max_idle_secs: u64,
    /// Wall limit of a run, seconds.
    pub max_time_secs: u64,
}

/// The status a reader shows for a loop: its state's, or what the state cannot say itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(into = "&'static str")]
pub enum Shown {
    /// The status its state holds (and a supervisor holds its lock if it is live).
    Is(Status),
    /// The state says live but no one holds its lock: the supervisor died.
    Dead,
    /// Locked, no state written yet.
    Starting,
    /// No state at all.
    #[default]
    Unknown,
    /// The artifact directory is gone (moved or deleted).
    Missing,
    /// Another loop has been started on its artifact directory since.
    Replaced,
    /// Its supervisor is stopped (Ctrl-Z, SIGSTOP).
    Suspended,
}

impl Shown {
    /// The name shown and written (`status --json`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Shown::Is(s) => s.as_str(),
            Shown::Dead => "dead",
            Shown::Starting => "starting",
            Shown::Unknown => "unknown",
            Shown::Missing => "missing",
            Shown::Replaced => "replaced",
            Shown::Suspended => "suspended",
        }
    }
}

impl From<Shown> for &'static str {
    fn from(s: Shown) -> Self {
        s.as_str()
    }
}

impl std::fmt::Display for Shown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// What to show for a loop: its state's status, or `dead` when the state says it is live but no
/// one holds its lock, `starting` before the first state write, `unknown` when there is nothing.
#[must_use]
pub fn shown_status(st: Option<&LoopState>, locked: bool) -> Shown {
    match st {
        None if locked => Shown::Starting,
        None => Shown::Unknown,
        Some(s) if s.status().is_live() && !locked => Shown::Dead,
        Some(s) => Shown::Is(s.status()),
    }
}

/// What reading `state.json` found.
#[derive(Debug)]
pub enum Loaded {
    /// No state file yet.
    Missing,
    /// A good state.
    Ok(Box<LoopState>),
    /// The file did not parse; it was moved to the given path.
    MovedAside(PathBuf, String),
    /// The file did not parse and was moved to the given path; the save before it, which its
    /// spare still held (`sys::spare`), did.
    Before(Box<LoopState>, PathBuf, String),
}

/// Write the state atomically, stamping `updated_at`.
pub fn save(path: &Path, state: &mut LoopState) -> Result<()> {
    state.updated_at = Utc::now();
    let json = to_json(state)?;
    // A directory an agent put in the state's place is no state: it goes (a rename cannot
    // replace it, and every later start would fail reading it).
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
        tracing::warn!("{} was a directory; removed", path.display());
        if let Err(e) = fsutil::remove_dir_all_opt(path) {
            // What cannot be removed is moved aside: the state still gets its place.
            let stamp = Utc::now().format("%Y%m%dT%H%M%S%.3fZ");
            let aside = path.with_file_name(format!("state.json.corrupt-{stamp}"));
            tracing::warn!("{e}; moved aside to {}", aside.display());
            std::fs::rename(path, &aside).at(path, "move aside a directory in the place of")?;
        }
    }
    crate::sys::spare::replace(path, json.as_bytes(), "state-after-temp-write")
}

/// The bytes [`save`] writes for `state` (as it is, not re-stamped).
pub fn to_json(state: &LoopState) -> Result<String> {
    let mut json = serde_json::to_string_pretty(state)
        .map_err(|e| crate::error::Error::runtime(format!("serialise state: {e}")))?;
    json.push('\n');
    Ok(json)
}

/// A loop's questions as its supervisor keeps them, out of the agents' reach
/// (`question.json`). A loop last run by a version that kept none has them in `state.json`
/// only: read there, each on one line and without control sequences, until its next start keeps
/// them.
#[must_use]
pub fn questions(layout: &super::layout::Layout) -> super::questions::Kept {
    use super::questions::{Kept, Question, tidy};
    match fsutil::read_opt(&layout.questions()) {
        Ok(Some(t)) => serde_json::from_str(&t).unwrap_or_default(),
        Ok(None) => {
            let Some(st) = read(&layout.state()).ok().flatten() else {
                return Kept::default();
            };
            let tidied = |mut q: Question| {
                q.text = tidy(&q.text);
                q.answer = q.answer.map(|a| tidy(&a));
                q
            };
            Kept {
                question: st.question.map(tidied),
                answered: st.answered.into_iter().map(tidied).collect(),
                earlier: st.earlier.into_iter().map(tidied).collect(),
            }
        }
        Err(_) => Kept::default(),
    }
}

/// Read the state without touching it (for `status`, `list`). A corrupt file is an error here.
/// A read that does not parse is made again, twice: a reader held up between opening the file
/// and reading it may read the next save being written into it (`sys::spare`).
pub fn read(path: &Path) -> Result<Option<LoopState>> {
    let mut tries = 0;
    loop {
        let Some(text) = fsutil::read_opt(path)? else {
            return Ok(None);
        };
        match serde_json::from_str(&text) {
            Ok(s) => return Ok(Some(s)),
            Err(_) if tries < 2 => tries += 1,
            Err(e) => {
                return Err(crate::error::Error::runtime(format!(
                    "{} is not valid state: {e}",
                    path.display()
                )));
            }
        }
    }
}

/// A state as a start takes it: it parses, and what it spent is a sum of costs (finite, not
/// below zero) — the file lies in the agent's reach while it runs.
fn parsed(text: &str) -> std::result::Result<LoopState, String> {
    let st: LoopState = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let spent = [st.spend.cost_usd, st.cost_usd];
    if spent.iter().any(|c| !c.is_finite() || *c < 0.0)
        || st.spend.recent.iter().any(|c| !c.is_finite() || *c < 0.0)
    {
        return Err("its spend is not a sum of costs (negative or not finite)".into());
    }
    Ok(st)
}

/// Read the state for a (re)start: a corrupt file is moved aside to
/// `state.json.corrupt-<timestamp>` so the evidence survives.
pub fn load_for_start(path: &Path) -> Result<Loaded> {
    let aside = |why: String| -> Result<Loaded> {
        let stamp = Utc::now().format("%Y%m%dT%H%M%S%.3fZ");
        let aside = path.with_file_name(format!("state.json.corrupt-{stamp}"));
        std::fs::rename(path, &aside).at(path, "move aside corrupt state")?;
        Ok(Loaded::MovedAside(aside, why))
    };
    // A directory an agent put in its place is no state either.
    let text = if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
        Err("a directory, not a file".to_string())
    } else {
        let Some(text) = fsutil::read_opt(path)? else {
            return Ok(Loaded::Missing);
        };
        Ok(text)
    };
    let why = match text.map(|t| parsed(&t)) {
        Ok(Ok(s)) => return Ok(Loaded::Ok(Box::new(s))),
        Ok(Err(e)) => e,
        Err(why) => why,
    };
    let before = path
        .file_name()
        .map(|n| path.with_file_name(crate::sys::spare::spare_name(&n.to_string_lossy())))
        .and_then(|spare| fsutil::read_opt(&spare).ok().flatten())
        .and_then(|t| parsed(&t).ok());
    match (aside(why)?, before) {
        (Loaded::MovedAside(to, why), Some(st)) => Ok(Loaded::Before(Box::new(st), to, why)),
        (moved, _) => Ok(moved),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_in_the_states_place_is_moved_aside_at_start_and_replaced_by_a_save() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("state.json");
        std::fs::create_dir_all(path.join("x")).unwrap();
        std::fs::write(path.join("x/y"), "planted").unwrap();
        let Loaded::MovedAside(aside, why) = load_for_start(&path).unwrap() else {
            panic!("not moved aside");
        };
        assert!(
            aside.join("x/y").is_file() && why.contains("directory"),
            "{why}"
        );
        std::fs::create_dir_all(path.join("x")).unwrap();
        save(&path, &mut LoopState::default()).unwrap();
        assert!(read(&path).unwrap().is_some());
    }

    #[test]
    fn an_ended_loops_time_stops_when_it_ended_not_at_its_last_write() {
        let t0 = DateTime::<Utc>::UNIX_EPOCH;
        let at = |s: i64| t0 + chrono::Duration::seconds(s);
        let mut s = LoopState {
            started_at: t0,
            ..LoopState::default()
        };
        s.step(Step::Run, at(1)).unwrap();
        s.step(Step::End(StopReason::PlanEmpty, "done".into()), at(30))
            .unwrap();
        // Saved again after its notifications went out.
        s.updated_at = at(45);
        assert_eq!(s.stopped_at(), at(30));
        assert_eq!(s.ran_ms(), 30_000);
        // A loop whose supervisor died never ended: its last write is all there is.
        let mut dead = LoopState {
            started_at: t0,
            ..LoopState::default()
        };
        dead.step(Step::Run, at(1)).unwrap();
        dead.updated_at = at(20);
        assert_eq!(dead.stopped_at(), at(20));
    }

    #[test]
    fn round_trips() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("state.json");
        let mut s = LoopState {
            topic: "t".into(),
            ..LoopState::default()
        };
        s.step(Step::Run, Utc::now()).unwrap();
        s.step(Step::End(StopReason::PlanEmpty, "done".into()), Utc::now())
            .unwrap();
        save(&p, &mut s).unwrap();
        let back = read(&p).unwrap().unwrap();
        assert_eq!(back, s);
        let raw = std::fs::read_to_string(&p).unwrap();
        assert!(raw.contains("\"stop_reason\": \"plan_empty\""), "{raw}");
    }

    #[test]
    fn a_record_is_fresh_while_its_loop_is_live_and_its_heartbeat_recent() {
        let now = Utc::now();
        let st = |phase, age: i64| {
            let mut s = LoopState::in_phase(phase);
            s.updated_at = now - chrono::Duration::seconds(age);
            s
        };
        let ended = |ending| Phase::Ended {
            ending,
            reason: None,
            detail: None,
        };
        let window = std::time::Duration::from_secs(90);
        let cases = [
            (Phase::Running { agent: None }, 10, true),
            (Phase::Running { agent: None }, 200, false),
            (Phase::Planning { agent: None }, 0, true),
            (ended(Ending::Completed), 0, false),
            (ended(Ending::Stopped), 5, false),
        ];
        for (phase, age, want) in cases {
            let name = phase.status().as_str();
            assert_eq!(st(phase, age).fresh(now, window), want, "{name} {age}s");
        }
    }

    #[test]
    fn corrupt_state_is_moved_aside_not_lost() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("state.json");
        std::fs::write(&p, "{ not json").unwrap();
        let Loaded::MovedAside(aside, _) = load_for_start(&p).unwrap() else {
            panic!("expected moved aside")
        };
        assert!(!p.exists());
        assert_eq!(std::fs::read_to_string(aside).unwrap(), "{ not json");
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_state_that_does_not_parse_falls_back_on_the_save_before_it_in_its_spare() {
        let d = tempfile::tempdir().unwrap();
        // The loop's directory is guarded (saves go through the spare there).
        crate::sys::beneath::guard(d.path());
        let p = d.path().join("state.json");
        let mut st = LoopState {
            topic: "t".into(),
            current_iteration: 7,
            ..LoopState::default()
        };
        for _ in 0..3 {
            save(&p, &mut st).unwrap();
        }
        // A FIFO an agent put in its place, or a file cut short by a power loss.
        for bad in ["fifo", "cut"] {
            std::fs::remove_file(&p).unwrap();
            if bad == "fifo" {
                nix::unistd::mkfifo(&p, nix::sys::stat::Mode::S_IRWXU).unwrap();
            } else {
                std::fs::write(&p, "{\"topic\": \"t\", \"curr").unwrap();
            }
            let Loaded::Before(before, aside, _) = load_for_start(&p).unwrap() else {
                panic!("{bad}: expected the save before")
            };
            assert_eq!(
                (before.topic.as_str(), before.current_iteration),
                ("t", 7),
                "{bad}"
            );
            assert!(aside.exists() && !p.exists(), "{bad}");
            save(&p, &mut st).unwrap();
            save(&p, &mut st).unwrap();
        }
        // A spend below zero (which would lift every budget) is no state a start takes.
        let mut forged = st.clone();
        forged.spend.cost_usd = -100.0;
        std::fs::write(&p, to_json(&forged).unwrap()).unwrap();
        let Loaded::Before(before, _, why) = load_for_start(&p).unwrap() else {
            panic!("a negative spend was taken")
        };
        assert!(why.contains("spend"), "{why}");
        assert!(before.spend.cost_usd >= 0.0);
        // Without a spare that parses: moved aside, no state.
        std::fs::write(&p, "{ not json").unwrap();
        std::fs::write(d.path().join(".state.json.spare.tmp"), "nor this").unwrap();
        assert!(matches!(
            load_for_start(&p).unwrap(),
            Loaded::MovedAside(..)
        ));
    }

    #[test]
    fn older_state_with_fewer_fields_still_reads() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("state.json");
        std::fs::write(
            &p,
            r#"{"topic":"old","status":"running","current_iteration":3}"#,
        )
        .unwrap();
        let s = read(&p).unwrap().unwrap();
        assert_eq!(s.topic, "old");
        assert_eq!(s.status(), Status::Running);
        assert_eq!(s.current_iteration, 3);
    }

    #[test]
    fn shown_status_says_dead_when_nobody_holds_a_live_loop() {
        let mut live = LoopState {
            current_iteration: 2,
            max_iterations: 5,
            ..LoopState::default()
        };
        live.step(Step::Run, Utc::now()).unwrap();
        let shown = |st, locked| shown_status(st, locked).to_string();
        assert_eq!(shown(Some(&live), false), "dead");
        assert_eq!(shown(Some(&live), true), "running");
        assert_eq!(shown(None, true), "starting");
        assert_eq!(shown(None, false), "unknown");
    }

    #[test]
    fn the_phase_is_written_as_the_flat_fields_earlier_versions_read() {
        let mut s = LoopState::default();
        s.step(Step::Run, Utc::now()).unwrap();
        s.step(Step::AgentStarting("tok-1".into()), Utc::now())
            .unwrap();
        s.step(Step::AgentSpawned(4242), Utc::now()).unwrap();
        let v: serde_json::Value = serde_json::from_str(&to_json(&s).unwrap()).unwrap();
        assert_eq!(v["status"], "running");
        assert_eq!(v["agent_pid"], 4242);
        assert_eq!(v["agent_pgid"], 4242);
        assert_eq!(v["agent_token"], "tok-1");
        assert!(v["stop_reason"].is_null() && v["waiting_until"].is_null());
    }

    #[test]
    fn a_refused_step_changes_nothing() {
        let mut s = LoopState::default();
        let before = s.clone();
        let e = s.step(Step::Resume, Utc::now()).unwrap_err();
        assert!(e.to_string().contains("cannot resume"), "{e}");
        assert_eq!(s, before);
    }
}

#[cfg(test)]
mod pinned {
    use super::*;

    #[test]
    fn the_state_of_version_0_1_0_still_reads() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("state.json");
        std::fs::write(&p, include_str!("../../tests/fixtures/v0.1.0/state.json")).unwrap();
        let s = read(&p).unwrap().unwrap();
        assert_eq!(s.topic, "pinned");
        assert_eq!(s.status(), Status::Completed);
        assert_eq!(s.stop_reason(), Some(StopReason::PlanEmpty));
        assert_eq!((s.current_iteration, s.last_committed_iteration), (3, 3));
        assert_eq!(s.last_scores["grounded"], 7.5);
        assert!(
            s.carried_paths.is_empty(),
            "a field it did not have defaults"
        );
    }

    fn pinned(text: &str) -> LoopState {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("state.json");
        std::fs::write(&p, text).unwrap();
        read(&p).unwrap().unwrap()
    }

    #[test]
    fn a_state_left_mid_run_still_names_the_agent_to_kill() {
        let s = pinned(include_str!(
            "../../tests/fixtures/v0.2.0/state-running.json"
        ));
        assert_eq!(s.status(), Status::Running);
        let run = s.agent_run().expect("the agent run");
        assert_eq!(
            (run.pid, run.pgid, run.token.as_str()),
            (Some(91301), Some(91301), "wiggum-pinned-2-5f3a9c")
        );
        assert_eq!(s.spend.tokens, 123_456);
    }

    #[test]
    fn a_waiting_and_a_failed_state_still_read() {
        let s = pinned(include_str!(
            "../../tests/fixtures/v0.2.0/state-waiting.json"
        ));
        let (until, why) = s.phase().waiting().expect("waiting");
        assert_eq!(
            (until.to_rfc3339(), why),
            (
                "2026-11-25T03:00:00+00:00".to_string(),
                "usage limit, claude"
            )
        );
        assert!(s.agent_run().is_none());
        let s = pinned(include_str!(
            "../../tests/fixtures/v0.2.0/state-failed.json"
        ));
        assert_eq!(s.status(), Status::Failed);
        assert_eq!(
            (s.stop_reason(), s.stop_detail()),
            (Some(StopReason::Breaker), Some("no change in 3 iterations"))
        );
    }
}
