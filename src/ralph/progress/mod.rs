//! Lines for people: one per planning run and iteration attempt, and the completion block when a
//! loop ends. Formatting is pure (table-tested below); `say` sends a line to stdout when the loop
//! runs in the foreground and to the log (`daemon.log`) when it is detached. The supervisor picks
//! the sink once, before the loop opens.

use std::sync::OnceLock;

use crate::disk::layout::Layout;
use crate::disk::records::{Outcome, RecordKind, RunRecord};
use crate::disk::runlog;
use crate::error::Result;

mod completion;

#[cfg(test)]
use completion::{Completion, done_of, flat_note};
pub use completion::{completion_block, completion_of, quality_of, reason_words, result_of};

/// Where human lines go, and the iteration limit shown as `i/N`.
#[derive(Debug, Clone, Copy)]
struct Sink {
    stdout: bool,
    max: u32,
}

static SINK: OnceLock<Sink> = OnceLock::new();

/// Send human lines to stdout (foreground) or to the log (detached). Set once per process.
pub fn init(stdout: bool, max_iterations: u32) {
    let _first = SINK.set(Sink {
        stdout,
        max: max_iterations,
    });
}

/// Print one human line (or block) where the supervisor said.
pub fn say(text: &str) {
    match SINK.get() {
        Some(s) if s.stdout => {
            use std::io::Write;
            // A closed stdout (`| head`) must not end the loop. What an agent wrote (a review's
            // line, a stop's detail) reaches the terminal without control sequences.
            let shown = crate::sys::term::printable(text);
            let _closed = writeln!(std::io::stdout().lock(), "{shown}");
        }
        _ => {
            for line in text.lines() {
                tracing::info!("{line}");
            }
        }
    }
}

/// Append a run record and say its line. `what` is what the iteration did (the commit subject).
pub fn record_and_say(layout: &Layout, rec: &RunRecord, what: Option<&str>) -> Result<()> {
    let mut rec = rec.clone();
    rec.what = what.map(str::to_string);
    let t = crate::sys::timing::step("records.run");
    runlog::record(layout, &rec)?;
    drop(t);
    let max = SINK.get().map_or(0, |s| s.max);
    say(&run_line(&rec, max, what));
    Ok(())
}

/// `12h38m`, `4m05s`, `8.2s`.
#[must_use]
pub fn duration(ms: u64) -> String {
    let secs = ms / 1000;
    match secs {
        0..60 => format!("{:.1}s", ms as f64 / 1000.0),
        60..3600 => format!("{}m{:02}s", secs / 60, secs % 60),
        _ => format!("{}h{:02}m", secs / 3600, (secs % 3600) / 60),
    }
}

/// `Iteration 3/10 ? asked: "Should I also update the migration?" · by codex · 8.2s · $0.12`:
/// a run that changed nothing and asked (the question bounded, without control characters).
#[must_use]
pub fn asked_line(r: &RunRecord, head: &str) -> String {
    let q = crate::agent::asked::bounded(
        r.question.as_deref().unwrap_or_default(),
        crate::agent::asked::MAX_QUESTION,
    );
    let mut parts = vec![format!("{head} ? asked: \"{q}\"")];
    if let Some(by) = &r.agent {
        parts.push(format!("by {by}"));
    }
    parts.push(duration(r.duration_ms));
    if let Some(c) = r.cost_usd {
        parts.push(format!("${c:.2}"));
    }
    parts.join(" · ")
}

