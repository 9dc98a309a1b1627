//! The bundled example (`examples/`): the stand-in agent runs a loop that ends passing its gate,
//! and delegation works with it too.

use std::path::PathBuf;

use crate::support::{TestHome, git};

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples")
}

#[test]
fn the_example_loop_improves_the_artifact_until_its_gate_passes() {
    let t = TestHome::new();
    let art = t.root().join("research");
    std::fs::create_dir_all(&art).unwrap();
    std::fs::copy(
        examples().join("research/artifact.md"),
        art.join("artifact.md"),
    )
    .unwrap();
    let agent = examples().join("example-agent.sh").display().to_string();
    let r = t.run(&[
        "wiggum",
        "start",
        "demo",
        "--artifact-path",
        &art.display().to_string(),
        "--agent-cmd",
        &agent,
        "--foreground",
    ]);
    r.code(0);
    let out = r.stdout();
    let last = out
        .lines()
        .find(|l| l.starts_with("Iteration 3/10"))
        .expect("a third iteration");
    assert!(
        last.contains("✓ accepted · gate 8.") && !last.contains("FAIL"),
        "{out}"
    );
    let log = git(&art, &["log", "--format=%s"]);
    assert!(log.contains("Wiggum iteration 3: Add References"), "{log}");
    let final_text = std::fs::read_to_string(art.join("wiggum/final/artifact.md")).unwrap();
    assert!(final_text.contains("## Recommendations"), "{final_text}");
}

/// The commands a person is told to type: the completion block's `next` lines and the demo's
/// own `look closer:` line, each as printed (its comment in parentheses left out).
fn printed_commands(out: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let l = l
                .strip_prefix("next")
                .or_else(|| l.strip_prefix("look closer:"))
                .unwrap_or(l)
                .trim_start();
            let cmd = l.split("   (").next().unwrap_or_default().trim();
            (cmd.contains("studio-agents wiggum ")
                && (cmd.starts_with("studio-agents") || cmd.starts_with("STUDIO_AGENTS_HOME=")))
            .then(|| cmd.to_string())
        })
        .collect()
}

/// Run `program` as a person's shell would: the built binary on PATH (as `cargo install` puts
/// it), no STUDIO_AGENTS_HOME but what `env` gives. Exit code, stdout, stderr.
fn as_a_person(
    t: &TestHome,
    program: &std::path::Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Option<i32>, String, String) {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_studio-agents"));
    let out = std::process::Command::new(program)
        .args(args)
        .env_clear()
        .env(
            "PATH",
            format!(
                "{}:/usr/local/bin:/usr/bin:/bin",
                bin.parent().unwrap().display()
            ),
        )
        .env("HOME", t.root())
        .env("TMPDIR", t.tmp())
        .envs(env.iter().copied())
        .current_dir(t.root())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Each command runs as printed, from a person's shell, and says something.
fn run_as_printed(t: &TestHome, commands: &[String]) {
    for cmd in commands {
        let (code, said, err) = as_a_person(t, std::path::Path::new("/bin/sh"), &["-c", cmd], &[]);
        assert_eq!(code, Some(0), "`{cmd}` failed:\n{said}\n{err}");
        assert!(!said.is_empty(), "`{cmd}` printed nothing");
    }
}

#[test]
fn every_command_the_demo_prints_works_as_printed_with_the_binary_on_path() {
    let t = TestHome::new();
    let bin = env!("CARGO_BIN_EXE_studio-agents");
    let (code, out, err) = as_a_person(
        &t,
        &examples().join("demo.sh"),
        &[],
        &[("STUDIO_AGENTS_BIN", bin)],
    );
    assert_eq!(code, Some(0), "{out}\n{err}");
    let commands = printed_commands(&out);
    assert_eq!(commands.len(), 3, "{out}");
    assert!(
        commands[0].ends_with(" studio-agents wiggum diff demo"),
        "{commands:?}"
    );
    run_as_printed(&t, &commands);
}

#[test]
fn the_commands_a_detached_start_prints_work_as_printed() {
    let t = TestHome::new();
    let env = format!(
        "FAKE_RELEASE={} FAKE_BLOCK_AT=1",
        t.release_file().display()
    );
    let r = t.start_bg("night", "block", &env, &[]);
    r.code(0);
    let out = r.stdout();
    let commands: Vec<String> = ["status:", "stop:"]
        .iter()
        .map(|label| {
            out.lines()
                .find_map(|l| l.trim_start().strip_prefix(label))
                .unwrap_or_else(|| panic!("no {label} in {out}"))
                .trim()
                .to_string()
        })
        .collect();
    // The test's home is not the default one: the commands name it.
    assert_eq!(
        commands[1],
        format!(
            "STUDIO_AGENTS_HOME={} studio-agents wiggum stop night",
            t.home().display()
        )
    );
    run_as_printed(&t, &commands);
    assert_eq!(t.state()["stop_reason"], "user_stop");
}

#[test]
fn the_example_agent_delegates_a_first_artifact() {
    let t = TestHome::new();
    let task = t.root().join("task.md");
    std::fs::write(&task, "Why is the Monarch tags panel empty?\n").unwrap();
    let agent = examples().join("example-agent.sh").display().to_string();
    t.run(&[
        "delegate",
        "start",
        "monarch",
        &task.display().to_string(),
        "--agent-cmd",
        &agent,
    ])
    .code(0);
    let path = t.run(&["delegate", "artifact-path", "monarch"]).stdout();
    let text = std::fs::read_to_string(path.trim()).unwrap();
    assert!(text.starts_with("# monarch\n\n## Summary"), "{text}");
}
