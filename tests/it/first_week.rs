//! The first week with the loop: the result where the user looks, the original kept as the user
//! committed it, a revision that takes the document only, and words that agree with each other.

use crate::loop_core::redact;
use crate::support::home::Run;
use crate::support::{TestHome, git};

pub(crate) fn write(t: &TestHome, name: &str, text: &str) -> String {
    let p = t.root().join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// Settings naming an evaluator that gives every dimension the next score of `scores` (one per
/// call; the last repeats), so the gate's score is that number.
pub(crate) fn scripted_judge(t: &TestHome, scores: &[&str]) -> String {
    let dir = t.root().join("judge");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("scores"), scores.join("\n") + "\n").unwrap();
    let ev = write(
        t,
        "judge.sh",
        &format!(
            r#"cat > /dev/null
d={d}
n=$(($(cat $d/calls 2>/dev/null || echo 0) + 1)); echo $n > $d/calls
s=$(sed -n "${{n}}p" $d/scores); [ -n "$s" ] || s=$(tail -n 1 $d/scores)
echo "{{\"depth\": $s, \"relevance\": $s, \"completeness\": $s, \"grounded\": $s, \"specificity\": $s, \"structure\": $s, \"issues\": [\"depth is 0.5/10: no runnable example\"]}}"
"#,
            d = dir.display()
        ),
    );
    write(
        t,
        "judge.toml",
        &format!("[evaluators.judge]\nkind = \"command\"\ncommand = \"sh {ev}\"\n"),
    )
}

pub(crate) fn git_out(t: &TestHome, args: &[&str]) -> String {
    git(&t.art(), args)
}

/// `start <topic> --foreground` with `agent`, judged by the scripted judge of `cfg`, and
/// `extra`; the terminal as a user has it.
pub(crate) fn start_judged(
    t: &TestHome,
    topic: &str,
    agent: &str,
    cfg: &str,
    extra: &[&str],
) -> Run {
    let mut more = vec!["--foreground", "--config", cfg, "--evaluator", "judge"];
    more.extend_from_slice(extra);
    let args = t.start_args(topic, &t.art(), agent, &more);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    t.run_with(&args, &[("STUDIO_AGENTS_LOG", "")])
}

/// Iteration `n`'s artifact.
fn iteration_artifact(t: &TestHome, n: u32) -> String {
    std::fs::read_to_string(t.wiggum(&format!("iterations/001-100/iteration-{n:03}/artifact.md")))
        .unwrap()
}

#[test]
fn a_kept_iteration_that_is_not_the_result_does_not_reach_the_quality_threshold_for_it() {
    let t = TestHome::new();
    // Iteration 1 is the result throughout (the best score); the later ones are longer
    // documents of a higher quality, kept but not the result.
    let cfg = scripted_judge(&t, &["6.7", "5.2", "6.0"]);
    let agent = t.agent_cmd("", "FAKE_ITEMS=3");
    let r = start_judged(
        &t,
        "best",
        &agent,
        &cfg,
        &["--max-rounds", "1", "--quality-threshold", "0.5"],
    );
    r.code(0);
    let quality: Vec<f64> = t
        .runs("iteration")
        .iter()
        .map(|r| r["quality"]["overall"].as_f64().unwrap())
        .collect();
    assert!(quality[0] < 0.5 && quality[1] >= 0.5, "{quality:?}");
    // The loop went on past iteration 2 (whose quality alone passed) and ended on its plan.
    let st = t.state();
    assert_eq!(st["stop_reason"], "plan_empty", "{st}");
    assert!(st["last_quality"].as_f64().unwrap() < 0.5, "{st}");
    let status = t.run(&["wiggum", "status", "best"]).stdout();
    assert!(!status.contains("threshold"), "{status}");
}

