//! After an agent changed something: validate (backpressure), gate, and commit. Each step
//! decides from data and records what it saw.

use std::path::{Path, PathBuf};

use chrono::Utc;

use super::context::Loop;
use super::{commit, fix_plan, validation};
use crate::config::OnGateFail;
use crate::disk::runlog::{Outcome, RunRecord};
use crate::error::Result;
use crate::error::Result as Res;
use crate::gate::{GateRecord, Verdict};
use crate::sys::fsutil;

mod gate;

pub use gate::{gate, seed_of};

/// Run the loop's validation commands once, their output appended to `log`, around the same
/// check as an agent's run: what the tests ran (the agent's code) must not change the git files,
/// the loop's memory and records, the plan or the spec. What it changed is restored and named.
/// `n`: the iteration (0 outside one).
pub async fn run_validation(
    lp: &mut Loop,
    log: &Path,
    n: u32,
) -> Result<(validation::Results, Vec<String>)> {
    let layout = lp.runner.layout.clone();
    let work = if n == 0 {
        layout.wiggum()
    } else {
        layout.iteration_dir(n)
    };
    // What the supervisor holds is on disk first: any difference afterwards is the run's.
    lp.runner.save()?;
    let before = lp.runner.protected.before(&layout, &work);
    before.persist(layout.records())?;
    let plan = fsutil::read_opt(&layout.fix_plan()).ok().flatten();
    let setting = validation::Setting {
        commands: &lp.settings.validation.commands,
        safety: &lp.settings.safety,
        root: layout.root(),
        workdir: lp.repo.workdir(),
        limit: std::time::Duration::from_secs(lp.settings.validation.timeout_secs),
        junit: &lp.settings.validation.junit,
    };
    let results = validation::run(setting, &mut lp.runner.stops, log).await;
    let written = crate::disk::state::to_json(&lp.runner.state)?;
    let mut changed = before.restore_changes(&layout, written.as_bytes())?;
    super::guard::persist::clear(layout.records())?;
    if let Some(plan) = plan
        && fsutil::read_opt(&layout.fix_plan()).ok().flatten().as_ref() != Some(&plan)
    {
        fsutil::atomic_write(&layout.fix_plan(), plan.as_bytes())?;
        changed.push("wiggum/fix_plan.md".into());
    }
    for p in lp.spec.put_back()? {
        changed.push(
            p.strip_prefix(layout.root())
                .unwrap_or(&p)
                .display()
                .to_string(),
        );
    }
    if !changed.is_empty() {
        let what = format!(
            "the validation run changed {}; restored",
            changed.join(", ")
        );
        tracing::warn!("{what}");
        lp.runner.note_event(what);
    }
    Ok((results?, changed))
}

/// A required file the iteration did not leave, if any.
fn missing_required(lp: &Loop, n: u32) -> Option<String> {
    let root = lp.runner.layout.root();
    let dir = lp.runner.layout.iteration_dir(n);
    lp.settings.validation.required_files.iter().find_map(|f| {
        let rel = f.replace("{iteration_dir}", &dir.display().to_string());
        (!root.join(&rel).exists()).then(|| format!("required file {rel} is missing"))
    })
}

