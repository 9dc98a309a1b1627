//! One read model of a loop, read from disk without the daemon's help: what `status`, `list`,
//! `watch` and `summary` show. A loop whose state says it is live but whose locks nobody holds
//! is `dead`. Each reader asks only for what it shows ([`Want`]): agent CPU and memory, recent
//! run records, open plan items, the tail of the current agent log.

use serde::Serialize;

use crate::disk::handle::Handle;
use crate::disk::layout::Layout;
use crate::disk::lock::Holder;
use crate::disk::records::RecordKind;
use crate::disk::requests;
use crate::disk::runlog::{self, RunRecord};
use crate::disk::state::{self, LoopState, Shown};
use crate::error::Result;
use crate::ralph::fix_plan;
use crate::sys::fsutil;

/// What a reader wants beyond the state.
#[derive(Debug, Clone, Copy, Default)]
pub struct Want {
    /// The running agent's CPU and memory (costs a short sample).
    pub usage: bool,
    /// How many of the latest iteration records (`usize::MAX`: all).
    pub recent: usize,
    /// The open items of `fix_plan.md`.
    pub plan: bool,
    /// How many last lines of the current agent's log.
    pub log_lines: usize,
}

/// One loop as every reader shows it. Serialised, it is `status --json` (docs/json.md).
#[derive(Debug, Clone, Default, Serialize)]
pub struct LoopView {
    /// The topic.
    pub topic: String,
    /// State status, or `dead`, or `unknown` when there is no state yet, or `missing` when the
    /// artifact directory is gone, or `replaced`, or `suspended` when the supervisor is stopped
    /// (Ctrl-Z, SIGSTOP).
    pub status: Shown,
    /// The supervisor's pid while it runs.
    pub pid: Option<u32>,
    /// The agent's pid while one runs.
    pub agent_pid: Option<u32>,
    /// The agent's CPU use, percent.
    pub agent_cpu_percent: Option<f32>,
    /// The agent's resident memory, bytes.
    pub agent_rss_bytes: Option<u64>,
    /// Seconds since the loop started.
    pub elapsed_secs: Option<i64>,
    /// Why it is paused.
    pub pause_reason: Option<String>,
    /// The full state, when there is one.
    pub state: Option<LoopState>,
    /// The latest iteration records, newest last.
    #[serde(skip)]
    pub recent: Vec<RunRecord>,
    /// Open plan items, in order.
    #[serde(skip)]
    pub open_items: Vec<String>,
    /// The last lines of the current agent's log.
    #[serde(skip)]
    pub log_tail: Vec<String>,
    /// Why `state.json` could not be read (garbled, not JSON, unreadable), when it exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_error: Option<String>,
    /// The topic of the loop that has taken over this topic's artifact directory since (status
    /// `replaced`): the lock, state and records there are that loop's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaced_by: Option<String>,
    /// The registered artifact directory, when it is gone (status `missing`: moved or deleted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing_dir: Option<std::path::PathBuf>,
    /// The loop's worktree, when it runs in one (`start --worktree`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree: Option<WorktreeView>,
    /// An answer to the open question was given and waits for the next run.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub answer_given: bool,
}

/// A loop's worktree as readers show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorktreeView {
    /// Its directory.
    pub path: std::path::PathBuf,
    /// The loop's branch.
    pub branch: String,
    /// The branch it started from.
    pub from: String,
    /// The branch it was merged into, once it was.
    pub merged_into: Option<String>,
    /// Its directory is gone (removed by hand).
    pub gone: bool,
}

impl WorktreeView {
    fn of(w: &crate::disk::worktrees::Worktree) -> Self {
        WorktreeView {
            path: w.worktree.clone(),
            branch: w.branch.clone(),
            from: w.from.clone(),
            merged_into: w.merged.as_ref().map(|m| m.into.clone()),
            gone: !w.worktree.is_dir(),
        }
    }

    /// `wiggum/t`, `wiggum/t merged into main`, `wiggum/t (worktree removed)`.
    #[must_use]
    pub fn short(&self) -> String {
        match (&self.merged_into, self.gone) {
            (Some(into), _) => format!("{} merged into {into}", self.branch),
            (None, true) => format!("{} (worktree removed)", self.branch),
            (None, false) => self.branch.clone(),
        }
    }
}

impl LoopView {
    /// Someone holds the loop's lock.
    #[must_use]
    pub fn running(&self) -> bool {
        self.pid.is_some()
    }

