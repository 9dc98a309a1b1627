//! The run-record schema of `runs.jsonl` (a documented contract, docs/json.md): what one agent run
//! and one gate round left behind, and the types they hold — how a process ended, the built-in
//! metrics, the gate's verdict and record. Plain data, shared by the parts that write records
//! (the loop, the gate) and the ones that read them (status, summary, report, recovery).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// How a job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Ending {
    /// It exited by itself with this code.
    Exited {
        /// Exit code.
        code: i32,
    },
    /// A signal not sent by us ended it.
    Signaled {
        /// Signal number.
        signal: i32,
    },
    /// The wall limit ran out and we killed it.
    TimedOut,
    /// A stop request killed it.
    Stopped,
    /// It printed nothing and changed no file for `[safety] max_idle_secs`; killed.
    Idle,
    /// Its process tree crossed `[safety] max_memory_mb`; killed.
    MemoryLimit,
    /// Its log crossed `[safety] max_log_mb`; killed, the log cut back to the ceiling.
    OutputLimit,
    /// It printed the completion promise and lingered past `[safety] promise_grace_secs`;
    /// stopped, and counted as finished.
    Finished,
}

impl std::fmt::Display for Ending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ending::Exited { code } => write!(f, "exited with code {code}"),
            Ending::Signaled { signal } => write!(f, "was killed by signal {signal}"),
            Ending::TimedOut => write!(f, "timed out and was killed"),
            Ending::Stopped => write!(f, "was stopped"),
            Ending::Idle => write!(f, "was idle too long and was killed"),
            Ending::MemoryLimit => write!(f, "crossed the memory ceiling and was killed"),
            Ending::OutputLimit => write!(f, "printed past the output ceiling and was killed"),
            Ending::Finished => write!(f, "printed the promise and was stopped after the grace"),
        }
    }
}

impl Ending {
    /// Exited with code 0.
    #[must_use]
    pub fn success(self) -> bool {
        matches!(self, Ending::Exited { code: 0 } | Ending::Finished)
    }
    /// Ended by us or a signal rather than on its own (a run stopped after its promise ended
    /// on its own terms).
    #[must_use]
    pub fn killed(self) -> bool {
        !matches!(self, Ending::Exited { .. } | Ending::Finished)
    }
}

/// The four metrics and their weighted mean.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct Metrics {
    /// Sections present and substantive.
    pub completeness: f64,
    /// Claims backed by evidence (links, code, citations).
    pub verification: f64,
    /// Readable and structured.
    pub clarity: f64,
    /// Recommendations with concrete steps.
    pub actionability: f64,
    /// Weighted mean of the four.
    pub overall: f64,
}

/// The gate's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Verdict {
    /// Score reached the threshold.
    Pass,
    /// Rounds exhausted, cycling, or nothing to revise with.
    Fail,
    /// The evaluator or producer failed.
    Error,
}

impl Verdict {
    /// `PASS`, `FAIL` or `ERROR`, as in the JSON.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::Error => "ERROR",
        }
    }
}

/// Why the gate stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Termination {
    /// Score ≥ threshold.
    Pass,
    /// Max rounds reached.
    RoundsExhausted,
    /// Every dimension equal to the previous round's.
    Cycling,
    /// The revision came back unchanged (no evaluation spent on it).
    Unchanged,
    /// No producer to revise with.
    NoProducer,
    /// Evaluator or producer failure.
    Error,
}

impl Termination {
    /// The snake_case name, as in the JSON.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Termination::Pass => "pass",
            Termination::RoundsExhausted => "rounds_exhausted",
            Termination::Cycling => "cycling",
            Termination::Unchanged => "unchanged",
            Termination::NoProducer => "no_producer",
            Termination::Error => "error",
        }
    }
}

/// One persona's review.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Review {
    /// The persona's name.
    pub persona: String,
    /// Its score, 0–10.
    pub score: Option<f64>,
    /// Specific problems it saw.
    pub issues: Vec<String>,
    /// What was done well.
    pub strengths: Vec<String>,
}