/// Validation, the backpressure: the required files, then the commands, judged as the loop's
/// kind of work judges them (`work::Kind::judge`). Records what it showed in `rec` and the
/// loop's books. Returns why the iteration is rejected, and the breaker's reason when
/// validation failures in a row tripped it.
async fn validate(
    lp: &mut Loop,
    n: u32,
    rec: &mut RunRecord,
    item_done: bool,
) -> Result<(Option<String>, Option<String>)> {
    let layout = lp.runner.layout.clone();
    let limits = super::decide::TrendLimits::of(&lp.settings.safety);
    if let Some(why) = missing_required(lp, n) {
        let tripped = super::decide::record_validation(lp.runner.trends(), true, limits);
        return Ok((Some(why), tripped));
    }
    if lp.settings.validation.commands.is_empty() {
        super::decide::record_validation(lp.runner.trends(), false, limits);
        return Ok((None, None));
    }
    let (results, tampered) = run_validation(lp, &layout.validation_log(n), n).await?;
    if !tampered.is_empty() {
        // The tests the agent wrote reached for what is not theirs: no result of theirs counts.
        let why = format!(
            "the validation run (the code under test) changed {}; they were restored",
            tampered.join(", ")
        );
        let tripped = super::decide::record_validation(lp.runner.trends(), true, limits);
        return Ok((Some(why), tripped));
    }
    let judgement = lp
        .work
        .judge(lp.validation.baseline.as_ref(), &results, item_done);
    rec.validation = Some(super::work::shown(&results));
    let summary = results.summary();
    lp.validation
        .iteration(results, judgement == validation::Judgement::Accept);
    lp.validation.save(&layout, n)?;
    let why = match judgement {
        validation::Judgement::Accept => None,
        validation::Judgement::Reject(why) => Some(why),
    };
    let tripped = super::decide::record_validation(lp.runner.trends(), why.is_some(), limits)
        .map(|t| format!("{t}; the last: {summary}"));
    Ok((why, tripped))
}

/// The commit message: `Wiggum iteration N: <first line of review.md>`.
#[must_use]
pub fn commit_message(n: u32, review: Option<&str>, fallback: &str) -> String {
    let first = review
        .and_then(|r| {
            r.lines()
                .map(|l| l.trim().trim_start_matches('#').trim())
                .find(|l| l.chars().any(|c| !c.is_control() && !c.is_whitespace()))
        })
        .unwrap_or(fallback);
    crate::git::subject::iteration(n, first)
}

/// An agent that deleted or emptied `fix_plan.md` while items were open has not finished the
/// plan: the plan is restored (instead of the loop ending as `plan_empty`); so is a plan grown
/// past what the loop reads (instead of the loop failing on it). After the
/// iteration's run the iteration is rejected; after a revision round it is only noted.
fn guard_plan(layout: &crate::disk::layout::Layout, plan_before: &str) -> Res<Option<String>> {
    let now = match fsutil::read_opt(&layout.fix_plan()) {
        Ok(now) => now,
        // A plan grown past what the loop reads is no plan it can go on with: put back too.
        Err(crate::error::Error::TooLarge { cap, .. }) => {
            fsutil::atomic_write(&layout.fix_plan(), plan_before.as_bytes())?;
            return Ok(Some(format!(
                "the agent made fix_plan.md larger than {cap} bytes, the most the loop reads of it; the plan was restored"
            )));
        }
        Err(e) => return Err(e),
    };
    // Items left in the plan (the usual case) are found at the first one; the open items before
    // are counted only when there are none now.
    if now.as_deref().is_some_and(fix_plan::has_items) {
        return Ok(None);
    }
    let open = fix_plan::remaining(plan_before);
    if open == 0 {
        return Ok(None);
    }
    fsutil::atomic_write(&layout.fix_plan(), plan_before.as_bytes())?;
    let what = if now.is_none() { "deleted" } else { "emptied" };
    Ok(Some(format!(
        "the agent {what} fix_plan.md while {open} item(s) were open; the plan was restored"
    )))
}

/// Record a rejected iteration: its work (the agent's changes and the iteration's directory)
/// stays in the tree, carried to the next commit; the plan items it ticked are open again (a
/// rejected iteration has done nothing as far as the loop is concerned).
fn reject(
    lp: &mut Loop,
    mut rec: RunRecord,
    why: String,
    changed: &[PathBuf],
    plan_before: &str,
) -> Res<()> {
    let layout = lp.runner.layout.clone();
    // The run line says it to people; the log keeps it.
    tracing::info!("iteration {} rejected: {why}", rec.iteration);
    reopen_ticked(&layout, plan_before)?;
    lp.validation.rejected = Some(why.clone());
    commit::carry(lp, changed);
    let dir = layout.iteration_dir(rec.iteration);
    commit::carry(
        lp,
        &commit::loop_paths(&layout, false, Some(&dir), std::iter::empty()),
    );
    lp.runner.save()?;
    rec.outcome = Outcome::Rejected;
    rec.validation_failed = Some(why);
    rec.ended_at = Utc::now();
    super::claim::check(lp, &mut rec)?;
    super::progress::record_and_say(&layout, &rec, None)?;
    crate::ralph::attempt_plan::forget(&layout)
}

