//! The async runtime every command and the supervisor use: one thread, so the parent-death signal
//! set on a spawned agent stays tied to a thread that lives as long as the process.

use crate::error::{Error, Result};

/// A current-thread runtime for one command.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::runtime(format!("cannot start the async runtime: {e}")))
}