    /// One line for `list`, logs and pipes.
    #[must_use]
    pub fn line(&self) -> String {
        if let Some(d) = &self.missing_dir {
            return format!("{:<20} missing   {}", self.topic, d.display());
        }
        if let Some(o) = &self.replaced_by {
            return format!(
                "{:<20} replaced  by loop `{o}` on its artifact directory",
                self.topic
            );
        }
        one_line(&self.topic, self.state.as_ref(), self.pid)
    }
}

/// Read one loop.
pub fn load(h: &Handle, want: Want) -> Result<LoopView> {
    let layout = &h.layout;
    let (mut st, state_error) = match state::read(&layout.state()) {
        Ok(st) => (st, None),
        Err(e) => (None, Some(e.to_string())),
    };
    // The questions as the supervisor keeps them, not as `state.json` (in the agents' reach)
    // says.
    if let Some(s) = st.as_mut() {
        let kept = state::questions(layout);
        s.question = kept.question;
        s.answered = kept.answered;
        s.earlier = kept.earlier;
    }
    // A state read means the directory is there (`list` asks no more of each loop); without
    // one, a directory that is gone is said so.
    let worktree = crate::disk::worktrees::read(&h.home, &h.topic)
        .ok()
        .flatten()
        .map(|w| WorktreeView::of(&w));
    if st.is_none() && !layout.root().is_dir() {
        return Ok(missing(h, worktree));
    }
    let holder = h.holder_after(st.as_ref().is_some_and(|s| !s.status().is_live()))?;
    if let Some(other) = owner(holder.as_ref(), st.as_ref()).filter(|o| *o != h.topic) {
        return Ok(replaced(h, other));
    }
    let running = holder.is_some();
    // A supervisor stopped by Ctrl-Z or SIGSTOP holds its lock and does nothing: said so, not
    // shown as running.
    let suspended = holder.as_ref().is_some_and(crate::disk::handle::suspended);
    let agent_pid = st
        .as_ref()
        .and_then(|s| s.agent_run().and_then(|a| a.pid))
        .filter(|_| running);
    let (cpu, rss) = match agent_pid {
        Some(p) if want.usage => agent_usage(p),
        _ => (None, None),
    };
    let recent = recent_iterations(layout, want.recent)?;
    let open_items = open_items(layout, want.plan)?;
    let log_tail = log_tail(layout, st.as_ref(), want.log_lines)?;
    Ok(LoopView {
        topic: h.topic.clone(),
        status: if suspended {
            Shown::Suspended
        } else {
            state::shown_status(st.as_ref(), running)
        },
        pid: holder.as_ref().map(|h| h.pid),
        agent_pid,
        agent_cpu_percent: cpu,
        agent_rss_bytes: rss,
        elapsed_secs: st.as_ref().map(|s| elapsed_secs(s, running)),
        pause_reason: pause_reason(layout, running),
        answer_given: answer_given(st.as_ref(), layout),
        state: st,
        recent,
        open_items,
        log_tail,
        state_error,
        replaced_by: None,
        missing_dir: None,
        worktree,
    })
}

/// A loop whose artifact directory is gone.
fn missing(h: &Handle, worktree: Option<WorktreeView>) -> LoopView {
    LoopView {
        topic: h.topic.clone(),
        status: Shown::Missing,
        missing_dir: Some(h.layout.root().to_path_buf()),
        worktree,
        ..LoopView::default()
    }
}

/// A loop whose artifact directory another topic, `other`, has taken since.
fn replaced(h: &Handle, other: &str) -> LoopView {
    LoopView {
        topic: h.topic.clone(),
        status: Shown::Replaced,
        replaced_by: Some(other.to_string()),
        ..LoopView::default()
    }
}

/// Why a pause was asked for. Requests matter only to a running loop: `list` skips the read.
fn pause_reason(layout: &Layout, running: bool) -> Option<String> {
    if !running {
        return None;
    }
    let ctl = requests::read(&layout.requests());
    ctl.pause.then_some(ctl.pause_reason).flatten()
}

/// The latest `n` iteration records (none when `n` is 0), read without holding them all.
fn recent_iterations(layout: &Layout, n: usize) -> Result<Vec<RunRecord>> {
    let mut recent = Vec::new();
    if n == 0 {
        return Ok(recent);
    }
    runlog::for_each(&layout.runs(), |r| {
        if r.record == RecordKind::Iteration {
            recent.push(r);
            if recent.len() > n.saturating_mul(2).max(64) {
                recent.drain(..recent.len() - n);
            }
        }
    })?;
    let keep = recent.len().saturating_sub(n);
    recent.drain(..keep);
    Ok(recent)
}