/// Add `what` to the run record's note.
fn add_note(rec: &mut RunRecord, what: String) {
    rec.note = Some(match rec.note.take() {
        Some(note) => format!("{note}; {what}"),
        None => what,
    });
}

/// The protected files a revision round changed (restored), and why that rejects the
/// iteration; taken from the loop's books.
fn revision_tampered(lp: &mut Loop) -> Option<(Vec<String>, String)> {
    if lp.revision_tampered.is_empty() {
        return None;
    }
    let mut protected = std::mem::take(&mut lp.revision_tampered);
    protected.dedup();
    let why = format!(
        "in a revision round, the agent changed protected files ({}); they were restored",
        protected.join(", ")
    );
    Some((protected, why))
}

/// Commit a kept iteration: its subject from `review.md` (or the item it ticked, or its file
/// count), what the commit left out, a code loop's line counts. `Ok(what it did)`, or `Err(why)`
/// when a hook refused the commit (the iteration is then rejected).
async fn commit_kept(
    lp: &mut Loop,
    n: u32,
    rec: &mut RunRecord,
    changed: &[PathBuf],
    claimed: &[String],
) -> Res<std::result::Result<Option<String>, String>> {
    let review = fsutil::read_opt(&lp.runner.layout.review(n))?;
    let fallback = claimed
        .first()
        .cloned()
        .unwrap_or_else(|| match rec.files_changed.len() {
            1 => "1 file changed".to_string(),
            n => format!("{n} files changed"),
        });
    let msg = commit_message(n, review.as_deref(), &fallback);
    let what = msg.split_once(": ").map(|(_, w)| w.to_string());
    crate::sys::failpoint::hit("before-commit")?;
    // The loop's last commit before this one: what the iteration changed is counted from it,
    // an agent's own commits in between included.
    let since = lp.runner.last_accepted.clone();
    let committing = crate::sys::timing::step("commit");
    let committed = commit::commit(lp, &msg, changed, n).await?;
    drop(committing);
    match committed {
        commit::Committed::Rejected(why) => return Ok(Err(why)),
        done => rec.commit = done.sha(),
    }
    rec.left_out = std::mem::take(&mut lp.left_out);
    if lp.work == super::work::Kind::Code
        && let Some(sha) = &rec.commit
    {
        // The loop's own directory, as the repository names it.
        let loop_dir = lp
            .runner
            .layout
            .wiggum()
            .strip_prefix(lp.repo.workdir())
            .map(|p| format!("{}/", p.display()))
            .unwrap_or_else(|_| "wiggum/".into());
        rec.lines = Some(super::work::line_counts(
            &lp.repo.commit_patch_from(since.as_deref(), sha)?,
            &loop_dir,
        ));
        rec.since = since.filter(|s| lp.repo.first_parent(sha).as_deref() != Some(s.as_str()));
    }
    crate::sys::failpoint::hit("after-commit")?;
    lp.runner.committed_iteration(n);
    rec.outcome = Outcome::Accepted;
    Ok(Ok(what))
}

/// What an iteration's runs cost: its own run's and its revision rounds' that reported one
/// (`None` when none did). Pure.
#[must_use]
pub fn with_revisions(own: Option<f64>, revisions: &[Option<f64>]) -> Option<f64> {
    std::iter::once(own)
        .chain(revisions.iter().copied())
        .flatten()
        .fold(None, |sum, c| Some(sum.unwrap_or(0.0) + c))
}

