//! What the loop does with an agent run, decided before anything is done: the attempt's verdict
//! (`after_attempt`) turned into a disposition for its phase — the outcome recorded, whether
//! its changes are carried to the next commit, what happens to its directory and the plan, and
//! what follows (run again, wait, accept, go on, stop and why). Planning and iterations share it;
//! `ralph/settle.rs` is the one place that carries it out. Pure.

use chrono::{DateTime, Utc};

use super::{AfterRun, Verdict, how_to_continue};
use crate::disk::records::Outcome;
use crate::disk::state::StopReason;

/// The run a disposition is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunPhase {
    /// Writing `fix_plan.md`: attempt `attempt` of `attempts`.
    Planning {
        /// This attempt (1-based).
        attempt: u32,
        /// How many attempts planning gets.
        attempts: u32,
    },
    /// Iteration `n`.
    Iteration(u32),
}

/// What becomes of the attempt's directory (and the plan it may have ticked).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aside {
    /// Left as it is.
    Keep,
    /// Discarded: the plan back as the attempt found it, the directory moved to the discarded
    /// attempts.
    Discard,
    /// Kept as evidence of a rejected attempt: the plan back, the directory moved aside.
    Evidence,
}

/// What follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Then {
    /// Run the same phase again, afresh.
    Again,
    /// Wait out a usage or rate limit (or hand over to a fallback agent), then run again.
    Wait {
        /// The reset the answer named, if any.
        until: Option<DateTime<Utc>>,
        /// `usage limit`, `rate limit`.
        what: String,
    },
    /// On to acceptance (an iteration) or the plan's commit (planning).
    Accept,
    /// The iteration is over (nothing changed, or it was rejected): on to the next.
    Over,
    /// A run that changed nothing is over, and the loop checks its claim of completion.
    NoChange,
    /// A run that changed nothing asked a question: it is recorded, told, and the loop goes on
    /// or pauses (`decide::after_asking`).
    Asked,
    /// End the loop.
    Stop(StopReason, String),
}

/// What to do with one agent run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disposition {
    /// Its record's outcome.
    pub outcome: Outcome,
    /// Its record's note (why it crashed, was limited, rejected ...).
    pub note: Option<String>,
    /// Carry the paths it changed to the next commit.
    pub carry: bool,
    /// What becomes of its directory and the plan.
    pub aside: Aside,
    /// What follows.
    pub then: Then,
}

/// What the disposition needs besides the verdict.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// The loop's topic (the words of how to go on).
    pub topic: &'a str,
    /// The failed run in words, from its output (`ralph::failure::describe`), if it failed.
    pub failure: Option<&'a str>,
    /// How its process ended, in words (`exited with code 1`).
    pub ended: &'a str,
    /// Protected files it changed (restored already).
    pub protected: &'a [String],
}

/// What the supervisor pushes among a run's protected changes when it was itself stopped
/// (SIGSTOP, Ctrl-Z) while the run went on unwatched.
pub const SUPERVISOR_STOPPED: &str = "the supervisor (stopped during the run)";

/// Why a run with protected changes is rejected: the files the agent changed (restored), and
/// whether the supervisor was stopped while it ran — not the agent's doing, said as such.
fn protected_words(protected: &[String]) -> String {
    let files: Vec<&str> = protected
        .iter()
        .map(String::as_str)
        .filter(|p| *p != SUPERVISOR_STOPPED)
        .collect();
    let stopped = files.len() < protected.len();
    let unwatched = "the supervisor was stopped while the run went on unwatched";
    match (files.is_empty(), stopped) {
        (true, _) => format!("{unwatched}; nothing of the run is trusted"),
        (false, false) => format!(
            "the agent changed protected files ({}); they were restored",
            files.join(", ")
        ),
        (false, true) => format!(
            "the agent changed protected files ({}); they were restored; and {unwatched}",
            files.join(", ")
        ),
    }
}

fn disposition(
    outcome: Outcome,
    note: Option<String>,
    carry: bool,
    aside: Aside,
    then: Then,
) -> Disposition {
    Disposition {
        outcome,
        note,
        carry,
        aside,
        then,
    }
}

/// A planning attempt that wrote no plan item: run again, or — its attempts spent, or the
/// breaker given up — end the loop, naming the `last` failure.
fn planning_failed(attempt: u32, attempts: u32, last: String, give_up: bool) -> Disposition {
    let then = if attempt >= attempts || give_up {
        Then::Stop(
            StopReason::Breaker,
            format!("planning failed {attempts} times; the last: {last}"),
        )
    } else {
        Then::Again
    };
    disposition(Outcome::Crashed, Some(last), true, Aside::Keep, then)
}

/// Decide what to do with a run of `phase` whose attempt's verdict is `v`. Planning has no
/// directory of its own to put aside.
#[must_use]
pub fn dispose(v: Verdict, phase: RunPhase, c: Context<'_>) -> Disposition {
    let mut d = decide(v, phase, c);
    if matches!(phase, RunPhase::Planning { .. }) {
        d.aside = Aside::Keep;
    }
    d
}

