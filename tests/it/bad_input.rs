//! Bad input: exit 2, a one-line error naming the flag/file/key, nothing written.

use crate::support::TestHome;
use crate::support::home::snapshot;

/// `start <topic> --artifact-path <art> --agent-cmd true --foreground <extra…>`.
fn start_args(t: &TestHome, topic: &str, extra: &[&str]) -> Vec<String> {
    let mut e = vec!["--foreground"];
    e.extend_from_slice(extra);
    t.start_args(topic, &t.art(), "true", &e)
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
    let run = |extra: &[&str], needle: &str| refused_start(&t, "bad", extra, needle);
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
    let refuse = |topic: &str, art: &std::path::Path, cmd: &str, extra: &[&str], needle: &str| {
        let mut e = vec!["--foreground"];
        e.extend_from_slice(extra);
        let a = t.start_args(topic, art, cmd, &e);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        refused(&t, &a, needle);
    };
    let nowhere = std::path::Path::new("/nonexistent/dir");
    refuse(
        "x",
        nowhere,
        "true",
        &[],
        "--artifact-path /nonexistent/dir: not a directory",
    );
    refuse("../evil", &t.art(), "true", &[], "topic `../evil`");
    refuse(
        "x",
        &t.art(),
        "",
        &["--agent", "nosuch"],
        "--agent: unknown agent `nosuch`",
    );
    refuse(
        "x",
        &t.art(),
        "",
        &["--agent", "codex"],
        "--agent: the `codex` CLI is not on PATH",
    );
    refuse(
        "x",
        &t.art(),
        "",
        &[],
        "no agent was given (--agent NAME or --agent-cmd CMD), and the default, `claude`, is not installed: its CLI is not on PATH",
    );
    // The directory that holds the loop's own home (here the test's root, as `~` would).
    refuse("x", &t.root(), "true", &[], "holds $STUDIO_AGENTS_HOME");
    std::fs::remove_file(t.art().join("artifact.md")).unwrap();
    refused_start(&t, "x", &[], "no artifact.md");
}

