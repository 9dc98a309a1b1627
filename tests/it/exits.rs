//! Exit conditions end to end: the cost budget, the quality threshold, and a code loop judged on
//! its diff.

use crate::support::TestHome;

/// An agent that works like the fake one and reports its cost as `claude -p --output-format json`.
fn costly_agent(t: &TestHome, cost: f64) -> String {
    let script = t.root().join("costly.sh");
    std::fs::write(
        &script,
        format!(
            "{} > {}/work.log 2>&1\nprintf '{{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"done\",\"total_cost_usd\":{cost},\"usage\":{{\"input_tokens\":1000,\"output_tokens\":200}}}}\\n'\n",
            t.agent_cmd("", "FAKE_ITEMS=9"),
            t.root().display()
        ),
    )
    .unwrap();
    format!("sh {}", script.display())
}

/// How many agent runs the fake agent recorded.
fn agents_spawned(t: &TestHome) -> usize {
    std::fs::read_to_string(t.pids_file())
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("agent "))
        .count()
}

/// The spend a start goes on from is never less than the supervisor kept out of the agents'
/// reach: a state whose spend an agent lowered (and a supervisor killed before it could put
/// the state back) does not reopen the budget.
#[test]
fn a_state_whose_spend_was_lowered_does_not_reopen_the_budget() {
    let t = TestHome::new();
    let cmd = costly_agent(&t, 4.0);
    t.write_home_config(&format!(
        "[safety]\nmax_cost_per_loop = 10.0\n\n[agents.paid]\ncommand = \"{cmd}\"\noutput_format = \"claude-json\"\n"
    ));
    let art = t.art().display().to_string();
    let start = [
        "wiggum",
        "start",
        "paid",
        "--artifact-path",
        &art,
        "--agent",
        "paid",
        "--foreground",
    ];
    t.run(&start).code(0);
    assert_eq!(t.state()["cost_usd"], 8.0);
    let spawned = || agents_spawned(&t);
    assert_eq!(spawned(), 2);
    // What an agent writes into the state: nothing spent.
    let mut st = t.state();
    st["cost_usd"] = 0.0.into();
    st["spend"]["cost_usd"] = 0.0.into();
    st["spend"]["recent"] = serde_json::json!([]);
    std::fs::write(t.wiggum("state.json"), st.to_string()).unwrap();
    t.run(&start).code(0);
    let st = t.state();
    assert_eq!(st["stop_reason"], "budget", "{st}");
    assert_eq!(st["cost_usd"], 8.0, "{st}");
    assert_eq!(spawned(), 2, "no run past the budget");
}

#[test]
fn the_cost_budget_stops_the_loop_before_it_is_overspent() {
    let t = TestHome::new();
    let cmd = costly_agent(&t, 4.0);
    let told = t.root().join("budget.txt");
    t.write_home_config(&format!(
        "[safety]\nmax_cost_per_loop = 10.0\n\n[agents.paid]\ncommand = \"{cmd}\"\noutput_format = \"claude-json\"\n\n[hooks]\non_budget = \"echo \\\"$WIGGUM_EVENT: $REASON\\\" > {}\"\n",
        told.display()
    ));
    let art = t.art().display().to_string();
    t.run(&[
        "wiggum",
        "start",
        "paid",
        "--artifact-path",
        &art,
        "--agent",
        "paid",
        "--foreground",
    ])
    .code(0);
    let st = t.state();
    assert_eq!(st["stop_reason"], "budget", "{st}");
    // Planning ($4), iteration 1 ($4, total 8); a revision round would cost about $4 more and
    // cross the $10 budget, so there is none, and no second iteration: the budget is a ceiling.
    assert_eq!(st["cost_usd"], 8.0);
    assert!(
        st["stop_detail"]
            .as_str()
            .unwrap()
            .contains("$8.0000 spent of $10.00, and the next run would cost about $4.0000"),
        "{st}"
    );
    assert_eq!(agents_spawned(&t), 2);
    let told = std::fs::read_to_string(&told).unwrap();
    assert!(
        told.starts_with("budget: cost budget: $8.0000 spent of $10.00"),
        "{told}"
    );
    let iters = t.runs("iteration");
    assert_eq!(iters.len(), 1);
    assert_eq!(iters[0]["cost_usd"], 4.0);
    assert_eq!(iters[0]["tokens_in"], 1000);
    assert_eq!(iters[0]["gate"]["termination"], "no_producer");
}

