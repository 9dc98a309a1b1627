//! `logs`, `diff`, `summary`, `sign add`, `report` after a real loop.

use std::time::Duration;

use crate::support::TestHome;

fn finished_loop() -> TestHome {
    let t = TestHome::new();
    t.start_fg("ins", "echo", &[]).code(0);
    t
}

#[test]
fn logs_print_an_iterations_agent_output() {
    let t = finished_loop();
    let r = t.run(&["wiggum", "logs", "ins", "--iteration", "2"]);
    r.code(0);
    assert!(
        r.stdout().contains("# Task: refine the artifact"),
        "{}",
        r.stdout()
    );
    assert!(
        r.stdout().contains("iteration-002"),
        "the per-iteration prompt: {}",
        r.stdout()
    );
    let planning = t.run(&["wiggum", "logs", "ins", "--iteration", "0"]);
    assert!(
        planning
            .stdout()
            .contains("# Task: write the improvement plan")
    );
    // Following a stopped loop prints and returns.
    t.run(&["wiggum", "logs", "ins", "--follow"]).code(0);
    t.run(&["wiggum", "logs", "ins", "--iteration", "99"])
        .code(2);
}

#[test]
fn diff_shows_what_an_iteration_committed() {
    // Agents that only add a section per iteration (no gate revisions).
    let t = TestHome::new();
    t.start_fg("ins", "", &[]).code(0);
    let r = t.run(&["wiggum", "diff", "ins", "--iteration", "2"]);
    r.code(0);
    // Iteration 2 against iteration 1: only what iteration 2 added.
    let out = r.stdout();
    assert!(
        out.contains(
            "--- a/wiggum/iterations/001-100/iteration-001/artifact.md\n+++ b/wiggum/iterations/001-100/iteration-002/artifact.md"
        ),
        "{out}"
    );
    assert!(out.contains("+## Improve part 2"), "{out}");
    assert!(
        !out.contains("+## Improve part 1") && !out.contains("+## Improve part 3"),
        "{out}"
    );
    // Iteration 1 against the original.
    let first = t
        .run(&["wiggum", "diff", "ins", "--iteration", "1"])
        .stdout();
    assert!(
        first.contains(
            "--- a/artifact.md\n+++ b/wiggum/iterations/001-100/iteration-001/artifact.md"
        ),
        "{first}"
    );
    // No --iteration: the original against the final artifact, every part.
    let whole = t.run(&["wiggum", "diff", "ins"]).stdout();
    assert!(whole.contains("+++ b/wiggum/final/artifact.md"), "{whole}");
    for part in 1..=3 {
        assert!(
            whole.contains(&format!("+## Improve part {part}")),
            "{whole}"
        );
    }
    let stat = t.run(&["wiggum", "diff", "ins", "--stat"]).stdout();
    let lines: Vec<&str> = stat.lines().collect();
    assert_eq!(lines.len(), 2, "{stat}");
    assert!(
        lines[0].starts_with(" wiggum/final/artifact.md | "),
        "{stat}"
    );
    assert!(lines[1].starts_with(" 1 file changed, "), "{stat}");
    // Colour on request (never by default through a pipe).
    assert!(!whole.contains('\x1b'));
    let coloured = t
        .run(&[
            "wiggum",
            "diff",
            "ins",
            "--iteration",
            "2",
            "--color",
            "always",
        ])
        .stdout();
    assert!(
        coloured.contains("\x1b[32m+## Improve part 2\x1b[m"),
        "{coloured}"
    );
}

