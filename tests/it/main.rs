//! Integration tests: the real binary, real processes, real git, temp dirs.

mod support;

mod architecture;
mod bad_input;
mod browser;
mod claims;
mod clis;
mod code_loops;
#[cfg(target_os = "linux")]
mod confine;
mod crash;
mod daemon;
mod dashboard;
mod delegate;
mod deputy;
#[cfg(target_os = "linux")]
mod doors;
mod events;
mod example;
mod exits;
mod first_week;
mod gate_cmd;
mod harness;
mod hooks;
mod inspect;
mod kept_result;
mod limits;
mod lock;
mod loop_core;
mod loop_gate;
mod misbehaving;
mod morning;
mod notify;
mod orphans;
mod papercuts;
mod questions;
mod refusals;
mod remote;
mod repos;
mod types;
mod watch;
mod worktrees;
