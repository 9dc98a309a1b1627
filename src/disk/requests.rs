//! Requests from other shells that act at the next iteration boundary: pause and
//! stop-after-iteration, kept in `wiggum/control.json` (atomically replaced). Immediate stops go
//! by signal instead.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::sys::fsutil;

/// What other shells have asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Requests {
    /// Wait at the next boundary until `resume`.
    pub pause: bool,
    /// Why (shown by `status`).
    pub pause_reason: Option<String>,
    /// End the loop once the current iteration is done.
    pub stop_after_iteration: bool,
    /// `stop --timeout`: seconds between the graceful stop and SIGKILL.
    pub stop_grace_secs: Option<u64>,
    /// The pause is the loop's own, waiting for the answer to a question (`answer` lifts it).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub paused_for_question: bool,
}

/// Read the requests (none when the file is missing or unreadable as JSON).
#[must_use]
pub fn read(path: &Path) -> Requests {
    fsutil::read_opt(path)
        .ok()
        .flatten()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// Change the requests atomically.
pub fn update(path: &Path, f: impl FnOnce(&mut Requests)) -> Result<Requests> {
    let mut r = read(path);
    f(&mut r);
    let json = serde_json::to_string_pretty(&r)
        .map_err(|e| Error::runtime(format!("serialise control requests: {e}")))?;
    fsutil::atomic_write(path, json.as_bytes())?;
    Ok(r)
}

/// Forget every request (at start: old requests belong to an old run).
pub fn clear(path: &Path) -> Result<()> {
    fsutil::remove_file_opt(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn update_and_read_back() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("control.json");
        assert_eq!(read(&p), Requests::default());
        update(&p, |r| r.pause = true).unwrap();
        assert!(read(&p).pause);
        update(&p, |r| r.pause = false).unwrap();
        assert!(!read(&p).pause);
        clear(&p).unwrap();
        assert!(!p.exists());
    }
}
