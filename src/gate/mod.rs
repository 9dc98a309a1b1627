//! The Wiggum gate (inner loop): the round loop (`rounds`), rubric rules, the judges
//! (`evaluator`: heuristic, command, HTTP), JSON extraction, prompts, safeguards, the panel and
//! the one revision producer (`producer`). `rounds::run` is the loop; everything else feeds it.
//! It never imports the outer loop: may import `agent`, `quality`, `disk`, `config` and `sys`.

pub mod evaluator;
pub mod extract;
pub mod heuristic;
pub mod http;
pub mod hygiene;
pub mod panel;
pub mod producer;
pub mod prompts;
pub mod rounds;
pub mod rubric;
pub mod text;

pub use crate::disk::records::{GateRecord, Verdict};

/// What an evaluator said of one output.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// Scores by dimension, 0–10.
    pub dims: rubric::Dims,
    /// Specific problems.
    pub issues: Vec<String>,
}