#[test]
fn reaching_the_quality_threshold_ends_the_loop() {
    let t = TestHome::new();
    let cmd = t.agent_cmd("", "FAKE_ITEMS=9");
    let art = t.art().display().to_string();
    t.run(&[
        "wiggum",
        "start",
        "q",
        "--artifact-path",
        &art,
        "--agent-cmd",
        &cmd,
        "--foreground",
        "--quality-threshold",
        "0.05",
    ])
    .code(0);
    let st = t.state();
    assert_eq!(st["stop_reason"], "threshold_met", "{st}");
    assert_eq!(t.runs("iteration").len(), 1);
    assert!(st["last_quality"].as_f64().unwrap() >= 0.05);
}

#[test]
fn a_code_loop_is_judged_on_its_diff_with_tests_as_backpressure() {
    let t = TestHome::new();
    std::fs::remove_file(t.art().join("artifact.md")).unwrap();
    std::fs::create_dir_all(t.wiggum("")).unwrap();
    std::fs::write(t.wiggum("fix_plan.md"), "- [ ] add the feature file\n").unwrap();
    // The "agent" writes code and ticks the plan; the validation command is the test suite.
    let agent = t.root().join("coder.sh");
    std::fs::write(
        &agent,
        "cat > /dev/null\nprintf 'def feature():\\n    return 42\\n' > feature.py\nsed -i 's/- \\[ \\]/- [x]/' wiggum/fix_plan.md\n",
    )
    .unwrap();
    t.write_home_config("[gate]\ntarget = \"diff\"\n\n[validation]\ncommands = [\"grep -q 'return 42' feature.py\"]\n");
    let art = t.art().display().to_string();
    let cmd = format!("sh {}", agent.display());
    t.run(&[
        "wiggum",
        "start",
        "code",
        "--artifact-path",
        &art,
        "--agent-cmd",
        &cmd,
        "--foreground",
    ])
    .code(0);
    let it = &t.runs("iteration")[0];
    assert_eq!(it["outcome"], "accepted");
    assert_eq!(it["gate"]["rounds"], 1);
    assert!(
        it["files_changed"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == "feature.py")
    );
    let log = t.git_log();
    assert_eq!(
        log[0],
        "wiggum-agent <wiggum@studio-agents.local>|Wiggum iteration 1: add the feature file"
    );
    assert_eq!(t.state()["stop_reason"], "plan_empty");
}

