//! `TestHome`: a canonicalised temp dir holding `STUDIO_AGENTS_HOME`, an artifact directory and a
//! per-test token; `Run`: the real binary from a cleared environment, with a failure dump that
//! shows what a person would look at.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

/// One test's world.
pub struct TestHome {
    dir: tempfile::TempDir,
    /// Unique token every process of this test inherits.
    pub token: String,
}

/// The scripted agent.
pub fn fake_agent() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/agents/fake-agent.sh")
}

impl TestHome {
    /// A fresh home with `art/artifact.md`.
    pub fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("sa-test-")
            .tempdir()
            .expect("tempdir");
        let token = format!(
            "{}-{}",
            std::process::id(),
            dir.path().file_name().unwrap().to_string_lossy()
        );
        let me = Self { dir, token };
        std::fs::create_dir_all(me.home()).unwrap();
        std::fs::create_dir_all(me.art()).unwrap();
        std::fs::write(
            me.art().join("artifact.md"),
            "# Report\n\n## Summary\nThe service fails for some users.\n",
        )
        .unwrap();
        me.write_home_config("");
        me
    }

    /// The temp root (canonical).
    pub fn root(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }
    /// `$STUDIO_AGENTS_HOME`.
    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }
    /// The artifact dir.
    pub fn art(&self) -> PathBuf {
        self.root().join("art")
    }
    /// A path under the loop's `wiggum/`.
    pub fn wiggum(&self, rel: &str) -> PathBuf {
        self.art().join("wiggum").join(rel)
    }
    /// A path under the loop's records (agent logs, prompts; out of the agent's sight).
    /// As docs/architecture.md names it: `$STUDIO_AGENTS_HOME/runs/<dir name>-<16 hex of the
    /// md5 of its path>`.
    pub fn records(&self, rel: &str) -> PathBuf {
        use md5::{Digest, Md5};
        let art = self.art();
        let digest = Md5::digest(art.as_os_str().as_encoded_bytes());
        let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        self.home()
            .join("runs")
            .join(format!("art-{hex}"))
            .join(rel)
    }
    /// The pids file the fake agent appends to.
    pub fn pids_file(&self) -> PathBuf {
        self.root().join("pids.txt")
    }

    /// The binary with a cleared environment.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_studio-agents"));
        c.args(args)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", self.root())
            .env("STUDIO_AGENTS_HOME", self.home())
            .env("STUDIO_AGENTS_TEST_TOKEN", &self.token)
            .env("STUDIO_AGENTS_LOG", "debug")
            // Runs' private temp dirs go with the test's own directory, whatever a test kills.
            .env("TMPDIR", self.tmp())
            .current_dir(self.root())
            .stdin(Stdio::null());
        c
    }

    /// The temp dir the binary and its runs use (`TMPDIR`).
    pub fn tmp(&self) -> PathBuf {
        let t = self.root().join("tmp");
        std::fs::create_dir_all(&t).unwrap();
        t
    }

    /// An `--agent-cmd` running the fake agent with behaviours.
    pub fn agent_cmd(&self, fake: &str, extra_env: &str) -> String {
        format!(
            "FAKE={fake} FAKE_PIDS={} {extra_env} sh {}",
            self.pids_file().display(),
            fake_agent().display()
        )
    }

    /// Run to completion.
    /// A command that has not finished within 120 s (scaled by `TEST_TIME_FACTOR`) is killed
    /// and the test fails, so a regression that hangs cannot hang the suite.
    pub fn run(&self, args: &[&str]) -> Run {
        self.run_with(args, &[])
    }

    /// [`Self::run`] with extra environment variables (a failpoint, say).
    pub fn run_with(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut cmd = self.cmd(args);
        cmd.envs(env.iter().copied());
        self.finish(cmd, args)
    }

    /// [`Self::run_with`] as an unprivileged user: as root, the test's directory is handed to
    /// `nobody` and the command runs through `setpriv` (no capabilities, no groups); otherwise
    /// the test already runs unprivileged. `nobody` may not be able to enter the checkout (a
    /// clone in a private directory, root's home): the binary and the scripted agents it runs
    /// are copied into the test's directory first, and the arguments name the copies.
    #[allow(dead_code)]
    pub fn run_unprivileged(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        if !nix_is_root() {
            return self.run_with(args, env);
        }
        // Everything the command will use exists before it changes hands.
        let (bin, agents) = self.reachable_copies();
        let theirs = fake_agent().parent().unwrap().display().to_string();
        let ours = agents.display().to_string();
        let args: Vec<String> = args.iter().map(|a| a.replace(&theirs, &ours)).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let plain = self.cmd(&args);
        let ok = Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(self.dir.path())
            .status()
            .expect("chown");
        assert!(ok.success(), "chown the test directory");
        let mut cmd = Command::new("setpriv");
        cmd.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--",
        ])
        .arg(&bin)
        .args(plain.get_args())
        .env_clear()
        .envs(plain.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .envs(env.iter().copied())
        .current_dir(self.root())
        .stdin(Stdio::null());
        self.finish(cmd, &args)
    }

    /// Copies of the binary and of `tests/agents/` under the test's directory (copies, not
    /// links: the directory changes owner and the originals must not).
    fn reachable_copies(&self) -> (PathBuf, PathBuf) {
        let dir = self.root().join("reachable");
        let agents = dir.join("agents");
        std::fs::create_dir_all(&agents).unwrap();
        let bin = dir.join("studio-agents");
        std::fs::copy(env!("CARGO_BIN_EXE_studio-agents"), &bin).expect("copy the binary");
        for e in std::fs::read_dir(fake_agent().parent().unwrap()).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), agents.join(e.file_name())).expect("copy a scripted agent");
        }
        (bin, agents)
    }

    fn finish(&self, mut cmd: Command, args: &[&str]) -> Run {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn studio-agents");
        let read = |mut r: Box<dyn std::io::Read + Send>| {
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                r.read_to_end(&mut buf).expect("read the command's output");
                buf
            })
        };
        let out_t = read(Box::new(child.stdout.take().unwrap()));
        let err_t = read(Box::new(child.stderr.take().unwrap()));
        let deadline =
            std::time::Instant::now() + super::wait::scaled(std::time::Duration::from_secs(120));
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if std::time::Instant::now() >= deadline {
                child.kill().ok();
                child.wait().ok();
                panic!(
                    "`studio-agents {}` did not finish within 120 s",
                    args.join(" ")
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        };
        let out = Output {
            status,
            stdout: out_t.join().unwrap(),
            stderr: err_t.join().unwrap(),
        };
        Run {
            out,
            args: args.iter().map(|s| (*s).to_string()).collect(),
            art: self.art(),
        }
    }

    /// Spawn without waiting.
    #[allow(dead_code)]
    pub fn spawn(&self, args: &[&str]) -> Child {
        self.cmd(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn")
    }

    /// `start --foreground` with the fake agent.
    /// [`Self::start_fg`] with extra environment for the fake agent (`FAKE_ITEMS=1`).
    #[allow(dead_code)]
    pub fn start_with_env(&self, topic: &str, fake: &str, env: &str, extra: &[&str]) -> Run {
        let mut args = vec!["--foreground"];
        args.extend_from_slice(extra);
        self.start_with(topic, fake, env, &args)
    }

    pub fn start_fg(&self, topic: &str, fake: &str, extra: &[&str]) -> Run {
        let mut args = vec!["--foreground"];
        args.extend_from_slice(extra);
        self.start_with(topic, fake, "", &args)
    }

    /// [`Self::start_fg`] with the terminal as a user has it: no log filter set, so stderr
    /// shows only warnings, errors and what the loop prints for people.
    pub fn start_fg_plain(&self, topic: &str, fake: &str) -> Run {
        let args = self.start_args(
            topic,
            &self.art(),
            &self.agent_cmd(fake, ""),
            &["--foreground"],
        );
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.run_with(&args, &[("STUDIO_AGENTS_LOG", "")])
    }

    /// `start <topic> --artifact-path <art> --agent-cmd <fake agent> <extra…>`.
    fn start_with(&self, topic: &str, fake: &str, env: &str, extra: &[&str]) -> Run {
        let args = self.start_args(topic, &self.art(), &self.agent_cmd(fake, env), extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.run(&args)
    }

    /// Every test's `start` command line: `wiggum start <topic> --artifact-path <art>
    /// --agent-cmd <cmd> <extra…>` (an empty `cmd` leaves `--agent-cmd` out).
    pub fn start_args(&self, topic: &str, art: &Path, cmd: &str, extra: &[&str]) -> Vec<String> {
        let mut a: Vec<String> = ["wiggum", "start", topic, "--artifact-path"]
            .iter()
            .map(|s| (*s).to_string())
            .collect();
        a.push(art.display().to_string());
        if !cmd.is_empty() {
            a.push("--agent-cmd".into());
            a.push(cmd.into());
        }
        a.extend(extra.iter().map(|s| (*s).to_string()));
        a
    }

    /// `state.json` as JSON.
    pub fn state(&self) -> Value {
        read_json(&self.wiggum("state.json"))
    }

    /// Records of `runs.jsonl` with `record == kind`.
    pub fn runs(&self, kind: &str) -> Vec<Value> {
        std::fs::read_to_string(self.wiggum("runs.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["record"] == kind)
            .collect()
    }

    /// `git log` lines: `author-name <email>|subject`.
    pub fn git_log(&self) -> Vec<String> {
        let out = Command::new("git")
            .args(["log", "--format=%an <%ae>|%s"])
            .current_dir(self.art())
            .output()
            .expect("git");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Write the user's settings file exactly as given (the test root is not made writable).
    pub fn write_home_config_raw(&self, text: &str) {
        std::fs::write(self.home().join("wiggum.toml"), text).unwrap();
    }

    /// Write the user's settings file (`$STUDIO_AGENTS_HOME/wiggum.toml`). The scripted agent
    /// keeps its bookkeeping (pids, markers) at the test's root, outside the repository: the
    /// file always grants it, as `[safety] writable` does for a user's extra directories.
    pub fn write_home_config(&self, text: &str) {
        let mut table: toml::Table = toml::from_str(text).expect("test settings are TOML");
        let safety = table
            .entry("safety")
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            .as_table_mut()
            .expect("[safety] is a table");
        let writable = safety
            .entry("writable")
            .or_insert_with(|| toml::Value::Array(Vec::new()))
            .as_array_mut()
            .expect("writable is an array");
        writable.push(toml::Value::String(self.root().display().to_string()));
        std::fs::write(
            self.home().join("wiggum.toml"),
            toml::to_string(&table).unwrap(),
        )
        .unwrap();
    }
}

impl Drop for TestHome {
    fn drop(&mut self) {
        super::procs::kill_all(&self.token);
        // The home layer of a loop on the artifact dir: under `/var/tmp` when the temp dir is in
        // the home, as the kit's is (docs/security.md).
        if let Some(key) = self.records("").file_name() {
            let uid = std::fs::metadata("/proc/self").map_or(0, |m| {
                use std::os::unix::fs::MetadataExt;
                m.uid()
            });
            // And as `nobody`, for a run through `setpriv`.
            for uid in [uid, 65534] {
                let layer = Path::new(&format!("/var/tmp/studio-agents-homes-{uid}")).join(key);
                let _gone = std::fs::remove_dir_all(layer);
            }
        }
        if std::env::var_os("KEEP_TEST_DIRS").is_some() {
            let kept = self.dir.path().to_path_buf();
            eprintln!("kept {}", kept.display());
            std::mem::forget(std::mem::replace(
                &mut self.dir,
                tempfile::tempdir().unwrap(),
            ));
        }
    }
}

/// Read a JSON file or panic naming it.
/// Whether the tests run as root (CI does).
pub fn nix_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find(|l| l.starts_with("Uid:"))
            .is_some_and(|l| l.split_whitespace().nth(1) == Some("0"))
    })
}

/// A file as JSON. A read that does not parse is made again (twice), as the tool's own readers
/// do: a reader held up between opening a state file and reading it may read the next save being
/// written into it.
pub fn read_json(p: &Path) -> Value {
    let mut tries = 0;
    loop {
        let t = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()));
        match serde_json::from_str(&t) {
            Ok(v) => return v,
            Err(_) if tries < 2 => tries += 1,
            Err(e) => panic!("{} is not JSON: {e}\n{t}", p.display()),
        }
    }
}

