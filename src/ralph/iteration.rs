//! One iteration: a fresh agent process on a fresh iteration directory, retried on a crash;
//! then validation, the gate and the commit; one run record per attempt.

use chrono::Utc;

use super::context::Loop;
use super::decide::{self, AfterRun};
use super::runner::RunSpec;
use super::{accept, commit, fallback, limits, named, promise, templates};
use crate::agent::launch::{AgentPhase, AgentRun};
use crate::agent::process::StopLevel;
use crate::disk::runlog::{Outcome, RecordKind, RunRecord};
use crate::disk::state::StopReason;
use crate::error::Result;
use crate::sys::fsutil;

/// What the loop does next.
#[derive(Debug)]
pub enum IterationEnd {
    /// The iteration is over (accepted, rejected, or no change).
    Done,
    /// End the loop.
    Stop(StopReason, String),
}

/// The record of an attempt; `by`: the fallback agent that ran it, if one did.
fn record(run: &AgentRun, by: Option<&str>, n: u32, attempt: u32, outcome: Outcome) -> RunRecord {
    let mut r = RunRecord::of_run(RecordKind::Iteration, n, attempt, &run.facts());
    r.outcome = outcome;
    r.agent = by.map(str::to_string);
    r.env_passed.clone_from(&run.env_names);
    r
}

fn stopped_now(lp: &Loop) -> bool {
    lp.runner.stop_level() >= StopLevel::Now
}

/// Put `fix_plan.md` back as it was when the discarded attempt began (items it ticked were not
/// done, as far as the loop is concerned). The version it replaces — which may hold edits a
/// person made meanwhile — is kept in `wiggum/discarded/`. Returns whether anything changed.
pub fn restore_plan(layout: &crate::disk::layout::Layout) -> Result<bool> {
    let Some(before) = fsutil::read_opt(&layout.plan_backup())? else {
        return Ok(false);
    };
    let now = fsutil::read_opt(&layout.fix_plan())?;
    let changed = now.as_deref() != Some(before.as_str());
    if changed {
        let mut kept = String::new();
        if let Some(now) = &now {
            let stamp = Utc::now().format("%Y%m%dT%H%M%S%.3f");
            let aside = layout.discarded().join(format!("fix_plan.md.{stamp}"));
            fsutil::create_dir_all(&layout.discarded())?;
            fsutil::atomic_write(&aside, now.as_bytes())?;
            kept = format!("; the version it replaced is kept as {}", aside.display());
        }
        fsutil::atomic_write(&layout.fix_plan(), before.as_bytes())?;
        tracing::warn!("restored fix_plan.md as it was before the discarded attempt{kept}");
    }
    fsutil::remove_file_opt(&layout.plan_backup())?;
    Ok(changed)
}

/// Move iteration `n`'s directory into `wiggum/discarded/` (and its records into the records'
/// `discarded/`) as `iteration-NNN.<label>.<time>`: evidence is kept, never committed, and out
/// of the way of the next attempt.
pub fn move_aside(layout: &crate::disk::layout::Layout, n: u32, label: &str) -> Result<()> {
    let stamp = Utc::now().format("%Y%m%dT%H%M%S%.3f").to_string();
    if layout.run_dir(n) != layout.iteration_dir(n) {
        move_dir(
            &layout.run_dir(n),
            &layout.discarded_records(),
            n,
            label,
            &stamp,
        )?;
    }
    move_dir(
        &layout.iteration_dir(n),
        &layout.discarded(),
        n,
        label,
        &stamp,
    )
}

fn move_dir(
    dir: &std::path::Path,
    aside: &std::path::Path,
    n: u32,
    label: &str,
    stamp: &str,
) -> Result<()> {
    let dir = dir.to_path_buf();
    if !dir.exists() {
        return Ok(());
    }
    fsutil::create_dir_all(aside)?;
    let to = aside.join(format!(
        "{}.{label}.{stamp}",
        crate::disk::layout::iteration_dir_name(n)
    ));
    fsutil::rename(&dir, &to)
}

