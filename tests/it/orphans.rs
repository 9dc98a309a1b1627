//! Where the kernel kills no agent with its supervisor (macOS has no parent-death signal and no
//! cgroups), the watcher beside the supervisor does: it polls its parent, the same way on every
//! platform, and stops the agent tree the state names. Forced here on Linux.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::procs::pid_alive;
use crate::support::{TestHome, wait_for};

#[test]
fn the_watcher_stops_the_agent_the_state_names_when_its_supervisor_dies_outright() {
    let t = TestHome::new();
    let token = format!("orphan-test-{}", std::process::id());
    // An agent's tree: its leader in a group of its own, a helper in that group, and one that
    // left for a session of its own (found by the token in its environment).
    let pids = t.root().join("agent-pids");
    let agent = Command::new("setsid")
        .args([
            "sh",
            "-c",
            "sleep 1000 & echo $! > \"$1\"; setsid sleep 1000 & echo $! >> \"$1\"; wait",
            "agent",
        ])
        .arg(&pids)
        .env("STUDIO_AGENTS_RUN", &token)
        .env("STUDIO_AGENTS_TEST_TOKEN", &t.token)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let leader = i64::from(agent.id());
    let helpers: Vec<i64> = wait_for("the agent's helpers", Duration::from_secs(10), || {
        let got: Vec<i64> = std::fs::read_to_string(&pids)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        if got.len() == 2 { Ok(got) } else { Err(got) }
    });
    let state = t.root().join("state.json");
    std::fs::write(
        &state,
        format!(
            r#"{{"topic":"o","status":"running","agent_pid":{leader},"agent_pgid":{leader},"agent_token":"{token}"}}"#
        ),
    )
    .unwrap();
    // The supervisor: a process whose child is the watcher, killed outright.
    let bin = env!("CARGO_BIN_EXE_studio-agents");
    let mut supervisor = Command::new("sh")
        .args([
            "-c",
            "\"$1\" cgroup-watch --parent $$ --state \"$2\" & exec sleep 1000",
            "supervisor",
            bin,
        ])
        .arg(&state)
        .env("STUDIO_AGENTS_TEST_TOKEN", &t.token)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let parent = supervisor.id().to_string();
    wait_for("the watcher to run", Duration::from_secs(10), || {
        let watching = std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            cmd.contains("cgroup-watch") && cmd.contains(&format!("--parent {parent} "))
        });
        if watching { Ok(()) } else { Err(()) }
    });
    assert!(pid_alive(leader) && helpers.iter().all(|p| pid_alive(*p)));
    supervisor.kill().unwrap();
    supervisor.wait().unwrap();
    wait_for(
        "the agent's whole tree to be stopped",
        Duration::from_secs(10),
        || {
            let left: Vec<i64> = std::iter::once(leader)
                .chain(helpers.iter().copied())
                .filter(|p| pid_alive(*p))
                .collect();
            if left.is_empty() { Ok(()) } else { Err(left) }
        },
    );
    let mut agent = agent;
    agent.wait().unwrap();
}
