//! `runs.jsonl`: append-only, one JSON object per iteration and per gate round. Reading tolerates
//! a torn last line (a crash mid-append).

use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::agent::process::Ending;
use crate::error::{Error, IoContext, Result};
use crate::gate::GateRecord;
use crate::quality::metrics::Metrics;
use crate::sys::fsutil;

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
        }
    }
}

/// One line of `runs.jsonl` (a documented contract, see docs/json.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// `iteration`, `planning` or `gate_round`.
    pub record: String,
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
    /// What happened.
    pub outcome: Outcome,
    /// A note (the breaker's reason, an error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

fn one() -> u32 {
    1
}

/// Append a record.
pub fn append(path: &Path, rec: &impl Serialize) -> Result<()> {
    let line = serde_json::to_string(rec)
        .map_err(|e| Error::runtime(format!("serialise run record: {e}")))?;
    fsutil::append_line(path, &line)
}

/// Read every iteration record that parses; a torn or foreign line is skipped.
pub fn read(path: &Path) -> Result<Vec<RunRecord>> {
    let mut out = Vec::new();
    for_each(path, |r| out.push(r))?;
    Ok(out)
}

/// Stream the records that parse, one line at a time (a torn, foreign or non-UTF-8 line is
/// skipped); a missing file has none.
pub fn for_each(path: &Path, mut each: impl FnMut(RunRecord)) -> Result<()> {
    let f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).at(path, "read"),
    };
    fsutil::stream_lines(std::io::BufReader::new(f), 1024 * 1024, |l| {
        if let Ok(r) = serde_json::from_slice::<RunRecord>(l) {
            each(r);
        }
    })
    .at(path, "read")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(i: u32) -> RunRecord {
        RunRecord {
            record: "iteration".into(),
            iteration: i,
            attempt: 1,
            started_at: Utc::now(),
            ended_at: Utc::now(),
            duration_ms: 5,
            agent_pid: Some(1),
            agent_exit: Some(Ending::Exited { code: 0 }),
            timed_out: false,
            cost_usd: None,
            tokens_in: None,
            tokens_out: None,
            files_changed: vec![],
            commit: None,
            quality: None,
            validation_failed: None,
            gate: None,
            promise_seen: false,
            outcome: Outcome::Accepted,
            note: None,
        }
    }

    #[test]
    fn a_torn_last_line_is_tolerated() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("runs.jsonl");
        append(&p, &rec(1)).unwrap();
        append(&p, &rec(2)).unwrap();
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        std::io::Write::write_all(&mut f, b"{\"record\":\"iteration\",\"itera").unwrap();
        let got = read(&p).unwrap();
        assert_eq!(
            got.iter().map(|r| r.iteration).collect::<Vec<_>>(),
            vec![1, 2]
        );
    }

    #[test]
    fn outcome_names_match_the_json() {
        for o in [
            Outcome::Accepted,
            Outcome::GateFailed,
            Outcome::Rejected,
            Outcome::NoChange,
            Outcome::Crashed,
            Outcome::Interrupted,
            Outcome::Planned,
        ] {
            assert_eq!(serde_json::to_value(o).unwrap(), o.as_str());
        }
    }

    #[test]
    fn agent_exit_serialises_as_tagged() {
        let s = serde_json::to_string(&rec(1)).unwrap();
        assert!(
            s.contains(r#""agent_exit":{"kind":"exited","code":0}"#),
            "{s}"
        );
        assert!(s.contains(r#""outcome":"accepted""#), "{s}");
    }
}
