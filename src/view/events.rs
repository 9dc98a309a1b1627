//! The loop's events, one stable schema (docs/json.md), read from its records: a line of
//! `runs.jsonl` is a run that started and ended (and a commit, a wait, when it was one), or a
//! gate round; the end of the loop comes from `state.json` (a breaker, then the stop). `wiggum
//! events` prints them as JSON lines. Pure.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::disk::records::{ControlRecord, GateRoundRecord, Outcome, RecordKind, RunRecord};
use crate::disk::state::{LoopState, StopReason};

/// One event.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    /// When it happened.
    pub at: DateTime<Utc>,
    /// The loop's topic.
    pub topic: String,
    /// What happened: `run_started`, `run_ended`, `validation`, `gate_round`, `commit`,
    /// `question`, `wait`, `pause`, `resume`, `breaker`, `stop`.
    pub event: &'static str,
    /// The iteration (0: planning, or the loop as a whole).
    pub iteration: u32,
    /// The event's own fields.
    #[serde(flatten)]
    pub detail: Detail,
}

/// What each kind of event carries.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Detail {
    /// A run started.
    RunStarted {
        /// `planning` or `iteration`.
        phase: &'static str,
        /// The attempt within the iteration.
        attempt: u32,
        /// The fallback agent that ran it, if one did.
        #[serde(skip_serializing_if = "Option::is_none")]
        agent: Option<String>,
    },
    /// A run ended.
    RunEnded {
        /// `planning` or `iteration`.
        phase: &'static str,
        /// The attempt within the iteration.
        attempt: u32,
        /// Its outcome, as the run record has it.
        outcome: &'static str,
        /// An accepted iteration whose gate did not pass, kept all the same (the run line
        /// says `kept`); absent otherwise.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        kept: bool,
        /// Wall time, ms.
        duration_ms: u64,
        /// The gate's final score, when it judged the run.
        #[serde(skip_serializing_if = "Option::is_none")]
        gate: Option<f64>,
        /// Cost, USD, when known.
        #[serde(skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
        /// The record's note (why it crashed, was limited, ...).
        #[serde(skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// An evaluated gate round.
    GateRound {
        /// The round.
        round: u32,
        /// Its weighted score.
        score: f64,
    },
    /// What the validation commands showed after an iteration's run.
    Validation {
        /// Every command passed.
        green: bool,
        /// `green`, `2 failing: test_a, test_b`, or the failing command.
        summary: String,
        /// The failing tests by name (the first ten).
        #[serde(skip_serializing_if = "Vec::is_empty")]
        failing: Vec<String>,
    },
    /// An accepted iteration's commit.
    Commit {
        /// The commit.
        commit: String,
    },
    /// The run asked a question instead of working.
    Question {
        /// What it asked.
        question: String,
    },
    /// A usage or rate limit: the run's note says which.
    Wait {
        /// What the agent's output said.
        reason: String,
    },
    /// The loop paused (with why) or resumed, before the iteration.
    Control {
        /// Why it paused; absent for a resume.
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The loop ended: why.
    Stop {
        /// The reason's code (docs/json.md).
        reason: &'static str,
        /// The reason in detail.
        detail: String,
    },
}

/// The events of one line of `runs.jsonl` (none for a line that is no record).
#[must_use]
pub fn of_line(topic: &str, line: &str) -> Vec<Event> {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
        return Vec::new();
    };
    let record = v.get("record").and_then(|r| r.as_str()).map(str::to_string);
    match record.as_deref() {
        Some("pause") => control_event(topic, "pause", v),
        Some("resume") => control_event(topic, "resume", v),
        Some("gate_round") => gate_round_event(topic, v),
        _ => serde_json::from_value::<RunRecord>(v)
            .map_or_else(|_| Vec::new(), |r| run_events(topic, &r)),
    }
}

/// One event of `topic`.
fn event(
    topic: &str,
    at: DateTime<Utc>,
    event: &'static str,
    iteration: u32,
    detail: Detail,
) -> Event {
    Event {
        at,
        topic: topic.to_string(),
        event,
        iteration,
        detail,
    }
}

