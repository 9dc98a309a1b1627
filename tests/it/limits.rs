//! Usage and rate limits: the loop waits them out (status `waiting`, the run not counted as a
//! failure, the same iteration resumed by itself), backs off without a reset time, and `stop`
//! ends a wait at once.

use std::time::{Duration, Instant};

use crate::support::{TestHome, wait::scaled};

#[test]
fn a_usage_limit_with_a_reset_time_is_waited_out_and_the_loop_resumes() {
    let t = TestHome::new();
    t.start_bg(
        "lim",
        "limit",
        "FAKE_RESET=3 FAKE_ITEMS=1",
        &["--max-rounds", "1"],
    )
    .code(0);
    let st = t.wait_state("the loop to wait", |s| s["status"] == "waiting");
    assert!(
        st["waiting_reason"]
            .as_str()
            .unwrap()
            .contains("usage limit"),
        "{st}"
    );
    let status = t.run(&["wiggum", "status", "lim"]).stdout();
    assert!(
        status.contains("waiting   ") || status.contains("waiting:   until"),
        "{status}"
    );
    assert!(status.contains("(usage limit, custom)"), "{status}");
    t.wait_stopped("lim");
    let st = t.state();
    assert_eq!(st["stop_reason"], "plan_empty", "{st}");
    let iters = t.runs("iteration");
    assert_eq!(iters[0]["outcome"], "limited", "{iters:?}");
    assert_eq!(iters[0]["iteration"], 1);
    assert_eq!(iters[1]["outcome"], "accepted");
    assert_eq!(
        iters[1]["iteration"], 1,
        "the same iteration, not counted as failed"
    );
}

#[test]
fn stop_while_waiting_returns_promptly() {
    let t = TestHome::new();
    t.start_bg("far", "limit", "FAKE_RESET=3600", &[]).code(0);
    t.wait_state("the loop to wait", |s| s["status"] == "waiting");
    let begun = Instant::now();
    t.run(&["wiggum", "stop", "far"]).code(0);
    assert!(
        begun.elapsed() < scaled(Duration::from_secs(10)),
        "{:?}",
        begun.elapsed()
    );
    assert_eq!(t.state()["stop_reason"], "user_stop");
}

#[test]
fn a_rate_limit_without_a_reset_time_backs_off() {
    let t = TestHome::new();
    t.write_home_config("[safety]\nlimit_backoff_secs = 1\n");
    let begun = Instant::now();
    t.start_fg(
        "rate",
        "limit429",
        &["--max-iterations", "1", "--max-rounds", "1"],
    )
    .code(0);
    assert!(begun.elapsed() >= Duration::from_secs(1), "it backed off");
    let iters = t.runs("iteration");
    assert_eq!(iters[0]["outcome"], "limited");
    assert!(
        iters[0]["note"]
            .as_str()
            .unwrap()
            .starts_with("rate limit: API Error: 429")
    );
    assert_eq!(iters[1]["outcome"], "accepted");
}

#[test]
fn the_calls_per_hour_ceiling_holds_the_next_run() {
    let t = TestHome::new();
    t.write_home_config("[safety]\nmax_calls_per_hour = 2\n");
    t.start_bg("hourly", "", "", &["--max-rounds", "1"]).code(0);
    // Planning and iteration 1 use the hour's two runs; iteration 2 waits.
    let st = t.wait_state("the loop to wait for a call slot", |s| {
        s["status"] == "waiting"
    });
    assert!(
        st["waiting_reason"]
            .as_str()
            .unwrap()
            .contains("max_calls_per_hour"),
        "{st}"
    );
    assert_eq!(t.runs("iteration").len(), 1);
    t.run(&["wiggum", "stop", "hourly"]).code(0);
    t.wait_stopped("hourly");
}
