//! Agents and evaluators that misbehave the way real ones do: bytes that are not UTF-8, a
//! deleted plan, a runaway answer. The loop records what happened and goes on; nothing it
//! writes is readable by other users.

use std::os::unix::fs::PermissionsExt;

use crate::support::TestHome;

#[test]
fn output_that_is_not_utf8_does_not_fail_the_loop() {
    let t = TestHome::new();
    t.start_with_env(
        "bytes",
        "bad-bytes,promise",
        "FAKE_ITEMS=1",
        &["--max-iterations", "2", "--pass-threshold", "0"],
    )
    .code(0);
    let st = t.state();
    assert_eq!(st["status"], "completed", "{st}");
    assert_eq!(st["stop_reason"], "promise");
    // `logs` gives the bytes back as the agent printed them.
    let r = t.run(&["wiggum", "logs", "bytes", "--iteration", "1"]);
    r.code(0);
    assert!(
        r.out.stdout.windows(4).any(|w| w == b"\xff\xfe\xfd "),
        "{:?}",
        r.stdout()
    );
    t.run(&["wiggum", "status", "bytes"]).code(0);
    t.run(&["wiggum", "summary", "bytes"]).code(0);
}

/// A loop whose agent misbehaves with the plan in iteration 2 only (`fake`, `FAKE_AT=2`): that
/// iteration is rejected saying `why`, the plan is restored, and later iterations do every item.
fn plan_restored_at_the_second_iteration(topic: &str, fake: &str, why: &str) -> TestHome {
    let t = TestHome::new();
    t.start_bg(topic, fake, "FAKE_AT=2", &["--foreground"])
        .code(0);
    let st = t.state();
    assert_eq!(st["stop_reason"], "plan_empty", "{st}");
    let iters = t.runs("iteration");
    let second = iters.iter().find(|r| r["iteration"] == 2).unwrap();
    assert_eq!(second["outcome"], "rejected");
    assert!(
        second["validation_failed"].as_str().unwrap().contains(why),
        "{second}"
    );
    let plan = std::fs::read_to_string(t.wiggum("fix_plan.md")).unwrap();
    assert_eq!(plan.matches("- [x]").count(), 3, "{plan}");
    assert_eq!(iters.len(), 4, "{iters:?}");
    t
}

#[test]
fn an_agent_that_deletes_the_plan_is_rejected_and_the_plan_restored() {
    plan_restored_at_the_second_iteration(
        "plan",
        "delete-plan",
        "deleted fix_plan.md while 2 item(s) were open",
    );
}

#[test]
fn a_plan_grown_past_what_the_loop_reads_is_restored_and_the_iteration_rejected() {
    let t = plan_restored_at_the_second_iteration(
        "bloat",
        "bloat-plan",
        "made fix_plan.md larger than 16777216 bytes",
    );
    let plan = std::fs::metadata(t.wiggum("fix_plan.md")).unwrap();
    assert!(plan.len() < 1000, "{} bytes", plan.len());
}

#[test]
fn a_fifo_in_the_plans_place_neither_blocks_the_loop_nor_ends_it() {
    let t = plan_restored_at_the_second_iteration(
        "fifo",
        "fifo-plan",
        "emptied fix_plan.md while 2 item(s) were open",
    );
    assert!(
        std::fs::metadata(t.wiggum("fix_plan.md"))
            .unwrap()
            .is_file()
    );
}

