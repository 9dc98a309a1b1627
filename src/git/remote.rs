//! The git CLI for remotes (fetch, push, clone over any transport the user's git speaks) and
//! where a topic's records live on a remote: `refs/studio-agents/<topic>`.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::error::{Error, Result};

/// The ref holding a topic's records.
#[must_use]
pub fn records_ref(topic: &str) -> String {
    format!("refs/studio-agents/{topic}")
}

/// Run `git args` in `dir`; its output, or an error with git's own first `fatal:` line.
pub fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=wiggum-agent",
            "-c",
            "user.email=wiggum@studio-agents.local",
            // No hook and no fsmonitor of the repository's runs for the loop's own git: what
            // the repository names is an agent's input.
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "core.fsmonitor=false",
        ])
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::runtime(format!("cannot run git: {e}")))?;
    if !out.status.success() {
        // One line: git's first `fatal:`/`error:` line says what went wrong.
        let err = String::from_utf8_lossy(&out.stderr);
        let why = err
            .lines()
            .find(|l| l.starts_with("fatal:") || l.starts_with("error:"))
            .or_else(|| err.lines().find(|l| !l.trim().is_empty()))
            .unwrap_or("failed")
            .trim();
        return Err(Error::runtime(format!(
            "git {} (in {}): {why}",
            args.first().copied().unwrap_or_default(),
            dir.display()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}
