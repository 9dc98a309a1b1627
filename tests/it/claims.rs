//! Done means done: the completion promise is a claim the loop checks against the plan and the
//! gate, and the reason a loop stops is the one that held.

use crate::support::*;

fn records_with_claims(t: &TestHome) -> Vec<serde_json::Value> {
    t.runs("iteration")
        .into_iter()
        .filter(|r| r["promise_seen"] == true)
        .collect()
}

#[test]
fn a_promise_with_plan_items_open_is_not_taken_and_the_next_agent_is_told_why() {
    let t = TestHome::new();
    // Three items, one done per iteration, the promise printed every time; any iteration passes
    // the gate, so the plan alone decides.
    let r = t.start_with_env(
        "early",
        "promise",
        "FAKE_ITEMS=3",
        &["--pass-threshold", "0", "--max-iterations", "10"],
    );
    r.code(1);
    // Each line says the claim was not taken, and why.
    assert!(
        r.stdout().contains(
            "\"Improve part 1\" · promise not taken: 2 plan items are still open (Improve part 2; Improve part 3)\n"
        ),
        "{}",
        r.stdout()
    );
    let st = t.state();
    // Two premature claims in a row (the default ceiling) end the loop, naming what is open.
    assert_eq!(st["stop_reason"], "promise_rejected", "{st}");
    let detail = st["stop_detail"].as_str().unwrap();
    assert!(
        detail.contains("2 completion claims in a row were not taken")
            && detail.contains("1 plan item is still open (Improve part 3)"),
        "{detail}"
    );
    let claims = records_with_claims(&t);
    assert_eq!(claims.len(), 2, "{claims:?}");
    assert_eq!(
        claims[0]["premature_promise"],
        "2 plan items are still open (Improve part 2; Improve part 3)"
    );
    // The second agent was told why the first claim was not taken.
    let prompt = std::fs::read_to_string(t.records("iteration-002/prompt.md")).unwrap();
    assert!(
        prompt.contains("Your predecessor's claim was not taken")
            && prompt.contains("Improve part 2; Improve part 3"),
        "{prompt}"
    );
    let status = t.run(&["wiggum", "status", "early"]).stdout();
    assert!(
        status.contains("claimed it was finished too often"),
        "{status}"
    );
}

#[test]
fn a_promise_the_gate_did_not_pass_is_not_taken() {
    let t = TestHome::new();
    // One item, done and claimed in iteration 1; a gate no draft passes.
    t.start_with_env(
        "gated",
        "promise",
        "FAKE_ITEMS=1",
        &["--pass-threshold", "10", "--max-rounds", "1"],
    )
    .code(0);
    let st = t.state();
    assert_eq!(st["stop_reason"], "plan_empty", "{st}");
    let claims = records_with_claims(&t);
    assert!(
        claims[0]["premature_promise"]
            .as_str()
            .unwrap()
            .starts_with("the gate did not pass the iteration (score"),
        "{claims:?}"
    );
}

#[test]
fn a_promise_on_the_last_allowed_iteration_ends_the_loop_as_promise() {
    let t = TestHome::new();
    let r = t.start_with_env(
        "last",
        "promise",
        "FAKE_ITEMS=1",
        &["--pass-threshold", "0", "--max-iterations", "1"],
    );
    r.code(0);
    assert_eq!(t.state()["stop_reason"], "promise");
    // The completion block, `status` and `summary` say on what grounds the claim was taken.
    let grounds = "the completion promise was taken: fix_plan.md has no open item and the gate passed the iteration (";
    assert!(
        r.stdout().contains(&format!("  reason      {grounds}")),
        "{}",
        r.stdout()
    );
    let status = t.run(&["wiggum", "status", "last"]).stdout();
    assert!(
        status.contains(&format!("stopped:   promise ({grounds}")),
        "{status}"
    );
    let summary = t.run(&["wiggum", "summary", "last"]).stdout();
    assert!(
        summary.contains(&format!("stop reason promise, cost unknown\n  {grounds}")),
        "{summary}"
    );
}

