//! The loop's agent runs (planning, iteration, revision) through `agent::launch`, with the loop's
//! bookkeeping around them: the token saved before the spawn, the pid and process group recorded
//! in state while it runs, the reported cost added up.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::watch;

use super::guard::Protected;
use crate::agent::launch::{self, AgentPhase, AgentRun, Launch};
use crate::agent::process::{JobEvent, StopLevel};
use crate::agent::spec::AgentSpec;
use crate::config::Safety;
use crate::disk::layout::Layout;
use crate::disk::state::{self, LoopState, Step};
use crate::error::Result;

/// Everything needed to run agents for one loop; owns the loop's state.
pub struct Runner {
    /// The loop's topic.
    pub topic: String,
    /// Its paths.
    pub layout: Layout,
    /// The harness of every agent run: limits, environment, sandbox, ceilings.
    pub safety: Safety,
    /// Stop requests from signals.
    pub stops: watch::Receiver<StopLevel>,
    /// The state, saved after every change.
    pub state: LoopState,
    /// The completion promise looked for in the agent's output.
    pub promise: String,
    /// What no agent may change in the repository.
    pub protected: Protected,
    /// `[hooks]`: who is told about the loop's events.
    pub hooks: crate::config::Hooks,
    /// `[notify]`: the built-in sinks told about them.
    pub sinks: crate::config::Notify,
    /// Notifications on their way.
    pub deliveries: super::deliver::Deliveries,
    /// `[defaults] keep_awake`: idle sleep held off while an agent runs.
    pub awake: crate::sys::awake::Awake,
    /// `[prices]`, to price the tokens of agents that report no cost.
    pub prices: std::collections::BTreeMap<String, crate::config::Price>,
    /// The loop's file watch: a run's file changes count as its activity.
    pub activity: Option<crate::sys::watch::Shared>,
    /// The repository's git dir and where its HEAD pointed when the loop started: the loop
    /// commits there only.
    pub head: Option<(PathBuf, crate::git::HeadRef)>,
    /// Whether agents may write the whole repository (`code` loops) or only the artifact dir.
    pub repo_wide: bool,
    /// The last commit the loop accepted (or found at start) on that branch: after every run
    /// the branch must still hold it (`git::history`).
    pub last_accepted: Option<String>,
    /// The questions last written out of the agents' reach (`None`: not yet this run).
    pub kept_questions: Option<crate::disk::questions::Kept>,
    /// The spend as last written out of the agents' reach (`disk::ledger`).
    pub kept_spend: Option<crate::disk::ledger::Ledger>,
}

/// Where and how one run happens.
pub struct RunSpec<'a> {
    /// Planning, an iteration or a revision round.
    pub kind: AgentPhase,
    /// The iteration number (0 for planning).
    pub iteration: u32,
    /// Directory for the prompt and the log (the loop's records).
    pub dir: &'a Path,
    /// The directory the agent works in (`ITERATION_DIR`).
    pub work: &'a Path,
    /// File name stem for the prompt (`prompt` → `prompt.md`).
    pub stem: &'a str,
    /// Capture stdout separately (revision answers).
    pub stdout: Option<PathBuf>,
    /// Sampling temperature for producers that call a model (`WIGGUM_TEMPERATURE`).
    pub temperature: Option<f64>,
}

impl Runner {
    /// When a limited agent may run again: the reset its answer `named`, else the backoff of
    /// `[safety] limit_backoff_secs`, doubling with each limit in a row that named none.
    pub fn limit_until(
        &mut self,
        named: Option<chrono::DateTime<chrono::Utc>>,
    ) -> chrono::DateTime<chrono::Utc> {
        named.unwrap_or_else(|| {
            let wait =
                super::limits::backoff(self.safety.limit_backoff_secs, self.state.limit_waits);
            self.state.limit_waits += 1;
            chrono::Utc::now() + chrono::Duration::from_std(wait).unwrap_or_default()
        })
    }

    /// Wait until `until` (a usage limit's reset, a free call slot) with the status `waiting`
    /// and the reason shown; `stop` ends the wait at once (returns `true`), a pause holds it.
    pub async fn wait_until(
        &mut self,
        until: chrono::DateTime<chrono::Utc>,
        reason: &str,
    ) -> Result<bool> {
        self.wait_while(until, reason, || true).await
    }

