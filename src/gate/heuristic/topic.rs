//! Relevance as coverage of what the task names (`quality::terms`): each term found in the
//! document in context (a sentence, a list item, code) counts its weight, one found only in a
//! heading or a fragment half; the task's names (code, quoted, identifiers) carry most of it.
//! Which blocks are about the task, for depth and evidence, and which named terms sit beside
//! evidence. Pure.

use std::collections::HashSet;

use crate::quality::markdown::Block;
use crate::quality::terms::{self, Term};

/// The share of relevance the task's names carry when it has other terms too.
const NAMES_SHARE: f64 = 0.8;
/// Relevance of a task with no specific term at all (nothing to check it against).
const NO_TERMS: f64 = 0.7;
/// A block names the task when the terms it names weigh this much (a rare word or a name).
const RELATED_WEIGHT: f64 = 0.5;

/// The task's terms.
pub struct Topic {
    terms: Vec<Term>,
}

/// What the document covers of the task.
#[derive(Debug, Clone, PartialEq)]
pub struct Coverage {
    /// 0–1: the weighted share of the task's terms named in context, names first.
    pub relevance: f64,
    /// Of the terms named, the weighted share named in a block with evidence beside them.
    pub evidenced: f64,
    /// Whether the task has names and the document names none of them.
    pub no_names: bool,
    /// The heaviest terms the document does not name, heaviest first (at most four).
    pub missing: Vec<String>,
}

impl Topic {
    /// The terms of `task`.
    #[must_use]
    pub fn of(task: &str) -> Self {
        Topic {
            terms: terms::of_task(task),
        }
    }

    /// Whether `text` names the task: terms weighing `RELATED_WEIGHT` together (any text is
    /// about a task that names nothing).
    #[must_use]
    pub fn related(&self, text: &str) -> bool {
        if self.terms.is_empty() {
            return true;
        }
        let lower = text.to_lowercase();
        let keys: HashSet<&str> = terms::keys(&lower).collect();
        let mut weight = 0.0;
        for t in &self.terms {
            if named(t, &keys) {
                weight += t.weight;
                if weight >= RELATED_WEIGHT {
                    return true;
                }
            }
        }
        false
    }

    /// How much of the task `blocks` cover, `headings` being the document's heading texts.
    #[must_use]
    pub fn coverage(&self, blocks: &[Block], headings: &[&str]) -> Coverage {
        if self.terms.is_empty() {
            return Coverage {
                relevance: NO_TERMS,
                evidenced: 0.0,
                no_names: false,
                missing: Vec::new(),
            };
        }
        let mut found = vec![0.0f64; self.terms.len()];
        let mut evidenced = vec![false; self.terms.len()];
        for b in blocks {
            let (text, in_context, evidence) = match b {
                Block::Code(c) => (c.as_str(), true, true),
                Block::Para(t) | Block::Item(t) => (
                    t.as_str(),
                    crate::quality::markdown::word_count(t) >= 6 || t.contains('`'),
                    has_evidence(t),
                ),
            };
            let lower = text.to_lowercase();
            let keys: HashSet<&str> = terms::keys(&lower).collect();
            for (i, t) in self.terms.iter().enumerate() {
                if named(t, &keys) {
                    found[i] = found[i].max(if in_context { 1.0 } else { 0.5 });
                    evidenced[i] |= evidence;
                }
            }
        }
        let lower = headings.join("\n").to_lowercase();
        let heading_keys: HashSet<&str> = terms::keys(&lower).collect();
        for (i, t) in self.terms.iter().enumerate() {
            if named(t, &heading_keys) {
                found[i] = found[i].max(0.5);
            }
        }
        self.summarise(&found, &evidenced)
    }

    fn summarise(&self, found: &[f64], evidenced: &[bool]) -> Coverage {
        let share = |pick: &dyn Fn(&Term) -> bool| -> Option<f64> {
            let (mut got, mut all) = (0.0, 0.0);
            for (t, f) in self.terms.iter().zip(found) {
                if pick(t) {
                    got += t.weight * f;
                    all += t.weight;
                }
            }
            (all > 0.0).then(|| got / all)
        };
        let names = share(&Term::is_name);
        let others = share(&|t: &Term| !t.is_name());
        let relevance = match (names, others) {
            (Some(n), Some(o)) => NAMES_SHARE * n + (1.0 - NAMES_SHARE) * o,
            (Some(v), None) | (None, Some(v)) => v,
            (None, None) => NO_TERMS,
        };
        let (mut on, mut named_weight) = (0.0, 0.0);
        for ((t, f), e) in self.terms.iter().zip(found).zip(evidenced) {
            if *f > 0.0 {
                named_weight += t.weight;
                on += if *e { t.weight } else { 0.0 };
            }
        }
        let no_names = names == Some(0.0);
        let mut missing: Vec<&Term> = self
            .terms
            .iter()
            .zip(found)
            .filter(|(t, f)| **f == 0.0 && (!no_names || t.is_name()))
            .map(|(t, _)| t)
            .collect();
        missing.sort_by(|a, b| b.weight.total_cmp(&a.weight));
        Coverage {
            relevance,
            evidenced: if named_weight > 0.0 {
                on / named_weight
            } else {
                0.0
            },
            no_names,
            missing: missing.iter().take(4).map(|t| t.text.clone()).collect(),
        }
    }
}

