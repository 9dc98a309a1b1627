//! What the live view shows, read from disk (state, control requests, run records, the plan and
//! the running agent's log), the same way `status` reads it: without the daemon's help.

use crate::disk::layout::Layout;
use crate::disk::requests;
use crate::disk::runlog::{self, RunRecord};
use crate::disk::state::{self, LoopState};
use crate::error::Result;
use crate::ralph::fix_plan;
use crate::sys::fsutil;

/// One frame's worth of facts.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// The topic.
    pub topic: String,
    /// The state, when there is one.
    pub state: Option<LoopState>,
    /// Someone holds the lock.
    pub running: bool,
    /// Who (the supervisor's pid).
    pub pid: Option<u32>,
    /// Why it is paused, if it is.
    pub pause_reason: Option<String>,
    /// The latest iteration records, newest last.
    pub recent: Vec<RunRecord>,
    /// Open plan items, in order.
    pub open_items: Vec<String>,
    /// The last lines of the current agent's log.
    pub log_tail: Vec<String>,
}

fn tail(text: &str, n: usize) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| (*l).to_string())
        .collect()
}

/// Read a snapshot.
pub fn load(topic: &str, layout: &Layout, log_lines: usize) -> Result<Snapshot> {
    let st = state::read(&layout.state()).unwrap_or(None);
    let pid = crate::disk::lock::find(&crate::config::home_dir()?, layout)?.map(|h| h.pid);
    let running = pid.is_some();
    let ctl = requests::read(&layout.control());
    let runs = runlog::read(&layout.runs())?;
    let recent: Vec<RunRecord> = runs
        .into_iter()
        .filter(|r| r.record == crate::disk::records::RecordKind::Iteration)
        .collect();
    let recent = recent[recent.len().saturating_sub(8)..].to_vec();
    let plan = fsutil::read_opt(&layout.fix_plan())?.unwrap_or_default();
    let open_items = fix_plan::items(&plan)
        .into_iter()
        .filter(|i| !i.done)
        .map(|i| i.text)
        .collect();
    let n = st.as_ref().map_or(0, |s| s.current_iteration);
    let dir = if n == 0 {
        layout.planning_dir()
    } else {
        layout.iteration_dir(n)
    };
    let log_tail = tail(
        &fsutil::read_tail(&dir.join("agent.log"), 64 * 1024)?,
        log_lines,
    );
    Ok(Snapshot {
        topic: topic.to_string(),
        state: st,
        running,
        pid,
        pause_reason: (running && ctl.pause).then_some(ctl.pause_reason).flatten(),
        recent,
        open_items,
        log_tail,
    })
}

impl Snapshot {
    /// `running`, `paused`, …, or `dead` when the state says live but nobody holds the lock.
    #[must_use]
    pub fn status(&self) -> String {
        state::shown_status(self.state.as_ref(), self.running).to_string()
    }

    /// One line for logs and pipes (the same as `list` prints).
    #[must_use]
    pub fn line(&self) -> String {
        state::one_line(&self.topic, self.state.as_ref(), self.pid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_takes_the_last_lines() {
        assert_eq!(tail("a\nb\nc\n", 2), vec!["b", "c"]);
        assert_eq!(tail("", 3), Vec::<String>::new());
    }

    #[test]
    fn a_live_state_without_a_lock_is_dead() {
        let s = Snapshot {
            state: Some(LoopState {
                status: crate::disk::state::Status::Running,
                ..LoopState::default()
            }),
            running: false,
            ..Snapshot::default()
        };
        assert_eq!(s.status(), "dead");
    }
}
