//! The gate inside the loop: FAIL policies, ERROR handling, and the panel.

use crate::support::TestHome;

fn write(t: &TestHome, name: &str, text: &str) -> String {
    let p = t.root().join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn a_failed_gate_keeps_the_best_round_and_commits_by_default() {
    let t = TestHome::new();
    t.start_fg(
        "kb",
        "",
        &["--pass-threshold", "10", "--max-iterations", "1"],
    )
    .code(0);
    let it = &t.runs("iteration")[0];
    assert_eq!(it["gate"]["final"], "FAIL");
    assert_eq!(it["outcome"], "accepted");
    assert!(it["commit"].is_string());
}

#[test]
fn the_revert_policy_restores_the_artifact_and_does_not_commit() {
    let t = TestHome::new();
    t.write_home_config("[gate]\non_gate_fail = \"revert\"\n");
    t.start_fg(
        "rv",
        "",
        &["--pass-threshold", "10", "--max-iterations", "1"],
    )
    .code(0);
    let it = &t.runs("iteration")[0];
    assert_eq!(it["gate"]["final"], "FAIL");
    assert_eq!(it["outcome"], "gate_failed");
    assert!(it["commit"].is_null());
    let original = std::fs::read_to_string(t.art().join("artifact.md")).unwrap();
    assert_eq!(
        std::fs::read_to_string(t.wiggum("iterations/001-100/iteration-001/artifact.md")).unwrap(),
        original
    );
    // What it ticked is open again: a reverted iteration did nothing, as far as the plan goes.
    let plan = std::fs::read_to_string(t.wiggum("fix_plan.md")).unwrap();
    assert!(!plan.contains("- [x]"), "{plan}");
    assert_eq!(t.state()["items_remaining"], 3, "{plan}");
}

#[test]
fn an_evaluator_error_is_retried_once_then_recorded() {
    let t = TestHome::new();
    let calls = t.root().join("calls");
    let ev = write(
        &t,
        "ev.sh",
        &format!(
            "cat > /dev/null; echo x >> {}; echo 'no idea'\n",
            calls.display()
        ),
    );
    let cfg = write(
        &t,
        "c.toml",
        &format!("[evaluators.bad]\nkind = \"command\"\ncommand = \"sh {ev}\"\n"),
    );
    t.start_fg(
        "err",
        "",
        &[
            "--config",
            &cfg,
            "--evaluator",
            "bad",
            "--max-iterations",
            "1",
        ],
    )
    .code(0);
    let it = &t.runs("iteration")[0];
    assert_eq!(it["gate"]["final"], "ERROR");
    assert!(it["gate"]["error"].as_str().unwrap().contains("no scores"));
    assert_eq!(
        std::fs::read_to_string(&calls).unwrap().lines().count(),
        2,
        "one retry"
    );
    assert_eq!(it["outcome"], "accepted", "keep-best applies to ERROR too");
}

/// An evaluator CLI that answers rubric prompts with a PASS and persona prompts with a review,
/// noting when each persona call starts and ends; each persona call ends only once all three
/// have started.
fn panel_evaluator(t: &TestHome) -> String {
    let log = t.root().join("persona.log");
    write(
        t,
        "panel-ev.sh",
        &format!(
            r#"p=$(cat)
case "$p" in
*"Review it from your perspective"*)
  echo "start $$ $(date +%s%N)" >> {log}
  # A barrier, not a sleep: each persona waits (at most 20 s) until all three have started, so
  # run one after another they end in turn and the order below shows it.
  i=0
  while [ "$(grep -c '^start' {log})" -lt 3 ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
  case "$p" in
  *"production systems"*) who=practitioner ;;
  *"technical editor"*) who=critic ;;
  *) who=newcomer ;;
  esac
  echo "end $$ $(date +%s%N)" >> {log}
  echo "{{\"score\": 6, \"issues\": [\"$who issue\", \"Shared issue\"], \"strengths\": [\"clear\"]}}" ;;
*) echo '{{"depth": 9, "relevance": 9, "completeness": 9, "grounded": 9, "specificity": 9, "structure": 9, "issues": ["shared issue"]}}' ;;
esac
"#,
            log = log.display()
        ),
    )
}

