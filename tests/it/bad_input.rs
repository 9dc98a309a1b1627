//! Bad input: exit 2, a one-line error naming the flag/file/key, nothing written.

use crate::support::TestHome;
use crate::support::home::snapshot;

/// `start <topic> --artifact-path <art> --agent-cmd true --foreground <extra…>`.
fn start_args(t: &TestHome, topic: &str, extra: &[&str]) -> Vec<String> {
    let art = t.art().display().to_string();
    let mut a: Vec<String> = [
        "wiggum",
        "start",
        topic,
        "--artifact-path",
        &art,
        "--agent-cmd",
        "true",
        "--foreground",
    ]
    .iter()
    .map(|s| (*s).to_string())
    .collect();
    a.extend(extra.iter().map(|s| (*s).to_string()));
    a
}

#[track_caller]
fn refused_start(t: &TestHome, topic: &str, extra: &[&str], needle: &str) {
    let a = start_args(t, topic, extra);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    refused(t, &a, needle);
}

#[track_caller]
fn refused(t: &TestHome, args: &[&str], needle: &str) {
    let before = snapshot(&t.art());
    let home_before = snapshot(&t.home());
    let r = t.run(args);
    r.code(2);
    let err = r.stderr();
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains(needle), "expected {needle:?} in: {err}");
    assert_eq!(snapshot(&t.art()), before, "the artifact dir was touched");
    assert_eq!(snapshot(&t.home()), home_before, "the home was touched");
}

#[test]
fn bad_flags_and_files_are_refused_before_anything_is_written() {
    let t = TestHome::new();
    let art = t.art().display().to_string();
    let start = |extra: &[&str]| {
        let mut a = vec![
            "wiggum",
            "start",
            "bad",
            "--artifact-path",
            art.as_str(),
            "--agent-cmd",
            "true",
            "--foreground",
        ];
        a.extend_from_slice(extra);
        a.into_iter().map(str::to_string).collect::<Vec<_>>()
    };
    let run = |extra: &[&str], needle: &str| {
        let a = start(extra);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        refused(&t, &a, needle);
    };
    run(
        &["--quality-threshold", "1.5"],
        "--quality-threshold must be between 0 and 1",
    );
    run(
        &["--max-iterations", "0"],
        "--max-iterations must be at least 1",
    );
    run(
        &["--pass-threshold", "11"],
        "--pass-threshold must be between 0 and 10",
    );
    run(&["--max-rounds", "0"], "--max-rounds must be at least 1");
    run(
        &["--evaluator", "nope"],
        "--evaluator: unknown evaluator `nope`",
    );

    let cfg = t.root().join("bad.toml");
    std::fs::write(&cfg, "[defaults]\nmax_iterations = 3\nmax_iteratoins = 4\n").unwrap();
    let c = cfg.display().to_string();
    run(&["--config", &c], &format!("{c}:3:"));
    std::fs::write(&cfg, "[safety]\nmax_time_per_iteration = \"ten\"\n").unwrap();
    run(&["--config", &c], &format!("{c}:2:"));
    run(
        &["--config", "/nonexistent/x.toml"],
        "/nonexistent/x.toml: settings file not found",
    );

    std::fs::write(
        &cfg,
        "[evaluators.judge]\nkind = \"command\"\ntemplate = \"ev.md\"\ncommand = \"cat\"\n",
    )
    .unwrap();
    std::fs::write(
        t.root().join("ev.md"),
        "Score it.\nGenerator said: {{chain_of_thought}}\n{{output}}\n",
    )
    .unwrap();
    run(
        &["--config", &c, "--evaluator", "judge"],
        "contains `{{chain_of_thought}}`",
    );
}

#[test]
fn missing_paths_topics_and_agents_are_refused() {
    let t = TestHome::new();
    let art = t.art().display().to_string();
    refused(
        &t,
        &[
            "wiggum",
            "start",
            "x",
            "--artifact-path",
            "/nonexistent/dir",
            "--agent-cmd",
            "true",
            "--foreground",
        ],
        "--artifact-path /nonexistent/dir: not a directory",
    );
    refused(
        &t,
        &[
            "wiggum",
            "start",
            "../evil",
            "--artifact-path",
            &art,
            "--agent-cmd",
            "true",
            "--foreground",
        ],
        "topic `../evil`",
    );
    refused(
        &t,
        &[
            "wiggum",
            "start",
            "x",
            "--artifact-path",
            &art,
            "--agent",
            "nosuch",
            "--foreground",
        ],
        "--agent: unknown agent `nosuch`",
    );
    refused(
        &t,
        &[
            "wiggum",
            "start",
            "x",
            "--artifact-path",
            &art,
            "--agent",
            "codex",
            "--foreground",
        ],
        "--agent: the `codex` CLI is not on PATH",
    );
    refused(
        &t,
        &[
            "wiggum",
            "start",
            "x",
            "--artifact-path",
            &art,
            "--foreground",
        ],
        "[defaults] agent: the `claude` CLI is not on PATH",
    );
    std::fs::remove_file(t.art().join("artifact.md")).unwrap();
    refused_start(&t, "x", &[], "no artifact.md");
}

#[test]
fn a_malformed_loop_settings_file_is_refused_and_kept() {
    let t = TestHome::new();
    std::fs::create_dir_all(t.wiggum("")).unwrap();
    std::fs::write(t.wiggum("wiggum.toml"), "[defaults\nmax_iterations = 3\n").unwrap();
    refused_start(&t, "x", &[], "wiggum/wiggum.toml:1:");
}

#[test]
fn unknown_topics_exit_2() {
    let t = TestHome::new();
    let r = t.run(&["wiggum", "start", "never-started"]);
    r.code(2);
    assert!(
        r.stderr()
            .contains("--artifact-path is required: no loop `never-started` is registered yet"),
        "{}",
        r.stderr()
    );
    for sub in ["stop", "pause", "resume", "status"] {
        let r = t.run(&["wiggum", sub, "nosuch"]);
        r.code(2);
        assert!(
            r.stderr().contains("unknown topic `nosuch`"),
            "{sub}: {}",
            r.stderr()
        );
    }
}