#[test]
fn keep_best_commits_the_best_iteration_s_artifact_as_the_result_and_says_which() {
    let t = TestHome::new();
    let cfg = scripted_judge(&t, &["6.7", "5.2", "6.0"]);
    let agent = t.agent_cmd("", "FAKE_ITEMS=3");
    let r = start_judged(&t, "best", &agent, &cfg, &["--max-rounds", "1"]);
    r.code(0);
    insta::assert_snapshot!(redact(&r.stdout(), &t), @r#"
    Planning ✓ planned · <time> · 3 items in fix_plan.md
    Iteration 1/10 ✓ kept · gate 6.7 (best so far; pass 8.0) · <time> · <sha> "Improve part 1"
    Iteration 2/10 ✓ kept · gate 5.2 (best 6.7, iteration 1; pass 8.0) · <time> · <sha> "Improve part 2"
    Iteration 3/10 ✓ kept · gate 6.0 (best 6.7, iteration 1; pass 8.0) · <time> · <sha> "Improve part 3"
    Loop `best` ended: every item in fix_plan.md is done
      iterations  3/10
      quality     0.22 → 0.46 (+111%)
      time        <time>
      cost        unknown
      reason      fix_plan.md has no unchecked items
      gate        never passed: the best was 6.7, iteration 1 (pass 8.0)
      artifact    <art>/wiggum/final/artifact.md (iteration 1)
      next        STUDIO_AGENTS_HOME=<home> studio-agents wiggum diff best
                  STUDIO_AGENTS_HOME=<home> studio-agents wiggum summary best
    "#);
    // The result is the first iteration's artifact, committed, and the tree is clean.
    let first =
        std::fs::read_to_string(t.wiggum("iterations/001-100/iteration-001/artifact.md")).unwrap();
    assert_eq!(
        std::fs::read_to_string(t.wiggum("final/artifact.md")).unwrap(),
        first
    );
    assert_eq!(
        git_out(&t, &["show", "HEAD:wiggum/final/artifact.md"]),
        first
    );
    assert_eq!(
        git_out(
            &t,
            &["log", "--format=%s", "--", "wiggum/final/artifact.md"]
        ),
        "Wiggum iteration 1: Improve part 1\n",
        "committed with the iteration that made it, and only then"
    );
    assert_eq!(git_out(&t, &["status", "--porcelain"]), "");
    // `status` and `summary` name it too, and that its gate did not pass.
    let result = format!(
        "{}/wiggum/final/artifact.md (iteration 1; its gate 6.7 did not pass 8.0)",
        t.art().display()
    );
    let st = t.run(&["wiggum", "status", "best"]);
    assert!(
        st.stdout().contains(&format!("\n  result:    {result}\n")),
        "{}",
        st.stdout()
    );
    let sum = t.run(&["wiggum", "summary", "best"]);
    assert!(
        sum.stdout().contains(&format!("\nresult {result}")),
        "{}",
        sum.stdout()
    );
    // The judge's issue is counted as the kind it is: its figures taken out, not called a path.
    // A start on the repository the loop made says nothing of making one.
    let again = start_judged(&t, "best", &agent, &cfg, &["--max-rounds", "1"]);
    assert!(
        !again.stderr().contains("no git repository"),
        "{}",
        again.stderr()
    );
    let report = t.run(&["wiggum", "report", "best"]).stdout();
    assert!(
        report.contains("depth is #.#/#: no runnable example") && !report.contains("<path>"),
        "{report}"
    );
}

/// A clumsy agent of the user's own: plans two items (and notes so in the original
/// `artifact.md`); in iteration 2 it appends its section to the original instead of its
/// iteration's copy; answers a revision with the document.
fn clumsy_agent(t: &TestHome) -> String {
    let script = write(
        t,
        "clumsy.sh",
        r#"cat > /dev/null
plan="$WIGGUM_DIR/fix_plan.md"
case "$WIGGUM_PHASE" in
planning)
  printf '# Plan\n\n- [ ] Name the cause\n- [ ] Name the fix\n' > "$plan"
  echo "planned: two items" >> "$ARTIFACT_PATH/artifact.md"
  ;;
iteration)
  item=$(grep -m1 -- '- \[ \] ' "$plan" | sed 's/^- \[ \] //')
  target="$ITERATION_DIR/artifact.md"
  [ "$ITERATION" = 2 ] && target="$ARTIFACT_PATH/artifact.md"
  printf '\n## %s\n\nWritten in iteration %s: the cache in `roles.go` denies the new role.\n' "$item" "$ITERATION" >> "$target"
  sed "s/^- \[ \] $item/- [x] $item/" "$plan" > "$plan.tmp" && mv "$plan.tmp" "$plan"
  ;;
revision) cat "$ITERATION_DIR/artifact.md" ;;
esac
"#,
    );
    format!("sh {script}")
}

