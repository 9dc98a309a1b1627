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

/// `[agents] main` (limited, as the test says) and `spare`, with `spare` the fallback; each
/// reports a cost of $0.40 a run.
fn with_a_fallback(t: &TestHome, main_env: &str, spare: &str) {
    with_a_fallback_as(t, "limit,claude-cost", main_env, spare);
}

fn with_a_fallback_as(t: &TestHome, main_fake: &str, main_env: &str, spare: &str) {
    let main = t.agent_cmd(main_fake, main_env);
    let spare = t.agent_cmd(spare, "FAKE_ITEMS=3");
    t.write_home_config(&format!(
        "[defaults]\nagent = \"main\"\nfallback_agents = [\"spare\"]\n\n[agents.main]\ncommand = \"{}\"\noutput_format = \"claude-json\"\n\n[agents.spare]\ncommand = \"{}\"\noutput_format = \"claude-json\"\n",
        main.replace('"', "\\\""),
        spare.replace('"', "\\\""),
    ));
}

#[test]
fn a_limited_agent_hands_its_iterations_to_the_fallback_and_every_run_is_paid_for() {
    let t = TestHome::new();
    with_a_fallback(&t, "FAKE_RESET=3600 FAKE_ITEMS=3", "claude-cost");
    let args = t.start_args("fb", &t.art(), "", &["--foreground", "--max-rounds", "1"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = t.run(&args);
    r.code(0);
    let out = r.stdout();
    // The limited attempt, then the fallback at once (no wait), named on its line.
    let lines: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("Iteration 1/"))
        .collect();
    assert!(
        lines.len() == 2
            && lines[0].starts_with("Iteration 1/10 ✗ limited · ")
            && lines[1].starts_with("Iteration 1/10 (attempt 2) ✓ kept · by spare · "),
        "{out}"
    );
    let iters = t.runs("iteration");
    assert_eq!(iters[0]["outcome"], "limited", "{iters:?}");
    assert!(iters[0].get("agent").is_none(), "{iters:?}");
    // The main agent stays limited for an hour: every later iteration is the fallback's.
    assert!(
        iters[1..]
            .iter()
            .all(|r| r["agent"] == "spare" && r["outcome"] == "accepted"),
        "{iters:?}"
    );
    let st = t.state();
    assert_eq!(st["stop_reason"], "plan_empty", "{st}");
    assert_eq!(st["agent"], "spare", "{st}");
    assert!(st["limited_agents"]["main"].is_string(), "{st}");
    // Planning by main and three iterations by spare at $0.40: the budget counts them all.
    assert!(
        (st["spend"]["cost_usd"].as_f64().unwrap() - 1.60).abs() < 1e-9,
        "{st}"
    );
    let status = t.run(&["wiggum", "status", "fb"]).stdout();
    assert!(
        status.contains("agent:     spare") && status.contains("limited:   main until "),
        "{status}"
    );
}

#[test]
fn the_loop_goes_back_to_its_agent_after_the_reset() {
    let t = TestHome::new();
    // main is limited in iteration 1 for 2 s; spare takes 3 s over it.
    with_a_fallback(
        &t,
        "FAKE_RESET=2 FAKE_AT=1 FAKE_ITEMS=3",
        "claude-cost,slow FAKE_SLEEP=3",
    );
    let args = t.start_args("back", &t.art(), "", &["--foreground", "--max-rounds", "1"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = t.run(&args);
    r.code(0);
    let iters = t.runs("iteration");
    let by: Vec<(u64, String)> = iters
        .iter()
        .filter(|r| r["outcome"] == "accepted")
        .map(|r| {
            (
                r["iteration"].as_u64().unwrap(),
                r["agent"].as_str().unwrap_or("main").to_string(),
            )
        })
        .collect();
    assert_eq!(
        by,
        [
            (1, "spare".to_string()),
            (2, "main".into()),
            (3, "main".into())
        ],
        "{iters:?}"
    );
    assert!(
        r.stderr()
            .contains("iteration 2: back to `main`, its usage limit reset"),
        "{}",
        r.stderr()
    );
    assert_eq!(t.state()["agent"], "main");
}

#[test]
fn an_unknown_fallback_agent_is_refused_naming_the_key() {
    let t = TestHome::new();
    t.write_home_config("[defaults]\nfallback_agents = [\"nope\"]\n");
    let r = t.start_fg("bad", "", &[]);
    r.code(2);
    assert!(
        r.stderr()
            .contains("[defaults] fallback_agents: unknown agent `nope` (known: "),
        "{}",
        r.stderr()
    );
}

#[test]
fn planning_at_its_limit_is_handed_to_the_fallback_too() {
    let t = TestHome::new();
    with_a_fallback_as(
        &t,
        "limit-plan,claude-cost",
        "FAKE_RESET=3600 FAKE_ITEMS=2",
        "claude-cost",
    );
    let args = t.start_args("plan", &t.art(), "", &["--foreground", "--max-rounds", "1"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = t.run(&args);
    r.code(0);
    let out = r.stdout();
    assert!(
        out.starts_with("Planning ✗ limited · ")
            && out.contains("\nPlanning ✓ planned · by spare · "),
        "{out}"
    );
    assert_eq!(t.state()["stop_reason"], "plan_empty");
}
