//! The completion block a loop's end prints (and `status`, `summary` and the dashboard's feed
//! repeat): what it did, in how long, at what cost, why it ended, where its result is, what is
//! left open and what to do next. Pure but for reading the records it is made from.

use std::path::PathBuf;

use super::{duration, program};
use crate::disk::layout::Layout;
use crate::disk::records::{Outcome, RecordKind};
use crate::disk::runlog;
use crate::disk::state::StopReason;

/// What the completion block says about a loop that ended.
#[derive(Debug, Clone)]
pub struct Completion {
    /// The loop's topic.
    pub topic: String,
    /// Iterations completed, and the limit.
    pub iterations: u32,
    /// The iteration the loop ended in the middle of (not completed), if it did.
    pub during: Option<u32>,
    /// `max_iterations`.
    pub max: u32,
    /// Built-in quality of the original artifact and of the final one.
    pub quality: (Option<f64>, Option<f64>),
    /// Why the quality did not move, when it did not ([`flat_note`]).
    pub flat: Option<String>,
    /// Wall time from start to end.
    pub elapsed_ms: u64,
    /// Spend as shown (`$1.2300`, `unknown`).
    pub cost: String,
    /// Why it ended, and the detail.
    pub reason: StopReason,
    /// The detail of the reason.
    pub detail: String,
    /// The final artifact, when an iteration was accepted.
    pub artifact: Option<PathBuf>,
    /// The iteration whose artifact it is, and how its gate judged it.
    pub best: Option<crate::disk::state::Best>,
    /// A code loop's last validation of its work tree.
    pub tests: Option<crate::disk::records::TreeValidation>,
    /// A code loop (the repository is the work: no document quality to show).
    pub code: bool,
    /// The loop's `STUDIO_AGENTS_HOME` when it is not the default one: the commands the block
    /// prints name it, so they work as printed from another shell.
    pub home: Option<PathBuf>,
    /// A question an agent asked that no one answered: the iteration that asked it, and what.
    pub question: Option<(u32, String)>,
    /// Earlier questions a newer one replaced, still open (`status` lists them).
    pub earlier: usize,
    /// Whether any iteration was committed (else there is nothing to diff or summarise).
    pub committed: bool,
    /// Whether any agent ran (planning or an iteration): else what ended the loop came before
    /// any, and no agent's words or another agent can help.
    pub agent_ran: bool,
    /// Paths rejected attempts changed that no commit took yet: left in the work tree, for the
    /// next accepted iteration to commit.
    pub uncommitted: usize,
}

/// The completion of a loop as its files and state hold it (quality of the original artifact
/// and of the final one, read up to 8 MiB each). Before an iteration was kept there is no
/// result: a file a run left where it goes is neither named nor measured.
#[must_use]
pub fn completion_of(
    layout: &Layout,
    st: &crate::disk::state::LoopState,
    kind: &crate::quality::types::ArtifactType,
    now: chrono::DateTime<chrono::Utc>,
) -> Option<Completion> {
    let kept = st.best.is_some() || st.last_committed_iteration > 0;
    let artifact = Some(layout.final_artifact()).filter(|a| kept && a.exists());
    let before = quality_of(&layout.original_artifact(), kind);
    let after = artifact.as_deref().and_then(|a| quality_of(a, kind));
    let flat = match (&before, &after) {
        (Some(b), Some(a)) => flat_note(b, a, st.last_gate_score),
        _ => None,
    };
    let end = if st.status().is_live() {
        now
    } else {
        st.stopped_at()
    };
    let (iterations, during, committed) = completed(layout, st.current_iteration);
    let questions = crate::disk::state::questions(layout);
    Some(Completion {
        topic: st.topic.clone(),
        iterations,
        during,
        max: st.max_iterations,
        quality: (before.map(|m| m.overall), after.map(|m| m.overall)),
        flat,
        elapsed_ms: st.elapsed_ms(end),
        cost: st.spend.shown(),
        reason: st.stop_reason()?,
        detail: st.stop_detail().unwrap_or_default().to_string(),
        artifact,
        best: st.best,
        tests: kind
            .writes_repository()
            .then(|| crate::ralph::work::read_tree(layout))
            .flatten(),
        code: kind.writes_repository(),
        home: crate::config::home_to_name(),
        // Answered is answered, whether or not a run has taken the answer yet.
        // As the supervisor keeps it, out of the agents' reach.
        question: questions
            .question
            .filter(|q| q.answer.is_none() && !layout.answer().exists())
            .map(|q| (q.iteration, q.text)),
        earlier: questions.earlier.len(),
        committed,
        agent_ran: iterations > 0 || during.is_some() || layout.agent_log(0).exists(),
        uncommitted: st.carried_paths.len(),
    })
}

