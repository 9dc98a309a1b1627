//! The completion promise is a claim the loop checks, not an order it obeys. A run that prints
//! the promise ends the loop only when `fix_plan.md` has no open item (optional sections aside),
//! the gate (when on) passed the iteration, and — where the loop asks for work (`[gate] target =
//! "diff"` or validation commands) — the run changed the artifact and its validation passed.
//! Otherwise the claim is recorded in the run record (`premature_promise`), the next agent is
//! told which items are open and why the claim was not taken, and the loop goes on; after
//! `[safety] max_premature_promises` such claims in a row it ends as `promise_rejected`.
//! `[defaults] promise_check = "trust"` takes every promise, as before.

use super::context::Loop;
use super::fix_plan;
use crate::config::{GateTarget, PromiseCheck};
use crate::disk::records::{Outcome, RunRecord, Verdict};
use crate::error::Result;
use crate::sys::fsutil;

/// What a claim is judged on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    /// The plan's open (required) items.
    pub open: Vec<String>,
    /// The gate's verdict on the iteration: `None` when the gate is off or did not run.
    pub gate_passed: Option<bool>,
    /// The gate is on (`[gate] target` is not `off`), whether or not it judged this run.
    pub gate_on: bool,
    /// The gate's final score, for people.
    pub gate_score: Option<f64>,
    /// The loop asks for work: `[gate] target = "diff"` or validation commands.
    pub work_required: bool,
    /// The run changed something (besides the loop's own files).
    pub changed: bool,
    /// Why the iteration was not accepted (validation, a hook, the plan guard), if it was not.
    pub rejected: Option<String>,
}

/// Whether a claim is taken: `Ok` with the grounds, for people, or why not. Pure.
pub fn judge(f: &Facts) -> std::result::Result<String, String> {
    let mut why = Vec::new();
    if !f.open.is_empty() {
        let shown: Vec<&str> = f.open.iter().take(5).map(String::as_str).collect();
        let more = f.open.len().saturating_sub(shown.len());
        why.push(format!(
            "{} plan item{} still open ({}{})",
            f.open.len(),
            if f.open.len() == 1 { " is" } else { "s are" },
            shown.join("; "),
            if more > 0 {
                format!("; and {more} more")
            } else {
                String::new()
            }
        ));
    }
    if f.gate_passed == Some(false) {
        why.push(match f.gate_score {
            Some(s) => format!("the gate did not pass the iteration (score {s:.2})"),
            None => "the gate did not pass the iteration".into(),
        });
    }
    if let Some(r) = &f.rejected {
        why.push(format!("the iteration was rejected ({r})"));
    }
    if f.work_required && !f.changed {
        why.push("the run changed nothing in the artifact".into());
    }
    if why.is_empty() {
        let gate = match (f.gate_passed, f.gate_score) {
            (Some(true), Some(s)) => format!("the gate passed the iteration ({s:.2})"),
            (Some(true), None) => "the gate passed the iteration".into(),
            _ if f.gate_on => "the gate had nothing to judge (the run changed nothing)".into(),
            _ => "the gate is off".into(),
        };
        Ok(format!(
            "the completion promise was taken: fix_plan.md has no open item and {gate}"
        ))
    } else {
        Err(why.join("; "))
    }
}

/// The facts of `rec`'s claim in loop `lp` (the plan read as the run left it).
fn facts(lp: &Loop, rec: &RunRecord) -> Result<Facts> {
    let plan = fsutil::read_opt(&lp.runner.layout.fix_plan())?.unwrap_or_default();
    let open = fix_plan::items_with(&plan, &lp.settings.defaults.optional_sections)
        .into_iter()
        .filter(|i| !i.done && !i.optional)
        .map(|i| i.text)
        .collect();
    let gate_on = lp.settings.gate.target != GateTarget::Off;
    let gate_passed = gate_on
        .then(|| rec.gate.as_ref().map(|g| g.verdict == Verdict::Pass))
        .flatten();
    Ok(Facts {
        open,
        gate_on,
        gate_passed,
        gate_score: rec.gate.as_ref().and_then(|g| g.final_score),
        work_required: lp.settings.gate.target == GateTarget::Diff
            || !lp.settings.validation.commands.is_empty(),
        changed: !rec.files_changed.is_empty(),
        rejected: (rec.outcome == Outcome::Rejected)
            .then(|| rec.validation_failed.clone().unwrap_or_default()),
    })
}

