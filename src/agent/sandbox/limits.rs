//! The per-process limits of a policy (core dumps off, CPU seconds, open files), set by the
//! helper before it executes the agent's shell; the same on Linux and macOS.

use nix::sys::resource::{Resource, setrlimit};

use super::policy::Policy;

/// Set the per-process limits of the policy.
pub fn apply(p: &Policy) -> Result<(), String> {
    setrlimit(Resource::RLIMIT_CORE, 0, 0).map_err(|e| format!("core dumps off: {e}"))?;
    if p.max_cpu_secs > 0 {
        setrlimit(Resource::RLIMIT_CPU, p.max_cpu_secs, p.max_cpu_secs + 5)
            .map_err(|e| format!("CPU limit: {e}"))?;
    }
    if p.max_open_files > 0 {
        setrlimit(Resource::RLIMIT_NOFILE, p.max_open_files, p.max_open_files)
            .map_err(|e| format!("open-file limit: {e}"))?;
    }
    Ok(())
}
