//! `wiggum events`: the loop's events as JSON lines in one schema, from its records; followed
//! as they happen until the loop ends.

use std::process::Stdio;
use std::time::Duration;

use crate::support::wait::Lines;
use crate::support::{TestHome, wait_for};

fn kinds(out: &str) -> Vec<String> {
    out.lines()
        .map(|l| {
            let v: serde_json::Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            assert!(v["at"].is_string() && v["topic"].is_string(), "{l}");
            format!("{}:{}", v["event"].as_str().unwrap(), v["iteration"])
        })
        .collect()
}

#[test]
fn an_ended_loop_prints_its_runs_rounds_commits_and_end() {
    let t = TestHome::new();
    t.start_fg("ev", "", &["--max-rounds", "1"]).code(0);
    let r = t.run(&["wiggum", "events", "ev"]);
    r.code(0);
    let k = kinds(&r.stdout());
    assert_eq!(
        k,
        [
            "run_started:0",
            "run_ended:0",
            "run_started:1",
            "gate_round:1",
            "run_ended:1",
            "commit:1",
            "run_started:2",
            "gate_round:2",
            "run_ended:2",
            "commit:2",
            "run_started:3",
            "gate_round:3",
            "run_ended:3",
            "commit:3",
            "stop:3",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>(),
        "{}",
        r.stdout()
    );
    let last: serde_json::Value = serde_json::from_str(r.stdout().lines().last().unwrap()).unwrap();
    assert_eq!(last["reason"], "plan_empty");
    // Nothing is later than the end.
    let none = t.run(&["wiggum", "events", "ev", "--since", "2999-01-01T00:00:00Z"]);
    none.code(0);
    assert_eq!(none.stdout(), "");
    let bad = t.run(&["wiggum", "events", "ev", "--since", "yesterday"]);
    bad.code(2);
    assert!(
        bad.stderr().contains("--since yesterday: "),
        "{}",
        bad.stderr()
    );
}

#[test]
fn follow_prints_events_as_they_happen_and_ends_with_the_loop() {
    let t = TestHome::new();
    t.blocked_at_first("live", "");
    let mut child = t
        .cmd(&["wiggum", "events", "live", "--follow"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = Lines::beside(child.stdout.take().unwrap());
    // The planning run is over, iteration 1's agent runs (blocked): its start is there though
    // its record is not written yet.
    lines.wait_for_line(
        "iteration 1's start",
        "\"event\":\"run_started\",\"iteration\":1",
        Duration::from_secs(20),
    );
    assert!(
        !lines
            .seen
            .iter()
            .any(|l| l.contains("\"event\":\"run_ended\",\"iteration\":1"))
    );
    std::fs::write(t.release_file(), "").unwrap();
    let status = wait_for(
        "the follow to end with the loop",
        Duration::from_secs(60),
        || child.try_wait().unwrap().ok_or(()),
    );
    assert!(status.success());
    let all = lines.rest().join("\n");
    let k = kinds(&all);
    assert_eq!(
        k.first().map(String::as_str),
        Some("run_started:0"),
        "{all}"
    );
    assert!(k.last().unwrap().starts_with("stop:"), "{all}");
    assert!(k.contains(&"commit:1".to_string()), "{all}");
    // Each run said once.
    assert_eq!(
        k.iter().filter(|e| *e == "run_started:1").count(),
        1,
        "{all}"
    );
}
