//! `wiggum gate` alone: scripted command evaluators and producers, and the HTTP backends against
//! loopback servers speaking each protocol.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::support::TestHome;
use crate::support::http::{Reply, Server, ollama, openai};

fn agents_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/agents")
}

fn dims(v: [f64; 6]) -> String {
    format!(
        r#"{{"depth": {}, "relevance": {}, "completeness": {}, "grounded": {}, "specificity": {}, "structure": {}, "issues": ["add a worked example of the lock", "cite the man page"]}}"#,
        v[0], v[1], v[2], v[3], v[4], v[5]
    )
}

/// A scripted world: answers, revisions, and a config naming the scripts.
struct Scripted {
    t: TestHome,
    dir: PathBuf,
    doc: PathBuf,
    config: PathBuf,
}

impl Scripted {
    fn new(answers: &[String], revisions: &[&str]) -> Self {
        let t = TestHome::new();
        let dir = t.root().join("script");
        std::fs::create_dir_all(&dir).unwrap();
        for (i, a) in answers.iter().enumerate() {
            std::fs::write(dir.join(format!("answer-{}", i + 1)), a).unwrap();
        }
        for (i, r) in revisions.iter().enumerate() {
            std::fs::write(dir.join(format!("revision-{}", i + 1)), r).unwrap();
        }
        let doc = t.root().join("doc.md");
        std::fs::write(&doc, "# Flock\n\nfirst draft\n").unwrap();
        let config = t.root().join("gate.toml");
        let a = agents_dir();
        std::fs::write(
            &config,
            format!(
                "[evaluators.judge]\nkind = \"command\"\ncommand = \"SCRIPT_DIR={d} sh {a}/scripted-evaluator.sh\"\n\n[agents]\nwriter = \"SCRIPT_DIR={d} sh {a}/scripted-producer.sh\"\n",
                d = dir.display(),
                a = a.display()
            ),
        )
        .unwrap();
        Scripted {
            t,
            dir,
            doc,
            config,
        }
    }

    fn gate(&self, extra: &[&str]) -> crate::support::home::Run {
        let doc = self.doc.display().to_string();
        let cfg = self.config.display().to_string();
        let mut args = vec![
            "wiggum",
            "gate",
            "Explain flock",
            &doc,
            "--config",
            &cfg,
            "--evaluator",
            "judge",
            "--producer",
            "writer",
            "--json",
        ];
        args.extend_from_slice(extra);
        self.t.run(&args)
    }

    fn calls(&self, who: &str) -> usize {
        std::fs::read_to_string(self.dir.join(format!("{who}-calls")))
            .map_or(0, |s| s.trim().parse().unwrap())
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(name)).unwrap()
    }
}

fn json(r: &crate::support::home::Run) -> Value {
    serde_json::from_str(&r.stdout()).unwrap_or_else(|e| panic!("{e}: {}", r.stdout()))
}

#[test]
fn passes_at_round_two_with_the_issues_reaching_the_producer() {
    let s = Scripted::new(
        &[
            dims([7.0, 8.0, 7.0, 6.0, 6.0, 9.0]),
            dims([8.0, 9.0, 8.0, 8.0, 8.0, 9.0]),
        ],
        &["# Flock\n\nrevised with an example\n"],
    );
    let r = s.gate(&[]);
    r.code(0);
    let v = json(&r);
    assert_eq!(v["record"]["final"], "PASS");
    assert_eq!(v["record"]["rounds"], 2);
    assert_eq!(v["record"]["wiggum_r1"], 7.15);
    assert_eq!(v["record"]["wiggum_scores"]["r2"]["depth"], 8.0);
    assert_eq!(
        s.read("producer-temperature-1").trim(),
        "0.3",
        "revision temperature"
    );
    let prompt = s.read("producer-prompt-1.txt");
    assert!(
        prompt.contains("add a worked example of the lock") && prompt.contains("first draft"),
        "{prompt}"
    );
    assert!(
        prompt.contains("grounded (6.0/10)") && !prompt.contains("structure ("),
        "focus dims: {prompt}"
    );
    assert_eq!(
        std::fs::read_to_string(&s.doc).unwrap(),
        "# Flock\n\nrevised with an example\n"
    );
    // The evaluator saw only the task, the type and the output (seed 002).
    let ev = s.read("eval-prompt-1.txt");
    assert!(ev.contains("Task: Explain flock") && ev.contains("first draft"));
    assert!(!ev.contains("Revise the following"), "{ev}");
}

