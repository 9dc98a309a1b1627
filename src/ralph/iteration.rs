//! One iteration: a fresh agent process on a fresh iteration directory, retried on a crash;
//! then validation, the gate and the commit; one run record per attempt.

use std::path::PathBuf;

use chrono::Utc;

use super::decide::{self, Next};
use super::driver::Loop;
use super::runner::{AgentRun, Phase};
use super::{accept, commit, fix_plan, promise, templates};
use crate::agent::process::{Ending, StopLevel};
use crate::disk::runlog::{self, Outcome, RunRecord};
use crate::disk::state::StopReason;
use crate::error::Result as Res;
use crate::sys::fsutil;

/// What the loop does next.
#[derive(Debug)]
pub enum Result {
    /// The iteration is over (accepted, rejected, or no change).
    Done,
    /// End the loop.
    Stop(StopReason, String),
}

fn record(run: &AgentRun, n: u32, attempt: u32, outcome: Outcome) -> RunRecord {
    RunRecord {
        record: "iteration".into(),
        iteration: n,
        attempt,
        started_at: run.started_at,
        ended_at: Utc::now(),
        duration_ms: u64::try_from((Utc::now() - run.started_at).num_milliseconds()).unwrap_or(0),
        agent_pid: Some(run.outcome.pid),
        agent_exit: Some(run.outcome.ending),
        timed_out: run.outcome.ending == Ending::TimedOut,
        cost_usd: run.report.cost_usd,
        tokens_in: run.report.tokens_in,
        tokens_out: run.report.tokens_out,
        files_changed: Vec::new(),
        commit: None,
        quality: None,
        validation_failed: None,
        gate: None,
        promise_seen: false,
        outcome,
        note: None,
    }
}

/// One line on how an iteration ended, for the log.
fn verdict_line(r: &RunRecord) -> String {
    let gate = r.gate.as_ref().map_or(String::new(), |g| {
        format!(
            ", gate {} {:.2} (r1 {:.2}, {} round(s))",
            g.verdict.as_str(),
            g.final_score.unwrap_or(0.0),
            g.wiggum_r1.unwrap_or(0.0),
            g.rounds
        )
    });
    let commit = r.commit.as_deref().map_or_else(
        || ", not committed".to_string(),
        |c| format!(", commit {}", &c[..8.min(c.len())]),
    );
    format!(
        "iteration {} {}: {} file(s) changed{gate}{commit}",
        r.iteration,
        r.outcome.as_str(),
        r.files_changed.len()
    )
}

/// Put `fix_plan.md` back as it was when the discarded attempt began (items it ticked were not
/// done, as far as the loop is concerned). Returns whether anything changed.
pub fn restore_plan(layout: &crate::disk::layout::Layout) -> Res<bool> {
    let Some(before) = fsutil::read_opt(&layout.plan_backup())? else {
        return Ok(false);
    };
    let now = fsutil::read_opt(&layout.fix_plan())?;
    let changed = now.as_deref() != Some(before.as_str());
    if changed {
        fsutil::atomic_write(&layout.fix_plan(), before.as_bytes())?;
        tracing::warn!("restored fix_plan.md as it was before the discarded attempt");
    }
    fsutil::remove_file_opt(&layout.plan_backup())?;
    Ok(changed)
}

/// Move iteration `n`'s directory into `wiggum/discarded/` as `iteration-NNN.<label>.<time>`:
/// evidence is kept, never committed, and out of the way of the next attempt.
pub fn move_aside(layout: &crate::disk::layout::Layout, n: u32, label: &str) -> Res<()> {
    let dir = layout.iteration_dir(n);
    if !dir.exists() {
        return Ok(());
    }
    let aside = layout.wiggum().join("discarded");
    fsutil::create_dir_all(&aside)?;
    let stamp = Utc::now().format("%Y%m%dT%H%M%S%.3f");
    let to = aside.join(format!(
        "{}.{label}.{stamp}",
        crate::disk::layout::iteration_dir_name(n)
    ));
    std::fs::rename(&dir, &to).map_err(|e| crate::error::Error::Io {
        path: dir,
        action: "move aside",
        source: e,
    })
}

