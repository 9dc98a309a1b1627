//! The outer loop: planning once, then iterations until an exit condition holds. Every decision
//! comes from `decide`; this file gathers the facts and performs the result.

use std::time::Duration;

use super::context::Loop;
use super::decide::dispose::{Context, Disposition, RunPhase, Then, dispose};
use super::decide::{self, Facts};
use super::event::Fields;
use super::runner::RunSpec;
use super::{fix_plan, iteration, templates};
use crate::agent::launch::AgentPhase;
use crate::agent::process::StopLevel;
use crate::disk::requests;
use crate::disk::runlog::{Outcome, RecordKind, RunRecord};
use crate::disk::state::{Step, StopReason};
use crate::error::Result;
use crate::sys::fsutil;

impl Loop {
    fn facts(&self) -> Result<Facts> {
        let plan = fsutil::read_opt(&self.runner.layout.fix_plan())?.unwrap_or_default();
        Ok(Facts {
            stop_requested: self.runner.stop_level() >= StopLevel::Now
                || requests::read(&self.runner.layout.requests()).stop_after_iteration,
            iterations_done: self.done,
            max_iterations: self.settings.defaults.max_iterations,
            plan_remaining: fix_plan::open_counts(&plan, &self.settings.defaults.optional_sections)
                .0,
            quality: self.runner.state.last_quality,
            quality_threshold: self.settings.defaults.quality_threshold,
            promise_taken: self.promise_taken.clone(),
            promise_rejected: self.promise_rejected.clone(),
            budget: self.budget_spent(),
            red: (!self.work.may_end_done(self.validation.last.as_ref()))
                .then(|| self.validation.last.as_ref().map(|r| r.summary()))
                .flatten(),
            answer_waiting: self.answer_waiting(),
        })
    }

    /// Whether the user answered a question no run has been told the answer to yet: given
    /// (`answer.json`) or taken for the next prompt.
    fn answer_waiting(&self) -> bool {
        let st = &self.runner.state;
        self.runner.layout.answer().is_file()
            || !st.answered.is_empty()
            || st.question.as_ref().is_some_and(|q| q.answer.is_some())
    }

    /// Whether this loop judges iterations against a validated tree (a code loop with
    /// validation commands).
    fn validates_code(&self) -> bool {
        self.work == super::work::Kind::Code && !self.settings.validation.commands.is_empty()
    }

    /// A code loop where there was no repository (the loop made one): the project as it was
    /// becomes the first commit, so each iteration's commit holds what its agent changed and
    /// nothing of the user's is left untracked (build output and caches left out).
    async fn commit_the_project(&mut self) -> Result<()> {
        if self.work != super::work::Kind::Code || self.repo.head().is_some() {
            return Ok(());
        }
        let now = self.tracker.snapshot(&self.repo)?;
        let paths: Vec<std::path::PathBuf> =
            now.paths().map(std::path::Path::to_path_buf).collect();
        let subject = "Wiggum: the project as it was before the loop";
        if let Some(sha) = super::commit::commit(self, subject, &paths, 0).await?.sha() {
            super::progress::say(&format!(
                "No git repository was here: one was made, and the project as it was is its first commit ({})",
                &sha[..sha.len().min(7)]
            ));
        }
        Ok(())
    }

    /// Validate the tree before the first run of this start: what each iteration is judged
    /// against (red at the start is normal). A validation command that cannot run at all (a
    /// missing program, module, script or target) ends the loop before any agent is paid for.
    async fn take_baseline(&mut self) -> Result<Option<String>> {
        if !self.validates_code() {
            return Ok(None);
        }
        let log = self.runner.layout.loop_validation_log("baseline");
        fsutil::remove_file_opt(&log)?;
        let (results, _restored) = super::accept::run_validation(self, &log, 0).await?;
        tracing::info!(
            "validation before the first iteration: {}",
            results.summary()
        );
        super::progress::say(&format!(
            "Validation before iteration {}: {}",
            self.done + 1,
            results.summary()
        ));
        let broken = results
            .commands
            .iter()
            .find_map(super::validation::compare::cannot_run);
        let earlier = super::work::read_tree(&self.runner.layout);
        self.validation.start(results, earlier.as_ref());
        self.validation.save(&self.runner.layout, self.done)?;
        Ok(broken.map(|why| {
            format!("{why}; name a command that runs with `--validate CMD` (or `[validation] commands`), or `--no-validate`")
        }))
    }