    /// [`Self::wait_until`], ending early (with `false`) as soon as `still()` says the reason
    /// to wait is gone.
    pub async fn wait_while(
        &mut self,
        until: chrono::DateTime<chrono::Utc>,
        reason: &str,
        mut still: impl FnMut() -> bool,
    ) -> Result<bool> {
        let wait = Step::Wait {
            until,
            reason: reason.to_string(),
        };
        self.state.step(wait, chrono::Utc::now())?;
        self.save()?;
        let n = self.state.current_iteration;
        let fields = super::event::Fields::Waiting {
            until: until.to_rfc3339(),
        };
        self.notify("waiting", n, reason, fields).await;
        tracing::info!(
            "waiting until {} ({reason})",
            until.with_timezone(&chrono::Local).format("%H:%M:%S")
        );
        let stopped = loop {
            if self.stop_level() >= StopLevel::Now {
                break true;
            }
            let req = crate::disk::requests::read(&self.layout.requests());
            if req.stop_after_iteration {
                break true;
            }
            if !still() || (chrono::Utc::now() >= until && !req.pause) {
                break false;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        self.state.step(Step::WaitOver, chrono::Utc::now())?;
        self.save()?;
        Ok(stopped)
    }

    /// Hold the next agent run until `[safety] max_calls_per_hour` allows it; then count it.
    async fn take_call_slot(&mut self) -> Result<()> {
        let max = self.safety.max_calls_per_hour as usize;
        let now = chrono::Utc::now();
        let hour = chrono::Duration::hours(1);
        self.state.recent_calls.retain(|t| now - *t < hour);
        if max > 0
            && self.state.recent_calls.len() >= max
            && let Some(oldest) = self.state.recent_calls.front().copied()
        {
            let reason = format!("{max} agent runs per hour ([safety] max_calls_per_hour)");
            self.wait_until(oldest + hour, &reason).await?;
        }
        self.state.recent_calls.push_back(chrono::Utc::now());
        while self.state.recent_calls.len() > max.max(1) {
            self.state.recent_calls.pop_front();
        }
        Ok(())
    }

    /// The wall limit of the run about to start: `own`, cut to what is left of the loop's
    /// `[safety] max_time_per_loop`. Spent already (a wait for a call slot ran past it): the run
    /// does not start.
    fn wall_limit(&self, own: Duration) -> Result<Duration> {
        let max = self.safety.max_time_per_loop;
        let elapsed = (chrono::Utc::now() - self.state.started_at)
            .to_std()
            .unwrap_or_default();
        super::budget::run_limit(own, max, elapsed).ok_or_else(|| {
            crate::error::Error::runtime(format!(
                "time budget: {} s of {max} s spent before the run could start",
                elapsed.as_secs()
            ))
        })
    }

    /// Why the loop cannot go on when `wiggum/` or the prompt in it is gone (an agent deleted
    /// them, or the branch was switched under the loop), after putting back what the supervisor
    /// owns; `None` while they are there.
    pub fn memory_gone(&mut self) -> Option<crate::error::Error> {
        let wiggum = self.layout.wiggum();
        if crate::sys::beneath::is_link(&wiggum) {
            // A link in `wiggum/`'s place is the loop's memory gone, and nothing is followed.
            tracing::warn!(
                "{}: a symbolic link in the loop's directory's place; removed",
                wiggum.display()
            );
            if let Err(e) = crate::sys::fsutil::remove_file_opt(&wiggum) {
                tracing::error!("{e}");
            }
        } else if wiggum.is_dir() && self.layout.memory("PROMPT.md").is_file() {
            return None;
        }
        let deleted = self.rebuild_after_deletion();
        // Not the agent: the branch was switched under the loop, taking its memory along.
        if let Some(moved) = self.head_moved() {
            return Some(crate::error::Error::runtime(format!(
                "the loop's memory is gone from the work tree: {moved}, then start the loop again"
            )));
        }
        Some(deleted)
    }

    /// The agent deleted `wiggum/`: put back what the supervisor owns (the state, the run
    /// records from the records' copy) and say how to go on. The loop then ends.
    fn rebuild_after_deletion(&mut self) -> crate::error::Error {
        if !self.layout.root().is_dir() {
            // The whole directory went (moved or deleted while the loop ran): nothing is
            // recreated there; the supervisor says so.
            return crate::error::Error::runtime("the loop's directory went away");
        }
        let wiggum = self.layout.wiggum();
        let restored = crate::sys::fsutil::create_dir_all(&wiggum).and_then(|()| {
            let copy = self.layout.runs_copy();
            if copy != self.layout.runs() && copy.exists() {
                crate::sys::fsutil::copy_file(&copy, &self.layout.runs())?;
            }
            self.save()
        });
        if let Err(e) = restored {
            tracing::error!("{e}");
        }
        // Before its first commit, git holds none of it to give back.
        let committed = crate::git::Repo::open(self.layout.root())
            .is_ok_and(|r| r.in_head(Path::new("wiggum/PROMPT.md")));
        let how = if committed {
            "restore the rest from git (`git checkout -- wiggum`) and start the loop again"
        } else {
            "the rest was never committed, so git cannot give it back: move it back where the agent moved it, or start the loop again and its prompts are written afresh"
        };
        crate::error::Error::runtime(format!(
            "the agent deleted {} (or the loop's memory in it: plan, prompts, settings); the state and run records were restored — {how}",
            wiggum.display()
        ))
    }

    /// After a run: the loop's branch must still hold the last accepted commit, with HEAD on
    /// it. What the agent did to it is put back, and said (the run is then rejected).
    fn put_history_back(&mut self, facts: Option<&crate::git::history::Facts>) -> Option<String> {
        let (git_dir, at) = self.head.as_ref()?;
        let last = self.last_accepted.as_deref()?;
        let facts = facts?;
        // A rebase, merge or cherry-pick in progress is someone's operation half done: it is not
        // undone under them; the commit waits for it to finish, saying so.
        if facts.busy {
            return None;
        }
        let broke = crate::git::history::decide(at, facts)?;
        let what = broke.describe(at);
        // Said among the protected files the run changed: a name, its story in brackets.
        Some(match crate::git::history::restore(git_dir, at, last) {
            Ok(()) => format!(
                "the loop's history ({what}; put back at {})",
                &last[..last.len().min(10)]
            ),
            Err(e) => {
                tracing::error!("{what}, and it could not be put back: {e}");
                format!("the loop's history ({what}; could not put it back: {e})")
            }
        })
    }

    /// Why HEAD is not where the loop started (another shell switched branches), if it is not.
    #[must_use]
    pub fn head_moved(&self) -> Option<String> {
        let (git_dir, at_start) = self.head.as_ref()?;
        crate::git::head_moved(git_dir, at_start)
    }

    /// Save the state (a failed save is fatal: the loop must not run blind).
    pub fn save(&mut self) -> Result<()> {
        let _t = crate::sys::timing::step("records.state");
        state::save(&self.layout.state(), &mut self.state)?;
        self.keep_spend()?;
        self.keep_questions()
    }

    /// The spend written out of the agents' reach, when it changed since last written.
    fn keep_spend(&mut self) -> Result<()> {
        let now = crate::disk::ledger::Ledger {
            cost_usd: self.state.cost_usd,
            spend: self.state.spend.clone(),
        };
        if self.kept_spend.as_ref() != Some(&now) {
            now.write(&self.layout.spend())?;
            self.kept_spend = Some(now);
        }
        Ok(())
    }

    /// The questions written out of the agents' reach, when they changed since last written.
    fn keep_questions(&mut self) -> Result<()> {
        let now = crate::disk::questions::Kept {
            question: self.state.question.clone(),
            answered: self.state.answered.clone(),
            earlier: self.state.earlier.clone(),
        };
        if self.kept_questions.as_ref() != Some(&now) {
            now.write(&self.layout.questions())?;
            self.kept_questions = Some(now);
        }
        Ok(())
    }

    /// The current stop level.
    #[must_use]
    pub fn stop_level(&self) -> StopLevel {
        *self.stops.borrow()
    }

    /// Run `agent` for a phase with `prompt` on stdin (or as `{prompt_file}`): the launch
    /// prepared and recorded, the run (the machine held awake), the protected files kept and
    /// `before_gate` done while its process starts (before its command may run), what it
    /// changed of them put back, what it spent booked. An error of `before_gate` (or of the
    /// protected files' record) keeps the command from running and is the run's.
    pub async fn run_agent(
        &mut self,
        agent: &AgentSpec,
        phase: &RunSpec<'_>,
        prompt: &str,
        before_gate: &mut dyn FnMut() -> Result<()>,
    ) -> Result<AgentRun> {
        let launch = self.prepare_launch(phase).await?;
        let continued = crate::sys::resumed::count();
        let mut before = None;
        let run = self
            .launch_held(agent, &launch, prompt, phase.work, &mut before, before_gate)
            .await;
        // Without a record of the protected files the gate never opened (or nothing was
        // spawned): nothing of the command ran.
        let before = match before {
            Some(Ok(b)) => b,
            Some(Err(e)) => return self.never_ran(e),
            None => {
                return self.never_ran(run.err().unwrap_or_else(|| {
                    crate::error::Error::runtime("the run ended without its start being recorded")
                }));
            }
        };
        let (mut changed, committed) = self.put_back(&before)?;
        self.state.step(Step::AgentGone, chrono::Utc::now())?;
        self.say_restored(phase, &changed);
        // One save records the agent gone and what it spent (below), not one for each.
        let mut run = match run {
            Ok(run) => run,
            Err(e) => {
                self.save()?;
                return Err(e);
            }
        };
        if self.was_stopped_during(continued).await {
            changed.push(super::decide::dispose::SUPERVISOR_STOPPED.into());
        }
        run.protected_changed = changed;
        run.committed = committed;
        self.state.agent_env.clone_from(&run.env_names);
        self.book_spend(agent, &mut run)?;
        log_run(agent, phase, &run);
        Ok(run)
    }

    /// A run whose command never ran ends with `e`: recorded gone, no protected files to put
    /// back.
    fn never_ran(&mut self, e: crate::error::Error) -> Result<AgentRun> {
        let _kept = super::guard::persist::clear(self.layout.records());
        self.state.step(Step::AgentGone, chrono::Utc::now())?;
        self.save()?;
        Err(e)
    }

    /// The run's launch: its phase's places, a call slot taken, the wall limit bounded by what
    /// is left of the loop's budget; its token on disk before the spawn (a supervisor killed at
    /// any instant leaves nothing the next start cannot find).
    async fn prepare_launch(&mut self, phase: &RunSpec<'_>) -> Result<Launch> {
        let mut launch = Launch {
            iteration: phase.iteration,
            wiggum_dir: Some(self.layout.wiggum()),
            work_dir: phase.work.to_path_buf(),
            stem: phase.stem.to_string(),
            stdout: phase.stdout.clone(),
            temperature: phase.temperature,
            repo_wide: self.repo_wide,
            activity: self.activity.clone(),
            ..Launch::for_phase(
                phase.kind,
                &self.topic,
                self.layout.root().to_path_buf(),
                phase.dir.to_path_buf(),
                &self.safety,
                &format!("{}-{}", self.topic, phase.iteration),
            )
        };
        self.take_call_slot().await?;
        launch.limit = self.wall_limit(launch.limit)?;
        let starting = Step::AgentStarting(launch.token.clone());
        self.state.step(starting, chrono::Utc::now())?;
        self.save()?;
        Ok(launch)
    }

    /// The run itself, the machine held awake for it alone (waits, pauses and the loop's end let
    /// it sleep); the spawn and a stop request recorded in the state as they come.
    async fn launch_held(
        &mut self,
        agent: &AgentSpec,
        launch: &Launch,
        prompt: &str,
        work: &std::path::Path,
        before: &mut Option<Result<super::guard::Before>>,
        before_gate: &mut dyn FnMut() -> Result<()>,
    ) -> Result<AgentRun> {
        let _awake = self
            .awake
            .hold(&format!("loop `{}` runs an agent", self.topic))
            .await;
        let state_path = self.layout.state();
        let (st, protected, layout) = (&mut self.state, &self.protected, &self.layout);
        launch::run(
            agent,
            launch,
            prompt,
            &self.promise,
            &mut self.stops,
            |event| {
                let step = match event {
                    JobEvent::Spawned(pid) => Step::AgentSpawned(pid),
                    JobEvent::Stopping => Step::StopRequested,
                };
                if let Err(e) = st.step(step, chrono::Utc::now()) {
                    tracing::error!("{e}");
                } else if let Err(e) = state::save(&state_path, st) {
                    tracing::error!("cannot record the agent's state: {e}");
                }
                if !matches!(event, JobEvent::Spawned(_)) {
                    return true;
                }
                // While its process starts: the protected files recorded, the caller's part.
                let kept = keep_protected(protected, layout, work).and_then(|b| {
                    before_gate()?;
                    Ok(b)
                });
                let open = kept.is_ok();
                *before = Some(kept);
                open
            },
        )
        .await
    }

    /// After the run: the history put back first (putting the branch back may bring the loop's
    /// memory back with it), then the protected files; returns what the run changed of them,
    /// and whether it made commits of its own on top of the loop's.
    fn put_back(&mut self, before: &super::guard::Before) -> Result<(Vec<String>, bool)> {
        let _checks = crate::sys::timing::step("checks.after");
        // Nothing in the git directory that libgit2 would wait on for ever, before it is asked.
        if let Some((git_dir, _)) = self.head.as_ref() {
            crate::git::rules::clear_odd_git_dir(git_dir);
        }
        let facts = self
            .head
            .as_ref()
            .zip(self.last_accepted.as_deref())
            .and_then(|((dir, at), last)| crate::git::history::facts(dir, at, last));
        let history = self.put_history_back(facts.as_ref());
        let committed = history.is_none() && facts.is_some_and(|f| f.moved_on);
        if let Some(gone) = self.memory_gone() {
            return Err(gone);
        }
        let written = state::to_json(&self.state)?;
        let mut changed = before.restore_changes(&self.layout, written.as_bytes())?;
        super::guard::persist::clear(self.layout.records())?;
        changed.extend(history);
        Ok((changed, committed))
    }

    /// Say (the log, the state's last event) what the run changed of the protected files.
    fn say_restored(&mut self, phase: &RunSpec<'_>, changed: &[String]) {
        if changed.is_empty() {
            return;
        }
        let what = format!(
            "{} {}: the agent changed {}; restored",
            phase.kind.as_str(),
            phase.iteration,
            changed.join(", ")
        );
        tracing::warn!("{what}");
        self.state.last_event = Some(what);
    }

    /// Whether the supervisor was stopped (SIGSTOP, Ctrl-Z) while the agent ran: it went on
    /// unwatched. (A `stop` continues the supervisor too, after its SIGTERM: that is no stop of
    /// the run's watch, and the run is interrupted anyway.)
    async fn was_stopped_during(&self, continued: u64) -> bool {
        // Let the signal task count a SIGCONT that came with the run's end.
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
        crate::sys::resumed::count() != continued && self.stop_level() == StopLevel::None
    }

    /// What the run spent (its own figure, else its tokens at the model's price), added to the
    /// loop's spend and saved.
    fn book_spend(&mut self, agent: &AgentSpec, run: &mut AgentRun) -> Result<()> {
        let report = &run.report;
        let priced = report.cost_usd.or_else(|| {
            let price = agent
                .table
                .model
                .as_deref()
                .and_then(|m| crate::config::price_of(&self.prices, m));
            super::budget::price(price, report.tokens_in, report.tokens_out)
        });
        let tokens = match (report.tokens_in, report.tokens_out) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        self.state.spend.add(priced, tokens, true);
        self.state.cost_usd = self.state.spend.cost_usd;
        self.save()?;
        run.report.cost_usd = priced;
        Ok(())
    }
}

/// The log's line of a run that ended.
fn log_run(agent: &AgentSpec, phase: &RunSpec<'_>, run: &AgentRun) {
    let what = match phase.kind {
        AgentPhase::Iteration => format!("iteration {}", phase.iteration),
        AgentPhase::Revision => format!("iteration {}, revision", phase.iteration),
        other => other.as_str().to_string(),
    };
    tracing::info!(
        "{what}: agent `{}` (pid {}) {} after {:.1}s",
        agent.name,
        run.outcome.pid,
        run.outcome.ending,
        run.outcome.duration.as_secs_f64()
    );
}

/// The protected files as they are before a run, on disk beside the run's records (a
/// supervisor killed during the run leaves what the next start puts back).
fn keep_protected(
    protected: &super::guard::Protected,
    layout: &Layout,
    work: &std::path::Path,
) -> Result<super::guard::Before> {
    let _checks = crate::sys::timing::step("checks.before");
    let before = protected.before(layout, work);
    before.persist(layout.records())?;
    Ok(before)
}
