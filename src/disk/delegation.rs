//! `metadata.json`: the record of one delegation — what it was asked (type, agent, task), how it
//! is going or went (pid while it runs, times, exit, cost) — written beside the artifact it
//! produces, read by `delegate status|list|view` and by the loop that refines the artifact.

use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::sys::fsutil;

/// Where a delegation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DelegationStatus {
    /// Its agent is running.
    Running,
    /// The artifact is written.
    Done,
    /// The agent failed or wrote nothing; `note` says why.
    Failed,
    /// Stopped by `delegate stop` (or a signal).
    Stopped,
}

impl DelegationStatus {
    /// Its name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Done => "done",
            Self::Failed => "failed",
            Self::Stopped => "stopped",
        }
    }
}

/// `metadata.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Delegation {
    /// The topic (also the loop's).
    pub topic: String,
    /// The artifact type (`research`, `design`, `code`, `generic`, a `[types]` entry).
    pub agent_type: String,
    /// The agent's name.
    pub agent: String,
    /// The command it ran.
    pub agent_command: String,
    /// The task file, relative to the artifact dir.
    pub task_file: String,
    /// When it was started.
    pub created_at: DateTime<Utc>,
    /// Where it is.
    pub status: DelegationStatus,
    /// The delegating process while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// When it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<DateTime<Utc>>,
    /// How the agent ended, in words (`exited with code 0`, `was stopped`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<String>,
    /// What the agent reported it cost, in USD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Delegation {
    /// The status to show: a `running` record whose process is gone is `dead`.
    #[must_use]
    pub fn shown_status(&self, alive: bool) -> &'static str {
        match self.status {
            DelegationStatus::Running if !alive => "dead",
            s => s.as_str(),
        }
    }
}

/// Read `metadata.json` (`None` when there is none).
pub fn read(path: &Path) -> Result<Option<Delegation>> {
    let Some(text) = fsutil::read_opt(path)? else {
        return Ok(None);
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| crate::error::Error::input(format!("{}: {e}", path.display())))
}

/// Write it (atomically).
pub fn write(path: &Path, d: &Delegation) -> Result<()> {
    let text = serde_json::to_string_pretty(d)
        .map_err(|e| crate::error::Error::runtime(format!("serialise {}: {e}", path.display())))?;
    fsutil::atomic_write(path, format!("{text}\n").as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_round_trips_and_a_running_one_without_its_process_is_dead() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("metadata.json");
        let rec = Delegation {
            topic: "t".into(),
            agent_type: "research".into(),
            agent: "custom".into(),
            agent_command: "my-agent".into(),
            task_file: "task.md".into(),
            created_at: Utc::now(),
            status: DelegationStatus::Running,
            pid: Some(42),
            ended_at: None,
            exit: None,
            cost_usd: None,
            note: None,
        };
        write(&p, &rec).unwrap();
        let back = read(&p).unwrap().unwrap();
        assert_eq!(back, rec);
        assert_eq!(back.shown_status(true), "running");
        assert_eq!(back.shown_status(false), "dead");
        assert!(read(&d.path().join("none.json")).unwrap().is_none());
    }
}