#[test]
fn cycling_stops_after_two_evaluations() {
    let same = dims([6.0; 6]);
    let s = Scripted::new(
        &[same.clone(), same],
        &["# Flock\n\nv2\n", "# Flock\n\nv3\n"],
    );
    let r = s.gate(&[]);
    r.code(1);
    let v = json(&r);
    assert_eq!(v["record"]["final"], "FAIL");
    assert_eq!(v["record"]["termination"], "cycling");
    assert_eq!(s.calls("eval"), 2);
    assert_eq!(s.calls("producer"), 1);
}

#[test]
fn the_best_round_is_restored_on_fail() {
    let s = Scripted::new(
        &[
            dims([7.0; 6]),
            dims([8.0, 8.0, 7.0, 7.0, 8.0, 8.0]),
            dims([7.2; 6]),
        ],
        &["# Flock\n\nround two\n", "# Flock\n\nround three\n"],
    );
    let r = s.gate(&[]);
    r.code(1);
    let v = json(&r);
    let scores: Vec<f64> = v["rounds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["score"].as_f64().unwrap())
        .collect();
    assert_eq!(scores, vec![7.0, 7.65, 7.2]);
    assert_eq!(v["record"]["best_round"], 2);
    assert_eq!(
        std::fs::read_to_string(&s.doc).unwrap(),
        "# Flock\n\nround two\n"
    );
}

#[test]
fn a_garbage_answer_is_an_error_and_the_file_is_untouched() {
    let s = Scripted::new(&["I think it's pretty good overall!".to_string()], &[]);
    let r = s.gate(&[]);
    r.code(1);
    let v = json(&r);
    assert_eq!(v["record"]["final"], "ERROR");
    assert!(
        v["record"]["error"].as_str().unwrap().contains("no scores"),
        "{v}"
    );
    assert_eq!(
        std::fs::read_to_string(&s.doc).unwrap(),
        "# Flock\n\nfirst draft\n"
    );
}

#[test]
fn an_unchanged_revision_stops_without_another_evaluation() {
    let s = Scripted::new(&[dims([6.0; 6])], &["# Flock\n\n  first draft  \n"]);
    let r = s.gate(&[]);
    r.code(1);
    assert_eq!(json(&r)["record"]["termination"], "unchanged");
    assert_eq!(s.calls("eval"), 1);
}

#[test]
fn the_same_model_for_evaluator_and_producer_is_warned_about() {
    let s = Scripted::new(&[dims([9.0; 6])], &[]);
    let cmd = format!(
        "SCRIPT_DIR={} sh {}/scripted-evaluator.sh",
        s.dir.display(),
        agents_dir().display()
    );
    std::fs::write(&s.config, format!("[evaluators.judge]\nkind = \"command\"\ncommand = \"{cmd}\"\n[agents]\nwriter = \"{cmd}\"\n")).unwrap();
    let r = s.gate(&[]);
    r.code(0);
    assert!(
        r.stderr()
            .contains("the evaluator and the producer use the same model"),
        "{}",
        r.stderr()
    );
}

#[test]
fn a_contaminated_template_is_refused_before_anything_runs() {
    let s = Scripted::new(&[dims([9.0; 6])], &[]);
    let tpl = s.t.root().join("evaluator.prompt.md");
    std::fs::write(&tpl, "Score this.\nProducer system_prompt: x\n{{output}}\n").unwrap();
    let text = std::fs::read_to_string(&s.config).unwrap();
    std::fs::write(
        &s.config,
        text.replace(
            "kind = \"command\"\n",
            &format!("kind = \"command\"\ntemplate = \"{}\"\n", tpl.display()),
        ),
    )
    .unwrap();
    let r = s.gate(&[]);
    r.code(2);
    assert!(
        r.stderr()
            .contains(":2: evaluator template contains `system_prompt`"),
        "{}",
        r.stderr()
    );
    assert_eq!(s.calls("eval"), 0);
}

fn http_config(t: &TestHome, kind: &str, base: &str, timeout: u64, retries: u32) -> PathBuf {
    let p = t.root().join("http.toml");
    let url = if kind == "openai" {
        format!("{base}/v1")
    } else {
        base.to_string()
    };
    std::fs::write(&p, format!("[evaluators.m]\nkind = \"{kind}\"\nurl = \"{url}\"\nmodel = \"tiny\"\ntimeout_secs = {timeout}\nretries = {retries}\n")).unwrap();
    p
}

fn gate_http(t: &TestHome, cfg: &Path) -> crate::support::home::Run {
    let doc = t.root().join("doc.md");
    std::fs::write(&doc, "# Doc\n\nbody\n").unwrap();
    t.run(&[
        "wiggum",
        "gate",
        "Explain",
        &doc.display().to_string(),
        "--config",
        &cfg.display().to_string(),
        "--evaluator",
        "m",
        "--json",
    ])
}

#[test]
fn openai_backend_asks_for_the_rubric_schema_at_temperature_zero() {
    let t = TestHome::new();
    let srv = Server::start(vec![openai(&dims([9.0; 6]))], 4);
    let r = gate_http(&t, &http_config(&t, "openai", &srv.base, 10, 0));
    r.code(0);
    assert_eq!(json(&r)["record"]["final"], "PASS");
    let reqs = srv.requests.lock().unwrap();
    let (path, body) = &reqs[0];
    assert_eq!(path, "/v1/chat/completions");
    assert_eq!(body["model"], "tiny");
    assert_eq!(body["temperature"], 0.0);
    assert_eq!(body["response_format"]["type"], "json_schema");
    let req = &body["response_format"]["json_schema"]["schema"]["required"];
    assert!(
        req.as_array().unwrap().iter().any(|d| d == "grounded"),
        "{req}"
    );
    assert!(
        body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("Task: Explain")
    );
}

#[test]
fn ollama_backend_speaks_api_chat_in_json_mode() {
    let t = TestHome::new();
    let srv = Server::start(
        vec![ollama(&format!("```json\n{}\n```", dims([8.5; 6])))],
        4,
    );
    let r = gate_http(&t, &http_config(&t, "ollama", &srv.base, 10, 0));
    r.code(0);
    let reqs = srv.requests.lock().unwrap();
    let (path, body) = &reqs[0];
    assert_eq!(path, "/api/chat");
    assert_eq!(body["format"], "json");
    assert_eq!(body["stream"], false);
    assert_eq!(body["options"]["temperature"], 0.0);
}

#[test]
fn a_slow_server_hits_the_timeout_with_bounded_retries() {
    let t = TestHome::new();
    let slow = Reply {
        delay: Duration::from_secs(3),
        ..openai(&dims([9.0; 6]))
    };
    let srv = Server::start(vec![slow], 3);
    let begun = std::time::Instant::now();
    let r = gate_http(&t, &http_config(&t, "openai", &srv.base, 1, 1));
    r.code(1);
    let v = json(&r);
    let err = v["record"]["error"].as_str().unwrap();
    assert!(
        err.contains(&format!(
            "POST {}/v1/chat/completions: timed out (after 2 attempts)",
            srv.base
        )),
        "{err}"
    );
    assert_eq!(srv.count(), 2);
    assert!(
        begun.elapsed() < crate::support::wait::scaled(Duration::from_secs(10)),
        "{:?}",
        begun.elapsed()
    );
}

#[test]
fn a_failing_server_and_a_down_server_give_clear_errors() {
    let t = TestHome::new();
    let failing = Reply {
        status: 500,
        body: "{\"error\":\"model crashed\"}".into(),
        delay: Duration::ZERO,
    };
    let srv = Server::start(vec![failing], 3);
    let r = gate_http(&t, &http_config(&t, "openai", &srv.base, 5, 2));
    r.code(1);
    let err = json(&r)["record"]["error"].as_str().unwrap().to_string();
    assert!(
        err.contains("HTTP 500")
            && err.contains("model crashed")
            && err.contains("after 3 attempts"),
        "{err}"
    );
    assert_eq!(srv.count(), 3);

    let down = "http://127.0.0.1:9";
    let r = gate_http(&t, &http_config(&t, "openai", down, 2, 0));
    r.code(1);
    let err = json(&r)["record"]["error"].as_str().unwrap().to_string();
    assert!(
        err.contains("POST http://127.0.0.1:9/v1/chat/completions: cannot connect"),
        "{err}"
    );
}

#[test]
fn a_server_without_json_schema_support_is_asked_again_without_it() {
    let t = TestHome::new();
    let reject = Reply {
        status: 400,
        body: "{\"error\":\"response_format not supported\"}".into(),
        delay: Duration::ZERO,
    };
    let srv = Server::start(vec![reject, openai(&dims([9.0; 6]))], 4);
    let r = gate_http(&t, &http_config(&t, "openai", &srv.base, 5, 0));
    r.code(0);
    let reqs = srv.requests.lock().unwrap();
    assert!(reqs[0].1.get("response_format").is_some());
    assert!(reqs[1].1.get("response_format").is_none());
}

#[test]
fn anthropic_backend_speaks_v1_messages() {
    let t = TestHome::new();
    let reply = Reply {
        status: 200,
        body: serde_json::json!({"type": "message", "role": "assistant",
            "content": [{"type": "text", "text": dims([9.0; 6])}], "stop_reason": "end_turn"})
        .to_string(),
        delay: Duration::ZERO,
    };
    let srv = Server::start(vec![reply], 4);
    let p = t.root().join("a.toml");
    std::fs::write(
        &p,
        format!(
            "[evaluators.m]\nkind = \"anthropic\"\nurl = \"{}\"\nmodel = \"tiny\"\n",
            srv.base
        ),
    )
    .unwrap();
    let r = gate_http(&t, &p);
    r.code(0);
    let reqs = srv.requests.lock().unwrap();
    assert_eq!(reqs[0].0, "/v1/messages");
    assert_eq!(reqs[0].1["model"], "tiny");
    assert!(reqs[0].1["max_tokens"].as_u64().unwrap() > 0);
}

#[test]
fn an_answer_larger_than_the_cap_is_a_clear_error() {
    let t = TestHome::new();
    let huge = Reply {
        status: 200,
        body: "x".repeat(5 * 1024 * 1024),
        delay: Duration::ZERO,
    };
    let srv = Server::start(vec![huge], 2);
    let r = gate_http(&t, &http_config(&t, "openai", &srv.base, 10, 0));
    r.code(1);
    let err = json(&r)["record"]["error"].as_str().unwrap().to_string();
    assert!(
        err.contains("the answer is larger than 4194304 bytes"),
        "{err}"
    );
}

#[test]
fn the_standalone_producer_runs_like_every_agent_with_its_env_and_cwd() {
    let s = Scripted::new(
        &[
            dims([7.0, 8.0, 7.0, 6.0, 6.0, 9.0]),
            dims([8.0, 9.0, 8.0, 8.0, 8.0, 9.0]),
        ],
        &["# Flock\n\nrevised\n"],
    );
    let sub = s.t.root().join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(
        &s.config,
        format!(
            "[evaluators.judge]\nkind = \"command\"\ncommand = \"SCRIPT_DIR={d} sh {a}/scripted-evaluator.sh\"\n\n[agents.writer]\ncommand = \"pwd > {d}/producer-pwd; echo $WIGGUM_PHASE $MY_PRODUCER_KEY > {d}/producer-env; SCRIPT_DIR={d} sh {a}/scripted-producer.sh\"\ncwd = \"sub\"\nenv = {{ MY_PRODUCER_KEY = \"from-settings\" }}\n",
            d = s.dir.display(),
            a = agents_dir().display()
        ),
    )
    .unwrap();
    // A bare relative file name, as a person types it.
    let cfg = s.config.display().to_string();
    s.t.run(&[
        "wiggum",
        "gate",
        "Explain flock",
        "doc.md",
        "--config",
        &cfg,
        "--evaluator",
        "judge",
        "--producer",
        "writer",
        "--json",
    ])
    .code(0);
    assert_eq!(s.read("producer-env").trim(), "revision from-settings");
    assert_eq!(s.read("producer-pwd").trim(), sub.display().to_string());
    assert_eq!(
        std::fs::read_to_string(&s.doc).unwrap(),
        "# Flock\n\nrevised\n"
    );
}

#[test]
fn a_file_nothing_revised_keeps_its_bytes_and_mode() {
    use std::os::unix::fs::PermissionsExt;
    let t = TestHome::new();
    let doc = t.root().join("notes.md");
    // A leading blank line, CRLF and a final newline: anything that normalises text shows.
    let bytes = b"\n# Notes\r\n\r\nshort, with CRLF \xe2\x80\x94 ok\n";
    std::fs::write(&doc, bytes).unwrap();
    std::fs::set_permissions(&doc, std::fs::Permissions::from_mode(0o600)).unwrap();
    let before = std::fs::metadata(&doc).unwrap().modified().unwrap();
    // The built-in evaluator and no producer: one evaluation, no revision.
    let r = t.run(&["wiggum", "gate", "Write notes", "notes.md"]);
    assert!(matches!(r.out.status.code(), Some(0 | 1)), "{}", r.stderr());
    assert_eq!(std::fs::read(&doc).unwrap(), bytes);
    let meta = std::fs::metadata(&doc).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(meta.modified().unwrap(), before);
}