/// Iterations the loop completed, the one it ended in the middle of (the last record of
/// iteration `current` says whether it ran to its end), and whether any iteration was committed.
fn completed(layout: &Layout, current: u32) -> (u32, Option<u32>, bool) {
    let mut last = None;
    let mut committed = false;
    let read = runlog::for_each(&layout.runs(), |r| {
        if r.record == RecordKind::Iteration {
            committed |= r.commit.is_some();
            if r.iteration == current {
                last = Some(r.outcome);
            }
        }
    });
    if read.is_err() {
        return (current, None, current > 0);
    }
    let (done, during) = done_of(current, last);
    (done, during, committed)
}

/// Iterations completed when iteration `current`'s last record (if any) has outcome `last`,
/// and the one not completed. Pure.
#[must_use]
pub fn done_of(current: u32, last: Option<Outcome>) -> (u32, Option<u32>) {
    match last {
        // An iteration that asked ran to its end: it counts toward the limit, and here.
        Some(
            Outcome::Accepted
            | Outcome::GateFailed
            | Outcome::Rejected
            | Outcome::NoChange
            | Outcome::Asked,
        ) => (current, None),
        _ if current > 0 => (current - 1, Some(current)),
        _ => (0, None),
    }
}

/// `3/10`, and `3/10 (iteration 4 was not completed)` for a loop that ended during one.
fn iterations_of(c: &Completion) -> String {
    let during = c.during.map_or(String::new(), |n| {
        format!(" (iteration {n} was not completed)")
    });
    format!("{}/{}{during}", c.iterations, c.max)
}

/// The built-in metrics of an artifact version as its type measures them, read up to 8 MiB;
/// `None` when it is missing, unreadable or larger.
#[must_use]
pub fn quality_of(
    path: &std::path::Path,
    kind: &crate::quality::types::ArtifactType,
) -> Option<crate::disk::records::Metrics> {
    let text = crate::sys::fsutil::read_capped(path, 8 << 20).ok()?;
    Some(crate::quality::metrics::compute_for(&text, kind))
}

/// When the built-in quality of the final artifact is that of the original (to two places),
/// which metric held it and why, and the gate's last score (which judges more than the
/// metrics): "no built-in metric moved: verification 0.00 (no claim backed by a link, a citation
/// or a quoted command), …; the gate's last score 6.0". Pure.
#[must_use]
pub fn flat_note(
    before: &crate::disk::records::Metrics,
    after: &crate::disk::records::Metrics,
    gate: Option<f64>,
) -> Option<String> {
    if (after.overall - before.overall).abs() >= 0.005 {
        return None;
    }
    let why = |name: &str, v: f64, low: &str| {
        if v < 0.5 {
            format!("{name} {v:.2} ({low})")
        } else {
            format!("{name} {v:.2}")
        }
    };
    let parts = [
        why(
            "completeness",
            after.completeness,
            "required sections missing or under 25 words",
        ),
        why(
            "verification",
            after.verification,
            "few claims backed by a link, a citation or a quoted command",
        ),
        why("clarity", after.clarity, "long sentences or paragraphs"),
        why(
            "actionability",
            after.actionability,
            "no concrete steps under a Recommendations or Next steps heading",
        ),
    ];
    let gate = gate.map_or(String::new(), |g| format!("; the gate's last score {g:.1}"));
    Some(format!(
        "no built-in metric moved: {}{gate}",
        parts.join(", ")
    ))
}