/// `Iteration 2/10 ✓ accepted · gate 7.4 (r1 6.1, 2 rounds) · 8.2s · $0.12 · a1b2c3d "…"`.
#[must_use]
pub fn run_line(r: &RunRecord, max: u32, what: Option<&str>) -> String {
    let mut parts = Vec::new();
    let mark = match r.outcome {
        Outcome::Accepted | Outcome::Planned => "✓",
        Outcome::NoChange => "·",
        _ => "✗",
    };
    let head = match r.record {
        RecordKind::Planning => "Planning".to_string(),
        _ if max > 0 => format!("Iteration {}/{max}", r.iteration),
        _ => format!("Iteration {}", r.iteration),
    };
    let retry = if r.attempt > 1 {
        format!(" (attempt {})", r.attempt)
    } else {
        String::new()
    };
    if r.outcome == Outcome::Asked {
        return asked_line(r, &format!("{head}{retry}"));
    }
    let outcome = match (r.outcome, super::failure::label(r.agent_exit)) {
        (Outcome::Crashed, Some(limit)) => limit.to_string(),
        (Outcome::Accepted, _) if r.kept_failing() => "kept".to_string(),
        (o, _) => o.as_str().replace('_', " "),
    };
    parts.push(format!("{head}{retry} {mark} {outcome}"));
    if let Some(by) = &r.agent {
        parts.push(format!("by {by}"));
    }
    parts.extend(gate_part(r));
    parts.extend(r.original.clone());
    if let Some(l) = &r.lines {
        let files = if l.files == 1 { "file" } else { "files" };
        parts.push(format!("{} {files} +{} -{}", l.files, l.added, l.removed));
    }
    parts.push(duration(r.duration_ms));
    if let Some(c) = r.cost_usd {
        parts.push(format!("${c:.2}"));
    }
    if let Some(c) = &r.commit {
        let short = &c[..7.min(c.len())];
        parts.push(match what {
            Some(w) => format!("{short} \"{w}\""),
            None => short.to_string(),
        });
    } else if let Some(why) = r
        .validation_failed
        .as_deref()
        .filter(|_| r.outcome == Outcome::Rejected)
    {
        // Why it was rejected matters more than what the agent said it did.
        parts.push(why.lines().next().unwrap_or_default().to_string());
    } else if let Some(w) = what {
        parts.push(w.to_string());
    } else if let Some(note) = r.note.as_deref().or(r.validation_failed.as_deref()) {
        parts.push(note.lines().next().unwrap_or_default().to_string());
    }
    if let Some(v) = r
        .validation
        .as_ref()
        .filter(|_| r.outcome != Outcome::Rejected)
    {
        parts.push(format!("tests {}", v.summary));
    }
    if let Some(why) = &r.premature_promise {
        parts.push(format!("promise not taken: {why}"));
    }
    parts.join(" · ")
}

/// The gate's part of a run line: `gate 7.4 (r1 6.1, 2 rounds)`; for an iteration kept though
/// its gate did not pass, the loop's best and the score that passes: `gate 6.7 (best so far;
/// pass 8.0)`, `gate 5.2 (best 6.7, iteration 1; pass 8.0)`.
fn gate_part(r: &RunRecord) -> Option<String> {
    let g = r.gate.as_ref()?;
    let score = |s: Option<f64>| s.map_or("-".into(), |s| format!("{s:.1}"));
    // (An ERROR names itself below: its score is no measure of the best.)
    let failed = g.verdict == crate::gate::Verdict::Fail;
    if let Some(b) = r.best.filter(|_| failed && r.kept_failing()) {
        let best = if b.iteration == r.iteration {
            "best so far".to_string()
        } else {
            format!("best {}, iteration {}", score(b.score), b.iteration)
        };
        return Some(format!(
            "gate {} ({best}; pass {:.1})",
            score(g.final_score),
            b.pass
        ));
    }
    let r1 = g
        .wiggum_r1
        .map_or(String::new(), |s| format!("r1 {s:.1}, "));
    let rounds = if g.rounds == 1 { "round" } else { "rounds" };
    // A verdict other than PASS is named: an iteration the gate failed says so.
    let verdict = match g.verdict.as_str() {
        "PASS" => String::new(),
        v => format!(" {v}"),
    };
    Some(format!(
        "gate {}{verdict} ({r1}{} {rounds})",
        score(g.final_score),
        g.rounds
    ))
}

