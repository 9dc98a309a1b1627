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
            "--artifact-path {}: the loop there is `first`, which has run 2 of 2 iterations; go on with `studio-agents wiggum start first --max-iterations 4`, or choose a directory of its own for `second`",
            t.art().display()
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
    assert!(
        out.contains("  next        studio-agents wiggum logs none --planning   (what the agent said)\n              studio-agents wiggum doctor   (what this machine enforces)"),
        "{out}"
    );
    assert!(!out.contains("wiggum diff none"), "{out}");
}
