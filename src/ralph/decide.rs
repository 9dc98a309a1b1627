//! Exit conditions and breakers (DESIGN §4 step 1), as pure functions over what the loop has
//! seen. The loop gathers the facts; this decides.

use crate::disk::records::Ending;
use crate::disk::state::{StopReason, Trends};

mod attempt;
pub mod dispose;
mod question;
pub use attempt::{Attempt, AttemptLimits, Verdict, after_attempt};
pub use question::{AfterAsking, after_asking};

/// Everything the pre-spawn exit check looks at.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// A stop was requested (signal, `stop`, or `stop --after-iteration` at a boundary).
    pub stop_requested: bool,
    /// Iterations completed so far (accepted, rejected or FAILed; not discarded crashes).
    pub iterations_done: u32,
    /// The limit.
    pub max_iterations: u32,
    /// Unchecked items in `fix_plan.md`.
    pub plan_remaining: usize,
    /// Overall built-in quality of the loop's result, 0–1, if measured.
    pub quality: Option<f64>,
    /// The outer threshold.
    pub quality_threshold: f64,
    /// The last iteration's agent printed the promise and the claim was taken: on what grounds.
    pub promise_taken: Option<String>,
    /// Claims in a row were not taken past the ceiling: why.
    pub promise_rejected: Option<String>,
    /// The budget that is spent, with its figures (see `budget::exhausted`).
    pub budget: Option<String>,
    /// A code loop's work tree fails its validation (what fails): the loop is not done, whatever
    /// the plan, the promise or the quality say.
    pub red: Option<String>,
    /// The user answered a question no run has been told the answer to yet: the loop is not
    /// done before a run reads it (the limits still hold).
    pub answer_waiting: bool,
}

/// The first exit condition that holds, in the order a user would want it reported.
#[must_use]
pub fn exit_reason(f: &Facts) -> Option<(StopReason, String)> {
    if f.stop_requested {
        return Some((StopReason::UserStop, "stop requested".into()));
    }
    if let Some(why) = &f.promise_rejected {
        return Some((StopReason::PromiseRejected, why.clone()));
    }
    if f.red.is_none()
        && !f.answer_waiting
        && let Some(done) = done_reason(f)
    {
        return Some(done);
    }
    if let Some(why) = &f.budget {
        return Some((StopReason::Budget, why.clone()));
    }
    if f.iterations_done >= f.max_iterations {
        return Some((
            StopReason::MaxIterations,
            match f.iterations_done {
                1 => "1 iteration done".to_string(),
                n => format!("{n} iterations done"),
            },
        ));
    }
    None
}

/// The loop is done: the promise taken, the plan empty, or the quality reached.
fn done_reason(f: &Facts) -> Option<(StopReason, String)> {
    if let Some(why) = &f.promise_taken {
        return Some((StopReason::Promise, why.clone()));
    }
    if f.plan_remaining == 0 {
        return Some((
            StopReason::PlanEmpty,
            "fix_plan.md has no unchecked items".into(),
        ));
    }
    if let Some(q) = f.quality
        && q >= f.quality_threshold
    {
        return Some((
            StopReason::ThresholdMet,
            format!(
                "quality {q:.2} reached the threshold {:.2}",
                f.quality_threshold
            ),
        ));
    }
    None
}

/// How one agent run ended, as the breaker sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunKind {
    /// Ran to its end and changed something.
    Changed,
    /// Ran to its end (exit 0) and changed nothing.
    NoChange,
    /// Killed, timed out, idle, or failed without changes: discarded and retried.
    Crashed,
    /// Its tree crossed the memory ceiling: retrying the same task would cross it again.
    OverCeiling,
}

/// Classify an agent run: over the memory ceiling is its own kind; killed (a signal, the wall
/// limit, idleness) or non-zero with no change is a crash.
#[must_use]
pub fn classify(ending: Ending, changed: bool) -> RunKind {
    let (exit_ok, killed) = (ending.success(), ending.killed());
    if ending == Ending::MemoryLimit {
        RunKind::OverCeiling
    } else if killed || (!exit_ok && !changed) {
        RunKind::Crashed
    } else if changed {
        RunKind::Changed
    } else {
        RunKind::NoChange
    }
}

/// The circuit breaker: consecutive no-change iterations and crash retries of one iteration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Breaker {
    /// Iterations in a row that changed nothing.
    pub no_change: u32,
    /// Crashes of the current iteration.
    pub crashes: u32,
}

