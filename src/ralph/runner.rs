//! Spawning the agent for one phase (planning, iteration, revision): the prompt written next to
//! the log, the contract's environment, the pid and process group recorded in state while it runs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::watch;

use crate::agent::output::{self, Report};
use crate::agent::process::{self, Job, JobEvent, Outcome, StopLevel};
use crate::agent::spec::{self, AgentSpec};
use crate::config::Safety;
use crate::disk::layout::Layout;
use crate::disk::records::RunFacts;
use crate::disk::state::{self, LoopState, Status};
use crate::error::Result;
use crate::sys::fsutil;

/// Everything needed to run agents for one loop; owns the loop's state.
pub struct Runner {
    /// The loop's topic.
    pub topic: String,
    /// Its paths.
    pub layout: Layout,
    /// Limits.
    pub safety: Safety,
    /// Stop requests from signals.
    pub control: watch::Receiver<StopLevel>,
    /// The state, saved after every change.
    pub state: LoopState,
    /// The completion promise looked for in the agent's output.
    pub promise: String,
}

/// One agent run.
#[derive(Debug)]
pub struct AgentRun {
    /// How the process ended.
    pub outcome: Outcome,
    /// What its output said.
    pub report: Report,
    /// The prompt it was fed.
    pub prompt: String,
    /// When it started.
    pub started_at: DateTime<Utc>,
}

/// Where and how one run happens.
pub struct Phase<'a> {
    /// `planning`, `iteration` or `revision`.
    pub name: &'a str,
    /// The iteration number (0 for planning).
    pub iteration: u32,
    /// Directory for the prompt and the log.
    pub dir: &'a Path,
    /// File name stem for the prompt (`prompt` → `prompt.md`).
    pub stem: &'a str,
    /// Capture stdout separately (revision answers).
    pub stdout: Option<PathBuf>,
    /// Sampling temperature for producers that call a model (`WIGGUM_TEMPERATURE`).
    pub temperature: Option<f64>,
}

impl AgentRun {
    /// What the run contributes to its record.
    #[must_use]
    pub fn facts(&self) -> RunFacts {
        RunFacts {
            started_at: self.started_at,
            pid: self.outcome.pid,
            ending: self.outcome.ending,
            cost_usd: self.report.cost_usd,
            tokens_in: self.report.tokens_in,
            tokens_out: self.report.tokens_out,
        }
    }
}

impl Runner {
    /// Save the state (a failed save is fatal: the loop must not run blind).
    pub fn save(&mut self) -> Result<()> {
        state::save(&self.layout.state(), &mut self.state)
    }

    /// The current stop level.
    #[must_use]
    pub fn stop_level(&self) -> StopLevel {
        *self.control.borrow()
    }

    /// Run `agent` for a phase with `prompt` on stdin (or as `{prompt_file}`).
    pub async fn run_agent(
        &mut self,
        agent: &AgentSpec,
        phase: &Phase<'_>,
        prompt: &str,
    ) -> Result<AgentRun> {
        fsutil::create_dir_all(phase.dir)?;
        let prompt_file = phase.dir.join(format!("{}.md", phase.stem));
        fsutil::atomic_write(&prompt_file, prompt.as_bytes())?;
        let t = &agent.table;
        let cwd = t.cwd.as_ref().map_or_else(
            || self.layout.root().to_path_buf(),
            |c| self.layout.root().join(c),
        );
        let mut env: Vec<(String, String)> = vec![
            ("ITERATION".into(), phase.iteration.to_string()),
            (
                "PREV_ITERATION".into(),
                phase.iteration.saturating_sub(1).to_string(),
            ),
            ("ITERATION_DIR".into(), phase.dir.display().to_string()),
            (
                "WIGGUM_DIR".into(),
                self.layout.wiggum().display().to_string(),
            ),
            (
                "ARTIFACT_PATH".into(),
                self.layout.root().display().to_string(),
            ),
            ("TOPIC".into(), self.topic.clone()),
            ("WIGGUM_PHASE".into(), phase.name.to_string()),
            ("PROMPT_FILE".into(), prompt_file.display().to_string()),
        ];
        if let Some(temp) = phase.temperature {
            env.push(("WIGGUM_TEMPERATURE".into(), temp.to_string()));
        }
        env.extend(t.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        let job = Job {
            command: spec::command_line(t, &prompt_file),
            cwd,
            env,
            stdin: t.stdin.then(|| prompt_file.clone()),
            log: phase.dir.join("agent.log"),
            stdout: phase.stdout.clone(),
            limit: Duration::from_secs(self.safety.max_time_per_iteration),
            grace: Duration::from_secs(self.safety.kill_grace_secs),
            token: process::new_token(&format!("{}-{}", self.topic, phase.iteration)),
        };
        let started_at = Utc::now();
        let state_path = self.layout.state();
        // The token is on disk before the spawn and the process group before the job's gate
        // opens: a supervisor killed at any instant leaves nothing the next start cannot find.
        self.state.agent_token = Some(job.token.clone());
        self.save()?;
        let st = &mut self.state;
        let outcome = process::run(&job, &mut self.control, |event| {
            match event {
                JobEvent::Spawned(pid) => {
                    st.agent_pid = Some(pid);
                    st.agent_pgid = Some(pid.cast_signed());
                }
                JobEvent::Stopping => st.status = Status::Stopping,
            }
            if let Err(e) = state::save(&state_path, st) {
                tracing::error!("cannot record the agent's state: {e}");
            }
        })
        .await?;
        self.state.agent_pid = None;
        self.state.agent_pgid = None;
        self.state.agent_token = None;
        self.save()?;
        // An answer read back is bounded (past the cap: an error, so the gate records ERROR);
        // a log is streamed, whatever its size and bytes.
        let report = match &phase.stdout {
            Some(p) if p.exists() => output::parse(
                t.output_format,
                &fsutil::read_capped(p, fsutil::ANSWER_CAP)?,
            ),
            Some(_) => output::Report::default(),
            None => output::scan_file(t.output_format, &job.log, &self.promise)?,
        };
        if let Some(c) = report.cost_usd {
            self.state.cost_usd += c;
        }
        let what = match phase.name {
            "iteration" => format!("iteration {}", phase.iteration),
            "revision" => format!("iteration {}, revision", phase.iteration),
            other => other.to_string(),
        };
        tracing::info!(
            "{what}: agent `{}` (pid {}) {} after {:.1}s",
            agent.name,
            outcome.pid,
            outcome.ending,
            outcome.duration.as_secs_f64()
        );
        Ok(AgentRun {
            outcome,
            report,
            prompt: prompt.to_string(),
            started_at,
        })
    }
}