/// The gate's record, as stored in `runs.jsonl` and printed by `gate --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateRecord {
    /// PASS, FAIL or ERROR.
    #[serde(rename = "final")]
    pub verdict: Verdict,
    /// Why it stopped.
    pub termination: Termination,
    /// Rounds evaluated.
    pub rounds: u32,
    /// The first round's score.
    pub wiggum_r1: Option<f64>,
    /// The best round's score (the content kept).
    pub final_score: Option<f64>,
    /// Which round's content was kept.
    pub best_round: Option<u32>,
    /// Dimensions by round: `{"r1": {...}, "r2": {...}}`.
    pub wiggum_scores: BTreeMap<String, BTreeMap<String, f64>>,
    /// Issues by round.
    pub issues: BTreeMap<String, Vec<String>>,
    /// The evaluator used.
    pub evaluator: String,
    /// The panel's reviews by round, when it ran.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub panel_reviews: BTreeMap<String, Vec<Review>>,
    /// The evaluator and producer are the same model, or a template looked contaminated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contamination_warning: Option<String>,
    /// The failure, for ERROR.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Prompt tokens the evaluator's calls used, when reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_in: Option<u64>,
    /// Answer tokens the evaluator's calls used, when reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_out: Option<u64>,
    /// What the evaluator's calls cost, when their tokens and its model's price are known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// What happened to an iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Passed validation and the gate (or the gate's FAIL policy kept it); committed.
    Accepted,
    /// The gate failed it and the policy reverted it.
    GateFailed,
    /// A validation command or required file failed; not committed.
    Rejected,
    /// The agent changed nothing.
    NoChange,
    /// Killed or failed without changes; discarded and retried.
    Crashed,
    /// The supervisor stopped (or died) mid-iteration; discarded.
    Interrupted,
    /// The planning phase.
    Planned,
    /// The provider answered with a usage or rate limit: waited out, not a failure.
    Limited,
    /// The agent changed nothing and asked a question (or was refused a tool it asked for).
    Asked,
}

impl Outcome {
    /// The snake_case name, as in the JSON.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Accepted => "accepted",
            Outcome::GateFailed => "gate_failed",
            Outcome::Rejected => "rejected",
            Outcome::NoChange => "no_change",
            Outcome::Crashed => "crashed",
            Outcome::Interrupted => "interrupted",
            Outcome::Planned => "planned",
            Outcome::Limited => "limited",
            Outcome::Asked => "asked",
        }
    }
}

/// An iteration's `eval.json`: the gate's record and every round (docs/json.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalFile {
    /// The gate's record.
    pub gate: GateRecord,
    /// Every round, in order.
    pub rounds: Vec<Round>,
}

/// What `gate --json` prints: the record, every round, and the file gated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateReport {
    /// The gate's record.
    pub record: GateRecord,
    /// Every round, in order.
    pub rounds: Vec<Round>,
    /// The file gated (rewritten with the best round's content).
    pub file: std::path::PathBuf,
}

/// One evaluated round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    /// 1-based.
    pub round: u32,
    /// Weighted score, 0–10.
    pub score: f64,
    /// Dimensions after the stub penalty.
    pub dims: BTreeMap<String, f64>,
    /// The evaluator's issues (plus the panel's, prefixed).
    pub issues: Vec<String>,
    /// Depth points docked for hallucination stubs.
    pub stub_penalty: usize,
    /// Dimensions below the focus threshold.
    pub focus: Vec<String>,
}

/// Which kind of line of `runs.jsonl` a record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordKind {
    /// One attempt at an iteration.
    Iteration,
    /// One run of the planning phase.
    Planning,
    /// One evaluated round of the gate ([`GateRoundRecord`]).
    GateRound,
}