/// A finished command.
pub struct Run {
    /// Its output.
    pub out: Output,
    args: Vec<String>,
    art: PathBuf,
}

impl Run {
    /// stdout as text.
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).to_string()
    }
    /// stderr as text.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).to_string()
    }

    fn dump(&self) -> String {
        let listing = walk(&self.art);
        let state = std::fs::read_to_string(self.art.join("wiggum/state.json")).unwrap_or_default();
        format!(
            "command: {:?}\nstatus: {}\n--- stdout:\n{}\n--- stderr (tail):\n{}\n--- artifact dir:\n{}\n--- state.json:\n{}",
            self.args,
            self.out.status,
            self.stdout(),
            tail(&self.stderr(), 40),
            listing,
            state
        )
    }

    /// Assert the exit code.
    #[track_caller]
    pub fn code(&self, want: i32) -> &Self {
        assert_eq!(self.out.status.code(), Some(want), "{}", self.dump());
        self
    }
}

fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Every file under a dir (skipping .git), for failure dumps and untouched-dir checks.
pub fn walk(dir: &Path) -> String {
    let mut out = Vec::new();
    fn go(d: &Path, base: &Path, out: &mut Vec<String>) {
        let Ok(rd) = std::fs::read_dir(d) else { return };
        for e in rd.flatten() {
            let p = e.path();
            if p.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            if p.is_dir() {
                go(&p, base, out);
            } else {
                let content = std::fs::read(&p).unwrap_or_default();
                out.push(format!(
                    "{} ({} bytes)",
                    p.strip_prefix(base).unwrap().display(),
                    content.len()
                ));
            }
        }
    }
    go(dir, dir, &mut out);
    out.sort();
    out.join("\n")
}

