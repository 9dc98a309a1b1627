//! Evaluator backends behind one `Judge`: the built-in heuristic, and any command (prompt on
//! stdin, answer on stdout). The HTTP backends live in `http`.

use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::watch;

use super::panel::{self, Review};
use super::rounds::Judge;
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
    panel: Option<PanelOpts>,
    work: PathBuf,
    stops: watch::Receiver<StopLevel>,
    metered: std::sync::Mutex<Metered>,
}

/// What an evaluator's calls used, summed (the panel's included).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Metered {
    /// Calls to a model (the heuristic makes none).
    pub calls: u32,
    /// Calls whose usage nobody reported (commands, servers without `usage`).
    pub unmetered: u32,
    /// Prompt tokens.
    pub tokens_in: u64,
    /// Answer tokens.
    pub tokens_out: u64,
}

/// Resolve an evaluator by name (`heuristic` is built in), check its template for
/// contamination, and say where its logs go.
pub fn resolve(
    settings: &Settings,
    name: &str,
    origin: &str,
    work: PathBuf,
    stops: watch::Receiver<StopLevel>,
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
    let template_path = entry
        .template
        .as_deref()
        .or(settings.gate.evaluator_template.as_deref());
    let template = prompts::load(template_path, prompts::DEFAULT_EVALUATOR)?;
    Ok(Evaluator {
        name: name.to_string(),
        entry,
        template,
        dims: settings.gate.weights.keys().cloned().collect(),
        temperature: settings.gate.evaluator_temperature,
        panel: None,
        work,
        stops,
        metered: std::sync::Mutex::new(Metered::default()),
    })
}

/// Panel settings.
#[derive(Debug, Clone)]
struct PanelOpts {
    excerpt_chars: usize,
    temperature: f64,
}

impl Evaluator {
    /// Turn on the three-persona panel (model backends only: the heuristic has no personas).
    /// `origin` names what asked for the panel (a flag or a key) for the error message.
    pub fn enable_panel(&mut self, settings: &Settings, origin: &str) -> Result<()> {
        if self.entry.kind == EvaluatorKind::Heuristic {
            return Err(Error::input(format!(
                "{origin}: the panel needs a model evaluator (kind = command, ollama, openai or anthropic); the heuristic evaluator has no personas"
            )));
        }
        self.panel = Some(PanelOpts {
            excerpt_chars: settings.gate.panel_excerpt_chars,
            temperature: settings.gate.panel_temperature,
        });
        Ok(())
    }

    async fn ask(
        &self,
        prompt: &str,
        temperature: f64,
        schema: &serde_json::Value,
    ) -> Result<String> {
        let (answer, usage) = match self.entry.kind {
            EvaluatorKind::Command => {
                let cmd = self.entry.command.as_deref().unwrap_or_default();
                (self.run_command(cmd, prompt).await?, None)
            }
            _ => http::chat(&self.entry, prompt, temperature, schema).await?,
        };
        if let Ok(mut m) = self.metered.lock() {
            m.calls += 1;
            match usage {
                Some(u) => {
                    m.tokens_in += u.tokens_in;
                    m.tokens_out += u.tokens_out;
                }
                None => m.unmetered += 1,
            }
        }
        Ok(answer)
    }

    /// What its calls used so far.
    #[must_use]
    pub fn metered(&self) -> Metered {
        self.metered.lock().map(|m| *m).unwrap_or_default()
    }

    async fn persona(
        &self,
        name: &str,
        lens: &str,
        task: &str,
        excerpt: &str,
        t: f64,
    ) -> Option<Review> {
        let prompt = panel::prompt(lens, task, excerpt);
        match self.ask(&prompt, t, &panel::schema()).await {
            Ok(answer) => Some(panel::parse(name, &answer)),
            Err(e) => {
                tracing::warn!("panel persona {name} failed: {e}");
                None
            }
        }
    }

    /// The model (or command) behind it, to compare with the producer's.
    #[must_use]
    pub fn model(&self) -> Option<String> {
        self.entry
            .model
            .clone()
            .or_else(|| self.entry.command.clone())
    }

