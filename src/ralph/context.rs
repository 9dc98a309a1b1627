//! What one running loop holds: its runner (agent runs and state), settings, agents, evaluator,
//! repository, task, breaker and progress. The driver, an iteration, acceptance and the commit
//! all work on it; this file owns nothing but the data and two small accessors.

use crate::agent::spec::AgentSpec;
use crate::config::Settings;
use crate::git::Repo;
use crate::quality::metrics;

use super::decide::Breaker;
use super::runner::Runner;

/// One loop, ready to run.
pub struct Loop {
    /// Agent runner and state.
    pub runner: Runner,
    /// Effective settings.
    pub settings: Settings,
    /// The agent of the next run: the loop's own (`primary`), or a fallback while it waits on a
    /// usage limit.
    pub agent: AgentSpec,
    /// The loop's own agent.
    pub primary: AgentSpec,
    /// `[defaults] fallback_agents`, resolved.
    pub fallbacks: Vec<AgentSpec>,
    /// `[defaults] planning_agent`, resolved, when it names another agent than the loop's.
    pub planning: Option<AgentSpec>,
    /// The producer of gate revisions.
    pub producer: AgentSpec,
    /// The evaluator name.
    pub evaluator: String,
    /// The repository.
    pub repo: Repo,
    /// `research`, `design`, ... from metadata.json.
    pub task_type: String,
    /// The gate's task description.
    pub task: String,
    /// What "good" means for this artifact (its metrics and required sections).
    pub artifact_type: crate::quality::types::ArtifactType,
    /// Consecutive no-change and crash counts.
    pub breaker: Breaker,
    /// The last iteration's agent printed the promise and the claim was taken: on what grounds.
    pub promise_taken: Option<String>,
    /// Claims in a row were not taken past `[safety] max_premature_promises`: why.
    pub promise_rejected: Option<String>,
    /// Iterations completed (not counting discarded attempts).
    pub done: u32,
    /// Identifies this run (evaluator pool choice).
    pub run_id: String,
    /// What changed in the work tree, from a file watch (no walk per iteration).
    pub tracker: super::changes::Tracker,
    /// What the loop works on: a document or the repository's code.
    pub work: super::work::Kind,
    /// What validation showed: the tree each iteration is judged against, and the last.
    pub validation: super::work::Tracked,
    /// A code loop's spec as the loop found it, put back when an agent edits it.
    pub spec: super::work::SpecCopy,
    /// Protected files a revision round of the gate changed (restored): the iteration is
    /// rejected as its own run's would be.
    pub revision_tampered: Vec<String>,
    /// Where the revision rounds of the iteration being accepted took their document from,
    /// when it was not the whole answer on stdout (for its run record).
    pub revision_notes: Vec<String>,
    /// What each revision round's run of the iteration being accepted reported it cost (its
    /// record's cost is the iteration's runs', its own and theirs).
    pub revision_costs: Vec<Option<f64>>,
    /// What the last commit left out (build output and caches the repository does not track).
    pub left_out: Vec<String>,
}

impl Loop {
    /// The evaluator for this run: a pool member chosen by md5(run_id), or the configured one.
    #[must_use]
    pub fn evaluator_for_run(&self) -> String {
        crate::gate::evaluator::pick_from_pool(&self.settings.gate.pool, &self.run_id)
            .cloned()
            .unwrap_or_else(|| self.evaluator.clone())
    }

    /// Built-in metrics of an artifact; logs when its quality is not above the result's. (The
    /// state keeps the result's quality, recorded once an iteration becomes the result.)
    pub fn measure(&mut self, text: &str) -> metrics::Metrics {
        let m = metrics::compute_for(text, &self.artifact_type);
        if let Some(prev) = self.runner.state.last_quality
            && m.overall <= prev
        {
            tracing::info!("quality did not improve: {:.3} -> {:.3}", prev, m.overall);
        }
        m
    }

    /// The most of an edit of the original a run's artifact may take: what the loop reads of a
    /// file, and no more than `[safety] max_file_mb`.
    #[must_use]
    pub fn take_cap(&self) -> u64 {
        let max_file = self.settings.safety.max_file_mb.saturating_mul(1 << 20);
        match max_file {
            0 => crate::sys::fsutil::TEXT_CAP,
            m => crate::sys::fsutil::TEXT_CAP.min(m),
        }
    }
}
