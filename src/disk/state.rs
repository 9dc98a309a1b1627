//! `state.json`: the loop's `LoopState`, rewritten atomically after every change, read by
//! `status`/`list` from any shell without the daemon's help. A corrupt file is moved aside,
//! never overwritten blindly.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::{IoContext, Result};
use crate::sys::fsutil;

/// Where the loop is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Writing `fix_plan.md` before iteration 1.
    #[default]
    Planning,
    /// Iterating.
    Running,
    /// Waiting at an iteration boundary for `resume`.
    Paused,
    /// A stop was requested; the current agent is being stopped.
    Stopping,
    /// Waiting out a usage or rate limit (`waiting_until`), or the calls-per-hour ceiling.
    Waiting,
    /// Stopped by the user (or a budget).
    Stopped,
    /// Ended on its own exit condition.
    Completed,
    /// Ended by a breaker or an error.
    Failed,
}

impl Status {
    /// Whether a process should be holding the lock in this status.
    #[must_use]
    pub fn is_live(self) -> bool {
        matches!(
            self,
            Status::Planning
                | Status::Running
                | Status::Paused
                | Status::Stopping
                | Status::Waiting
        )
    }

    /// The snake_case name, as in the JSON.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Planning => "planning",
            Status::Running => "running",
            Status::Paused => "paused",
            Status::Stopping => "stopping",
            Status::Waiting => "waiting",
            Status::Stopped => "stopped",
            Status::Completed => "completed",
            Status::Failed => "failed",
        }
    }
}

/// Why the loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// `fix_plan.md` has no `- [ ]` left.
    PlanEmpty,
    /// The built-in quality metrics reached the threshold.
    ThresholdMet,
    /// The iteration limit was reached.
    MaxIterations,
    /// The agent printed the completion promise.
    Promise,
    /// Someone ran `stop` (or sent SIGTERM/SIGINT).
    UserStop,
    /// The cost budget was spent.
    Budget,
    /// A circuit breaker tripped (no change, repeated crashes).
    Breaker,
    /// The agent claimed completion (the promise) again and again with the plan still open or
    /// the gate failing (`[safety] max_premature_promises` claims in a row).
    PromiseRejected,
    /// An unrecoverable error.
    Error,
}

impl StopReason {
    /// The snake_case name, as in the JSON.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::PlanEmpty => "plan_empty",
            StopReason::ThresholdMet => "threshold_met",
            StopReason::MaxIterations => "max_iterations",
            StopReason::Promise => "promise",
            StopReason::UserStop => "user_stop",
            StopReason::Budget => "budget",
            StopReason::Breaker => "breaker",
            StopReason::PromiseRejected => "promise_rejected",
            StopReason::Error => "error",
        }
    }

    /// The final status a loop ending for this reason has.
    #[must_use]
    pub fn final_status(self) -> Status {
        match self {
            StopReason::PlanEmpty
            | StopReason::ThresholdMet
            | StopReason::MaxIterations
            | StopReason::Promise => Status::Completed,
            StopReason::UserStop | StopReason::Budget => Status::Stopped,
            StopReason::Breaker | StopReason::PromiseRejected | StopReason::Error => Status::Failed,
        }
    }
}

/// The loop's state, as stored in `state.json` (a documented contract, see docs/json.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LoopState {
    /// The loop's topic.
    pub topic: String,
    /// The artifact directory.
    pub artifact_path: PathBuf,
    /// Where the loop is.
    pub status: Status,
    /// Why it ended, once it has.
    pub stop_reason: Option<StopReason>,
    /// A one-line explanation of the stop (the error, the breaker's reason).
    pub stop_detail: Option<String>,
    /// The iteration in progress, or the last one run.
    pub current_iteration: u32,
    /// The last iteration that was committed (accepted), 0 if none.
    pub last_committed_iteration: u32,
    /// The iteration limit.
    pub max_iterations: u32,
    /// The outer loop's quality threshold (0–1).
    pub quality_threshold: f64,
    /// Built-in quality metrics of the latest artifact (0–1 overall).
    pub last_quality: Option<f64>,
    /// When the loop (this run of it) started.
    pub started_at: DateTime<Utc>,
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
    /// The running agent's pid, while one runs.
    pub agent_pid: Option<u32>,
    /// The running agent's process group, while one runs (killed by the next start after a crash).
    pub agent_pgid: Option<i32>,
    /// The running agent's kill-tree token (finds its setsid'd helpers after a crash).
    pub agent_token: Option<String>,
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
    /// While `waiting`: until when.
    pub waiting_until: Option<DateTime<Utc>>,
    /// While `waiting`: why ("usage limit, claude").
    pub waiting_reason: Option<String>,
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
}

