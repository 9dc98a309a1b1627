//! The loop's books: every change the outer loop makes to its state (`state.json`) outside the
//! runner goes through a method here, named for what happened — a step of its status, an event
//! caught, the agent that runs, a limit, the gate's scores, a commit, the plan's counts, the
//! carried paths, the spend, the breakers' memory. Readers read `Runner::state`; nothing else
//! writes it (`tests/it/architecture.rs` holds to that).

use chrono::{DateTime, Utc};

use super::runner::Runner;
use crate::disk::records::GateRecord;
use crate::disk::state::{Step, Trends};
use crate::error::Result;

impl Runner {
    /// A step of the loop's status (planning, running, paused, ended …), now.
    pub fn step(&mut self, step: Step) -> Result<()> {
        self.state.step(step, Utc::now())
    }

    /// Something the harness caught, for `status` (a protected file restored, an agent switched).
    pub fn note_event(&mut self, what: String) {
        self.state.last_event = Some(what);
    }

    /// Iteration `n` is the one in progress.
    pub fn at_iteration(&mut self, n: u32) {
        self.state.current_iteration = n;
    }

    /// `name` is the agent the next run runs.
    pub fn agent_runs(&mut self, name: &str) {
        self.state.agent = name.to_string();
    }

    /// `agent` waits on a usage limit until `until` (a fallback runs meanwhile).
    pub fn limited(&mut self, agent: String, until: DateTime<Utc>) {
        self.state.limited_agents.insert(agent, until);
    }

    /// Forget the limits whose reset has come (`keep`: the ones still in force).
    pub fn limits_in_force(
        &mut self,
        keep: impl FnOnce(
            &std::collections::BTreeMap<String, DateTime<Utc>>,
        ) -> std::collections::BTreeMap<String, DateTime<Utc>>,
    ) {
        self.state.limited_agents = keep(&self.state.limited_agents);
    }

    /// A run ended well: the waits on limits in a row start again from none.
    pub fn limit_waits_over(&mut self) {
        self.state.limit_waits = 0;
    }

    /// The gate's last dimensions and kept score.
    pub fn gate_scored(&mut self, g: &GateRecord) {
        self.state.last_scores = g.wiggum_scores.values().last().cloned().unwrap_or_default();
        self.state.last_gate_score = g.final_score;
    }

    /// Iteration `n` was committed.
    pub fn committed_iteration(&mut self, n: u32) {
        self.state.last_committed_iteration = n;
    }

    /// `best` is the loop's result (`wiggum/final/artifact.md`).
    pub fn result_is(&mut self, best: crate::disk::state::Best) {
        self.state.best = Some(best);
    }

    /// The plan's open items, and the optional ones among them when counted.
    pub fn plan_counts(&mut self, open: usize, optional: Option<usize>) {
        self.state.items_remaining = Some(open);
        if optional.is_some() {
            self.state.items_optional = optional;
        }
    }

    /// Paths an attempt changed that no commit took yet, for the next commit.
    pub fn carry(&mut self, paths: impl IntoIterator<Item = std::path::PathBuf>) {
        for p in paths {
            if !self.state.carried_paths.contains(&p) {
                self.state.carried_paths.push(p);
            }
        }
    }

    /// A commit took (or found nothing to take of) the carried paths.
    pub fn carried_committed(&mut self) {
        self.state.carried_paths.clear();
    }

    /// A claim of completion was taken.
    pub fn claim_taken(&mut self) {
        self.state.premature_promises = 0;
    }

    /// Iteration `n`'s claim of completion was not taken, `why`: said in `status` and to the next
    /// agent. Returns the claims in a row not taken.
    pub fn claim_not_taken(&mut self, n: u32, why: &str) -> u32 {
        let st = &mut self.state;
        st.premature_promises += 1;
        st.last_event = Some(format!(
            "iteration {n}: the completion promise was not taken: {why}"
        ));
        st.promise_note = Some(format!(
            "An earlier agent printed the completion promise, but the loop did not take it: {why}. Work on what is open; print the promise only when the plan has no open item and the work is done."
        ));
        st.premature_promises
    }

    /// The next agent was told why the last claim of completion was not taken.
    pub fn promise_note_told(&mut self) {
        self.state.promise_note = None;
    }

    /// The built-in quality of the loop's result (`wiggum/final/artifact.md`): what `status`
    /// shows and what the quality threshold is held against.
    pub fn result_quality(&mut self, overall: f64) {
        self.state.last_quality = Some(overall);
    }

    /// A run asked a question instead of working: it is the open one (a question still open is
    /// replaced), and one more in a row. Returns how many in a row.
    pub fn asked(&mut self, q: crate::disk::questions::Question) -> u32 {
        crate::disk::questions::replace(&mut self.state.question, &mut self.state.earlier, q);
        self.state.questions_in_row += 1;
        self.state.questions_in_row
    }

    /// A run changed something: the questions in a row start again.
    pub fn worked(&mut self) {
        self.state.questions_in_row = 0;
    }

    /// An answer was taken for the next run's prompt: the open question's, or one to a question
    /// a newer one replaced (kept with its answer beside the open one).
    pub fn answer_taken(&mut self, a: crate::disk::questions::Answer) {
        let st = &mut self.state;
        crate::disk::questions::take(&mut st.question, &mut st.earlier, &mut st.answered, a);
        st.questions_in_row = 0;
    }

    /// An iteration whose prompt carried the answers is over: the answered questions close.
    pub fn answer_told(&mut self) {
        self.state.answered.clear();
        if self
            .state
            .question
            .as_ref()
            .is_some_and(|q| q.answer.is_some())
        {
            self.state.question = None;
        }
    }

    /// The loop paused before iteration `n` (0: between planning's attempts), or (`None`) went
    /// on.
    pub fn paused_before(&mut self, n: Option<u32>) {
        self.state.paused_before = n;
    }

    /// The human review before an iteration was asked for.
    pub fn reviewed(&mut self) {
        self.state.reviewed = true;
    }

    /// What an evaluator's calls cost (known or not) and the tokens they used.
    pub fn spent(&mut self, cost: Option<f64>, tokens: Option<u64>) {
        self.state.spend.add(cost, tokens, false);
        self.state.cost_usd = self.state.spend.cost_usd;
    }

    /// What the trend breakers remember (the same error, shrinking output, validation failures).
    pub fn trends(&mut self) -> &mut Trends {
        &mut self.state.trends
    }
}
