//! The rubric's rules, pure: weighted score (computed by us, never trusted from a model),
//! hallucination-stub penalty, cycling, focus dimensions, best round.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

/// Scores by dimension, 0–10.
pub type Dims = BTreeMap<String, f64>;

/// The default rubric's dimensions, in the seed's order (tests and fixtures).
#[cfg(test)]
pub const DIMENSIONS: [&str; 6] = [
    "depth",
    "relevance",
    "completeness",
    "grounded",
    "specificity",
    "structure",
];

/// Dimensions from six scores in [`DIMENSIONS`] order (tests and fixtures).
#[cfg(test)]
#[must_use]
pub fn six(v: [f64; 6]) -> Dims {
    DIMENSIONS
        .iter()
        .zip(v)
        .map(|(k, v)| ((*k).to_string(), v))
        .collect()
}

/// Objects whose long method names are real (standard modules and common handles).
const WHITELIST: [&str; 40] = [
    "os",
    "sys",
    "re",
    "json",
    "np",
    "pd",
    "torch",
    "tf",
    "subprocess",
    "asyncio",
    "logging",
    "datetime",
    "math",
    "random",
    "time",
    "pathlib",
    "self",
    "cls",
    "str",
    "dict",
    "list",
    "collections",
    "itertools",
    "functools",
    "typing",
    "shutil",
    "socket",
    "threading",
    "std",
    "tokio",
    "serde",
    "fs",
    "io",
    "path",
    "plt",
    "sklearn",
    "unittest",
    "pytest",
    "boto3",
    "requests",
];

/// An object, a dot, a long lower-case name, an opening parenthesis. Neither a capture group nor
/// a word boundary: either makes the regex crate build a one-pass DFA of ~350 KB (Unicode `\w`)
/// that the supervisor would hold for its whole life. Neither is needed: the leftmost match of
/// `\w+` already starts where the word does, and the object is what precedes the first dot.
static STUB: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"\w+\.[a-z_]{12,}\s*\(").ok());

/// Calls like `client.generate_contextual_embedding_chain(` on objects outside the whitelist.
#[must_use]
pub fn stub_count(text: &str) -> usize {
    if !may_hold_stub(text) {
        return 0;
    }
    let Some(re) = STUB.as_ref() else { return 0 };
    re.find_iter(text)
        .filter(|m| {
            let object = m.as_str().split('.').next().unwrap_or_default();
            !WHITELIST.contains(&object)
        })
        .count()
}

/// Whether `text` holds a dot followed by twelve of `[a-z_]`, without which [`STUB`] cannot
/// match. Most documents hold none, and then the regex is never compiled: the regex engine's
/// code and tables stay out of a running loop's memory.
fn may_hold_stub(text: &str) -> bool {
    let b = text.as_bytes();
    memchr::memchr_iter(b'.', b).any(|i| {
        b.get(i + 1..i + 13)
            .is_some_and(|name| name.iter().all(|c| c.is_ascii_lowercase() || *c == b'_'))
    })
}

/// Dock `depth` by min(stubs, 2) before weighting (seed 000). Returns the penalty applied.
pub fn apply_stub_penalty(dims: &mut Dims, text: &str) -> usize {
    let penalty = stub_count(text).min(2);
    if penalty > 0
        && let Some(d) = dims.get_mut("depth")
    {
        #[allow(clippy::cast_precision_loss)]
        let p = penalty as f64;
        *d = (*d - p).max(0.0);
    }
    penalty
}

/// The weighted score on 0–10 over the weights' dimensions (a missing dimension counts 0).
#[must_use]
pub fn weighted(dims: &Dims, weights: &BTreeMap<String, f64>) -> f64 {
    let total: f64 = weights.values().sum();
    if total <= 0.0 {
        return 0.0;
    }
    let sum: f64 = weights
        .iter()
        .map(|(k, w)| w * dims.get(k).copied().unwrap_or(0.0).clamp(0.0, 10.0))
        .sum();
    ((sum / total) * 100.0).round() / 100.0
}

/// Every dimension equal to the previous round's: the evaluator is not seeing a change.
#[must_use]
pub fn is_cycling(prev: &Dims, cur: &Dims) -> bool {
    !cur.is_empty()
        && prev.len() == cur.len()
        && cur
            .iter()
            .all(|(k, v)| prev.get(k).is_some_and(|p| (p - v).abs() < 1e-9))
}

/// Dimensions below the focus threshold, lowest first.
#[must_use]
pub fn focus_dims(dims: &Dims, threshold: f64) -> Vec<String> {
    let mut low: Vec<(&String, f64)> = dims
        .iter()
        .filter(|(_, v)| **v < threshold)
        .map(|(k, v)| (k, *v))
        .collect();
    low.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(b.0)));
    low.into_iter().map(|(k, _)| k.clone()).collect()
}

