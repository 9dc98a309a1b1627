use super::*;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn defaults_match_the_contract() {
    let s = Settings::default();
    assert_eq!(s.defaults.max_iterations, 10);
    assert!((s.defaults.quality_threshold - 0.85).abs() < 1e-9);
    assert!((s.defaults.pass_threshold - 8.0).abs() < 1e-9);
    assert_eq!(s.defaults.max_rounds, 3);
    assert_eq!(s.defaults.evaluator, "heuristic");
    assert!((s.gate.weights.values().sum::<f64>() - 1.0).abs() < 1e-9);
}

#[test]
fn layers_override_in_order() {
    let d = tempfile::tempdir().unwrap();
    let home = write(
        d.path(),
        "home.toml",
        "[defaults]\nmax_iterations = 4\nmax_rounds = 2\n",
    );
    let lp = write(d.path(), "loop.toml", "[defaults]\nmax_iterations = 6\n");
    let s = load(&Sources {
        home: Some(home),
        loop_file: Some(lp),
        explicit: None,
    })
    .unwrap();
    assert_eq!(s.defaults.max_iterations, 6);
    assert_eq!(s.defaults.max_rounds, 2);
}

#[test]
fn unknown_key_names_file_line_and_key() {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        "w.toml",
        "[defaults]\nmax_iterations = 4\nmax_iteration = 5\n",
    );
    let e = load(&Sources {
        explicit: Some(p.clone()),
        ..Sources::default()
    })
    .unwrap_err();
    let msg = e.to_string();
    assert_eq!(e.exit_code(), 2);
    assert!(msg.starts_with(&format!("{}:3:", p.display())), "{msg}");
    assert!(msg.contains("max_iteration"), "{msg}");
    assert!(!msg.contains('\n'), "{msg}");
}

#[test]
fn out_of_range_value_names_key_and_line() {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        "w.toml",
        "\n[defaults]\nquality_threshold = 1.5\n",
    );
    let msg = parse_layer(&p, true).unwrap_err().to_string();
    assert!(
        msg.contains(":3: [defaults] quality_threshold must be between 0 and 1"),
        "{msg}"
    );
}

#[test]
fn missing_explicit_config_is_an_input_error() {
    let e = load(&Sources {
        explicit: Some("/nonexistent/x.toml".into()),
        ..Sources::default()
    })
    .unwrap_err();
    assert_eq!(e.exit_code(), 2);
}

#[test]
fn agents_accept_strings_and_tables_and_refuse_unknown_keys() {
    let d = tempfile::tempdir().unwrap();
    let ok = write(
        d.path(),
        "a.toml",
        "[agents]\nx = \"run-x\"\ny = { command = \"run-y\", stdin = false, revision_output = \"file\" }\n",
    );
    let s = load(&Sources {
        explicit: Some(ok),
        ..Sources::default()
    })
    .unwrap();
    assert_eq!(s.agents["x"].to_table().command, "run-x");
    let y = s.agents["y"].to_table();
    assert!(!y.stdin);
    assert_eq!(y.revision_output, RevisionOutput::File);

    let bad = write(
        d.path(),
        "b.toml",
        "[agents]\ny = { command = \"r\", stdn = true }\n",
    );
    let msg = parse_layer(&bad, true).unwrap_err().to_string();
    assert!(msg.contains(":2:") && msg.contains("stdn"), "{msg}");
}

#[test]
fn evaluator_needs_its_fields() {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        "e.toml",
        "[evaluators.judge]\nkind = \"command\"\n",
    );
    let msg = parse_layer(&p, true).unwrap_err().to_string();
    assert!(
        msg.contains(":1: [evaluators.judge] kind = \"command\" needs `command`"),
        "{msg}"
    );
}

#[test]
fn effective_settings_round_trip_through_toml() {
    let mut s = Settings::default();
    s.agents.insert("a".into(), AgentEntry::Command("x".into()));
    s.evaluators.insert("h".into(), EvaluatorEntry::heuristic());
    let text = to_toml(&s).unwrap();
    let back: Settings = toml::from_str(&text).unwrap();
    assert_eq!(back, s);
}

#[test]
fn design_example_parses() {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        "w.toml",
        r#"
[defaults]
max_iterations = 10
quality_threshold = 0.85
pass_threshold = 8.0
max_rounds = 3
agent = "claude"
evaluator = "heuristic"
auto_watch = false

[quality_metrics]
completeness_weight = 0.25
verification_weight = 0.30
clarity_weight = 0.20
actionability_weight = 0.25

[safety]
max_cost_per_loop = 10.00
max_time_per_iteration = 600
require_human_review_at_iteration = 0

[validation]
commands = ["cargo test --quiet"]

[agents]
research-agent = "kiro-cli chat --agent research-agent"
mine = { command = "my-agent --yes", stdin = true }

[evaluators.judge]
kind = "command"
command = "claude -p --model haiku"
[evaluators.llamacpp]
kind = "openai"
url = "http://127.0.0.1:8079/v1"
model = "local"
[evaluators.local]
kind = "ollama"
model = "qwen3:8b"
url = "http://127.0.0.1:11434"
"#,
    );
    let s = load(&Sources {
        explicit: Some(p),
        ..Sources::default()
    })
    .unwrap();
    assert_eq!(s.evaluators.len(), 3);
    assert_eq!(s.validation.commands, vec!["cargo test --quiet"]);
}

#[test]
fn the_documented_settings_parse_as_written() {
    let doc = include_str!("../../docs/config.md");
    let start = doc
        .find("```toml\n")
        .expect("a toml block in docs/config.md")
        + 8;
    let len = doc[start..].find("```").expect("closed block");
    let d = tempfile::tempdir().unwrap();
    let p = write(d.path(), "documented.toml", &doc[start..start + len]);
    let s = load(&Sources {
        explicit: Some(p),
        ..Sources::default()
    })
    .unwrap_or_else(|e| panic!("docs/config.md's example no longer parses: {e}"));
    // The documented values are the defaults.
    assert_eq!(s.defaults, Settings::default().defaults);
    assert_eq!(s.safety, Settings::default().safety);
    assert_eq!(s.gate, Settings::default().gate);
}

#[test]
fn a_weight_of_no_dimension_is_refused_naming_its_line() {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        "w.toml",
        "[gate.weights]\ndepth = 0.5\ndepht = 0.5\n",
    );
    let e = load(&Sources {
        explicit: Some(p.clone()),
        ..Sources::default()
    })
    .unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert_eq!(
        e.to_string(),
        format!(
            "{}:3: [gate.weights] depht is not a dimension of the rubric (known: completeness, correctness, depth, grounded, relevance, scope, specificity, structure, tests)",
            p.display()
        )
    );
}