fn decide(v: Verdict, phase: RunPhase, c: Context<'_>) -> Disposition {
    let outcome = v.outcome();
    match (v, phase) {
        (Verdict::Rejected, _) => rejected(outcome, phase, c),
        (Verdict::CannotRun(why), _) => Disposition {
            carry: false,
            ..stop(outcome, StopReason::Error, why)
        },
        (Verdict::ProviderRefused(line), _) => stop(
            outcome,
            StopReason::Error,
            format!("the agent's provider refused, waiting will not help: {line}"),
        ),
        (Verdict::Limited { until, what, line }, _) => disposition(
            outcome,
            Some(format!("{what}: {line}")),
            true,
            Aside::Discard,
            Then::Wait { until, what },
        ),
        (Verdict::Trend(why), _) => Disposition {
            then: Then::Stop(StopReason::Breaker, how_to_continue(&why, c.topic)),
            ..stop(outcome, StopReason::Breaker, why)
        },
        (Verdict::Then(AfterRun::Interrupted), phase) => interrupted(outcome, phase),
        (Verdict::Then(AfterRun::Accept), RunPhase::Planning { .. }) => {
            disposition(Outcome::Planned, None, false, Aside::Keep, Then::Accept)
        }
        (Verdict::Then(AfterRun::Accept), RunPhase::Iteration(_)) => {
            disposition(outcome, None, false, Aside::Keep, Then::Accept)
        }
        (Verdict::Then(after), RunPhase::Planning { attempt, attempts }) => {
            // Planning that wrote no item failed, whatever its exit said.
            let last = c.failure.map_or_else(
                || "planning wrote no checkbox items to fix_plan.md".to_string(),
                str::to_string,
            );
            let give_up = matches!(after, AfterRun::GiveUp(_));
            planning_failed(attempt, attempts, last, give_up)
        }
        (Verdict::Then(AfterRun::Retry), RunPhase::Iteration(_)) => retry(outcome, c),
        (Verdict::Then(AfterRun::GiveUp(why)), RunPhase::Iteration(_)) => {
            let why = match c.failure {
                Some(last) => format!("{why}; the last: {last}"),
                None => why,
            };
            stop(outcome, StopReason::Breaker, why)
        }
        (Verdict::Asked, RunPhase::Iteration(_)) => {
            disposition(outcome, None, false, Aside::Keep, Then::Asked)
        }
        // Asked: the question is kept, said and sent; planning decides whether to ask again.
        (Verdict::Asked, RunPhase::Planning { .. }) => {
            let note = "planning asked a question instead of writing fix_plan.md".to_string();
            disposition(outcome, Some(note), false, Aside::Keep, Then::Asked)
        }
        (Verdict::Then(AfterRun::NoChange(trip)), RunPhase::Iteration(_)) => {
            let then = trip.map_or(Then::NoChange, |why| Then::Stop(StopReason::Breaker, why));
            disposition(outcome, None, false, Aside::Keep, then)
        }
    }
}

/// End the loop for `reason`, the run's work put aside.
fn stop(outcome: Outcome, reason: StopReason, why: String) -> Disposition {
    disposition(
        outcome,
        Some(why.clone()),
        true,
        Aside::Discard,
        Then::Stop(reason, why),
    )
}

/// A run that changed protected files: its evidence kept, the iteration over (planning tries
/// again while it has attempts).
fn rejected(outcome: Outcome, phase: RunPhase, c: Context<'_>) -> Disposition {
    let why = protected_words(c.protected);
    let then = match phase {
        RunPhase::Planning { attempt, attempts } if attempt >= attempts => Then::Stop(
            StopReason::Breaker,
            format!("planning failed {attempts} times; the last: {why}"),
        ),
        RunPhase::Planning { .. } => Then::Again,
        RunPhase::Iteration(_) => Then::Over,
    };
    disposition(outcome, Some(why), false, Aside::Evidence, then)
}

/// A run a person stopped: the loop ends, saying when.
fn interrupted(outcome: Outcome, phase: RunPhase) -> Disposition {
    let why = match phase {
        RunPhase::Planning { .. } => "stopped during planning".to_string(),
        RunPhase::Iteration(n) => format!("stopped during iteration {n}"),
    };
    disposition(
        outcome,
        None,
        true,
        Aside::Discard,
        Then::Stop(StopReason::UserStop, why),
    )
}

