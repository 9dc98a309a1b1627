//! What the loop and the heuristic judge know of a Markdown document without a model: the
//! Markdown reader (`markdown`), form without substance (`substance`), the built-in quality
//! metrics (`metrics`), what a task names (`terms`, weighed against a built-in English word
//! list) and the artifact types that say what they look for (`types`). Pure;
//! imports `config` (weights, `[types]`) and `disk` (the records' `Metrics`) only.

pub mod markdown;
pub mod metrics;
pub mod substance;
pub mod terms;
pub mod types;