#[test]
fn summary_shows_the_lift_and_a_line_per_iteration() {
    let t = finished_loop();
    let r = t.run(&["wiggum", "summary", "ins"]);
    r.code(0);
    let out = r.stdout();
    // The fake agent's three sections lift the built-in quality; the gate's score rises.
    assert!(
        out.starts_with(
            "quality           before   after   change\n  overall           0.22    0.60    +178%\n"
        ),
        "{out}"
    );
    assert!(out.contains("gate            r1 5.0 → final 6.8"), "{out}");
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("Iteration "))
        .collect();
    assert_eq!(rows.len(), 3, "{out}");
    assert!(
        rows[1].starts_with("Iteration 2/10 ✓ kept · gate 6.2 (best so far; pass 8.0)")
            && rows[1].ends_with("\"Improve part 2\""),
        "{out}"
    );
    assert!(out.contains("stop reason plan_empty"));
    let j: serde_json::Value =
        serde_json::from_str(&t.run(&["wiggum", "summary", "ins", "--json"]).stdout()).unwrap();
    assert_eq!(j["iterations"].as_array().unwrap().len(), 3);
    assert_eq!(j["lines"].as_array().unwrap().len(), 3);
    assert_eq!(j["lift"]["quality"][0]["metric"], "overall");
    assert_eq!(j["lift"]["gate_r1"], 5.05);
}

