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
    /// Where revision `round`'s document came from, when it was not the whole answer on stdout
    /// (for the run record).
    fn took(&mut self, _round: u32, _how: String) {}
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
        let (text, how) = pick(
            self.spec.table.revision_output,
            run.report.text,
            before,
            after,
        );
        if let Some(how) = how {
            self.reviser.took(round, how);
        }
        Ok(text)
    }
}

/// The revised document, and where it came from when that is worth a word: the file when the
/// producer edited it in place (whatever it printed — an agent that edits says so in a sentence,
/// not the document), else its answer on stdout, from the document's first heading on when the
/// document starts with one (what an agent printed before it is its chatter); a
/// `revision_output = "file"` producer's file in any case. Empty: no revision at all (the gate
/// ends its rounds as `unchanged`). Pure.
fn pick(
    mode: RevisionOutput,
    answer: String,
    before: Option<String>,
    after: Option<String>,
) -> (String, Option<String>) {
    let edited = after.is_some() && after != before;
    match (mode, edited) {
        (RevisionOutput::File, _) => (after.unwrap_or_default(), None),
        (RevisionOutput::Stdout, true) => (
            after.unwrap_or_default(),
            Some("the document taken from the file the producer edited".into()),
        ),
        (RevisionOutput::Stdout, false) => {
            let headed = before.as_deref().is_some_and(first_line_is_heading);
            match from_first_heading(&answer).filter(|_| headed) {
                Some((skipped, doc)) if skipped > 0 => {
                    let lines = if skipped == 1 { "line" } else { "lines" };
                    (
                        doc.to_string(),
                        Some(format!(
                            "the document taken from stdout, the {skipped} {lines} printed before its first heading left out"
                        )),
                    )
                }
                _ => (answer, None),
            }
        }
    }
}

/// An ATX heading line (`# Title`, `## Part`).
fn is_heading(line: &str) -> bool {
    let hashes = line.bytes().take_while(|b| *b == b'#').count();
    (1..=6).contains(&hashes) && line[hashes..].chars().next().is_none_or(|c| c == ' ')
}

/// Whether a document's first line with text is a heading.
fn first_line_is_heading(doc: &str) -> bool {
    doc.lines()
        .find(|l| !l.trim().is_empty())
        .is_some_and(is_heading)
}

/// The lines before `answer`'s first heading, and the answer from that heading on.
fn from_first_heading(answer: &str) -> Option<(usize, &str)> {
    let mut at = 0;
    for line in answer.split_inclusive('\n') {
        if is_heading(line.trim_end_matches(['\n', '\r'])) {
            let skipped = answer[..at]
                .lines()
                .filter(|l| !l.trim().is_empty())
                .count();
            return Some((skipped, &answer[at..]));
        }
        at += line.len();
    }
    None
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
            assert_eq!(pick(mode, answer.into(), before, after).0, want);
        }
    }

    #[test]
    fn a_revision_on_stdout_is_the_document_from_its_first_heading() {
        let s = |t: &str| Some(t.to_string());
        let doc = "# Report\n\n## Summary\nbetter\n";
        let chatter = format!("doc-agent: phase=revision round 1\n\n{doc}");
        let (text, how) = pick(
            RevisionOutput::Stdout,
            chatter,
            s("# Report\nv1\n"),
            s("# Report\nv1\n"),
        );
        assert_eq!(text, doc);
        assert_eq!(
            how.as_deref(),
            Some(
                "the document taken from stdout, the 1 line printed before its first heading left out"
            )
        );
        // Nothing before the heading: the answer whole, nothing said.
        let (text, how) = pick(RevisionOutput::Stdout, doc.into(), s("# R\n"), s("# R\n"));
        assert_eq!((text.as_str(), how), (doc, None));
        // A document that does not start with a heading keeps what comes first.
        let plain = "Intro line\n# Later\n";
        let (text, _) = pick(
            RevisionOutput::Stdout,
            plain.into(),
            s("Intro\n"),
            s("Intro\n"),
        );
        assert_eq!(text, plain);
        // `#hashtag` and `####### seven` are no headings.
        assert!(!is_heading("#hashtag") && !is_heading("####### x") && is_heading("### x"));
    }
}
