//! Controlling delegations from any shell, as loops are: `status`, `list`, `stop`, and where the
//! artifact is (`view`, `artifact-path`), all read from each delegation's `metadata.json`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::config;
use crate::disk::delegation::{self, Delegation, DelegationStatus};
use crate::disk::registry;
use crate::error::{Error, Result};

/// The dir and metadata of a registered delegation.
fn record_of(topic: &str) -> Result<(PathBuf, Delegation)> {
    let dir = registry::require(&config::home_dir()?, topic)?;
    let rec = delegation::read(&dir.join("metadata.json"))?.ok_or_else(|| {
        Error::input(format!(
            "`{topic}` is not a delegation ({} has no metadata.json)",
            dir.display()
        ))
    })?;
    Ok((dir, rec))
}

pub(super) fn artifact_of(topic: &str) -> Result<(Delegation, PathBuf)> {
    let (dir, rec) = record_of(topic)?;
    let path = dir.join("artifact.md");
    if !path.is_file() {
        return Err(Error::input(format!(
            "delegation `{topic}` has no artifact yet (status {}); see studio-agents delegate status {topic}",
            rec.shown_status(alive(rec.pid))
        )));
    }
    Ok((rec, path))
}

/// Whether the recorded process still runs and is still a delegation (a pid the kernel gave
/// to another program since is neither shown as running nor signalled).
fn alive(pid: Option<u32>) -> bool {
    pid.is_some_and(|p| {
        crate::sys::procs::stat(p.cast_signed()).is_some_and(|s| s.is_running())
            && crate::sys::procs::args(p.cast_signed())
                .is_some_and(|args| args.iter().any(|a| a == b"delegate"))
    })
}

pub(super) fn status(topic: &str) -> Result<i32> {
    let (dir, rec) = record_of(topic)?;
    let shown = rec.shown_status(alive(rec.pid));
    println!(
        "{topic}  {shown}  type {}  agent {}",
        rec.agent_type, rec.agent
    );
    println!("  artifact: {}", dir.join("artifact.md").display());
    if let Some(e) = &rec.exit {
        println!(
            "  exit:     {}",
            crate::sys::term::printable(&e.to_string())
        );
    }
    if let Some(c) = rec.cost_usd {
        println!("  cost:     ${c:.2}");
    }
    if let Some(n) = &rec.note {
        println!("  why:      {}", crate::sys::term::printable(n));
    }
    Ok(0)
}

pub(super) fn list() -> Result<i32> {
    let home = config::home_dir()?;
    let mut rows = Vec::new();
    for (topic, dir) in registry::all(&home)? {
        if let Ok(Some(rec)) = delegation::read(&dir.join("metadata.json")) {
            rows.push((topic, rec, dir));
        }
    }
    if rows.is_empty() {
        println!("no delegations (start one with: studio-agents delegate start <topic> <task.md>)");
        return Ok(0);
    }
    let w = rows.iter().map(|r| r.0.len()).max().unwrap_or(5).max(5);
    println!(
        "{:<w$}  {:<8}  {:<10}  {:<12}  ARTIFACT",
        "TOPIC", "STATUS", "TYPE", "AGENT"
    );
    for (topic, rec, dir) in rows {
        println!(
            "{topic:<w$}  {:<8}  {:<10}  {:<12}  {}",
            rec.shown_status(alive(rec.pid)),
            rec.agent_type,
            rec.agent,
            dir.join("artifact.md").display()
        );
    }
    Ok(0)
}

pub(super) fn stop(topic: &str) -> Result<i32> {
    let (_, rec) = record_of(topic)?;
    let Some(pid) = rec.pid.filter(|_| rec.status == DelegationStatus::Running) else {
        return Err(Error::NotRunning(format!(
            "delegation `{topic}` is not running (status {})",
            rec.shown_status(false)
        )));
    };
    if !alive(Some(pid)) {
        return Err(Error::NotRunning(format!(
            "delegation `{topic}` is not running (its process {pid} is gone)"
        )));
    }
    crate::supervisor::control::stop_delegation(pid);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut pause = Duration::from_millis(1);
    while alive(Some(pid)) && Instant::now() < deadline {
        std::thread::sleep(pause); // allow: waiting for another process to exit
        pause = (pause * 2).min(Duration::from_millis(50));
    }
    println!("stopped delegation `{topic}` (pid {pid})");
    Ok(0)
}
