//! The harness around an agent: a built environment, Landlock confinement of writes and TCP
//! connections, protected files, ceilings, liveness, records out of the agent's sight. Tests
//! that need Landlock skip, loudly, only on a kernel without it.

use std::time::Duration;

use crate::support::{TestHome, assert_no_survivors, wait::scaled};

/// The Landlock ABI this kernel offers (0: none), as the binary's own probe reports it.
fn landlock_abi(t: &TestHome) -> u64 {
    let policy = r#"{"mode":"landlock","writable":["/dev/null"],"readable":null,"ports":[],"max_cpu_secs":0,"max_open_files":0}"#;
    let r = t.run(&["sandbox-exec", "--probe", "--policy", policy]);
    // A probe that breaks fails the tests that need it; only a kernel without Landlock skips.
    let v: serde_json::Value = serde_json::from_str(&r.stdout()).unwrap_or_else(|e| {
        panic!(
            "the sandbox probe's answer: {e}: {}{}",
            r.stdout(),
            r.stderr()
        )
    });
    let abi = v["abi"]
        .as_u64()
        .unwrap_or_else(|| panic!("the sandbox probe names no ABI: {v}"));
    if abi == 0 {
        let lsm = std::fs::read_to_string("/sys/kernel/security/lsm").unwrap_or_default();
        assert!(
            !lsm.split(',').any(|m| m.trim() == "landlock"),
            "the kernel runs Landlock ({lsm}) but the probe found none: {v}"
        );
        eprintln!("SKIPPED: this kernel has no Landlock ({})", r.stdout());
    }
    abi
}

/// The leader of a confined run is the small helper beside the executable; one left from
/// another version hands the run to `studio-agents sandbox-exec` beside it (whose policy it
/// is), and one alone says what is missing.
#[test]
fn the_small_helper_runs_the_command_and_one_of_another_version_hands_it_over() {
    let policy = r#"{"mode":"landlock","writable":["/dev/null"],"readable":null,"ports":[],"max_cpu_secs":0,"max_open_files":0}"#;
    let run = |exe: &std::path::Path, build: &str| {
        std::process::Command::new(exe)
            .args(["--build", build, "--policy", policy, "--", "/bin/sh", "-c"])
            .arg("echo confined by $0")
            .output()
            .unwrap()
    };
    let small = std::path::PathBuf::from(env!("CARGO_BIN_EXE_studio-agents-sandbox"));
    let ours = run(&small, env!("CARGO_PKG_VERSION"));
    assert_eq!(
        String::from_utf8_lossy(&ours.stdout),
        "confined by /bin/sh\n",
        "{ours:?}"
    );
    // Another version's: the whole executable beside it runs the command.
    let other = run(&small, "0.0.1");
    assert_eq!(
        String::from_utf8_lossy(&other.stdout),
        "confined by /bin/sh\n",
        "{other:?}"
    );
    // Alone, from another version: refused, naming what is missing.
    let t = TestHome::new();
    let alone = t.root().join("studio-agents-sandbox");
    std::fs::copy(&small, &alone).unwrap();
    let out = run(&alone, "0.0.1");
    assert_eq!(out.status.code(), Some(126), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with("studio-agents-sandbox: cannot execute "),
        "{out:?}"
    );
}

