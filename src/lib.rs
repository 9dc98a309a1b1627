//! studio-agents: Ralph loops as a daemon. See docs/architecture.md for the theory of operation.
//!
//! The tree is the architecture; dependencies point down this list, and nothing imports a part
//! above it:
//!
//! - `cli`: arguments and printing, one module per subcommand.
//! - `supervisor`: the daemon: detach, signals, serve one loop; beside it, `view`: one read model
//!   of a loop (status, list, watch, summary, report), the live view.
//! - `ralph`: the outer loop: pure decisions, the driver, one iteration, acceptance.
//! - `gate`: the Wiggum gate: rounds, rubric, judges, extraction, prompts, panel.
//! - `agent`: agent specs, the one constructor of every agent run, processes, kill-tree, output;
//!   beside it, `git`: preflight, snapshots, commits of exactly the changed paths, diffs.
//! - `quality`: the Markdown reader, form without substance, the built-in metrics, the types.
//! - `disk`: the on-disk contract shared by the daemon and other shells.
//! - `config`: layered settings.
//! - `sys`: small helpers: atomic files, the no-follow file layer, `/proc`, cgroups, failpoints,
//!   the one `unsafe` module.
//!
//! `error` is shared by all. `tests/it/architecture.rs` holds the tree to this list.
//!
//! Nothing is public but `cli::main`, the whole of the binary: every part is `pub(crate)`, so an
//! item no caller in the crate uses is dead code the compiler reports, and no caller outside the
//! crate can reach past the harness (an agent run is built only by `agent::launch`).

pub(crate) mod agent;
pub mod cli;
pub(crate) mod config;
pub(crate) mod disk;
pub(crate) mod error;
pub(crate) mod gate;
pub(crate) mod git;
pub(crate) mod quality;
pub(crate) mod ralph;
pub(crate) mod supervisor;
pub(crate) mod sys;
pub(crate) mod view;
