//! The harness around an agent run: what it sees (`env`: an environment built from an
//! allow-list, never inherited) and where it may write and connect (`policy`: Landlock rules,
//! network ports, resource limits), applied by our own binary in a single-threaded helper
//! (`studio-agents sandbox-exec`, `apply`) that then executes the agent's shell, so the whole
//! tree inherits it. Decided in `agent::launch`, once for every agent run.

pub mod apply;
pub mod env;
pub mod policy;

pub use policy::{Enforcement, Policy};
