//! The known agent CLIs as the harness runs them: their presets unchanged, each program a
//! scripted stand-in under its real name on `PATH` that writes where the real CLI keeps its
//! state and says what it was given. Under the enforced sandbox, with nothing else writable.

use std::path::{Path, PathBuf};

use crate::support::home::Run;
use crate::support::*;

/// A stand-in for `name` (claude, codex, gemini): it reads the prompt, writes into its state
/// directory as the real CLI would (failing with the CLI's own EACCES line when it cannot),
/// records the variables it was given there, and does the loop's work: one plan item, done in
/// the first iteration.
fn stand_in(t: &TestHome, name: &str) -> PathBuf {
    let bin = t.root().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = format!(
        r#"#!/bin/sh
cat > /dev/null
case "{name}" in
codex) state="${{CODEX_HOME:-$HOME/.codex}}" ;;
claude) state="${{CLAUDE_CONFIG_DIR:-$HOME/.claude}}" ;;
gemini) state="${{GEMINI_CLI_HOME:-$HOME}}/.gemini" ;;
esac
if ! mkdir -p "$state/session-env" 2>/dev/null || ! echo "$WIGGUM_PHASE" >> "$state/session-env/phases"; then
    echo "Error: EACCES: permission denied, mkdir '$state/session-env'" >&2
    exit 1
fi
env | grep -E '^(IS_SANDBOX|GEMINI_CLI_TRUST_WORKSPACE|DISABLE_TELEMETRY|DISABLE_AUTOUPDATER|DO_NOT_TRACK)=' | sort > "$state/session-env/env-$WIGGUM_PHASE"
plan="$WIGGUM_DIR/fix_plan.md"
case "$WIGGUM_PHASE" in
planning) printf '# Plan\n\n- [ ] Explain the cause\n' > "$plan" ;;
iteration)
    printf '\n## Cause\n\nThe role lost a permission in the last release, so the panel stays empty.\n' >> "$ITERATION_DIR/artifact.md"
    sed -i 's/- \[ \] Explain the cause/- [x] Explain the cause/' "$plan"
    ;;
revision) cat "$ITERATION_DIR/artifact.md" ;;
esac
"#
    );
    let path = bin.join(name);
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    bin
}