#[test]
fn promise_check_trust_takes_every_promise_as_before() {
    let t = TestHome::new();
    t.write_home_config("[defaults]\npromise_check = \"trust\"\n");
    let r = t.start_with_env("trust", "promise", "FAKE_ITEMS=3", &[]);
    r.code(0);
    assert!(
        r.stderr().contains(
            "warning: [defaults] promise_check = \"trust\": any completion promise ends the loop"
        ),
        "{}",
        r.stderr()
    );
    let st = t.state();
    assert_eq!(st["stop_reason"], "promise", "{st}");
    assert_eq!(t.runs("iteration").len(), 1);
}

#[test]
fn an_agent_that_commits_its_own_work_is_making_progress() {
    let t = TestHome::new();
    // As where no mount namespace can be made: with one, `.git` is read-only to the agent and
    // its commit fails (`doors::a_code_loops_agent_in_place_cannot_touch_git`).
    t.write_home_config("[safety]\nsandbox = \"off\"\n");
    let script = t.root().join("commit-all.sh");
    std::fs::write(
        &script,
        "cd \"$ARTIFACT_PATH\" && git add -A . && git -c user.name=agent -c user.email=a@b commit -qm \"the agent's own iteration $ITERATION\"\n",
    )
    .unwrap();
    t.start_with_env(
        "own",
        "attack",
        &format!("FAKE_ATTACK={} FAKE_ITEMS=5", script.display()),
        &["--pass-threshold", "0", "--max-iterations", "4"],
    )
    .code(0);
    let st = t.state();
    assert_eq!(st["stop_reason"], "max_iterations", "{st}");
    let runs = t.runs("iteration");
    assert!(runs.iter().all(|r| r["outcome"] != "no_change"), "{runs:?}");
    let log = git(&t.art(), &["log", "--format=%s"]);
    assert!(log.contains("the agent's own iteration 3"), "{log}");
}

#[test]
fn an_agent_that_changes_only_files_the_plan_names_is_making_progress() {
    let t = TestHome::new();
    // A code loop on notes/ of a repository; the plan names src/lib.rs, outside notes/, and the
    // agent changes only that file (never ticking the item).
    let repo = t.root().join("proj");
    let art = repo.join("notes");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::create_dir_all(&art).unwrap();
    std::fs::write(repo.join("src/lib.rs"), "pub fn f() {}\n").unwrap();
    std::fs::write(
        art.join("artifact.md"),
        "# Change\n\n## Summary\nA change.\n",
    )
    .unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "-A"]);
    git(
        &repo,
        &[
            "-c",
            "user.name=u",
            "-c",
            "user.email=u@e",
            "commit",
            "-qm",
            "start",
        ],
    );
    let agent = t.root().join("named-agent.sh");
    std::fs::write(
        &agent,
        "#!/bin/sh\ncat >/dev/null\ncase \"$WIGGUM_PHASE\" in\n\
         planning) printf '# Plan\\n\\n- [ ] Make `src/lib.rs` handle the empty case\\n' > \"$WIGGUM_DIR/fix_plan.md\" ;;\n\
         iteration) echo \"// iteration $ITERATION\" >> \"$ARTIFACT_PATH/../src/lib.rs\" ;;\n\
         esac\n",
    )
    .unwrap();
    std::fs::set_permissions(&agent, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let args = t.start_args(
        "named",
        &art,
        &agent.display().to_string(),
        &[
            "--type",
            "code",
            "--foreground",
            "--max-iterations",
            "4",
            "--pass-threshold",
            "0",
        ],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    t.run(&args).code(0);
    let st: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(art.join("wiggum/state.json")).unwrap())
            .unwrap();
    // Three runs in a row with nothing changed in notes/ would trip the breaker (the default).
    assert_eq!(st["stop_reason"], "max_iterations", "{st}");
    let lib = std::fs::read_to_string(repo.join("src/lib.rs")).unwrap();
    assert!(lib.contains("// iteration 4"), "{lib}");
    let runs: Vec<serde_json::Value> = std::fs::read_to_string(art.join("wiggum/runs.jsonl"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["record"] == "iteration")
        .collect();
    assert!(
        runs.iter()
            .all(|r| r["files_changed"][0] == "src/lib.rs (named in the plan)"),
        "{runs:?}"
    );
}
