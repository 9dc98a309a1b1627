//! The built-in heuristic quality metrics of ADR 0015: completeness, verification, clarity and
//! actionability, each 0–1, and their weighted overall score. Deterministic and offline. Pure.

pub use crate::disk::records::Metrics;

use crate::config::QualityWeights;
use crate::quality::markdown::{self, Block};
use crate::quality::substance;
use crate::quality::types::ArtifactType;

const PLACEHOLDERS: [&str; 6] = ["todo", "tbd", "lorem ipsum", "coming soon", "fixme", "xxx"];
const ACTION_HEADINGS: [&str; 8] = [
    "recommend",
    "next step",
    "action",
    "remediation",
    "how to",
    "steps",
    "fix",
    "plan",
];
const VERBS: [&str; 24] = [
    "add",
    "remove",
    "run",
    "set",
    "use",
    "install",
    "configure",
    "create",
    "update",
    "replace",
    "enable",
    "disable",
    "check",
    "verify",
    "grant",
    "restart",
    "deploy",
    "write",
    "move",
    "rename",
    "open",
    "call",
    "test",
    "document",
];

/// Compute the metrics of a document with the given weights (the `generic` type).
#[must_use]
pub fn compute(doc: &str, w: &QualityWeights) -> Metrics {
    compute_with(doc, w, &[])
}

/// Compute the metrics of a document of an artifact type: its weights, and completeness
/// measured against its required sections.
#[must_use]
pub fn compute_for(doc: &str, t: &ArtifactType) -> Metrics {
    compute_with(doc, &t.weights, &t.sections)
}

fn compute_with(doc: &str, w: &QualityWeights, required: &[String]) -> Metrics {
    let sections = markdown::sections(doc);
    let all_blocks: Vec<Block> = sections
        .iter()
        .flat_map(|s| markdown::blocks(&s.body))
        .collect();
    let completeness = if required.is_empty() {
        completeness(&sections)
    } else {
        required_completeness(&sections, required)
    };
    let verification = verification(&all_blocks);
    let clarity = clarity(&sections, &all_blocks);
    let actionability = actionability(&sections, &all_blocks);
    let total =
        w.completeness_weight + w.verification_weight + w.clarity_weight + w.actionability_weight;
    let overall = if total > 0.0 {
        (completeness * w.completeness_weight
            + verification * w.verification_weight
            + clarity * w.clarity_weight
            + actionability * w.actionability_weight)
            / total
    } else {
        0.0
    };
    Metrics {
        completeness: round3(completeness),
        verification: round3(verification),
        clarity: round3(clarity),
        actionability: round3(actionability),
        overall: round3(overall),
    }
}

fn round3(v: f64) -> f64 {
    (v.clamp(0.0, 1.0) * 1000.0).round() / 1000.0
}

#[allow(clippy::cast_precision_loss)]
fn ratio(n: usize, d: usize) -> f64 {
    if d == 0 { 0.0 } else { n as f64 / d as f64 }
}

fn placeholder_count(text: &str) -> usize {
    let lower = text.to_lowercase();
    PLACEHOLDERS
        .iter()
        .map(|p| {
            lower
                .match_indices(p)
                .filter(|(i, _)| {
                    let before = lower[..*i].chars().next_back();
                    let after = lower[i + p.len()..].chars().next();
                    !before.is_some_and(char::is_alphanumeric)
                        && !after.is_some_and(char::is_alphanumeric)
                })
                .count()
        })
        .sum()
}

fn completeness(sections: &[markdown::Section]) -> f64 {
    let headed: Vec<_> = sections
        .iter()
        .filter(|s| s.level >= 2 || sections.len() == 1)
        .collect();
    let total = headed.len();
    let substantive = headed
        .iter()
        .filter(|s| markdown::word_count(&s.body) >= 25 && placeholder_count(&s.body) == 0)
        .count();
    let placeholders: usize = sections.iter().map(|s| placeholder_count(&s.body)).sum();
    #[allow(clippy::cast_precision_loss)]
    let penalty = (placeholders as f64 * 0.1).min(0.5);
    0.6 * ratio(substantive, total) + 0.4 * ratio(total.min(6), 6) - penalty
}