/// A pause or resume record as its event.
fn control_event(topic: &str, name: &'static str, v: serde_json::Value) -> Vec<Event> {
    serde_json::from_value::<ControlRecord>(v)
        .map(|c| {
            vec![event(
                topic,
                c.at,
                name,
                c.iteration,
                Detail::Control { reason: c.reason },
            )]
        })
        .unwrap_or_default()
}

/// A gate round's record as its event.
fn gate_round_event(topic: &str, v: serde_json::Value) -> Vec<Event> {
    serde_json::from_value::<GateRoundRecord>(v)
        .map(|g| {
            vec![event(
                topic,
                g.at,
                "gate_round",
                g.iteration,
                Detail::GateRound {
                    round: g.round.round,
                    score: g.round.score,
                },
            )]
        })
        .unwrap_or_default()
}

/// A run's record as its start and end, then what came of it.
fn run_events(topic: &str, r: &RunRecord) -> Vec<Event> {
    let phase = match r.record {
        RecordKind::Planning => "planning",
        _ => "iteration",
    };
    let mut out = vec![
        event(
            topic,
            r.started_at,
            "run_started",
            r.iteration,
            Detail::RunStarted {
                phase,
                attempt: r.attempt,
                agent: r.agent.clone(),
            },
        ),
        event(
            topic,
            r.ended_at,
            "run_ended",
            r.iteration,
            Detail::RunEnded {
                phase,
                attempt: r.attempt,
                outcome: r.outcome.as_str(),
                kept: r.kept_failing(),
                duration_ms: r.duration_ms,
                gate: r.gate.as_ref().and_then(|g| g.final_score),
                cost_usd: r.cost_usd,
                note: r.note.clone().or_else(|| r.validation_failed.clone()),
            },
        ),
    ];
    out.extend(
        outcome_details(r)
            .into_iter()
            .map(|(name, detail)| event(topic, r.ended_at, name, r.iteration, detail)),
    );
    out
}

/// What a run's end brought besides its end: its validation, its question, its wait, its
/// commit, in that order.
fn outcome_details(r: &RunRecord) -> Vec<(&'static str, Detail)> {
    let mut out = Vec::new();
    if let Some(v) = &r.validation {
        out.push((
            "validation",
            Detail::Validation {
                green: v.green,
                summary: v.summary.clone(),
                failing: v.failing.iter().take(10).cloned().collect(),
            },
        ));
    }
    // A run that asked, or that worked and was refused a tool: either leaves a question.
    if let Some(q) = &r.question {
        out.push((
            "question",
            Detail::Question {
                question: q.clone(),
            },
        ));
    }
    if r.outcome == Outcome::Limited {
        out.push((
            "wait",
            Detail::Wait {
                reason: r.note.clone().unwrap_or_default(),
            },
        ));
    }
    if let Some(c) = &r.commit {
        out.push(("commit", Detail::Commit { commit: c.clone() }));
    }
    out
}

/// A run that is going on now (`state.json` names its agent), as `run_started`: followed, a
/// run is seen when it starts, though its record is written when it ends. `attempt`: the
/// attempt this would be (one more than the records of its iteration so far).
#[must_use]
pub fn live_start(st: &LoopState, attempt: u32, now: DateTime<Utc>) -> Option<Event> {
    st.agent_run()?.pid?;
    let phase = if st.status() == crate::disk::state::Status::Planning {
        "planning"
    } else {
        "iteration"
    };
    Some(Event {
        at: now,
        topic: st.topic.clone(),
        event: "run_started",
        iteration: st.current_iteration,
        detail: Detail::RunStarted {
            phase,
            attempt,
            agent: None,
        },
    })
}

/// The end of the loop, when it has ended: a `breaker` (when that is why) and the `stop`.
#[must_use]
pub fn of_end(st: &LoopState) -> Vec<Event> {
    let Some(reason) = st.stop_reason().filter(|_| !st.status().is_live()) else {
        return Vec::new();
    };
    let detail = st.stop_detail().unwrap_or_default().to_string();
    let ev = |event, d| Event {
        at: st.updated_at,
        topic: st.topic.clone(),
        event,
        iteration: st.current_iteration,
        detail: d,
    };
    let mut out = Vec::new();
    if matches!(reason, StopReason::Breaker | StopReason::PromiseRejected) {
        out.push(ev(
            "breaker",
            Detail::Stop {
                reason: reason.as_str(),
                detail: detail.clone(),
            },
        ));
    }
    out.push(ev(
        "stop",
        Detail::Stop {
            reason: reason.as_str(),
            detail,
        },
    ));
    out
}

