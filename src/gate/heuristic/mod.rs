//! The built-in evaluator: deterministic, offline scores on the six rubric dimensions from the
//! document's structure and what the task names. It lets a loop run with no model at all. Pure.
//!
//! Relevance is coverage of the task's specific terms (`topic`); depth counts what a reader can
//! run or check, fenced or inline (`depth`); evidence counts beside the task's terms. A document
//! that names none of the task's names is about something else: every dimension is scaled down
//! with its relevance, as with form without substance (`quality::substance`). A diff (a code
//! loop's gate on its changes) is judged as before (`diff`).

mod depth;
mod diff;
mod topic;

use super::Evaluation;
use super::rubric::Dims;
use crate::config::QualityWeights;
use crate::quality::markdown::{self, Block};
use crate::quality::{metrics, substance};

/// Relevance at and above which a document is taken as about the task (no scaling).
const ON_TOPIC: f64 = 0.5;
/// Relevance at and below which a document is about something else (it keeps the least).
const OFF_TOPIC: f64 = 0.1;
/// What an off-topic document keeps of its scores at least.
const OFF_TOPIC_KEEP: f64 = 0.2;

#[allow(clippy::cast_precision_loss)]
fn to10(v: f64) -> f64 {
    (v.clamp(0.0, 1.0) * 100.0).round() / 10.0
}

/// Score `output` for `task`: what the document holds (words, what a reader can act on,
/// evidence, the task's terms), scaled down by the form-without-substance it shows
/// (`quality::substance`) and by how little of the task it names, each finding named in the
/// issues.
#[must_use]
#[allow(clippy::cast_precision_loss)]
pub fn evaluate(task: &str, output: &str) -> Evaluation {
    if diff::is_diff(output) {
        return diff::evaluate(task, output);
    }
    let found = substance::analyse(task, output);
    let real = substance::without_placeholder_links(output);
    let m = metrics::compute(&real, &QualityWeights::default());
    let sections = markdown::sections(&real);
    let blocks: Vec<Block> = sections
        .iter()
        .flat_map(|s| markdown::blocks(&s.body))
        .collect();
    let headings: Vec<&str> = sections.iter().map(|s| s.title.as_str()).collect();
    let topic = topic::Topic::of(task);
    let covered = topic.coverage(&blocks, &headings);
    let n_words = markdown::word_count(output).max(1) as f64;

    let depth = 0.3 * (n_words / 500.0).min(1.0) + depth::read(&sections, &topic).credit();
    let specifics = output.matches('`').count() as f64 / 2.0
        + output
            .split_whitespace()
            .filter(|w| w.chars().any(|c| c.is_ascii_digit()))
            .count() as f64;
    let specificity = (specifics / n_words * 12.0).min(1.0);
    let evidence = evidence(&blocks, &topic) + (found.links - found.placeholder_links) as f64;
    let grounded = 0.5 * m.verification + 0.3 * (evidence / 8.0).min(1.0) + 0.2 * covered.evidenced;
    let headings = headings.iter().filter(|h| !h.is_empty()).count() as f64;
    let structure = 0.5 * (headings / 4.0).min(1.0) + 0.5 * m.clarity;

    let keep = 1.0 - found.penalty();
    let on_topic =
        ((covered.relevance - OFF_TOPIC) / (ON_TOPIC - OFF_TOPIC)).clamp(OFF_TOPIC_KEEP, 1.0);
    let dims: Dims = [
        ("depth", depth * on_topic),
        ("relevance", covered.relevance),
        ("completeness", m.completeness * on_topic),
        ("grounded", grounded * on_topic),
        ("specificity", specificity * on_topic),
        ("structure", structure * on_topic),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), to10(v * keep)))
    .collect();
    let mut issues = found.findings();
    issues.extend(covered.finding(dims["relevance"]));
    issues.extend(
        dims.iter()
            .filter(|(k, v)| **v < 7.0 && (*k != "relevance" || covered.missing.is_empty()))
            .map(|(k, v)| format!("{k} is {v:.1}/10: {}", advice(k))),
    );
    Evaluation { dims, issues }
}

/// Evidence in the blocks: code blocks and code spans (six spans count as one block), each
/// counting less where nothing the task names is beside it (links are counted by `substance`).
#[allow(clippy::cast_precision_loss)]
fn evidence(blocks: &[Block], topic: &topic::Topic) -> f64 {
    blocks
        .iter()
        .map(|b| {
            let (amount, text) = match b {
                Block::Code(c) => (1.0, c.as_str()),
                Block::Para(t) | Block::Item(t) => {
                    (t.matches('`').count() as f64 / 6.0, t.as_str())
                }
            };
            if amount == 0.0 || topic.related(text) {
                amount
            } else {
                0.4 * amount
            }
        })
        .sum()
}

fn advice(dim: &str) -> &'static str {
    match dim {
        "depth" => {
            "add what a reader can run or check: commands, configs, queries (fenced or inline), numbered steps that each name an action, figures with units"
        }
        "relevance" => "address the task's own terms directly and stay on its topic",
        "completeness" => {
            "give every section a substantive body and remove placeholders (TODO, TBD)"
        }
        "grounded" => {
            "back claims about what the task names with evidence beside them: links, file paths, logs, citations"
        }
        "specificity" => "name tools, versions, commands and numbers instead of generic wording",
        "structure" => "organise the document under clear ## headings with short paragraphs",
        _ => "improve this dimension",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::default_weights;
    use crate::gate::rubric::weighted;

    const GOOD: &str = include_str!("../../../tests/fixtures/good-artifact.md");

    #[test]
    fn deterministic_and_bounded() {
        let a = evaluate("monarch access", GOOD);
        assert_eq!(a.dims, evaluate("monarch access", GOOD).dims);
        assert_eq!(a.dims.len(), 6);
        assert!(a.dims.values().all(|v| (0.0..=10.0).contains(v)));
    }

    #[test]
    fn a_better_document_scores_higher_and_issues_name_low_dims() {
        let task = "Monarch UI access failures root cause";
        let poor = evaluate(task, "# Notes\nSomething is wrong. TODO.\n");
        let good = evaluate(task, GOOD);
        let w = default_weights();
        assert!(weighted(&good.dims, &w) > weighted(&poor.dims, &w) + 2.0);
        assert!(poor.issues.iter().any(|i| i.starts_with("depth is")));
    }

    #[test]
    fn relevance_follows_the_task() {
        let on = evaluate("monarch permissions policy", GOOD).dims["relevance"];
        let off = evaluate("kubernetes autoscaling latency", GOOD).dims["relevance"];
        assert!(on > off, "{on} {off}");
    }
}

#[cfg(test)]
mod corpus;

#[cfg(test)]
mod reads;
