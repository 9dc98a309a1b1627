//! The Ralph outer loop in the foreground, end to end.

use std::collections::BTreeSet;

use crate::support::{TestHome, assert_no_survivors};

#[test]
fn plans_then_iterates_to_plan_empty_with_a_fresh_agent_and_a_commit_each() {
    let t = TestHome::new();
    let original = std::fs::read_to_string(t.art().join("artifact.md")).unwrap();
    t.start_fg("core", "", &[]).code(0);

    let st = t.state();
    assert_eq!(st["status"], "completed");
    assert_eq!(st["stop_reason"], "plan_empty");

    let planning = t.runs("planning");
    let iters = t.runs("iteration");
    assert_eq!(planning.len(), 1);
    assert_eq!(iters.len(), 3, "{iters:?}");
    assert!(
        iters
            .iter()
            .all(|r| r["outcome"] == "accepted" && r["commit"].is_string())
    );
    // One distinct process per call.
    let pids: BTreeSet<u64> = planning
        .iter()
        .chain(&iters)
        .map(|r| r["agent_pid"].as_u64().unwrap())
        .collect();
    assert_eq!(pids.len(), 4);
    // The gate ran on each iteration, round records included.
    assert!(
        iters
            .iter()
            .all(|r| r["gate"]["final"].is_string() && r["gate"]["wiggum_r1"].is_number())
    );
    assert!(!t.runs("gate_round").is_empty());

    let log = t.git_log();
    assert_eq!(log.len(), 4, "{log:?}");
    assert!(
        log.iter()
            .all(|l| l.starts_with("wiggum-agent <wiggum@studio-agents.local>|")),
        "{log:?}"
    );
    assert_eq!(
        log[0],
        "wiggum-agent <wiggum@studio-agents.local>|Wiggum iteration 3: Improve part 3"
    );
    assert_eq!(
        log[2],
        "wiggum-agent <wiggum@studio-agents.local>|Wiggum iteration 1: Improve part 1"
    );

    // The original is untouched; each iteration built on the one before; final = last accepted.
    assert_eq!(
        std::fs::read_to_string(t.art().join("artifact.md")).unwrap(),
        original
    );
    let last =
        std::fs::read_to_string(t.wiggum("iterations/001-100/iteration-003/artifact.md")).unwrap();
    assert!(
        last.contains("## Improve part 1") && last.contains("## Improve part 3"),
        "{last}"
    );
    assert_eq!(
        std::fs::read_to_string(t.wiggum("final/artifact.md")).unwrap(),
        last
    );
    // Runtime files are never committed.
    let tracked = std::process::Command::new("git")
        .args(["ls-files"])
        .current_dir(t.art())
        .output()
        .unwrap();
    let tracked = String::from_utf8_lossy(&tracked.stdout);
    assert!(
        tracked.contains("wiggum/fix_plan.md")
            && !tracked.contains("state.json")
            && !tracked.contains("runs.jsonl"),
        "{tracked}"
    );
    assert!(
        !tracked.contains("agent.log") && !tracked.contains("prompt.md"),
        "{tracked}"
    );
    assert!(
        tracked.contains("wiggum/.gitignore")
            && tracked.contains("wiggum/iterations/001-100/iteration-001/eval.json"),
        "{tracked}"
    );
    // Runtime files are ignored: the work tree is clean after the loop.
    let status = std::process::Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(t.art())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&status.stdout),
        "",
        "git status is clean"
    );
    assert!(
        t.records("iteration-001/agent.log").exists(),
        "logs stay on disk"
    );
    assert_no_survivors(&t.token);
}

#[test]
fn agent_gets_the_contract_environment_and_the_prompt_on_stdin() {
    let t = TestHome::new();
    let art = t.art().display().to_string();
    let dump = t.root().join("env.txt");
    let cmd = format!(
        "env | grep -E '^(ITERATION|PREV_ITERATION|WIGGUM_DIR|ARTIFACT_PATH|TOPIC|WIGGUM_PHASE)=' | sort >> {d}; echo --- >> {d}; head -c 40 >> {d}; echo >> {d}; {agent}",
        d = dump.display(),
        agent = t.agent_cmd("", "FAKE_ITEMS=1")
    );
    t.run(&[
        "wiggum",
        "start",
        "envt",
        "--artifact-path",
        &art,
        "--agent-cmd",
        &cmd,
        "--foreground",
    ])
    .code(0);
    let text = std::fs::read_to_string(&dump).unwrap();
    assert!(
        text.contains("WIGGUM_PHASE=planning") && text.contains("WIGGUM_PHASE=iteration"),
        "{text}"
    );
    assert!(
        text.contains("ITERATION=1\n") && text.contains("PREV_ITERATION=0\n"),
        "{text}"
    );
    assert!(
        text.contains(&format!("ARTIFACT_PATH={art}\n")) && text.contains("TOPIC=envt\n"),
        "{text}"
    );
    assert!(
        text.contains(&format!("WIGGUM_DIR={art}/wiggum\n")),
        "{text}"
    );
    assert!(
        text.contains("# Task: write the improvement plan"),
        "planning prompt on stdin: {text}"
    );
    assert!(
        text.contains("# Task: refine the artifact"),
        "iteration prompt on stdin: {text}"
    );
}