/// Completeness against required sections: each present (a heading naming it, any level,
/// case aside) counts, and counts more when its body is substantive (25 words, no placeholder).
fn required_completeness(sections: &[markdown::Section], required: &[String]) -> f64 {
    let mut present = 0;
    let mut substantive = 0;
    for r in required {
        let want = r.to_lowercase();
        let found = sections
            .iter()
            .filter(|s| s.level > 0 && s.title.to_lowercase().contains(&want))
            .max_by_key(|s| markdown::word_count(&s.body));
        if let Some(s) = found {
            present += 1;
            if markdown::word_count(&s.body) >= 25 && placeholder_count(&s.body) == 0 {
                substantive += 1;
            }
        }
    }
    let placeholders: usize = sections.iter().map(|s| placeholder_count(&s.body)).sum();
    #[allow(clippy::cast_precision_loss)]
    let penalty = (placeholders as f64 * 0.1).min(0.5);
    0.4 * ratio(present, required.len()) + 0.6 * ratio(substantive, required.len()) - penalty
}

fn has_evidence(text: &str) -> bool {
    text.contains("http://")
        || text.contains("https://")
        || text.contains("](")
        || text.contains('`')
        || text.contains("[^")
        || citation(text)
}

fn citation(text: &str) -> bool {
    let b = text.as_bytes();
    b.windows(3)
        .any(|w| w[0] == b'[' && w[1].is_ascii_digit() && w[2] == b']')
}

fn verification(blocks: &[Block]) -> f64 {
    let mut claims = 0;
    let mut backed = 0;
    for b in blocks {
        match b {
            Block::Para(t) | Block::Item(t) if markdown::word_count(t) >= 5 => {
                claims += 1;
                backed += usize::from(has_evidence(&substance::without_placeholder_links(t)));
            }
            Block::Code(_) => backed += 1,
            _ => {}
        }
    }
    ratio(backed.min(claims), claims)
}

#[allow(clippy::cast_precision_loss)]
fn clarity(sections: &[markdown::Section], blocks: &[Block]) -> f64 {
    let prose: Vec<&str> = blocks
        .iter()
        .filter_map(|b| match b {
            Block::Para(t) | Block::Item(t) => Some(t.as_str()),
            Block::Code(_) => None,
        })
        .collect();
    if prose.is_empty() {
        return 0.0;
    }
    let text = prose.join(" ");
    let sentences = text
        .split(['.', '!', '?'])
        .filter(|s| markdown::word_count(s) > 0)
        .count()
        .max(1);
    let avg = markdown::word_count(&text) as f64 / sentences as f64;
    let sentence_score = if avg <= 20.0 {
        1.0
    } else {
        ((45.0 - avg) / 25.0).max(0.0)
    };
    let headings = sections.iter().filter(|s| s.level > 0).count();
    let structure = match headings {
        0 => 0.0,
        1 => 0.5,
        _ => 1.0,
    };
    let paras: Vec<&&str> = prose
        .iter()
        .filter(|p| markdown::word_count(p) > 0)
        .collect();
    let short = paras
        .iter()
        .filter(|p| markdown::word_count(p) <= 120)
        .count();
    0.4 * sentence_score + 0.3 * structure + 0.3 * ratio(short, paras.len())
}

fn concrete(item: &str) -> bool {
    let first = item
        .split_whitespace()
        .next()
        .unwrap_or("")
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase();
    VERBS.contains(&first.as_str()) || item.contains('`')
}