#[test]
fn a_plan_deleted_in_a_revision_round_is_restored_and_the_loop_goes_on() {
    let t = TestHome::new();
    // The gate fails every round, so each iteration has revision rounds, and the agent
    // deletes the plan in each of them.
    t.start_fg(
        "revplan",
        "delete-plan-revision",
        &["--pass-threshold", "10", "--max-iterations", "2"],
    )
    .code(0);
    let st = t.state();
    assert_eq!(st["stop_reason"], "max_iterations", "{st}");
    let plan = std::fs::read_to_string(t.wiggum("fix_plan.md")).unwrap();
    assert_eq!(plan.matches("- [x]").count(), 2, "{plan}");
    assert_eq!(plan.matches("- [ ]").count(), 1, "{plan}");
    let iters = t.runs("iteration");
    assert_eq!(iters.len(), 2, "{iters:?}");
    for it in &iters {
        assert_eq!(it["outcome"], "accepted", "{it}");
        assert!(
            it["note"].as_str().is_some_and(
                |n| n.contains("in a revision round, the agent deleted fix_plan.md while")
            ),
            "{it}"
        );
    }
    // What the loop committed holds the plan too.
    assert_eq!(
        crate::support::git(&t.art(), &["show", "HEAD:wiggum/fix_plan.md"]),
        plan
    );
}

#[test]
fn an_iteration_directory_deleted_in_a_revision_round_is_written_again() {
    let t = TestHome::new();
    t.start_fg(
        "revdir",
        "rm-iteration-revision",
        &["--pass-threshold", "10", "--max-iterations", "2"],
    )
    .code(0);
    let st = t.state();
    assert_eq!(st["stop_reason"], "max_iterations", "{st}");
    let iters = t.runs("iteration");
    assert_eq!(iters.len(), 2, "{iters:?}");
    for it in &iters {
        assert_eq!(it["outcome"], "accepted", "{it}");
    }
    // The kept round is on disk and committed, and the gate's record beside it.
    let kept =
        std::fs::read_to_string(t.wiggum("iterations/001-100/iteration-002/artifact.md")).unwrap();
    assert!(kept.contains("in iteration 2."), "{kept}");
    assert!(
        t.wiggum("iterations/001-100/iteration-002/eval.json")
            .is_file()
    );
    assert_eq!(
        crate::support::git(
            &t.art(),
            &[
                "show",
                "HEAD:wiggum/iterations/001-100/iteration-002/artifact.md"
            ]
        ),
        kept
    );
}

