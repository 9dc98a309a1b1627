//! The first week with the loop: the result where the user looks, the original kept as the user
//! committed it, a revision that takes the document only, and words that agree with each other.

use crate::loop_core::redact;
use crate::support::{TestHome, git};

fn write(t: &TestHome, name: &str, text: &str) -> String {
    let p = t.root().join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// Settings naming an evaluator that gives every dimension the next score of `scores` (one per
/// call; the last repeats), so the gate's score is that number.
fn scripted_judge(t: &TestHome, scores: &[&str]) -> String {
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
echo "{{\"depth\": $s, \"relevance\": $s, \"completeness\": $s, \"grounded\": $s, \"specificity\": $s, \"structure\": $s, \"issues\": [\"more evidence\"]}}"
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

fn git_out(t: &TestHome, args: &[&str]) -> String {
    git(&t.art(), args)
}

#[test]
fn keep_best_commits_the_best_iteration_s_artifact_as_the_result_and_says_which() {
    let t = TestHome::new();
    let cfg = scripted_judge(&t, &["6.7", "5.2", "6.0"]);
    let args = t.start_args(
        "best",
        &t.art(),
        &t.agent_cmd("", "FAKE_ITEMS=3"),
        &[
            "--foreground",
            "--config",
            &cfg,
            "--evaluator",
            "judge",
            "--max-rounds",
            "1",
        ],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = t.run_with(&args, &[("STUDIO_AGENTS_LOG", "")]);
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
      next        studio-agents wiggum diff best
                  studio-agents wiggum summary best
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
    // `status` and `summary` name it too.
    let result = format!(
        "{}/wiggum/final/artifact.md (iteration 1)",
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
}