fn actionability(sections: &[markdown::Section], all: &[Block]) -> f64 {
    let items_of = |blocks: &[Block]| -> Vec<String> {
        blocks
            .iter()
            .filter_map(|b| match b {
                Block::Item(t) => Some(t.clone()),
                _ => None,
            })
            .collect()
    };
    let action: Vec<String> = sections
        .iter()
        .filter(|s| {
            let t = s.title.to_lowercase();
            ACTION_HEADINGS.iter().any(|h| t.contains(h))
        })
        .flat_map(|s| items_of(&markdown::blocks(&s.body)))
        .collect();
    if action.is_empty() {
        let items = items_of(all);
        return 0.5 * ratio(items.iter().filter(|i| concrete(i)).count(), items.len());
    }
    ratio(action.iter().filter(|i| concrete(i)).count(), action.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = include_str!("../../tests/fixtures/good-artifact.md");
    const POOR: &str =
        "# Report\n\n## Summary\nThings are bad. TODO.\n\n## Recommendations\nAdd permissions.\n";

    fn m(doc: &str) -> Metrics {
        compute(doc, &QualityWeights::default())
    }

    fn as_type(doc: &str, name: &str) -> Metrics {
        let (t, _) = crate::quality::types::resolve(
            name,
            &std::collections::BTreeMap::new(),
            QualityWeights::default(),
        );
        compute_for(doc, &t)
    }

    #[test]
    fn one_artifact_measured_as_research_and_as_design_scores_differently() {
        // A research report: its sections are research's, none of design's but Summary-like
        // ones, and its weights favour evidence.
        let research = as_type(GOOD, "research");
        let design = as_type(GOOD, "design");
        assert!(
            research.completeness > design.completeness,
            "{research:?} vs {design:?}"
        );
        assert!(
            research.overall > design.overall,
            "{research:?} vs {design:?}"
        );
        // Adding a design's sections raises its completeness as design, not as research.
        let more = format!(
            "{GOOD}\n## Alternatives\n\n{w}\n\n## Trade-offs\n\n{w}\n\n## Decision\n\n{w}\n",
            w = "We compared a cache in front of the service with a direct query, measured both under the same load, and kept the notes of every run in the repository for review."
        );
        assert!(as_type(&more, "design").completeness > design.completeness);
        assert!((as_type(&more, "research").completeness - research.completeness).abs() < 1e-9);
    }

    #[test]
    fn required_sections_count_when_present_and_more_when_substantive() {
        let req = vec!["Context".to_string(), "Findings".to_string()];
        let body = "word ".repeat(30);
        let cases = [
            ("# T\n", 0.0),
            ("# T\n\n## Context\nshort\n", 0.2),
            (&*format!("# T\n\n## Context\n{body}\n"), 0.5),
            (
                &*format!("# T\n\n## Background and context\n{body}\n## Findings\n{body}\n"),
                1.0,
            ),
        ];
        for (doc, want) in cases {
            let got = required_completeness(&markdown::sections(doc), &req);
            assert!((got - want).abs() < 1e-9, "{doc:?}: {got} != {want}");
        }
    }

    #[test]
    fn a_good_document_beats_a_poor_one_on_every_metric() {
        let (g, p) = (m(GOOD), m(POOR));
        assert!(g.completeness > p.completeness, "{g:?} {p:?}");
        assert!(g.verification > p.verification, "{g:?} {p:?}");
        assert!(g.actionability > p.actionability, "{g:?} {p:?}");
        assert!(g.overall > 0.7 && p.overall < 0.4, "{g:?} {p:?}");
    }

    #[test]
    fn metrics_are_bounded_and_deterministic() {
        for d in ["", "#", "```\nunclosed", GOOD, POOR] {
            let a = m(d);
            assert_eq!(a, m(d));
            for v in [
                a.completeness,
                a.verification,
                a.clarity,
                a.actionability,
                a.overall,
            ] {
                assert!((0.0..=1.0).contains(&v), "{d:?} {a:?}");
            }
        }
    }

    #[test]
    fn weights_shift_the_overall() {
        let only_verification = QualityWeights {
            completeness_weight: 0.0,
            verification_weight: 1.0,
            clarity_weight: 0.0,
            actionability_weight: 0.0,
        };
        let g = compute(GOOD, &only_verification);
        assert!((g.overall - g.verification).abs() < 1e-9);
    }

    #[test]
    fn placeholders_cost_completeness() {
        let clean = "## A\n".to_string() + &"word ".repeat(30);
        let todo = clean.clone() + "\nTODO fill in\n";
        assert!(m(&todo).completeness < m(&clean).completeness);
        assert_eq!(placeholder_count("mastodon todos"), 0);
    }
}