/// The program as the commands printed for people name it: `studio-agents`, or
/// `STUDIO_AGENTS_HOME=<home> studio-agents` when the home is not the default one
/// (`config::home_to_name`), so the command works as printed from another shell.
#[must_use]
pub fn program(home: Option<&std::path::Path>) -> String {
    match home {
        Some(h) => format!("STUDIO_AGENTS_HOME={} studio-agents", shell_word(h)),
        None => "studio-agents".to_string(),
    }
}
/// A path as a word of a shell command: as it is when nothing in it is special to `sh`, else
/// single-quoted.
#[must_use]
pub fn shell_word(p: &std::path::Path) -> String {
    let plain = p.to_str().is_some_and(|s| {
        s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,:@%".contains(c))
    });
    if plain {
        p.display().to_string()
    } else {
        crate::agent::spec::shell_quote(p)
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::disk::state::StopReason;

    #[test]
    fn durations_read_like_a_clock() {
        for (ms, want) in [
            (0, "0.0s"),
            (8_200, "8.2s"),
            (59_999, "60.0s"),
            (60_000, "1m00s"),
            (245_000, "4m05s"),
            (3_600_000, "1h00m"),
            (45_480_000, "12h38m"),
        ] {
            assert_eq!(duration(ms), want, "{ms}");
        }
    }

    fn rec(outcome: Outcome) -> RunRecord {
        let mut r = RunRecord::recovered(2, chrono::Utc::now(), None);
        r.record = RecordKind::Iteration;
        r.outcome = outcome;
        r.duration_ms = 8_200;
        r.note = None;
        r
    }

    #[test]
    fn an_iteration_line_says_outcome_gate_time_cost_and_commit() {
        let mut r = rec(Outcome::Accepted);
        r.cost_usd = Some(0.123);
        r.commit = Some("a1b2c3d4e5f6".into());
        r.gate = Some(
            serde_json::from_value(serde_json::json!({"final": "PASS", "termination": "pass",
                "rounds": 2, "wiggum_r1": 6.1, "final_score": 7.44, "best_round": 2,
                "wiggum_scores": {}, "issues": {}, "evaluator": "judge"}))
            .unwrap(),
        );
        assert_eq!(
            run_line(&r, 10, Some("Added evidence links")),
            "Iteration 2/10 ✓ accepted · gate 7.4 (r1 6.1, 2 rounds) · 8.2s · $0.12 · a1b2c3d \"Added evidence links\""
        );
        let mut bad = rec(Outcome::Crashed);
        bad.attempt = 2;
        bad.note = Some("crashed (it exited with code 3); retrying\nmore".into());
        assert_eq!(
            run_line(&bad, 0, None),
            "Iteration 2 (attempt 2) ✗ crashed · 8.2s · crashed (it exited with code 3); retrying"
        );
        assert_eq!(
            run_line(&rec(Outcome::NoChange), 5, None),
            "Iteration 2/5 · no change · 8.2s"
        );
        let mut asked = rec(Outcome::Asked);
        asked.question = Some("Should I also\n update the \u{1b}migration?".into());
        asked.agent = Some("codex".into());
        asked.cost_usd = Some(0.05);
        assert_eq!(
            run_line(&asked, 5, None),
            "Iteration 2/5 ? asked: \"Should I also update the migration?\" · by codex · 8.2s · $0.05"
        );
    }

    #[test]
    fn a_kept_iteration_whose_gate_did_not_pass_names_the_best_and_the_pass_score() {
        let gate = |verdict: &str, score: Option<f64>| {
            serde_json::from_value(serde_json::json!({"final": verdict, "termination":
                "rounds_exhausted", "rounds": 1, "wiggum_r1": score, "final_score": score,
                "best_round": 1, "wiggum_scores": {}, "issues": {}, "evaluator": "judge"}))
            .unwrap()
        };
        let best = |iteration, score| crate::disk::state::Best {
            iteration,
            score: Some(score),
            passed: false,
            pass: 8.0,
        };
        let mut r = rec(Outcome::Accepted);
        r.gate = Some(gate("FAIL", Some(6.71)));
        r.best = Some(best(2, 6.71));
        assert_eq!(
            run_line(&r, 10, None),
            "Iteration 2/10 ✓ kept · gate 6.7 (best so far; pass 8.0) · 8.2s"
        );
        r.gate = Some(gate("FAIL", Some(5.2)));
        r.best = Some(best(1, 6.71));
        assert_eq!(
            run_line(&r, 10, None),
            "Iteration 2/10 ✓ kept · gate 5.2 (best 6.7, iteration 1; pass 8.0) · 8.2s"
        );
        // The evaluator failed: the line says ERROR, not a best it cannot know.
        r.gate = Some(gate("ERROR", None));
        assert_eq!(
            run_line(&r, 10, None),
            "Iteration 2/10 ✓ kept · gate - ERROR (1 round) · 8.2s"
        );
        for (current, last, want) in [
            (4, Some(Outcome::Accepted), (4, None)),
            (4, Some(Outcome::Asked), (4, None)),
            (4, Some(Outcome::Interrupted), (3, Some(4))),
            (4, None, (3, Some(4))),
            (0, None, (0, None)),
        ] {
            assert_eq!(done_of(current, last), want, "{current} {last:?}");
        }
    }

    #[test]
    fn a_flat_quality_says_which_metric_held_it() {
        let m = |c, v, cl, a, o| crate::disk::records::Metrics {
            completeness: c,
            verification: v,
            clarity: cl,
            actionability: a,
            overall: o,
        };
        let before = m(0.07, 0.0, 1.0, 0.0, 0.22);
        assert_eq!(
            flat_note(&before, &m(0.07, 0.0, 1.0, 0.0, 0.222), Some(6.04)).as_deref(),
            Some(
                "no built-in metric moved: completeness 0.07 (required sections missing or under 25 words), verification 0.00 (few claims backed by a link, a citation or a quoted command), clarity 1.00, actionability 0.00 (no concrete steps under a Recommendations or Next steps heading); the gate's last score 6.0"
            )
        );
        assert_eq!(flat_note(&before, &m(0.5, 0.0, 1.0, 0.0, 0.4), None), None);
    }

    #[test]
    fn a_loop_that_ran_nothing_suggests_what_fixes_the_cause() {
        let c = Completion {
            topic: "t".into(),
            iterations: 0,
            during: None,
            max: 10,
            quality: (Some(0.2), None),
            flat: None,
            elapsed_ms: 100,
            cost: "unknown".into(),
            reason: StopReason::Breaker,
            detail: "planning wrote no items".into(),
            artifact: None,
            best: None,
            tests: None,
            code: false,
            home: None,
            question: None,
            earlier: 0,
            committed: false,
            agent_ran: true,
            uncommitted: 0,
        };
        let block = completion_block(&c);
        assert!(
            block.ends_with("  next        studio-agents wiggum logs t --planning   (what the agent said)\n              studio-agents wiggum doctor   (what this machine enforces)\n              studio-agents wiggum start t --agent NAME | --agent-cmd CMD   (another agent)"),
            "{block}"
        );
        assert!(!block.contains("wiggum diff"));
        // Ended before any agent ran (a validation command that cannot run): no agent's words
        // to read, no other agent to try; the reason line says what to change.
        let before_any = Completion {
            reason: StopReason::Error,
            detail: "`python3 -m nosuchmodule` cannot run: name a command that runs with `--validate CMD`".into(),
            agent_ran: false,
            uncommitted: 0,
            ..c.clone()
        };
        let block = completion_block(&before_any);
        assert!(
            block.ends_with("  next        studio-agents wiggum start t   (no agent ran: see to the reason above, then start again)"),
            "{block}"
        );
        assert!(
            !block.contains("wiggum logs") && !block.contains("--agent NAME"),
            "{block}"
        );
        // Iterations ran, none was committed (every one rejected): the last run's words, and
        // the work they left uncommitted.
        let rejected = Completion {
            iterations: 2,
            uncommitted: 3,
            ..c.clone()
        };
        assert!(
            completion_block(&rejected)
                .contains("  uncommitted 3 paths rejected attempts changed, left in the work tree"),
            "{}",
            completion_block(&rejected)
        );
        assert!(!completion_block(&c).contains("uncommitted"));
        assert!(
            completion_block(&rejected)
                .contains("  next        studio-agents wiggum logs t   (what the last run said)\n"),
            "{}",
            completion_block(&rejected)
        );
        // Stopped by the user before anything was kept: nothing to repair, a start goes on.
        let stopped = Completion {
            reason: StopReason::UserStop,
            ..rejected.clone()
        };
        let block = completion_block(&stopped);
        assert!(
            block.ends_with("  next        studio-agents wiggum start t   (stopped before an iteration was kept: a start goes on)")
                && !block.contains("doctor"),
            "{block}"
        );
        // A question holds the loop: no other agent nor the machine's sandbox is the cause; a
        // start once it is answered goes on, past the iteration limit when that ended it.
        for (reason, want) in [
            (
                StopReason::MaxIterations,
                "  next        studio-agents wiggum start t --max-iterations 2   (once answered: the next run reads it)",
            ),
            (
                StopReason::Breaker,
                "  next        studio-agents wiggum start t   (once answered: the next run reads it)",
            ),
        ] {
            let asked = Completion {
                iterations: 1,
                max: 1,
                reason,
                question: Some((1, "Tabs or spaces?".into())),
                ..c.clone()
            };
            let block = completion_block(&asked);
            assert!(block.ends_with(want), "{block}");
            assert!(
                !block.contains("doctor") && !block.contains("--agent NAME"),
                "{block}"
            );
        }
    }

    #[test]
    fn the_completion_block_names_quality_time_cost_reason_artifact_and_next_steps() {
        let c = Completion {
            topic: "research".into(),
            iterations: 3,
            during: None,
            max: 10,
            quality: (Some(0.40), Some(0.62)),
            flat: None,
            elapsed_ms: 45_480_000,
            cost: "unknown".into(),
            reason: StopReason::PlanEmpty,
            detail: "no open items".into(),
            artifact: Some("/a/wiggum/final/artifact.md".into()),
            best: None,
            tests: None,
            code: false,
            home: None,
            question: None,
            earlier: 0,
            committed: true,
            agent_ran: true,
            uncommitted: 0,
        };
        assert_eq!(
            completion_block(&c),
            "Loop `research` ended: every item in fix_plan.md is done\n  iterations  3/10\n  quality     0.40 → 0.62 (+55%)\n  time        12h38m\n  cost        unknown\n  reason      no open items\n  artifact    /a/wiggum/final/artifact.md\n  next        studio-agents wiggum diff research\n              studio-agents wiggum summary research"
        );
        let none = Completion {
            quality: (None, None),
            artifact: None,
            detail: String::new(),
            ..c
        };
        let block = completion_block(&none);
        assert!(block.contains("quality     - → -"), "{block}");
        assert!(
            block.contains("\n  artifact    none: no iteration was kept\n"),
            "{block}"
        );
        let nothing_ran = completion_block(&Completion {
            iterations: 0,
            ..none
        });
        assert!(!nothing_ran.contains("artifact"), "{nothing_ran}");
    }

    #[test]
    fn a_code_loop_s_block_shows_its_tests_not_a_document_s_quality() {
        let tree = crate::disk::records::TreeValidation {
            tree: crate::disk::records::ValidationShown {
                green: false,
                summary: "1 failing: test_calc.TestCalc.test_add".into(),
                failing: vec!["test_calc.TestCalc.test_add".into()],
                excerpt: "$ python3 -m unittest -q   (exited with code 1)\nFAIL: test_add (test_calc.TestCalc.test_add)\n\u{1b}]52;c;x\u{7}AssertionError: 5 != 4".into(),
            },
            after_iteration: 3,
            red_iterations: 2,
            validated: 3,
        };
        let c = Completion {
            topic: "calc".into(),
            iterations: 3,
            during: None,
            max: 10,
            quality: (None, None),
            flat: None,
            elapsed_ms: 4_000,
            cost: "unknown".into(),
            reason: StopReason::ValidationFailed,
            detail: String::new(),
            artifact: None,
            best: None,
            tests: Some(tree),
            code: true,
            home: None,
            question: None,
            earlier: 0,
            committed: true,
            agent_ran: true,
            uncommitted: 0,
        };
        assert_eq!(
            completion_block(&c),
            "Loop `calc` ended: the validation fails on the final tree\n  iterations  3/10 (tests failing after 2)\n  tests       1 failing: test_calc.TestCalc.test_add\n              $ python3 -m unittest -q   (exited with code 1)\n              FAIL: test_add (test_calc.TestCalc.test_add)\n              AssertionError: 5 != 4\n  time        4.0s\n  cost        unknown\n  next        studio-agents wiggum diff calc\n              studio-agents wiggum summary calc"
        );
    }

    #[test]
    fn the_next_commands_name_a_home_that_is_not_the_default() {
        let block = |home: &str| {
            completion_block(&Completion {
                topic: "demo".into(),
                iterations: 3,
                max: 10,
                quality: (None, None),
                flat: None,
                elapsed_ms: 4_000,
                cost: "unknown".into(),
                reason: StopReason::PlanEmpty,
                detail: String::new(),
                artifact: None,
                best: None,
                during: None,
                tests: None,
                code: true,
                home: Some(PathBuf::from(home)),
                question: None,
                earlier: 0,
                committed: true,
                agent_ran: true,
                uncommitted: 0,
            })
        };
        assert!(
            block("/tmp/tmp.x1/home").ends_with("  next        STUDIO_AGENTS_HOME=/tmp/tmp.x1/home studio-agents wiggum diff demo\n              STUDIO_AGENTS_HOME=/tmp/tmp.x1/home studio-agents wiggum summary demo"),
            "{}",
            block("/tmp/tmp.x1/home")
        );
        assert!(
            block("/tmp/my home")
                .contains("STUDIO_AGENTS_HOME='/tmp/my home' studio-agents wiggum diff demo"),
            "{}",
            block("/tmp/my home")
        );
    }

    #[test]
    fn a_question_left_open_is_in_the_block_with_how_to_answer_it() {
        let c = Completion {
            topic: "docs".into(),
            iterations: 3,
            during: None,
            max: 10,
            quality: (None, None),
            flat: None,
            elapsed_ms: 4_000,
            cost: "unknown".into(),
            reason: StopReason::PlanEmpty,
            detail: String::new(),
            artifact: None,
            best: None,
            tests: None,
            code: true,
            home: None,
            question: Some((2, "Should I also update the migration?\u{1b}[2J".into())),
            earlier: 2,
            committed: true,
            agent_ran: true,
            uncommitted: 0,
        };
        assert!(
            completion_block(&c).contains(
                "  question    open since iteration 2: \"Should I also update the migration?\"\n              answer: studio-agents wiggum answer docs \"…\"\n              and 2 earlier questions still open: studio-agents wiggum status docs\n"
            ),
            "{}",
            completion_block(&c)
        );
    }
}
