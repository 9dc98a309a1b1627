//! The three-persona panel (seed 003): Domain Practitioner, Critical Reviewer and Informed
//! Newcomer review the same excerpt concurrently; their issues, prefixed `[Persona]`, join the
//! evaluator's, de-duplicated case-insensitively. The panel never gates.

pub use crate::disk::records::Review;

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

/// A persona's prompt: its lens, the task and the excerpt, nothing of the producer.
#[must_use]
pub fn prompt(lens: &str, task: &str, excerpt: &str) -> String {
    format!(
        "{lens}\n\nTask the document was written for: {task}\n\nDocument (excerpt):\n<document>\n{excerpt}\n</document>\n\n\
         Review it from your perspective. Respond with JSON only:\n\
         {{\"score\": N (0-10), \"issues\": [\"specific problem\", ...], \"strengths\": [\"what works\", ...]}}"
    )
}

/// The answer's JSON schema.
#[must_use]
pub fn schema() -> serde_json::Value {
    serde_json::json!({"type": "object", "properties": {
        "score": {"type": "number", "minimum": 0, "maximum": 10},
        "issues": {"type": "array", "items": {"type": "string"}, "maxItems": 6},
        "strengths": {"type": "array", "items": {"type": "string"}, "maxItems": 4}},
        "required": ["score", "issues", "strengths"], "additionalProperties": false})
}

/// Read a persona's answer leniently (the evaluator's extractor, with `score` as the dimension).
#[must_use]
pub fn parse(persona: &str, answer: &str) -> Review {
    let strings = |v: Option<&serde_json::Value>| -> Vec<String> {
        v.and_then(serde_json::Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let value = super::extract::first_object(answer);
    let score = super::extract::extract(answer, &["score".to_string()])
        .ok()
        .and_then(|e| e.dims.get("score").copied());
    Review {
        persona: persona.to_string(),
        score,
        issues: strings(value.as_ref().and_then(|v| v.get("issues"))),
        strengths: strings(value.as_ref().and_then(|v| v.get("strengths"))),
    }
}

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
    fn answers_parse_leniently() {
        let r = parse(
            "Critical Reviewer",
            "Here:\n```json\n{'score': 6, 'issues': ['No caveats',], 'strengths': ['clear']}\n```",
        );
        assert_eq!(r.score, Some(6.0));
        assert_eq!(r.issues, vec!["No caveats"]);
        assert_eq!(r.strengths, vec!["clear"]);
        let junk = parse("Informed Newcomer", "I liked it");
        assert_eq!(junk.score, None);
        assert!(junk.issues.is_empty());
    }

    #[test]
    fn the_prompt_carries_lens_task_and_excerpt_only() {
        let p = prompt(PERSONAS[2].1, "TASK", "EXCERPT");
        assert!(p.contains("first time") && p.contains("TASK") && p.contains("EXCERPT"));
    }

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