#[test]
fn an_edit_of_the_original_is_put_back_and_taken_as_the_iteration_s_artifact() {
    let t = TestHome::new();
    let original = std::fs::read_to_string(t.art().join("artifact.md")).unwrap();
    let args = t.start_args(
        "clumsy",
        &t.art(),
        &clumsy_agent(&t),
        &["--foreground", "--max-rounds", "1"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = t.run_with(&args, &[("STUDIO_AGENTS_LOG", "")]);
    r.code(0);
    // The directory was in no repository: the loop made one, and said so.
    assert!(
        r.stderr().contains(&format!(
            "note: {} is in no git repository; the loop makes one there (git init) and commits each accepted iteration to it\n",
            t.art().display()
        )),
        "{}",
        r.stderr()
    );
    assert!(t.art().join(".git").is_dir());
    let out = redact(&r.stdout(), &t);
    assert!(
        out.starts_with("Planning ✓ planned · wrote to the original; the original restored · "),
        "{out}"
    );
    let second = out
        .lines()
        .find(|l| l.starts_with("Iteration 2/"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        second.contains(
            " · wrote to the original; taken as iteration 2's artifact and the original restored · "
        ),
        "{second}"
    );
    // The original is as the user committed it, on disk and in every commit.
    assert_eq!(
        std::fs::read_to_string(t.art().join("artifact.md")).unwrap(),
        original
    );
    assert_eq!(git_out(&t, &["show", "HEAD:artifact.md"]), original);
    assert_eq!(
        git_out(&t, &["log", "--format=%s", "--", "artifact.md"])
            .lines()
            .count(),
        1,
        "only the commit that made the repository holds it"
    );
    // The edit (an append) is added to the work so far as iteration 2's artifact: iteration 1's
    // section is kept.
    let it2 =
        std::fs::read_to_string(t.wiggum("iterations/001-100/iteration-002/artifact.md")).unwrap();
    assert!(
        it2.starts_with(&original)
            && it2.contains("## Name the cause\n\nWritten in iteration 1")
            && it2.contains("## Name the fix\n\nWritten in iteration 2"),
        "{it2}"
    );
    // "Before" measures the original as it was: the figure is the original's.
    assert!(out.contains("\n  quality     0.22 → "), "{out}");
    assert_eq!(
        t.runs("iteration")[1]["original"],
        second.split(" · ").nth(2).unwrap()
    );
}

/// An agent of one plan item whose revision rounds run `revision` (shell).
fn one_item_agent(t: &TestHome, revision: &str) -> String {
    write(
        t,
        "one-item.sh",
        &format!(
            r#"cat > /dev/null
plan="$WIGGUM_DIR/fix_plan.md"
case "$WIGGUM_PHASE" in
planning) printf '# Plan\n\n- [ ] Name the cause\n' > "$plan" ;;
iteration)
  printf '\n## Cause\n\nThe cache in `roles.go` denies the new role.\n' >> "$ITERATION_DIR/artifact.md"
  sed 's/^- \[ \] /- [x] /' "$plan" > "$plan.tmp" && mv "$plan.tmp" "$plan"
  ;;
revision)
  {revision}
  ;;
esac
"#
        ),
    )
}

#[test]
fn a_revision_round_that_writes_to_the_original_has_it_put_back() {
    let t = TestHome::new();
    let original = std::fs::read_to_string(t.art().join("artifact.md")).unwrap();
    let cfg = scripted_judge(&t, &["5.0"]);
    let agent = one_item_agent(
        &t,
        r#"printf '\nRevised where it must not be.\n' >> "$ARTIFACT_PATH/artifact.md""#,
    );
    start_judged(
        &t,
        "inplace",
        &format!("sh {agent}"),
        &cfg,
        &["--max-rounds", "2"],
    )
    .code(0);
    assert_eq!(
        std::fs::read_to_string(t.art().join("artifact.md")).unwrap(),
        original
    );
    let it1 = iteration_artifact(&t, 1);
    assert!(
        it1.contains("## Cause") && !it1.contains("Revised where"),
        "{it1}"
    );
    let rec = &t.runs("iteration")[0];
    assert_eq!(
        rec["note"], "revision round 2: wrote to the original; the original restored",
        "{rec}"
    );
}