/// The open items of `fix_plan.md` (none unless `want`).
fn open_items(layout: &Layout, want: bool) -> Result<Vec<String>> {
    if !want {
        return Ok(Vec::new());
    }
    let plan = fsutil::read_opt(&layout.fix_plan())?.unwrap_or_default();
    Ok(fix_plan::items(&plan)
        .into_iter()
        .filter(|i| !i.done)
        .map(|i| i.text)
        .collect())
}

/// The last `n` printable lines of the current iteration's agent log (none when `n` is 0).
fn log_tail(layout: &Layout, st: Option<&LoopState>, n: usize) -> Result<Vec<String>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    let log = layout.agent_log(st.map_or(0, |s| s.current_iteration));
    Ok(tail(&fsutil::read_tail(&log, 64 * 1024)?, n)
        .iter()
        .map(|l| crate::sys::term::printable(l))
        .collect())
}

/// Seconds the loop has run: until now while it runs, else until its state last changed.
fn elapsed_secs(s: &LoopState, running: bool) -> i64 {
    let end = if running {
        chrono::Utc::now()
    } else {
        s.stopped_at()
    };
    i64::try_from(s.elapsed_ms(end) / 1000).unwrap_or(i64::MAX)
}

/// Whether the open question has an answer waiting for the loop to take it.
fn answer_given(st: Option<&LoopState>, layout: &Layout) -> bool {
    st.is_some_and(|s| s.question.as_ref().is_some_and(|q| q.answer.is_none()))
        && layout.answer().exists()
}

/// The topic the artifact directory belongs to now: the lock holder's, else the state's (both
/// are per directory; another topic may have been started on it since). `None` when neither
/// names one.
fn owner<'a>(holder: Option<&'a Holder>, st: Option<&'a LoopState>) -> Option<&'a str> {
    let named = |t: &'a str| (!t.is_empty()).then_some(t);
    holder
        .and_then(|h| named(&h.topic))
        .or_else(|| st.and_then(|s| named(&s.topic)))
}

impl LoopView {
    /// A loop known only from the records its run pushed to a branch (`list --remote`): live
    /// while its heartbeat is fresh, `dead` once it is stale.
    #[must_use]
    pub fn remote(topic: &str, st: Option<LoopState>, fresh: bool) -> LoopView {
        LoopView {
            topic: topic.to_string(),
            status: state::shown_status(st.as_ref(), fresh),
            pid: None,
            agent_pid: None,
            agent_cpu_percent: None,
            agent_rss_bytes: None,
            elapsed_secs: st.as_ref().map(|s| {
                let end = if fresh {
                    chrono::Utc::now()
                } else {
                    s.stopped_at()
                };
                i64::try_from(s.elapsed_ms(end) / 1000).unwrap_or(i64::MAX)
            }),
            pause_reason: None,
            state: st,
            recent: Vec::new(),
            open_items: Vec::new(),
            log_tail: Vec::new(),
            state_error: None,
            replaced_by: None,
            missing_dir: None,
            worktree: None,
            answer_given: false,
        }
    }

    /// The question an agent asked, while no run has been told its answer: what, and how to
    /// answer it (or that it was answered).
    #[must_use]
    pub fn question(&self) -> Option<String> {
        let q = self.state.as_ref()?.question.as_ref()?;
        let asked = format!("{} asked: \"{}\"", q.asker(), q.text);
        Some(if q.answer.is_some() || self.answer_given {
            format!("{asked}; answered, the next run's prompt carries it")
        } else {
            format!(
                "{asked}; answer it: {}",
                crate::ralph::asking::answer_command(&self.topic)
            )
        })
    }