#[test]
fn an_artifact_dir_whose_path_is_not_utf8_is_refused_before_anything_is_written() {
    use std::os::unix::ffi::OsStrExt;
    let t = TestHome::new();
    // A directory named with a byte that is not UTF-8, reached through a link (the command
    // line of the test kit is text); the loop sees its real path.
    let odd = t.root().join(std::ffi::OsStr::from_bytes(b"notes\xff"));
    std::fs::create_dir(&odd).unwrap();
    std::fs::write(odd.join("artifact.md"), "# Doc\n").unwrap();
    let link = t.root().join("notes-link");
    std::os::unix::fs::symlink(&odd, &link).unwrap();
    let home_before = snapshot(&t.home());
    for detached in [false, true] {
        let mut extra = vec!["--max-iterations", "1"];
        if !detached {
            extra.push("--foreground");
        }
        let a = t.start_args("odd", &link, "true", &extra);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let r = t.run(&a);
        r.code(2);
        let err = r.stderr();
        assert!(err.contains("not valid UTF-8"), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
    assert!(!odd.join("wiggum").exists(), "nothing written");
    assert_eq!(snapshot(&t.home()), home_before, "the home was touched");
}

#[test]
fn an_artifact_larger_than_the_loop_reads_is_refused_before_anything_is_written() {
    let t = TestHome::new();
    // Sparse: its length is what counts, no disk is spent.
    let sparse = |p: &std::path::Path| {
        let f = std::fs::File::create(p).unwrap();
        f.set_len(16 * 1024 * 1024 + 1).unwrap();
    };
    sparse(&t.art().join("artifact.md"));
    refused_start(&t, "huge", &[], "artifact.md: 16777217 bytes, larger than");
    std::fs::write(t.art().join("artifact.md"), "# Doc\n").unwrap();
    std::fs::create_dir_all(t.art().join("wiggum")).unwrap();
    sparse(&t.art().join("wiggum/fix_plan.md"));
    refused_start(&t, "huge", &[], "fix_plan.md: 16777217 bytes, larger than");
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

/// A loop whose artifact directory was moved: `status` and `list` say `missing` and where it
/// was, `start` by topic alone says how to take the loop up at its new place, which works.
#[test]
fn a_moved_artifact_directory_is_missing_and_start_says_how_to_go_on() {
    let t = TestHome::new();
    t.start_fg("moved", "", &["--max-iterations", "1"]).code(0);
    let moved = t.root().join("moved-art");
    std::fs::rename(t.art(), &moved).unwrap();
    let status = t.run(&["wiggum", "status", "moved"]);
    status.code(0);
    assert!(
        status.stdout().contains("missing")
            && status
                .stdout()
                .contains(&format!("{} is gone", t.art().display())),
        "{}",
        status.stdout()
    );
    assert_eq!(t.status_json("moved")["status"], "missing");
    assert!(t.run(&["wiggum", "list"]).stdout().contains("missing"));
    for cmd in ["summary", "logs", "diff"] {
        let r = t.run(&["wiggum", cmd, "moved"]);
        r.code(2);
        assert!(r.stderr().contains("is gone"), "{cmd}: {}", r.stderr());
    }
    let r = t.run(&["wiggum", "start", "moved", "--foreground"]);
    r.code(2);
    assert!(
        r.stderr().contains(
            "is gone (moved or deleted?); `studio-agents wiggum start moved --artifact-path"
        ),
        "{}",
        r.stderr()
    );
    // Taken up at its new place: its settings file was never allowed there, so start asks for
    // it; once allowed, the loop goes on from its state there.
    let args = t.start_args("moved", &moved, &t.agent_cmd("", ""), &["--foreground"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = t.run(&args);
    r.code(2);
    let at = moved.display().to_string();
    assert!(
        r.stderr().contains(&format!(
            "never allowed for this loop, 2 keys weakening the harness; the agent can write this file, so it is not taken silently — review it, then `STUDIO_AGENTS_HOME={} studio-agents wiggum allow moved --artifact-path {at}`",
            t.home().display()
        )),
        "{}",
        r.stderr()
    );
    t.run(&["wiggum", "allow", "moved", "--artifact-path", &at])
        .code(0);
    t.run(&args).code(0);
    assert_eq!(t.status_json("moved")["status"], "completed");
}

#[test]
fn a_long_topic_is_too_long_and_config_is_checked_by_every_command() {
    let t = TestHome::new();
    let long = "x".repeat(300);
    refused_start(&t, &long, &[], "too long (300 characters; at most 100)");
    let bad = t.root().join("bad.toml");
    std::fs::write(&bad, "[safety]\nnot_a_key = 1\n").unwrap();
    let bad = bad.display().to_string();
    refused(&t, &["wiggum", "list", "--config", &bad], "not_a_key");
    refused(&t, &["wiggum", "status", "--config", &bad], "not_a_key");
}

#[test]
fn names_and_keys_the_settings_refer_to_are_resolved_before_any_agent_runs() {
    let t = TestHome::new();
    let cfg = t.root().join("names.toml");
    let c = cfg.display().to_string();
    // An agent that leaves a mark: none may appear.
    let mark = t.root().join("agent-ran");
    let agent = format!("touch {}", mark.display());
    let run = |text: &str, needle: &str| {
        std::fs::write(&cfg, text).unwrap();
        let a = t.start_args("names", &t.art(), &agent, &["--foreground", "--config", &c]);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        refused(&t, &a, needle);
        assert!(!mark.exists(), "an agent ran");
    };
    run(
        "[gate]\npool = [\"nosuch\"]\n",
        &format!("{c}:2: [gate] pool names an unknown evaluator `nosuch`"),
    );
    run(
        "[gate.weights]\ndepth = 0.5\ndepht = 0.5\n",
        &format!("{c}:3: [gate.weights] depht is not a dimension of the rubric"),
    );
    run(
        "[types.notes]\nsections = [\"Notes\"]\nagent = \"cluade\"\n",
        &format!("{c}:3: [types.notes] agent names an unknown agent `cluade`"),
    );
}

/// An agent command that is not there is refused by `start` (and its dry run), not found by
/// the daemon after `start` said it started.
#[test]
fn an_agent_command_that_is_not_there_is_refused_before_anything_starts() {
    let t = TestHome::new();
    let art = t.art().display().to_string();
    for (cmd, said) in [
        (
            "my-agent.sh --yes",
            "--agent-cmd: `my-agent.sh` is not found on PATH",
        ),
        (
            "/nowhere/agent.sh",
            "--agent-cmd: `/nowhere/agent.sh` is no file",
        ),
    ] {
        for extra in [&[][..], &["--dry-run"][..]] {
            let mut args = vec![
                "wiggum",
                "start",
                "x",
                "--artifact-path",
                &art,
                "--agent-cmd",
                cmd,
            ];
            args.extend_from_slice(extra);
            let r = t.run(&args);
            r.code(2);
            assert!(r.stderr().contains(said), "{cmd} {extra:?}: {}", r.stderr());
            assert!(!t.wiggum("").exists(), "{cmd}: something was written");
        }
    }
}