/// Every file under a dir with its content (including .git): equal snapshots = untouched.
pub fn snapshot(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    fn go(d: &Path, out: &mut std::collections::BTreeMap<PathBuf, Vec<u8>>) {
        let Ok(rd) = std::fs::read_dir(d) else { return };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.insert(p.clone(), Vec::new());
                go(&p, out);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap_or_default());
            }
        }
    }
    go(dir, &mut out);
    out
}

impl TestHome {
    /// `start` (detached) with the fake agent; returns once `start` has returned.
    pub fn start_bg(&self, topic: &str, fake: &str, env: &str, extra: &[&str]) -> Run {
        self.start_with(topic, fake, env, extra)
    }

    /// Start `topic` detached with the fake agent `fake` blocked in iteration 1 (after what
    /// `fake` does) until [`Self::release_file`] appears; returns the supervisor's pid once the
    /// agent blocks.
    pub fn blocked_at_first(&self, topic: &str, fake: &str) -> i64 {
        let env = format!(
            "FAKE_RELEASE={} FAKE_BLOCK_AT=1",
            self.release_file().display()
        );
        self.start_bg(topic, &format!("{fake},block"), &env, &[])
            .code(0);
        let st = self.wait_state("iteration 1's agent", |s| {
            s["current_iteration"] == 1 && s["agent_pid"].is_number()
        });
        self.wait_blocked();
        st["pid"].as_i64().unwrap()
    }

