//! The one decision after each attempt (`after_attempt`): protected files, a command that
//! cannot run, the provider's limits, the trend breakers, then the breaker's counts. Pure.

use super::{
    AfterRun, Breaker, TrendLimits, after_run, cannot_run, classify, last_error, record_run,
};
use crate::disk::records::Ending;
use crate::disk::state::Trends;

/// How one attempt ended, as the loop sees it afterwards.
#[derive(Debug, Clone)]
pub struct Attempt<'a> {
    /// The agent changed protected files (restored already).
    pub protected_changed: bool,
    /// How its process ended.
    pub ending: Ending,
    /// The end of its log.
    pub tail: &'a str,
    /// A stop arrived during the run.
    pub stopped: bool,
    /// What its output says about the provider (`limits::recognise`), when it failed.
    pub limit: Option<crate::ralph::limits::Limit>,
    /// The size of its log.
    pub output: u64,
    /// It changed something: in the artifact, by a commit of its own, in a file the plan names.
    pub progress: bool,
    /// It asked a question (or was refused a tool) instead of working (`agent::asked`).
    pub asked: bool,
}

/// The ceilings the decision weighs an attempt against.
#[derive(Debug, Clone, Copy)]
pub struct AttemptLimits {
    /// The trend breakers'.
    pub trends: TrendLimits,
    /// `[safety] max_no_change_iterations`.
    pub max_no_change: u32,
    /// `[safety] max_crash_retries`.
    pub max_retries: u32,
}

/// What an attempt's end calls for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// It changed protected files: rejected, kept aside as evidence.
    Rejected,
    /// The command cannot run at all: end the loop (`error`).
    CannotRun(String),
    /// The provider refused for good: end the loop (`error`), quoting the line.
    ProviderRefused(String),
    /// A usage or rate limit: wait (or hand over to a fallback) and try again.
    Limited {
        /// The reset the answer named.
        until: Option<chrono::DateTime<chrono::Utc>>,
        /// `usage limit`, `rate limit`.
        what: String,
        /// The line.
        line: String,
    },
    /// A trend breaker tripped (the same error, shrinking output): end the loop.
    Trend(String),
    /// It changed nothing and asked: no idle run, the breaker's counts stay as they were.
    Asked,
    /// The breaker's call on the run.
    Then(AfterRun),
}

impl Verdict {
    /// The outcome its record is written with (acceptance still decides between `accepted`,
    /// `gate_failed` and `rejected`).
    #[must_use]
    pub fn outcome(&self) -> crate::disk::records::Outcome {
        use crate::disk::records::Outcome;
        match self {
            Verdict::Rejected => Outcome::Rejected,
            Verdict::Limited { .. } => Outcome::Limited,
            Verdict::CannotRun(_)
            | Verdict::ProviderRefused(_)
            | Verdict::Trend(_)
            | Verdict::Then(AfterRun::Retry | AfterRun::GiveUp(_)) => Outcome::Crashed,
            Verdict::Then(AfterRun::Interrupted) => Outcome::Interrupted,
            Verdict::Then(AfterRun::NoChange(_)) => Outcome::NoChange,
            Verdict::Then(AfterRun::Accept) => Outcome::Accepted,
            Verdict::Asked => Outcome::Asked,
        }
    }
}