#[test]
fn max_iterations_ends_the_loop() {
    let t = TestHome::new();
    let cmd = t.agent_cmd("", "FAKE_ITEMS=9");
    let art = t.art().display().to_string();
    t.run(&[
        "wiggum",
        "start",
        "maxi",
        "--artifact-path",
        &art,
        "--agent-cmd",
        &cmd,
        "--foreground",
        "--max-iterations",
        "2",
    ])
    .code(0);
    assert_eq!(t.state()["stop_reason"], "max_iterations");
    assert_eq!(t.runs("iteration").len(), 2);
    assert_eq!(t.git_log().len(), 3);
}

#[test]
fn a_loop_an_earlier_version_started_goes_on_with_its_iterations_where_they_are() {
    let t = TestHome::new();
    t.start_fg("old", "", &["--max-iterations", "1"]).code(0);
    // What an earlier version left: iteration 1 directly under wiggum/, committed there.
    crate::support::git(
        &t.art(),
        &[
            "mv",
            "wiggum/iterations/001-100/iteration-001",
            "wiggum/iteration-001",
        ],
    );
    crate::support::git(&t.art(), &["commit", "-q", "-m", "an earlier layout"]);

    t.start_fg("old", "", &["--max-iterations", "3"]).code(0);
    assert_eq!(t.state()["last_committed_iteration"], 3, "{}", t.state());
    // The old iteration stays where it was; the new ones are made in their folder, each built
    // on the one before, the first of them on the old one.
    assert!(t.wiggum("iteration-001/artifact.md").is_file());
    assert!(!t.wiggum("iterations/001-100/iteration-001").exists());
    let second =
        std::fs::read_to_string(t.wiggum("iterations/001-100/iteration-002/artifact.md")).unwrap();
    assert!(
        second.contains("## Improve part 1") && second.contains("## Improve part 2"),
        "{second}"
    );
    assert!(
        t.wiggum("iterations/001-100/iteration-003/artifact.md")
            .is_file()
    );
    assert!(!t.wiggum("iteration-002").exists());
    // Iteration 2 against iteration 1, across the two layouts.
    let diff = t
        .run(&["wiggum", "diff", "old", "--iteration", "2"])
        .stdout();
    assert!(
        diff.contains(
            "--- a/wiggum/iteration-001/artifact.md\n+++ b/wiggum/iterations/001-100/iteration-002/artifact.md"
        ),
        "{diff}"
    );
    let status = crate::support::git(&t.art(), &["status", "--porcelain"]);
    assert_eq!(status, "", "git status is clean");
    assert_no_survivors(&t.token);
}

#[test]
fn the_promise_ends_the_loop() {
    let t = TestHome::new();
    // One item, done in the run that claims completion, and a gate any iteration passes.
    t.start_with_env(
        "prom",
        "promise",
        "FAKE_ITEMS=1",
        &["--pass-threshold", "0"],
    )
    .code(0);
    assert_eq!(t.state()["stop_reason"], "promise");
    let iters = t.runs("iteration");
    assert_eq!(iters.len(), 1);
    assert_eq!(iters[0]["promise_seen"], true);
}

#[test]
fn an_agent_echoing_its_prompt_does_not_end_the_loop_and_trips_the_breaker() {
    let t = TestHome::new();
    // A user's own PROMPT.md carrying the promise on a line of its own: the echo must not count.
    std::fs::create_dir_all(t.wiggum("")).unwrap();
    std::fs::write(
        t.wiggum("PROMPT.md"),
        "Do one thing.\nWhen done, print:\n<promise>COMPLETE</promise>\n",
    )
    .unwrap();
    std::fs::write(t.wiggum("fix_plan.md"), "- [ ] one\n- [ ] two\n").unwrap();
    t.start_fg("echo", "echo,idle", &[]).code(1);
    let st = t.state();
    assert_eq!(st["stop_reason"], "breaker", "{st}");
    let iters = t.runs("iteration");
    assert_eq!(iters.len(), 3);
    assert!(
        iters
            .iter()
            .all(|r| r["promise_seen"] == false && r["outcome"] == "no_change")
    );
    let log = std::fs::read_to_string(t.records("iteration-001/agent.log")).unwrap();
    assert!(
        log.lines().any(|l| l == "<promise>COMPLETE</promise>"),
        "the echo was there: {log}"
    );
    // The user's memory files were kept.
    assert!(
        std::fs::read_to_string(t.wiggum("PROMPT.md"))
            .unwrap()
            .starts_with("Do one thing.")
    );
}

