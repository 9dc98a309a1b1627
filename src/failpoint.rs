//! Test failpoints: `STUDIO_AGENTS_FAILPOINT=<name>` makes the process abort at that named
//! point, so tests can prove a crash mid-write loses nothing. Unset, it is a no-op.

use crate::error::Result;

/// Abort the process (as a crash would) when the failpoint `name` is armed.
#[allow(clippy::unnecessary_wraps)]
pub fn hit(name: &str) -> Result<()> {
    if let Ok(armed) = std::env::var("STUDIO_AGENTS_FAILPOINT")
        && armed.split(',').any(|a| a.trim() == name)
    {
        eprintln!("failpoint {name}: aborting");
        std::process::abort();
    }
    Ok(())
}