/// Remove what is not a real directory on the way from `wiggum/` down to `dir` (a link or a file
/// an earlier agent left there), so the supervisor makes them again and writes into its own.
fn clear_planted(wiggum: &std::path::Path, dir: &std::path::Path) -> Result<()> {
    let mut on_the_way: Vec<&std::path::Path> = dir
        .ancestors()
        .take_while(|a| *a != wiggum && a.starts_with(wiggum))
        .collect();
    on_the_way.reverse();
    for a in on_the_way {
        let planted = std::fs::symlink_metadata(a).is_ok_and(|m| !m.is_dir());
        if planted {
            tracing::warn!(
                "{}: not a directory (a link or a file an agent left); removed and made again",
                a.display()
            );
            fsutil::remove_dir_all_opt(a)?;
        }
    }
    Ok(())
}

/// Discard an attempt: restore the plan it may have ticked and move its directory aside.
fn discard(lp: &Loop, n: u32, attempt: u32) -> Result<()> {
    restore_plan(&lp.runner.layout)?;
    move_aside(&lp.runner.layout, n, &format!("attempt-{attempt}"))
}

/// Before an attempt: the loop's own agent, or — while it waits on a usage limit — the first
/// fallback that does not (`ralph::fallback`); when every agent is limited, wait for the
/// earliest reset. `Some`: the loop was stopped while waiting.
pub(super) async fn pick_agent(lp: &mut Loop, n: u32) -> Result<Option<IterationEnd>> {
    let now = Utc::now();
    let st = &mut lp.runner.state;
    st.limited_agents = fallback::in_force(&st.limited_agents, now);
    let names: Vec<String> = lp.fallbacks.iter().map(|a| a.name.clone()).collect();
    let name = match fallback::choose(&lp.primary.name, &names, &st.limited_agents, now) {
        fallback::Choice::Run(name) => name,
        fallback::Choice::Wait(until, name) => {
            let reason = format!("every agent waits on a usage limit; `{name}` resets first");
            if lp.runner.wait_until(until, &reason).await? {
                return Ok(Some(IterationEnd::Stop(
                    StopReason::UserStop,
                    format!("stopped while waiting ({reason})"),
                )));
            }
            name
        }
    };
    if name == lp.agent.name {
        return Ok(None);
    }
    let next = if name == lp.primary.name {
        lp.primary.clone()
    } else {
        lp.fallbacks
            .iter()
            .find(|a| a.name == name)
            .cloned()
            .unwrap_or_else(|| lp.primary.clone())
    };
    let at = if n == 0 {
        "planning".to_string()
    } else {
        format!("iteration {n}")
    };
    let what = if next.name == lp.primary.name {
        format!("{at}: back to `{}`, its usage limit reset", next.name)
    } else {
        let until = lp
            .runner
            .state
            .limited_agents
            .get(&lp.agent.name)
            .map(|u| u.with_timezone(&chrono::Local).format("%H:%M").to_string())
            .unwrap_or_default();
        format!(
            "{at}: `{}` runs while `{}` waits on its usage limit (until {until})",
            next.name, lp.agent.name
        )
    };
    tracing::warn!("{what}");
    lp.runner.state.last_event = Some(what);
    // The producer of revisions follows the loop's agent unless [gate] producer names one.
    if lp.settings.gate.producer.is_none() {
        lp.producer = next.clone();
    }
    lp.runner.state.agent.clone_from(&next.name);
    lp.agent = next;
    Ok(None)
}

