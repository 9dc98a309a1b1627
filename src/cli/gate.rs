//! `wiggum gate <task> <file>`: the inner loop alone on one document. The best round's content
//! is written back to the file (never on ERROR); per-round scores are printed, or the record
//! with `--json`. Exit 0 on PASS, 1 on FAIL or ERROR.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use tokio::sync::watch;

use super::common;
use crate::agent::process::{self, Job, StopLevel};
use crate::agent::spec::{self, AgentSpec};
use crate::config::{self, RevisionOutput};
use crate::error::{Error, Result};
use crate::gate::Verdict;
use crate::gate::rounds::{self, Producer};
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

struct CommandProducer {
    spec: Option<AgentSpec>,
    file: PathBuf,
    work: PathBuf,
    control: watch::Receiver<StopLevel>,
    limit: Duration,
    temperature: f64,
}

impl Producer for CommandProducer {
    fn available(&self) -> bool {
        self.spec.is_some()
    }

    async fn revise(&mut self, round: u32, prompt: &str) -> Result<String> {
        let Some(spec) = &self.spec else {
            return Err(Error::runtime("no producer"));
        };
        let dir = self.work.as_path();
        let prompt_file = dir.join(format!("revision-r{round}.prompt.md"));
        let answer = dir.join(format!("revision-r{round}.md"));
        fsutil::atomic_write(&prompt_file, prompt.as_bytes())?;
        let job = Job {
            command: spec::command_line(&spec.table, &prompt_file),
            cwd: self
                .file
                .parent()
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
            env: vec![
                ("WIGGUM_PHASE".into(), "revision".into()),
                ("WIGGUM_TEMPERATURE".into(), self.temperature.to_string()),
                ("ITERATION".into(), round.to_string()),
            ],
            stdin: spec.table.stdin.then(|| prompt_file.clone()),
            log: dir.join("producer.log"),
            stdout: Some(answer.clone()),
            limit: self.limit,
            grace: Duration::from_secs(5),
            token: process::new_token("gate-producer"),
        };
        let out = process::run(&job, &mut self.control, |_| {}).await?;
        if !out.ending.success() {
            let log = fsutil::read_tail(&job.log, 4096)?;
            let tail: String = log.lines().last().unwrap_or_default().to_string();
            return Err(Error::runtime(format!(
                "`{}` {}: {tail}",
                spec.name, out.ending
            )));
        }
        match spec.table.revision_output {
            RevisionOutput::Stdout => Ok(crate::agent::output::parse(
                spec.table.output_format,
                &fsutil::read_capped(&answer, fsutil::ANSWER_CAP)?,
            )
            .text),
            RevisionOutput::File => fsutil::read(&self.file),
        }
    }
}

/// Run `gate`.
pub fn run(a: &GateArgs, config_file: Option<PathBuf>) -> Result<i32> {
    let mut settings = common::settings(config_file)?;
    if let Some(v) = a.pass_threshold {
        config::check_score(v).map_err(|m| Error::input(format!("--pass-threshold {m}")))?;
        settings.defaults.pass_threshold = v;
    }
    if let Some(v) = a.max_rounds {
        config::check_positive(v.into()).map_err(|m| Error::input(format!("--max-rounds {m}")))?;
        settings.defaults.max_rounds = v;
    }
    let content = common::read_document(&a.file)?;
    // Kept whole: it owns the scratch dir and the control channel's sender.
    let mut judging = common::judging(&settings, a.evaluator.as_ref(), "--evaluator")?;
    let judge = &mut judging.judge;
    if a.panel || settings.defaults.panel || std::env::var("WIGGUM_PANEL").is_ok_and(|v| v == "1") {
        judge.enable_panel(&settings, "--panel")?;
    }
    let producer_name = a
        .producer
        .clone()
        .or_else(|| settings.gate.producer.clone());
    let spec = match &producer_name {
        Some(n) => Some(
            spec::named(&settings, n)
                .ok_or_else(|| Error::input(format!("--producer: unknown agent `{n}`")))?,
        ),
        None => None,
    };
    if let Some(w) = spec
        .as_ref()
        .and_then(|s| judge.same_model_as(&s.table.command))
    {
        eprintln!("warning: {w}; the gate is not independent");
    }
    let opts = rounds::Opts::from_settings(&settings, settings.defaults.max_rounds)?;
    let mut producer = CommandProducer {
        spec,
        file: a.file.clone(),
        work: judging.work.path().to_path_buf(),
        control: judging.control.clone(),
        limit: Duration::from_secs(settings.safety.max_time_per_iteration),
        temperature: settings.gate.revision_temperature,
    };
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
    if json {
        let v = serde_json::json!({"record": out.record, "rounds": out.rounds, "file": a.file});
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    } else {
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
    Ok(i32::from(out.record.verdict != Verdict::Pass))
}
