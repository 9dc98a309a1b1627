//! A diff (`[gate] target = "diff"`: a code loop's uncommitted changes, `diff --git ...`) is
//! judged as it was before the judge read documents for the task: its words, code blocks, list
//! items and the task's words shared, scaled down by form without substance. How a diff is
//! judged is its own question; the document rules (`topic`, `depth`) are not applied to one.
//! Pure.

use std::collections::BTreeSet;

use super::{Evaluation, to10};
use crate::config::QualityWeights;
use crate::gate::rubric::Dims;
use crate::quality::markdown::{self, Block};
use crate::quality::{metrics, substance};

/// Whether `output` is a diff as the loop writes one for the gate (git's patch format).
#[must_use]
pub fn is_diff(output: &str) -> bool {
    output.trim_start().starts_with("diff --git ")
}

/// Score a diff for `task`.
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
        _ => super::advice(dim),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_scores_as_it_did_before_documents_were_read_for_the_task() {
        let diff = include_str!("../../../tests/fixtures/judge/diff/index-lock-wait.diff");
        assert!(is_diff(diff) && !is_diff("# A document\n\ndiff --git a b\n"));
        let task = "code: repos — this iteration: start waits for an index.lock another loop holds";
        let e = super::super::evaluate(task, diff);
        // The scores `wiggum gate` gave this diff with the previous judge.
        let want = [
            ("completeness", 6.7),
            ("depth", 7.0),
            ("grounded", 4.5),
            ("relevance", 9.0),
            ("specificity", 9.0),
            ("structure", 3.4),
        ];
        for (k, v) in want {
            assert!((e.dims[k] - v).abs() < 1e-9, "{k}: {:?}", e.dims);
        }
        assert!(
            e.issues.iter().any(|i| i.starts_with("grounded is 4.5/10")),
            "{:?}",
            e.issues
        );
    }
}
