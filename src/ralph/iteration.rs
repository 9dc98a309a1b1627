//! One iteration: a fresh agent process on a fresh iteration directory, retried on a crash;
//! then validation, the gate and the commit; one run record per attempt.

use chrono::Utc;

use super::context::Loop;
use super::decide::dispose::{Aside, Context, Disposition, RunPhase, Then, dispose};
use super::decide::{self};
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
    let Some(before) = super::attempt_plan::kept(layout)? else {
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
    super::attempt_plan::forget(layout)?;
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
    lp.runner.limits_in_force(|l| fallback::in_force(l, now));
    let names: Vec<String> = lp.fallbacks.iter().map(|a| a.name.clone()).collect();
    let limited = &lp.runner.state.limited_agents;
    let name = match fallback::choose(&lp.primary.name, &names, limited, now) {
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
    lp.runner.note_event(what);
    // The producer of revisions follows the loop's agent unless [gate] producer names one.
    if lp.settings.gate.producer.is_none() {
        lp.producer = next.clone();
    }
    lp.runner.agent_runs(&next.name);
    lp.agent = next;
    Ok(None)
}

/// The prompt of iteration `n`: `PROMPT.md` rendered, then what the last runs left to say —
/// why a claim of completion was not taken (once), the failing validation output while the
/// work tree is red, and the question an agent asked with its answer (or that none came yet).
fn prompt_of(lp: &Loop, n: u32, dir: &std::path::Path) -> Result<String> {
    let layout = &lp.runner.layout;
    let template = fsutil::read(&layout.memory("PROMPT.md"))?;
    let mut prompt = templates::render(&template, &templates::iteration_vars(n, dir));
    if let Some(note) = &lp.runner.state.promise_note {
        prompt.push_str(&format!(
            "\n\n## Your predecessor's claim was not taken\n\n{note}\n"
        ));
    }
    if let Some(failing) = lp
        .validation
        .prompt_section(lp.validation.rejected.as_deref())
    {
        prompt.push_str(&failing);
    }
    let st = &lp.runner.state;
    for q in st.answered.iter().chain(&st.earlier).chain(&st.question) {
        prompt.push_str(&super::asking::prompt_section(q));
    }
    Ok(prompt)
}

/// What one attempt saw: its run, the paths it changed (to carry), the files it changed as
/// records name them (with files the plan names, when it changed nothing else), its log's end.
struct Seen {
    run: AgentRun,
    by: Option<String>,
    changed_paths: Vec<std::path::PathBuf>,
    raw: Vec<String>,
    changed: Vec<String>,
    tail: String,
    /// The spec files the agent edited, put back.
    put_back: Option<String>,
    /// What it asked instead of working, if it did (`agent::asked`).
    question: Option<String>,
    /// What became of the agent's edit of the original artifact, if it made one.
    original: Option<String>,
}

/// What the iteration does after an attempt was settled.
enum Flow {
    /// Run the iteration again (a retry, or after a wait).
    Again,
    /// The iteration is over.
    End(IterationEnd),
}

/// Run iteration `n` to its end: attempts until one is settled as more than a retry. Each
/// attempt is a list of steps — choose the agent, lay out the directory and the prompt, run,
/// see what changed, decide (pure), carry the decision out.
pub async fn run(lp: &mut Loop, n: u32) -> Result<IterationEnd> {
    let _t = crate::sys::timing::step("iteration");
    let mut attempt = 0;
    loop {
        attempt += 1;
        // A retry is an agent run like any other: none starts past a budget.
        if attempt > 1
            && let Some(why) = lp.budget_spent()
        {
            return Ok(IterationEnd::Stop(StopReason::Budget, why));
        }
        lp.runner.at_iteration(n);
        if !lp.fallbacks.is_empty()
            && let Some(stop) = pick_agent(lp, n).await?
        {
            return Ok(stop);
        }
        // The iteration's number and agent are saved with its run's start (one save less an
        // iteration); answers taken from their file are saved as they are taken.
        super::asking::take_answer(lp)?;
        let laying = crate::sys::timing::step("iteration.lay_out");
        let prompt = lay_out(lp, n)?;
        drop(laying);
        let plan_before = fsutil::read_opt(&lp.runner.layout.fix_plan())?.unwrap_or_default();
        super::attempt_plan::keep(&lp.runner.layout, &plan_before)?;
        let seen = attempt_run(lp, n, &prompt, &plan_before).await?;
        let progress = !seen.changed.is_empty() || seen.run.committed;
        let asked = seen.question.is_some();
        let verdict = weigh(lp, &seen.run, &seen.tail, progress, asked, false);
        let mut rec = record(&seen.run, seen.by.as_deref(), n, attempt, verdict.outcome());
        rec.original.clone_from(&seen.original);
        if matches!(verdict, decide::Verdict::Then(_)) {
            rec.files_changed.clone_from(&seen.changed);
            rec.promise_seen = promise::seen_count(
                seen.run.report.promise_lines,
                &seen.run.prompt,
                &lp.settings.defaults.promise,
            );
        } else {
            rec.files_changed.clone_from(&seen.raw);
        }
        let failure = super::failure::describe(seen.run.outcome.ending, &seen.tail);
        let ended = seen.run.outcome.ending.to_string();
        let ctx = Context {
            topic: &lp.runner.topic,
            failure: failure.as_deref(),
            ended: &ended,
            protected: &seen.run.protected_changed,
        };
        let d = dispose(verdict, RunPhase::Iteration(n), ctx);
        match settle(lp, n, attempt, rec, d, &seen, &plan_before).await? {
            Flow::Again => {}
            Flow::End(end) => {
                if matches!(end, IterationEnd::Done) {
                    lp.runner.answer_told();
                }
                return Ok(end);
            }
        }
    }
}

/// A fresh directory, seeded with the artifact to build on (documents); fresh records; the
/// prompt. A link or a file an agent left where the directory (or a folder on the way) belongs
/// is removed, not followed.
fn lay_out(lp: &Loop, n: u32) -> Result<String> {
    let layout = &lp.runner.layout;
    let dir = layout.iteration_dir(n);
    super::earlier::clear_planted(&layout.wiggum(), &dir)?;
    fsutil::remove_dir_all_opt(&dir)?;
    fsutil::create_dir_all(&dir)?;
    let records = layout.run_dir(n);
    if records != dir {
        fsutil::remove_dir_all_opt(&records)?;
    }
    if lp.work.seeds_artifact() && layout.original_artifact().exists() {
        let seed = accept::seed_of(lp, n)?;
        fsutil::atomic_write(&layout.iteration_artifact(n), seed.as_bytes())?;
    }
    prompt_of(lp, n, &dir)
}

/// Run the agent between two snapshots of the work tree (the first taken while its process
/// starts: nothing of its command runs before).
async fn attempt_run(lp: &mut Loop, n: u32, prompt: &str, plan_before: &str) -> Result<Seen> {
    let layout = lp.runner.layout.clone();
    let records = layout.run_dir(n);
    let dir = layout.iteration_dir(n);
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
    let seeds = lp.work.seeds_artifact();
    let (tracker, repo) = (&mut lp.tracker, &lp.repo);
    let mut held = None;
    let mut before_gate = || {
        let snap = crate::sys::timing::step("snapshot");
        let before = tracker.snapshot(repo)?;
        drop(snap);
        let named = named::Fingerprints::take(plan_before, layout.root(), repo.workdir());
        let original = super::original::hold(&layout, n, seeds)?;
        held = Some((before, named, original));
        Ok(())
    };
    let timed = crate::sys::timing::step("run_agent");
    let mut run = lp
        .runner
        .run_agent(&agent, &phase, prompt, &mut before_gate)
        .await?;
    drop(timed);
    let Some((before, named, original)) = held else {
        return Err(crate::error::Error::runtime(
            "the run ended without its start being recorded",
        ));
    };
    crate::sys::failpoint::hit("after-run")?;
    let original = super::original::put_back(&layout, n, original, true, lp.take_cap())?;
    let put_back = put_back_spec(lp)?;
    let (changed_paths, raw, changed) = changes_of(lp, n, &before, &named, &mut run)?;
    let tail = fsutil::read_tail(&run.log, 4096)?;
    let report = &run.report;
    let question = crate::agent::asked::asked(
        agent.table.output_format,
        &report.text,
        &tail,
        &report.denials,
        prompt,
    );
    Ok(Seen {
        tail,
        question,
        changed_paths,
        raw,
        changed,
        by,
        run,
        put_back,
        original,
    })
}

/// What the run changed: the paths it touched since `before` (the loop's earlier iterations put
/// back first, and said), the commits it made of its own since the loop's last, and — when it
/// changed nothing else — the files the plan names that it changed. The paths, their names as
/// the records keep them, and what counts as its change.
fn changes_of(
    lp: &mut Loop,
    n: u32,
    before: &crate::git::Snapshot,
    named: &named::Fingerprints,
    run: &mut AgentRun,
) -> Result<(Vec<std::path::PathBuf>, Vec<String>, Vec<String>)> {
    let layout = lp.runner.layout.clone();
    let snap = crate::sys::timing::step("snapshot");
    let mut after = lp.tracker.snapshot(&lp.repo)?;
    drop(snap);
    let earlier = super::earlier::put_back(&lp.repo, &layout, n, &after.changed_paths(before))?;
    if !earlier.is_empty() {
        run.protected_changed.extend(earlier);
        after = lp.tracker.snapshot(&lp.repo)?;
    }
    let mut changed_paths = after.changed_paths(before);
    let mut raw = after.changed_since(before);
    // Commits the agent made of its own work are progress, though they leave nothing dirty:
    // what they changed since the loop's last commit is the run's change like the rest (the
    // gate judges it, the records count it). So are changes to files the plan names outside
    // the artifact directory.
    if run.committed
        && let Some(last) = lp.runner.last_accepted.as_deref()
    {
        for p in lp.repo.changed_since_commit(last)? {
            if !changed_paths.contains(&p) {
                raw.push(p.display().to_string());
                changed_paths.push(p);
            }
        }
    }
    let mut changed = raw.clone();
    if changed.is_empty() {
        changed.extend(
            named
                .changed()
                .into_iter()
                .map(|p| format!("{p} (named in the plan)")),
        );
    }
    Ok((changed_paths, raw, changed))
}

/// A code loop's spec is read, never written: an edit the agent made is put back now, and said.
fn put_back_spec(lp: &mut Loop) -> Result<Option<String>> {
    let back = lp.spec.put_back()?;
    if back.is_empty() {
        return Ok(None);
    }
    let names: Vec<String> = back
        .iter()
        .map(|p| {
            p.strip_prefix(lp.runner.layout.root())
                .unwrap_or(p)
                .display()
                .to_string()
        })
        .collect();
    let what = format!(
        "the agent edited the spec ({}), which is read, never written; it was put back",
        names.join(", ")
    );
    tracing::warn!("{what}");
    lp.runner.note_event(what.clone());
    Ok(Some(what))
}

/// The one decision after any agent run (`decide::after_attempt`): what its process and the
/// end of its log say, whether it made `progress`, and whether it `asked` instead. Planning counts its own attempts, so its
/// breakers start afresh (`planning`); an iteration's are the loop's.
pub(super) fn weigh(
    lp: &mut Loop,
    run: &AgentRun,
    tail: &str,
    progress: bool,
    asked: bool,
    planning: bool,
) -> decide::Verdict {
    let stopped = stopped_now(lp);
    let limit = (!run.outcome.ending.success() && !stopped)
        .then(|| {
            limits::recognise(
                tail,
                &lp.settings.safety.limit_patterns,
                &lp.settings.safety.fatal_patterns,
                chrono::Utc::now(),
            )
        })
        .flatten();
    let facts = decide::Attempt {
        protected_changed: !run.protected_changed.is_empty(),
        ending: run.outcome.ending,
        tail,
        stopped,
        limit,
        output: std::fs::metadata(&run.log).map_or(0, |m| m.len()),
        progress,
        asked,
    };
    let safety = &lp.settings.safety;
    let ceilings = decide::AttemptLimits {
        trends: decide::TrendLimits::of(safety),
        max_no_change: safety.max_no_change_iterations,
        max_retries: safety.max_crash_retries,
    };
    if run.outcome.ending.success() {
        lp.runner.limit_waits_over();
    }
    if planning {
        let mut trends = crate::disk::state::Trends::default();
        return decide::after_attempt(
            &facts,
            &mut decide::Breaker::default(),
            &mut trends,
            ceilings,
        );
    }
    decide::after_attempt(&facts, &mut lp.breaker, lp.runner.trends(), ceilings)
}

/// What a run that changed files was refused (claude's `permission_denials`), as the question
/// it leaves the user; none for a run that changed nothing (that one asked instead of working)
/// or was refused nothing.
fn refused_while_working(seen: &Seen) -> Option<String> {
    let worked = !seen.changed.is_empty() || seen.run.committed;
    (worked && !seen.run.report.denials.is_empty())
        .then(|| seen.question.clone())
        .flatten()
}

/// Carry out a disposition: carry the changes, record the run, put the attempt aside, then
/// wait, accept, or end — the one place an iteration's decision is applied.
async fn settle(
    lp: &mut Loop,
    n: u32,
    attempt: u32,
    mut rec: RunRecord,
    d: Disposition,
    seen: &Seen,
    plan_before: &str,
) -> Result<Flow> {
    let layout = lp.runner.layout.clone();
    carry_and_note(lp, n, &mut rec, &d, seen);
    match d.then {
        Then::Accept => {
            lp.runner.worked();
            // A run that worked and was refused a tool: its work goes on as any other's, and
            // the refusal is a question for the user all the same.
            let refused = refused_while_working(seen);
            rec.question.clone_from(&refused);
            let why = accept::accept(
                lp,
                n,
                &layout.iteration_dir(n),
                plan_before,
                rec,
                &seen.changed_paths,
            )
            .await?;
            if let Some(question) = refused {
                super::progress::say(&format!("  ? asked: \"{question}\""));
                super::asking::asked(lp, n, question).await?;
            }
            return Ok(Flow::End(why.map_or(IterationEnd::Done, |why| {
                let why = decide::how_to_continue(&why, &lp.runner.topic);
                IterationEnd::Stop(StopReason::Breaker, why)
            })));
        }
        Then::NoChange => {
            super::claim::check(lp, &mut rec)?;
            super::attempt_plan::forget(&layout)?;
        }
        Then::Asked => {
            super::attempt_plan::forget(&layout)?;
            rec.question.clone_from(&seen.question);
        }
        _ => {}
    }
    super::progress::record_and_say(&layout, &rec, None)?;
    match d.aside {
        Aside::Keep => {}
        Aside::Discard => discard(lp, n, attempt)?,
        Aside::Evidence => {
            restore_plan(&layout)?;
            move_aside(&layout, n, "rejected")?;
        }
    }
    Ok(match d.then {
        Then::Again => Flow::Again,
        Then::Wait { until, what } => wait_out(lp, until, &what).await?,
        Then::Asked => {
            let question = seen.question.clone().unwrap_or_default();
            super::asking::asked(lp, n, question).await?;
            Flow::End(IterationEnd::Done)
        }
        Then::Over | Then::NoChange | Then::Accept => Flow::End(IterationEnd::Done),
        Then::Stop(reason, why) => Flow::End(IterationEnd::Stop(reason, why)),
    })
}

/// What of the attempt's work the next accepted commit carries, and the record's note: the
/// disposition's and what was put back of the spec; a rejected attempt's protected files and
/// note as why it failed.
fn carry_and_note(lp: &mut Loop, n: u32, rec: &mut RunRecord, d: &Disposition, seen: &Seen) {
    let layout = lp.runner.layout.clone();
    if d.carry {
        commit::carry(lp, &seen.changed_paths);
    }
    if matches!(d.outcome, Outcome::NoChange | Outcome::Asked) && d.aside == Aside::Keep {
        // Its directory (its prompt's answer, the seeded artifact) is committed with the next
        // accepted iteration, as a rejected one's is, not left untracked.
        let dir = layout.iteration_dir(n);
        let own = commit::loop_paths(&layout, false, Some(&dir), std::iter::empty());
        commit::carry(lp, &own);
    }
    rec.note = match (d.note.clone(), seen.put_back.clone()) {
        (Some(n), Some(p)) => Some(format!("{n}; {p}")),
        (n, p) => n.or(p),
    };
    if d.outcome == Outcome::Rejected {
        rec.protected_changed
            .clone_from(&seen.run.protected_changed);
        rec.validation_failed = rec.note.take();
    }
    if matches!(d.then, Then::Stop(StopReason::Error, _)) && !d.carry {
        rec.files_changed.clear();
    }
}

/// A usage or rate limit: wait for its reset, or — with fallback agents — mark the agent
/// limited until then and let the next attempt pick another.
async fn wait_out(lp: &mut Loop, until: Option<chrono::DateTime<Utc>>, what: &str) -> Result<Flow> {
    let until = lp.runner.limit_until(until);
    if !lp.fallbacks.is_empty() {
        lp.runner.limited(lp.agent.name.clone(), until);
        return Ok(Flow::Again);
    }
    let reason = format!("{what}, {}", lp.agent.name);
    if lp.runner.wait_until(until, &reason).await? {
        return Ok(Flow::End(IterationEnd::Stop(
            StopReason::UserStop,
            format!("stopped while waiting ({reason})"),
        )));
    }
    Ok(Flow::Again)
}
