//! Where a loop is in its life, as a state machine: each [`Phase`] carries the data valid in
//! it (the agent run while one runs, until when and why while waiting, why it ended once it
//! has), and a phase changes only through [`Phase::step`] with a [`Step`]; a step that makes no
//! sense from where the loop is is refused (see the table test), never silently applied.
//!
//! On disk the phase stays what every earlier version wrote and read: the flat fields `status`,
//! `stop_reason`, `stop_detail`, `waiting_until`, `waiting_reason`, `agent_pid`, `agent_pgid`
//! and `agent_token` of `state.json` (docs/json.md), converted through [`Flat`].

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Where the loop is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Writing `fix_plan.md` before iteration 1.
    #[default]
    Planning,
    /// Iterating.
    Running,
    /// Waiting at an iteration boundary for `resume`.
    Paused,
    /// A stop was requested; the current agent is being stopped.
    Stopping,
    /// Waiting out a usage or rate limit (`waiting_until`), or the calls-per-hour ceiling.
    Waiting,
    /// Stopped by the user (or a budget).
    Stopped,
    /// Ended on its own exit condition.
    Completed,
    /// Ended by a breaker or an error.
    Failed,
}

impl Status {
    /// Whether a process should be holding the lock in this status.
    #[must_use]
    pub fn is_live(self) -> bool {
        matches!(
            self,
            Status::Planning
                | Status::Running
                | Status::Paused
                | Status::Stopping
                | Status::Waiting
        )
    }

    /// The snake_case name, as in the JSON.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Planning => "planning",
            Status::Running => "running",
            Status::Paused => "paused",
            Status::Stopping => "stopping",
            Status::Waiting => "waiting",
            Status::Stopped => "stopped",
            Status::Completed => "completed",
            Status::Failed => "failed",
        }
    }
}

/// Why the loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// `fix_plan.md` has no `- [ ]` left.
    PlanEmpty,
    /// The built-in quality metrics reached the threshold.
    ThresholdMet,
    /// The iteration limit was reached.
    MaxIterations,
    /// The agent printed the completion promise.
    Promise,
    /// Someone ran `stop` (or sent SIGTERM/SIGINT).
    UserStop,
    /// The cost budget was spent.
    Budget,
    /// A circuit breaker tripped (no change, repeated crashes).
    Breaker,
    /// The agent claimed completion (the promise) again and again with the plan still open or
    /// the gate failing (`[safety] max_premature_promises` claims in a row).
    PromiseRejected,
    /// An unrecoverable error.
    Error,
    /// A code loop ended with its validation failing on the final tree.
    ValidationFailed,
}

impl StopReason {
    /// The snake_case name, as in the JSON.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::PlanEmpty => "plan_empty",
            StopReason::ThresholdMet => "threshold_met",
            StopReason::MaxIterations => "max_iterations",
            StopReason::Promise => "promise",
            StopReason::UserStop => "user_stop",
            StopReason::Budget => "budget",
            StopReason::Breaker => "breaker",
            StopReason::PromiseRejected => "promise_rejected",
            StopReason::Error => "error",
            StopReason::ValidationFailed => "validation_failed",
        }
    }
}

/// The agent run in progress: its kill-tree token (on disk before the spawn), then its pid and
/// process group (once spawned). A start after a crash finds what it left by these.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AgentRun {
    /// The kill-tree token (`WIGGUM_TOKEN` in its environment; names its cgroup and temp dir).
    pub token: String,
    /// The agent's pid, once spawned.
    pub pid: Option<u32>,
    /// The agent's process group, once spawned.
    pub pgid: Option<i32>,
}

/// Where a waiting loop goes back to when the wait is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume {
    /// Planning (a limit hit while writing `fix_plan.md`).
    Planning,
    /// Iterating.
    Running,
    /// Stopping (a commit waiting on a busy index after the stop's last run).
    Stopping,
}

/// How a loop ended: the final statuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Stopped by the user or a budget.
    Stopped,
    /// Ended on its own exit condition.
    Completed,
    /// Ended by a breaker or an error.
    Failed,
}