/// The gate on iteration `n`, with what its revision rounds did said in `rec` (where their
/// document came from, a plan one of them deleted put back). `Ok(keep)`, or `Err(why)` when a
/// round changed protected files (the iteration is rejected).
async fn judged(
    lp: &mut Loop,
    n: u32,
    task: &str,
    changed: &[PathBuf],
    rec: &mut RunRecord,
    plan_after: &str,
) -> Res<std::result::Result<bool, String>> {
    lp.revision_tampered.clear();
    lp.revision_notes.clear();
    lp.revision_costs.clear();
    let judging = crate::sys::timing::step("gate");
    let (gate, keep) = gate(lp, n, task, changed).await?;
    drop(judging);
    rec.cost_usd = with_revisions(rec.cost_usd, &std::mem::take(&mut lp.revision_costs));
    for how in std::mem::take(&mut lp.revision_notes) {
        add_note(rec, how);
    }
    if let Some((protected, why)) = revision_tampered(lp) {
        rec.protected_changed = protected;
        rec.gate = gate;
        return Ok(Err(why));
    }
    // Revision rounds revise the artifact: a plan one of them deleted or emptied is put back as
    // the iteration's own run left it (else the next iteration would end the loop as done).
    if gate.is_some()
        && let Some(why) = guard_plan(&lp.runner.layout, plan_after)?
    {
        let why = format!("in a revision round, {why}");
        tracing::warn!("iteration {n}: {why}");
        add_note(rec, why);
    }
    if let Some(g) = &gate {
        lp.runner.gate_scored(g);
    }
    rec.gate = gate;
    Ok(Ok(keep))
}

/// Commit a kept iteration with the loop's result beside it (`Ok(what it did)`, `Err(why)` when
/// a hook refused the commit), or carry the work of one the gate's policy reverted to the next
/// commit.
async fn keep_or_carry(
    lp: &mut Loop,
    n: u32,
    dir: &Path,
    keep: bool,
    rec: &mut RunRecord,
    changed: &[PathBuf],
    claimed: &[String],
) -> Res<std::result::Result<Option<String>, String>> {
    if !keep {
        let layout = lp.runner.layout.clone();
        commit::carry(lp, changed);
        commit::carry(
            lp,
            &commit::loop_paths(&layout, false, Some(dir), std::iter::empty()),
        );
        rec.outcome = Outcome::GateFailed;
        return Ok(Ok(None));
    }
    let result = keep_result(lp, n, rec.gate.as_ref())?;
    let said = commit_kept(lp, n, rec, changed, claimed).await?;
    if said.is_ok()
        && let Some(best) = result
    {
        lp.runner.result_is(best);
        // The quality threshold is the result's to reach, not a kept iteration's that is not it.
        if best.iteration == n
            && let Some(q) = rec.quality
        {
            lp.runner.result_quality(q.overall);
        }
        let failed = rec
            .gate
            .as_ref()
            .is_some_and(|g| g.verdict != Verdict::Pass);
        rec.best = failed.then_some(best);
    }
    Ok(said)
}

/// A document loop's result after kept iteration `n` (`ralph::best`): its copy written before
/// the commit, so the commit takes it; recorded in the books once the commit is made.
fn keep_result(
    lp: &Loop,
    n: u32,
    gate: Option<&GateRecord>,
) -> Res<Option<crate::disk::state::Best>> {
    if !lp.work.seeds_artifact() {
        return Ok(None);
    }
    let next = super::best::candidate(n, gate, lp.settings.defaults.pass_threshold);
    let keep_best = lp.settings.gate.on_gate_fail == OnGateFail::KeepBest;
    let prev = lp.runner.state.best.as_ref();
    super::best::settle(&lp.runner.layout, &lp.repo, prev, next, keep_best).map(Some)
}

