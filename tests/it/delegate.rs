//! `delegate start`: one agent run turns a task into an artifact, optionally chained into a loop.

use crate::support::TestHome;

fn task(t: &TestHome) -> String {
    let p = t.root().join("task.md");
    std::fs::write(
        &p,
        "Find out why the Monarch UI shows an empty tags panel.\n",
    )
    .unwrap();
    p.display().to_string()
}

#[test]
fn an_agent_writing_artifact_md_produces_the_artifact_with_its_metadata() {
    let t = TestHome::new();
    let out = t.root().join("deleg");
    let cmd = "p=$(cat); case \"$p\" in *'empty tags panel'*) printf '# Monarch\\n\\n## Findings\\nbody\\n' > artifact.md ;; esac";
    let r = t.run(&[
        "delegate",
        "start",
        "monarch",
        &task(&t),
        "--agent-cmd",
        cmd,
        "--artifact-path",
        &out.display().to_string(),
    ]);
    r.code(0);
    assert!(
        r.stdout()
            .contains("refine it with: studio-agents wiggum start monarch")
    );
    assert_eq!(
        std::fs::read_to_string(out.join("artifact.md")).unwrap(),
        "# Monarch\n\n## Findings\nbody\n"
    );
    assert!(
        std::fs::read_to_string(out.join("task.md"))
            .unwrap()
            .contains("empty tags panel")
    );
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("metadata.json")).unwrap()).unwrap();
    // What it was (type, agent, command) and how it went (times, exit).
    assert_eq!(meta["agent_type"], "generic");
    assert_eq!(meta["agent"], "custom");
    assert_eq!(meta["agent_command"], cmd);
    assert_eq!(meta["status"], "done");
    assert_eq!(meta["exit"], "exited with code 0");
    assert!(
        meta["ended_at"].is_string() && meta["pid"].is_null(),
        "{meta}"
    );
    // A second delegation never overwrites the artifact.
    t.run(&[
        "delegate",
        "start",
        "monarch",
        &task(&t),
        "--agent-cmd",
        cmd,
        "--artifact-path",
        &out.display().to_string(),
    ])
    .code(2);
}

#[test]
fn an_agent_printing_its_result_has_it_saved_as_the_artifact() {
    let t = TestHome::new();
    let r = t.run(&[
        "delegate",
        "start",
        "printed",
        &task(&t),
        "--agent-cmd",
        "cat > /dev/null; printf '# Printed\\n\\nresult\\n'",
    ]);
    r.code(0);
    // By default in a dated directory under ~/studio-agents/artifacts, out of the store the
    // agent must not see, said at start; `artifact-path` and `view` find it.
    let path = t.run(&["delegate", "artifact-path", "printed"]).stdout();
    let art = std::path::PathBuf::from(path.trim());
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let dir = t
        .root()
        .join(format!("studio-agents/artifacts/{today}-printed"));
    assert_eq!(art, dir.join("artifact.md"));
    assert!(
        r.stderr()
            .contains(&format!("artifact folder: {}", dir.display())),
        "{}",
        r.stderr()
    );
    assert_eq!(
        std::fs::read_to_string(&art).unwrap(),
        "# Printed\n\nresult\n"
    );
    assert_eq!(
        t.run(&["delegate", "view", "printed"]).stdout(),
        "# Printed\n\nresult\n"
    );
}

#[test]
fn then_wiggum_chains_a_loop_on_the_new_artifact() {
    let t = TestHome::new();
    let out = t.root().join("chain");
    let fake = t.agent_cmd("", "");
    let cmd = format!(
        "if [ \"$WIGGUM_PHASE\" = delegation ]; then cat > /dev/null; printf '# R\\n\\n## S\\nbody\\n' > artifact.md; else {fake}; fi"
    );
    let r = t.run(&[
        "delegate",
        "start",
        "chain",
        &task(&t),
        "--agent-cmd",
        &cmd,
        "--artifact-path",
        &out.display().to_string(),
        "--then-wiggum",
    ]);
    r.code(0);
    assert!(
        r.stdout().contains("started loop `chain`"),
        "{}",
        r.stdout()
    );
    t.wait_stopped("chain");
    let st: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("wiggum/state.json")).unwrap())
            .unwrap();
    assert_eq!(st["stop_reason"], "plan_empty");
}

#[test]
fn wiggum_start_after_a_delegation_needs_no_flag_even_for_a_bare_command() {
    let t = TestHome::new();
    let out = t.root().join("later");
    let fake = t.agent_cmd("", "");
    let cmd = format!(
        "if [ \"$WIGGUM_PHASE\" = delegation ]; then cat > /dev/null; printf '# R\\n\\n## S\\nbody\\n' > artifact.md; else {fake}; fi"
    );
    t.run(&[
        "delegate",
        "start",
        "later",
        &task(&t),
        "--type",
        "design",
        "--agent-cmd",
        &cmd,
        "--artifact-path",
        &out.display().to_string(),
    ])
    .code(0);
    // Path, type and agent all come from the delegation's record.
    t.run(&["wiggum", "start", "later", "--foreground"]).code(0);
    let settings = std::fs::read_to_string(out.join("wiggum/wiggum.toml")).unwrap();
    assert!(settings.contains("type = \"design\""), "{settings}");
    let st: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("wiggum/state.json")).unwrap())
            .unwrap();
    assert_eq!(st["stop_reason"], "plan_empty", "{st}");
    assert_eq!(st["agent"], "custom");
}

