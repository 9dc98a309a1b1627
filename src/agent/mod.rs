//! Agents: which command runs (`spec`), how it runs and dies (`process`, `kill`), and what its
//! output says (`output`).

pub mod kill;
pub mod launch;
pub mod output;
pub mod process;
pub mod spec;