#[test]
fn the_panel_runs_three_personas_concurrently_and_never_gates() {
    let t = TestHome::new();
    let ev = panel_evaluator(&t);
    let cfg = write(
        &t,
        "c.toml",
        &format!("[evaluators.judge]\nkind = \"command\"\ncommand = \"sh {ev}\"\n"),
    );
    t.start_fg(
        "pan",
        "",
        &[
            "--config",
            &cfg,
            "--evaluator",
            "judge",
            "--panel",
            "--max-iterations",
            "1",
        ],
    )
    .code(0);
    let it = &t.runs("iteration")[0];
    assert_eq!(
        it["gate"]["final"], "PASS",
        "the panel's low scores do not gate"
    );
    let reviews = it["gate"]["panel_reviews"]["r1"].as_array().unwrap();
    assert_eq!(reviews.len(), 3);
    let issues: Vec<&str> = it["gate"]["issues"]["r1"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        issues.contains(&"[Domain Practitioner] practitioner issue"),
        "{issues:?}"
    );
    assert!(
        issues.contains(&"[Critical Reviewer] critic issue"),
        "{issues:?}"
    );
    assert!(
        issues.contains(&"[Informed Newcomer] newcomer issue"),
        "{issues:?}"
    );
    assert_eq!(
        issues
            .iter()
            .filter(|i| i.to_lowercase().contains("shared issue"))
            .count(),
        1,
        "{issues:?}"
    );
    // Concurrent: every persona started before any finished.
    let log = std::fs::read_to_string(t.root().join("persona.log")).unwrap();
    let times = |kind: &str| -> Vec<u128> {
        log.lines()
            .filter(|l| l.starts_with(kind))
            .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
            .collect()
    };
    let (starts, ends) = (times("start"), times("end"));
    assert_eq!(starts.len(), 3);
    assert!(
        starts.iter().max() < ends.iter().min(),
        "not concurrent:\n{log}"
    );
}

#[test]
fn the_panel_needs_a_model_evaluator() {
    let t = TestHome::new();
    let art = t.art().display().to_string();
    let r = t.run(&[
        "wiggum",
        "start",
        "p",
        "--artifact-path",
        &art,
        "--agent-cmd",
        "true",
        "--panel",
        "--foreground",
    ]);
    r.code(2);
    assert!(
        r.stderr()
            .contains("--panel: the panel needs a model evaluator"),
        "{}",
        r.stderr()
    );
}

#[test]
fn the_standalone_panel_prints_each_persona() {
    let t = TestHome::new();
    let ev = panel_evaluator(&t);
    let cfg = write(
        &t,
        "c.toml",
        &format!("[evaluators.judge]\nkind = \"command\"\ncommand = \"sh {ev}\"\n"),
    );
    let doc = write(&t, "doc.md", "# Doc\n\nbody\n");
    let r = t.run(&[
        "wiggum", "panel", "Explain", &doc, "--config", &cfg, "--model", "judge", "--json",
    ]);
    r.code(0);
    let v: serde_json::Value = serde_json::from_str(&r.stdout()).unwrap();
    let personas: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["persona"].as_str().unwrap())
        .collect();
    assert_eq!(
        personas,
        vec![
            "Domain Practitioner",
            "Critical Reviewer",
            "Informed Newcomer"
        ]
    );
    assert_eq!(v[0]["score"], 6.0);
    assert_eq!(
        std::fs::read_to_string(t.root().join("doc.md")).unwrap(),
        "# Doc\n\nbody\n",
        "the panel never edits"
    );
}