#[test]
fn tokens_priced_from_the_table_reach_the_cost_budget() {
    let t = TestHome::new();
    let cmd = t.agent_cmd("codex-tokens", "FAKE_TOKENS=12,000");
    t.write_home_config(&format!(
        "[safety]\nmax_cost_per_loop = 0.30\n\n[agents.tok]\ncommand = \"{}\"\noutput_format = \"codex\"\nmodel = \"house-model\"\n\n[prices.house-model]\ninput_per_mtok = 10.0\noutput_per_mtok = 10.0\n",
        cmd.replace('"', "\\\"")
    ));
    let args = t.start_args(
        "tok",
        &t.art(),
        "",
        &["--agent", "tok", "--foreground", "--max-rounds", "1"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    t.run(&args).code(0);
    let st = t.state();
    assert_eq!(st["stop_reason"], "budget", "{st}");
    // 12,000 tokens at $10 per million: $0.12 a run; planning and one iteration, then the
    // next run would cross $0.30.
    assert!(
        (st["spend"]["cost_usd"].as_f64().unwrap() - 0.24).abs() < 1e-9,
        "{st}"
    );
    assert_eq!(st["spend"]["tokens"], 24_000);
    assert!((t.runs("iteration")[0]["cost_usd"].as_f64().unwrap() - 0.12).abs() < 1e-9);
}

#[test]
fn a_codex_revision_round_counts_the_tokens_it_prints_on_stderr() {
    let t = TestHome::new();
    let cmd = t.agent_cmd("codex-tokens", "FAKE_TOKENS=1,000 FAKE_ITEMS=1");
    t.write_home_config(&format!(
        "[agents.tok]\ncommand = \"{}\"\noutput_format = \"codex\"\n",
        cmd.replace('"', "\\\"")
    ));
    // A gate no draft passes: the iteration and a revision round (the fake's revision is its
    // draft unchanged, which ends the rounds), each printing its usage on stderr while its
    // answer goes to stdout.
    let args = t.start_args(
        "rev",
        &t.art(),
        "",
        &[
            "--agent",
            "tok",
            "--foreground",
            "--max-rounds",
            "3",
            "--pass-threshold",
            "10",
        ],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    t.run(&args).code(0);
    // Planning, the iteration and its revision: 1,000 tokens each.
    let st = t.state();
    assert_eq!(st["spend"]["tokens"], 3_000, "{st}");
}

#[test]
fn a_cost_nobody_reported_is_unknown_not_free() {
    let t = TestHome::new();
    t.start_fg("unknown", "", &["--max-iterations", "1"])
        .code(0);
    let status = t.run(&["wiggum", "status", "unknown"]).stdout();
    assert!(status.contains("cost:      unknown"), "{status}");
    assert!(!status.contains("$0.0000"), "{status}");
    let summary = t.run(&["wiggum", "summary", "unknown"]).stdout();
    assert!(summary.contains("cost unknown"), "{summary}");
    let v = t.status_json("unknown");
    assert_eq!(v["state"]["spend"]["known"], 0);
    assert!(v["state"]["spend"]["unknown"].as_u64().unwrap() >= 2);
}

#[test]
fn an_evaluators_reported_usage_adds_to_the_spend() {
    use crate::support::http::{Reply, Server};
    let t = TestHome::new();
    let answer = r#"{"depth": 9, "relevance": 9, "completeness": 9, "grounded": 9, "specificity": 9, "structure": 9, "issues": []}"#;
    let body = serde_json::json!({
        "choices": [{"message": {"role": "assistant", "content": answer}}],
        "usage": {"prompt_tokens": 100_000, "completion_tokens": 10_000}
    });
    let srv = Server::start(
        vec![Reply {
            status: 200,
            body: body.to_string(),
            delay: std::time::Duration::ZERO,
        }],
        8,
    );
    t.write_home_config(&format!(
        "[evaluators.judge]\nkind = \"openai\"\nurl = \"{}/v1\"\nmodel = \"judge-model\"\n\n[prices.judge-model]\ninput_per_mtok = 1.0\noutput_per_mtok = 5.0\n",
        srv.base
    ));
    t.start_fg(
        "metered",
        "",
        &["--evaluator", "judge", "--max-iterations", "1"],
    )
    .code(0);
    let st = t.state();
    // One evaluation: 100k in at $1/M + 10k out at $5/M = $0.15; the agent's own runs unknown.
    assert_eq!(st["spend"]["tokens"], 110_000, "{st}");
    assert!(
        (st["spend"]["cost_usd"].as_f64().unwrap() - 0.15).abs() < 1e-9,
        "{st}"
    );
    let gate = &t.runs("iteration")[0]["gate"];
    assert_eq!(gate["tokens_in"], 100_000);
    assert!((gate["cost_usd"].as_f64().unwrap() - 0.15).abs() < 1e-9);
    let status = t.run(&["wiggum", "status", "metered"]).stdout();
    assert!(
        status.contains("$0.1500 + unknown (110000 tokens)"),
        "{status}"
    );
}

#[test]
fn optional_items_do_not_hold_the_loop_open() {
    let t = TestHome::new();
    std::fs::create_dir_all(t.wiggum("")).unwrap();
    std::fs::write(
        t.wiggum("fix_plan.md"),
        "# Plan\n- [ ] Improve part 1\n\n## Nice to have\n- [ ] Improve part 2\n",
    )
    .unwrap();
    t.start_fg("optional", "", &[]).code(0);
    let st = t.state();
    assert_eq!(st["stop_reason"], "plan_empty", "{st}");
    assert_eq!(t.runs("iteration").len(), 1);
    let line = t.run(&["wiggum", "list"]).stdout();
    assert!(line.contains("  0 (+1 optional)  "), "{line}");
}

#[test]
fn an_agent_command_that_cannot_run_ends_the_loop_at_once_naming_it() {
    let t = TestHome::new();
    // Through a shell, so `start` cannot tell before it runs (a bare missing program is refused
    // by `start` itself: `bad_input::an_agent_command_that_is_not_there_is_refused…`).
    let args = t.start_args(
        "missing",
        &t.art(),
        "sh -c 'definitely-not-an-agent --yolo'",
        &["--foreground"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = t.run(&args);
    r.code(1);
    assert!(
        r.stderr().contains("`definitely-not-an-agent` not found"),
        "{}",
        r.stderr()
    );
    let st = t.state();
    assert_eq!(st["stop_reason"], "error");
    assert!(
        st["stop_detail"]
            .as_str()
            .unwrap()
            .contains("the agent command cannot run: `definitely-not-an-agent` not found"),
        "{st}"
    );
    let planning = t.runs("planning");
    assert_eq!(planning.len(), 1, "not retried: {planning:?}");
    assert!(
        planning[0]["note"]
            .as_str()
            .unwrap()
            .contains("definitely-not-an-agent")
    );
    let status = t.run(&["wiggum", "status", "missing"]).stdout();
    assert!(status.contains("definitely-not-an-agent"), "{status}");
}

#[test]
fn an_agent_that_lingers_after_its_promise_is_stopped_after_the_grace() {
    let t = TestHome::new();
    t.write_home_config("[safety]\npromise_grace_secs = 1\nmax_time_per_iteration = 120\n");
    let begun = std::time::Instant::now();
    t.start_with_env(
        "linger",
        "promise,linger",
        "FAKE_ITEMS=1",
        &["--max-rounds", "1", "--pass-threshold", "0"],
    )
    .code(0);
    assert!(
        begun.elapsed() < crate::support::wait::scaled(std::time::Duration::from_secs(30)),
        "{:?}",
        begun.elapsed()
    );
    let st = t.state();
    assert_eq!(st["stop_reason"], "promise", "{st}");
    let it = &t.runs("iteration")[0];
    assert_eq!(it["agent_exit"]["kind"], "finished", "{it}");
    assert_eq!(it["outcome"], "accepted");
    crate::support::assert_no_survivors(&t.token);
}

#[test]
fn the_same_error_in_runs_in_a_row_trips_the_breaker_with_a_way_on() {
    let t = TestHome::new();
    t.write_home_config("[safety]\nmax_repeated_errors = 3\n");
    // An agent stuck on the same error: it prints it and gets nowhere.
    t.start_bg(
        "errs",
        "err,idle-iterations",
        "FAKE_ITEMS=9",
        &["--foreground", "--max-rounds", "1"],
    )
    .code(1);
    let st = t.state();
    assert_eq!(st["stop_reason"], "breaker", "{st}");
    let detail = st["stop_detail"].as_str().unwrap();
    assert!(
        detail.contains("the same error in 3 runs in a row: Error: upstream request"),
        "{detail}"
    );
    assert!(
        detail.contains("studio-agents wiggum start errs") && detail.contains("--reset-breaker"),
        "{detail}"
    );
    let status = t.run(&["wiggum", "status", "errs"]).stdout();
    assert!(
        status.contains("the same error in 3 runs in a row"),
        "{status}"
    );
    // The history survives a restart without a fix; --reset-breaker forgets it (and runs that
    // work, though they print the same error, are stuck on nothing).
    t.start_bg(
        "errs",
        "err,idle-iterations",
        "FAKE_ITEMS=9",
        &["--foreground", "--max-rounds", "1"],
    )
    .code(1);
    assert_eq!(
        t.runs("iteration")
            .iter()
            .filter(|r| r["note"].as_str().is_some_and(|n| n.contains("same error")))
            .count(),
        2
    );
    t.start_bg(
        "errs",
        "err",
        "FAKE_ITEMS=9",
        &[
            "--foreground",
            "--max-rounds",
            "1",
            "--reset-breaker",
            "--max-iterations",
            "4",
        ],
    )
    .code(0);
    assert_eq!(t.state()["stop_reason"], "max_iterations");
}

#[test]
fn output_shrinking_against_the_last_runs_trips_the_breaker() {
    let t = TestHome::new();
    t.start_bg(
        "shrink",
        "shrink",
        "FAKE_ITEMS=9",
        &["--foreground", "--max-rounds", "1"],
    )
    .code(1);
    let st = t.state();
    assert_eq!(st["stop_reason"], "breaker", "{st}");
    assert!(
        st["stop_detail"]
            .as_str()
            .unwrap()
            .contains("output shrank by"),
        "{st}"
    );
    assert_eq!(st["last_committed_iteration"], 3);
}

#[test]
fn validation_failing_in_a_row_trips_the_breaker() {
    let t = TestHome::new();
    t.write_home_config(
        "[safety]\nmax_validation_failures = 2\n\n[validation]\ncommands = [\"false\"]\n",
    );
    t.start_fg("valid", "", &["--max-rounds", "1"]).code(1);
    let st = t.state();
    assert_eq!(st["stop_reason"], "breaker", "{st}");
    assert!(
        st["stop_detail"]
            .as_str()
            .unwrap()
            .contains("validation failed 2 times in a row"),
        "{st}"
    );
    assert_eq!(t.runs("iteration").len(), 2);
}

#[test]
fn a_dry_run_says_everything_and_writes_nothing() {
    use crate::support::home::snapshot;
    let t = TestHome::new();
    t.write_home_config("[safety]\nmax_cost_per_loop = 2.5\nnetwork = [443]\n");
    let (art, home) = (snapshot(&t.art()), snapshot(&t.home()));
    let r = t.start_fg("dry", "", &["--dry-run"]);
    // --dry-run conflicts with --foreground: the kit's foreground start is refused, as clap does.
    r.code(2);
    let args = t.start_args("dry", &t.art(), &t.agent_cmd("", ""), &["--dry-run"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = t.run(&args);
    r.code(0);
    let out = r.stdout();
    for want in [
        "dry run of loop `dry` (nothing run, nothing written)",
        "sandbox: ",
        "network:   443",
        "budgets:   $2.50 cost",
        "next: planning, fed this prompt:",
        "fix_plan.md",
        "effective settings:",
    ] {
        assert!(out.contains(want), "{want:?} in:\n{out}");
    }
    let mut json_args = args.clone();
    json_args.push("--json");
    let r = t.run(&json_args);
    r.code(0);
    let v: serde_json::Value = serde_json::from_str(&r.stdout()).unwrap();
    assert_eq!(v["next"], "planning");
    assert!(v["prompt"].as_str().unwrap().contains("fix_plan.md"));
    assert_eq!(v["settings"]["safety"]["max_cost_per_loop"], 2.5);
    assert_eq!(snapshot(&t.art()), art, "the artifact dir was touched");
    assert_eq!(snapshot(&t.home()), home, "the home was touched");
    assert!(!t.pids_file().exists(), "no agent ran");
}

#[test]
fn completions_for_three_shells_and_a_man_page() {
    let t = TestHome::new();
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef studio-agents"),
        ("fish", "complete -c studio-agents"),
    ] {
        let r = t.run(&["completions", shell]);
        r.code(0);
        assert!(
            r.stdout().contains(marker),
            "{shell}: {}",
            &r.stdout()[..200.min(r.stdout().len())]
        );
        assert!(r.stdout().contains("wiggum"), "{shell}");
        assert!(r.stdout().contains("forget"), "{shell}");
    }
    let r = t.run(&["man"]);
    r.code(0);
    assert!(
        r.stdout().contains(".TH studio-agents"),
        "{}",
        &r.stdout()[..200.min(r.stdout().len())]
    );
    assert!(r.stdout().contains("Exit codes"));
}

#[test]
fn the_time_budget_ends_an_agent_run_in_progress_and_no_retry_starts_past_it() {
    let t = TestHome::new();
    // Each run may take a minute; the whole loop 8 s. Iteration 2's agent hangs.
    t.write_home_config(
        "[safety]\nmax_time_per_loop = 8\nmax_time_per_iteration = 60\nkill_grace_secs = 1\n",
    );
    let env = format!(
        "FAKE_RELEASE={} FAKE_BLOCK_AT=2",
        t.root().join("never").display()
    );
    let began = std::time::Instant::now();
    t.start_with_env("late", "block", &env, &["--max-iterations", "5"])
        .code(0);
    let took = began.elapsed();
    let st = t.state();
    assert_eq!(st["stop_reason"], "budget", "{st}");
    assert!(
        st["stop_detail"]
            .as_str()
            .unwrap_or_default()
            .contains("time budget"),
        "{st}"
    );
    let pids = std::fs::read_to_string(t.pids_file()).unwrap_or_default();
    assert!(pids.contains("blocked "), "iteration 2 never ran: {pids}");
    // Cut at the budget, not at its own minute; and not started again.
    assert!(
        took < std::time::Duration::from_secs(40),
        "the loop took {took:?}"
    );
    let second: Vec<_> = t
        .runs("iteration")
        .into_iter()
        .filter(|r| r["iteration"] == 2)
        .collect();
    assert!(
        second.len() <= 1,
        "a retry started past the budget: {second:?}"
    );
    assert_eq!(pids.matches("blocked ").count(), 1, "{pids}");
}
