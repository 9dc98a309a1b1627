//! `logs`, `diff`, `summary`, `sign add`, `report` after a real loop.

use crate::support::TestHome;

fn finished_loop() -> TestHome {
    let t = TestHome::new();
    t.start_fg("ins", "echo", &[]).code(0);
    t
}

#[test]
fn logs_print_an_iterations_agent_output() {
    let t = finished_loop();
    let r = t.run(&["wiggum", "logs", "ins", "--iteration", "2"]);
    r.code(0);
    assert!(
        r.stdout().contains("# Task: refine the artifact"),
        "{}",
        r.stdout()
    );
    assert!(
        r.stdout().contains("iteration-002"),
        "the per-iteration prompt: {}",
        r.stdout()
    );
    let planning = t.run(&["wiggum", "logs", "ins", "--iteration", "0"]);
    assert!(
        planning
            .stdout()
            .contains("# Task: write the improvement plan")
    );
    // Following a stopped loop prints and returns.
    t.run(&["wiggum", "logs", "ins", "--follow"]).code(0);
    t.run(&["wiggum", "logs", "ins", "--iteration", "99"])
        .code(2);
}

#[test]
fn diff_shows_what_an_iteration_committed() {
    let t = finished_loop();
    let r = t.run(&["wiggum", "diff", "ins", "--iteration", "2"]);
    r.code(0);
    assert!(r.stdout().contains("+## Improve part 2"), "{}", r.stdout());
    assert!(!r.stdout().contains("+## Improve part 3"));
    let latest = t.run(&["wiggum", "diff", "ins"]);
    assert!(latest.stdout().contains("+## Improve part 3"));
}

#[test]
fn summary_lists_every_iteration() {
    let t = finished_loop();
    let r = t.run(&["wiggum", "summary", "ins"]);
    r.code(0);
    let out = r.stdout();
    let rows: Vec<&str> = out.lines().filter(|l| l.contains("accepted")).collect();
    assert_eq!(rows.len(), 3, "{}", r.stdout());
    assert!(r.stdout().contains("stop reason plan_empty"));
    let j: serde_json::Value =
        serde_json::from_str(&t.run(&["wiggum", "summary", "ins", "--json"]).stdout()).unwrap();
    assert_eq!(j["iterations"].as_array().unwrap().len(), 3);
}

#[test]
fn a_sign_reaches_agent_md_for_the_next_iteration() {
    let t = finished_loop();
    t.run(&[
        "wiggum",
        "sign",
        "add",
        "ins",
        "--what",
        "Iteration 2 broke a link",
        "--fix",
        "Check every link",
    ])
    .code(0);
    let agent_md = std::fs::read_to_string(t.wiggum("AGENT.md")).unwrap();
    assert!(
        agent_md.contains("### Sign 1: Iteration 2 broke a link")
            && agent_md.contains("**Fix**: Check every link"),
        "{agent_md}"
    );
    let r = t.run(&["wiggum", "sign", "add", "ins", "--what", "", "--fix", "x"]);
    r.code(2);
    t.run(&[
        "wiggum", "sign", "add", "nosuch", "--what", "a", "--fix", "b",
    ])
    .code(2);
}

#[test]
fn report_aggregates_the_runs() {
    let t = finished_loop();
    let r = t.run(&["wiggum", "report", "--json"]);
    r.code(0);
    let v: serde_json::Value = serde_json::from_str(&r.stdout()).unwrap();
    assert_eq!(v["iterations"], 3);
    assert_eq!(v["gated"], 3);
    assert!(v["composite"].is_number() && v["mean_r1"].is_number());
    assert!(!v["weak_dimensions"].as_array().unwrap().is_empty());
    let text = t.run(&["wiggum", "report", "ins"]);
    assert!(text.stdout().contains("composite"));
}

/// A loop whose files version 0.1.0 wrote: `status`, `summary` and `report` still read it.
#[test]
fn the_files_of_version_0_1_0_are_still_read() {
    let t = crate::support::TestHome::new();
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v0.1.0");
    std::fs::create_dir_all(t.wiggum("")).unwrap();
    for f in ["state.json", "runs.jsonl"] {
        std::fs::copy(fixtures.join(f), t.wiggum(f)).unwrap();
    }
    std::fs::create_dir_all(t.home().join("loops")).unwrap();
    std::fs::write(
        t.home().join("loops/pinned.toml"),
        format!("artifact_path = \"{}\"\n", t.art().display()),
    )
    .unwrap();
    let st = t.status_json("pinned");
    assert_eq!(st["status"], "completed");
    assert_eq!(st["state"]["stop_reason"], "plan_empty");
    let r = t.run(&["wiggum", "summary", "pinned", "--json"]);
    r.code(0);
    let v: serde_json::Value = serde_json::from_str(&r.stdout()).unwrap();
    let outcomes: Vec<&str> = v["iterations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(
        outcomes,
        [
            "crashed", "accepted", "crashed", "accepted", "crashed", "accepted"
        ]
    );
    let r = t.run(&["wiggum", "report", "pinned", "--json"]);
    r.code(0);
    assert!(r.stdout().contains("\"pass_rate\""), "{}", r.stdout());
}

#[test]
fn logs_of_an_iteration_show_its_discarded_attempts_marked() {
    let t = crate::support::TestHome::new();
    t.start_fg("retry", "crash-once", &["--max-iterations", "1"])
        .code(0);
    let r = t.run(&["wiggum", "logs", "retry", "--iteration", "1"]);
    r.code(0);
    let out = r.stdout();
    assert!(
        out.contains("--- discarded attempt iteration-001.attempt-1."),
        "{out}"
    );
    assert!(out.contains("fatal: simulated crash"), "{out}");
}