/// The index of the best score (the first one on ties: earlier rounds cost less).
#[cfg(test)]
#[must_use]
pub fn best_round(scores: &[f64]) -> Option<usize> {
    scores
        .iter()
        .enumerate()
        .fold(None, |best: Option<(usize, f64)>, (i, s)| match best {
            Some((_, b)) if *s <= b => best,
            _ => Some((i, *s)),
        })
        .map(|(i, _)| i)
}

/// Equal after folding whitespace: a revision that changed nothing.
#[must_use]
pub fn same_text(a: &str, b: &str) -> bool {
    a.split_whitespace().eq(b.split_whitespace())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::default_weights;

    fn dims(v: [f64; 6]) -> Dims {
        six(v)
    }

    #[test]
    fn weights_follow_the_seed() {
        let d = dims([7.0, 8.0, 7.0, 6.0, 6.0, 9.0]);
        // 7*.25 + 8*.2 + 7*.2 + 6*.15 + 6*.1 + 9*.1 = 7.15
        assert!((weighted(&d, &default_weights()) - 7.15).abs() < 1e-9);
        let d2 = dims([8.0, 9.0, 8.0, 8.0, 8.0, 9.0]);
        assert!((weighted(&d2, &default_weights()) - 8.3).abs() < 1e-9);
    }

    #[test]
    fn scores_are_clamped_and_missing_dims_count_zero() {
        let mut d = dims([12.0, 10.0, 10.0, 10.0, 10.0, 10.0]);
        assert!((weighted(&d, &default_weights()) - 10.0).abs() < 1e-9);
        d.remove("structure");
        assert!((weighted(&d, &default_weights()) - 9.0).abs() < 1e-9);
    }

    #[test]
    fn stubs_dock_depth_by_at_most_two() {
        let text = "call client.generate_contextual_embedding_chain() then \
                    db.fabricate_everything_now(x) and db.another_invented_call()";
        assert_eq!(stub_count(text), 3);
        let mut d = dims([7.0, 8.0, 7.0, 6.0, 6.0, 9.0]);
        assert_eq!(apply_stub_penalty(&mut d, text), 2);
        assert!((d["depth"] - 5.0).abs() < 1e-9);
        let mut one = dims([0.5, 8.0, 7.0, 6.0, 6.0, 9.0]);
        apply_stub_penalty(&mut one, "x.abcdefghijklmn()");
        assert!(one["depth"].abs() < 1e-9);
    }

    #[test]
    fn whitelisted_and_short_names_are_not_stubs() {
        assert_eq!(
            stub_count("os.path_exists_really() self.initialize_everything() a.short()"),
            0
        );
        assert_eq!(stub_count("subprocess.check_output_text(x)"), 0);
    }

    #[test]
    fn the_object_is_the_whole_word_before_the_dot() {
        for (text, stubs) in [
            // A whitelisted name inside a longer word is not whitelisted.
            ("myos.path_exists_really()", 1),
            ("os_.path_exists_really()", 1),
            ("réseau.generate_everything()", 1),
            ("données.os.generate_everything()", 0),
            ("os.path.join_everything_here(", 0),
            ("self.x.initialize_everything ()", 1),
            ("a.generate_everything(b.generate_everything()", 2),
            ("x.Generate_everything()", 0),
            (".generate_everything()", 0),
            ("x.abcdefghijkl(", 1),
            ("x.abcdefghijk(", 0),
            ("x.abcdefghijkl", 0),
            ("the end.", 0),
        ] {
            assert_eq!(stub_count(text), stubs, "{text}");
        }
    }

    #[test]
    fn cycling_needs_every_dimension_equal() {
        let a = dims([7.0, 8.0, 7.0, 6.0, 6.0, 9.0]);
        let mut b = a.clone();
        assert!(is_cycling(&a, &b));
        b.insert("depth".into(), 7.5);
        assert!(!is_cycling(&a, &b));
        assert!(!is_cycling(&Dims::new(), &Dims::new()));
    }

    #[test]
    fn focus_is_below_threshold_lowest_first() {
        let d = dims([7.0, 8.0, 6.5, 6.0, 7.0, 9.0]);
        assert_eq!(focus_dims(&d, 7.0), vec!["grounded", "completeness"]);
    }

    #[test]
    fn best_round_prefers_the_earliest_of_equals() {
        assert_eq!(best_round(&[7.0, 7.65, 7.2]), Some(1));
        assert_eq!(best_round(&[8.0, 8.0]), Some(0));
        assert_eq!(best_round(&[]), None);
    }

    #[test]
    fn same_text_ignores_whitespace() {
        assert!(same_text("# A\n\nbody  text\n", "# A\nbody text"));
        assert!(!same_text("# A body", "# A body!"));
    }
}