/// The one decision after each attempt, in the order the loop weighs it: protected files, a
/// command that cannot run, the provider's limits, the trend breakers, then the breaker's counts
/// (which it updates, as it does the trends; a stop counts for neither). A run that changed
/// nothing and asked is no idle run: it leaves the no-change count and the trends as they
/// were (its few words are no shrinking output). Pure.
pub fn after_attempt(
    a: &Attempt<'_>,
    breaker: &mut Breaker,
    trends: &mut Trends,
    l: AttemptLimits,
) -> Verdict {
    use crate::ralph::limits::Limit;
    if a.protected_changed {
        return Verdict::Rejected;
    }
    if let Some(why) = cannot_run(a.ending, a.tail) {
        return Verdict::CannotRun(why);
    }
    if !a.ending.success() && !a.stopped {
        match &a.limit {
            Some(Limit::Fatal(line)) => return Verdict::ProviderRefused(line.clone()),
            Some(Limit::Wait { until, what, line }) => {
                return Verdict::Limited {
                    until: *until,
                    what: what.clone(),
                    line: line.clone(),
                };
            }
            None => {}
        }
    }
    // A run that asked is short by nature and its question no error: it feeds no trend.
    let kind = classify(a.ending, a.progress);
    if kind == super::RunKind::NoChange && a.asked && !a.stopped {
        breaker.crashes = 0;
        return Verdict::Asked;
    }
    // Only a run that failed or got nowhere is stuck on an error: one that went well and
    // changed something may print "0 failed" or a warning every time and is no repeated error.
    let error = if a.ending.success() && a.progress {
        None
    } else {
        last_error(a.tail)
    };
    if !a.stopped
        && let Some(why) = record_run(trends, error.as_deref(), a.output, l.trends)
    {
        return Verdict::Trend(why);
    }
    Verdict::Then(after_run(
        breaker,
        a.stopped,
        kind,
        l.max_no_change,
        l.max_retries,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_decision_after_each_attempt_in_the_order_the_loop_weighs_it() {
        use crate::ralph::limits::Limit;
        let l = AttemptLimits {
            trends: TrendLimits {
                repeated_errors: 5,
                shrink_percent: 0,
                validation_failures: 5,
            },
            max_no_change: 3,
            max_retries: 2,
        };
        let ok = Attempt {
            protected_changed: false,
            ending: Ending::Exited { code: 0 },
            tail: "done\n",
            stopped: false,
            limit: None,
            output: 10,
            progress: true,
            asked: false,
        };
        let failed = Attempt {
            ending: Ending::Exited { code: 1 },
            tail: "Error: boom\n",
            progress: false,
            ..ok.clone()
        };
        let wait = Limit::Wait {
            until: None,
            what: "rate limit".into(),
            line: "429".into(),
        };
        let cases: Vec<(Attempt<'_>, Verdict)> = vec![
            (ok.clone(), Verdict::Then(AfterRun::Accept)),
            (
                Attempt {
                    progress: false,
                    ..ok.clone()
                },
                Verdict::Then(AfterRun::NoChange(None)),
            ),
            // Protected files first, whatever else holds.
            (
                Attempt {
                    protected_changed: true,
                    limit: Some(wait.clone()),
                    ..failed.clone()
                },
                Verdict::Rejected,
            ),
            (
                Attempt {
                    ending: Ending::Exited { code: 127 },
                    tail: "sh: 1: nope: not found\n",
                    ..failed.clone()
                },
                Verdict::CannotRun(
                    "the agent command cannot run: `nope` not found (sh: 1: nope: not found)"
                        .into(),
                ),
            ),
            (
                Attempt {
                    limit: Some(Limit::Fatal("invalid api key".into())),
                    ..failed.clone()
                },
                Verdict::ProviderRefused("invalid api key".into()),
            ),
            (
                Attempt {
                    limit: Some(wait.clone()),
                    ..failed.clone()
                },
                Verdict::Limited {
                    until: None,
                    what: "rate limit".into(),
                    line: "429".into(),
                },
            ),
            // A stop during the run: no limit, no trend, interrupted.
            (
                Attempt {
                    stopped: true,
                    limit: Some(wait),
                    ..failed.clone()
                },
                Verdict::Then(AfterRun::Interrupted),
            ),
            (failed.clone(), Verdict::Then(AfterRun::Retry)),
            // It asked and changed nothing: its own verdict; with a change, or a crash, as ever.
            (
                Attempt {
                    progress: false,
                    asked: true,
                    ..ok.clone()
                },
                Verdict::Asked,
            ),
            (
                Attempt {
                    asked: true,
                    ..ok.clone()
                },
                Verdict::Then(AfterRun::Accept),
            ),
            (
                Attempt {
                    asked: true,
                    ..failed.clone()
                },
                Verdict::Then(AfterRun::Retry),
            ),
        ];
        for (a, want) in cases {
            let got = after_attempt(&a, &mut Breaker::default(), &mut Trends::default(), l);
            assert_eq!(got, want, "{a:?}");
        }
        // The same error five runs in a row trips the trend breaker.
        let mut trends = Trends::default();
        let mut breaker = Breaker::default();
        let verdicts: Vec<Verdict> = (0..5)
            .map(|_| after_attempt(&ok_with_error(), &mut breaker, &mut trends, l))
            .collect();
        assert!(matches!(verdicts[4], Verdict::Trend(_)), "{verdicts:?}");
        // Runs that went well and changed something are stuck on nothing, whatever words they
        // repeat ("0 failed", a warning).
        let (mut trends, mut breaker) = (Trends::default(), Breaker::default());
        let well = Attempt {
            tail: "test result: ok. 15 passed; 0 failed\n",
            ..ok.clone()
        };
        for _ in 0..8 {
            assert_eq!(
                after_attempt(&well, &mut breaker, &mut trends, l),
                Verdict::Then(AfterRun::Accept)
            );
        }
        // Asked runs do not feed the no-progress breaker: idle, asked ×5, idle is two in a row.
        let mut breaker = Breaker::default();
        let idle = Attempt {
            progress: false,
            ..ok.clone()
        };
        let asked = Attempt {
            asked: true,
            ..idle.clone()
        };
        let mut trends = Trends::default();
        after_attempt(&idle, &mut breaker, &mut trends, l);
        for _ in 0..5 {
            assert_eq!(
                after_attempt(&asked, &mut breaker, &mut trends, l),
                Verdict::Asked
            );
        }
        assert_eq!(
            after_attempt(&idle, &mut breaker, &mut trends, l),
            Verdict::Then(AfterRun::NoChange(None))
        );
        assert_eq!(breaker.no_change, 2);
        // A short question after long working runs: asked, not a shrinking output.
        let shrinking = AttemptLimits {
            trends: TrendLimits {
                shrink_percent: 50,
                ..l.trends
            },
            ..l
        };
        let (mut breaker, mut trends) = (Breaker::default(), Trends::default());
        let long = Attempt {
            output: 17_000,
            ..ok.clone()
        };
        for _ in 0..3 {
            after_attempt(&long, &mut breaker, &mut trends, shrinking);
        }
        let short = Attempt {
            output: 79,
            ..asked.clone()
        };
        assert_eq!(
            after_attempt(&short, &mut breaker, &mut trends, shrinking),
            Verdict::Asked
        );
        assert!(matches!(
            after_attempt(
                &Attempt {
                    output: 79,
                    ..ok.clone()
                },
                &mut breaker,
                &mut trends,
                shrinking
            ),
            Verdict::Trend(_)
        ));
    }

    /// A run that changed something and failed on the same error.
    fn ok_with_error() -> Attempt<'static> {
        Attempt {
            protected_changed: false,
            ending: Ending::Exited { code: 1 },
            tail: "Error: the same thing\n",
            stopped: false,
            limit: None,
            output: 10,
            progress: true,
            asked: false,
        }
    }

    #[test]
    fn each_verdict_is_recorded_with_its_outcome() {
        use crate::disk::records::Outcome;
        let limited = Verdict::Limited {
            until: None,
            what: "usage limit".into(),
            line: "l".into(),
        };
        for (v, want) in [
            (Verdict::Rejected, Outcome::Rejected),
            (Verdict::CannotRun("x".into()), Outcome::Crashed),
            (Verdict::ProviderRefused("x".into()), Outcome::Crashed),
            (limited, Outcome::Limited),
            (Verdict::Trend("x".into()), Outcome::Crashed),
            (Verdict::Then(AfterRun::Interrupted), Outcome::Interrupted),
            (Verdict::Then(AfterRun::Retry), Outcome::Crashed),
            (
                Verdict::Then(AfterRun::GiveUp("x".into())),
                Outcome::Crashed,
            ),
            (Verdict::Then(AfterRun::NoChange(None)), Outcome::NoChange),
            (Verdict::Then(AfterRun::Accept), Outcome::Accepted),
            (Verdict::Asked, Outcome::Asked),
        ] {
            assert_eq!(v.outcome(), want, "{v:?}");
        }
    }
}
