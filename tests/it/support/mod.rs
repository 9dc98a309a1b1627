//! The integration-test kit: an isolated home, a command builder for the real binary, scripted
//! agents, one polling waiter, and survivor checks.

pub mod forge;
pub mod home;
pub mod http;
#[cfg(target_os = "linux")]
pub mod logind;
pub mod procs;
pub mod wait;

#[cfg(target_os = "linux")]
pub use home::nix_is_root;
pub use home::{TestHome, git};
pub use procs::assert_no_survivors;
pub use wait::wait_for;
