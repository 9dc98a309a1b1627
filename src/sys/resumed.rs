//! How often this process was continued after being stopped (SIGCONT after SIGSTOP or
//! Ctrl-Z). A run during which the supervisor was stopped went on unwatched: the loop rejects
//! it (the cgroup watcher kept its wall limit meanwhile, where there is one).

use std::sync::atomic::{AtomicU64, Ordering};

static CONTINUED: AtomicU64 = AtomicU64::new(0);

/// Count one SIGCONT.
pub fn note() {
    CONTINUED.fetch_add(1, Ordering::Relaxed);
}

/// SIGCONTs so far.
#[must_use]
pub fn count() -> u64 {
    CONTINUED.load(Ordering::Relaxed)
}