/// A pause or a resume of the loop, a line of `runs.jsonl` of its own (`record` is `pause` or
/// `resume`): `wiggum events` shows them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ControlRecord {
    /// `pause` or `resume`.
    pub record: String,
    /// The iteration the loop waits before.
    pub iteration: u32,
    /// When it happened.
    pub at: DateTime<Utc>,
    /// Why it paused (`paused by the user`, `human review before iteration 3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What every agent run contributes to its record.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunFacts {
    /// When the agent started.
    pub started_at: DateTime<Utc>,
    /// Its pid.
    pub pid: u32,
    /// How it ended.
    pub ending: Ending,
    /// Reported cost, USD.
    pub cost_usd: Option<f64>,
    /// Reported input tokens.
    pub tokens_in: Option<u64>,
    /// Reported output tokens.
    pub tokens_out: Option<u64>,
}

/// One iteration attempt or planning run: a line of `runs.jsonl` (a documented contract, see
/// docs/json.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// `iteration` or `planning`.
    pub record: RecordKind,
    /// The iteration number (0 for planning).
    pub iteration: u32,
    /// Attempt number within the iteration (1 = first try).
    #[serde(default = "one")]
    pub attempt: u32,
    /// Start of the agent run.
    pub started_at: DateTime<Utc>,
    /// End of the iteration.
    pub ended_at: DateTime<Utc>,
    /// Wall time, ms.
    pub duration_ms: u64,
    /// The agent's pid.
    #[serde(default)]
    pub agent_pid: Option<u32>,
    /// How the agent ended.
    #[serde(default)]
    pub agent_exit: Option<Ending>,
    /// Killed at the wall limit.
    #[serde(default)]
    pub timed_out: bool,
    /// Reported cost, USD.
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// Reported input tokens.
    #[serde(default)]
    pub tokens_in: Option<u64>,
    /// Reported output tokens.
    #[serde(default)]
    pub tokens_out: Option<u64>,
    /// Paths the agent changed (relative to the artifact dir).
    #[serde(default)]
    pub files_changed: Vec<String>,
    /// The commit, if one was made.
    #[serde(default)]
    pub commit: Option<String>,
    /// Built-in quality metrics of the artifact after the iteration.
    #[serde(default)]
    pub quality: Option<Metrics>,
    /// The validation command that failed, if any.
    #[serde(default)]
    pub validation_failed: Option<String>,
    /// The gate's record.
    #[serde(default)]
    pub gate: Option<GateRecord>,
    /// The agent printed the completion promise.
    #[serde(default)]
    pub promise_seen: bool,
    /// The promise was printed but not taken, and why (items open, the gate failed, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub premature_promise: Option<String>,
    /// What happened.
    pub outcome: Outcome,
    /// The agent that ran (by name), when it was a fallback of the loop's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// A note (the breaker's reason, an error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Names (never values) of the environment variables the agent was given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_passed: Vec<String>,
    /// Protected files the agent changed (restored; the iteration was rejected).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protected_changed: Vec<String>,
    /// What the validation commands showed after this run, when they ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<ValidationShown>,
    /// Lines the commit added and removed (a code loop's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<LineCounts>,
    /// The loop's commit before this iteration's, when commits of the agent's own lie between
    /// (the iteration's change is counted, and shown by `diff`, from it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// Build output and caches left out of the commit (`__pycache__/`, `target/`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
    /// What the agent asked instead of working (outcome `asked`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// What the run did, as its line ends (the commit's subject, planning's item count): the
    /// dashboard's feed says the line the terminal said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub what: Option<String>,
    /// A kept iteration whose gate did not pass: the loop's result after it (the best so far,
    /// which may be an earlier iteration) and the score that passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best: Option<super::state::Best>,
    /// The agent wrote to the original `artifact.md`: what became of the edit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original: Option<String>,
}

