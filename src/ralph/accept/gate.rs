//! The gate on an iteration, inside the loop: what it judges (the artifact or the diff), the
//! judge, the rounds — a revision round runs the loop's producer as an agent run of its own, its
//! cost and what it changed kept —, the gate's record and what its calls cost.

use std::path::{Path, PathBuf};

use super::super::context::Loop;
use super::super::runner::RunSpec;
use crate::agent::launch::{AgentPhase, AgentRun};
use crate::agent::spec::AgentSpec;
use crate::config::{GateTarget, OnGateFail};
use crate::disk::runlog;
use crate::error::Result;
use crate::gate::producer::{AgentProducer, Reviser};
use crate::gate::rounds;
use crate::gate::{GateRecord, Verdict, evaluator};
use crate::sys::fsutil;

/// The loop's side of a revision round: its runner (state, cost) and its budget.
struct LoopReviser<'a> {
    lp: &'a mut Loop,
    dir: &'a Path,
    iteration: u32,
}

impl LoopReviser<'_> {
    /// What is dirty before a revision round, when there is an earlier iteration it could edit.
    fn snapshot_if_earlier(&mut self) -> Result<Option<crate::git::Snapshot>> {
        if self.iteration < 2 {
            return Ok(None);
        }
        self.lp.tracker.snapshot(&self.lp.repo).map(Some)
    }

    /// Put back what the round changed in an earlier iteration's directory (`ralph::earlier`);
    /// that rejects the iteration, as a protected file would.
    fn put_back_earlier(&mut self, before: Option<crate::git::Snapshot>) -> Result<()> {
        let Some(before) = before else {
            return Ok(());
        };
        let changed = self
            .lp
            .tracker
            .snapshot(&self.lp.repo)?
            .changed_paths(&before);
        let layout = &self.lp.runner.layout;
        let back =
            crate::ralph::earlier::put_back(&self.lp.repo, layout, self.iteration, &changed)?;
        self.lp.revision_tampered.extend(back);
        Ok(())
    }
}

impl Reviser for LoopReviser<'_> {
    fn may_spend(&self) -> bool {
        // Revisions cost what iterations cost: none once a budget would be crossed.
        match self.lp.budget_spent() {
            Some(why) => {
                tracing::warn!("no revision: {why}");
                false
            }
            None => true,
        }
    }

    async fn run_revision(
        &mut self,
        spec: &AgentSpec,
        round: u32,
        prompt: &str,
    ) -> Result<AgentRun> {
        let stem = format!("revision-r{round}.prompt");
        let phase = RunSpec {
            kind: AgentPhase::Revision,
            iteration: self.iteration,
            dir: self.dir,
            work: &self.lp.runner.layout.iteration_dir(self.iteration),
            stem: &stem,
            stdout: Some(self.lp.runner.layout.revision_answer(self.iteration, round)),
            temperature: Some(self.lp.settings.gate.revision_temperature),
        };
        let layout = self.lp.runner.layout.clone();
        let original =
            crate::ralph::original::hold(&layout, self.iteration, self.lp.work.seeds_artifact())?;
        let before = self.snapshot_if_earlier()?;
        let run = self
            .lp
            .runner
            .run_agent(spec, &phase, prompt, &mut || Ok(()))
            .await?;
        self.lp.revision_costs.push(run.report.cost_usd);
        self.put_back_earlier(before)?;
        let cap = self.lp.take_cap();
        if let Some(what) =
            crate::ralph::original::put_back(&layout, self.iteration, original, false, cap)?
        {
            self.took(round, what);
        }
        // One rule for every run: a revision that changed protected files (restored by the
        // runner) rejects its iteration, as the iteration's own run would. The iteration's own
        // directory is the revision's to work in (what it deletes there is written again from
        // the gate's rounds).
        let layout = &self.lp.runner.layout;
        let own = layout
            .iteration_dir(self.iteration)
            .strip_prefix(layout.root())
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let foreign: Vec<String> = run
            .protected_changed
            .iter()
            .filter(|p| {
                own.is_empty()
                    || !p.starts_with(&own)
                        && !p.starts_with("review.md")
                        && !p.starts_with("artifact.md")
            })
            .cloned()
            .collect();
        self.lp.revision_tampered.extend(foreign);
        Ok(run)
    }

    fn took(&mut self, round: u32, how: String) {
        self.lp
            .revision_notes
            .push(format!("revision round {round}: {how}"));
    }
}

