//! The on-disk contract: the only thing the daemon and the other shells share. Every path of a
//! loop (`layout`), its state (`state`), run records (`runlog`), requests from other shells
//! (`requests`: pause, stop after the iteration, stop grace, an answer), an agent's question and
//! its answer (`questions`), the locks (`lock`), the topic
//! registry (`registry`) and a delegation's record (`delegation`). May import `sys` and `config`
//! (a handle reads the loop's pinned settings) only.

pub mod delegation;
pub mod handle;
pub mod kept;
pub mod layout;
pub mod ledger;
pub mod lock;
pub mod phase;
pub mod questions;
pub mod records;
pub mod registry;
pub mod requests;
pub mod runlog;
pub mod state;
pub mod worktrees;