#[test]
fn a_failing_or_silent_agent_and_a_missing_task_are_errors() {
    let t = TestHome::new();
    t.run(&[
        "delegate",
        "start",
        "x",
        "/nonexistent/task.md",
        "--agent-cmd",
        "true",
    ])
    .code(2);
    let r = t.run(&[
        "delegate",
        "start",
        "silent",
        &task(&t),
        "--agent-cmd",
        "cat > /dev/null",
    ]);
    r.code(1);
    assert!(
        r.stderr()
            .contains("wrote no artifact.md and printed nothing"),
        "{}",
        r.stderr()
    );
    let r = t.run(&[
        "delegate",
        "start",
        "fails",
        &task(&t),
        "--agent-cmd",
        "exit 4",
    ]);
    r.code(1);
    assert!(
        r.stderr().contains("the agent exited with code 4"),
        "{}",
        r.stderr()
    );
}

#[test]
fn a_loop_on_a_delegated_artifact_needs_only_its_topic_and_runs_the_same_agent() {
    let t = TestHome::new();
    let out = t.root().join("deleg");
    let marks = t.root().join("writer-runs");
    let fake = t.agent_cmd("", "");
    let script = t.root().join("writer.sh");
    std::fs::write(
        &script,
        format!(
            "echo \"$WIGGUM_PHASE\" >> {m}\nif [ \"$WIGGUM_PHASE\" = delegation ]; then cat > /dev/null; printf '# R\\n\\n## S\\nbody\\n' > artifact.md; else {fake}; fi\n",
            m = marks.display()
        ),
    )
    .unwrap();
    t.write_home_config(&format!(
        "[agents.writer]\ncommand = \"sh {}\"\n",
        script.display()
    ));
    let r = t.run(&[
        "delegate",
        "start",
        "tagspanel",
        &task(&t),
        "--agent",
        "writer",
        "--artifact-path",
        &out.display().to_string(),
    ]);
    r.code(0);
    assert!(
        r.stdout()
            .contains("refine it with: studio-agents wiggum start tagspanel"),
        "{}",
        r.stdout()
    );
    // No --artifact-path, no --agent: the topic names the artifact and its record the agent.
    t.run(&["wiggum", "start", "tagspanel", "--foreground"])
        .code(0);
    let phases = std::fs::read_to_string(&marks).unwrap();
    assert!(phases.starts_with("delegation\n"), "{phases}");
    assert!(
        phases.lines().skip(1).count() >= 2,
        "the loop ran the delegated agent: {phases}"
    );
    let st: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("wiggum/state.json")).unwrap())
            .unwrap();
    assert_eq!(st["stop_reason"], "plan_empty", "{st}");
}

/// A delegation's agent works out of the store: no copy of the user's work an earlier loop kept
/// (an `.env`), no other run's prompt or log, no registry reaches what it writes.
#[test]
fn a_delegations_agent_never_sees_the_store() {
    let t = TestHome::new();
    let secret = "API_KEY=kept-secret-5f2a";
    // An earlier loop kept the user's uncommitted `.env` before its agent ran.
    crate::support::git(&t.art(), &["init", "-q"]);
    std::fs::write(t.art().join(".env"), format!("{secret}\n")).unwrap();
    let fake = t.agent_cmd("ok", "");
    t.run(&[
        "wiggum",
        "start",
        "earlier",
        "--artifact-path",
        &t.art().display().to_string(),
        "--agent-cmd",
        &fake,
        "--foreground",
        "--max-iterations",
        "1",
    ])
    .code(0);
    let kept = crate::support::home::walk(&t.home().join("kept"));
    assert!(kept.contains(".env"), "the premise: a kept .env: {kept}");
    // The user moved on; the kept copy is the only one left.
    std::fs::remove_file(t.art().join(".env")).unwrap();
    // The user's settings, without the test kit's writable root (which holds the store).
    t.write_home_config_raw("");
    // The delegation's agent looks everywhere it can from the home.
    let r = t.run(&[
        "delegate",
        "start",
        "snoop",
        &task(&t),
        "--agent-cmd",
        "cat > /dev/null; grep -rs 'kept-secre[t]-5f2a' \"$HOME\" \"$HOME/home\" \"${TMPDIR:-/tmp}\"; cat \"$HOME\"/home/kept/*/*/.env \"$HOME/home/loops/earlier.toml\" 2>&1; ls -aR \"$HOME\" 2>&1 | head -400",
    ]);
    r.code(0);
    let path = t.run(&["delegate", "artifact-path", "snoop"]).stdout();
    let dir = std::path::Path::new(path.trim())
        .parent()
        .unwrap()
        .to_path_buf();
    assert!(!dir.starts_with(t.home()), "{}", dir.display());
    let written = crate::support::home::walk(&dir);
    let answer = std::fs::read_to_string(path.trim()).unwrap();
    // Hidden by Landlock (denied), or masked by an empty mount in the layered home.
    assert!(
        answer.contains("Permission denied") || answer.contains("No such file"),
        "{answer}"
    );
    assert!(!answer.contains("kept-secret-5f2a"), "{answer}");
    // Nor the registry's entries, nor other runs' records.
    assert!(
        !answer.contains("artifact_path") && !answer.contains("agent.log"),
        "{answer}"
    );
    assert!(!written.contains("kept-secret-5f2a"), "{written}");
    // An artifact folder inside the store is refused before anything is written.
    let inside = t.home().join("artifacts/x");
    let r = t.run(&[
        "delegate",
        "start",
        "inside",
        &task(&t),
        "--agent-cmd",
        "cat",
        "--artifact-path",
        &inside.display().to_string(),
    ]);
    r.code(2);
    assert!(
        r.stderr().contains("inside $STUDIO_AGENTS_HOME"),
        "{}",
        r.stderr()
    );
    assert!(!inside.exists());
}