#[test]
fn a_revision_answer_on_stdout_is_the_document_from_its_first_heading() {
    let t = TestHome::new();
    let cfg = scripted_judge(&t, &["5.0", "9.0"]);
    // The agent prints a diagnostic line before the document it revises.
    let agent = one_item_agent(
        &t,
        r#"echo "doc-agent: phase=revision iteration=$ITERATION"
  cat "$ITERATION_DIR/artifact.md"
  printf '\nChecked against the request log of the 25th.\n'"#,
    );
    start_judged(
        &t,
        "chatty",
        &format!("sh {agent}"),
        &cfg,
        &["--max-rounds", "2"],
    )
    .code(0);
    let it1 = iteration_artifact(&t, 1);
    assert!(it1.starts_with("# Report\n"), "{it1}");
    assert!(
        it1.ends_with("\nChecked against the request log of the 25th.\n"),
        "{it1}"
    );
    assert!(!it1.contains("doc-agent"), "{it1}");
    let rec = &t.runs("iteration")[0];
    assert_eq!(rec["gate"]["final"], "PASS", "{rec}");
    assert_eq!(
        rec["note"],
        "revision round 2: the document taken from stdout, the 1 line printed before its first heading left out",
        "{rec}"
    );
}

fn ms_between(st: &serde_json::Value) -> i64 {
    let at = |k: &str| chrono::DateTime::parse_from_rfc3339(st[k].as_str().unwrap()).unwrap();
    // An ended run's time stops when it ended (its status's start), not at its last write.
    (at("status_since") - at("started_at")).num_milliseconds()
}

#[test]
fn a_stop_mid_iteration_counts_what_was_done_a_pause_shows_no_eta_and_elapsed_counts_every_run() {
    let t = TestHome::new();
    let blocked_at = |n: u32, release: &str| {
        format!(
            "FAKE_RELEASE={} FAKE_ITEMS=4 FAKE_BLOCK_AT={n}",
            t.root().join(release).display()
        )
    };
    // The first run is stopped while iteration 2 works.
    t.start_bg("words", "block", &blocked_at(2, "release-1"), &[])
        .code(0);
    t.wait_state("iteration 2 to run", |s| {
        s["current_iteration"] == 2 && s["agent_pid"].is_number()
    });
    t.wait_blocked();
    let running = t.run(&["wiggum", "status", "words"]).stdout();
    assert!(running.contains("\n  eta:       about "), "{running}");
    t.run(&["wiggum", "stop", "words"]).code(0);
    t.wait_stopped("words");
    let first = t.state();
    let st = t.run(&["wiggum", "status", "words"]).stdout();
    assert!(
        st.contains("\n  iterations  1/10 (iteration 2 was not completed)\n"),
        "{st}"
    );
    // The second run pauses before iteration 4, then resumes to the end.
    std::fs::remove_file(t.pids_file()).ok();
    t.start_bg("words", "block", &blocked_at(3, "release-2"), &[])
        .code(0);
    t.wait_state("iteration 3 to run", |s| {
        s["current_iteration"] == 3 && s["agent_pid"].is_number()
    });
    t.wait_blocked();
    t.run(&["wiggum", "pause", "words"]).code(0);
    std::fs::write(t.root().join("release-2"), "").unwrap();
    t.wait_state("the loop to pause", |s| s["status"] == "paused");
    let paused = t.run(&["wiggum", "status", "words"]).stdout();
    assert!(!paused.contains("eta:"), "{paused}");
    // Elapsed counts the first run too.
    let earlier = t.state()["earlier_ms"].as_i64().unwrap();
    assert!(
        earlier >= ms_between(&first) && earlier < ms_between(&first) + 10_000,
        "{earlier} {first}"
    );
    t.run(&["wiggum", "resume", "words"]).code(0);
    t.wait_stopped("words");
    assert_eq!(t.state()["stop_reason"], "plan_empty");
    let events = t.run(&["wiggum", "events", "words"]).stdout();
    let said: Vec<serde_json::Value> = events
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|e: &serde_json::Value| e["event"] == "pause" || e["event"] == "resume")
        .collect();
    assert_eq!(said.len(), 2, "{events}");
    assert_eq!(
        (&said[0]["event"], &said[0]["iteration"], &said[0]["reason"]),
        (
            &serde_json::json!("pause"),
            &serde_json::json!(4),
            &serde_json::json!("paused by the user")
        ),
        "{events}"
    );
    assert_eq!(said[1]["event"], "resume", "{events}");
    assert_eq!(said[1]["reason"], "resumed by the user", "{events}");
    let done = t.run(&["wiggum", "status", "words"]).stdout();
    assert!(done.contains("\n  iterations  4/10\n"), "{done}");
}