/// A code change the gate failed (a test deleted or skipped, a placeholder, a change past one
/// item's size) is not committed, whatever `on_gate_fail` keeps of a document: its first issue.
fn failed_review(lp: &Loop, gate: Option<&GateRecord>) -> Option<String> {
    let g = gate.filter(|g| lp.work == super::work::Kind::Code && g.verdict == Verdict::Fail)?;
    let issue = g
        .issues
        .values()
        .last()
        .and_then(|i| i.first())
        .cloned()
        .unwrap_or_default();
    Some(format!(
        "the review failed the change ({}): {issue}",
        g.final_score.map_or("-".into(), |s| format!("{s:.1}"))
    ))
}

/// A file the iteration changed past `[safety] max_file_mb`: the iteration is rejected naming
/// it (nothing reads it; no commit takes it).
fn too_large(lp: &Loop, changed: &[PathBuf]) -> Option<String> {
    let big = lp.repo.oversized(changed.iter().map(PathBuf::as_path));
    let (path, size) = big.first()?;
    let more = match big.len() {
        1 => String::new(),
        n => format!(" and {} more", n - 1),
    };
    Some(format!(
        "{} is {} MiB{more}, over [safety] max_file_mb ({}); it is not committed",
        path.display(),
        size >> 20,
        lp.settings.safety.max_file_mb
    ))
}

/// Open again the items the rejected run ticked (its other plan edits — new items — stay).
fn reopen_ticked(layout: &crate::disk::layout::Layout, plan_before: &str) -> Res<()> {
    let Some(now) = fsutil::read_opt(&layout.fix_plan())? else {
        return Ok(());
    };
    let claimed = fix_plan::newly_done(plan_before, &now);
    if claimed.is_empty() {
        return Ok(());
    }
    let reopened = fix_plan::reopen(&now, &claimed);
    tracing::info!(
        "the rejected iteration's ticks were taken back: {}",
        claimed.join("; ")
    );
    fsutil::atomic_write(&layout.fix_plan(), reopened.as_bytes())
}

/// Acceptance, in one place: the plan guard, validation (backpressure), the gate, the commit.
/// Records the iteration's run record whatever the outcome. Returns a breaker's reason when
/// validation failed too many times in a row.
pub async fn accept(
    lp: &mut Loop,
    n: u32,
    dir: &std::path::Path,
    plan_before: &str,
    mut rec: RunRecord,
    changed: &[PathBuf],
) -> Res<Option<String>> {
    let layout = lp.runner.layout.clone();
    if let Some(why) = guard_plan(&layout, plan_before)? {
        reject(lp, rec, why, changed, plan_before)?;
        return Ok(None);
    }
    if let Some(why) = too_large(lp, changed) {
        reject(lp, rec, why, changed, plan_before)?;
        return Ok(None);
    }
    let plan_after = fsutil::read_opt(&layout.fix_plan())?.unwrap_or_default();
    let claimed = fix_plan::newly_done(plan_before, &plan_after);
    let (failed, tripped) = validate(lp, n, &mut rec, !claimed.is_empty()).await?;
    if let Some(why) = failed {
        reject(lp, rec, why, changed, plan_before)?;
        return Ok(tripped);
    }
    lp.validation.rejected = None;
    let task = judged_task(&lp.task, &claimed);
    let keep = match judged(lp, n, &task, changed, &mut rec, &plan_after).await? {
        Ok(keep) => keep,
        Err(why) => {
            reject(lp, rec, why, changed, plan_before)?;
            return Ok(None);
        }
    };
    if let Some(why) = failed_review(lp, rec.gate.as_ref()) {
        reject(lp, rec, why, changed, plan_before)?;
        return Ok(None);
    }
    if lp.work.seeds_artifact()
        && let Some(text) = fsutil::read_opt(&layout.iteration_artifact(n))?
    {
        rec.quality = Some(lp.measure(&text));
    }
    let what = match keep_or_carry(lp, n, dir, keep, &mut rec, changed, &claimed).await? {
        Ok(what) => what,
        Err(why) => {
            reject(lp, rec, why, changed, plan_before)?;
            return Ok(None);
        }
    };
    let plan_after = if rec.outcome == Outcome::GateFailed {
        // Reverted by the gate's policy: as far as the loop is concerned it did nothing, and
        // the plan is as the iteration found it (an item it ticked, reworded or deleted is
        // open again).
        fsutil::atomic_write(&layout.fix_plan(), plan_before.as_bytes())?;
        fsutil::read_opt(&layout.fix_plan())?.unwrap_or_default()
    } else {
        plan_after
    };
    let (open, optional) =
        fix_plan::open_counts(&plan_after, &lp.settings.defaults.optional_sections);
    lp.runner.plan_counts(open, Some(optional));
    lp.runner.save()?;
    rec.ended_at = Utc::now();
    rec.duration_ms =
        u64::try_from((rec.ended_at - rec.started_at).num_milliseconds()).unwrap_or(0);
    super::claim::check(lp, &mut rec)?;
    super::progress::record_and_say(&layout, &rec, what.as_deref())?;
    crate::ralph::attempt_plan::forget(&layout)?;
    Ok(None)
}

