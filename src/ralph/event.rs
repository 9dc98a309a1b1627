//! The one payload of a loop's events, as `[hooks]` get it on stdin (and in
//! `WIGGUM_EVENT_JSON`) and the `[notify]` webhook POSTs it (docs/json.md): built here only.

use serde::Serialize;

use crate::disk::state::StopReason;

/// What happened, with its own fields.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Fields {
    /// An iteration was committed.
    IterationEnd {
        /// Open items left.
        items_remaining: Option<usize>,
        /// The gate's kept score.
        last_gate_score: Option<f64>,
        /// What the loop spent (`$1.2340`, `unknown`).
        cost: String,
    },
    /// A review checkpoint or a requested pause.
    NeedsHuman {
        /// The command that resumes the loop.
        resume: String,
    },
    /// An agent asked a question instead of working (sent as `needs_human`).
    Asked {
        /// What it asked.
        question: String,
        /// How to answer it.
        detail: String,
    },
    /// Waiting on a usage limit or a busy resource.
    Waiting {
        /// Until when (RFC 3339).
        until: String,
    },
    /// The loop ended (also sent as `budget` or `breaker` when that is why).
    Stop {
        /// The `stop_reason`.
        stop_reason: &'static str,
        /// One line on why.
        detail: String,
        /// What the loop spent.
        cost: String,
        /// The quality of the artifact before this run of the loop.
        quality_before: Option<f64>,
        /// The reason in words.
        reason_words: String,
    },
}

/// One event of a loop.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    /// `iteration_end`, `needs_human`, `waiting`, `stop`, `budget`, `breaker`.
    pub event: &'static str,
    /// The loop's topic.
    pub topic: String,
    /// The iteration it happened at (0: planning).
    pub iteration: u32,
    /// Why, in a word or a line (a `stop_reason` for `stop`).
    pub reason: String,
    /// The loop's status then.
    pub status: &'static str,
    /// When (RFC 3339).
    pub at: String,
    /// The event's own fields.
    #[serde(flatten)]
    pub fields: Fields,
}

impl Fields {
    /// The fields of a loop's end.
    #[must_use]
    pub fn stop(
        reason: StopReason,
        detail: &str,
        cost: String,
        quality_before: Option<f64>,
    ) -> Self {
        Fields::Stop {
            stop_reason: reason.as_str(),
            detail: detail.to_string(),
            cost,
            quality_before,
            reason_words: super::progress::reason_words(reason).to_string(),
        }
    }
}

impl Event {
    /// The reason as people read it: a stop in words (`every item in fix_plan.md is done`).
    #[must_use]
    pub fn said(&self) -> &str {
        match &self.fields {
            Fields::Stop { reason_words, .. } => reason_words,
            _ => &self.reason,
        }
    }

    /// The quality before this run of the loop, for events that know it.
    #[must_use]
    pub fn quality_before(&self) -> Option<f64> {
        match &self.fields {
            Fields::Stop { quality_before, .. } => *quality_before,
            _ => None,
        }
    }

    /// The JSON the hooks and the webhook get.
    #[must_use]
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_payload_has_the_documented_fields_of_each_event() {
        let ev = |event, fields| Event {
            event,
            topic: "t".into(),
            iteration: 3,
            reason: "r".into(),
            status: "running",
            at: "2026-11-25T00:00:00+00:00".into(),
            fields,
        };
        let keys = |e: &Event| -> Vec<String> {
            let v = e.to_value();
            let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
            k.sort();
            k
        };
        let common = ["at", "event", "iteration", "reason", "status", "topic"];
        let with = |own: &[&str]| {
            let mut k: Vec<String> = common.iter().chain(own).map(|s| s.to_string()).collect();
            k.sort();
            k
        };
        let stop = ev(
            "stop",
            Fields::stop(StopReason::PlanEmpty, "done", "$0.1000".into(), Some(0.2)),
        );
        assert_eq!(
            keys(&stop),
            with(&[
                "cost",
                "detail",
                "quality_before",
                "reason_words",
                "stop_reason"
            ])
        );
        assert_eq!(stop.to_value()["stop_reason"], "plan_empty");
        let end = Fields::IterationEnd {
            items_remaining: None,
            last_gate_score: Some(7.5),
            cost: "unknown".into(),
        };
        assert_eq!(
            keys(&ev("iteration_end", end)),
            with(&["cost", "items_remaining", "last_gate_score"])
        );
        let wait = Fields::Waiting { until: "x".into() };
        assert_eq!(keys(&ev("waiting", wait)), with(&["until"]));
        let human = Fields::NeedsHuman { resume: "x".into() };
        assert_eq!(keys(&ev("needs_human", human)), with(&["resume"]));
    }
}