/// An iteration's run that failed in a way a fresh process may not: run it again.
fn retry(outcome: Outcome, c: Context<'_>) -> Disposition {
    let what = c
        .failure
        .map_or_else(|| format!("it {}", c.ended), str::to_string);
    disposition(
        outcome,
        Some(format!("{what}; retrying with a fresh process")),
        true,
        Aside::Discard,
        Then::Again,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx<'a>() -> Context<'a> {
        Context {
            topic: "t",
            failure: Some("it exited with code 1: boom"),
            ended: "exited with code 1",
            protected: &[],
        }
    }

    #[test]
    fn a_stopped_supervisor_is_not_the_agents_doing() {
        let words = |p: &[&str]| {
            let p: Vec<String> = p.iter().map(|s| (*s).to_string()).collect();
            protected_words(&p)
        };
        assert_eq!(
            words(&[SUPERVISOR_STOPPED]),
            "the supervisor was stopped while the run went on unwatched; nothing of the run is trusted"
        );
        assert_eq!(
            words(&[".git/config"]),
            "the agent changed protected files (.git/config); they were restored"
        );
        assert!(words(&[".git/config", SUPERVISOR_STOPPED]).ends_with("went on unwatched"));
    }

    #[test]
    fn each_verdict_has_one_disposition_per_phase() {
        let it = RunPhase::Iteration(2);
        let first = RunPhase::Planning {
            attempt: 1,
            attempts: 3,
        };
        let last = RunPhase::Planning {
            attempt: 3,
            attempts: 3,
        };
        let limited = || Verdict::Limited {
            until: None,
            what: "rate limit".into(),
            line: "429".into(),
        };
        // (verdict, phase, outcome, carry, aside, then)
        type Case = (Verdict, RunPhase, Outcome, bool, Aside, Then);
        let cases: Vec<Case> = vec![
            (
                Verdict::Then(AfterRun::Accept),
                it,
                Outcome::Accepted,
                false,
                Aside::Keep,
                Then::Accept,
            ),
            (
                Verdict::Then(AfterRun::Accept),
                first,
                Outcome::Planned,
                false,
                Aside::Keep,
                Then::Accept,
            ),
            (
                Verdict::Then(AfterRun::Retry),
                it,
                Outcome::Crashed,
                true,
                Aside::Discard,
                Then::Again,
            ),
            (
                Verdict::Then(AfterRun::Retry),
                first,
                Outcome::Crashed,
                true,
                Aside::Keep,
                Then::Again,
            ),
            (
                Verdict::Then(AfterRun::NoChange(None)),
                last,
                Outcome::Crashed,
                true,
                Aside::Keep,
                Then::Stop(
                    StopReason::Breaker,
                    "planning failed 3 times; the last: it exited with code 1: boom".into(),
                ),
            ),
            (
                Verdict::Then(AfterRun::NoChange(None)),
                it,
                Outcome::NoChange,
                false,
                Aside::Keep,
                Then::NoChange,
            ),
            (
                Verdict::Asked,
                it,
                Outcome::Asked,
                false,
                Aside::Keep,
                Then::Asked,
            ),
            (
                Verdict::Asked,
                first,
                Outcome::Asked,
                false,
                Aside::Keep,
                Then::Asked,
            ),
            (
                Verdict::Asked,
                last,
                Outcome::Asked,
                false,
                Aside::Keep,
                Then::Asked,
            ),
            (
                Verdict::Then(AfterRun::NoChange(Some("3 in a row".into()))),
                it,
                Outcome::NoChange,
                false,
                Aside::Keep,
                Then::Stop(StopReason::Breaker, "3 in a row".into()),
            ),
            (
                Verdict::Rejected,
                it,
                Outcome::Rejected,
                false,
                Aside::Evidence,
                Then::Over,
            ),
            (
                Verdict::Rejected,
                first,
                Outcome::Rejected,
                false,
                Aside::Keep,
                Then::Again,
            ),
            (
                limited(),
                it,
                Outcome::Limited,
                true,
                Aside::Discard,
                Then::Wait {
                    until: None,
                    what: "rate limit".into(),
                },
            ),
            (
                Verdict::CannotRun("not found".into()),
                it,
                Outcome::Crashed,
                false,
                Aside::Discard,
                Then::Stop(StopReason::Error, "not found".into()),
            ),
            (
                Verdict::Then(AfterRun::Interrupted),
                first,
                Outcome::Interrupted,
                true,
                Aside::Keep,
                Then::Stop(StopReason::UserStop, "stopped during planning".into()),
            ),
            (
                Verdict::Then(AfterRun::GiveUp("crashed 3 times".into())),
                it,
                Outcome::Crashed,
                true,
                Aside::Discard,
                Then::Stop(
                    StopReason::Breaker,
                    "crashed 3 times; the last: it exited with code 1: boom".into(),
                ),
            ),
        ];
        for (v, phase, outcome, carry, aside, then) in cases {
            let what = format!("{v:?} in {phase:?}");
            let d = dispose(v, phase, ctx());
            assert_eq!(
                (d.outcome, d.carry, d.aside, d.then),
                (outcome, carry, aside, then),
                "{what}"
            );
        }
    }
}