    /// Why a loop shows as `dead` or `unknown`, in words.
    #[must_use]
    pub fn reason(&self) -> Option<String> {
        if let Some(e) = &self.state_error {
            return Some(format!(
                "its state cannot be read ({e}); the run records and git history are intact"
            ));
        }
        match self.status {
            Shown::Dead => Some(format!(
                "its state says {} but no supervisor holds its lock: the supervisor died; `{} wiggum start {}` resumes it",
                self.state.as_ref().map_or("running", |s| s.status().as_str()),
                crate::ralph::progress::program(crate::config::home_to_name().as_deref()),
                self.topic
            )),
            Shown::Unknown => {
                Some("it has no state yet: never started, or its state.json was removed".into())
            }
            Shown::Suspended => self.pid.map(|pid| {
                format!(
                    "its supervisor (pid {pid}) is suspended (Ctrl-Z or SIGSTOP) and does nothing: `fg` in its shell or `kill -CONT {pid}` lets it go on; `studio-agents wiggum stop {}` stops it",
                    self.topic
                )
            }),
            Shown::Missing => match &self.worktree {
                Some(w) if w.gone => Some(format!(
                    "its worktree {} was removed; its branch {} keeps every committed iteration: `studio-agents wiggum start {} --worktree` makes the worktree again and resumes there, `wiggum merge {}` merges the branch, `wiggum clean {}` forgets it",
                    w.path.display(),
                    w.branch,
                    self.topic,
                    self.topic,
                    self.topic
                )),
                _ => self
                    .missing_dir
                    .as_ref()
                    .map(|d| crate::disk::handle::gone(&self.topic, d)),
            },
            Shown::Replaced => self.replaced_by.as_ref().map(|o| {
                format!(
                    "loop `{o}` has been started on its artifact directory since; the lock, state and run records there are `{o}`'s: studio-agents wiggum status {o}"
                )
            }),
            _ => None,
        }
    }
}

/// The agent's CPU (over its life) and resident memory, read from `/proc` at once.
fn agent_usage(pid: u32) -> (Option<f32>, Option<u64>) {
    let pid = pid.cast_signed();
    let rss = crate::sys::procs::rss_bytes(pid);
    (
        crate::sys::procs::cpu_percent(pid),
        (rss > 0).then_some(rss),
    )
}

fn tail(text: &str, n: usize) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| (*l).to_string())
        .collect()
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
        let d = tempfile::tempdir().unwrap();
        let h = Handle::at(d.path(), "t", d.path().join("art"));
        std::fs::create_dir_all(h.layout.wiggum()).unwrap();
        let mut st = LoopState::in_phase(state::Phase::Running { agent: None });
        state::save(&h.layout.state(), &mut st).unwrap();
        let v = load(&h, Want::default()).unwrap();
        assert_eq!((v.status, v.running()), (Shown::Dead, false));
    }
}

/// The one-line summary of a loop used by `list`, `status` and `watch` through a pipe.
/// `holder` is the pid holding the lock, if any.
#[must_use]
fn one_line(topic: &str, st: Option<&LoopState>, holder: Option<u32>) -> String {
    let status = state::shown_status(st, holder.is_some());
    let Some(s) = st else {
        return format!("{topic:<20} {status}");
    };
    let mut out = format!(
        "{topic:<20} {status:<9} iteration {}/{}",
        s.current_iteration, s.max_iterations
    );
    if let Some(q) = s.last_quality {
        out.push_str(&format!("  quality {q:.2}/{:.2}", s.quality_threshold));
    }
    if let Some(g) = s.last_gate_score {
        out.push_str(&format!("  gate {g:.2}"));
    }
    if let Some(n) = s.items_remaining {
        out.push_str(&format!("  items left {n}"));
        if let Some(o) = s.items_optional.filter(|o| *o > 0) {
            out.push_str(&format!(" (+{o} optional)"));
        }
    }
    match (holder, s.stop_reason()) {
        (Some(p), _) => out.push_str(&format!("  pid {p}")),
        (None, Some(r)) => out.push_str(&format!("  stop reason {}", r.as_str())),
        (None, None) => {}
    }
    out
}

#[cfg(test)]
mod line_tests {
    use super::*;
    use crate::disk::state::{Ending, Phase, StopReason};

    #[test]
    fn one_line_shows_progress_and_the_pid_or_the_stop_reason() {
        let mut live = LoopState::in_phase(Phase::Running { agent: None });
        live.current_iteration = 2;
        live.max_iterations = 5;
        let line = one_line("t", Some(&live), Some(42));
        assert!(
            line.contains("running   iteration 2/5") && line.ends_with("pid 42"),
            "{line}"
        );
        let mut done = LoopState::ended(Some(StopReason::PlanEmpty), Ending::Completed, None);
        done.current_iteration = 2;
        done.max_iterations = 5;
        assert!(one_line("t", Some(&done), None).ends_with("stop reason plan_empty"));
    }
}