#[test]
fn a_new_topic_on_a_directory_whose_loop_ran_as_another_names_it_and_writes_nothing() {
    let t = TestHome::new();
    t.start_with_env("a", "", "FAKE_ITEMS=5", &["--max-iterations", "2"])
        .code(0);
    t.start_with_env("a", "", "FAKE_ITEMS=5", &["--max-iterations", "3"])
        .code(0);
    let before = std::fs::read(t.wiggum("state.json")).unwrap();
    let head = git_out(&t, &["rev-parse", "HEAD"]);
    let r = t.start_with_env("b", "", "FAKE_ITEMS=5", &["--max-iterations", "10"]);
    r.code(2);
    assert_eq!(
        r.stderr().trim_end().lines().last().unwrap_or_default(),
        format!(
            "error: --artifact-path {}: the loop there is `a`, which has run 3 of 3 iterations; go on with `STUDIO_AGENTS_HOME={} studio-agents wiggum start a --max-iterations 13`, or choose a directory of its own for `b`",
            t.art().display(),
            t.home().display()
        ),
        "{}",
        r.stderr()
    );
    assert_eq!(std::fs::read(t.wiggum("state.json")).unwrap(), before);
    assert_eq!(git_out(&t, &["rev-parse", "HEAD"]), head);
    assert!(!t.home().join("loops/b.toml").exists());
}

#[test]
fn an_edit_of_the_original_by_a_run_whose_supervisor_died_is_put_back_at_the_next_start() {
    let t = TestHome::new();
    let original = std::fs::read_to_string(t.art().join("artifact.md")).unwrap();
    let agent = write(
        &t,
        "into-original.sh",
        r#"cat > /dev/null
plan="$WIGGUM_DIR/fix_plan.md"
case "$WIGGUM_PHASE" in
planning) printf '# Plan\n\n- [ ] Name the cause\n' > "$plan" ;;
iteration) printf '\n## Cause\n\nWritten where it must not be.\n' >> "$ARTIFACT_PATH/artifact.md" ;;
esac
"#,
    );
    let args = t.start_args(
        "died",
        &t.art(),
        &format!("sh {agent}"),
        &["--foreground", "--max-iterations", "1"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = t.run_with(&args, &[("STUDIO_AGENTS_FAILPOINT", "after-run")]);
    assert_eq!(r.out.status.code(), None, "aborted: {}", r.stderr());
    assert_ne!(
        std::fs::read_to_string(t.art().join("artifact.md")).unwrap(),
        original,
        "the run wrote to the original before its supervisor died"
    );
    let again = t.start_fg("died", "", &["--max-iterations", "1"]);
    again.code(0);
    assert!(
        again.stderr().contains(&format!(
            "{}: changed by a run whose supervisor died; put back as it was before that run",
            t.art().join("artifact.md").display()
        )),
        "{}",
        again.stderr()
    );
    assert_eq!(
        std::fs::read_to_string(t.art().join("artifact.md")).unwrap(),
        original
    );
    assert_eq!(git_out(&t, &["show", "HEAD:artifact.md"]), original);
}