#[test]
fn a_hanging_agent_is_killed_at_the_wall_limit_with_its_term_ignoring_tree() {
    let t = TestHome::new();
    t.write_home_config(
        "[safety]\nmax_time_per_iteration = 1\nkill_grace_secs = 1\nmax_crash_retries = 1\n",
    );
    std::fs::create_dir_all(t.wiggum("")).unwrap();
    std::fs::write(t.wiggum("fix_plan.md"), "- [ ] one\n").unwrap();
    let started = std::time::Instant::now();
    t.start_fg("hang", "spawn,hang,ignore-term", &[]).code(1);
    assert!(
        started.elapsed() < crate::support::wait::scaled(std::time::Duration::from_secs(30)),
        "{:?}",
        started.elapsed()
    );
    let st = t.state();
    assert_eq!(st["stop_reason"], "breaker", "{st}");
    let iters = t.runs("iteration");
    assert_eq!(iters.len(), 2, "one try and one retry: {iters:?}");
    assert!(
        iters
            .iter()
            .all(|r| r["timed_out"] == true && r["agent_exit"]["kind"] == "timed_out")
    );
    let pids = std::fs::read_to_string(t.pids_file()).unwrap();
    assert!(
        pids.contains("child ") && pids.contains("setsid "),
        "{pids}"
    );
    assert_no_survivors(&t.token);
}

#[test]
fn a_crashed_iteration_is_discarded_and_retried_with_a_fresh_process() {
    let t = TestHome::new();
    t.start_fg("crash", "crash-once", &[]).code(0);
    let iters = t.runs("iteration");
    let first: Vec<_> = iters.iter().filter(|r| r["iteration"] == 1).collect();
    assert_eq!(first.len(), 2, "{iters:?}");
    assert_eq!(first[0]["outcome"], "crashed");
    assert_eq!(first[0]["agent_exit"]["code"], 3);
    assert_eq!(first[1]["outcome"], "accepted");
    assert_ne!(first[0]["agent_pid"], first[1]["agent_pid"]);
    assert_eq!(t.state()["stop_reason"], "plan_empty");
    // The crashed attempt's directory was moved aside, not committed.
    let discarded: Vec<_> = std::fs::read_dir(t.wiggum("discarded"))
        .unwrap()
        .flatten()
        .collect();
    assert!(!discarded.is_empty());
    let tracked = std::process::Command::new("git")
        .args(["ls-files"])
        .current_dir(t.art())
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&tracked.stdout).contains("discarded"));
}

#[test]
fn an_agent_that_always_crashes_trips_the_breaker_after_two_retries() {
    let t = TestHome::new();
    std::fs::create_dir_all(t.wiggum("")).unwrap();
    std::fs::write(t.wiggum("fix_plan.md"), "- [ ] one\n").unwrap();
    t.start_fg("crash2", "crash", &[]).code(1);
    assert_eq!(t.state()["stop_reason"], "breaker");
    assert_eq!(t.runs("iteration").len(), 3);
    assert_eq!(t.git_log().len(), 0);
}

#[test]
fn failing_validation_rejects_the_iteration_without_a_commit() {
    let t = TestHome::new();
    t.write_home_config("[validation]\ncommands = [\"test -e ALLOWED\"]\n");
    let art = t.art().display().to_string();
    let cmd = t.agent_cmd("", "FAKE_ITEMS=1");
    t.run(&[
        "wiggum",
        "start",
        "val",
        "--artifact-path",
        &art,
        "--agent-cmd",
        &cmd,
        "--foreground",
    ])
    .code(1);
    let iters = t.runs("iteration");
    assert_eq!(iters[0]["outcome"], "rejected");
    // A rejected iteration's ticks do not count: the plan stays open, the loop goes on until
    // the breaker for validation failures in a row, naming what fails, instead of ending done.
    let st = t.state();
    assert_eq!(st["stop_reason"], "breaker", "{st}");
    let why = st["stop_detail"].as_str().unwrap();
    assert!(
        why.contains(
            "validation failed 5 times in a row; the last: `test -e ALLOWED` exited with code 1"
        ),
        "{why}"
    );
    let plan = std::fs::read_to_string(t.wiggum("fix_plan.md")).unwrap();
    assert!(plan.contains("- [ ]"), "{plan}");
    assert!(
        iters.iter().all(|i| i["outcome"] == "rejected"),
        "{iters:?}"
    );
    assert!(
        iters[0]["validation_failed"]
            .as_str()
            .unwrap()
            .contains("test -e ALLOWED")
    );
    assert!(iters[0]["commit"].is_null());
    assert_eq!(t.git_log().len(), 1, "only the planning commit");
}