/// Run the gate on the iteration's output. Returns the record (None when the gate is off) and
/// whether to commit. Writes the kept content back to the artifact.
pub async fn gate(
    lp: &mut Loop,
    n: u32,
    task: &str,
    changed: &[std::path::PathBuf],
) -> Result<(Option<GateRecord>, bool)> {
    let target = lp.settings.gate.target;
    if target == GateTarget::Off {
        return Ok((None, true));
    }
    let (content, max_rounds) = gate_input(lp, n, target, changed)?;
    let judge = judge_of(lp, n)?;
    let opts = rounds::Opts::from_settings(&lp.settings, max_rounds)?;
    let outcome = judge_rounds(lp, n, task, &content, &judge, &opts).await?;
    let mut record = outcome.record.clone();
    record.contamination_warning = judge.same_model_as(&lp.producer.table.command);
    meter(lp, &judge, &mut record);
    let keep = matches!(
        (record.verdict, lp.settings.gate.on_gate_fail),
        (Verdict::Pass, _) | (_, OnGateFail::KeepBest)
    );
    write_gate_outcome(lp, n, target, keep, &outcome, &record)?;
    Ok((Some(record), keep))
}

/// What the gate reads, and how many rounds it may take: the iteration's change as a diff (one
/// round: nothing revises a diff), the loop's own files left out; or the iteration's artifact.
fn gate_input(lp: &Loop, n: u32, target: GateTarget, changed: &[PathBuf]) -> Result<(String, u32)> {
    if target == GateTarget::Diff {
        let paths: Vec<PathBuf> = changed
            .iter()
            .chain(lp.runner.state.carried_paths.iter())
            .filter(|p| {
                p.components()
                    .next()
                    .is_none_or(|c| c.as_os_str() != "wiggum")
            })
            .cloned()
            .collect();
        // Since the loop's last commit: an agent's own commits on top of it are judged too.
        let since = lp.runner.last_accepted.as_deref();
        return Ok((lp.repo.worktree_patch_from(since, &paths)?, 1));
    }
    let artifact = lp.runner.layout.iteration_artifact(n);
    Ok((
        fsutil::read_opt(&artifact)?.unwrap_or_default(),
        lp.settings.defaults.max_rounds,
    ))
}

/// The run's evaluator (a pool member, or the loop's), with its panel when asked.
fn judge_of(lp: &Loop, n: u32) -> Result<evaluator::Evaluator> {
    let ev_name = lp.evaluator_for_run();
    let mut judge = evaluator::resolve(
        &lp.settings,
        &ev_name,
        "[defaults] evaluator",
        lp.runner.layout.run_dir(n),
        lp.runner.stops.clone(),
    )?;
    if lp.settings.defaults.panel {
        judge.enable_panel(&lp.settings, "[defaults] panel")?;
    }
    Ok(judge)
}

