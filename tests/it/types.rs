//! Artifact types (what "good" means per kind of artifact) through the whole workflow: a
//! research delegation chained into a loop that plans for the research sections and measures
//! its artifact by them; a user's own type with its own templates; an unknown type; detached
//! delegations controlled like loops; the skill for agents.

use crate::support::{TestHome, wait_for};
use std::time::Duration;

const RESEARCH: [&str; 6] = [
    "Executive Summary",
    "Context",
    "Findings",
    "Root Cause",
    "Recommendations",
    "References",
];

/// A scripted research agent: the delegation writes a first artifact with one section; planning
/// plans one item per research section still missing; each iteration writes the next missing
/// section (30 words) into its iteration artifact and ticks one item.
fn research_agent(t: &TestHome) -> String {
    let script = t.root().join("research-agent.sh");
    std::fs::write(
        &script,
        r##"#!/bin/sh
cat > /dev/null
words="The tags panel reads from the cache described in https://example.com/cache and the log line shows the request. We checked it twice and wrote down each step we took so others can repeat it."
case "$WIGGUM_PHASE" in
delegation)
    printf '# Monarch tags\n\n## Executive Summary\n\n%s\n' "$words" > artifact.md ;;
planning)
    {
        echo "# Plan"
        for s in "Context" "Findings" "Root Cause" "Recommendations" "References"; do
            echo "- [ ] Add the $s section"
        done
    } > "$WIGGUM_DIR/fix_plan.md" ;;
iteration)
    item=$(grep -m1 -- '- \[ \] ' "$WIGGUM_DIR/fix_plan.md" | sed 's/^- \[ \] Add the //; s/ section$//')
    [ -n "$item" ] || exit 0
    printf '\n## %s\n\n%s\n' "$item" "$words" >> "$ITERATION_DIR/artifact.md"
    sed -i "0,/- \[ \] /s//- [x] /" "$WIGGUM_DIR/fix_plan.md" ;;
*) cat "$ITERATION_DIR/artifact.md" 2>/dev/null ;;
esac
"##,
    )
    .unwrap();
    format!("sh {}", script.display())
}

#[test]
fn a_research_delegation_chains_a_loop_that_plans_and_measures_by_the_research_sections() {
    let t = TestHome::new();
    t.write_home_config("[gate]\ntarget = \"off\"\n");
    let task = t.root().join("task.md");
    std::fs::write(&task, "Why is the Monarch tags panel empty?\n").unwrap();
    let out = t.root().join("research");
    let r = t.run(&[
        "delegate",
        "start",
        "monarch",
        &task.display().to_string(),
        "--type",
        "research",
        "--agent-cmd",
        &research_agent(&t),
        "--artifact-path",
        &out.display().to_string(),
        "--then-wiggum",
    ]);
    r.code(0);
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("metadata.json")).unwrap()).unwrap();
    assert_eq!(meta["agent_type"], "research");
    t.wait_stopped("monarch");
    // The first plan was written knowing what a research report needs.
    let planning = std::fs::read_to_string(out.join("wiggum/PLANNING_PROMPT.md")).unwrap();
    for s in RESEARCH {
        assert!(
            planning.contains(&format!("- {s}\n")),
            "{s} missing from:\n{planning}"
        );
    }
    // Completeness, measured against those sections, rises with every section added.
    let home_runs = std::fs::read_dir(t.home().join("runs"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let log = std::fs::read_to_string(home_runs.path().join("runs.jsonl"))
        .or_else(|_| std::fs::read_to_string(out.join("wiggum/runs.jsonl")))
        .unwrap();
    let completeness: Vec<f64> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|r| r["record"] == "iteration" && r["outcome"] == "accepted")
        .filter_map(|r| r["quality"]["completeness"].as_f64())
        .collect();
    assert_eq!(completeness.len(), 5, "{log}");
    assert!(
        completeness.windows(2).all(|w| w[1] > w[0]),
        "completeness must rise with each section: {completeness:?}"
    );
    assert!(completeness[4] > 0.9, "{completeness:?}");
}

