//! The first hour with an agent command of one's own: what a newcomer types works, or says why.

use crate::support::*;

#[test]
fn a_relative_agent_command_is_taken_from_the_directory_it_was_typed_in() {
    let t = TestHome::new();
    // The user's own agent script, beside them (the test runs commands from its root).
    let script = t.root().join("my-agent.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nexport FAKE= FAKE_ITEMS=1 FAKE_PIDS={}\nexec sh {} \"$@\"\n",
            t.pids_file().display(),
            crate::support::home::fake_agent().display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let r = t.run(&[
        "wiggum",
        "start",
        "mine",
        "--artifact-path",
        &t.art().display().to_string(),
        "--agent-cmd",
        "./my-agent.sh",
        "--foreground",
        "--max-iterations",
        "1",
    ]);
    r.code(0);
    assert!(
        r.stderr().contains(&format!(
            "note: --agent-cmd runs {} (taken from {}; the agent runs in the artifact directory)",
            script.display(),
            t.root().display()
        )),
        "{}",
        r.stderr()
    );
    let first = &t.runs("iteration")[0];
    assert_eq!(first["outcome"], "accepted", "{first}");
    // A restart without flags runs the same file (the settings remember the absolute path).
    let toml = std::fs::read_to_string(t.wiggum("wiggum.toml")).unwrap();
    assert!(toml.contains(&script.display().to_string()), "{toml}");
}

#[test]
fn a_new_topic_on_a_directory_another_loop_ran_to_its_limit_says_whose_it_is() {
    let t = TestHome::new();
    t.start_with_env("first", "", "FAKE_ITEMS=5", &["--max-iterations", "2"])
        .code(0);
    assert_eq!(t.state()["stop_reason"], "max_iterations");
    let state_before = std::fs::read(t.wiggum("state.json")).unwrap();
    let r = t.start_with_env("second", "", "", &["--max-iterations", "2"]);
    r.code(2);
    assert!(
        r.stderr().contains(&format!(
            "--artifact-path {}: the loop there is `first`, which has run 2 of 2 iterations; go on with `STUDIO_AGENTS_HOME={} studio-agents wiggum start first --max-iterations 4`, or choose a directory of its own for `second`",
            t.art().display(),
            t.home().display()
        )),
        "{}",
        r.stderr()
    );
    assert_eq!(std::fs::read(t.wiggum("state.json")).unwrap(), state_before);
}

#[test]
fn after_a_loop_that_ran_nothing_the_next_lines_point_at_the_cause() {
    let t = TestHome::new();
    let r = t.run(&[
        "wiggum",
        "start",
        "none",
        "--artifact-path",
        &t.art().display().to_string(),
        "--agent-cmd",
        "true",
        "--foreground",
    ]);
    r.code(1);
    let out = r.stdout();
    // The test's home is not the default one: the commands name it, to work as printed.
    let sa = format!("STUDIO_AGENTS_HOME={} studio-agents", t.home().display());
    assert!(
        out.contains(&format!("  next        {sa} wiggum logs none --planning   (what the agent said)\n              {sa} wiggum doctor   (what this machine enforces)")),
        "{out}"
    );
    assert!(!out.contains("wiggum diff none"), "{out}");
}

#[test]
fn a_revision_made_in_place_is_read_back_and_no_revision_is_unchanged_not_an_error() {
    let t = TestHome::new();
    // The producer edits the iteration's artifact.md and says so in a sentence: the file is
    // the revision (its score moves), not the sentence.
    let r = t.start_with_env(
        "inplace",
        "revise-in-place",
        "FAKE_ITEMS=1",
        &["--max-rounds", "2", "--pass-threshold", "10"],
    );
    r.code(0);
    let rounds = t.runs("gate_round");
    assert_eq!(rounds.len(), 2, "{rounds:?}");
    // The second round judged the document with its new paragraph (the sentence alone would
    // score near nothing).
    let (r1, r2) = (
        rounds[0]["score"].as_f64().unwrap(),
        rounds[1]["score"].as_f64().unwrap(),
    );
    assert!(r2 > r1 - 1.0 && r2 > 3.0, "{rounds:?}");
    assert!(!r.stderr().contains("gate ERROR"), "{}", r.stderr());

    // A producer that prints nothing and edits nothing: the rounds end as unchanged, and the
    // evaluation is not run again.
    let t = TestHome::new();
    let r = t.start_with_env(
        "silent",
        "silent-revision",
        "FAKE_ITEMS=1",
        &["--max-rounds", "3", "--pass-threshold", "10"],
    );
    r.code(0);
    assert_eq!(t.runs("gate_round").len(), 1);
    let gate = &t.runs("iteration")[0]["gate"];
    assert_eq!(gate["termination"], "unchanged", "{gate}");
    assert_eq!(gate["final"], "FAIL", "{gate}");
    assert!(
        !r.stderr().contains("ERROR") && !r.stderr().contains("retrying the evaluation"),
        "{}",
        r.stderr()
    );
}

#[test]
fn a_warning_in_the_foreground_is_one_readable_line_and_the_record_goes_to_the_log() {
    let t = TestHome::new();
    // A producer that deletes the iteration's directory in its revision round: the loop puts it
    // back and warns.
    let args = t.start_args(
        "warned",
        &t.art(),
        &t.agent_cmd("rm-iteration-revision", "FAKE_ITEMS=1"),
        &[
            "--foreground",
            "--max-rounds",
            "2",
            "--pass-threshold",
            "10",
        ],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    // The terminal as a user has it: no log filter set.
    let r = t.run_with(&args, &[("STUDIO_AGENTS_LOG", "")]);
    r.code(0);
    let err = r.stderr();
    assert!(
        err.lines().any(|l| l
            == "warning: revision 1: the agent changed wiggum/iterations/001-100/iteration-001 (deleted); restored"),
        "{err}"
    );
    assert!(
        !err.contains(" WARN ") && !err.contains("studio_agents::"),
        "{err}"
    );
    let log = std::fs::read_to_string(t.wiggum("daemon.log")).unwrap();
    assert!(
        log.lines()
            .any(|l| l.contains(" WARN ") && l.contains("the agent changed wiggum/iterations")),
        "{log}"
    );
}

#[test]
fn a_quality_that_did_not_move_says_which_metric_held_it() {
    let t = TestHome::new();
    // Three iterations that each add a line to the summary: done by the plan, flat by the
    // built-in metrics.
    let agent = t.root().join("one-line.sh");
    std::fs::write(
        &agent,
        "cat >/dev/null\nplan=\"$WIGGUM_DIR/fix_plan.md\"\ncase \"$WIGGUM_PHASE\" in\n\
         planning) printf -- '- [ ] a\\n- [ ] b\\n- [ ] c\\n' > \"$plan\" ;;\n\
         iteration) echo \"One more line.\" >> \"$ITERATION_DIR/artifact.md\"\n\
           sed -i '0,/- \\[ \\]/s//- [x]/' \"$plan\" ;;\n\
         revision) cat \"$ITERATION_DIR/artifact.md\" ;;\nesac\n",
    )
    .unwrap();
    let args = t.start_args(
        "flat",
        &t.art(),
        &format!("sh {}", agent.display()),
        &["--foreground", "--max-rounds", "1"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = t.run(&args);
    r.code(0);
    let out = r.stdout();
    let block: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("  quality"))
        .take(2)
        .collect();
    insta::assert_snapshot!(block.join("\n"), @"
      quality     0.22 → 0.22 (+0%)
                  no built-in metric moved: completeness 0.07 (required sections missing or under 25 words), verification 0.00 (few claims backed by a link, a citation or a quoted command), clarity 1.00, actionability 0.00 (no concrete steps under a Recommendations or Next steps heading); the gate's last score 0.2
    ");
}

#[test]
fn a_forgotten_topic_no_longer_holds_its_directory() {
    let t = TestHome::new();
    // The user's settings (the test kit's grant of its root, the home, would leave no layer).
    t.write_home_config_raw("");
    t.start_with_env("first", "", "FAKE_ITEMS=5", &["--max-iterations", "2"])
        .code(0);
    // The home's layer its runs wrote in goes with it (under /var/tmp: the test's temp dir
    // lies in its home, and an overlay's upper layer cannot lie in its lower one).
    let uid = nix::unistd::geteuid().as_raw();
    let records = t.records("");
    let key = records.file_name().unwrap();
    let layer = std::path::Path::new(&format!("/var/tmp/studio-agents-homes-{uid}")).join(key);
    assert!(layer.is_dir(), "{}", layer.display());
    let said = t.run(&["wiggum", "forget", "first"]);
    said.code(0);
    assert!(
        said.stdout().contains("the home's layer of its runs"),
        "{}",
        said.stdout()
    );
    assert!(!layer.exists());
    // Its settings file was allowed for `first`, whose records are gone: the new topic's person
    // allows it, as the refusal says.
    let art = t.art().display().to_string();
    t.run(&["wiggum", "allow", "second", "--artifact-path", &art])
        .code(0);
    let r = t.start_with_env("second", "", "FAKE_ITEMS=5", &["--max-iterations", "3"]);
    r.code(0);
    assert_eq!(t.state()["topic"], "second", "{}", r.stderr());
}