/// Where the loop is, with what is true only there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "Flat", into = "Flat")]
pub enum Phase {
    /// Writing `fix_plan.md` before iteration 1.
    Planning {
        /// The planning agent, while it runs.
        agent: Option<AgentRun>,
    },
    /// Iterating.
    Running {
        /// The iteration's agent (or reviser), while it runs.
        agent: Option<AgentRun>,
    },
    /// Waiting at an iteration boundary for `resume`.
    Paused,
    /// A stop was requested; the running agent (if any) is being stopped.
    Stopping {
        /// The agent being stopped, until it is gone.
        agent: Option<AgentRun>,
    },
    /// Waiting out a usage or rate limit, or the calls-per-hour ceiling.
    Waiting {
        /// Until when.
        until: DateTime<Utc>,
        /// Why ("usage limit, claude").
        reason: String,
        /// What it was doing before.
        then: Resume,
    },
    /// Over.
    Ended {
        /// Stopped, completed or failed.
        ending: Ending,
        /// Why (absent only in files of versions that ended without one).
        reason: Option<StopReason>,
        /// One line on why: the error, the breaker's reason.
        detail: Option<String>,
    },
}

impl Default for Phase {
    fn default() -> Self {
        Phase::Planning { agent: None }
    }
}

/// A change of phase (what the loop did or was told).
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Begin (or begin again) planning.
    Plan,
    /// Begin (or go back to) iterating.
    Run,
    /// Stop at an iteration boundary until resumed.
    Pause,
    /// Resume after a pause.
    Resume,
    /// Wait until a time, for a reason.
    Wait {
        /// Until when.
        until: DateTime<Utc>,
        /// Why.
        reason: String,
    },
    /// The wait is over (or was cut short).
    WaitOver,
    /// An agent run's token is on disk; its spawn follows.
    AgentStarting(String),
    /// The agent was spawned with this pid (its process group is its pid).
    AgentSpawned(u32),
    /// A stop was requested while the agent runs.
    StopRequested,
    /// The agent run is over (its tree is gone).
    AgentGone,
    /// The loop ended for a reason, with a line on why.
    End(StopReason, String),
    /// The loop failed with an error, wherever it was (the supervisor's last word).
    Fail(String),
}

/// A step refused from the phase the loop was in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a loop that is {from} cannot {step}")]
pub struct Illegal {
    /// The phase's status name.
    pub from: &'static str,
    /// What was asked.
    pub step: &'static str,
}

impl Step {
    fn name(&self) -> &'static str {
        match self {
            Step::Plan => "plan",
            Step::Run => "run",
            Step::Pause => "pause",
            Step::Resume => "resume",
            Step::Wait { .. } => "wait",
            Step::WaitOver => "end a wait",
            Step::AgentStarting(_) => "start an agent",
            Step::AgentSpawned(_) => "record a spawned agent",
            Step::StopRequested => "begin stopping",
            Step::AgentGone => "record the agent gone",
            Step::End(..) => "end",
            Step::Fail(_) => "fail",
        }
    }
}

impl Ending {
    /// The final status.
    #[must_use]
    pub fn status(self) -> Status {
        match self {
            Ending::Stopped => Status::Stopped,
            Ending::Completed => Status::Completed,
            Ending::Failed => Status::Failed,
        }
    }
}

impl StopReason {
    /// How a loop ending for this reason ended.
    #[must_use]
    pub fn ending(self) -> Ending {
        match self {
            StopReason::PlanEmpty
            | StopReason::ThresholdMet
            | StopReason::MaxIterations
            | StopReason::Promise => Ending::Completed,
            StopReason::UserStop | StopReason::Budget => Ending::Stopped,
            StopReason::Breaker
            | StopReason::PromiseRejected
            | StopReason::Error
            | StopReason::ValidationFailed => Ending::Failed,
        }
    }
}

impl Phase {
    /// The status name shown and stored for this phase.
    #[must_use]
    pub fn status(&self) -> Status {
        match self {
            Phase::Planning { .. } => Status::Planning,
            Phase::Running { .. } => Status::Running,
            Phase::Paused => Status::Paused,
            Phase::Stopping { .. } => Status::Stopping,
            Phase::Waiting { .. } => Status::Waiting,
            Phase::Ended { ending, .. } => ending.status(),
        }
    }

    /// The agent run in progress, if any.
    #[must_use]
    pub fn agent(&self) -> Option<&AgentRun> {
        match self {
            Phase::Planning { agent } | Phase::Running { agent } | Phase::Stopping { agent } => {
                agent.as_ref()
            }
            _ => None,
        }
    }

    /// Why it ended and the line on why, once ended.
    #[must_use]
    pub fn ended(&self) -> Option<(Option<StopReason>, Option<&str>)> {
        match self {
            Phase::Ended { reason, detail, .. } => Some((*reason, detail.as_deref())),
            _ => None,
        }
    }

