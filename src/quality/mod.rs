//! What the loop and the heuristic judge know of a Markdown document without a model: the
//! Markdown reader (`markdown`) and the built-in quality metrics (`metrics`). Pure; imports
//! `config` (the weights) only.

pub mod markdown;
pub mod metrics;
