//! The dashboard's live feed: the lines a person reads in the terminal — each run's line
//! (`ralph::progress::run_line`, the one formatter of them), a run going on, a wait, and the
//! completion block at the end — each with its UTC time, which the page shows in the reader's
//! local time. The raw events stay `wiggum events`' and the event stream's. Pure.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::disk::records::RunRecord;
use crate::disk::state::{LoopState, Status};
use crate::ralph::progress::run_line;

/// One line (or block) of the feed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Item {
    /// When it happened (the page shows it in local time).
    pub at: DateTime<Utc>,
    /// `run` (a run's line, as the terminal printed it), `started` (a run going on), `wait`,
    /// `end` (the completion block).
    pub kind: &'static str,
    /// The text.
    pub line: String,
    /// Until when a wait lasts (the page shows it in local time after the line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until: Option<DateTime<Utc>>,
}

impl Item {
    /// `line` as the terminal shows it: agent text in it without control sequences.
    fn new(at: DateTime<Utc>, kind: &'static str, line: String) -> Self {
        Item {
            at,
            kind,
            line: crate::sys::term::printable(&line),
            until: None,
        }
    }
}

/// The line of one line of `runs.jsonl`, as the terminal said it (`max`: the iteration limit
/// shown as `i/N`); none for a gate round's line or a line that is no record.
#[must_use]
pub fn of_line(line: &str, max: u32) -> Option<Item> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    if v.get("record").and_then(|r| r.as_str()) == Some("gate_round") {
        return None;
    }
    let r: RunRecord = serde_json::from_value(v).ok()?;
    Some(Item::new(
        r.ended_at,
        "run",
        run_line(&r, max, r.what.as_deref()),
    ))
}

/// What the loop is doing now, when a line says it: a run going on (`Iteration 2/10 running`,
/// `Planning running`), or a wait (`waiting (<why>) until` and the time).
#[must_use]
pub fn now_line(st: &LoopState, now: DateTime<Utc>) -> Option<Item> {
    if let Some((until, why)) = st.phase().waiting() {
        return Some(Item {
            until: Some(until),
            ..Item::new(now, "wait", format!("waiting ({why}) until"))
        });
    }
    st.agent_run()?.pid?;
    let head = match st.status() {
        Status::Planning => "Planning".to_string(),
        _ if st.max_iterations > 0 => {
            format!("Iteration {}/{}", st.current_iteration, st.max_iterations)
        }
        _ => format!("Iteration {}", st.current_iteration),
    };
    Some(Item::new(now, "started", format!("{head} running")))
}

/// The end: the completion block, at the time the loop ended.
#[must_use]
pub fn end(st: &LoopState, block: String) -> Item {
    Item::new(st.updated_at, "end", block)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_as_the_terminal_s_line_and_a_gate_round_as_nothing() {
        let line = r#"{"record":"iteration","iteration":2,"attempt":1,"started_at":"2026-11-25T03:00:00Z","ended_at":"2026-11-25T03:01:00Z","duration_ms":60000,"outcome":"accepted","commit":"abc1234def","what":"Improve part 2","gate":{"final":"PASS","termination":"pass","rounds":1,"wiggum_r1":8.2,"final_score":8.2,"best_round":1,"wiggum_scores":{},"issues":{},"evaluator":"heuristic"}}"#;
        let item = of_line(line, 10).unwrap();
        assert_eq!(
            serde_json::to_string(&item).unwrap(),
            r#"{"at":"2026-11-25T03:01:00Z","kind":"run","line":"Iteration 2/10 ✓ accepted · gate 8.2 (r1 8.2, 1 round) · 1m00s · abc1234 \"Improve part 2\""}"#
        );
        assert_eq!(
            of_line(r#"{"record":"gate_round","iteration":2}"#, 10),
            None
        );
        assert_eq!(of_line("not json", 10), None);
    }
}
