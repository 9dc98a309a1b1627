//! The detached daemon and its control plane, driven from "other shells".

use std::time::{Duration, Instant};

use crate::support::procs::pid_alive;
use crate::support::wait::scaled;
use crate::support::{TestHome, assert_no_survivors, wait_for};

#[test]
fn start_detaches_fast_and_a_second_start_says_who_holds_the_lock() {
    let t = TestHome::new();
    let r = t.start_bg(
        "bg",
        "block",
        &format!("FAKE_RELEASE={}", t.release_file().display()),
        &[],
    );
    r.code(0);
    // `start` came back while the loop it started goes on: its agent is still blocked on a
    // file nobody has written (no clock involved: a start that waited for the loop would not
    // have returned at all).
    assert!(!t.release_file().exists());
    t.wait_state("the loop to run on after start returned", |s| {
        s["status"] == "planning" || s["status"] == "running"
    });
    let out = r.stdout();
    assert!(
        out.contains("started loop `bg` (pid ") && out.contains("studio-agents wiggum stop bg"),
        "{out}"
    );
    let st = t.wait_state("the agent to run", |s| s["agent_pid"].is_number());
    let daemon_pid = st["pid"].as_i64().unwrap();
    assert!(pid_alive(daemon_pid));

    let again = t.start_bg("bg", "", "", &[]);
    again.code(3);
    assert!(
        again.stderr().contains(&format!("pid {daemon_pid}")),
        "{}",
        again.stderr()
    );

    // status and list from another directory, in text and JSON.
    let elsewhere = t.root().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let mut c = t.cmd(&["wiggum", "list", "--json"]);
    c.current_dir(&elsewhere);
    let list: serde_json::Value = serde_json::from_slice(&c.output().unwrap().stdout).unwrap();
    assert_eq!(list[0]["topic"], "bg");
    assert_eq!(list[0]["pid"], daemon_pid);
    let v = t.status_json("bg");
    assert_eq!(v["status"], "planning");
    assert!(v["agent_rss_bytes"].as_u64().unwrap() > 0, "{v}");
    let text = t.run(&["wiggum", "status", "bg"]);
    assert!(
        text.stdout().contains("planning") && text.stdout().contains(&format!("pid {daemon_pid}"))
    );

    std::fs::write(t.release_file(), "").unwrap();
    t.wait_stopped("bg");
    assert_eq!(t.state()["stop_reason"], "plan_empty");
    assert_no_survivors(&t.token);
}

#[test]
fn stop_kills_a_term_ignoring_grandchild_and_a_setsid_helper() {
    let t = TestHome::new();
    std::fs::create_dir_all(t.wiggum("")).unwrap();
    std::fs::write(t.wiggum("fix_plan.md"), "- [ ] one\n").unwrap();
    t.start_bg("stopme", "spawn,hang", "", &[]).code(0);
    t.wait_state("the agent to run", |s| s["agent_pid"].is_number());
    let pids_file = t.pids_file();
    let pids = wait_for("the agent's helpers", Duration::from_secs(10), || {
        let p = std::fs::read_to_string(&pids_file).unwrap_or_default();
        if p.contains("child ") && p.contains("setsid ") {
            Ok(p)
        } else {
            Err(p)
        }
    });
    let r = t.run(&["wiggum", "stop", "stopme", "--timeout", "1"]);
    r.code(0);
    assert!(
        r.stdout().contains("stopped loop `stopme`"),
        "{}",
        r.stdout()
    );
    // `stop` returned only once the daemon was gone.
    let v = t.status_json("stopme");
    assert!(v["pid"].is_null(), "{v}");
    let st = t.state();
    assert_eq!(st["status"], "stopped");
    assert_eq!(st["stop_reason"], "user_stop");
    for line in pids.lines() {
        let pid: i64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        assert!(!pid_alive(pid), "{line} survived");
    }
    let iters = t.runs("iteration");
    assert_eq!(iters.last().unwrap()["outcome"], "interrupted");
    assert!(
        !t.wiggum("iterations/001-100/iteration-001").exists(),
        "the partial iteration was discarded"
    );
    assert_no_survivors(&t.token);
    t.run(&["wiggum", "stop", "stopme"]).code(3);
}

