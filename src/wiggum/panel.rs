//! The three-persona panel (seed 003): Domain Practitioner, Critical Reviewer and Informed
//! Newcomer review the same excerpt concurrently; their issues, prefixed `[Persona]`, join the
//! evaluator's, de-duplicated case-insensitively. The panel never gates.

use serde::{Deserialize, Serialize};

/// One persona's review.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Review {
    /// The persona's name.
    pub persona: String,
    /// Its score, 0–10.
    pub score: Option<f64>,
    /// Specific problems it saw.
    pub issues: Vec<String>,
    /// What was done well.
    pub strengths: Vec<String>,
}

/// The personas and the lens each reads with.
pub const PERSONAS: [(&str, &str); 3] = [
    (
        "Domain Practitioner",
        "You are a senior engineer with 10+ years in production systems. Judge whether the content is actionable and production-ready; flag toy examples, vague claims and missing implementation details. Could a practitioner act on this today?",
    ),
    (
        "Critical Reviewer",
        "You are a technical editor reviewing for completeness and rigor. Identify what an expert would expect but is absent; flag unsupported claims, missing caveats and one-sided coverage. Read for what is not there.",
    ),
    (
        "Informed Newcomer",
        "You are a developer with general programming knowledge learning this topic for the first time. Test whether the document is comprehensible without prior domain knowledge; flag unexplained jargon and concepts assumed without introduction.",
    ),
];

/// The evaluator's issues followed by the panel's, prefixed and de-duplicated.
#[must_use]
pub fn merge_issues(mut issues: Vec<String>, reviews: &[Review]) -> Vec<String> {
    let mut seen: Vec<String> = issues.iter().map(|i| i.to_lowercase()).collect();
    for r in reviews {
        for i in &r.issues {
            let key = i.to_lowercase();
            if seen.contains(&key) {
                continue;
            }
            seen.push(key);
            issues.push(format!("[{}] {i}", r.persona));
        }
    }
    issues
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panel_issues_are_prefixed_and_deduplicated() {
        let reviews = vec![
            Review {
                persona: "Domain Practitioner".into(),
                score: Some(6.0),
                issues: vec!["No example config".into(), "Missing rollback".into()],
                strengths: vec![],
            },
            Review {
                persona: "Informed Newcomer".into(),
                score: Some(7.0),
                issues: vec!["missing ROLLBACK".into(), "Jargon: STS".into()],
                strengths: vec![],
            },
        ];
        let merged = merge_issues(vec!["no example config".into()], &reviews);
        assert_eq!(
            merged,
            vec![
                "no example config",
                "[Domain Practitioner] Missing rollback",
                "[Informed Newcomer] Jargon: STS",
            ]
        );
    }
}