/// What to do after an agent run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Go on with validation, gate and commit.
    Proceed,
    /// Discard the iteration and run it again with a fresh process.
    Retry,
    /// Stop the loop with `breaker`.
    Trip(String),
}

impl Breaker {
    /// Record a run and say what comes next.
    pub fn record(&mut self, kind: RunKind, max_no_change: u32, max_retries: u32) -> Next {
        match kind {
            RunKind::Crashed => {
                self.crashes += 1;
                if self.crashes > max_retries {
                    Next::Trip(format!(
                        "the agent crashed {} times in a row on the same iteration",
                        self.crashes
                    ))
                } else {
                    Next::Retry
                }
            }
            RunKind::NoChange => {
                self.crashes = 0;
                self.no_change += 1;
                if self.no_change >= max_no_change {
                    Next::Trip(format!(
                        "{} iterations in a row changed nothing",
                        self.no_change
                    ))
                } else {
                    Next::Proceed
                }
            }
            RunKind::Changed | RunKind::OverCeiling => {
                self.crashes = 0;
                self.no_change = 0;
                Next::Proceed
            }
        }
    }
}

/// When an agent command could not run at all (the shell's 127 "not found" or 126 "cannot
/// execute", a missing interpreter): what is missing, from the end of its log. Retrying would
/// fail the same way, so the loop ends at once.
#[must_use]
pub fn cannot_run(ending: Ending, log_tail: &str) -> Option<String> {
    let Ending::Exited {
        code: code @ (126 | 127),
    } = ending
    else {
        return None;
    };
    let line = log_tail.lines().rev().map(str::trim).find(|l| {
        l.ends_with("not found")
            || l.contains("No such file or directory")
            || l.contains("Permission denied")
            || l.contains("cannot execute")
    })?;
    // `sh: 1: foo: not found`, `bash: foo: command not found`, `/usr/bin/env: 'python9': No such…`
    let parts: Vec<&str> = line.split(": ").collect();
    let name = parts
        .iter()
        .rev()
        .nth(1)
        .map(|n| n.trim_matches(|c| c == '\'' || c == '`' || c == '"'))
        .filter(|n| !n.is_empty() && n.parse::<u32>().is_err())
        .unwrap_or(line);
    let what = if code == 127 {
        "not found"
    } else {
        "cannot be executed"
    };
    Some(format!(
        "the agent command cannot run: `{name}` {what} ({line})"
    ))
}

/// The error an agent run ended on: the last line of its output that says so, for the
/// repeated-error breaker. A line that is a JSON document (claude's result, a stream's event)
/// is an error only when it says so (`"is_error": true`: its `result`); its keys
/// (`is_error`) are no error words.
#[must_use]
pub fn last_error(tail: &str) -> Option<String> {
    tail.lines().rev().map(str::trim).find_map(|l| {
        if l.starts_with('{')
            && let Ok(doc) = serde_json::from_str::<serde_json::Value>(l)
        {
            return (doc.get("is_error") == Some(&serde_json::Value::Bool(true))).then(|| {
                doc.get("result")
                    .and_then(serde_json::Value::as_str)
                    .map_or_else(|| l.to_string(), str::to_string)
            });
        }
        let low = l.to_lowercase();
        ["error", "fatal", "failed", "exception", "panic"]
            .iter()
            .any(|w| low.contains(w))
            .then(|| l.to_string())
    })
}