    /// Until when and why, while waiting.
    #[must_use]
    pub fn waiting(&self) -> Option<(DateTime<Utc>, &str)> {
        match self {
            Phase::Waiting { until, reason, .. } => Some((*until, reason)),
            _ => None,
        }
    }

    /// The refusal of `step` from this phase.
    fn refused(&self, step: &Step) -> Illegal {
        Illegal {
            from: self.status().as_str(),
            step: step.name(),
        }
    }

    /// This phase with `agent` as its running agent (only where an agent may run).
    fn with_agent(&self, agent: Option<AgentRun>, step: &Step) -> Result<Phase, Illegal> {
        match self {
            Phase::Planning { .. } => Ok(Phase::Planning { agent }),
            Phase::Running { .. } => Ok(Phase::Running { agent }),
            Phase::Stopping { .. } => Ok(Phase::Stopping { agent }),
            _ => Err(self.refused(step)),
        }
    }

    /// An agent's start (its token) and its spawn (its pid, once, after its token).
    fn agent_step(&self, step: &Step) -> Result<Phase, Illegal> {
        match (step, self.agent()) {
            (Step::AgentStarting(token), _) => self.with_agent(
                Some(AgentRun {
                    token: token.clone(),
                    pid: None,
                    pgid: None,
                }),
                step,
            ),
            (Step::AgentSpawned(pid), Some(run)) if run.pid.is_none() => self.with_agent(
                Some(AgentRun {
                    pid: Some(*pid),
                    pgid: Some(pid.cast_signed()),
                    ..run.clone()
                }),
                step,
            ),
            _ => Err(self.refused(step)),
        }
    }

    /// The phase after `step`, or why the step makes no sense here.
    pub fn step(&self, step: Step) -> Result<Phase, Illegal> {
        use Phase as P;
        let refuse = || self.refused(&step);
        let with_agent = |agent: Option<AgentRun>| self.with_agent(agent, &step);
        let idle = self.agent().is_none();
        match (self, &step) {
            // An error has the last word, even after an end (the end's own hooks failed).
            (_, Step::Fail(detail)) => Ok(P::Ended {
                ending: Ending::Failed,
                reason: Some(StopReason::Error),
                detail: Some(detail.clone()),
            }),
            // An ended loop never moves again: a new start begins with a fresh state.
            (P::Planning { .. }, Step::Plan) if idle => Ok(P::Planning { agent: None }),
            (P::Planning { .. } | P::Running { .. }, Step::Run) if idle => {
                Ok(P::Running { agent: None })
            }
            // Between runs: before an iteration, or between planning's attempts (a question
            // planning asked waits for its answer), and back to what it was doing.
            (P::Running { agent: None } | P::Planning { agent: None }, Step::Pause) => {
                Ok(P::Paused)
            }
            (P::Paused, Step::Resume) => Ok(P::Running { agent: None }),
            (P::Paused, Step::Plan) => Ok(P::Planning { agent: None }),
            (
                P::Planning { agent: None }
                | P::Running { agent: None }
                | P::Stopping { agent: None },
                Step::Wait { until, reason },
            ) => Ok(P::Waiting {
                until: *until,
                reason: reason.clone(),
                then: match self {
                    P::Planning { .. } => Resume::Planning,
                    P::Stopping { .. } => Resume::Stopping,
                    _ => Resume::Running,
                },
            }),
            (P::Waiting { then, .. }, Step::WaitOver) => Ok(match then {
                Resume::Planning => P::Planning { agent: None },
                Resume::Running => P::Running { agent: None },
                Resume::Stopping => P::Stopping { agent: None },
            }),
            (P::Planning { .. } | P::Running { .. }, Step::AgentStarting(_)) if idle => {
                self.agent_step(&step)
            }
            (_, Step::AgentSpawned(_)) => self.agent_step(&step),
            (P::Planning { agent } | P::Running { agent }, Step::StopRequested) => {
                Ok(P::Stopping {
                    agent: agent.clone(),
                })
            }
            (P::Stopping { .. }, Step::StopRequested) => Ok(self.clone()),
            (P::Planning { .. } | P::Running { .. } | P::Stopping { .. }, Step::AgentGone) => {
                with_agent(None)
            }
            (P::Ended { .. }, Step::End(..)) => Err(refuse()),
            (_, Step::End(reason, detail)) if idle => Ok(P::Ended {
                ending: reason.ending(),
                reason: Some(*reason),
                detail: Some(detail.clone()),
            }),
            _ => Err(refuse()),
        }
    }
}