/// A stop reason in words.
#[must_use]
pub fn reason_words(r: StopReason) -> &'static str {
    match r {
        StopReason::PlanEmpty => "every item in fix_plan.md is done",
        StopReason::ThresholdMet => "the quality threshold was reached",
        StopReason::MaxIterations => "the iteration limit was reached",
        StopReason::Promise => "the agent said it is finished",
        StopReason::PromiseRejected => {
            "the agent claimed it was finished too often with work left (the claims were not taken)"
        }
        StopReason::UserStop => "stopped on request",
        StopReason::Budget => "the budget is spent",
        StopReason::Breaker => "a circuit breaker tripped",
        StopReason::Error => "an error ended it",
        StopReason::ValidationFailed => "the validation fails on the final tree",
    }
}

/// Lines of most failing output the completion block shows.
const BLOCK_FAILING_LINES: usize = 12;

/// A code loop's lines of the completion block: iterations (how many were red) and the tests
/// (green, or what fails and the first lines of its output).
fn tests_lines(c: &Completion, t: &crate::disk::records::TreeValidation) -> Vec<String> {
    let red = if t.red_iterations > 0 {
        format!(" (tests failing after {})", t.red_iterations)
    } else {
        String::new()
    };
    let mut out = vec![
        format!("  iterations  {}{red}", iterations_of(c)),
        format!("  tests       {}", t.tree.summary),
    ];
    if !t.tree.green {
        out.extend(
            t.tree
                .excerpt
                .lines()
                .take(BLOCK_FAILING_LINES)
                .map(|l| format!("              {}", crate::sys::term::printable(l))),
        );
    }
    out
}

/// Where the loop's result is and which iteration's artifact it is: `<dir>/wiggum/final/
/// artifact.md (iteration 3)`, and when its gate did not pass, that it did not (`(iteration 3;
/// its gate 6.7 did not pass 8.0)`); none before an iteration of a document loop was kept.
#[must_use]
pub fn result_of(st: &crate::disk::state::LoopState) -> Option<String> {
    let b = st.best?;
    let path = crate::disk::layout::result_path(&st.artifact_path);
    let gate = match b.score {
        Some(score) if !b.passed => format!("; its gate {score:.1} did not pass {:.1}", b.pass),
        _ => String::new(),
    };
    Some(format!(
        "{} (iteration {}{gate})",
        path.display(),
        b.iteration
    ))
}

/// The block's lines of the loop's result: the gate that never passed (the best it gave, and
/// what passes), and the final artifact with the iteration it is.
fn result_lines(c: &Completion) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(b) = c.best.filter(|b| !b.passed) {
        let score = b.score.map_or("-".into(), |s| format!("{s:.1}"));
        out.push(format!(
            "  gate        never passed: the best was {score}, iteration {} (pass {:.1})",
            b.iteration, b.pass
        ));
    }
    if let Some(a) = &c.artifact {
        let of = c
            .best
            .map_or(String::new(), |b| format!(" (iteration {})", b.iteration));
        out.push(format!("  artifact    {}{of}", a.display()));
    } else if !c.code && c.iterations > 0 {
        out.push("  artifact    none: no iteration was kept".to_string());
    }
    out
}

/// The block printed when a loop ends (and by `status` for an ended loop): why it ended, what
/// it measured, where its result is, what is left open, and what to do next.
#[must_use]
pub fn completion_block(c: &Completion) -> String {
    let mut out = vec![format!(
        "Loop `{}` ended: {}",
        c.topic,
        reason_words(c.reason)
    )];
    out.extend(measure_lines(c));
    out.extend(result_lines(c));
    if c.uncommitted > 0 {
        out.push(format!(
            "  uncommitted {} path{} rejected attempts changed, left in the work tree and not committed by the loop (`git status`; the next accepted iteration commits them)",
            c.uncommitted,
            if c.uncommitted == 1 { "" } else { "s" }
        ));
    }
    let sa = program(c.home.as_deref());
    out.extend(question_lines(c, &sa));
    out.push(next_line(c, &sa));
    out.join("\n")
}

