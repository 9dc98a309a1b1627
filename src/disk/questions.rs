//! A question an agent asked instead of working, and its answer. The supervisor keeps the open
//! question in `state.json`; `wiggum answer` (and the dashboard) write the answer into the
//! loop's records, out of the agent's reach (`Handle::answer`), where the next run's prompt
//! takes it from.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The longest answer kept, in bytes.
pub const MAX_ANSWER: usize = 4096;

/// A question an agent asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    /// The iteration whose run asked it.
    pub iteration: u32,
    /// What it asked (bounded, on one line).
    pub text: String,
    /// When.
    pub asked_at: DateTime<Utc>,
    /// The answer, once the next run's prompt carries it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
}

/// An answer to the open question, waiting for the next run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    /// The question it answers, as asked.
    pub question: String,
    /// The answer.
    pub text: String,
    /// When it was given.
    pub at: DateTime<Utc>,
}