/// A name or a number is named as written; a word by any of its forms.
fn named(t: &Term, keys: &HashSet<&str>) -> bool {
    keys.contains(t.key.as_str())
        || (t.kind < terms::Kind::Number
            && t.key.len() >= 5
            && keys.iter().any(|k| terms::names(&t.key, k)))
}

/// Evidence beside a claim: a link, a code span, a citation.
#[must_use]
pub fn has_evidence(text: &str) -> bool {
    text.contains("http://")
        || text.contains("https://")
        || text.contains("](")
        || text.contains('`')
        || text.contains("[^")
        || text
            .as_bytes()
            .windows(3)
            .any(|w| w[0] == b'[' && w[1].is_ascii_digit() && w[2] == b']')
}

impl Coverage {
    /// The finding, when relevance is low: which of the task's terms the document misses.
    #[must_use]
    pub fn finding(&self, score: f64) -> Option<String> {
        if score >= 7.0 || self.missing.is_empty() {
            return None;
        }
        let list = self.missing.join(", ");
        Some(if self.no_names {
            format!(
                "relevance {score:.1}/10: names none of {list}; address what the task names, where it applies"
            )
        } else {
            format!(
                "relevance {score:.1}/10: does not name {list}; address what the task names, where it applies"
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quality::markdown;

    const TASK: &str =
        "Write a research report on HTTP caching headers (Cache-Control, ETag) for our CDN team";

    fn cover(doc: &str) -> Coverage {
        let sections = markdown::sections(doc);
        let blocks: Vec<Block> = sections
            .iter()
            .flat_map(|s| markdown::blocks(&s.body))
            .collect();
        let headings: Vec<&str> = sections.iter().map(|s| s.title.as_str()).collect();
        Topic::of(TASK).coverage(&blocks, &headings)
    }

    #[test]
    fn the_tasks_names_carry_relevance_and_the_missing_ones_are_named() {
        let common = cover(
            "# HTTP caching for the CDN\n\nThe CDN edge keeps a cache of every HTTP response and its headers for a day.\n",
        );
        assert!(
            common.no_names && common.relevance <= 0.2 + 1e-9,
            "{common:?}"
        );
        assert_eq!(common.missing, ["Cache-Control", "ETag"]);
        assert_eq!(
            common.finding(2.0).unwrap(),
            "relevance 2.0/10: names none of Cache-Control, ETag; address what the task names, where it applies"
        );
        let named = cover(
            "# HTTP caching\n\nThe CDN edge honours `Cache-Control: max-age=60` and revalidates with the `ETag` of each HTTP response, so caching headers decide.\n",
        );
        assert!(!named.no_names && named.relevance > 0.95, "{named:?}");
        assert!(named.missing.is_empty() && named.finding(9.6).is_none());
        assert!((named.evidenced - 1.0).abs() < 1e-9, "{named:?}");
    }

    #[test]
    fn a_term_in_a_heading_or_fragment_alone_counts_half() {
        let heading = cover("# Cache-Control and ETag\n\nNothing here.\n");
        let prose = cover(
            "# Notes\n\nWe set Cache-Control on every response and compare the ETag on each request.\n",
        );
        assert!(
            (heading.relevance - 0.5 * prose.relevance).abs() < 0.1,
            "{heading:?} {prose:?}"
        );
        assert!(
            prose.evidenced.abs() < 1e-9,
            "no evidence beside them: {prose:?}"
        );
    }

    #[test]
    fn a_task_that_names_nothing_specific_relates_to_everything() {
        let t = Topic::of("Write a good report for the team");
        assert!(t.related("anything at all"));
        assert!((t.coverage(&[], &[]).relevance - NO_TERMS).abs() < 1e-9);
    }
}