/// An error line without what changes between runs: numbers, paths, hex ids, quoted values.
#[must_use]
pub fn normalise(error: &str) -> String {
    error
        .split_whitespace()
        .map(|w| {
            let bare = w.trim_matches(|c: char| !c.is_alphanumeric() && c != '/' && c != '.');
            // A path names something (`/tmp/x/42.log`); `0.5/10` is a figure.
            if bare.contains('/') && bare.chars().any(char::is_alphabetic) {
                "<path>".to_string()
            } else if bare.len() >= 6
                && bare.chars().all(|c| c.is_ascii_hexdigit())
                && bare.chars().any(|c| c.is_ascii_digit())
            {
                "<id>".to_string()
            } else if bare.chars().any(|c| c.is_ascii_digit()) {
                let mut out = String::new();
                for c in w.chars() {
                    if !c.is_ascii_digit() {
                        out.push(c);
                    } else if !out.ends_with('#') {
                        out.push('#');
                    }
                }
                out.to_lowercase()
            } else {
                w.to_lowercase()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The mean output (bytes) below which the shrinking breaker does not judge.
const MIN_OUTPUT: f64 = 1024.0;

/// The trend breakers' limits (0: off).
#[derive(Debug, Clone, Copy, Default)]
pub struct TrendLimits {
    /// Same error in this many runs in a row.
    pub repeated_errors: u32,
    /// Output shrinking by more than this percentage against the mean of the three before.
    pub shrink_percent: u32,
    /// Validation failures in a row.
    pub validation_failures: u32,
}

impl TrendLimits {
    /// The limits `[safety]` sets.
    #[must_use]
    pub fn of(s: &crate::config::Safety) -> TrendLimits {
        TrendLimits {
            repeated_errors: s.max_repeated_errors,
            shrink_percent: s.max_output_shrink_percent,
            validation_failures: s.max_validation_failures,
        }
    }
}

/// How a breaker stop tells the user to go on.
#[must_use]
pub fn how_to_continue(why: &str, topic: &str) -> String {
    format!(
        "{why}; fix the cause, then `studio-agents wiggum start {topic}` (add --reset-breaker to forget the breakers' history)"
    )
}

/// Record one agent run's error and output size; say which breaker trips, if one does.
pub fn record_run(
    t: &mut Trends,
    error: Option<&str>,
    output: u64,
    l: TrendLimits,
) -> Option<String> {
    t.errors.push_back(error.map(normalise).unwrap_or_default());
    let keep = l.repeated_errors.max(1) as usize;
    while t.errors.len() > keep {
        t.errors.pop_front();
    }
    if l.repeated_errors > 0
        && t.errors.len() == keep
        && !t.errors[0].is_empty()
        && t.errors.iter().all(|e| *e == t.errors[0])
    {
        return Some(format!(
            "the same error in {keep} runs in a row: {}",
            error.unwrap_or_default()
        ));
    }
    let before: Vec<u64> = t.outputs.iter().rev().take(3).copied().collect();
    t.outputs.push_back(output);
    while t.outputs.len() > 4 {
        t.outputs.pop_front();
    }
    if l.shrink_percent > 0 && before.len() == 3 {
        #[allow(clippy::cast_precision_loss)]
        let mean = before.iter().sum::<u64>() as f64 / 3.0;
        #[allow(clippy::cast_precision_loss)]
        let shrunk = (1.0 - output as f64 / mean) * 100.0;
        // Only output worth the name counts: a few bytes of noise shrinking to none is not a trend.
        if mean >= MIN_OUTPUT && shrunk > f64::from(l.shrink_percent) {
            return Some(format!(
                "the agent's output shrank by {shrunk:.0} % ({output} bytes against a mean of {mean:.0})"
            ));
        }
    }
    None
}

/// Record one validation result; say whether the breaker trips.
pub fn record_validation(t: &mut Trends, failed: bool, l: TrendLimits) -> Option<String> {
    t.validation_failures = if failed { t.validation_failures + 1 } else { 0 };
    (l.validation_failures > 0 && t.validation_failures >= l.validation_failures)
        .then(|| format!("validation failed {} times in a row", t.validation_failures))
}

/// What an iteration does with one agent run: the after-run policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AfterRun {
    /// A stop arrived during the run: record it as interrupted, discard it, end the loop.
    Interrupted,
    /// A crash with retries left: record it, discard it, run the iteration again afresh.
    Retry,
    /// A crash with no retries left: record it, discard it, end the loop with `breaker`.
    GiveUp(String),
    /// Nothing changed: record it; end the loop with `breaker` when that tripped it.
    NoChange(Option<String>),
    /// On to acceptance: validate, gate, commit.
    Accept,
}

/// Decide what follows an agent run, updating the breaker's counts (a stop does not count).
#[must_use]
pub fn after_run(
    breaker: &mut Breaker,
    stopped: bool,
    kind: RunKind,
    max_no_change: u32,
    max_retries: u32,
) -> AfterRun {
    if stopped {
        return AfterRun::Interrupted;
    }
    if kind == RunKind::OverCeiling {
        return AfterRun::GiveUp(
            "the agent's processes crossed the memory ceiling ([safety] max_memory_mb); a retry would cross it again".into(),
        );
    }
    match (kind, breaker.record(kind, max_no_change, max_retries)) {
        (_, Next::Retry) => AfterRun::Retry,
        (RunKind::Crashed, Next::Trip(why)) => AfterRun::GiveUp(why),
        (RunKind::NoChange, Next::Trip(why)) => AfterRun::NoChange(Some(why)),
        (RunKind::NoChange, _) => AfterRun::NoChange(None),
        _ => AfterRun::Accept,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_lines_are_found_and_normalised() {
        assert_eq!(
            last_error("ok\nError: timeout after 30s\nbye\n").as_deref(),
            Some("Error: timeout after 30s")
        );
        assert_eq!(last_error("all good\n"), None);
        // claude's result of a run that went well names `is_error`: no error for all that.
        let ok = r#"{"type":"result","subtype":"success","is_error":false,"result":"Added the section.","total_cost_usd":0.05}"#;
        assert_eq!(last_error(&format!("{ok}\n")), None);
        let failed = r#"{"type":"result","subtype":"error_during_execution","is_error":true,"result":"API Error: 500"}"#;
        assert_eq!(
            last_error(&format!("{failed}\n")).as_deref(),
            Some("API Error: 500")
        );
        assert_eq!(
            last_error("Error: disk full\n{\"type\":\"result\",\"is_error\":false}\n").as_deref(),
            Some("Error: disk full")
        );
        assert_eq!(
            normalise("Error: cannot open /tmp/x/42.log (request 9f8e7d6c5b, try 3)"),
            normalise("error: cannot open /var/y.log (request 0a1b2c3d4e, try 17)")
        );
        assert_ne!(
            normalise("Error: quota exceeded"),
            normalise("Error: network down")
        );
        // A score out of ten is a figure, not a path.
        assert_eq!(
            normalise("depth is 0.5/10: no example"),
            "depth is #.#/#: no example"
        );
    }

    #[test]
    fn the_trend_breakers() {
        let l = TrendLimits {
            repeated_errors: 3,
            shrink_percent: 70,
            validation_failures: 2,
        };
        let mut t = Trends::default();
        let e = |n: u32| format!("fatal: request {n} failed at /srv/{n}");
        assert_eq!(record_run(&mut t, Some(&e(1)), 1000, l), None);
        assert_eq!(record_run(&mut t, Some(&e(2)), 1000, l), None);
        let tripped = record_run(&mut t, Some(&e(3)), 1000, l).unwrap();
        assert!(
            tripped.contains("the same error in 3 runs in a row"),
            "{tripped}"
        );
        // A different error in between resets the run.
        let mut t = Trends::default();
        for (err, want) in [
            (Some("Error: a"), None),
            (None, None),
            (Some("Error: a"), None),
            (Some("Error: a"), None),
        ] {
            assert_eq!(record_run(&mut t, err, 1000, l), want);
        }
        // Shrinking: 3 runs of ~10 kB, then 2 kB (80 % less) trips; 4 kB (60 %) does not;
        // a few bytes shrinking to none is not judged.
        let mut t = Trends::default();
        for n in [10_000, 11_000, 9_000] {
            assert_eq!(record_run(&mut t, None, n, l), None);
        }
        assert_eq!(record_run(&mut t, None, 4_000, l), None);
        let mut t = Trends::default();
        for n in [10_000, 11_000, 9_000] {
            record_run(&mut t, None, n, l);
        }
        let shrank = record_run(&mut t, None, 2_000, l).unwrap();
        assert!(shrank.contains("shrank by 80 %"), "{shrank}");
        let mut t = Trends::default();
        for n in [30, 0, 30] {
            record_run(&mut t, None, n, l);
        }
        assert_eq!(record_run(&mut t, None, 0, l), None);
        // Validation failures in a row; a pass resets.
        let mut t = Trends::default();
        assert_eq!(record_validation(&mut t, true, l), None);
        assert_eq!(record_validation(&mut t, false, l), None);
        assert_eq!(record_validation(&mut t, true, l), None);
        assert!(
            record_validation(&mut t, true, l)
                .unwrap()
                .contains("2 times in a row")
        );
    }

    #[test]
    fn a_command_that_cannot_run_is_named() {
        let missing = Ending::Exited { code: 127 };
        for (tail, name) in [
            ("sh: 1: claudee: not found\n", "claudee"),
            ("bash: line 1: codexx: command not found\n", "codexx"),
            (
                "/usr/bin/env: 'python9': No such file or directory\n",
                "python9",
            ),
        ] {
            let why = cannot_run(missing, tail).unwrap();
            assert!(why.contains(&format!("`{name}` not found")), "{why}");
        }
        let denied = cannot_run(
            Ending::Exited { code: 126 },
            "sh: 1: ./agent.sh: Permission denied",
        );
        assert!(denied.unwrap().contains("`./agent.sh` cannot be executed"));
        assert_eq!(
            cannot_run(Ending::Exited { code: 1 }, "sh: 1: x: not found"),
            None
        );
        assert_eq!(cannot_run(missing, "the agent printed 127 things"), None);
    }

    #[test]
    fn the_after_run_policy() {
        use AfterRun as A;
        use RunKind::{Changed, Crashed, NoChange};
        // (counts before, stopped, kind) → (what follows, counts after); 3 idle, 2 retries.
        let crash_trip = "the agent crashed 3 times in a row on the same iteration";
        let idle_trip = "3 iterations in a row changed nothing";
        type Case = ((u32, u32), bool, RunKind, A, (u32, u32));
        let ceiling = "the agent's processes crossed the memory ceiling ([safety] max_memory_mb); a retry would cross it again";
        let cases: [Case; 10] = [
            (
                (1, 1),
                false,
                RunKind::OverCeiling,
                A::GiveUp(ceiling.into()),
                (1, 1),
            ),
            ((0, 0), true, Crashed, A::Interrupted, (0, 0)),
            ((2, 1), true, Changed, A::Interrupted, (2, 1)),
            ((0, 0), false, Changed, A::Accept, (0, 0)),
            ((2, 1), false, Changed, A::Accept, (0, 0)),
            ((0, 0), false, Crashed, A::Retry, (0, 1)),
            ((0, 1), false, Crashed, A::Retry, (0, 2)),
            ((0, 2), false, Crashed, A::GiveUp(crash_trip.into()), (0, 3)),
            ((1, 1), false, NoChange, A::NoChange(None), (2, 0)),
            (
                (2, 0),
                false,
                NoChange,
                A::NoChange(Some(idle_trip.into())),
                (3, 0),
            ),
        ];
        for ((no_change, crashes), stopped, kind, want, after) in cases {
            let mut b = Breaker { no_change, crashes };
            let got = after_run(&mut b, stopped, kind, 3, 2);
            assert_eq!(got, want, "{no_change}/{crashes} {stopped} {kind:?}");
            assert_eq!((b.no_change, b.crashes), after, "{kind:?}");
        }
    }

    fn base() -> Facts {
        Facts {
            max_iterations: 5,
            plan_remaining: 3,
            quality_threshold: 0.85,
            ..Facts::default()
        }
    }

    #[test]
    fn nothing_holds_on_a_fresh_loop() {
        assert_eq!(exit_reason(&base()), None);
    }

    #[test]
    fn each_condition_ends_the_loop_with_its_reason() {
        let cases: Vec<(Facts, StopReason)> = vec![
            (
                Facts {
                    stop_requested: true,
                    ..base()
                },
                StopReason::UserStop,
            ),
            (
                Facts {
                    promise_taken: Some("taken".into()),
                    ..base()
                },
                StopReason::Promise,
            ),
            (
                Facts {
                    plan_remaining: 0,
                    ..base()
                },
                StopReason::PlanEmpty,
            ),
            (
                Facts {
                    quality: Some(0.9),
                    ..base()
                },
                StopReason::ThresholdMet,
            ),
            (
                Facts {
                    budget: Some("cost budget: $10.00 spent of $10.00".into()),
                    ..base()
                },
                StopReason::Budget,
            ),
            (
                Facts {
                    iterations_done: 5,
                    ..base()
                },
                StopReason::MaxIterations,
            ),
        ];
        for (f, want) in cases {
            assert_eq!(exit_reason(&f).map(|r| r.0), Some(want), "{f:?}");
        }
    }

    #[test]
    fn the_iteration_limit_says_how_many_were_done() {
        for (done, max, said) in [(1, 1, "1 iteration done"), (5, 5, "5 iterations done")] {
            let f = Facts {
                iterations_done: done,
                max_iterations: max,
                ..base()
            };
            assert_eq!(exit_reason(&f).map(|r| r.1).as_deref(), Some(said));
        }
    }

    #[test]
    fn quality_below_threshold_does_not_stop() {
        assert_eq!(
            exit_reason(&Facts {
                quality: Some(0.84),
                ..base()
            }),
            None
        );
    }

    #[test]
    fn a_red_tree_holds_every_done_reason_but_not_the_limits() {
        let red = || Some("1 failing: test_add".to_string());
        for done in [
            Facts {
                plan_remaining: 0,
                red: red(),
                ..base()
            },
            Facts {
                promise_taken: Some("taken".into()),
                red: red(),
                ..base()
            },
            Facts {
                quality: Some(0.9),
                red: red(),
                ..base()
            },
        ] {
            assert_eq!(exit_reason(&done), None, "{done:?}");
        }
        let at_limit = Facts {
            plan_remaining: 0,
            iterations_done: 5,
            red: red(),
            ..base()
        };
        assert_eq!(exit_reason(&at_limit).unwrap().0, StopReason::MaxIterations);
    }

    #[test]
    fn an_answer_no_run_has_read_holds_every_done_reason_but_not_the_limits() {
        for done in [
            Facts {
                plan_remaining: 0,
                answer_waiting: true,
                ..base()
            },
            Facts {
                promise_taken: Some("taken".into()),
                answer_waiting: true,
                ..base()
            },
        ] {
            assert_eq!(exit_reason(&done), None, "{done:?}");
        }
        for (limit, want) in [
            (
                Facts {
                    iterations_done: 5,
                    ..base()
                },
                StopReason::MaxIterations,
            ),
            (
                Facts {
                    budget: Some("cost budget: $10.00 spent of $10.00".into()),
                    ..base()
                },
                StopReason::Budget,
            ),
            (
                Facts {
                    stop_requested: true,
                    ..base()
                },
                StopReason::UserStop,
            ),
        ] {
            let f = Facts {
                plan_remaining: 0,
                answer_waiting: true,
                ..limit
            };
            assert_eq!(exit_reason(&f).map(|r| r.0), Some(want), "{f:?}");
        }
    }

    #[test]
    fn a_user_stop_wins_over_everything() {
        let f = Facts {
            stop_requested: true,
            plan_remaining: 0,
            promise_taken: Some("taken".into()),
            ..base()
        };
        assert_eq!(exit_reason(&f).unwrap().0, StopReason::UserStop);
    }

    #[test]
    fn classify_runs() {
        let ok = Ending::Exited { code: 0 };
        let failed = Ending::Exited { code: 1 };
        for (ending, changed, want) in [
            (ok, true, RunKind::Changed),
            (ok, false, RunKind::NoChange),
            (failed, false, RunKind::Crashed),
            (failed, true, RunKind::Changed),
            (Ending::TimedOut, true, RunKind::Crashed),
            (Ending::Idle, false, RunKind::Crashed),
            (Ending::Signaled { signal: 9 }, true, RunKind::Crashed),
            (Ending::MemoryLimit, true, RunKind::OverCeiling),
            (Ending::OutputLimit, true, RunKind::Crashed),
        ] {
            assert_eq!(classify(ending, changed), want, "{ending:?} {changed}");
        }
    }

    #[test]
    fn three_idle_iterations_trip_the_breaker() {
        let mut b = Breaker::default();
        assert_eq!(b.record(RunKind::NoChange, 3, 2), Next::Proceed);
        assert_eq!(b.record(RunKind::NoChange, 3, 2), Next::Proceed);
        assert!(matches!(b.record(RunKind::NoChange, 3, 2), Next::Trip(_)));
    }

    #[test]
    fn a_change_resets_the_idle_count() {
        let mut b = Breaker::default();
        b.record(RunKind::NoChange, 3, 2);
        b.record(RunKind::NoChange, 3, 2);
        b.record(RunKind::Changed, 3, 2);
        assert_eq!(b.record(RunKind::NoChange, 3, 2), Next::Proceed);
    }

    #[test]
    fn crashes_retry_twice_then_trip() {
        let mut b = Breaker::default();
        assert_eq!(b.record(RunKind::Crashed, 3, 2), Next::Retry);
        assert_eq!(b.record(RunKind::Crashed, 3, 2), Next::Retry);
        assert!(matches!(b.record(RunKind::Crashed, 3, 2), Next::Trip(_)));
    }
}