#[test]
fn a_users_own_type_renders_its_own_templates_and_an_unknown_type_is_refused() {
    let t = TestHome::new();
    let templates = t.root().join("runbook-templates");
    std::fs::create_dir_all(&templates).unwrap();
    std::fs::write(
        templates.join("PLANNING_PROMPT.md"),
        "RUNBOOK PLANNING for {{topic}}\n\n{{type_requirements}}",
    )
    .unwrap();
    t.write_home_config(&format!(
        "[types.runbook]\nsections = [\"Trigger\", \"Steps\", \"Rollback\"]\ntemplates = \"{}\"\n",
        templates.display()
    ));
    t.start_fg("rb", "", &["--type", "runbook", "--max-iterations", "1"])
        .code(0);
    let planning = std::fs::read_to_string(t.wiggum("PLANNING_PROMPT.md")).unwrap();
    assert!(
        planning.starts_with("RUNBOOK PLANNING for rb") && planning.contains("- Rollback\n"),
        "{planning}"
    );
    // A dry run shows the same planning prompt before anything is written.
    let t2 = TestHome::new();
    t2.write_home_config("[types.runbook]\nsections = [\"Trigger\", \"Rollback\"]\n");
    let args = t2.start_args(
        "dry",
        &t2.art(),
        &t2.agent_cmd("", ""),
        &["--dry-run", "--type", "runbook"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let dry = t2.run(&args);
    dry.code(0);
    assert!(
        dry.stdout().contains("This is a `runbook` artifact")
            && dry.stdout().contains("- Rollback"),
        "{}",
        dry.stdout()
    );
    // The built-in templates fill in for the files the type's directory does not have.
    let agent_md = std::fs::read_to_string(t.wiggum("AGENT.md")).unwrap();
    assert!(
        agent_md.contains("This is a `runbook` artifact"),
        "{agent_md}"
    );

    // An unknown type is a typo until said otherwise: refused, nothing written.
    let t = TestHome::new();
    let r = t.start_fg("poem", "", &["--type", "poem", "--max-iterations", "1"]);
    r.code(2);
    assert!(
        r.stderr().contains(
            "unknown artifact type `poem` (known: code, design, generic, research); define it in [types.poem] or choose a known one"
        ),
        "{}",
        r.stderr()
    );
    assert!(!t.wiggum("").exists());
}

#[test]
fn a_detached_delegation_is_watched_and_stopped_like_a_loop() {
    let t = TestHome::new();
    let task = t.root().join("task.md");
    std::fs::write(&task, "Take your time.\n").unwrap();
    let child = t.root().join("child.pid");
    let agent = format!(
        "cat > /dev/null; echo $$ > {}; exec sleep 1000",
        child.display()
    );
    let r = t.run(&[
        "delegate",
        "start",
        "slow",
        &task.display().to_string(),
        "--type",
        "design",
        "--agent-cmd",
        &agent,
        "--detach",
    ]);
    r.code(0);
    assert!(
        r.stdout().contains("started delegation `slow`"),
        "{}",
        r.stdout()
    );
    let pid: i32 = wait_for("the agent to run", Duration::from_secs(10), || {
        std::fs::read_to_string(&child)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .ok_or(())
    });
    let status = t.run(&["delegate", "status", "slow"]);
    status.code(0);
    assert!(
        status.stdout().starts_with("slow  running  type design"),
        "{}",
        status.stdout()
    );
    assert!(
        t.run(&["delegate", "list"])
            .stdout()
            .contains("slow   running   design")
    );
    // No artifact yet: view says so.
    t.run(&["delegate", "view", "slow"]).code(2);
    t.run(&["delegate", "stop", "slow"]).code(0);
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "the agent outlived its stopped delegation"
    );
    let status = t.run(&["delegate", "status", "slow"]).stdout();
    assert!(status.starts_with("slow  stopped"), "{status}");
    // A stopped delegation is not running: stopping it again says so.
    t.run(&["delegate", "stop", "slow"]).code(3);
}

#[test]
fn the_skill_installs_once_and_an_edited_copy_is_kept_unless_forced() {
    let t = TestHome::new();
    let dir = t.root().join(".claude/skills");
    let file = dir.join("studio-agents-wiggum/SKILL.md");
    let d = dir.display().to_string();
    t.run(&["skill", "install", &d]).code(0);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.starts_with("---\nname: studio-agents-wiggum\n"),
        "{text}"
    );
    assert!(text.contains("One task per iteration") && text.contains("wiggum sign add"));
    assert!(
        t.run(&["skill", "show"])
            .stdout()
            .contains("## Rules of the loop")
    );
    // Untouched: installing again is fine.
    t.run(&["skill", "install", &d]).code(0);
    // Edited: kept, unless --force.
    std::fs::write(&file, format!("{text}\nMy own note.\n")).unwrap();
    let r = t.run(&["skill", "install", &d]);
    r.code(2);
    assert!(
        r.stderr().contains("was edited since it was installed"),
        "{}",
        r.stderr()
    );
    assert!(
        std::fs::read_to_string(&file)
            .unwrap()
            .contains("My own note.")
    );
    t.run(&["skill", "install", &d, "--force"]).code(0);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
}