    /// Validate the final tree of a code loop; a loop that would end done (or at its limit)
    /// with it failing ends `validation_failed` instead.
    async fn validate_final(
        &mut self,
        reason: StopReason,
        why: &str,
    ) -> Result<(StopReason, String)> {
        let kept = (reason, why.to_string());
        if !self.validates_code()
            || self.validation.baseline.is_none()
            || matches!(reason, StopReason::UserStop | StopReason::Error)
        {
            return Ok(kept);
        }
        let log = self.runner.layout.loop_validation_log("final");
        fsutil::remove_file_opt(&log)?;
        let (results, _restored) = super::accept::run_validation(self, &log, 0).await?;
        let green = results.green();
        let summary = results.summary();
        self.validation.last = Some(results);
        self.validation.save(&self.runner.layout, self.done)?;
        let done_kind = matches!(
            reason,
            StopReason::PlanEmpty
                | StopReason::Promise
                | StopReason::ThresholdMet
                | StopReason::MaxIterations
        );
        Ok(if !green && done_kind {
            (
                StopReason::ValidationFailed,
                format!(
                    "the validation fails on the final tree ({summary}); the loop stopped with: {why}"
                ),
            )
        } else {
            kept
        })
    }

    /// The budget that stops the next paid run, if any (cost, tokens, wall time).
    pub fn budget_spent(&self) -> Option<String> {
        let s = &self.settings.safety;
        let b = super::budget::Budget {
            max_cost: s.max_cost_per_loop,
            max_tokens: s.max_tokens_per_loop,
            max_secs: s.max_time_per_loop,
        };
        let st = &self.runner.state;
        let elapsed =
            u64::try_from((chrono::Utc::now() - st.started_at).num_seconds()).unwrap_or(0);
        super::budget::exhausted(&st.spend, elapsed, b)
    }

    /// Run to the end. Returns why it ended.
    pub async fn run(&mut self) -> Result<StopReason> {
        self.commit_the_project().await?;
        if let Some(why) = self.take_baseline().await? {
            return self.finish(StopReason::Error, &why).await;
        }
        let plan = fsutil::read_opt(&self.runner.layout.fix_plan())?.unwrap_or_default();
        if !fix_plan::has_items(&plan)
            && let Some(r) = self.plan().await?
        {
            return self.finish(r.0, &r.1).await;
        }
        self.runner.step(Step::Run)?;
        self.runner.save()?;
        loop {
            let facts = self.facts()?;
            self.runner.plan_counts(facts.plan_remaining, None);
            if let Some((reason, why)) = decide::exit_reason(&facts) {
                return self.finish(reason, &why).await;
            }
            let n = self.done + 1;
            if self.wait_while_paused(n).await? {
                continue;
            }
            match iteration::run(self, n).await? {
                iteration::IterationEnd::Done => {
                    self.done = n;
                    let st = &self.runner.state;
                    let fields = Fields::IterationEnd {
                        items_remaining: st.items_remaining,
                        last_gate_score: st.last_gate_score,
                        cost: st.spend.shown(),
                    };
                    self.runner.notify("iteration_end", n, "", fields).await;
                }
                iteration::IterationEnd::Stop(reason, why) => {
                    return self.finish(reason, &why).await;
                }
            }
        }
    }