/// `--since`: an RFC 3339 time, or a time ago (`90s`, `30m`, `2h`, `1d`) from `now`.
///
/// # Errors
/// A value that is neither, named.
pub fn since(value: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    if let Ok(t) = DateTime::parse_from_rfc3339(value) {
        return Ok(t.with_timezone(&Utc));
    }
    let (num, unit) = value.split_at(value.trim_end_matches(char::is_alphabetic).len());
    let n: i64 = num
        .parse()
        .map_err(|_| format!("--since {value}: an RFC 3339 time or a time ago (30m, 2h, 1d)"))?;
    let secs = match unit {
        "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        "d" => n * 86_400,
        _ => {
            return Err(format!(
                "--since {value}: an RFC 3339 time or a time ago (30m, 2h, 1d)"
            ));
        }
    };
    Ok(now - chrono::Duration::seconds(secs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn a_record_is_a_run_that_started_and_ended_and_its_commit() {
        let line = r#"{"record":"iteration","iteration":2,"attempt":1,"started_at":"2026-11-25T03:00:00Z","ended_at":"2026-11-25T03:01:00Z","duration_ms":60000,"outcome":"accepted","commit":"abc123","cost_usd":0.4,"gate":{"final":"PASS","termination":"pass","rounds":1,"wiggum_r1":8.2,"final_score":8.2,"best_round":1,"wiggum_scores":{},"issues":{},"evaluator":"heuristic"}}"#;
        let got: Vec<String> = of_line("t", line)
            .iter()
            .map(|e| serde_json::to_string(e).unwrap())
            .collect();
        assert_eq!(
            got,
            [
                r#"{"at":"2026-11-25T03:00:00Z","topic":"t","event":"run_started","iteration":2,"phase":"iteration","attempt":1}"#,
                r#"{"at":"2026-11-25T03:01:00Z","topic":"t","event":"run_ended","iteration":2,"phase":"iteration","attempt":1,"outcome":"accepted","duration_ms":60000,"gate":8.2,"cost_usd":0.4}"#,
                r#"{"at":"2026-11-25T03:01:00Z","topic":"t","event":"commit","iteration":2,"commit":"abc123"}"#,
            ]
        );
        assert!(of_line("t", "not json").is_empty());
        let limited = r#"{"record":"iteration","iteration":1,"attempt":1,"started_at":"2026-11-25T03:00:00Z","ended_at":"2026-11-25T03:00:01Z","duration_ms":1000,"outcome":"limited","note":"usage limit: reached"}"#;
        let kinds: Vec<&str> = of_line("t", limited).iter().map(|e| e.event).collect();
        assert_eq!(kinds, ["run_started", "run_ended", "wait"]);
        // Kept though its gate did not pass: the run line says `kept`, and so does the event.
        let kept = line.replace(r#""final":"PASS""#, r#""final":"FAIL""#);
        let ended = serde_json::to_string(&of_line("t", &kept)[1]).unwrap();
        assert!(
            ended.contains(r#""outcome":"accepted","kept":true,"#),
            "{ended}"
        );
    }

    #[test]
    fn since_takes_a_time_or_a_time_ago() {
        let now = Utc.with_ymd_and_hms(2026, 11, 25, 12, 0, 0).unwrap();
        assert_eq!(since("2h", now).unwrap(), now - chrono::Duration::hours(2));
        assert_eq!(since("1d", now).unwrap(), now - chrono::Duration::days(1));
        assert_eq!(
            since("2026-11-25T03:00:00Z", now).unwrap(),
            Utc.with_ymd_and_hms(2026, 11, 25, 3, 0, 0).unwrap()
        );
        assert!(
            since("yesterday", now)
                .unwrap_err()
                .starts_with("--since yesterday: ")
        );
    }
}