/// What a validation run showed, as people read it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValidationShown {
    /// Every command passed.
    pub green: bool,
    /// One line: `green`, `2 failing: test_a, test_b`, or the failing command.
    pub summary: String,
    /// Failing tests by name (the first 50).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failing: Vec<String>,
    /// The failing output: the first failing test's message, then the last lines (bounded).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub excerpt: String,
}

/// What the last validation showed of the work tree, and how many iterations it was red after
/// (`validation.json` in the loop's records; what `status`, `summary` and the completion block
/// of a code loop read).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeValidation {
    /// The last validation of the work tree.
    pub tree: ValidationShown,
    /// After which iteration it ran (0: before the first).
    pub after_iteration: u32,
    /// Iterations whose validation failed (rejected, or accepted with tests still red).
    pub red_iterations: u32,
    /// Iterations validated.
    pub validated: u32,
}

/// Lines added and removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineCounts {
    /// Files the commit changed.
    pub files: usize,
    /// Lines added.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
}

fn one() -> u32 {
    1
}

impl RunRecord {
    /// An accepted iteration whose gate did not pass, kept all the same (`on_gate_fail =
    /// "keep-best"`): its run line says `kept`.
    #[must_use]
    pub fn kept_failing(&self) -> bool {
        self.outcome == Outcome::Accepted
            && self
                .gate
                .as_ref()
                .is_some_and(|g| g.verdict != Verdict::Pass)
    }

    /// An agent run's record of `kind`, ending now; the caller fills in what followed.
    #[must_use]
    pub fn of_run(kind: RecordKind, iteration: u32, attempt: u32, run: &RunFacts) -> RunRecord {
        let now = Utc::now();
        RunRecord {
            record: kind,
            iteration,
            attempt,
            started_at: run.started_at,
            ended_at: now,
            duration_ms: u64::try_from((now - run.started_at).num_milliseconds()).unwrap_or(0),
            agent_pid: Some(run.pid),
            agent_exit: Some(run.ending),
            timed_out: run.ending == Ending::TimedOut,
            cost_usd: run.cost_usd,
            tokens_in: run.tokens_in,
            tokens_out: run.tokens_out,
            files_changed: Vec::new(),
            commit: None,
            quality: None,
            validation_failed: None,
            validation: None,
            lines: None,
            since: None,
            left_out: Vec::new(),
            question: None,
            what: None,
            best: None,
            original: None,
            gate: None,
            promise_seen: false,
            premature_promise: None,
            agent: None,
            outcome: Outcome::Crashed,
            note: None,
            env_passed: Vec::new(),
            protected_changed: Vec::new(),
        }
    }

    /// Recovery's record of an iteration whose supervisor died: `interrupted` (discarded), or
    /// `accepted` when its commit is HEAD (the record was lost, rebuilt from git).
    #[must_use]
    pub fn recovered(iteration: u32, since: DateTime<Utc>, commit: Option<String>) -> RunRecord {
        let (outcome, note) = match commit {
            Some(_) => (
                Outcome::Accepted,
                "committed before the supervisor died; this record was rebuilt from git",
            ),
            None => (
                Outcome::Interrupted,
                "the supervisor died mid-iteration; discarded and resumed",
            ),
        };
        RunRecord {
            record: RecordKind::Iteration,
            iteration,
            attempt: 0,
            started_at: since,
            ended_at: Utc::now(),
            duration_ms: 0,
            agent_pid: None,
            agent_exit: None,
            timed_out: false,
            cost_usd: None,
            tokens_in: None,
            tokens_out: None,
            files_changed: Vec::new(),
            commit,
            quality: None,
            validation_failed: None,
            gate: None,
            promise_seen: false,
            premature_promise: None,
            agent: None,
            outcome,
            note: Some(note.into()),
            env_passed: Vec::new(),
            protected_changed: Vec::new(),
            validation: None,
            lines: None,
            since: None,
            left_out: Vec::new(),
            question: None,
            what: None,
            best: None,
            original: None,
        }
    }

