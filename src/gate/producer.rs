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
        let before = fsutil::read_opt(&self.edited_file)?;
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
        let after = fsutil::read_opt(&self.edited_file)?;
        Ok(pick(
            self.spec.table.revision_output,
            run.report.text,
            before,
            after,
        ))
    }
}

/// The revised document: the file when the producer edited it in place (whatever it printed —
/// an agent that edits says so in a sentence, not the document), else its answer on stdout; a
/// `revision_output = "file"` producer's file in any case. Empty: no revision at all (the gate
/// ends its rounds as `unchanged`). Pure.
fn pick(
    mode: RevisionOutput,
    answer: String,
    before: Option<String>,
    after: Option<String>,
) -> String {
    let edited = after.is_some() && after != before;
    match (mode, edited) {
        (RevisionOutput::File, _) | (RevisionOutput::Stdout, true) => after.unwrap_or_default(),
        (RevisionOutput::Stdout, false) => answer,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_revision_is_the_file_when_the_producer_edited_it_else_its_answer() {
        let s = |t: &str| Some(t.to_string());
        let cases = [
            // Edited in place, a sentence printed: the file.
            (
                RevisionOutput::Stdout,
                "I updated the file.",
                s("v1"),
                s("v2"),
                "v2",
            ),
            // Edited in place, nothing printed: the file.
            (RevisionOutput::Stdout, "", s("v1"), s("v2"), "v2"),
            // The document printed, the file untouched: the answer.
            (
                RevisionOutput::Stdout,
                "v2 printed",
                s("v1"),
                s("v1"),
                "v2 printed",
            ),
            // Nothing printed, nothing edited: no revision.
            (RevisionOutput::Stdout, "", s("v1"), s("v1"), ""),
            // The file deleted: the answer.
            (
                RevisionOutput::Stdout,
                "v2 printed",
                s("v1"),
                None,
                "v2 printed",
            ),
            (RevisionOutput::File, "chatter", s("v1"), s("v1"), "v1"),
        ];
        for (mode, answer, before, after, want) in cases {
            assert_eq!(pick(mode, answer.into(), before, after), want);
        }
    }
}