/// `start <name> --agent <name>` in the foreground, the stand-in first on `PATH`.
fn run_preset(t: &TestHome, name: &str, env: &[(&str, &str)]) -> Run {
    let bin = stand_in(t, name);
    // Nothing but the loop's own directories is writable: not the test's root (the home).
    t.write_home_config_raw("");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let args = t.start_args(
        name,
        &t.art(),
        "",
        &["--agent", name, "--foreground", "--pass-threshold", "0"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut all = vec![("PATH", path.as_str())];
    all.extend_from_slice(env);
    t.run_with(&args, &all)
}

fn phases(state: &Path) -> String {
    std::fs::read_to_string(state.join("session-env/phases")).unwrap_or_default()
}

/// Where a path of the home is seen by the loop's runs: its layer (the home's overlay, whose
/// upper layer lies under `/var/tmp` when the temp dir is in the home, as the test kit's is).
/// The user's own path never changes.
fn layered(t: &TestHome, path: &Path) -> PathBuf {
    let records = t.records("");
    let key = records.file_name().unwrap();
    let uid = nix::unistd::geteuid().as_raw();
    Path::new(&format!("/var/tmp/studio-agents-homes-{uid}"))
        .join(key)
        .join("upper")
        .join(path.strip_prefix(t.root()).unwrap())
}

/// The loop's layer goes with the test.
fn drop_layer(t: &TestHome) {
    let upper = layered(t, &t.root());
    let _gone = std::fs::remove_dir_all(upper.parent().unwrap());
}

#[test]
fn codex_writes_where_codex_home_moved_its_state_and_the_directory_is_made() {
    let t = TestHome::new();
    let moved = t.root().join("elsewhere/codex-state");
    let r = run_preset(&t, "codex", &[("CODEX_HOME", &moved.display().to_string())]);
    r.code(0);
    assert_eq!(
        phases(&layered(&t, &moved)),
        "planning\niteration\n",
        "{}",
        r.stdout()
    );
    assert_eq!(phases(&moved), "", "the user's own state changed");
    assert!(!t.root().join(".codex").exists());
    drop_layer(&t);
}

#[test]
fn claude_gets_a_state_directory_that_did_not_exist_and_its_opt_outs() {
    let t = TestHome::new();
    let state = t.root().join(".claude");
    assert!(!state.exists());
    let r = run_preset(
        &t,
        "claude",
        &[
            ("DISABLE_TELEMETRY", "1"),
            ("DISABLE_AUTOUPDATER", "1"),
            ("DO_NOT_TRACK", "1"),
        ],
    );
    r.code(0);
    // The state directory is made for it in the user's home; what it writes there lands in the
    // loop's layer.
    assert!(state.is_dir() && !state.join("session-env").exists());
    let seen = layered(&t, &state);
    assert_eq!(phases(&seen), "planning\niteration\n", "{}", r.stdout());
    let env = std::fs::read_to_string(seen.join("session-env/env-iteration")).unwrap();
    drop_layer(&t);
    let mut want = "DISABLE_AUTOUPDATER=1\nDISABLE_TELEMETRY=1\nDO_NOT_TRACK=1\n".to_string();
    // As root, claude refuses to skip its prompts unless it is told it runs in a sandbox.
    if nix::unistd::geteuid().is_root() {
        want.push_str("IS_SANDBOX=1\n");
    }
    assert_eq!(env, want);
}

#[test]
fn claude_config_dir_and_gemini_cli_home_move_their_state_too() {
    let t = TestHome::new();
    let moved = t.root().join("claude-config");
    run_preset(
        &t,
        "claude",
        &[("CLAUDE_CONFIG_DIR", &moved.display().to_string())],
    )
    .code(0);
    assert_eq!(phases(&layered(&t, &moved)), "planning\niteration\n");
    assert_eq!(phases(&moved), "");
    drop_layer(&t);

    let t = TestHome::new();
    let home = t.root().join("gemini-home");
    let r = run_preset(
        &t,
        "gemini",
        &[("GEMINI_CLI_HOME", &home.display().to_string())],
    );
    r.code(0);
    let state = layered(&t, &home.join(".gemini"));
    assert_eq!(phases(&state), "planning\niteration\n", "{}", r.stdout());
    assert_eq!(phases(&home.join(".gemini")), "");
    // gemini refuses an untrusted folder (exit 55) unless the workspace is trusted.
    let env = std::fs::read_to_string(state.join("session-env/env-planning")).unwrap();
    drop_layer(&t);
    assert_eq!(env, "GEMINI_CLI_TRUST_WORKSPACE=true\n");
}

#[test]
fn a_failed_run_says_the_clis_own_last_error_and_exit_code() {
    let t = TestHome::new();
    let script = t.root().join("refuses.sh");
    std::fs::write(
        &script,
        "cat > /dev/null\necho 'Loading settings'\necho '--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons' >&2\nexit 1\n",
    )
    .unwrap();
    let cmd = format!("sh {}", script.display());
    let args = t.start_args("refused", &t.art(), &cmd, &["--foreground"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = t.run(&args);
    r.code(1);
    let said = "exit 1: --dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons";
    let out = r.stdout();
    assert!(
        out.contains("Planning ✗ crashed · ") && out.contains(&format!(" · {said}\n")),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "  reason      planning failed 3 times; the last: {said}\n"
        )),
        "{out}"
    );
    let status = t.run(&["wiggum", "status", "refused"]).stdout();
    assert!(status.contains(said), "{status}");
}

#[test]
fn a_run_killed_at_the_wall_limit_is_called_timed_out() {
    let t = TestHome::new();
    t.write_home_config("[safety]\nmax_time_per_iteration = 1\nmax_crash_retries = 0\n");
    let r = t.start_fg("slowpoke", "hang", &[]);
    r.code(1);
    let out = r.stdout();
    assert!(
        out.contains("Planning ✗ timed out · ")
            && out
                .contains("timed out: killed at the wall limit ([safety] max_time_per_iteration)"),
        "{out}"
    );
    assert!(!out.contains("crashed"), "{out}");
}