/// Durations, short commit ids and the test's paths vary from run to run.
pub(crate) fn redact(text: &str, t: &crate::support::TestHome) -> String {
    let art = t.art().display().to_string();
    text.replace(&art, "<art>")
        .replace(&t.home().display().to_string(), "<home>")
        .lines()
        .map(|l| {
            l.split(' ')
                .map(|w| {
                    let secs = w.strip_suffix('s').is_some_and(|n| {
                        n.contains('.') && n.chars().all(|c| c.is_ascii_digit() || c == '.')
                    });
                    let sha = w.len() == 7 && w.chars().all(|c| c.is_ascii_hexdigit());
                    match (secs, sha) {
                        (true, _) => "<time>",
                        (_, true) => "<sha>",
                        _ => w,
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_foreground_prints_a_line_per_run_and_the_completion_block_not_log_records() {
    let t = TestHome::new();
    let r = t.start_fg_plain("progress", "");
    r.code(0);
    insta::assert_snapshot!(redact(&r.stdout(), &t), @r#"
    Planning ✓ planned · <time> · 3 items in fix_plan.md
    Iteration 1/10 ✓ kept · gate 4.7 (best so far; pass 8.0) · <time> · <sha> "Improve part 1"
    Iteration 2/10 ✓ kept · gate 5.8 (best so far; pass 8.0) · <time> · <sha> "Improve part 2"
    Iteration 3/10 ✓ kept · gate 6.2 (best so far; pass 8.0) · <time> · <sha> "Improve part 3"
    Loop `progress` ended: every item in fix_plan.md is done
      iterations  3/10
      quality     0.22 → 0.60 (+178%)
      time        <time>
      cost        unknown
      reason      fix_plan.md has no unchecked items
      gate        never passed: the best was 6.2, iteration 3 (pass 8.0)
      artifact    <art>/wiggum/final/artifact.md (iteration 3)
      next        STUDIO_AGENTS_HOME=<home> studio-agents wiggum diff progress
                  STUDIO_AGENTS_HOME=<home> studio-agents wiggum summary progress
    "#);
    // Log records go to daemon.log; the terminal's stderr has only the sandbox line.
    assert!(!r.stderr().contains("INFO"), "{}", r.stderr());
    let log = std::fs::read_to_string(t.wiggum("daemon.log")).unwrap();
    assert!(
        log.contains("INFO") && log.contains("loop ended: plan_empty"),
        "{log}"
    );
    // -v shows the records on stderr too.
    // `status` of the ended loop shows the same block.
    let st = t.run(&["wiggum", "status", "progress"]);
    st.code(0);
    assert!(
        st.stdout()
            .contains("Loop `progress` ended: every item in fix_plan.md is done\n  iterations  3/10\n  quality     0.22 → 0.60 (+178%)"),
        "{}",
        st.stdout()
    );
    let again = t.start_fg("progress", "", &["-v"]);
    again.code(0);
    assert!(again.stderr().contains("INFO"), "{}", again.stderr());
    assert!(
        again.stdout().contains("Loop `progress` ended"),
        "{}",
        again.stdout()
    );
}

#[test]
fn a_plan_edited_during_an_attempt_that_is_discarded_is_kept_beside_the_restored_one() {
    let t = TestHome::new();
    t.blocked_at_first("edit", "");
    // The user adds an item while the agent works, then stops the loop.
    let plan = t.wiggum("fix_plan.md");
    let mut text = std::fs::read_to_string(&plan).unwrap();
    text.push_str("- [ ] an item the user added\n");
    std::fs::write(&plan, &text).unwrap();
    t.run(&["wiggum", "stop", "edit"]).code(0);
    t.wait_stopped("edit");
    // The interrupted attempt's plan is put back as it began; the edited one is not lost.
    assert!(
        !std::fs::read_to_string(&plan)
            .unwrap()
            .contains("the user added")
    );
    let kept: Vec<String> = std::fs::read_dir(t.wiggum("discarded"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("fix_plan.md."))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    assert!(
        kept.iter()
            .any(|k| k.contains("- [ ] an item the user added")),
        "{kept:?}"
    );
}
