//! The Wiggum gate (inner loop): rubric rules, evaluators, JSON extraction, prompts, safeguards
//! and the panel. `gate::run` is the loop; everything else feeds it.

pub mod evaluator;
pub mod extract;
pub mod gate;
pub mod heuristic;
pub mod http;
pub mod panel;
pub mod prompts;
pub mod rubric;
pub mod text;

pub use gate::{GateRecord, Verdict};

/// What an evaluator said of one output.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// Scores by dimension, 0–10.
    pub dims: rubric::Dims,
    /// Specific problems.
    pub issues: Vec<String>,
}
