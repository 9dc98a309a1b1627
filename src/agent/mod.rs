//! Agents: which command runs (`spec`), the one constructor and runner of every agent run
//! (`launch`), the run's home — its layer, the credentials written back, the CLI's state dirs —
//! (`home`), how a process runs and dies (`process`, `kill`, the script it starts as: `script`), and what its output says
//! (`output`) and whether the run asked instead of working (`asked`). May import `disk`, `config` and `sys`.

pub mod asked;
pub mod home;
pub mod kill;
pub mod launch;
pub mod liveness;
pub mod output;
pub mod process;
pub mod sandbox;
pub mod script;
pub mod spec;