/// An agent that deleted or emptied `fix_plan.md` while items were open has not finished the
/// plan: the plan is restored and the iteration rejected (instead of ending as `plan_empty`).
fn guard_plan(layout: &crate::disk::layout::Layout, plan_before: &str) -> Res<Option<String>> {
    let open = fix_plan::remaining(plan_before);
    let now = fsutil::read_opt(&layout.fix_plan())?;
    if open == 0 || now.as_deref().is_some_and(fix_plan::has_items) {
        return Ok(None);
    }
    fsutil::atomic_write(&layout.fix_plan(), plan_before.as_bytes())?;
    let what = if now.is_none() { "deleted" } else { "emptied" };
    Ok(Some(format!(
        "the agent {what} fix_plan.md while {open} item(s) were open; the plan was restored"
    )))
}

/// Discard an attempt: restore the plan it may have ticked and move its directory aside.
fn discard(lp: &Loop, n: u32, attempt: u32) -> Res<()> {
    restore_plan(&lp.runner.layout)?;
    move_aside(&lp.runner.layout, n, &format!("attempt-{attempt}"))
}

/// Run iteration `n` to its end.
pub async fn run(lp: &mut Loop, n: u32) -> Res<Result> {
    let layout = lp.runner.layout.clone();
    let dir = layout.iteration_dir(n);
    let mut attempt = 0;
    loop {
        attempt += 1;
        lp.runner.state.current_iteration = n;
        lp.runner.save()?;
        // A fresh directory, seeded with the artifact to build on.
        fsutil::remove_dir_all_opt(&dir)?;
        fsutil::create_dir_all(&dir)?;
        let seed = accept::seed_of(lp, n)?;
        if layout.original_artifact().exists() {
            fsutil::atomic_write(&dir.join("artifact.md"), seed.as_bytes())?;
        }
        let template = fsutil::read(&layout.memory("PROMPT.md"))?;
        let prompt = templates::render(&template, &templates::iteration_vars(n, &dir));
        let plan_before = fsutil::read_opt(&layout.fix_plan())?.unwrap_or_default();
        fsutil::atomic_write(&layout.plan_backup(), plan_before.as_bytes())?;
        let before = lp.repo.snapshot()?;
        let phase = Phase {
            name: "iteration",
            iteration: n,
            dir: &dir,
            stem: "prompt",
            stdout: None,
            temperature: None,
        };
        let agent = lp.agent.clone();
        let run = lp.runner.run_agent(&agent, &phase, &prompt).await?;
        let after = lp.repo.snapshot()?;
        let changed_paths = after.changed_paths(&before);
        let changed = after.changed_since(&before);
        if lp.runner.stop_level() >= StopLevel::Now {
            commit::carry(lp, &changed_paths);
            runlog::append(
                &layout.runs(),
                &record(&run, n, attempt, Outcome::Interrupted),
            )?;
            discard(lp, n, attempt)?;
            return Ok(Result::Stop(
                StopReason::UserStop,
                format!("stopped during iteration {n}"),
            ));
        }
        let kind = decide::classify(
            run.outcome.ending.success(),
            run.outcome.ending.killed(),
            !changed.is_empty(),
        );
        let next = lp.breaker.record(
            kind,
            lp.settings.safety.max_no_change_iterations,
            lp.settings.safety.max_crash_retries,
        );
        let mut rec = record(&run, n, attempt, Outcome::Crashed);
        rec.files_changed.clone_from(&changed);
        rec.promise_seen = promise::seen_count(
            run.report.promise_lines,
            &run.prompt,
            &lp.settings.defaults.promise,
        );
        match next {
            Next::Retry => {
                commit::carry(lp, &changed_paths);
                rec.note = Some(format!(
                    "crashed (it {}); retrying with a fresh process",
                    run.outcome.ending
                ));
                runlog::append(&layout.runs(), &rec)?;
                discard(lp, n, attempt)?;
                continue;
            }
            Next::Trip(why) if kind == decide::RunKind::Crashed => {
                commit::carry(lp, &changed_paths);
                rec.note = Some(why.clone());
                runlog::append(&layout.runs(), &rec)?;
                discard(lp, n, attempt)?;
                return Ok(Result::Stop(StopReason::Breaker, why));
            }
            _ => {}
        }
        lp.promise_seen = rec.promise_seen;
        if kind == decide::RunKind::NoChange {
            fsutil::remove_file_opt(&layout.plan_backup())?;
            rec.outcome = Outcome::NoChange;
            runlog::append(&layout.runs(), &rec)?;
            if let Next::Trip(why) = next {
                return Ok(Result::Stop(StopReason::Breaker, why));
            }
            return Ok(Result::Done);
        }
        accept_changes(lp, n, &dir, &plan_before, rec, &changed_paths).await?;
        return Ok(Result::Done);
    }
}