#[test]
fn everything_the_supervisor_writes_is_private_to_the_user() {
    let t = TestHome::new();
    t.start_fg("modes", "", &["--max-iterations", "1"]).code(0);
    let mode = |rel: &str| {
        std::fs::metadata(t.wiggum(rel))
            .unwrap_or_else(|e| panic!("{rel}: {e}"))
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode(""), 0o700);
    for d in [
        "iterations",
        "iterations/001-100",
        "iterations/001-100/iteration-001",
    ] {
        assert_eq!(mode(d), 0o700, "{d}");
    }
    for f in [
        "state.json",
        "runs.jsonl",
        ".lock",
        "PROMPT.md",
        "AGENT.md",
        "iterations/001-100/iteration-001/eval.json",
    ] {
        assert_eq!(mode(f), 0o600, "{f}");
    }
    let record_mode = |rel: &str| {
        std::fs::metadata(t.records(rel))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(record_mode(""), 0o700);
    for f in [
        "iteration-001/agent.log",
        "iteration-001/prompt.md",
        "planning/agent.log",
    ] {
        assert_eq!(record_mode(f), 0o600, "{f}");
    }
}

#[test]
fn a_runaway_evaluator_answer_is_an_error_not_a_memory_blowup() {
    let t = TestHome::new();
    let ev = t.root().join("ev.sh");
    // 6 MB of answer, more than the loop reads of one.
    std::fs::write(
        &ev,
        "cat > /dev/null; head -c 6000000 /dev/zero | tr '\\0' 'x'\n",
    )
    .unwrap();
    let cfg = t.root().join("c.toml");
    std::fs::write(
        &cfg,
        format!(
            "[evaluators.big]\nkind = \"command\"\ncommand = \"sh {}\"\n",
            ev.display()
        ),
    )
    .unwrap();
    let cfg = cfg.display().to_string();
    t.start_fg(
        "big",
        "",
        &[
            "--config",
            &cfg,
            "--evaluator",
            "big",
            "--max-iterations",
            "1",
        ],
    )
    .code(0);
    let it = &t.runs("iteration")[0];
    assert_eq!(it["gate"]["final"], "ERROR", "{it}");
    let err = it["gate"]["error"].as_str().unwrap();
    assert!(err.contains("larger than 4194304 bytes"), "{err}");
}

/// A link or a file an agent plants where a later iteration's directory belongs (a directory
/// outside, a file) never ends the loop `failed`: the iteration that planted it is committed
/// without it, and the next makes its directory again. The link is planted during the run, or
/// by the validation after it (between the run and the commit).
#[test]
fn a_linked_or_replaced_next_iteration_directory_is_made_again_not_a_failure() {
    for (when, validate) in [
        ("during the run", false),
        ("by the validation, before the commit", true),
    ] {
        let t = TestHome::new();
        let outside = t.root().join("outside-dir");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("artifact.md"), "# planted\n").unwrap();
        let plant = format!(
            "d=\"$WIGGUM_DIR/iterations/001-100\"; mkdir -p \"$d\"; n=$((ITERATION + 1)); ln -sfn {} \"$d/iteration-$(printf %03d $n)\"",
            outside.display()
        );
        let script = t.root().join("plant.sh");
        std::fs::write(
            &script,
            format!("[ \"$ITERATION\" = 1 ] || exit 0\n{plant}\n"),
        )
        .unwrap();
        let config = if validate {
            format!(
                "[validation]\ncommands = [\"ITERATION=1 WIGGUM_DIR=$PWD/wiggum sh {}\"]\n",
                script.display()
            )
        } else {
            String::new()
        };
        t.write_home_config(&config);
        let attack = if validate {
            String::new()
        } else {
            format!("FAKE_ATTACK={}", script.display())
        };
        let r = t.start_with_env(
            "ln",
            if validate { "" } else { "attack" },
            &attack,
            &["--max-iterations", "3"],
        );
        let st = t.state();
        assert_ne!(st["status"], "failed", "{when}: {st}\n{}", r.stderr());
        assert_eq!(st["stop_reason"], "plan_empty", "{when}: {st}");
        // Nothing outside was written, and the planted directory's file is in no commit.
        assert_eq!(
            std::fs::read_to_string(outside.join("artifact.md")).unwrap(),
            "# planted\n",
            "{when}"
        );
        let log = crate::support::git(&t.art(), &["log", "-p", "--format=%s"]);
        assert!(!log.contains("# planted"), "{when}: {log}");
        assert!(
            t.runs("iteration")
                .iter()
                .any(|r| r["iteration"] == 2 && r["outcome"] == "accepted"),
            "{when}"
        );
    }
}

/// One rule for every run: a revision round that changes a protected file (restored) rejects
/// its iteration, as the iteration's own run would. (As where no mount namespace can be made:
/// with one, `.git` is read-only to every run and the write fails.)
#[test]
fn a_revision_round_that_changes_a_protected_file_rejects_its_iteration() {
    let t = TestHome::new();
    t.write_home_config("[safety]\nsandbox = \"off\"\n");
    let r = t.start_fg(
        "revtamper",
        "tamper-revision",
        &[
            "--max-iterations",
            "1",
            "--max-rounds",
            "2",
            "--pass-threshold",
            "10",
        ],
    );
    let it = &t.runs("iteration")[0];
    assert_eq!(it["outcome"], "rejected", "{it}\n{}", r.stdout());
    let why = it["validation_failed"].as_str().unwrap_or_default();
    assert!(
        why.contains("in a revision round, the agent changed protected files (.git/config"),
        "{why}"
    );
    let config = std::fs::read_to_string(t.art().join(".git/config")).unwrap();
    assert!(!config.contains("planted"), "{config}");
}