/// A revision round whose answer (its stdout) runs away is ended at the output ceiling too, and
/// the answer cut back: no file of the loop's records grows past it.
#[test]
fn a_runaway_revision_answer_is_cut_at_the_output_ceiling() {
    let t = TestHome::new();
    // Idle after 3 s: without the ceiling the answer alone would not end the run for minutes.
    t.write_home_config("[safety]\nmax_log_mb = 1\nmax_idle_secs = 3\n");
    let r = t.start_fg(
        "spewrev",
        "spew-revision",
        &["--pass-threshold", "10", "--max-iterations", "1"],
    );
    let listing = crate::support::home::walk(&t.records(""));
    let answer = t.records("iteration-001/revision-r2.md");
    let text = std::fs::read(&answer).expect(&listing);
    assert!(
        text.ends_with(b"([safety] max_log_mb)]\n"),
        "{listing}\n{}",
        r.stderr()
    );
    for line in listing.lines() {
        let size: u64 = line
            .rsplit_once(" (")
            .and_then(|(_, s)| s.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        assert!(size <= (1 << 20) + 200, "{line}\n{}", r.stderr());
    }
    crate::support::assert_no_survivors(&t.token);
}

/// An iteration's cost is what its runs reported: a revision round that reported none adds
/// nothing (the runs of an iteration share its log, and each is read from where it began).
#[test]
fn a_revision_that_reports_no_cost_adds_none_to_its_iteration() {
    let t = TestHome::new();
    let agent = write(
        &t,
        "priced.sh",
        r#"cat > /dev/null
if [ "$WIGGUM_PHASE" = planning ]; then
    printf '# Plan\n\n## Incomplete Items\n- [ ] One\n' > "$WIGGUM_DIR/fix_plan.md"
    echo planned
    exit 0
fi
if [ "$WIGGUM_PHASE" = revision ]; then
    printf '# Revised\n\nThe same, in other words.\n'
    exit 0
fi
printf '\n## One\n\nDone.\n' >> "$ITERATION_DIR/artifact.md"
sed 's/- \[ \] One/- [x] One/' "$WIGGUM_DIR/fix_plan.md" > "$WIGGUM_DIR/plan.tmp" && mv "$WIGGUM_DIR/plan.tmp" "$WIGGUM_DIR/fix_plan.md"
printf '%s\n' '{"type":"result","subtype":"success","is_error":false,"result":"done","total_cost_usd":0.05}'
"#,
    );
    t.write_home_config(&format!(
        "[agents.priced]\ncommand = \"sh {agent}\"\noutput_format = \"claude-json\"\n"
    ));
    let args = t.start_args(
        "priced",
        &t.art(),
        "",
        &[
            "--agent",
            "priced",
            "--foreground",
            "--max-iterations",
            "1",
            "--max-rounds",
            "2",
            "--pass-threshold",
            "10",
        ],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    t.run(&args).code(0);
    let rounds = t.runs("gate_round");
    assert!(rounds.iter().any(|r| r["round"] == 2), "{rounds:?}");
    let it = &t.runs("iteration")[0];
    assert!(
        (it["cost_usd"].as_f64().unwrap() - 0.05).abs() < 1e-9,
        "{it}"
    );
    let st = t.state();
    assert!(
        (st["spend"]["cost_usd"].as_f64().unwrap() - 0.05).abs() < 1e-9,
        "{st}"
    );
}

/// claude's result of a run that went well is the same line every time (its words are quoted,
/// and quoted words are what the repeated-error breaker sets aside): it names `is_error`, but
/// it is no error, and a loop of such runs goes on.
#[test]
fn the_same_successful_claude_result_every_run_is_no_repeated_error() {
    let t = TestHome::new();
    let agent = write(
        &t,
        "steady.sh",
        r#"cat > /dev/null
plan="$WIGGUM_DIR/fix_plan.md"
if [ "$WIGGUM_PHASE" = planning ]; then
    printf '# Plan\n\n## Incomplete Items\n- [ ] A1\n- [ ] A2\n- [ ] A3\n- [ ] A4\n- [ ] A5\n- [ ] A6\n' > "$plan"
    echo planned
    exit 0
fi
item=$(grep -m1 -- '- \[ \] ' "$plan" | sed 's/^- \[ \] //')
printf '\n## %s\n\nDone.\n' "$item" >> "$ITERATION_DIR/artifact.md"
awk -v it="$item" '!d && $0 == "- [ ] " it { print "- [x] " it; d = 1; next } { print }' "$plan" > "$plan.tmp" && mv "$plan.tmp" "$plan"
printf '%s\n' '{"type":"result","subtype":"success","is_error":false,"result":"Added the section.","permission_denials":[]}'
"#,
    );
    t.write_home_config(&format!(
        "[gate]\ntarget = \"off\"\n[agents.steady]\ncommand = \"sh {agent}\"\noutput_format = \"claude-json\"\n"
    ));
    let args = t.start_args(
        "steady",
        &t.art(),
        "",
        &["--agent", "steady", "--foreground", "--max-iterations", "6"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    t.run(&args).code(0);
    let its = t.runs("iteration");
    assert_eq!(its.len(), 6, "{its:?}");
    assert!(its.iter().all(|r| r["outcome"] == "accepted"), "{its:?}");
    assert_eq!(t.state()["stop_reason"], "plan_empty");
}
