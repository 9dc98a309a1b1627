//! The built-in evaluator: deterministic, offline scores on the six rubric dimensions from the
//! document's structure and the task's words. It lets a loop run with no model at all. Pure.

use std::collections::BTreeSet;

use super::Evaluation;
use super::rubric::Dims;
use crate::config::QualityWeights;
use crate::quality::markdown::{self, Block};
use crate::quality::{metrics, substance};

#[allow(clippy::cast_precision_loss)]
fn to10(v: f64) -> f64 {
    (v.clamp(0.0, 1.0) * 100.0).round() / 10.0
}

/// Score `output` for `task`: what the document holds (words, examples, evidence, the task's
/// terms), scaled down by the form-without-substance it shows (`quality::substance`), each
/// finding named in the issues.
#[must_use]
#[allow(clippy::cast_precision_loss)]
pub fn evaluate(task: &str, output: &str) -> Evaluation {
    let found = substance::analyse(task, output);
    let real = substance::without_placeholder_links(output);
    let m = metrics::compute(&real, &QualityWeights::default());
    let sections = markdown::sections(&real);
    let blocks: Vec<Block> = sections
        .iter()
        .flat_map(|s| markdown::blocks(&s.body))
        .collect();
    let n_words = markdown::word_count(output).max(1) as f64;
    let code = blocks
        .iter()
        .filter(|b| matches!(b, Block::Code(_)))
        .count() as f64;
    let items = blocks
        .iter()
        .filter(|b| matches!(b, Block::Item(_)))
        .count() as f64;

    let depth = 0.4 * (n_words / 500.0).min(1.0)
        + 0.3 * (code / 2.0).min(1.0)
        + 0.3 * (items / 6.0).min(1.0);
    let task_words: BTreeSet<String> = substance::content_words(task).collect();
    let doc_words: BTreeSet<String> = substance::content_words(output).collect();
    let relevance = if task_words.is_empty() {
        0.7
    } else {
        task_words.intersection(&doc_words).count() as f64 / task_words.len() as f64
    };
    let specifics = output.matches('`').count() as f64 / 2.0
        + output
            .split_whitespace()
            .filter(|w| w.chars().any(|c| c.is_ascii_digit()))
            .count() as f64;
    let specificity = (specifics / n_words * 12.0).min(1.0);
    let evidence = code
        + (found.links - found.placeholder_links) as f64
        + real.matches('`').count() as f64 / 6.0;
    let grounded = 0.6 * m.verification + 0.4 * (evidence / 8.0).min(1.0);
    let headings = sections.iter().filter(|s| s.level > 0).count() as f64;
    let structure = 0.5 * (headings / 4.0).min(1.0) + 0.5 * m.clarity;

    let keep = 1.0 - found.penalty();
    let dims: Dims = [
        ("depth", depth),
        ("relevance", relevance),
        ("completeness", m.completeness),
        ("grounded", grounded),
        ("specificity", specificity),
        ("structure", structure),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), to10(v * keep)))
    .collect();
    let mut issues = found.findings();
    issues.extend(
        dims.iter()
            .filter(|(_, v)| **v < 7.0)
            .map(|(k, v)| format!("{k} is {v:.1}/10: {}", advice(k))),
    );
    Evaluation { dims, issues }
}

fn advice(dim: &str) -> &'static str {
    match dim {
        "depth" => {
            "add concrete implementation steps, working examples or configs (code blocks, commands)"
        }
        "relevance" => "address the task's own terms directly and stay on its topic",
        "completeness" => {
            "give every section a substantive body and remove placeholders (TODO, TBD)"
        }
        "grounded" => "back claims with evidence: links, file paths, logs, citations",
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