/// Judge the claim of the iteration whose record `rec` is about to be written: set what the
/// loop takes of it, note a claim not taken in the record and for the next agent.
pub fn check(lp: &mut Loop, rec: &mut RunRecord) -> Result<()> {
    lp.promise_taken = None;
    // The note was for this iteration's agent; a new one is written if this claim fails too.
    lp.runner.promise_note_told();
    if !rec.promise_seen {
        return Ok(());
    }
    if lp.settings.defaults.promise_check == PromiseCheck::Trust {
        lp.promise_taken = Some(
            "the completion promise was taken unchecked ([defaults] promise_check = \"trust\")"
                .into(),
        );
        return Ok(());
    }
    let f = facts(lp, rec)?;
    match judge(&f) {
        Ok(grounds) => {
            lp.runner.claim_taken();
            lp.promise_taken = Some(grounds);
        }
        Err(why) => {
            rec.premature_promise = Some(why.clone());
            let in_a_row = lp.runner.claim_not_taken(rec.iteration, &why);
            let max = lp.settings.safety.max_premature_promises;
            if max > 0 && in_a_row >= max {
                lp.promise_rejected = Some(format!(
                    "{in_a_row} completion claims in a row were not taken; the last: {why}"
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_is_taken_only_with_the_plan_done_and_the_gate_passed() {
        let done = Facts {
            gate_passed: Some(true),
            gate_score: Some(8.3),
            changed: true,
            ..Facts::default()
        };
        let open = |items: &[&str]| Facts {
            open: items.iter().map(|s| (*s).to_string()).collect(),
            ..done.clone()
        };
        let passed = "the completion promise was taken: fix_plan.md has no open item and the gate passed the iteration (8.30)";
        let table: Vec<(Facts, std::result::Result<&str, &str>)> = vec![
            (done.clone(), Ok(passed)),
            // The gate off: the plan decides.
            (
                Facts {
                    gate_passed: None,
                    ..done.clone()
                },
                Ok(
                    "the completion promise was taken: fix_plan.md has no open item and the gate is off",
                ),
            ),
            // The gate on, but a run that changed nothing gave it nothing to judge.
            (
                Facts {
                    gate_passed: None,
                    gate_on: true,
                    changed: false,
                    ..done.clone()
                },
                Ok(
                    "the completion promise was taken: fix_plan.md has no open item and the gate had nothing to judge (the run changed nothing)",
                ),
            ),
            (
                open(&["Add a test"]),
                Err("1 plan item is still open (Add a test)"),
            ),
            (
                open(&["a", "b", "c", "d", "e", "f"]),
                Err("6 plan items are still open (a; b; c; d; e; and 1 more)"),
            ),
            (
                Facts {
                    gate_passed: Some(false),
                    gate_score: Some(6.5),
                    ..done.clone()
                },
                Err("the gate did not pass the iteration (score 6.50)"),
            ),
            (
                Facts {
                    work_required: true,
                    changed: false,
                    ..done.clone()
                },
                Err("the run changed nothing in the artifact"),
            ),
            // Without a demand for work, a final run that only says so may claim.
            (
                Facts {
                    changed: false,
                    ..done.clone()
                },
                Ok(passed),
            ),
            (
                Facts {
                    rejected: Some("validation failed: make test".into()),
                    ..done.clone()
                },
                Err("the iteration was rejected (validation failed: make test)"),
            ),
            (
                Facts {
                    gate_passed: Some(false),
                    gate_score: None,
                    ..open(&["x"])
                },
                Err("1 plan item is still open (x); the gate did not pass the iteration"),
            ),
        ];
        for (f, want) in table {
            assert_eq!(
                judge(&f),
                want.map(str::to_string).map_err(str::to_string),
                "{f:?}"
            );
        }
    }
}