    /// Wait until a blocked fake agent says it blocks (it starts its helpers before).
    pub fn wait_blocked(&self) {
        super::wait_for(
            "the agent to block",
            std::time::Duration::from_secs(10),
            || {
                let p = std::fs::read_to_string(self.pids_file()).unwrap_or_default();
                if p.contains("blocked ") {
                    Ok(())
                } else {
                    Err(p)
                }
            },
        );
    }

    /// The release file blocked fake agents wait for.
    pub fn release_file(&self) -> PathBuf {
        self.root().join("release")
    }

    /// Wait until `state.json` satisfies `pred`; returns it.
    #[track_caller]
    pub fn wait_state(&self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let path = self.wiggum("state.json");
        super::wait_for(what, std::time::Duration::from_secs(20), || {
            let v = std::fs::read_to_string(&path)
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok());
            match v {
                Some(v) if pred(&v) => Ok(v),
                other => Err(other),
            }
        })
    }

    /// `status <topic> --json`.
    pub fn status_json(&self, topic: &str) -> Value {
        let r = self.run(&["wiggum", "status", topic, "--json"]);
        r.code(0);
        serde_json::from_str(&r.stdout()).expect("status --json is JSON")
    }

    /// Wait until the loop's lock is free (the supervisor is gone).
    #[track_caller]
    pub fn wait_stopped(&self, topic: &str) -> Value {
        super::wait_for(
            "the supervisor to exit",
            std::time::Duration::from_secs(30),
            || {
                let v = self.status_json(topic);
                if v["pid"].is_null() { Ok(v) } else { Err(v) }
            },
        )
    }
}

/// Run `git` in `dir` (identity set), failing the test when it fails; returns stdout.
#[track_caller]
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=user", "-c", "user.email=user@example.com"])
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "protocol.file.allow=always",
        ])
        .args(args)
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).to_string()
}
