//! Survivor checks: every process started under a test carries the test's token in its
//! environment; after the loop, none may be running.

use std::fs;

/// Running (non-zombie) pids whose environment holds `STUDIO_AGENTS_TEST_TOKEN=<token>`.
pub fn with_token(token: &str) -> Vec<(i32, String)> {
    let want = format!("STUDIO_AGENTS_TEST_TOKEN={token}");
    let me = std::process::id() as i32;
    let mut out = Vec::new();
    let Ok(dir) = fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(env) = fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        if !env.split(|b| *b == 0).any(|kv| kv == want.as_bytes()) {
            continue;
        }
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().next())
            .unwrap_or("?");
        if state == "Z" || state == "X" {
            continue;
        }
        let cmd = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        out.push((pid, cmd));
    }
    out
}

/// Fail (after a short settle) when any process of the test is still running.
#[track_caller]
pub fn assert_no_survivors(token: &str) {
    super::wait_for("no survivors", std::time::Duration::from_secs(5), || {
        let left = with_token(token);
        if left.is_empty() { Ok(()) } else { Err(left) }
    });
}

/// Kill every process of the test (cleanup after a failed test).
pub fn kill_all(token: &str) {
    for (pid, _) in with_token(token) {
        let _best_effort = std::process::Command::new("kill")
            .arg("-9")
            .arg(pid.to_string())
            .status();
    }
}

/// Alive and not a zombie.
#[allow(dead_code)]
pub fn pid_alive(pid: i64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().next())
                .map(|st| st != "Z")
        })
        .unwrap_or(false)
}