/// Run iteration `n` to its end.
pub async fn run(lp: &mut Loop, n: u32) -> Result<IterationEnd> {
    let layout = lp.runner.layout.clone();
    let dir = layout.iteration_dir(n);
    let mut attempt = 0;
    loop {
        attempt += 1;
        // A retry is an agent run like any other: none starts past a budget.
        if attempt > 1
            && let Some(why) = lp.budget_spent()
        {
            return Ok(IterationEnd::Stop(StopReason::Budget, why));
        }
        lp.runner.state.current_iteration = n;
        if !lp.fallbacks.is_empty()
            && let Some(stop) = pick_agent(lp, n).await?
        {
            return Ok(stop);
        }
        lp.runner.save()?;
        // A fresh directory, seeded with the artifact to build on; fresh records. A link or a
        // file an agent left where it (or a folder on the way) belongs is removed, not followed.
        clear_planted(&layout.wiggum(), &dir)?;
        fsutil::remove_dir_all_opt(&dir)?;
        fsutil::create_dir_all(&dir)?;
        let records = layout.run_dir(n);
        if records != dir {
            fsutil::remove_dir_all_opt(&records)?;
        }
        let seed = accept::seed_of(lp, n)?;
        if layout.original_artifact().exists() {
            fsutil::atomic_write(&layout.iteration_artifact(n), seed.as_bytes())?;
        }
        let template = fsutil::read(&layout.memory("PROMPT.md"))?;
        let mut prompt = templates::render(&template, &templates::iteration_vars(n, &dir));
        if let Some(note) = &lp.runner.state.promise_note {
            // Why the last agent's claim of completion was not taken, once.
            prompt.push_str(&format!(
                "\n\n## Your predecessor's claim was not taken\n\n{note}\n"
            ));
        }
        let plan_before = fsutil::read_opt(&layout.fix_plan())?.unwrap_or_default();
        fsutil::atomic_write(&layout.plan_backup(), plan_before.as_bytes())?;
        let before = lp.tracker.snapshot(&lp.repo)?;
        let named = named::Fingerprints::take(&plan_before, layout.root(), lp.repo.workdir());
        let phase = RunSpec {
            kind: AgentPhase::Iteration,
            iteration: n,
            dir: &records,
            work: &dir,
            stem: "prompt",
            stdout: None,
            temperature: None,
        };
        let agent = lp.agent.clone();
        let by = (agent.name != lp.primary.name).then(|| agent.name.clone());
        let run = lp.runner.run_agent(&agent, &phase, &prompt).await?;
        let after = lp.tracker.snapshot(&lp.repo)?;
        let changed_paths = after.changed_paths(&before);
        let raw = after.changed_since(&before);
        // Commits the agent made of its own work are progress, though they leave nothing dirty;
        // so are changes to files the plan names outside the artifact directory.
        let mut changed = raw.clone();
        if changed.is_empty() {
            changed.extend(
                named
                    .changed()
                    .into_iter()
                    .map(|p| format!("{p} (named in the plan)")),
            );
        }
        let tail = fsutil::read_tail(&run.log, 4096)?;
        let stopped = stopped_now(lp);
        let limit = (!run.outcome.ending.success() && !stopped)
            .then(|| {
                limits::recognise(
                    &tail,
                    &lp.settings.safety.limit_patterns,
                    &lp.settings.safety.fatal_patterns,
                    chrono::Utc::now(),
                )
            })
            .flatten();
        let facts = decide::Attempt {
            protected_changed: !run.protected_changed.is_empty(),
            ending: run.outcome.ending,
            tail: &tail,
            stopped,
            limit,
            output: std::fs::metadata(&run.log).map_or(0, |m| m.len()),
            progress: !changed.is_empty() || run.committed,
        };
        let safety = &lp.settings.safety;
        let ceilings = decide::AttemptLimits {
            trends: decide::TrendLimits::of(safety),
            max_no_change: safety.max_no_change_iterations,
            max_retries: safety.max_crash_retries,
        };
        if run.outcome.ending.success() {
            lp.runner.state.limit_waits = 0;
        }
        let verdict = decide::after_attempt(
            &facts,
            &mut lp.breaker,
            &mut lp.runner.state.trends,
            ceilings,
        );
        let mut rec = record(&run, by.as_deref(), n, attempt, verdict.outcome());
        rec.files_changed.clone_from(&raw);
        let next = match verdict {
            decide::Verdict::Rejected => {
                // Restored already; nothing of this attempt is trusted or carried to a commit.
                rec.protected_changed.clone_from(&run.protected_changed);
                rec.validation_failed = Some(format!(
                    "the agent changed protected files ({}); they were restored",
                    run.protected_changed.join(", ")
                ));
                super::progress::record_and_say(&layout, &rec, None)?;
                restore_plan(&layout)?;
                // The attempt is kept as evidence in `wiggum/discarded/`, out of the next one's
                // way.
                move_aside(&layout, n, "rejected")?;
                return Ok(IterationEnd::Done);
            }
            decide::Verdict::CannotRun(why) => {
                rec.files_changed.clear();
                rec.note = Some(why.clone());
                super::progress::record_and_say(&layout, &rec, None)?;
                discard(lp, n, attempt)?;
                return Ok(IterationEnd::Stop(StopReason::Error, why));
            }
            decide::Verdict::ProviderRefused(line) => {
                commit::carry(lp, &changed_paths);
                let why = format!("the agent's provider refused, waiting will not help: {line}");
                rec.note = Some(why.clone());
                super::progress::record_and_say(&layout, &rec, None)?;
                discard(lp, n, attempt)?;
                return Ok(IterationEnd::Stop(StopReason::Error, why));
            }
            decide::Verdict::Limited { until, what, line } => {
                commit::carry(lp, &changed_paths);
                let until = lp.runner.limit_until(until);
                rec.note = Some(format!("{what}: {line}"));
                super::progress::record_and_say(&layout, &rec, None)?;
                discard(lp, n, attempt)?;
                if lp.fallbacks.is_empty() {
                    let reason = format!("{what}, {}", lp.agent.name);
                    if lp.runner.wait_until(until, &reason).await? {
                        return Ok(IterationEnd::Stop(
                            StopReason::UserStop,
                            format!("stopped while waiting ({reason})"),
                        ));
                    }
                } else {
                    // Another agent runs meanwhile (the next attempt picks it); this one is
                    // limited until its reset.
                    lp.runner
                        .state
                        .limited_agents
                        .insert(lp.agent.name.clone(), until);
                }
                continue;
            }
            decide::Verdict::Trend(why) => {
                commit::carry(lp, &changed_paths);
                rec.note = Some(why.clone());
                super::progress::record_and_say(&layout, &rec, None)?;
                discard(lp, n, attempt)?;
                let why = decide::how_to_continue(&why, &lp.runner.topic);
                return Ok(IterationEnd::Stop(StopReason::Breaker, why));
            }
            decide::Verdict::Then(next) => next,
        };
        rec.files_changed.clone_from(&changed);
        rec.promise_seen = promise::seen_count(
            run.report.promise_lines,
            &run.prompt,
            &lp.settings.defaults.promise,
        );
        match next {
            AfterRun::Interrupted => {
                commit::carry(lp, &changed_paths);
                super::progress::record_and_say(&layout, &rec, None)?;
                discard(lp, n, attempt)?;
                let why = format!("stopped during iteration {n}");
                return Ok(IterationEnd::Stop(StopReason::UserStop, why));
            }
            AfterRun::Retry => {
                commit::carry(lp, &changed_paths);
                let what = super::failure::describe(run.outcome.ending, &tail)
                    .unwrap_or_else(|| format!("it {}", run.outcome.ending));
                rec.note = Some(format!("{what}; retrying with a fresh process"));
                super::progress::record_and_say(&layout, &rec, None)?;
                discard(lp, n, attempt)?;
            }
            AfterRun::GiveUp(why) => {
                commit::carry(lp, &changed_paths);
                let why = match super::failure::describe(run.outcome.ending, &tail) {
                    Some(last) => format!("{why}; the last: {last}"),
                    None => why,
                };
                rec.note = Some(why.clone());
                super::progress::record_and_say(&layout, &rec, None)?;
                discard(lp, n, attempt)?;
                return Ok(IterationEnd::Stop(StopReason::Breaker, why));
            }
            AfterRun::NoChange(trip) => {
                super::claim::check(lp, &mut rec)?;
                fsutil::remove_file_opt(&layout.plan_backup())?;
                super::progress::record_and_say(&layout, &rec, None)?;
                return Ok(trip.map_or(IterationEnd::Done, |why| {
                    IterationEnd::Stop(StopReason::Breaker, why)
                }));
            }
            AfterRun::Accept => {
                if let Some(why) =
                    accept::accept(lp, n, &dir, &plan_before, rec, &changed_paths).await?
                {
                    let why = decide::how_to_continue(&why, &lp.runner.topic);
                    return Ok(IterationEnd::Stop(StopReason::Breaker, why));
                }
                return Ok(IterationEnd::Done);
            }
        }
    }
}