/// The block's measures: the tests (a code loop that validates), else the iterations and, for
/// a document, its quality; then the time, the cost and the detail of the reason.
fn measure_lines(c: &Completion) -> Vec<String> {
    let q = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.2}"));
    let mut out = Vec::new();
    if let Some(t) = &c.tests {
        out.extend(tests_lines(c, t));
    } else {
        out.push(format!("  iterations  {}", iterations_of(c)));
        // A code loop without validation: no tests to show, and no document to measure.
        if !c.code {
            let quality = match c.quality {
                (Some(a), Some(b)) if a > 0.0 => format!(
                    "{} → {} ({:+.0}%)",
                    q(Some(a)),
                    q(Some(b)),
                    (b - a) / a * 100.0
                ),
                (a, b) => format!("{} → {}", q(a), q(b)),
            };
            out.push(format!("  quality     {quality}"));
            if let Some(flat) = &c.flat {
                out.push(format!("              {flat}"));
            }
        }
    }
    out.extend([
        format!("  time        {}", duration(c.elapsed_ms)),
        format!("  cost        {}", c.cost),
    ]);
    if !c.detail.is_empty() {
        out.push(format!("  reason      {}", c.detail));
    }
    out
}

/// The open question (and how many earlier ones are open), with how to answer it.
fn question_lines(c: &Completion, sa: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Some((n, q)) = &c.question {
        out.push(format!(
            "  question    open since {}: \"{}\"\n              answer: {sa} wiggum answer {} \"…\"",
            crate::disk::questions::asker_of(*n),
            crate::sys::term::printable(q),
            c.topic
        ));
    }
    if c.earlier > 0 {
        out.push(format!(
            "              and {} earlier question{} still open: {sa} wiggum status {}",
            c.earlier,
            if c.earlier == 1 { "" } else { "s" },
            c.topic
        ));
    }
    out
}

/// What to do next: start again once the question is answered or after a stop of the user's,
/// see to the reason when no agent ran, read what the last run said when nothing was committed,
/// else look at the result.
fn next_line(c: &Completion, sa: &str) -> String {
    let t = &c.topic;
    if !c.committed
        && let Some((n, _)) = &c.question
    {
        // The question is what holds the loop: once answered, a start goes on (past the limit
        // only when told to).
        let more = if c.reason == StopReason::MaxIterations {
            format!(" --max-iterations {}", c.max.max(*n) + 1)
        } else {
            String::new()
        };
        format!(
            "  next        {sa} wiggum start {t}{more}   (once answered: the next run reads it)"
        )
    } else if !c.committed && c.reason == StopReason::UserStop {
        // Stopped by the user before anything was kept: nothing is broken; a start goes on.
        format!(
            "  next        {sa} wiggum start {t}   (stopped before an iteration was kept: a start goes on)"
        )
    } else if !c.committed && !c.agent_ran {
        // Ended before any agent ran: the reason line says what to change; then start again.
        format!(
            "  next        {sa} wiggum start {t}   (no agent ran: see to the reason above, then start again)"
        )
    } else if !c.committed {
        // Nothing was committed to show a diff or a summary of: what fixes the cause instead —
        // planning's words when no iteration ran, else the last run's.
        let (logs, whose) = if c.iterations == 0 && c.during.is_none() {
            (" --planning", "what the agent said")
        } else {
            ("", "what the last run said")
        };
        format!(
            "  next        {sa} wiggum logs {t}{logs}   ({whose})\n              {sa} wiggum doctor   (what this machine enforces)\n              {sa} wiggum start {t} --agent NAME | --agent-cmd CMD   (another agent)"
        )
    } else {
        format!("  next        {sa} wiggum diff {t}\n              {sa} wiggum summary {t}")
    }
}