/// The phase as `state.json` holds it: flat optional fields beside `status`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Flat {
    status: Status,
    stop_reason: Option<StopReason>,
    stop_detail: Option<String>,
    waiting_until: Option<DateTime<Utc>>,
    waiting_reason: Option<String>,
    agent_pid: Option<u32>,
    agent_pgid: Option<i32>,
    agent_token: Option<String>,
}

impl From<Flat> for Phase {
    /// Whatever an earlier version wrote reads: fields a status cannot have are dropped (no
    /// version wrote them together), a wait without its time ends now.
    fn from(f: Flat) -> Self {
        let agent = (f.agent_token.is_some() || f.agent_pgid.is_some() || f.agent_pid.is_some())
            .then(|| AgentRun {
                token: f.agent_token.unwrap_or_default(),
                pid: f.agent_pid,
                pgid: f.agent_pgid,
            });
        let ended = |ending| Phase::Ended {
            ending,
            reason: f.stop_reason,
            detail: f.stop_detail.clone(),
        };
        match f.status {
            Status::Planning => Phase::Planning { agent },
            Status::Running => Phase::Running { agent },
            Status::Paused => Phase::Paused,
            Status::Stopping => Phase::Stopping { agent },
            Status::Waiting => Phase::Waiting {
                until: f.waiting_until.unwrap_or_else(Utc::now),
                reason: f.waiting_reason.unwrap_or_default(),
                then: Resume::Running,
            },
            Status::Stopped => ended(Ending::Stopped),
            Status::Completed => ended(Ending::Completed),
            Status::Failed => ended(Ending::Failed),
        }
    }
}