/// The gate's rounds, each recorded as it ends; the evaluation retried once when the evaluator
/// (not the producer) failed.
async fn judge_rounds(
    lp: &mut Loop,
    n: u32,
    task: &str,
    content: &str,
    judge: &evaluator::Evaluator,
    opts: &rounds::Opts,
) -> Result<rounds::GateOutcome> {
    let records = lp.runner.layout.run_dir(n);
    let artifact = lp.runner.layout.iteration_artifact(n);
    let task_type = lp.task_type.clone();
    let layout = lp.runner.layout.clone();
    let spec = lp.producer.clone();
    let mut attempts = 0;
    loop {
        attempts += 1;
        let mut producer = AgentProducer {
            reviser: LoopReviser {
                lp,
                dir: &records,
                iteration: n,
            },
            spec: spec.clone(),
            edited_file: artifact.clone(),
        };
        let out = rounds::run(task, &task_type, content, judge, &mut producer, opts, |r| {
            let rec = runlog::GateRoundRecord::new(n, r.clone());
            if let Err(e) = runlog::record(&layout, &rec) {
                tracing::error!("{e}");
            }
        })
        .await;
        // A revision round that took the loop's memory (`wiggum/`, its prompt) ends the loop as
        // an iteration's run that did so would: no retry, nothing committed.
        if let Some(gone) = lp.runner.memory_gone() {
            return Err(gone);
        }
        let stopping = lp.runner.stop_level() >= crate::agent::process::StopLevel::Now;
        // Only the evaluator's failure is worth another try; the producer's is the agent's,
        // already recorded with its run.
        let evaluator_failed = out
            .record
            .error
            .as_deref()
            .is_some_and(|e| e.starts_with("evaluator:"));
        if out.record.verdict != Verdict::Error || !evaluator_failed || attempts >= 2 || stopping {
            return Ok(out);
        }
        tracing::warn!(
            "gate ERROR ({}); retrying the evaluation once",
            out.record.error.as_deref().unwrap_or("unknown")
        );
    }
}

/// Write what the gate decided: the kept artifact (or the seed, when reverted) and the gate's
/// record beside it. An agent in a revision round may have deleted the iteration's directory:
/// what is written there is in memory, and the directory is made again rather than the loop
/// failing on it.
fn write_gate_outcome(
    lp: &Loop,
    n: u32,
    target: GateTarget,
    keep: bool,
    outcome: &rounds::GateOutcome,
    record: &GateRecord,
) -> Result<()> {
    let dir = lp.runner.layout.iteration_dir(n);
    if !dir.is_dir() {
        tracing::warn!(
            "iteration {n}: {} was deleted during the gate; it is written again from the gate's rounds",
            dir.display()
        );
        fsutil::create_dir_all(&dir)?;
    }
    if target == GateTarget::Artifact {
        let artifact = lp.runner.layout.iteration_artifact(n);
        let content = if keep {
            outcome.best.clone()
        } else {
            seed_of(lp, n)?
        };
        if fsutil::read_opt(&artifact)?.as_deref() != Some(content.as_str()) {
            fsutil::atomic_write(&artifact, content.as_bytes())?;
        }
    }
    let eval = crate::disk::records::EvalFile {
        gate: record.clone(),
        rounds: outcome.rounds.clone(),
    };
    let json = serde_json::to_string_pretty(&eval).unwrap_or_default();
    fsutil::atomic_write(&lp.runner.layout.eval_record(n), json.as_bytes())
}

/// Add what the evaluator's calls used to the loop's spend and the gate's record: priced by
/// its model when it reported tokens, else unknown.
fn meter(lp: &mut Loop, judge: &evaluator::Evaluator, record: &mut GateRecord) {
    let m = judge.metered();
    if m.calls == 0 {
        return;
    }
    let tokens = m.tokens_in + m.tokens_out;
    let price = judge.model().and_then(|model| lp.settings.price(&model));
    let cost = (m.unmetered == 0)
        .then(|| crate::ralph::budget::price(price, Some(m.tokens_in), Some(m.tokens_out)))
        .flatten();
    lp.runner.spent(cost, (tokens > 0).then_some(tokens));
    record.tokens_in = (tokens > 0).then_some(m.tokens_in);
    record.tokens_out = (tokens > 0).then_some(m.tokens_out);
    record.cost_usd = cost;
}

/// The artifact an iteration starts from: the previous iteration's, else the original.
pub fn seed_of(lp: &Loop, n: u32) -> Result<String> {
    let layout = &lp.runner.layout;
    let prev = (1..n)
        .rev()
        .map(|i| layout.iteration_artifact(i))
        .find(|p| p.exists());
    let path = prev.unwrap_or_else(|| layout.original_artifact());
    Ok(fsutil::read_opt(&path)?.unwrap_or_default())
}
