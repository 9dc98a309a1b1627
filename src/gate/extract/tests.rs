use super::*;

fn six() -> Vec<String> {
    super::super::rubric::DIMENSIONS
        .iter()
        .map(|s| (*s).to_string())
        .collect()
}

fn ok(answer: &str) -> Evaluation {
    extract(answer, &six()).unwrap_or_else(|e| panic!("{e}\n--- answer:\n{answer}"))
}

/// Real-looking messy answers and the depth each must yield.
const CORPUS: &[(&str, f64)] = &[
    (
        r#"{"depth": 7, "relevance": 8, "completeness": 7, "grounded": 6, "specificity": 6, "structure": 9, "issues": ["a"]}"#,
        7.0,
    ),
    (
        "Here is my evaluation:\n```json\n{\"depth\": 6, \"relevance\": 8, \"completeness\": 7, \"grounded\": 6, \"specificity\": 6, \"structure\": 9, \"issues\": []}\n```\nHope this helps!",
        6.0,
    ),
    (
        "Sure! {\"depth\": 5, \"relevance\": 8, \"completeness\": 7, \"grounded\": 6, \"specificity\": 6, \"structure\": 9,} That's it.",
        5.0,
    ),
    (
        "{'depth': 4, 'relevance': 8, 'completeness': 7, 'grounded': 6, 'specificity': 6, 'structure': 9, 'issues': ['it\\'s thin']}",
        4.0,
    ),
    (
        r#"{"depth": "8", "relevance": "7/10", "completeness": 7, "grounded": NaN, "specificity": 6, "structure": 9}"#,
        8.0,
    ),
    (
        "<think>The doc is ok, maybe {\"depth\": 1}</think>\n{\"depth\": 9, \"relevance\": 9, \"completeness\": 9, \"grounded\": 9, \"specificity\": 9, \"structure\": 9}",
        9.0,
    ),
    (
        "{depth: 3, relevance: 8, completeness: 7, grounded: 6, specificity: 6, structure: 9, issues: [\"x\"]}",
        3.0,
    ),
    (
        "Scores:\n- Depth: 6\n- Relevance: 7\n- Completeness = 8\n- Grounded: 5\n- Specificity: 6\n- Structure: 9\n",
        6.0,
    ),
    (
        r#"{"scores": {"depth": 2, "relevance": 8, "completeness": 7, "grounded": 6, "specificity": 6, "structure": 9}, "issues": [{"issue": "no code"}]}"#,
        2.0,
    ),
    (
        r#"{"DEPTH": 7.5, "Relevance": 8, "completeness": 7, "grounded": 6, "specificity": 6, "structure": 9, "pass": True}"#,
        7.5,
    ),
];

#[test]
fn the_messy_corpus_parses() {
    for (answer, depth) in CORPUS {
        let ev = ok(answer);
        assert!(
            (ev.dims["depth"] - depth).abs() < 1e-9,
            "{answer}: {:?}",
            ev.dims
        );
        assert_eq!(ev.dims.len(), 6, "{answer}");
    }
}

#[test]
fn nan_counts_as_missing_with_an_issue() {
    let ev = ok(CORPUS[4].0);
    assert!(ev.dims["grounded"].abs() < 1e-9);
    assert!(ev.issues.iter().any(|i| i.contains("grounded")));
    assert!((ev.dims["relevance"] - 7.0).abs() < 1e-9);
}

#[test]
fn issues_come_through_including_objects() {
    assert_eq!(ok(CORPUS[0].0).issues, vec!["a"]);
    assert_eq!(ok(CORPUS[8].0).issues, vec!["no code"]);
    assert_eq!(ok(CORPUS[3].0).issues, vec!["it's thin"]);
}

#[test]
fn the_seed_002_schema_is_scaled_to_ten() {
    let a = r#"{"score": 0.62, "pass": false, "feedback": "Add a worked example.", "rubric_scores": {"depth": 0.5, "relevance": 0.8, "completeness": 0.6, "grounded": 0.7, "specificity": 0.5, "structure": 0.9}, "failure_category": "content", "suggested_fix": "Ask for examples."}"#;
    let ev = ok(a);
    assert!((ev.dims["depth"] - 5.0).abs() < 1e-9, "{:?}", ev.dims);
    assert_eq!(
        ev.issues,
        vec!["Add a worked example.", "Ask for examples."]
    );
    let only_score = ok(r#"{"score": 0.7, "pass": false, "feedback": "meh"}"#);
    assert!((only_score.dims["structure"] - 7.0).abs() < 1e-9);
}

#[test]
fn garbage_is_an_error_naming_the_start() {
    for g in [
        "",
        "I cannot evaluate this.",
        "{\"depth\": \"high\"}",
        "```\nnope\n```",
    ] {
        let e = extract(g, &six()).unwrap_err();
        assert!(e.starts_with("no scores"), "{e}");
    }
}

#[test]
fn scores_are_clamped() {
    let ev = ok(
        r#"{"depth": 70, "relevance": -3, "completeness": 7, "grounded": 6, "specificity": 6, "structure": 9}"#,
    );
    assert!((ev.dims["depth"] - 10.0).abs() < 1e-9);
    assert!(ev.dims["relevance"].abs() < 1e-9);
}

#[test]
fn never_panics_on_arbitrary_input() {
    // A cheap property test: many generated strings mixing JSON-ish fragments.
    let parts = [
        "{", "}", "\"", "'", ",", ":", "depth", "7", "NaN", "```", "\n", "[", "]", "\\", "é", "/10",
    ];
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..5000 {
        let mut s = String::new();
        for _ in 0..(seed % 40) {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            s.push_str(parts[usize::try_from(seed % parts.len() as u64).unwrap()]);
        }
        let _ignored = extract(&s, &six()).is_ok();
    }
}