    /// Whether this is a completed iteration (not a discarded or interrupted attempt).
    #[must_use]
    pub fn completes_iteration(&self) -> bool {
        self.record == RecordKind::Iteration
            && !matches!(
                self.outcome,
                Outcome::Crashed | Outcome::Interrupted | Outcome::Limited
            )
    }
}

/// One evaluated gate round inside an iteration: a line of `runs.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateRoundRecord {
    /// Always `gate_round`.
    pub record: RecordKind,
    /// The iteration it judged.
    pub iteration: u32,
    /// The round.
    #[serde(flatten)]
    pub round: Round,
    /// When it was evaluated.
    pub at: DateTime<Utc>,
}

impl GateRoundRecord {
    /// The record of `round` of iteration `iteration`, now.
    #[must_use]
    pub fn new(iteration: u32, round: Round) -> GateRoundRecord {
        GateRoundRecord {
            record: RecordKind::GateRound,
            iteration,
            round,
            at: Utc::now(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `runs.jsonl` as version 0.1.0 wrote it (a crash retried in every iteration, one gate
    /// round each): every later version reads it the same way.
    const V0_1_0: &str = include_str!("../../tests/fixtures/v0.1.0/runs.jsonl");

    #[test]
    fn run_records_of_version_0_1_0_still_read() {
        let runs: Vec<RunRecord> = V0_1_0
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let seen: Vec<(RecordKind, u32, u32, Outcome)> = runs
            .iter()
            .map(|r| (r.record, r.iteration, r.attempt, r.outcome))
            .collect();
        use Outcome::{Accepted, Crashed, Planned};
        use RecordKind::{Iteration, Planning};
        assert_eq!(
            seen,
            vec![
                (Planning, 0, 1, Crashed),
                (Planning, 0, 2, Planned),
                (Iteration, 1, 1, Crashed),
                (Iteration, 1, 2, Accepted),
                (Iteration, 2, 1, Crashed),
                (Iteration, 2, 2, Accepted),
                (Iteration, 3, 1, Crashed),
                (Iteration, 3, 2, Accepted),
            ]
        );
        let last = runs.last().unwrap();
        let gate = last.gate.as_ref().unwrap();
        assert_eq!(gate.verdict, Verdict::Fail);
        assert_eq!(gate.termination, Termination::Unchanged);
        assert_eq!(gate.wiggum_scores["r1"]["grounded"], 7.5);
        assert_eq!(last.commit.as_ref().map(String::len), Some(40));
        assert!(last.completes_iteration() && !runs[2].completes_iteration());
        let rounds: Vec<GateRoundRecord> = V0_1_0
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        assert_eq!(rounds.len(), 3);
        assert_eq!(rounds[2].iteration, 3);
        assert_eq!(rounds[2].round.dims["structure"], 10.0);
    }

    #[test]
    fn records_of_this_version_round_trip_in_the_old_shape() {
        let run = RunFacts {
            started_at: Utc::now(),
            pid: 7,
            ending: Ending::Exited { code: 0 },
            cost_usd: Some(0.5),
            tokens_in: None,
            tokens_out: None,
        };
        let r = RunRecord::of_run(RecordKind::Planning, 0, 1, &run);
        let line = serde_json::to_string(&r).unwrap();
        assert!(
            line.starts_with(r#"{"record":"planning","iteration":0,"attempt":1,"#),
            "{line}"
        );
        assert_eq!(serde_json::from_str::<RunRecord>(&line).unwrap(), r);
        let round = Round {
            round: 2,
            score: 6.5,
            dims: BTreeMap::new(),
            issues: vec!["thin".into()],
            stub_penalty: 0,
            focus: vec![],
        };
        let g = serde_json::to_value(GateRoundRecord::new(4, round)).unwrap();
        assert_eq!(
            (
                g["record"].as_str(),
                g["iteration"].as_u64(),
                g["round"].as_u64()
            ),
            (Some("gate_round"), Some(4), Some(2))
        );
    }
}
