//! `wiggum gate <task> <file>`: the inner loop alone on one document. The best round's content
//! is written back to the file (never on ERROR); per-round scores are printed, or the record
//! with `--json`. Exit 0 on PASS, 1 on FAIL or ERROR.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use tokio::sync::watch;

use super::common;
use crate::agent::launch::{self, AgentPhase, AgentRun, Launch};
use crate::agent::process::StopLevel;
use crate::agent::spec::{self, AgentSpec};
use crate::config;
use crate::error::{Error, Result};
use crate::gate::Verdict;
use crate::gate::producer::{AgentProducer, Reviser};
use crate::gate::rounds;
use crate::sys::fsutil;

/// Flags of `gate`.
#[derive(Debug, Args)]
pub struct GateArgs {
    /// What the document is for (the evaluator sees this, the task type and the document only).
    pub task: String,
    /// The document (Markdown).
    pub file: PathBuf,
    /// Evaluator: an [evaluators] entry or `heuristic`.
    #[arg(long, value_name = "NAME")]
    pub evaluator: Option<String>,
    /// Producer of revisions: an [agents] entry or preset (none: evaluate once).
    #[arg(long, value_name = "NAME")]
    pub producer: Option<String>,
    /// Task type shown to the evaluator.
    #[arg(long, default_value = "document")]
    pub task_type: String,
    /// Pass threshold, 0–10.
    #[arg(long, value_name = "S")]
    pub pass_threshold: Option<f64>,
    /// Rounds (≥ 1).
    #[arg(long, value_name = "R")]
    pub max_rounds: Option<u32>,
    /// Run the three-persona panel after the evaluator (also WIGGUM_PANEL=1).
    #[arg(long)]
    pub panel: bool,
    /// Print the result record as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `wiggum gate`'s side of a revision round: the producer runs beside the document, its
/// prompts, answers and log in the command's scratch directory.
struct AloneReviser {
    root: PathBuf,
    work: PathBuf,
    stops: watch::Receiver<StopLevel>,
    limit: Duration,
    grace: Duration,
    temperature: f64,
    safety: crate::config::Safety,
}

impl Reviser for AloneReviser {
    async fn run_revision(
        &mut self,
        spec: &AgentSpec,
        round: u32,
        prompt: &str,
    ) -> Result<AgentRun> {
        let launch = Launch {
            iteration: round,
            work_dir: self.work.clone(),
            stem: format!("revision-r{round}.prompt"),
            stdout: Some(self.work.join(format!("revision-r{round}.md"))),
            temperature: Some(self.temperature),
            limit: self.limit,
            grace: self.grace,
            ..Launch::for_phase(
                AgentPhase::Revision,
                "gate",
                self.root.clone(),
                self.work.clone(),
                &self.safety,
                "gate-producer",
            )
        };
        launch::run(spec, &launch, prompt, "", &mut self.stops, |_| true).await
    }
}

/// Run `gate`.
pub fn run(a: &GateArgs, config_file: Option<PathBuf>) -> Result<i32> {
    let settings = settings(a, config_file)?;
    let content = common::read_document(&a.file)?;
    // Kept whole: it owns the scratch dir and the stop channel's sender.
    let mut judging = common::judging(&settings, a.evaluator.as_ref(), "--evaluator")?;
    let judge = &mut judging.judge;
    if a.panel || settings.defaults.panel || std::env::var("WIGGUM_PANEL").is_ok_and(|v| v == "1") {
        judge.enable_panel(&settings, "--panel")?;
    }
    let spec = producer_spec(a, &settings)?;
    if let Some(w) = spec
        .as_ref()
        .and_then(|s| judge.same_model_as(&s.table.command))
    {
        eprintln!("warning: {w}; the gate is not independent");
    }
    let opts = rounds::Opts::from_settings(&settings, settings.defaults.max_rounds)?;
    let root = std::path::absolute(&a.file)
        .ok()
        .and_then(|f| f.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("."));
    let mut producer = spec.map(|spec| AgentProducer {
        reviser: AloneReviser {
            root,
            work: judging.work.path().to_path_buf(),
            stops: judging.stops.clone(),
            limit: Duration::from_secs(settings.safety.max_time_per_iteration),
            grace: Duration::from_secs(settings.safety.kill_grace_secs),
            temperature: settings.gate.revision_temperature,
            safety: settings.safety.clone(),
        },
        spec,
        edited_file: a.file.clone(),
    });
    let rt = crate::sys::runtime::runtime()?;
    let json = a.json;
    let out = rt.block_on(rounds::run(
        &a.task,
        &a.task_type,
        &content,
        &*judge,
        &mut producer,
        &opts,
        |r| {
            if !json {
                eprintln!(
                    "[wiggum r{}] score={:.2} issues={} focus={}",
                    r.round,
                    r.score,
                    r.issues.len(),
                    r.focus.join(",")
                );
            }
        },
    ));
    if out.record.verdict != Verdict::Error && out.best != content {
        fsutil::atomic_write(&a.file, out.best.as_bytes())?;
    }
    report(a, &out);
    Ok(i32::from(out.record.verdict != Verdict::Pass))
}

/// The settings, with the flags that override them checked.
fn settings(a: &GateArgs, config_file: Option<PathBuf>) -> Result<config::Settings> {
    let mut settings = common::settings(config_file)?;
    if let Some(v) = a.pass_threshold {
        config::check_score(v).map_err(|m| Error::input(format!("--pass-threshold {m}")))?;
        settings.defaults.pass_threshold = v;
    }
    if let Some(v) = a.max_rounds {
        config::check_positive(v.into()).map_err(|m| Error::input(format!("--max-rounds {m}")))?;
        settings.defaults.max_rounds = v;
    }
    Ok(settings)
}

/// The agent that revises between rounds, if one is named (`--producer`, `[gate] producer`).
fn producer_spec(a: &GateArgs, settings: &config::Settings) -> Result<Option<spec::AgentSpec>> {
    let Some(n) = a
        .producer
        .clone()
        .or_else(|| settings.gate.producer.clone())
    else {
        return Ok(None);
    };
    spec::named(settings, &n)
        .map(Some)
        .ok_or_else(|| Error::input(format!("--producer: unknown agent `{n}`")))
}

/// What the gate decided: JSON, or a line.
fn report(a: &GateArgs, out: &rounds::GateOutcome) {
    if a.json {
        let v = crate::disk::records::GateReport {
            record: out.record.clone(),
            rounds: out.rounds.clone(),
            file: a.file.clone(),
        };
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return;
    }
    let r = &out.record;
    match r.verdict {
        Verdict::Error => println!("ERROR: {}", r.error.as_deref().unwrap_or("unknown")),
        v => println!(
            "{} after {} round(s) ({}): r1 {:.2}, kept round {} at {:.2}",
            v.as_str(),
            r.rounds,
            r.termination.as_str(),
            r.wiggum_r1.unwrap_or(0.0),
            r.best_round.unwrap_or(0),
            r.final_score.unwrap_or(0.0)
        ),
    }
}