    /// A warning when the producer's command runs the evaluator's own model (or command).
    #[must_use]
    pub fn same_model_as(&self, producer_command: &str) -> Option<String> {
        self.model()
            .filter(|m| !m.trim().is_empty() && producer_command.contains(m.as_str()))
            .map(|m| format!("the evaluator and the producer use the same model ({m})"))
    }

    async fn run_command(&self, command: &str, prompt: &str) -> Result<String> {
        crate::sys::fsutil::create_dir_all(&self.work)?;
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let stamp = format!("{}-{seq}", chrono::Utc::now().format("%H%M%S%f"));
        let input = self.work.join(format!("eval-{stamp}.prompt.md"));
        let answer = self.work.join(format!("eval-{stamp}.answer.md"));
        crate::sys::fsutil::atomic_write(&input, prompt.as_bytes())?;
        let job = Job::trusted(
            command,
            self.work.clone(),
            vec![("WIGGUM_PHASE".into(), "evaluation".into())],
            self.work.join("eval.log"),
            Duration::from_secs(self.entry.timeout_secs.max(1)),
            Duration::from_secs(2),
            "eval",
        )
        .with_stdin(input.clone())
        .with_stdout(answer.clone());
        let mut stops = self.stops.clone();
        let out = process::run(&job, &mut stops, |_| true).await?;
        let text = crate::sys::fsutil::read_capped(&answer, crate::sys::fsutil::ANSWER_CAP);
        crate::sys::fsutil::remove_file_opt(&input)?;
        crate::sys::fsutil::remove_file_opt(&answer)?;
        let text = text?;
        if !out.ending.success() {
            return Err(Error::runtime(format!(
                "evaluator command `{command}` {} (log: {})",
                out.ending,
                job.log().display()
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

    async fn panel(&self, task: &str, output: &str) -> Vec<Review> {
        let Some(p) = &self.panel else {
            return Vec::new();
        };
        let excerpt: String = output.chars().take(p.excerpt_chars).collect();
        let [a, b, c] = panel::PERSONAS;
        let (ra, rb, rc) = tokio::join!(
            self.persona(a.0, a.1, task, &excerpt, p.temperature),
            self.persona(b.0, b.1, task, &excerpt, p.temperature),
            self.persona(c.0, c.1, task, &excerpt, p.temperature),
        );
        [ra, rb, rc].into_iter().flatten().collect()
    }

    async fn judge(&self, task: &str, task_type: &str, output: &str) -> Result<Evaluation> {
        if self.entry.kind == EvaluatorKind::Heuristic {
            // A code change is judged by its diff's hygiene; its tests judged the rest.
            if task_type == super::hygiene::CODE_TASK {
                return Ok(super::hygiene::evaluate(output));
            }
            return Ok(heuristic::evaluate(task, output));
        }
        // A code change is reviewed as a diff with the code rubric, unless the user gave a
        // template of their own.
        let template = if task_type == super::hygiene::CODE_TASK
            && self.template == prompts::DEFAULT_EVALUATOR
        {
            prompts::CODE_EVALUATOR
        } else {
            &self.template
        };
        let prompt = prompts::evaluator(template, task, task_type, output, &self.dims);
        let schema = http::rubric_schema(&self.dims);
        let answer = self.ask(&prompt, self.temperature, &schema).await?;
        extract::extract(&answer, &self.dims).map_err(Error::runtime)
    }
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

fn md5_digest(bytes: &[u8]) -> [u8; 16] {
    use md5::Digest;
    md5::Md5::digest(bytes).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_choice_is_md5_mod_len_and_reproducible() {
        let pool = |n: usize| -> Vec<String> { (0..n).map(|i| format!("e{i}")).collect() };
        // Expected indexes from Python's hashlib: int.from_bytes(md5(id).digest(), "big") % n.
        for (run_id, n, want) in [
            ("run-1", 3, 2),
            ("run-2", 5, 3),
            ("research-1763890000000", 4, 0),
        ] {
            let p = pool(n);
            assert_eq!(pick_from_pool(&p, run_id), Some(&p[want]), "{run_id}");
        }
        assert_eq!(pick_from_pool(&[], "x"), None);
    }
}