/// The task the judge reads: the loop's, and the plan items the iteration ticked. Joined by
/// words of no weight ("this time"), so the heuristic judge does not ask a document to name the
/// loop's own vocabulary ("iteration").
fn judged_task(task: &str, claimed: &[String]) -> String {
    if claimed.is_empty() {
        task.to_string()
    } else {
        format!("{task} — this time: {}", claimed.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_judged_task_adds_the_ticked_items_and_no_term_of_the_loops_own() {
        let task = "Caching in the HTTP client";
        assert_eq!(judged_task(task, &[]), task);
        let claimed = ["add the ETag section".to_string()];
        let judged = judged_task(task, &claimed);
        assert!(judged.contains("ETag section"), "{judged}");
        let keys = |t: &str| {
            let mut k: Vec<String> = crate::quality::terms::of_task(t)
                .into_iter()
                .map(|t| t.key)
                .collect();
            k.sort();
            k
        };
        let mut want = keys(&format!("{task} {}", claimed[0]));
        want.dedup();
        assert_eq!(keys(&judged), want, "{judged}");
        assert!(!keys(&judged).iter().any(|k| k.starts_with("iterat")));
    }

    /// The own run's cost, the revisions', what the iteration cost.
    type CostCase<'a> = (Option<f64>, &'a [Option<f64>], Option<f64>);

    #[test]
    fn an_iterations_cost_is_its_runs_own_and_its_revisions() {
        let cases: &[CostCase<'_>] = &[
            (Some(0.05), &[], Some(0.05)),
            (Some(0.05), &[Some(0.05), Some(0.05)], Some(0.15)),
            // What reported nothing adds nothing; nothing reported anywhere is unknown.
            (None, &[Some(0.05), None], Some(0.05)),
            (None, &[None], None),
            (None, &[], None),
        ];
        for (own, revisions, want) in cases {
            let got = with_revisions(*own, revisions);
            assert!(
                got.zip(*want)
                    .map_or(got == *want, |(g, w)| (g - w).abs() < 1e-9),
                "{own:?} {revisions:?}: {got:?}"
            );
        }
    }

    #[test]
    fn commit_message_uses_the_first_line_of_the_review() {
        assert_eq!(
            commit_message(3, Some("\n# Added evidence links\nbecause"), "x"),
            "Wiggum iteration 3: Added evidence links"
        );
        assert_eq!(
            commit_message(1, None, "2 files changed"),
            "Wiggum iteration 1: 2 files changed"
        );
        assert_eq!(
            commit_message(1, Some("   \n"), "fb"),
            "Wiggum iteration 1: fb"
        );
    }
}
