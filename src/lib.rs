//! studio-agents: Ralph loops as a daemon. See docs/architecture.md for the theory of operation.
//!
//! Decisions are pure functions over data (`ralph::decide`, `ralph::fix_plan`, `ralph::metrics`,
//! `wiggum::rubric`, `wiggum::extract`, ...); IO lives at the edges (`agent::process`, `vcs`,
//! `state`, `lock`, `wiggum::http`).

pub mod agent;
pub mod cli;
pub mod config;
pub mod control;
pub mod daemon;
pub mod error;
pub mod failpoint;
pub mod fsutil;
pub mod kernel;
pub mod layout;
pub mod lock;
pub mod markdown;
pub mod procs;
pub mod ralph;
pub mod registry;
pub mod report;
pub mod runlog;
pub mod state;
pub mod vcs;
pub mod watch;
pub mod wiggum;