/// Record a rejected iteration: its work (the agent's changes and the iteration's directory)
/// stays in the tree, carried to the next commit.
fn reject(lp: &mut Loop, mut rec: RunRecord, why: String, changed: &[PathBuf]) -> Res<()> {
    let layout = lp.runner.layout.clone();
    tracing::warn!("iteration {} rejected: {why}", rec.iteration);
    commit::carry(lp, changed);
    let dir = layout.iteration_dir(rec.iteration);
    commit::carry(lp, &commit::loop_paths(&layout, false, Some(&dir)));
    lp.runner.save()?;
    rec.outcome = Outcome::Rejected;
    rec.validation_failed = Some(why);
    rec.ended_at = Utc::now();
    runlog::append(&layout.runs(), &rec)?;
    fsutil::remove_file_opt(&layout.plan_backup())
}

async fn accept_changes(
    lp: &mut Loop,
    n: u32,
    dir: &std::path::Path,
    plan_before: &str,
    mut rec: RunRecord,
    changed: &[PathBuf],
) -> Res<()> {
    let layout = lp.runner.layout.clone();
    if let Some(why) = guard_plan(&layout, plan_before)? {
        return reject(lp, rec, why, changed);
    }
    if let Some(why) = accept::validate(lp, dir).await? {
        return reject(lp, rec, why, changed);
    }
    let plan_after = fsutil::read_opt(&layout.fix_plan())?.unwrap_or_default();
    let claimed = fix_plan::newly_done(plan_before, &plan_after);
    let task = if claimed.is_empty() {
        lp.task.clone()
    } else {
        format!("{} — this iteration: {}", lp.task, claimed.join("; "))
    };
    let (gate, keep) = accept::gate(lp, n, dir, &task, changed).await?;
    if let Some(g) = &gate {
        lp.runner.state.last_scores = g.wiggum_scores.values().last().cloned().unwrap_or_default();
        lp.runner.state.last_gate_score = g.final_score;
    }
    rec.gate = gate;
    if let Some(text) = fsutil::read_opt(&dir.join("artifact.md"))? {
        rec.quality = Some(lp.measure(&text));
    }
    if keep {
        let review = fsutil::read_opt(&dir.join("review.md"))?;
        let fallback = claimed
            .first()
            .cloned()
            .unwrap_or_else(|| format!("{} files changed", rec.files_changed.len()));
        let msg = accept::commit_message(n, review.as_deref(), &fallback);
        crate::sys::failpoint::hit("before-commit")?;
        match commit::commit(lp, &msg, changed, Some(dir), dir).await? {
            commit::Committed::Rejected(why) => {
                return reject(lp, rec, why, changed);
            }
            done => rec.commit = done.sha(),
        }
        crate::sys::failpoint::hit("after-commit")?;
        lp.runner.state.last_committed_iteration = n;
        rec.outcome = Outcome::Accepted;
    } else {
        commit::carry(lp, changed);
        commit::carry(lp, &commit::loop_paths(&layout, false, Some(dir)));
        rec.outcome = Outcome::GateFailed;
    }
    lp.runner.state.items_remaining = Some(fix_plan::remaining(&plan_after));
    lp.runner.save()?;
    rec.ended_at = Utc::now();
    rec.duration_ms =
        u64::try_from((rec.ended_at - rec.started_at).num_milliseconds()).unwrap_or(0);
    tracing::info!("{}", verdict_line(&rec));
    runlog::append(&layout.runs(), &rec)?;
    fsutil::remove_file_opt(&layout.plan_backup())
}