impl From<Phase> for Flat {
    fn from(p: Phase) -> Self {
        let mut f = Flat {
            status: p.status(),
            ..Flat::default()
        };
        if let Some(run) = p.agent() {
            f.agent_token = Some(run.token.clone()).filter(|t| !t.is_empty());
            f.agent_pid = run.pid;
            f.agent_pgid = run.pgid;
        }
        match p {
            Phase::Waiting { until, reason, .. } => {
                f.waiting_until = Some(until);
                f.waiting_reason = Some(reason);
            }
            Phase::Ended { reason, detail, .. } => {
                f.stop_reason = reason;
                f.stop_detail = detail;
            }
            _ => {}
        }
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(pid: Option<u32>) -> Option<AgentRun> {
        Some(AgentRun {
            token: "tok".into(),
            pid,
            pgid: pid.map(u32::cast_signed),
        })
    }

    fn phases() -> Vec<(&'static str, Phase)> {
        let until = DateTime::UNIX_EPOCH;
        vec![
            ("planning", Phase::Planning { agent: None }),
            (
                "planning+agent",
                Phase::Planning {
                    agent: agent(Some(7)),
                },
            ),
            ("running", Phase::Running { agent: None }),
            (
                "running+agent",
                Phase::Running {
                    agent: agent(Some(7)),
                },
            ),
            ("running+token", Phase::Running { agent: agent(None) }),
            ("paused", Phase::Paused),
            ("stopping", Phase::Stopping { agent: None }),
            (
                "stopping+agent",
                Phase::Stopping {
                    agent: agent(Some(7)),
                },
            ),
            (
                "waiting",
                Phase::Waiting {
                    until,
                    reason: "limit".into(),
                    then: Resume::Running,
                },
            ),
            (
                "ended",
                Phase::Ended {
                    ending: Ending::Completed,
                    reason: Some(StopReason::PlanEmpty),
                    detail: None,
                },
            ),
        ]
    }

    fn steps() -> Vec<(&'static str, Step)> {
        vec![
            ("plan", Step::Plan),
            ("run", Step::Run),
            ("pause", Step::Pause),
            ("resume", Step::Resume),
            (
                "wait",
                Step::Wait {
                    until: DateTime::UNIX_EPOCH,
                    reason: "r".into(),
                },
            ),
            ("waitover", Step::WaitOver),
            ("starting", Step::AgentStarting("tok".into())),
            ("spawned", Step::AgentSpawned(7)),
            ("stop", Step::StopRequested),
            ("gone", Step::AgentGone),
            ("end", Step::End(StopReason::UserStop, "asked".into())),
            ("fail", Step::Fail("boom".into())),
        ]
    }

    /// Every phase × every step: the status it leads to, or `-` where it is refused.
    #[test]
    fn the_allowed_transitions() {
        #[rustfmt::skip]
        let table: &[(&str, [&str; 12])] = &[
            //                 plan        run        pause    resume    wait       waitover    starting    spawned     stop        gone        end        fail
            ("planning",       ["planning", "running", "paused", "-",     "waiting", "-",        "planning", "-",        "stopping", "planning", "stopped", "failed"]),
            ("planning+agent", ["-",        "-",       "-",     "-",      "-",       "-",        "-",        "-",        "stopping", "planning", "-",       "failed"]),
            ("running",        ["-",        "running", "paused", "-",     "waiting", "-",        "running",  "-",        "stopping", "running",  "stopped", "failed"]),
            ("running+agent",  ["-",        "-",       "-",     "-",      "-",       "-",        "-",        "-",        "stopping", "running",  "-",       "failed"]),
            ("running+token",  ["-",        "-",       "-",     "-",      "-",       "-",        "-",        "running",  "stopping", "running",  "-",       "failed"]),
            ("paused",         ["planning", "-",       "-",     "running", "-",      "-",        "-",        "-",        "-",        "-",        "stopped", "failed"]),
            ("stopping",       ["-",        "-",       "-",     "-",      "waiting", "-",        "-",        "-",        "stopping", "stopping", "stopped", "failed"]),
            ("stopping+agent", ["-",        "-",       "-",     "-",      "-",       "-",        "-",        "-",        "stopping", "stopping", "-",       "failed"]),
            ("waiting",        ["-",        "-",       "-",     "-",      "-",       "running",  "-",        "-",        "-",        "-",        "stopped", "failed"]),
            ("ended",          ["-",        "-",       "-",     "-",      "-",       "-",        "-",        "-",        "-",        "-",        "-",       "failed"]),
        ];
        let phases = phases();
        let steps = steps();
        for ((name, from), (row, want)) in phases.iter().zip(table) {
            assert_eq!(name, row);
            for ((step_name, step), want) in steps.iter().zip(want) {
                let got = from.step(step.clone()).map_or("-", |p| p.status().as_str());
                assert_eq!(got, *want, "{name} --{step_name}-->");
            }
        }
    }

    #[test]
    fn the_data_of_each_phase_travels_with_it() {
        let p = Phase::Running { agent: None }
            .step(Step::AgentStarting("t1".into()))
            .unwrap()
            .step(Step::AgentSpawned(42))
            .unwrap();
        assert_eq!(
            p.agent(),
            Some(&AgentRun {
                token: "t1".into(),
                pid: Some(42),
                pgid: Some(42)
            })
        );
        let stopping = p.step(Step::StopRequested).unwrap();
        assert_eq!(stopping.agent().and_then(|a| a.pid), Some(42));
        let gone = stopping.step(Step::AgentGone).unwrap();
        assert_eq!(gone, Phase::Stopping { agent: None });
        let waited = Phase::Planning { agent: None }
            .step(Step::Wait {
                until: DateTime::UNIX_EPOCH,
                reason: "usage limit, claude".into(),
            })
            .unwrap();
        assert_eq!(
            waited.waiting(),
            Some((DateTime::UNIX_EPOCH, "usage limit, claude"))
        );
        assert_eq!(
            waited.step(Step::WaitOver).unwrap(),
            Phase::Planning { agent: None },
            "a wait goes back to where it was"
        );
        let ended = Phase::Running { agent: None }
            .step(Step::End(StopReason::Breaker, "no change".into()))
            .unwrap();
        assert_eq!(ended.status(), Status::Failed);
        assert_eq!(
            ended.ended(),
            Some((Some(StopReason::Breaker), Some("no change")))
        );
    }

    #[test]
    fn a_refused_step_names_the_phase_and_the_step() {
        let e = Phase::Paused.step(Step::AgentSpawned(1)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "a loop that is paused cannot record a spawned agent"
        );
    }

    #[test]
    fn the_flat_fields_round_trip_every_phase() {
        for (name, p) in phases() {
            let back = Phase::from(Flat::from(p.clone()));
            assert_eq!(back, p, "{name}");
        }
    }

    #[test]
    fn stop_reasons_end_as_their_status() {
        for (r, s) in [
            (StopReason::PlanEmpty, Status::Completed),
            (StopReason::Promise, Status::Completed),
            (StopReason::UserStop, Status::Stopped),
            (StopReason::Budget, Status::Stopped),
            (StopReason::Breaker, Status::Failed),
            (StopReason::Error, Status::Failed),
            (StopReason::ValidationFailed, Status::Failed),
        ] {
            assert_eq!(r.ending().status(), s, "{r:?}");
        }
    }
}
