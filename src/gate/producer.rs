//! The one revision producer: an agent that answers a revision prompt with the whole revised
//! document on stdout (seed semantics), or edits the file itself (`revision_output = "file"`).
//! Who runs the agent — the loop, with its state and budget, or `wiggum gate` alone — is the
//! [`Reviser`]'s business; both go through `agent::launch`.

use std::future::Future;
use std::path::PathBuf;

use super::rounds::Producer;
use crate::agent::launch::AgentRun;
use crate::agent::spec::AgentSpec;
use crate::config::RevisionOutput;
use crate::error::{Error, Result};
use crate::sys::fsutil;

/// Runs the producer agent for one revision round.
pub trait Reviser {
    /// Whether another paid run is allowed (the loop's budget).
    fn may_spend(&self) -> bool {
        true
    }
    /// Run `spec` for revision `round` with `prompt`, its stdout kept as the answer.
    fn run_revision(
        &mut self,
        spec: &AgentSpec,
        round: u32,
        prompt: &str,
    ) -> impl Future<Output = Result<AgentRun>>;
}

/// Revisions by an agent, one fresh process per round.
pub struct AgentProducer<R> {
    /// Who runs it.
    pub reviser: R,
    /// The producer agent.
    pub spec: AgentSpec,
    /// The file a producer with `revision_output = "file"` edits.
    pub edited_file: PathBuf,
}

impl<R: Reviser> Producer for AgentProducer<R> {
    fn available(&self) -> bool {
        self.reviser.may_spend()
    }

    async fn revise(&mut self, round: u32, prompt: &str) -> Result<String> {
        let run = self.reviser.run_revision(&self.spec, round, prompt).await?;
        if !run.outcome.ending.success() {
            let tail = fsutil::read_tail(&run.log, 4096)?;
            let last = tail.lines().rev().find(|l| !l.trim().is_empty());
            return Err(Error::runtime(format!(
                "the producer `{}` {}: {}",
                self.spec.name,
                run.outcome.ending,
                last.unwrap_or("(no output)").trim()
            )));
        }
        match self.spec.table.revision_output {
            RevisionOutput::Stdout => Ok(run.report.text),
            RevisionOutput::File => fsutil::read(&self.edited_file),
        }
    }
}

/// No producer at all (`wiggum gate` without `--producer`): the gate evaluates once.
impl<P: Producer> Producer for Option<P> {
    fn available(&self) -> bool {
        self.as_ref().is_some_and(Producer::available)
    }

    async fn revise(&mut self, round: u32, prompt: &str) -> Result<String> {
        match self {
            Some(p) => p.revise(round, prompt).await,
            None => Err(Error::runtime("no producer")),
        }
    }
}