/// `kill -STOP` each of `pids`, then wait until `status` shows the loop `suspended`.
fn suspend(t: &TestHome, topic: &str, pids: &[i64]) {
    for pid in pids {
        let ok = std::process::Command::new("kill")
            .args(["-STOP", &pid.to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -STOP {pid}");
    }
    wait_for("status suspended", Duration::from_secs(10), || {
        let v = t.status_json(topic);
        if v["status"] == "suspended" {
            Ok(v)
        } else {
            Err(v)
        }
    });
}

/// A supervisor suspended with Ctrl-Z (or `kill -STOP`), and its agent too: `stop` continues
/// them after its SIGTERM, as service managers do, so the stop is graceful and quick instead of
/// a SIGTERM left pending until `stop` gives up.
#[test]
fn stop_reaches_a_suspended_supervisor_and_agent() {
    let t = TestHome::new();
    let daemon = t.blocked_at_first("frozen", "");
    let agent = t.state()["agent_pid"].as_i64().unwrap();
    // Suspended is said as such, not shown as running.
    suspend(&t, "frozen", &[agent, daemon]);
    let shown = t.run(&["wiggum", "status", "frozen"]).stdout();
    assert!(shown.contains(&format!("kill -CONT {daemon}")), "{shown}");
    let r = t.run(&["wiggum", "stop", "frozen", "--timeout", "1"]);
    r.code(0);
    assert!(t.status_json("frozen")["pid"].is_null());
    assert_eq!(t.state()["stop_reason"], "user_stop");
    let log = std::fs::read_to_string(t.wiggum("daemon.log")).unwrap();
    assert!(
        !log.contains("SIGKILL after"),
        "the agent was killed, not stopped: {log}"
    );
    assert_no_survivors(&t.token);
}

/// `stop --after-iteration` of a suspended loop continues it, so the iteration can finish and
/// the stop happen (it waited for ever).
#[test]
fn stop_after_iteration_continues_a_suspended_loop() {
    let t = TestHome::new();
    let daemon = t.blocked_at_first("later", "");
    suspend(&t, "later", &[daemon]);
    let mut stop = t
        .cmd(&["wiggum", "stop", "later", "--after-iteration"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let running = wait_for("the loop to be continued", Duration::from_secs(10), || {
        let v = t.status_json("later");
        if v["status"] == "running" {
            Ok(v)
        } else {
            Err(v)
        }
    });
    std::fs::write(t.release_file(), "").unwrap();
    let done = wait_for("stop to return", Duration::from_secs(30), || {
        match stop.try_wait().unwrap() {
            Some(code) => Ok(code),
            None => Err("still waiting"),
        }
    });
    assert!(done.success(), "{running}");
    let mut out = String::new();
    std::io::Read::read_to_string(&mut stop.stdout.take().unwrap(), &mut out).unwrap();
    assert!(out.contains("was suspended; continued"), "{out}");
    assert_eq!(t.state()["stop_reason"], "user_stop");
    assert_no_survivors(&t.token);
}

/// A relative `STUDIO_AGENTS_HOME` is taken from where the command runs, and the daemon (which
/// runs in `/`) is handed the same home: one home for `start`, its daemon and later commands.
#[test]
fn a_relative_home_is_one_home_for_start_and_its_daemon() {
    let t = TestHome::new();
    std::fs::create_dir_all(t.wiggum("")).unwrap();
    std::fs::write(t.wiggum("fix_plan.md"), "- [ ] one\n").unwrap();
    let home = t.home();
    let dir = home.parent().unwrap();
    let rel = std::path::Path::new(dir.file_name().unwrap()).join("home");
    let args = t.start_args("rel", &t.art(), &t.agent_cmd("", ""), &[]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = t
        .cmd(&args)
        .env("STUDIO_AGENTS_HOME", &rel)
        .current_dir(dir.parent().unwrap())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let st = t.wait_stopped("rel");
    assert_eq!(st["status"], "completed", "{st}");
    assert_no_survivors(&t.token);
}

#[test]
fn stop_after_iteration_lets_the_iteration_finish() {
    let t = TestHome::new();
    let env = format!(
        "FAKE_RELEASE={} FAKE_ITEMS=5 FAKE_BLOCK_AT=1",
        t.release_file().display()
    );
    t.start_bg("after", "block", &env, &[]).code(0);
    t.wait_state("iteration 1 to run", |s| {
        s["current_iteration"] == 1 && s["agent_pid"].is_number()
    });
    let stopper = t.spawn(&["wiggum", "stop", "after", "--after-iteration"]);
    wait_for("the stop request", Duration::from_secs(10), || {
        let c = std::fs::read_to_string(t.wiggum("control.json")).unwrap_or_default();
        if c.contains("\"stop_after_iteration\": true") {
            Ok(())
        } else {
            Err(c)
        }
    });
    std::fs::write(t.release_file(), "").unwrap();
    let out = stopper.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let st = t.state();
    assert_eq!(st["stop_reason"], "user_stop");
    let iters = t.runs("iteration");
    assert_eq!(iters.len(), 1);
    assert_eq!(iters[0]["outcome"], "accepted");
}

#[test]
fn pause_and_resume_take_effect_at_the_iteration_boundary() {
    let t = TestHome::new();
    let env = format!(
        "FAKE_RELEASE={} FAKE_BLOCK_AT=1",
        t.release_file().display()
    );
    t.start_bg("pz", "block", &env, &[]).code(0);
    t.wait_state("iteration 1 to run", |s| {
        s["current_iteration"] == 1 && s["agent_pid"].is_number()
    });
    let r = t.run(&["wiggum", "pause", "pz"]);
    r.code(0);
    assert!(r.stdout().contains("next iteration boundary"));
    // The running iteration is not interrupted by a pause.
    std::fs::write(t.release_file(), "").unwrap();
    let st = t.wait_state("the loop to pause", |s| s["status"] == "paused");
    assert_eq!(st["current_iteration"], 1);
    assert!(st["agent_pid"].is_null());
    assert_eq!(t.runs("iteration").len(), 1);
    assert_eq!(t.status_json("pz")["pause_reason"], "paused by the user");
    // `status` says where it waits, as the pause event does: before the next iteration.
    assert_eq!(st["paused_before"], 2, "{st}");
    let shown = t.run(&["wiggum", "status", "pz"]);
    assert!(
        shown
            .stdout()
            .contains("paused:    paused by the user (before iteration 2)"),
        "{}",
        shown.stdout()
    );
    let events = t.run(&["wiggum", "events", "pz"]);
    assert!(
        events
            .stdout()
            .lines()
            .any(|l| l.contains(r#""event":"pause","iteration":2"#)),
        "{}",
        events.stdout()
    );
    // Pausing a paused loop says so, not that it will pause.
    let again = t.run(&["wiggum", "pause", "pz"]);
    again.code(0);
    assert!(
        again.stdout().contains("is already paused"),
        "{}",
        again.stdout()
    );
    t.run(&["wiggum", "resume", "pz"]).code(0);
    t.wait_stopped("pz");
    assert_eq!(t.state()["stop_reason"], "plan_empty");
    assert!(t.state()["paused_before"].is_null());
    assert_eq!(t.runs("iteration").len(), 3);
}

#[test]
fn what_the_user_writes_while_the_loop_is_paused_stays_theirs() {
    let t = TestHome::new();
    t.blocked_at_first("mine", "");
    t.run(&["wiggum", "pause", "mine"]).code(0);
    std::fs::write(t.release_file(), "").unwrap();
    t.wait_state("the loop to pause", |s| s["status"] == "paused");
    // The user writes under the artifact directory while the loop waits.
    std::fs::write(t.art().join("mine.md"), "my notes\n").unwrap();
    t.run(&["wiggum", "resume", "mine"]).code(0);
    t.wait_stopped("mine");
    assert_eq!(t.runs("iteration").len(), 3);
    let committed = crate::support::git(&t.art(), &["log", "--name-only", "--format="]);
    assert!(!committed.contains("mine.md"), "{committed}");
    let status = crate::support::git(&t.art(), &["status", "--porcelain"]);
    assert!(status.contains("?? mine.md"), "{status}");
    assert_eq!(
        std::fs::read_to_string(t.art().join("mine.md")).unwrap(),
        "my notes\n"
    );
}

#[test]
fn human_review_pauses_before_the_configured_iteration() {
    let t = TestHome::new();
    t.write_home_config("[safety]\nrequire_human_review_at_iteration = 2\n");
    t.start_bg("review", "", "", &[]).code(0);
    let st = t.wait_state("the review pause", |s| s["status"] == "paused");
    assert_eq!(st["current_iteration"], 1);
    assert_eq!(
        t.status_json("review")["pause_reason"],
        "human review before iteration 2"
    );
    t.run(&["wiggum", "resume", "review"]).code(0);
    t.wait_stopped("review");
    assert_eq!(t.state()["stop_reason"], "plan_empty");
}

#[test]
fn kill_9_mid_iteration_then_start_resumes_with_every_commit_intact() {
    let t = TestHome::new();
    t.write_home_config("[safety]\nkill_grace_secs = 1\n");
    let env = format!(
        "FAKE_RELEASE={} FAKE_BLOCK_AT=2",
        t.release_file().display()
    );
    t.start_bg("crashy", "block,spawn,envi", &env, &[]).code(0);
    let st = t.wait_state("iteration 2 to run", |s| {
        s["current_iteration"] == 2 && s["agent_pid"].is_number()
    });
    let daemon = st["pid"].as_i64().unwrap();
    let agent = st["agent_pid"].as_i64().unwrap();
    let scratch = t.tmp().join(format!(
        "studio-agents-{}",
        st["agent_token"].as_str().unwrap()
    ));
    // Its helpers are up once it blocks (it starts them first).
    t.wait_blocked();
    assert!(scratch.is_dir(), "the run's TMPDIR {}", scratch.display());
    let before = t.git_log();
    assert_eq!(before.len(), 2, "planning and iteration 1: {before:?}");
    let grouped = t.state()["harness"]["sandbox"]
        .as_str()
        .unwrap_or_default()
        .contains("a cgroup per run");
    std::process::Command::new("kill")
        .args(["-9", &daemon.to_string()])
        .status()
        .unwrap();
    let v = wait_for("status dead", Duration::from_secs(10), || {
        let v = t.status_json("crashy");
        if v["status"] == "dead" { Ok(v) } else { Err(v) }
    });
    assert!(v["pid"].is_null());
    // The kernel kills the agent's leader with its supervisor (parent-death signal) ...
    wait_for(
        "the agent's leader to die with its supervisor",
        Duration::from_secs(10),
        || {
            if pid_alive(agent) { Err(agent) } else { Ok(()) }
        },
    );
    // ... and helpers it started elsewhere (a setsid'd one, one with a cleared environment) die
    // with the run's cgroup where there is one; elsewhere they are left for the restart to kill.
    let helpers: Vec<i64> = std::fs::read_to_string(t.pids_file())
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("setsid ") || l.starts_with("envi "))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse().ok())
        .collect();
    // Iteration 2's, the last two started (earlier runs' ended with their runs).
    let helpers = helpers[helpers.len().saturating_sub(2)..].to_vec();
    assert_eq!(helpers.len(), 2, "iteration 2 started its two helpers");
    if grouped {
        wait_for(
            "the helpers to die with the run's group",
            Duration::from_secs(2),
            || {
                let alive: Vec<i64> = helpers.iter().copied().filter(|p| pid_alive(*p)).collect();
                if alive.is_empty() { Ok(()) } else { Err(alive) }
            },
        );
    } else {
        assert!(
            helpers.iter().all(|p| pid_alive(*p)),
            "iteration 2's setsid helper and env -i grandchild outlived the dead supervisor"
        );
    }

    // Same topic, no other flags: the registry and the loop's own settings know the rest.
    t.run(&["wiggum", "start", "crashy"]).code(0);
    // The restart first kills what the dead daemon left, then runs iteration 2 afresh.
    let fresh = t.wait_state("a fresh agent for iteration 2", |s| {
        s["current_iteration"] == 2 && s["agent_pid"].is_number() && s["agent_pid"] != agent
    });
    for h in &helpers {
        assert!(
            !pid_alive(*h),
            "the restart killed helper {h} the dead run left"
        );
    }
    assert!(
        !scratch.exists(),
        "the dead run's TMPDIR {} is removed",
        scratch.display()
    );
    assert_ne!(fresh["pid"], daemon);
    std::fs::write(t.release_file(), "").unwrap();
    t.wait_stopped("crashy");
    let st = t.state();
    assert_eq!(st["stop_reason"], "plan_empty", "{st}");
    let after = t.git_log();
    assert_eq!(
        &after[after.len() - 2..],
        &before[..],
        "earlier commits intact"
    );
    assert_eq!(after.len(), 4);
    let iters = t.runs("iteration");
    assert!(
        iters
            .iter()
            .any(|r| r["iteration"] == 2 && r["outcome"] == "interrupted"),
        "{iters:?}"
    );
    let git_status = std::process::Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(t.art())
        .output()
        .unwrap();
    let dirty = String::from_utf8_lossy(&git_status.stdout);
    assert!(!dirty.contains("index.lock"));
    assert_no_survivors(&t.token);
}

#[test]
fn a_corrupt_state_file_is_moved_aside_not_overwritten() {
    let t = TestHome::new();
    std::fs::create_dir_all(t.wiggum("")).unwrap();
    std::fs::write(t.wiggum("state.json"), "{\"topic\": \"x\", garbage").unwrap();
    t.start_fg("corrupt", "", &[]).code(0);
    let aside: Vec<_> = std::fs::read_dir(t.wiggum(""))
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("state.json.corrupt-")
        })
        .collect();
    assert_eq!(aside.len(), 1);
    assert_eq!(
        std::fs::read_to_string(aside[0].path()).unwrap(),
        "{\"topic\": \"x\", garbage"
    );
    assert_eq!(t.state()["stop_reason"], "plan_empty");
}

#[test]
fn a_torn_last_run_record_is_tolerated_on_restart() {
    let t = TestHome::new();
    t.start_fg("torn", "", &["--max-iterations", "1"]).code(0);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(t.wiggum("runs.jsonl"))
        .unwrap();
    std::io::Write::write_all(&mut f, b"{\"record\":\"iteration\",\"iter").unwrap();
    drop(f);
    t.start_fg("torn", "", &["--max-iterations", "3"]).code(0);
    assert_eq!(t.state()["stop_reason"], "plan_empty");
    let done: Vec<_> = t
        .runs("iteration")
        .iter()
        .map(|r| r["iteration"].as_u64().unwrap())
        .collect();
    assert_eq!(done, vec![1, 2, 3]);
}

#[test]
fn a_second_signal_forces_past_the_grace_period() {
    let t = TestHome::new();
    t.write_home_config("[safety]\nkill_grace_secs = 60\n");
    std::fs::create_dir_all(t.wiggum("")).unwrap();
    std::fs::write(t.wiggum("fix_plan.md"), "- [ ] one\n").unwrap();
    let art = t.art().display().to_string();
    let cmd = t.agent_cmd("hang,log-term", "");
    let mut child = t.spawn(&[
        "wiggum",
        "start",
        "force",
        "--artifact-path",
        &art,
        "--agent-cmd",
        &cmd,
        "--foreground",
    ]);
    t.wait_state("the agent to run", |s| s["agent_pid"].is_number());
    let pids_file = t.pids_file();
    wait_for("the agent to trap TERM", Duration::from_secs(10), || {
        let p = std::fs::read_to_string(&pids_file).unwrap_or_default();
        if p.contains("trapped ") {
            Ok(())
        } else {
            Err(p)
        }
    });
    let pid = child.id().to_string();
    std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    wait_for(
        "the agent to get the graceful SIGTERM",
        Duration::from_secs(10),
        || {
            let p = std::fs::read_to_string(&pids_file).unwrap_or_default();
            if p.contains("term ") { Ok(()) } else { Err(p) }
        },
    );
    t.wait_state("status stopping during the grace period", |s| {
        s["status"] == "stopping"
    });
    let begun = Instant::now();
    std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    let status = wait_for(
        "the supervisor to exit",
        Duration::from_secs(15),
        || match child.try_wait() {
            Ok(Some(s)) => Ok(s),
            other => Err(format!("{other:?}")),
        },
    );
    assert!(
        begun.elapsed() < scaled(Duration::from_secs(15)),
        "the 60 s grace was not cut short"
    );
    assert_eq!(status.code(), Some(0), "a requested stop exits 0");
    assert_eq!(t.state()["stop_reason"], "user_stop");
    assert_no_survivors(&t.token);
}

#[test]
fn requests_left_by_a_previous_run_do_not_pause_a_new_start() {
    let t = TestHome::new();
    std::fs::create_dir_all(t.wiggum("")).unwrap();
    std::fs::write(
        t.wiggum("control.json"),
        r#"{"pause": true, "pause_reason": "old", "stop_after_iteration": true}"#,
    )
    .unwrap();
    t.start_fg("fresh", "", &[]).code(0);
    assert_eq!(t.state()["stop_reason"], "plan_empty");
    assert_eq!(t.runs("iteration").len(), 3);
}

#[test]
fn resume_when_not_paused_exits_3_and_a_pending_pause_shows() {
    let t = TestHome::new();
    let env = format!(
        "FAKE_RELEASE={} FAKE_BLOCK_AT=1",
        t.release_file().display()
    );
    t.start_bg("calm", "block", &env, &[]).code(0);
    // Iteration 1's agent (blocked), not planning's: a pause then stays pending.
    t.wait_state("iteration 1", |s| {
        s["current_iteration"] == 1 && s["agent_pid"].is_number()
    });
    let r = t.run(&["wiggum", "resume", "calm"]);
    r.code(3);
    assert!(
        r.stderr().contains("is not paused; nothing to resume"),
        "{}",
        r.stderr()
    );
    t.run(&["wiggum", "pause", "calm"]).code(0);
    let status = t.run(&["wiggum", "status", "calm"]).stdout();
    assert!(status.contains("pause:     requested"), "{status}");
    t.run(&["wiggum", "stop", "calm"]).code(0);
}

#[test]
fn ctrl_c_in_the_foreground_stops_cleanly_and_exits_130() {
    let t = TestHome::new();
    let args = t.start_args(
        "intr",
        &t.art(),
        &t.agent_cmd("hang", ""),
        &["--foreground"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut child = t.spawn(&args);
    t.wait_state("the agent to run", |s| s["agent_pid"].is_number());
    std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let status = wait_for(
        "the supervisor to exit",
        Duration::from_secs(20),
        || match child.try_wait() {
            Ok(Some(s)) => Ok(s),
            other => Err(format!("{other:?}")),
        },
    );
    assert_eq!(status.code(), Some(130));
    assert_eq!(t.state()["stop_reason"], "user_stop");
    assert_no_survivors(&t.token);
}

#[test]
fn a_detached_start_with_nothing_left_to_do_says_the_loop_ended_and_exits_0() {
    let t = TestHome::new();
    t.start_fg("done", "", &[]).code(0);
    assert_eq!(t.status_json("done")["status"], "completed");
    // The daemon ends within milliseconds, after it took its lock: start waits for its first
    // run, sees it end instead, and says so — never "started".
    for _ in 0..3 {
        let r = t.start_bg("done", "", "", &[]);
        r.code(0);
        let out = r.stdout();
        assert!(
            out.contains("loop `done` (pid ")
                && out.contains("ended at once: completed (plan_empty")
                && !out.contains("started"),
            "{out}\n{}",
            r.stderr()
        );
        t.wait_stopped("done");
    }
    assert_no_survivors(&t.token);
}

/// A long `daemon.log` is shifted to `daemon.log.1` when a loop starts, detached or in the
/// foreground (a loop run in the foreground night after night grew it without bound).
#[test]
fn a_long_daemon_log_is_rotated_when_a_loop_starts_either_way() {
    for detached in [false, true] {
        let t = TestHome::new();
        std::fs::create_dir_all(t.wiggum("")).unwrap();
        let old = "an old record of a long-gone night\n".repeat(200_000);
        std::fs::write(t.wiggum("daemon.log"), &old).unwrap();
        if detached {
            t.start_bg("rot", "", "", &[]).code(0);
            t.wait_stopped("rot");
        } else {
            t.start_fg("rot", "", &[]).code(0);
        }
        let kept = std::fs::read_to_string(t.wiggum("daemon.log.1")).unwrap();
        assert_eq!(kept.len(), old.len(), "detached: {detached}");
        let now = std::fs::read_to_string(t.wiggum("daemon.log")).unwrap();
        assert!(
            now.len() < 1024 * 1024 && now.contains("iteration 1"),
            "detached: {detached}: {}",
            &now[..now.len().min(300)]
        );
        assert_no_survivors(&t.token);
    }
}