#[test]
fn the_agent_sees_only_the_allowed_environment() {
    let t = TestHome::new();
    t.write_home_config("[safety]\nenv_allow = [\"MY_*\"]\n");
    let args = t.start_args(
        "env",
        &t.art(),
        &t.agent_cmd("dump-env", ""),
        &["--foreground", "--max-iterations", "1"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let planted = [
        ("AWS_SECRET_ACCESS_KEY", "planted-secret"),
        ("GITHUB_TOKEN", "planted-token"),
        ("MY_SETTING", "allowed"),
    ];
    t.run_with(&args, &planted).code(0);
    let env = std::fs::read_to_string(t.root().join("env-1")).unwrap();
    assert!(
        !env.contains("planted-secret") && !env.contains("GITHUB_TOKEN"),
        "{env}"
    );
    assert!(env.contains("MY_SETTING=allowed"), "{env}");
    assert!(
        env.contains("WIGGUM_PHASE=iteration") && env.contains("TMPDIR="),
        "{env}"
    );
    assert!(!env.contains("STUDIO_AGENTS_HOME"), "{env}");
    // Names only, never values, in the run record and the state.
    let rec = &t.runs("iteration")[0];
    let names: Vec<&str> = rec["env_passed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(names.contains(&"MY_SETTING") && !names.contains(&"AWS_SECRET_ACCESS_KEY"));
    assert!(!rec.to_string().contains("allowed"), "{rec}");
    let status = t.run(&["wiggum", "status", "env"]).stdout();
    assert!(
        status.contains("agent env:") && status.contains("MY_SETTING"),
        "{status}"
    );
}

#[test]
fn runs_of_a_detached_loop_do_not_inherit_the_daemons_own_markers() {
    // A `studio-agents` that an agent or a validation command starts must be a start of its
    // own, not believe it is the daemon.
    let t = TestHome::new();
    let checked = t.root().join("validation-env");
    t.write_home_config(&format!(
        "[validation]\ncommands = [\"env > {}\"]\n",
        checked.display()
    ));
    t.start_bg("markers", "dump-env", "", &["--max-iterations", "1"])
        .code(0);
    t.wait_stopped("markers");
    for file in [t.root().join("env-1"), checked] {
        let env = std::fs::read_to_string(&file).unwrap();
        assert!(
            !env.contains("STUDIO_AGENTS_DAEMON") && !env.contains("STUDIO_AGENTS_PROBED_HARNESS"),
            "{}: {env}",
            file.display()
        );
    }
    let status = t.run(&["wiggum", "status", "markers"]).stdout();
    assert!(!status.contains("STUDIO_AGENTS_DAEMON"), "{status}");
}

#[test]
fn writes_outside_the_repository_are_refused_by_the_kernel() {
    let t = TestHome::new();
    if landlock_abi(&t) == 0 {
        return;
    }
    // No extra writable roots: the scripted agent's bookkeeping beside the test fails too.
    t.write_home_config_raw("");
    let r = t.start_fg("jail", "escape", &["--max-iterations", "1"]);
    r.code(0);
    assert!(
        r.stderr().contains("sandbox: landlock ABI"),
        "{}",
        r.stderr()
    );
    let log = std::fs::read_to_string(t.art().join("escape.log")).unwrap();
    // The home is refused, or — where the run has a mount namespace — its layer took the write;
    // the user's file is never written either way (below).
    assert!(
        (log.contains("home: denied") || log.contains("home: written"))
            && log.contains("tmp: denied"),
        "{log}"
    );
    assert!(log.contains("Permission denied"), "{log}");
    assert!(
        log.contains("tmpdir: written") && log.contains("inside: written"),
        "{log}"
    );
    assert!(!t.root().join("outside.txt").exists());
    // The write inside landed and was committed.
    let files = crate::support::git(&t.art(), &["show", "--name-only", "--format=", "HEAD"]);
    assert!(files.contains("inside.txt"), "{files}");
    let st = t.status_json("jail");
    assert!(
        st["state"]["harness"]["sandbox"]
            .as_str()
            .unwrap()
            .contains("enforced"),
        "{st}"
    );
}

/// A repository at `~` (as some keep their dotfiles): the agent may write the artifact
/// directory, not the whole home the work tree spans — nor `$STUDIO_AGENTS_HOME` in it.
#[test]
fn a_repository_at_home_does_not_open_the_home_to_the_agent() {
    let t = TestHome::new();
    if landlock_abi(&t) == 0 {
        return;
    }
    t.write_home_config_raw("");
    let root = t.root();
    crate::support::git(&root, &["init", "-q"]);
    std::fs::write(root.join(".gitignore"), "home/\ntmp/\npids.txt\n.fake-*\n").unwrap();
    crate::support::git(&root, &["add", ".gitignore"]);
    crate::support::git(&root, &["commit", "-qm", "dotfiles"]);
    let r = t.start_fg("dots", "escape", &["--max-iterations", "1"]);
    r.code(0);
    let log = std::fs::read_to_string(t.art().join("escape.log")).unwrap();
    // The home is refused, or taken by the loop's layer: the user's file is never written.
    assert!(
        (log.contains("home: denied") || log.contains("home: written"))
            && log.contains("inside: written"),
        "{log}"
    );
    assert!(!root.join("outside.txt").exists());
    let st = t.status_json("dots");
    let writable = st["state"]["harness"]["writable"].to_string();
    assert!(
        writable.contains(&*t.art().display().to_string())
            && !writable.contains(&format!("\"{}\"", root.display())),
        "{writable}"
    );
}

fn tamper(sandbox: &str) {
    let t = TestHome::new();
    t.write_home_config(&format!("[safety]\nsandbox = \"{sandbox}\"\n"));
    let r = t.start_bg("tamper", "tamper", "FAKE_AT=1", &["--foreground"]);
    r.code(0);
    let hook = t.art().join(".git/hooks/pre-commit");
    assert!(!hook.exists(), "the planted hook was removed");
    assert!(
        !t.art().join(".git/config.worktree").exists(),
        "the planted config.worktree was removed"
    );
    let st = t.state();
    assert_eq!(
        st["stop_reason"], "plan_empty",
        "the state was restored: {st}"
    );
    let first = &t.runs("iteration")[0];
    assert_eq!(first["outcome"], "rejected", "{first}");
    let changed: Vec<&str> = first["protected_changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let sandbox = st["harness"]["sandbox"].as_str().unwrap().to_string();
    if sandbox.contains("read-only") {
        // In the run's mount namespace the whole `.git` is read-only to the agent: its writes
        // failed, nothing to restore; the state file is replaced by the supervisor, so it is
        // checked instead.
        assert_eq!(changed, ["wiggum/state.json"], "{sandbox}");
        // The rejected attempt's records are kept aside with it.
        let aside = std::fs::read_dir(t.records("discarded"))
            .unwrap()
            .flatten()
            .find(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("iteration-001.rejected.")
            })
            .expect("the rejected attempt's records are kept");
        let log = std::fs::read_to_string(aside.path().join("agent.log")).unwrap();
        assert!(log.contains("Read-only file system"), "{log}");
        return;
    }
    assert_eq!(
        changed,
        [
            ".git/config.worktree",
            "hooks/pre-commit",
            "wiggum/state.json"
        ]
    );
    assert!(!t.art().join(".git/config.worktree").exists());
    let status = t.run(&["wiggum", "status", "tamper"]).stdout();
    assert!(
        status.contains("caught:") && status.contains("hooks/pre-commit"),
        "{status}"
    );
}

#[test]
fn a_planted_hook_and_a_garbled_state_are_restored_and_the_iteration_rejected() {
    tamper("landlock");
}

#[test]
fn protected_files_are_restored_with_the_sandbox_off_too() {
    tamper("off");
}

#[test]
fn tcp_connections_follow_the_network_rule() {
    let t = TestHome::new();
    if landlock_abi(&t) < 4 {
        eprintln!("SKIPPED: network rules need Landlock ABI 4");
        return;
    }
    let a = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let b = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let (pa, pb) = (
        a.local_addr().unwrap().port(),
        b.local_addr().unwrap().port(),
    );
    let ports = format!("FAKE_PORTS=\"{pa} {pb}\"");
    for (rule, want_a, want_b) in [
        ("\"none\"".to_string(), "13", "13"),
        (format!("[{pa}]"), "0", "13"),
        ("\"any\"".to_string(), "0", "0"),
    ] {
        std::fs::remove_dir_all(t.art().join("wiggum")).ok();
        std::fs::remove_dir_all(t.art().join(".git")).ok();
        t.write_home_config(&format!("[safety]\nnetwork = {rule}\n"));
        t.start_bg(
            "net",
            "net",
            &ports,
            &["--foreground", "--max-iterations", "1"],
        )
        .code(0);
        let log = std::fs::read_to_string(t.art().join("net.log")).unwrap();
        assert!(
            log.contains(&format!("{pa} {want_a}\n")) && log.contains(&format!("{pb} {want_b}\n")),
            "network = {rule}: {log}"
        );
    }
}

#[test]
fn a_memory_hog_is_killed_at_the_ceiling_and_not_retried() {
    let t = TestHome::new();
    t.write_home_config("[safety]\nmax_memory_mb = 64\n");
    let r = t.start_bg("hog", "hog", "FAKE_MB=400", &["--foreground"]);
    r.code(1);
    let iters = t.runs("iteration");
    assert_eq!(iters.len(), 1, "not retried: {iters:?}");
    assert_eq!(iters[0]["agent_exit"]["kind"], "memory_limit");
    let st = t.state();
    assert_eq!(st["stop_reason"], "breaker");
    assert!(
        st["stop_detail"]
            .as_str()
            .unwrap()
            .contains("memory ceiling"),
        "{st}"
    );
    assert_no_survivors(&t.token);
}

#[test]
fn a_run_printing_past_the_output_ceiling_is_killed_and_its_log_cut() {
    let t = TestHome::new();
    t.write_home_config("[safety]\nmax_log_mb = 1\nmax_crash_retries = 1\n");
    t.start_fg("spew", "spew", &[]).code(1);
    let iters = t.runs("iteration");
    assert_eq!(iters.len(), 2, "retried once, then the breaker: {iters:?}");
    assert!(
        iters
            .iter()
            .all(|i| i["agent_exit"]["kind"] == "output_limit"),
        "{iters:?}"
    );
    assert_eq!(t.state()["stop_reason"], "breaker");
    // Each discarded attempt's log: cut back to the ceiling, with the note at its end.
    let note = b"[studio-agents: the output past 1 MB was cut off ([safety] max_log_mb)]\n";
    let attempts: Vec<_> = std::fs::read_dir(t.records("discarded"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("agent.log"))
        .collect();
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    for a in attempts {
        let log = std::fs::read(&a).unwrap();
        assert!(log.ends_with(note), "{a:?}");
        assert!(
            log.len() <= (1 << 20) + note.len() + 1,
            "{a:?}: {}",
            log.len()
        );
    }
    assert_no_survivors(&t.token);
}

#[test]
fn a_silent_agent_ends_as_idle() {
    let t = TestHome::new();
    t.write_home_config(
        "[safety]\nmax_idle_secs = 2\nmax_time_per_iteration = 120\nmax_crash_retries = 0\nkill_grace_secs = 1\n",
    );
    std::fs::create_dir_all(t.wiggum("")).unwrap();
    std::fs::write(t.wiggum("fix_plan.md"), "- [ ] one\n").unwrap();
    let begun = std::time::Instant::now();
    t.start_fg("idle", "hang", &[]).code(1);
    assert!(
        begun.elapsed() < scaled(Duration::from_secs(30)),
        "{:?}",
        begun.elapsed()
    );
    let iters = t.runs("iteration");
    assert_eq!(iters[0]["agent_exit"]["kind"], "idle", "{iters:?}");
    assert_no_survivors(&t.token);
}

#[test]
fn an_agent_that_deletes_wiggum_ends_the_loop_with_a_reason() {
    let t = TestHome::new();
    let r = t.start_fg_plain("gone", "rm-wiggum");
    r.code(1);
    assert!(r.stderr().contains("the agent deleted"), "{}", r.stderr());
    // The file watch's own complaints about the vanished directories stay in the log.
    assert!(!r.stderr().contains("WARN"), "{}", r.stderr());
    let st = t.state();
    assert_eq!(st["status"], "failed");
    assert!(
        st["stop_detail"]
            .as_str()
            .unwrap()
            .contains("git checkout -- wiggum"),
        "{st}"
    );
    assert!(
        !t.runs("planning").is_empty(),
        "the run records were restored"
    );
}

/// Before the loop's first commit (a plan of the user's own: no planning run), git holds none
/// of `wiggum/`: the way on that the loop's end names is not `git checkout`.
#[test]
fn an_agent_that_moves_wiggum_before_its_first_commit_is_told_what_git_cannot_give_back() {
    let t = TestHome::new();
    std::fs::create_dir_all(t.wiggum("")).unwrap();
    std::fs::write(t.wiggum("fix_plan.md"), "- [ ] Improve part 1\n").unwrap();
    let script = t.root().join("move.sh");
    std::fs::write(
        &script,
        "mv \"$WIGGUM_DIR\" \"$WIGGUM_DIR.moved\" && ln -s wiggum.moved \"$WIGGUM_DIR\"\n",
    )
    .unwrap();
    let env = format!("FAKE_ATTACK={} FAKE_AT=1", script.display());
    let r = t.start_with_env("moved", "attack", &env, &[]);
    r.code(1);
    let st = t.state();
    let detail = st["stop_detail"].as_str().unwrap();
    assert!(detail.contains("the agent deleted"), "{st}");
    assert!(
        detail.contains("never committed") && !detail.contains("git checkout"),
        "{st}"
    );
    // What the agent moved is where it moved it; nothing of it was taken.
    assert!(t.art().join("wiggum.moved/fix_plan.md").is_file());
}

#[test]
fn an_agent_that_deletes_wiggum_in_a_revision_round_ends_the_loop_the_same_way() {
    let t = TestHome::new();
    let args = t.start_args(
        "gone2",
        &t.art(),
        &t.agent_cmd("rm-wiggum-revision", ""),
        &["--foreground", "--pass-threshold", "10"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = t.run_with(&args, &[("STUDIO_AGENTS_LOG", "")]);
    r.code(1);
    assert!(r.stderr().contains("the agent deleted"), "{}", r.stderr());
    let st = t.state();
    assert_eq!(st["status"], "failed", "{st}");
    assert!(
        st["stop_detail"]
            .as_str()
            .unwrap()
            .contains("git checkout -- wiggum"),
        "{st}"
    );
    // Nothing of the iteration was committed: HEAD is the planning commit.
    let subject = crate::support::git(&t.art(), &["log", "-1", "--format=%s"]);
    assert!(subject.starts_with("Wiggum planning"), "{subject}");
}

#[test]
fn a_later_agent_cannot_find_an_earlier_agents_log_in_its_workspace() {
    let t = TestHome::new();
    t.start_fg("records", "marker", &["--max-iterations", "2"])
        .code(0);
    // Iteration 1 printed the marker; its log holds it, outside the workspace.
    let log = std::fs::read_to_string(t.records("iteration-001/agent.log")).unwrap();
    assert!(log.contains("MARKER-1-secret"));
    assert!(!t.records("").starts_with(t.art()));
    let found = std::fs::read_to_string(t.root().join("found-2")).unwrap();
    assert_eq!(found.trim(), "0", "iteration 2 found iteration 1's output");
}

/// A loop of `iterations` runs of a script that records its own pid, started with `command`
/// (`{script}` stands for the script's path); the pids the script saw, and the supervisor's log.
fn own_pids(t: &TestHome, command: &str, iterations: &str) -> (Vec<String>, String) {
    let script = t.root().join("pid-agent.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\ncat > /dev/null\necho $$ >> \"$ARTIFACT_PATH/pids.txt\"\necho \"- step $$\" >> \"$ARTIFACT_PATH/notes.md\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let cmd = command.replace("{script}", &script.display().to_string());
    // A plan already there: no planning run.
    std::fs::create_dir_all(t.wiggum("")).unwrap();
    if !t.wiggum("fix_plan.md").exists() {
        let items: String = (1..=9).map(|i| format!("- [ ] step {i}\n")).collect();
        std::fs::write(t.wiggum("fix_plan.md"), format!("# Plan\n\n{items}")).unwrap();
    }
    let args = t.start_args(
        "pids",
        &t.art(),
        &cmd,
        &["--foreground", "--max-iterations", iterations],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    t.run(&args);
    let pids = std::fs::read_to_string(t.art().join("pids.txt")).unwrap_or_default();
    let log = std::fs::read_to_string(t.wiggum("daemon.log")).unwrap_or_default();
    (pids.lines().map(str::to_string).collect(), log)
}

/// The pids the supervisor's log names for its runs (`… (pid N) exited …`).
fn logged_pids(log: &str) -> Vec<String> {
    log.lines()
        .filter_map(|l| l.split("(pid ").nth(1)?.split(')').next())
        .map(str::to_string)
        .collect()
}

#[test]
fn a_command_that_is_one_program_runs_in_the_shells_place_and_any_other_as_the_shell_runs_it() {
    let t = TestHome::new();
    // Each run's process (iterations and revision rounds) is the agent.
    let (seen, log) = own_pids(&t, "{script} --flag 'two words'", "2");
    assert!(seen.len() >= 2, "{log}");
    assert_eq!(logged_pids(&log), seen, "{log}");
    let t = TestHome::new();
    let (seen, log) = own_pids(&t, "{script} && true", "2");
    assert!(seen.len() >= 2, "{log}");
    let logged = logged_pids(&log);
    assert_eq!(logged.len(), seen.len(), "{log}");
    assert!(
        logged.iter().all(|p| !seen.contains(p)),
        "a list runs in the shell, which starts the agent: {log}"
    );
}

#[test]
fn the_loop_leaves_no_crash_record_spare_or_copy_of_the_users_document() {
    let t = TestHome::new();
    let (seen, log) = own_pids(&t, "{script}", "3");
    assert!(seen.len() >= 3, "{log}");
    let records = t.records("");
    // Nothing held for a start to put back, and no copy of the user's document left.
    for name in ["protected.json", "original.md", "original.mode"] {
        assert!(!records.join(name).exists(), "{name}");
    }
    let spares = |dir: &std::path::Path| -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp") || n.contains("fix_plan.attempt"))
            .collect()
    };
    assert!(spares(&records).is_empty(), "{:?}", spares(&records));
    assert!(
        spares(&t.wiggum("")).is_empty(),
        "{:?}",
        spares(&t.wiggum(""))
    );
    // A start after it finds nothing to put back, and the original as the user left it.
    let before = std::fs::read(t.art().join("artifact.md")).unwrap();
    let (again, log) = own_pids(&t, "{script}", "4");
    assert!(again.len() > seen.len(), "one iteration more: {log}");
    assert!(!log.contains("put back as it was"), "{log}");
    assert_eq!(std::fs::read(t.art().join("artifact.md")).unwrap(), before);
}

/// What an agent puts where an earlier version kept the attempt's plan (in its reach) neither
/// ends the loop nor is written through nor sets the plan a discarded attempt puts back.
#[test]
fn a_plant_at_the_attempts_old_plan_file_neither_fails_the_loop_nor_sets_the_plan() {
    let t = TestHome::new();
    let victim = t.root().join("victim.md");
    std::fs::write(
        &victim,
        "# fix_plan.md as the attempt found it\n- [x] theirs\n",
    )
    .unwrap();
    let script = t.root().join("plant.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ncat > /dev/null\nif [ ! -e \"$ARTIFACT_PATH/planted\" ]; then\n  touch \"$ARTIFACT_PATH/planted\"\n  ln -s {} \"$ARTIFACT_PATH/wiggum/.fix_plan.attempt\"\n  exit 1\nfi\necho \"- step\" >> \"$ARTIFACT_PATH/notes.md\"\n",
            victim.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(t.wiggum("")).unwrap();
    let plan = "# Plan\n\n- [ ] one\n- [ ] two\n";
    std::fs::write(t.wiggum("fix_plan.md"), plan).unwrap();
    let args = t.start_args(
        "plant",
        &t.art(),
        &script.display().to_string(),
        &["--foreground", "--max-iterations", "2"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    t.run(&args).code(0);
    let st = t.state();
    assert_ne!(st["status"], "failed", "{st}");
    assert!(
        std::fs::read_to_string(t.wiggum("fix_plan.md"))
            .unwrap()
            .contains("- [ ] two"),
        "the plan is the loop's, not the plant's"
    );
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "# fix_plan.md as the attempt found it\n- [x] theirs\n"
    );
}