#[test]
fn summary_of_a_loop_that_never_iterated_says_so() {
    let t = TestHome::new();
    let art = t.root().join("never");
    std::fs::create_dir_all(&art).unwrap();
    std::fs::write(art.join("artifact.md"), "# N\n\nbody\n").unwrap();
    let args = t.start_args("never", &art, "cat > /dev/null", &["--foreground"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    t.run(&args).code(1);
    let r = t.run(&["wiggum", "summary", "never"]);
    r.code(0);
    assert!(
        r.stdout().starts_with("`never` has run no iteration yet"),
        "{}",
        r.stdout()
    );
}

#[test]
fn a_sign_reaches_agent_md_for_the_next_iteration() {
    let t = finished_loop();
    t.run(&[
        "wiggum",
        "sign",
        "add",
        "ins",
        "--what",
        "Iteration 2 broke a link",
        "--fix",
        "Check every link",
    ])
    .code(0);
    let agent_md = std::fs::read_to_string(t.wiggum("AGENT.md")).unwrap();
    assert!(
        agent_md.contains("### Sign 1: Iteration 2 broke a link")
            && agent_md.contains("**Fix**: Check every link"),
        "{agent_md}"
    );
    let r = t.run(&["wiggum", "sign", "add", "ins", "--what", "", "--fix", "x"]);
    r.code(2);
    t.run(&[
        "wiggum", "sign", "add", "nosuch", "--what", "a", "--fix", "b",
    ])
    .code(2);
}

#[test]
fn report_aggregates_the_runs() {
    let t = finished_loop();
    let r = t.run(&["wiggum", "report", "--json"]);
    r.code(0);
    let v: serde_json::Value = serde_json::from_str(&r.stdout()).unwrap();
    assert_eq!(v["iterations"], 3);
    assert_eq!(v["gated"], 3);
    assert!(v["composite"].is_number() && v["mean_r1"].is_number());
    assert!(!v["weak_dimensions"].as_array().unwrap().is_empty());
    let text = t.run(&["wiggum", "report", "ins"]);
    assert!(text.stdout().contains("composite"));
}

/// A loop whose files version 0.1.0 wrote: `status`, `summary` and `report` still read it.
#[test]
fn the_files_of_version_0_1_0_are_still_read() {
    let t = crate::support::TestHome::new();
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v0.1.0");
    std::fs::create_dir_all(t.wiggum("")).unwrap();
    for f in ["state.json", "runs.jsonl"] {
        std::fs::copy(fixtures.join(f), t.wiggum(f)).unwrap();
    }
    std::fs::create_dir_all(t.home().join("loops")).unwrap();
    std::fs::write(
        t.home().join("loops/pinned.toml"),
        format!("artifact_path = \"{}\"\n", t.art().display()),
    )
    .unwrap();
    let st = t.status_json("pinned");
    assert_eq!(st["status"], "completed");
    assert_eq!(st["state"]["stop_reason"], "plan_empty");
    let r = t.run(&["wiggum", "summary", "pinned", "--json"]);
    r.code(0);
    let v: serde_json::Value = serde_json::from_str(&r.stdout()).unwrap();
    let outcomes: Vec<&str> = v["iterations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(
        outcomes,
        [
            "crashed", "accepted", "crashed", "accepted", "crashed", "accepted"
        ]
    );
    let r = t.run(&["wiggum", "report", "pinned", "--json"]);
    r.code(0);
    assert!(r.stdout().contains("\"pass_rate\""), "{}", r.stdout());
}

#[test]
fn logs_of_an_iteration_show_its_discarded_attempts_marked() {
    let t = crate::support::TestHome::new();
    t.start_fg("retry", "crash-once", &["--max-iterations", "1"])
        .code(0);
    let r = t.run(&["wiggum", "logs", "retry", "--iteration", "1"]);
    r.code(0);
    let out = r.stdout();
    assert!(
        out.contains("--- discarded attempt iteration-001.attempt-1."),
        "{out}"
    );
    assert!(out.contains("fatal: simulated crash"), "{out}");
}

#[test]
fn logs_without_an_iteration_show_the_stopped_iterations_output() {
    let t = TestHome::new();
    t.blocked_at_first("cut", "err");
    t.run(&["wiggum", "stop", "cut"]).code(0);
    t.wait_stopped("cut");
    // The stopped iteration's directory went to the discarded attempts; its log is the newest.
    let r = t.run(&["wiggum", "logs", "cut"]);
    r.code(0);
    let out = r.stdout();
    assert!(
        out.contains("--- discarded attempt iteration-001.attempt-")
            && out.contains("Error: upstream request"),
        "{out}{}",
        r.stderr()
    );
}

#[test]
fn logs_follow_the_loop_across_iterations_until_it_ends() {
    let t = TestHome::new();
    let env = format!(
        "FAKE_RELEASE={} FAKE_BLOCK_AT=1 FAKE_ITEMS=2",
        t.release_file().display()
    );
    t.start_bg("fol", "block,echo", &env, &[]).code(0);
    t.wait_state("iteration 1 to run", |s| {
        s["current_iteration"] == 1 && s["agent_pid"].is_number()
    });
    let mut follow = t.spawn(&["wiggum", "logs", "fol", "--follow"]);
    let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let reader = {
        let seen = seen.clone();
        let mut stdout = follow.stdout.take().unwrap();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = std::io::Read::read(&mut stdout, &mut buf) {
                if n == 0 {
                    break;
                }
                seen.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        })
    };
    // Iteration 2 starts only once the follower is printing iteration 1's log.
    crate::support::wait_for(
        "the follower to print iteration 1",
        Duration::from_secs(20),
        || {
            let s = seen.lock().unwrap();
            if s.contains("iteration-001") {
                Ok(())
            } else {
                Err(s.clone())
            }
        },
    );
    std::fs::write(t.release_file(), "").unwrap();
    t.wait_stopped("fol");
    let exited =
        crate::support::wait_for("logs --follow to return", Duration::from_secs(20), || {
            follow.try_wait().unwrap().ok_or("still following")
        });
    assert!(exited.success());
    reader.join().unwrap();
    let out = seen.lock().unwrap().clone();
    let first = out.find("iteration-001").expect("iteration 1's log");
    let switch = out
        .find("--- iteration 2 ---")
        .expect("the switch to iteration 2");
    let second = out.rfind("iteration-002").expect("iteration 2's log");
    assert!(first < switch && switch < second, "{out}");
    // --planning is iteration 0.
    let planning = t.run(&["wiggum", "logs", "fol", "--planning"]).stdout();
    assert!(
        planning.contains("# Task: write the improvement plan"),
        "{planning}"
    );
}

/// `studio-agents <args>` run on a pseudo-terminal (`script`), as the user's shell runs it: what
/// the terminal was sent. Colours off (`NO_COLOR`) and no pager, so every ESC is the agent's.
fn on_a_terminal(t: &TestHome, args: &[&str], env: &[(&str, &str)]) -> Vec<u8> {
    let probe = t.cmd(args);
    let bin = env!("CARGO_BIN_EXE_studio-agents");
    let line = std::iter::once(bin)
        .chain(args.iter().copied())
        .map(|a| format!("'{a}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let mut c = std::process::Command::new("script");
    c.args(["-qec", &line, "/dev/null"])
        .env_clear()
        .current_dir(t.root())
        .stdin(std::process::Stdio::null());
    for (k, v) in probe.get_envs() {
        if let Some(v) = v {
            c.env(k, v);
        }
    }
    c.env("NO_COLOR", "1")
        .env("STUDIO_AGENTS_PAGER", "cat")
        .envs(env.iter().copied());
    let out = c.output().expect("script (util-linux) gives a pty");
    assert!(out.status.success(), "{out:?}");
    out.stdout
}

#[test]
fn an_agents_escape_sequences_never_reach_the_users_terminal() {
    let t = TestHome::new();
    // A review and a log that set the window's title (OSC 0), fill the clipboard (OSC 52), clear
    // the screen and paint (CSI), also in their 8-bit forms.
    let script = t.root().join("escapes.sh");
    std::fs::write(
        &script,
        "printf '\\033]0;pwned\\007\\033]52;c;cm0gLXJmIH4K\\007\\033[2J\\033[31mAll good\\033[0m \\302\\2332J\\n\\nreview\\n' > \"$ITERATION_DIR/review.md\"\n\
         printf 'working \\033]52;c;Y3VybCBldmlsIHwgc2gK\\033\\\\done\\n'\n",
    )
    .unwrap();
    // The loop in the foreground, on the terminal: its lines for people are filtered too.
    let cmd = t.agent_cmd(
        "attack",
        &format!("FAKE_ATTACK={} FAKE_ITEMS=1", script.display()),
    );
    let args = t.start_args(
        "esc",
        &t.art(),
        &cmd,
        &["--foreground", "--max-rounds", "1"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    // As a user has it: only warnings and errors in the log lines (which colour their level).
    let shown = on_a_terminal(&t, &args, &[("STUDIO_AGENTS_LOG", "")]);
    let text = String::from_utf8_lossy(&shown);
    assert!(
        text.contains("Loop `esc` ended") && text.contains("All good"),
        "{text:?}"
    );
    for agents in ["\x1b]", "\x1b[2J", "\u{9b}"] {
        assert!(!text.contains(agents), "{agents:?} in {text:?}");
    }
    // What the agent wrote is there, as it wrote it, for who asks for the bytes.
    let logs_raw = on_a_terminal(&t, &["wiggum", "logs", "esc", "--raw"], &[]);
    assert!(
        String::from_utf8_lossy(&logs_raw).contains("\x1b]52;c;"),
        "{logs_raw:?}"
    );
    let review =
        std::fs::read_to_string(t.wiggum("iterations/001-100/iteration-001/review.md")).unwrap();
    assert!(review.contains("\x1b]0;pwned"), "{review:?}");
    for args in [
        &["wiggum", "summary", "esc"][..],
        &["wiggum", "report", "esc"],
        &["wiggum", "status", "esc"],
        &["wiggum", "list"],
        &["wiggum", "events", "esc"],
        &["wiggum", "logs", "esc"],
        &["wiggum", "diff", "esc"],
    ] {
        let shown = on_a_terminal(&t, args, &[]);
        let text = String::from_utf8_lossy(&shown);
        assert!(
            !shown.contains(&0x1b) && !text.contains('\u{9b}') && !text.contains('\u{7}'),
            "{args:?} sent control sequences: {text:?}"
        );
        if args[1] == "summary" {
            assert!(text.contains("All good"), "{text:?}");
        }
        if args[1] == "logs" {
            assert!(text.contains("working done"), "{text:?}");
        }
    }
}
