//! Confinement with no side doors: what Landlock's filesystem rules do not name. Each test has a
//! scripted agent try a side door and checks what the user would lose.

use std::os::unix::net::UnixListener;
use std::time::Duration;

use crate::support::*;

/// Write the attack script the fake agent runs (`FAKE=attack`) and return its environment.
pub(crate) fn attack(t: &TestHome, script: &str) -> String {
    let p = t.root().join("attack.sh");
    std::fs::write(&p, script).unwrap();
    format!("FAKE_ATTACK={}", p.display())
}

/// Run one iteration of a loop whose agent runs `script`; returns what it wrote to `out.txt`.
fn run_attack(t: &TestHome, topic: &str, script: &str, env: &[(&str, &str)]) -> String {
    let env_line = attack(
        t,
        &format!("{{\n{script}\n}} > \"$ARTIFACT_PATH/out.txt\" 2>&1\nexit 0\n"),
    );
    let cmd = t.agent_cmd("attack", &format!("{env_line} FAKE_AT=1"));
    let args = t.start_args(
        topic,
        &t.art(),
        &cmd,
        &["--foreground", "--max-iterations", "1"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    t.run_with(&args, env).code(0);
    std::fs::read_to_string(t.art().join("out.txt")).unwrap_or_default()
}

fn enforced(t: &TestHome) -> String {
    t.state()["harness"]["sandbox"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Write a Python probe the agent runs (`python3 <path>`), returning the command.
fn probe(t: &TestHome, name: &str, code: &str) -> String {
    let p = t.root().join(name);
    std::fs::write(&p, code).unwrap();
    format!("python3 {}", p.display())
}

/// The supervisor's pid, as the agent can read it from `state.json`.
const SUPERVISOR: &str =
    "sup=$(sed -n 's/.*\"pid\": *\\([0-9]*\\).*/\\1/p' \"$WIGGUM_DIR/state.json\" | head -1)";

#[test]
fn an_agent_cannot_stop_kill_or_read_its_supervisor() {
    let t = TestHome::new();
    let out = run_attack(
        &t,
        "sig",
        &format!(
            "{SUPERVISOR}\necho \"supervisor $sup\"\n\
             kill -STOP \"$sup\"; echo \"stop $?\"\n\
             kill -KILL \"$sup\"; echo \"kill $?\"\n\
             cat /proc/$sup/environ | tr '\\0' '\\n' | grep SUPERVISOR_SECRET; echo \"environ done\"\n\
             grep -E '^Cap(Eff|Bnd|Prm)' /proc/self/status"
        ),
        &[("SUPERVISOR_SECRET", "hunter2")],
    );
    let sandbox = enforced(&t);
    assert!(out.contains("supervisor "), "{out}");
    if !sandbox.contains("signals scoped") {
        panic!("Landlock scopes (ABI 6) are on CI's kernel; this one: {sandbox}");
    }
    assert!(out.contains("stop 1") && out.contains("kill 1"), "{out}");
    assert!(!out.contains("hunter2"), "{out}");
    assert!(out.contains("Permission denied"), "{out}");
    // The loop went on as if nothing happened.
    let st = t.state();
    assert_eq!(st["stop_reason"], "max_iterations", "{st}");
    // No privilege inside, even as root.
    for line in out.lines().filter(|l| l.starts_with("Cap")) {
        assert!(line.ends_with("0000000000000000"), "{line}");
    }
}

#[test]
fn unix_sockets_outside_the_sandbox_are_not_reached() {
    let t = TestHome::new();
    let outside = tempfile::Builder::new()
        .prefix("sa-sock-")
        .tempdir()
        .unwrap();
    let path = outside.path().join("tmux.sock");
    let listener = UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let abstract_name = format!("sa-test-{}", std::process::id());
    use std::os::linux::net::SocketAddrExt;
    let addr =
        std::os::unix::net::SocketAddr::from_abstract_name(abstract_name.as_bytes()).unwrap();
    let abstract_listener = UnixListener::bind_addr(&addr).unwrap();
    abstract_listener.set_nonblocking(true).unwrap();
    let out = run_attack(
        &t,
        "sock",
        &probe(
            &t,
            "sock.py",
            &format!(
                r#"import socket
for name, addr in [("path", {path:?}), ("abstract", "\0" + {abstract_name:?})]:
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(addr)
        s.sendall(b"tmux send-keys evil")
        print(name, "connected")
    except OSError as e:
        print(name, "refused", e.errno)
a, b = socket.socketpair()
a.sendall(b"x")
print("socketpair", b.recv(1))
"#,
                path = path.display().to_string(),
            ),
        ),
        &[],
    );
    assert!(out.contains("path refused 13"), "{out}");
    assert!(out.contains("abstract refused"), "{out}");
    assert!(out.contains("socketpair b'x'"), "{out}");
    assert!(
        listener.accept().is_err(),
        "the pathname socket was reached"
    );
    assert!(
        abstract_listener.accept().is_err(),
        "the abstract socket was reached"
    );
}

#[test]
fn terminal_injection_is_refused() {
    let t = TestHome::new();
    let out = run_attack(
        &t,
        "tty",
        &probe(
            &t,
            "inject.py",
            r#"import fcntl, pty, termios
m, s = pty.openpty()
for name, req in [("TIOCSTI", termios.TIOCSTI), ("TIOCLINUX", getattr(termios, "TIOCLINUX", 0x541C))]:
    try:
        fcntl.ioctl(s, req, b"x")
        print(name, "done")
    except OSError as e:
        print(name, "refused", e.errno)
"#,
        ),
        &[],
    );
    assert!(out.contains("TIOCSTI refused 13"), "{out}");
    assert!(out.contains("TIOCLINUX refused 13"), "{out}");
}

#[test]
fn network_none_means_no_datagrams_either() {
    let t = TestHome::new();
    t.write_home_config("[safety]\nnetwork = \"none\"\n");
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let port = udp.local_addr().unwrap().port();
    let out = run_attack(
        &t,
        "udp",
        &probe(
            &t,
            "udp.py",
            &format!(
                r#"import socket
for fam, kind in [(socket.AF_INET, socket.SOCK_DGRAM), (socket.AF_INET, socket.SOCK_STREAM), (socket.AF_INET6, socket.SOCK_DGRAM)]:
    try:
        s = socket.socket(fam, kind)
        if kind == socket.SOCK_DGRAM and fam == socket.AF_INET:
            s.sendto(b"leak", ("127.0.0.1", {port}))
        print(fam, kind, "made")
    except OSError as e:
        print(fam, kind, "refused", e.errno)
"#
            ),
        ),
        &[],
    );
    assert_eq!(out.matches("refused 13").count(), 3, "{out}");
    let mut buf = [0u8; 16];
    assert!(udp.recv(&mut buf).is_err(), "a datagram got out");
}

#[test]
fn with_the_sandbox_off_an_agent_of_the_same_user_cannot_read_the_supervisors_environment() {
    let t = TestHome::new();
    t.write_home_config("[safety]\nsandbox = \"off\"\n");
    let env_line = attack(
        &t,
        &format!(
            "{{\n{SUPERVISOR}\nid -u\ncat /proc/$sup/environ | tr '\\0' '\\n' | grep SUPERVISOR_SECRET\necho done\n}} > \"$ARTIFACT_PATH/out.txt\" 2>&1\nexit 0\n"
        ),
    );
    let cmd = t.agent_cmd("attack", &format!("{env_line} FAKE_AT=1"));
    let args = t.start_args(
        "off",
        &t.art(),
        &cmd,
        &["--foreground", "--max-iterations", "1"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    t.run_unprivileged(&args, &[("SUPERVISOR_SECRET", "hunter2")])
        .code(0);
    let out = std::fs::read_to_string(t.art().join("out.txt")).unwrap();
    assert!(!out.starts_with("0\n"), "the agent ran as root: {out}");
    assert!(!out.contains("hunter2"), "{out}");
    assert!(out.contains("Permission denied"), "{out}");
}

/// A repository of the user's with the loop's artifact directory inside it.
pub(crate) fn user_repo(t: &TestHome) -> (std::path::PathBuf, std::path::PathBuf) {
    let proj = t.root().join("proj");
    let art = proj.join("art");
    std::fs::create_dir_all(proj.join("src")).unwrap();
    std::fs::create_dir_all(&art).unwrap();
    std::fs::copy(t.art().join("artifact.md"), art.join("artifact.md")).unwrap();
    std::fs::write(proj.join("src/main.rs"), "fn main() {}\n").unwrap();
    git(&proj, &["init", "-q", "-b", "main"]);
    git(&proj, &["add", "."]);
    git(
        &proj,
        &[
            "-c",
            "user.name=u",
            "-c",
            "user.email=u@x",
            "commit",
            "-q",
            "-m",
            "base",
        ],
    );
    (proj, art)
}

#[test]
fn a_document_loops_agent_writes_only_its_artifact_directory_and_a_code_loops_the_repository() {
    for (kind, may) in [("research", false), ("code", true)] {
        let t = TestHome::new();
        // The user's settings, without the test kit's writable root.
        t.write_home_config_raw("");
        let (proj, art) = user_repo(&t);
        let env_line = attack(
            &t,
            "echo 'fn main() { evil() }' > \"$ARTIFACT_PATH/../src/main.rs\" 2>/dev/null; echo \"outside $?\" > \"$ARTIFACT_PATH/out.txt\"\n",
        );
        let cmd = t.agent_cmd("attack", &format!("{env_line} FAKE_AT=1"));
        let args = t.start_args(
            kind,
            &art,
            &cmd,
            &["--foreground", "--max-iterations", "1", "--type", kind],
        );
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = t.run(&args);
        r.code(0);
        let main = std::fs::read_to_string(proj.join("src/main.rs")).unwrap();
        let out = std::fs::read_to_string(art.join("out.txt")).unwrap();
        assert_eq!(main.contains("evil"), may, "{kind}: {out}");
        let st: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(art.join("wiggum/state.json")).unwrap())
                .unwrap();
        let writable = st["harness"]["writable"].to_string();
        let root = if may { &proj } else { &art };
        assert!(
            writable.contains(&format!("\"{}\"", root.display())),
            "{kind}: {writable}"
        );
        assert!(r.stderr().contains("sandbox:"), "{}", r.stderr());
    }
}

#[test]
fn doctor_says_what_this_machine_enforces_and_finds_the_agent_clis() {
    let t = TestHome::new();
    let bin = t.root().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let claude = bin.join("claude");
    std::fs::write(&claude, "#!/bin/sh\necho '2.1.197 (Claude Code)'\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display());
    let r = t.run_with(&["wiggum", "doctor"], &[("PATH", &path)]);
    let out = r.stdout();
    let sandbox = out.lines().next().unwrap_or_default().to_string();
    assert!(sandbox.starts_with("sandbox: "), "{out}");
    // Whether each run gets a mount namespace of its own (a private /dev/shm, terminals, .git
    // read-only) is said either way; as root one is always made.
    let ns = out
        .lines()
        .find(|l| l.contains("mount namespace per run"))
        .unwrap_or_else(|| panic!("{out}"));
    if nix_is_root() && sandbox.contains("enforced") {
        assert!(
            ns.starts_with("ok  a mount namespace per run (as root)"),
            "{ns}"
        );
    }
    if sandbox.contains("enforced") {
        r.code(0);
        assert!(
            out.contains("sandbox = \"required\" would run here"),
            "{out}"
        );
    } else {
        r.code(1);
        assert!(out.contains("would refuse to run here"), "{out}");
    }
    assert!(
        out.contains(&format!(
            "agent claude    {} (2.1.197 (Claude Code)); presets checked with 2.1.197",
            claude.display()
        )),
        "{out}"
    );
    assert!(out.contains("agent codex     not on PATH"), "{out}");
    assert!(
        out.contains(&format!(
            "settings  {}",
            t.home().join("wiggum.toml").display()
        )),
        "{out}"
    );
    let json: serde_json::Value = serde_json::from_str(
        &t.run_with(&["wiggum", "doctor", "--json"], &[("PATH", &path)])
            .stdout(),
    )
    .unwrap();
    assert_eq!(json["required_satisfied"], json["filesystem"]);
    assert_eq!(json["agents"][0]["version"], "2.1.197 (Claude Code)");
}

/// The pids of live processes whose command line holds `marker`.
fn alive_with(marker: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if String::from_utf8_lossy(&cmd).contains(marker) && !stat.contains(") Z") {
            out.push(pid);
        }
    }
    out
}

#[test]
fn a_helper_that_leaves_the_session_and_clears_its_environment_does_not_outlive_the_run() {
    let t = TestHome::new();
    let marker = format!(
        "escapee-{}",
        t.root().file_name().unwrap().to_string_lossy()
    );
    let r = t.start_bg(
        "esc",
        "attack",
        &format!(
            "{} FAKE_AT=1",
            attack(
                &t,
                &format!(
                    "mkdir -p \"$ARTIFACT_PATH/started\"\nsetsid env -i /usr/bin/python3 -c 'import os, sys, time\nos.fork()\nopen(sys.argv[2] + \"/%d\" % os.getpid(), \"w\").close()\ntime.sleep(300)' {marker} \"$ARTIFACT_PATH/started\" >/dev/null 2>&1 &\n# The helper and its fork each say they are up; wait for both (5 s at most).\ni=0; while [ \"$(ls \"$ARTIFACT_PATH/started\" | wc -l)\" -lt 2 ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done\n"
                ),
            )
        ),
        &["--foreground", "--max-iterations", "1"],
    );
    let left = alive_with(&marker);
    for pid in &left {
        std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .ok();
    }
    r.code(0);
    let started = std::fs::read_dir(t.art().join("started")).unwrap().count();
    assert!(started >= 2, "the helper and its fork ran: {started}");
    let sandbox = t.state()["harness"]["sandbox"]
        .as_str()
        .unwrap()
        .to_string();
    if sandbox.contains("a cgroup per run") {
        assert!(left.is_empty(), "escaped the run: {left:?} ({sandbox})");
    } else {
        // The documented fallback: the line says so, and the process group and token are the
        // nets (which this helper escapes).
        assert!(
            sandbox.contains("no cgroup v2 group can be made"),
            "{sandbox}"
        );
    }
    if !sandbox.contains("pids ceiling") {
        assert!(sandbox.contains("max_processes not enforced"), "{sandbox}");
    }
}

#[test]
fn nothing_of_a_run_outlives_a_supervisor_killed_outright() {
    let t = TestHome::new();
    let marker = format!(
        "k9escapee-{}",
        t.root().file_name().unwrap().to_string_lossy()
    );
    let env = format!(
        "FAKE_RELEASE={} FAKE_BLOCK_AT=1 FAKE_MARKER={marker}",
        t.release_file().display()
    );
    t.start_bg("k9", "escapee,block", &env, &[]).code(0);
    let st = t.wait_state("iteration 1's agent", |s| {
        s["current_iteration"] == 1 && s["agent_pid"].is_number()
    });
    t.wait_blocked();
    wait_for("the escapee to start", Duration::from_secs(10), || {
        if alive_with(&marker).len() >= 2 {
            Ok(())
        } else {
            Err(alive_with(&marker))
        }
    });
    let supervisor = st["pid"].as_i64().unwrap();
    let sandbox = st["harness"]["sandbox"].as_str().unwrap().to_string();
    std::process::Command::new("kill")
        .args(["-9", &supervisor.to_string()])
        .status()
        .unwrap();
    if sandbox.contains("a cgroup per run") {
        wait_for(
            "the run's processes to die with their group",
            Duration::from_secs(2),
            || {
                let left = alive_with(&marker);
                if left.is_empty() { Ok(()) } else { Err(left) }
            },
        );
    } else {
        assert!(
            sandbox.contains("no cgroup v2 group can be made"),
            "{sandbox}"
        );
    }
    for pid in alive_with(&marker) {
        std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .ok();
    }
    crate::support::procs::kill_all(&t.token);
}

#[test]
fn a_stopped_supervisors_run_keeps_its_wall_limit_and_is_rejected() {
    let t = TestHome::new();
    t.write_home_config("[safety]\nmax_time_per_iteration = 2\nkill_grace_secs = 1\n");
    let daemon = t.blocked_at_first("frozen", "");
    let st = t.state();
    let sandbox = st["harness"]["sandbox"].as_str().unwrap().to_string();
    let agent = st["agent_pid"].as_i64().unwrap();
    let signal = |sig: &str| {
        std::process::Command::new("kill")
            .args([sig, &daemon.to_string()])
            .status()
            .unwrap()
    };
    // Frozen as an agent on a kernel without Landlock scopes could freeze it (or Ctrl-Z).
    signal("-STOP");
    if sandbox.contains("a cgroup per run") {
        let gone = std::panic::catch_unwind(|| {
            wait_for(
                "the watcher to end the run at its limit",
                Duration::from_secs(15),
                || {
                    let alive = std::fs::read_to_string(format!("/proc/{agent}/stat"))
                        .is_ok_and(|s| !s.contains(") Z"));
                    if alive { Err(agent) } else { Ok(()) }
                },
            )
        });
        signal("-CONT");
        gone.unwrap();
    } else {
        signal("-CONT");
        assert!(
            sandbox.contains("no cgroup v2 group can be made"),
            "{sandbox}"
        );
        std::fs::write(t.release_file(), "").unwrap();
    }
    let st = t.wait_stopped("frozen");
    assert_eq!(st["status"], "completed", "{st}");
    let first = &t.runs("iteration")[0];
    assert_eq!(first["outcome"], "rejected", "{first}");
    assert!(
        first["protected_changed"]
            .to_string()
            .contains("the supervisor (stopped during the run)"),
        "{first}"
    );
    // Said as what it was, not as the agent's doing.
    let why = first["validation_failed"].as_str().unwrap_or_default();
    assert!(
        why.contains("the supervisor was stopped while the run went on unwatched")
            && !why.starts_with("the agent changed"),
        "{why}"
    );
}
