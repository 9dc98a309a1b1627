//! Evaluator backends behind one `Judge`: the built-in heuristic, and any command (prompt on
//! stdin, answer on stdout). The HTTP backends live in `http`.

use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::watch;

use super::gate::Judge;
use super::{Evaluation, extract, heuristic, http, prompts};
use crate::agent::process::{self, Job, StopLevel};
use crate::config::{EvaluatorEntry, EvaluatorKind, Settings};
use crate::error::{Error, Result};

/// A configured evaluator, ready to judge.
pub struct Evaluator {
    name: String,
    entry: EvaluatorEntry,
    template: String,
    dims: Vec<String>,
    temperature: f64,
    work: PathBuf,
    control: watch::Receiver<StopLevel>,
}

/// Resolve an evaluator by name (`heuristic` is built in), check its template for
/// contamination, and say where its logs go.
pub fn resolve(
    settings: &Settings,
    name: &str,
    origin: &str,
    work: PathBuf,
    control: watch::Receiver<StopLevel>,
) -> Result<Evaluator> {
    let entry = match (name, settings.evaluators.get(name)) {
        (_, Some(e)) => e.clone(),
        ("heuristic", None) => EvaluatorEntry::heuristic(),
        (_, None) => {
            let mut known: Vec<&str> = settings.evaluators.keys().map(String::as_str).collect();
            known.push("heuristic");
            return Err(Error::input(format!(
                "{origin}: unknown evaluator `{name}` (known: {})",
                known.join(", ")
            )));
        }
    };
    let template_path = entry.template.as_deref().or(settings.gate.evaluator_template.as_deref());
    let template = prompts::load(template_path, prompts::DEFAULT_EVALUATOR)?;
    Ok(Evaluator {
        name: name.to_string(),
        entry,
        template,
        dims: settings.gate.weights.keys().cloned().collect(),
        temperature: settings.gate.evaluator_temperature,
        work,
        control,
    })
}

impl Evaluator {
    /// The backend kind.
    #[must_use]
    pub fn kind(&self) -> EvaluatorKind {
        self.entry.kind
    }

    /// The model (or command) behind it, to compare with the producer's.
    #[must_use]
    pub fn model(&self) -> Option<String> {
        self.entry.model.clone().or_else(|| self.entry.command.clone())
    }

    /// Where to keep this evaluator's logs.
    pub fn set_work(&mut self, dir: PathBuf) {
        self.work = dir;
    }

    async fn run_command(&self, command: &str, prompt: &str) -> Result<String> {
        crate::fsutil::create_dir_all(&self.work)?;
        let stamp = chrono::Utc::now().format("%H%M%S%f");
        let input = self.work.join(format!("eval-{stamp}.prompt.md"));
        let answer = self.work.join(format!("eval-{stamp}.answer.md"));
        crate::fsutil::atomic_write(&input, prompt.as_bytes())?;
        let job = Job {
            command: command.to_string(),
            cwd: self.work.clone(),
            env: vec![("WIGGUM_PHASE".into(), "evaluation".into())],
            stdin: Some(input.clone()),
            log: self.work.join("eval.log"),
            stdout: Some(answer.clone()),
            limit: Duration::from_secs(self.entry.timeout_secs.max(1)),
            grace: Duration::from_secs(2),
            token: process::new_token("eval"),
        };
        let mut control = self.control.clone();
        let out = process::run(&job, &mut control, |_| {}).await?;
        let text = crate::fsutil::read(&answer)?;
        let _ = std::fs::remove_file(&input);
        let _ = std::fs::remove_file(&answer);
        if !out.ending.success() {
            return Err(Error::runtime(format!(
                "evaluator command `{command}` ended {:?} (log: {})",
                out.ending,
                job.log.display()
            )));
        }
        Ok(text)
    }
}

impl Judge for Evaluator {
    fn label(&self) -> String {
        match self.entry.kind {
            EvaluatorKind::Heuristic => "heuristic".into(),
            _ => self.name.clone(),
        }
    }

    async fn judge(&self, task: &str, task_type: &str, output: &str) -> Result<Evaluation> {
        if self.entry.kind == EvaluatorKind::Heuristic {
            return Ok(heuristic::evaluate(task, output));
        }
        let prompt = prompts::evaluator(&self.template, task, task_type, output, &self.dims);
        let answer = match self.entry.kind {
            EvaluatorKind::Command => {
                let cmd = self.entry.command.as_deref().unwrap_or_default();
                self.run_command(cmd, &prompt).await?
            }
            EvaluatorKind::Ollama | EvaluatorKind::Openai => {
                http::chat(&self.entry, &prompt, self.temperature, &self.dims).await?
            }
            EvaluatorKind::Heuristic => unreachable_heuristic(),
        };
        extract::extract(&answer, &self.dims).map_err(Error::runtime)
    }
}

fn unreachable_heuristic() -> String {
    String::new()
}

/// Pick one evaluator of a pool for a run, reproducibly: md5(run_id) mod len.
#[must_use]
pub fn pick_from_pool<'a>(pool: &'a [String], run_id: &str) -> Option<&'a String> {
    if pool.is_empty() {
        return None;
    }
    let digest = md5_digest(run_id.as_bytes());
    let n = u128::from_be_bytes(digest);
    let len = u128::try_from(pool.len()).ok()?;
    pool.get(usize::try_from(n % len).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_choice_is_md5_mod_len_and_reproducible() {
        let pool: Vec<String> = ["a", "b", "c"].iter().map(|s| (*s).to_string()).collect();
        // md5("run-1") = 5d9f...; checked against the reference implementation below.
        let want = {
            let d = md5_digest(b"run-1");
            usize::try_from(u128::from_be_bytes(d) % 3).unwrap()
        };
        assert_eq!(pick_from_pool(&pool, "run-1"), Some(&pool[want]));
        assert_eq!(pick_from_pool(&pool, "run-1"), pick_from_pool(&pool, "run-1"));
        assert_eq!(pick_from_pool(&[], "x"), None);
    }
}

fn md5_digest(bytes: &[u8]) -> [u8; 16] {
    use md5::Digest;
    md5::Md5::digest(bytes).into()
}