    /// Pause at the boundary before iteration `n` when asked (or for human review); `n` 0 is
    /// between planning's attempts. Returns true if it paused (the caller re-checks the exit
    /// conditions).
    async fn wait_while_paused(&mut self, n: u32) -> Result<bool> {
        let ctl = self.runner.layout.requests();
        let review_at = self.settings.safety.require_human_review_at_iteration;
        if review_at > 0 && n == review_at && !self.runner.state.reviewed {
            let why = format!("human review before iteration {n}");
            requests::update(&ctl, |r| {
                r.pause = true;
                r.pause_reason = Some(why.clone());
            })?;
            self.runner.reviewed();
            let fields = Fields::NeedsHuman {
                resume: format!(
                    "{} wiggum resume {}",
                    super::progress::program(crate::config::home_to_name().as_deref()),
                    self.runner.topic
                ),
            };
            self.runner.notify("needs_human", n, &why, fields).await;
        }
        if !requests::read(&ctl).pause {
            return Ok(false);
        }
        self.runner.step(Step::Pause)?;
        self.runner.paused_before(Some(n));
        self.runner.save()?;
        let asked = requests::read(&ctl);
        let for_question = asked.paused_for_question;
        self.control_record("pause", n, asked.pause_reason)?;
        if n == 0 {
            tracing::info!("paused while planning");
        } else {
            tracing::info!("paused before iteration {n}");
        }
        while requests::read(&ctl).pause && self.runner.stop_level() == StopLevel::None {
            if requests::read(&ctl).stop_after_iteration {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        // Iteration 0 is planning's: it goes back to planning.
        self.runner
            .step(if n == 0 { Step::Plan } else { Step::Resume })?;
        self.runner.paused_before(None);
        self.runner.save()?;
        // Why it goes on, for `events`.
        let why = if self.runner.stop_level() != StopLevel::None
            || requests::read(&ctl).stop_after_iteration
        {
            "stopped"
        } else if for_question && self.runner.layout.answer().is_file() {
            "the question was answered"
        } else {
            "resumed by the user"
        };
        self.control_record("resume", n, Some(why.to_string()))?;
        tracing::info!("resumed");
        Ok(true)
    }

    /// A pause or a resume before iteration `n`, in the run records (for `events`).
    fn control_record(&self, what: &str, n: u32, reason: Option<String>) -> Result<()> {
        let rec = crate::disk::records::ControlRecord {
            record: what.to_string(),
            iteration: n,
            at: chrono::Utc::now(),
            reason,
        };
        crate::disk::runlog::record(&self.runner.layout, &rec)
    }

    /// The planning phase: attempts until one writes plan items, each decided as an iteration's
    /// is (`decide::after_attempt`, then `dispose` for planning) and carried out here. Returns a
    /// stop when it cannot go on.
    async fn plan(&mut self) -> Result<Option<(StopReason, String)>> {
        self.runner.step(Step::Plan)?;
        self.runner.save()?;
        let layout = self.runner.layout.clone();
        let template = fsutil::read(&layout.memory("PLANNING_PROMPT.md"))?;
        let base = templates::render(
            &template,
            &templates::iteration_vars(0, &layout.planning_dir()),
        );
        let attempts = self.settings.safety.max_crash_retries + 1;
        let mut attempt = 0;
        let mut asked = None;
        while attempt < attempts {
            attempt += 1;
            if !self.fallbacks.is_empty()
                && let Some(super::iteration::IterationEnd::Stop(reason, why)) =
                    super::iteration::pick_agent(self, 0).await?
            {
                return Ok(Some((reason, why)));
            }
            // A question planning asked, and its answer once given, go with the next attempt.
            super::asking::take_answer(self)?;
            let mut prompt = base.clone();
            let st = &self.runner.state;
            for q in st.answered.iter().chain(&st.earlier).chain(&st.question) {
                prompt.push_str(&super::asking::prompt_section(q));
            }
            let (d, changed, question) = self.plan_attempt(&prompt, attempt, attempts).await?;
            if d.carry {
                super::commit::carry(self, &changed);
            }
            match d.then {
                Then::Accept => return self.commit_plan(&changed).await,
                Then::Wait { until, what } => {
                    // A limit is no failed attempt: wait it out, or hand over to a fallback.
                    attempt -= 1;
                    let until = self.runner.limit_until(until);
                    if self.fallbacks.is_empty() {
                        let reason = format!("{what}, {}", self.agent.name);
                        if self.runner.wait_until(until, &reason).await? {
                            return Ok(Some((
                                StopReason::UserStop,
                                format!("stopped while waiting ({reason})"),
                            )));
                        }
                    } else {
                        let name = self.agent.name.clone();
                        self.runner.limited(name, until);
                    }
                }
                Then::Stop(reason, why) => {
                    self.runner.save()?;
                    return Ok(Some((reason, why)));
                }
                Then::Asked => {
                    let q = question.unwrap_or_default();
                    asked = Some(q.clone());
                    super::asking::asked(self, 0, q).await?;
                    // Paused for it: what comes after the pause is no failed attempt.
                    if self.wait_while_paused(0).await? {
                        if let Some(stop) = self.stopped_while_planning() {
                            return Ok(Some(stop));
                        }
                        attempt -= 1;
                    }
                }
                Then::Again | Then::Over | Then::NoChange => {}
            }
        }
        let why = match asked {
            Some(q) => format!(
                "planning asked \"{q}\" instead of writing fix_plan.md, {attempts} times: answer it ({}) and start the loop again",
                super::asking::answer_command(&self.runner.topic)
            ),
            None => format!("planning failed {attempts} times"),
        };
        Ok(Some((StopReason::Breaker, why)))
    }

    /// A stop asked for while planning waited (a pause ended by `stop`).
    fn stopped_while_planning(&self) -> Option<(StopReason, String)> {
        let asked = self.runner.stop_level() != StopLevel::None
            || requests::read(&self.runner.layout.requests()).stop_after_iteration;
        asked.then(|| {
            (
                StopReason::UserStop,
                "stopped while planning waited for an answer".to_string(),
            )
        })
    }

    /// One planning run, decided and recorded. Returns the disposition and the paths it changed.
    async fn plan_attempt(
        &mut self,
        prompt: &str,
        attempt: u32,
        attempts: u32,
    ) -> Result<(Disposition, Vec<std::path::PathBuf>, Option<String>)> {
        let layout = self.runner.layout.clone();
        let phase = RunSpec {
            kind: AgentPhase::Planning,
            iteration: 0,
            dir: &layout.planning_dir(),
            work: &layout.wiggum(),
            stem: "prompt",
            stdout: None,
            temperature: None,
        };
        // `[defaults] planning_agent` plans, unless a fallback runs for the loop's own agent.
        let agent = match &self.planning {
            Some(p) if self.agent.name == self.primary.name => p.clone(),
            _ => self.agent.clone(),
        };
        let before = self.tracker.snapshot(&self.repo)?;
        let original = super::original::hold(&layout, 0, self.work.seeds_artifact())?;
        let run = self
            .runner
            .run_agent(&agent, &phase, prompt, &mut || Ok(()))
            .await?;
        let original = super::original::put_back(&layout, 0, original, false, self.take_cap())?;
        // Only a kept iteration writes the result: what planning left there is not one.
        if self.work.seeds_artifact() {
            let kept = self.runner.state.best.map(|b| b.iteration);
            super::best::put_back(&layout, &self.repo, kept)?;
        }
        let changed = self.tracker.snapshot(&self.repo)?.changed_paths(&before);
        let tail = fsutil::read_tail(&run.log, 4096)?;
        let plan = fsutil::read_opt(&layout.fix_plan())?.unwrap_or_default();
        let progress = fix_plan::has_items(&plan);
        let question = crate::agent::asked::asked(
            agent.table.output_format,
            &run.report.text,
            &tail,
            &run.report.denials,
            prompt,
        );
        let verdict =
            super::iteration::weigh(self, &run, &tail, progress, question.is_some(), true);
        let failure = super::failure::describe(run.outcome.ending, &tail);
        let ended = run.outcome.ending.to_string();
        let ctx = Context {
            topic: &self.runner.topic,
            failure: failure.as_deref(),
            ended: &ended,
            protected: &run.protected_changed,
        };
        let d = dispose(verdict, RunPhase::Planning { attempt, attempts }, ctx);
        let mut rec = RunRecord::of_run(RecordKind::Planning, 0, attempt, &run.facts());
        rec.agent = (agent.name != self.primary.name).then(|| agent.name.clone());
        rec.files_changed = vec!["wiggum/fix_plan.md".into()];
        rec.env_passed.clone_from(&run.env_names);
        rec.outcome = d.outcome;
        rec.note.clone_from(&d.note);
        rec.original = original;
        if d.outcome == Outcome::Rejected {
            rec.protected_changed.clone_from(&run.protected_changed);
            rec.validation_failed = rec.note.take();
        }
        if d.outcome == Outcome::Asked {
            rec.question.clone_from(&question);
        }
        let items = (d.then == Then::Accept).then(|| match fix_plan::remaining(&plan) {
            1 => "1 item in fix_plan.md".to_string(),
            n => format!("{n} items in fix_plan.md"),
        });
        super::progress::record_and_say(&layout, &rec, items.as_deref())?;
        Ok((d, changed, question))
    }

    /// Commit the plan planning wrote.
    async fn commit_plan(
        &mut self,
        changed: &[std::path::PathBuf],
    ) -> Result<Option<(StopReason, String)>> {
        let sha =
            match super::commit::commit(self, crate::git::subject::PLANNING, changed, 0).await? {
                // A stop while the commit waited for someone's rebase is a stop.
                super::commit::Committed::Rejected(why)
                    if self.runner.stop_level() >= StopLevel::Now =>
                {
                    self.runner.save()?;
                    return Ok(Some((StopReason::UserStop, format!("planning: {why}"))));
                }
                super::commit::Committed::Rejected(why) => {
                    return Ok(Some((StopReason::Error, format!("planning: {why}"))));
                }
                done => done.sha(),
            };
        self.runner.save()?;
        let plan = fsutil::read_opt(&self.runner.layout.fix_plan())?.unwrap_or_default();
        tracing::info!(
            "planned {} items{}",
            fix_plan::remaining(&plan),
            sha.map(|s| format!(" (commit {})", &s[..8]))
                .unwrap_or_default()
        );
        Ok(None)
    }

    /// Record the end, copy the final artifact, and return the reason.
    async fn finish(&mut self, reason: StopReason, why: &str) -> Result<StopReason> {
        let (reason, why) = &self.validate_final(reason, why).await?;
        let (reason, why) = (*reason, why.as_str());
        let layout = self.runner.layout.clone();
        // A document loop's result is committed with the iteration that made it; a loop an
        // earlier version ran has its copy made from the last accepted iteration. A code loop's
        // result is its repository.
        let last = self.runner.state.last_committed_iteration;
        let result = self.runner.state.best.map_or(last, |b| b.iteration);
        if self.work.seeds_artifact() {
            super::best::put_back(&layout, &self.repo, (result > 0).then_some(result))?;
        }
        // What rejected attempts left for a later commit and a later one took, or put back as
        // it was, is no longer left over.
        let repo = &self.repo;
        self.runner
            .state
            .carried_paths
            .retain(|p| !repo.unchanged(p));
        let end = Step::End(reason, why.to_string());
        self.runner.step(end)?;
        self.runner.save()?;
        tracing::info!("loop ended: {} ({why})", reason.as_str());
        let st = &self.runner.state;
        let completion =
            super::progress::completion_of(&layout, st, &self.artifact_type, chrono::Utc::now());
        if let Some(c) = &completion {
            super::progress::say(&super::progress::completion_block(c));
        }
        let n = self.runner.state.current_iteration;
        let fields = Fields::stop(
            reason,
            why,
            self.runner.state.spend.shown(),
            completion.as_ref().and_then(|c| c.quality.0),
        );
        match reason {
            StopReason::Budget => self.runner.notify("budget", n, why, fields.clone()).await,
            StopReason::Breaker | StopReason::PromiseRejected => {
                self.runner.notify("breaker", n, why, fields.clone()).await;
            }
            _ => {}
        }
        self.runner.notify("stop", n, reason.as_str(), fields).await;
        // The last messages go out before the supervisor does (within their bound).
        self.runner.finish_notifications().await;
        self.runner.save()?;
        Ok(reason)
    }
}