impl Default for LoopState {
    fn default() -> Self {
        let now = Utc::now();
        Self {
            topic: String::new(),
            artifact_path: PathBuf::new(),
            status: Status::Planning,
            stop_reason: None,
            stop_detail: None,
            current_iteration: 0,
            last_committed_iteration: 0,
            max_iterations: 0,
            quality_threshold: 0.0,
            last_quality: None,
            started_at: now,
            updated_at: now,
            pid: 0,
            pid_start_ticks: None,
            premature_promises: 0,
            promise_note: None,
            agent: String::new(),
            agent_pid: None,
            agent_pgid: None,
            agent_token: None,
            last_scores: BTreeMap::new(),
            last_gate_score: None,
            items_remaining: None,
            items_optional: None,
            cost_usd: 0.0,
            reviewed: false,
            carried_paths: Vec::new(),
            limited_agents: BTreeMap::new(),
            harness: None,
            spend: Spend::default(),
            trends: Trends::default(),
            waiting_until: None,
            waiting_reason: None,
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

/// What to show for a loop: its state's status, or `dead` when the state says it is live but no
/// one holds its lock, `starting` before the first state write, `unknown` when there is nothing.
#[must_use]
pub fn shown_status(st: Option<&LoopState>, locked: bool) -> &'static str {
    match st {
        None if locked => "starting",
        None => "unknown",
        Some(s) if s.status.is_live() && !locked => "dead",
        Some(s) => s.status.as_str(),
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
}

/// Write the state atomically, stamping `updated_at`.
pub fn save(path: &Path, state: &mut LoopState) -> Result<()> {
    state.updated_at = Utc::now();
    let json = to_json(state)?;
    fsutil::atomic_write_at(path, json.as_bytes(), "state-after-temp-write")
}

/// The bytes [`save`] writes for `state` (as it is, not re-stamped).
pub fn to_json(state: &LoopState) -> Result<String> {
    let mut json = serde_json::to_string_pretty(state)
        .map_err(|e| crate::error::Error::runtime(format!("serialise state: {e}")))?;
    json.push('\n');
    Ok(json)
}

/// Read the state without touching it (for `status`, `list`). A corrupt file is an error here.
pub fn read(path: &Path) -> Result<Option<LoopState>> {
    let Some(text) = fsutil::read_opt(path)? else {
        return Ok(None);
    };
    serde_json::from_str(&text).map(Some).map_err(|e| {
        crate::error::Error::runtime(format!("{} is not valid state: {e}", path.display()))
    })
}

/// Read the state for a (re)start: a corrupt file is moved aside to
/// `state.json.corrupt-<timestamp>` so the evidence survives.
pub fn load_for_start(path: &Path) -> Result<Loaded> {
    let Some(text) = fsutil::read_opt(path)? else {
        return Ok(Loaded::Missing);
    };
    match serde_json::from_str(&text) {
        Ok(s) => Ok(Loaded::Ok(Box::new(s))),
        Err(e) => {
            let stamp = Utc::now().format("%Y%m%dT%H%M%S%.3fZ");
            let aside = path.with_file_name(format!("state.json.corrupt-{stamp}"));
            std::fs::rename(path, &aside).at(path, "move aside corrupt state")?;
            Ok(Loaded::MovedAside(aside, e.to_string()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("state.json");
        let mut s = LoopState {
            topic: "t".into(),
            stop_reason: Some(StopReason::PlanEmpty),
            ..LoopState::default()
        };
        save(&p, &mut s).unwrap();
        let back = read(&p).unwrap().unwrap();
        assert_eq!(back, s);
        let raw = std::fs::read_to_string(&p).unwrap();
        assert!(raw.contains("\"stop_reason\": \"plan_empty\""), "{raw}");
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
        assert_eq!(s.status, Status::Running);
        assert_eq!(s.current_iteration, 3);
    }

    #[test]
    fn shown_status_says_dead_when_nobody_holds_a_live_loop() {
        let live = LoopState {
            status: Status::Running,
            current_iteration: 2,
            max_iterations: 5,
            ..LoopState::default()
        };
        assert_eq!(shown_status(Some(&live), false), "dead");
        assert_eq!(shown_status(Some(&live), true), "running");
        assert_eq!(shown_status(None, true), "starting");
        assert_eq!(shown_status(None, false), "unknown");
    }

    #[test]
    fn stop_reasons_map_to_final_status() {
        assert_eq!(StopReason::PlanEmpty.final_status(), Status::Completed);
        assert_eq!(StopReason::UserStop.final_status(), Status::Stopped);
        assert_eq!(StopReason::Breaker.final_status(), Status::Failed);
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
        assert_eq!(s.status, Status::Completed);
        assert_eq!(s.stop_reason, Some(StopReason::PlanEmpty));
        assert_eq!((s.current_iteration, s.last_committed_iteration), (3, 3));
        assert_eq!(s.last_scores["grounded"], 7.5);
        assert!(
            s.carried_paths.is_empty(),
            "a field it did not have defaults"
        );
    }
}
