//! Notifications: each `[hooks]` command receives its event, as JSON on stdin and in the
//! environment; a failing hook never stops the loop.

use crate::support::TestHome;

/// Settings whose hooks (for `events`) append `<event> <stdin JSON>` to `events.log`.
fn recording(t: &TestHome, events: &[&str], extra: &str) -> std::path::PathBuf {
    let log = t.root().join("events.log");
    let mut cfg = String::from("[hooks]\n");
    for e in events {
        cfg.push_str(&format!(
            "on_{e} = \"printf '%s %s\\\\n' \\\"$WIGGUM_EVENT\\\" \\\"$(cat)\\\" >> {}\"\n",
            log.display()
        ));
    }
    cfg.push_str(extra);
    t.write_home_config(&cfg);
    log
}

fn events(log: &std::path::Path) -> Vec<(String, serde_json::Value)> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let (e, json) = l.split_once(' ').unwrap();
            (e.to_string(), serde_json::from_str(json).unwrap())
        })
        .collect()
}

#[test]
fn iteration_end_and_stop_hooks_get_their_events() {
    let t = TestHome::new();
    let log = recording(&t, &["iteration_end", "stop"], "");
    t.start_bg(
        "hooked",
        "",
        "FAKE_ITEMS=2",
        &["--foreground", "--max-rounds", "1"],
    )
    .code(0);
    let got = events(&log);
    let names: Vec<&str> = got.iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!(names, ["iteration_end", "iteration_end", "stop"], "{got:?}");
    assert_eq!(got[1].1["iteration"], 2);
    assert_eq!(got[1].1["topic"], "hooked");
    assert_eq!(got[2].1["stop_reason"], "plan_empty");
    assert_eq!(got[2].1["event"], "stop");
}

#[test]
fn breaker_and_waiting_hooks_get_their_events() {
    let t = TestHome::new();
    let log = recording(
        &t,
        &["breaker", "waiting"],
        "\n[safety]\nmax_validation_failures = 2\n\n[validation]\ncommands = [\"false\"]\n",
    );
    t.start_bg(
        "warned",
        "limit",
        "FAKE_RESET=1",
        &["--foreground", "--max-rounds", "1"],
    )
    .code(1);
    let got = events(&log);
    let names: Vec<&str> = got.iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!(names, ["waiting", "waiting", "breaker"], "{got:?}");
    assert!(got[0].1["reason"].as_str().unwrap().contains("usage limit"));
    assert!(got[0].1["until"].is_string());
    assert!(
        got[2].1["detail"]
            .as_str()
            .unwrap()
            .contains("validation failed 2 times")
    );
}

#[test]
fn a_failing_hook_never_stops_the_loop() {
    let t = TestHome::new();
    t.write_home_config("[hooks]\non_iteration_end = \"echo broken >&2; exit 7\"\non_stop = \"sleep 30\"\ntimeout_secs = 1\n");
    t.start_fg("shaky", "", &["--max-rounds", "1"]).code(0);
    assert_eq!(t.state()["stop_reason"], "plan_empty");
    assert_eq!(t.runs("iteration").len(), 3);
    crate::support::assert_no_survivors(&t.token);
}
