//! The real-CLI tier: codex, Claude Code and gemini-cli at pinned versions from the npm registry
//! (`tests/real_cli/package-lock.json`, installed into `target/real-cli` by `setup.sh`), each run
//! by its preset, unchanged, inside the loop and the enforced harness, against a scripted model
//! server on 127.0.0.1 that speaks its vendor's protocol (`server.py`). Run with
//! `cargo test --features real-cli --test real_cli`. When the registry cannot be reached at all
//! the tests say so loudly and skip; any other set-up failure fails.
//!
//! The server's first answer in every conversation is a call of the CLI's own shell tool
//! (`Bash`, `exec_command`, `run_shell_command`) running `work.sh`, which does what the phase asks
//! (plan, edit the iteration's artifact and tick the plan, print a revised document); its final
//! answer repeats what the command printed, so the command decides what the agent says.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The CLIs' bin directory, installed once; `None` (after a loud message) when the registry is
/// unreachable.
fn clis() -> Option<PathBuf> {
    static DONE: Mutex<Option<Option<PathBuf>>> = Mutex::new(None);
    let mut done = DONE.lock().unwrap();
    if let Some(d) = done.as_ref() {
        return d.clone();
    }
    let dest = std::env::var_os("REAL_CLI_CACHE")
        .map_or_else(|| root().join("target/real-cli"), PathBuf::from);
    let out = Command::new("bash")
        .arg(root().join("tests/real_cli/setup.sh"))
        .arg(&dest)
        .output()
        .expect("run setup.sh");
    let got = match out.status.code() {
        Some(0) => Some(PathBuf::from(
            String::from_utf8_lossy(&out.stdout).trim().to_string(),
        )),
        Some(75) => {
            eprintln!(
                "\n!!!!! SKIPPED: the npm registry is unreachable, the real-CLI tier did not run:\n!!!!! {}\n",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            None
        }
        _ => panic!(
            "tests/real_cli/setup.sh failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ),
    };
    *done = Some(got.clone());
    got
}

/// The scripted model server; stopped on drop.
struct Server {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Server {
    /// `limited`: conversations refused with the vendor's limit error after the first `after`.
    fn start(dir: &Path, command: &str, limited: u32, after: u32) -> Server {
        let log = dir.join(format!("requests-{limited}-{after}.jsonl"));
        let (limited, after) = (limited.to_string(), after.to_string());
        Server::with(
            &log,
            command,
            &["--limited", &limited, "--limited-after", &after],
        )
    }

    /// A server whose codex call asks to run `command` outside codex's sandbox, with `question`.
    fn escalating(dir: &Path, command: &str, question: &str) -> Server {
        Server::with(
            &dir.join("requests-escalating.jsonl"),
            command,
            &["--escalate", question],
        )
    }

    fn with(log: &Path, command: &str, args: &[&str]) -> Server {
        let log = log.to_path_buf();
        let mut child = Command::new("python3")
            .arg(root().join("tests/real_cli/server.py"))
            .args(["--command", command, "--log"])
            .arg(&log)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 runs the scripted server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("READY ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the server said {line:?}"));
        Server { child, port, log }
    }

    /// The paths of the requests it answered.
    fn paths(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|v| v["path"].as_str().map(str::to_string))
            .collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Already gone is fine: the server is only ever stopped here.
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// One test's world: a temp dir with the user's home, the loop's home and an artifact.
struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        let dir = tempfile::Builder::new()
            .prefix("sa-real-cli-")
            .tempdir()
            .unwrap();
        let w = World { dir };
        std::fs::create_dir_all(w.home()).unwrap();
        std::fs::create_dir_all(w.store()).unwrap();
        std::fs::create_dir_all(w.art()).unwrap();
        std::fs::write(
            w.art().join("artifact.md"),
            "# Monarch tags panel\n\n## Summary\nThe tags panel of the Monarch UI is empty for some users.\n",
        )
        .unwrap();
        w
    }
    fn root(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }
    fn home(&self) -> PathBuf {
        self.root().join("home")
    }
    fn store(&self) -> PathBuf {
        self.root().join("store")
    }
    fn art(&self) -> PathBuf {
        self.root().join("art")
    }
    /// Where the agent tries to write, outside everything it may write.
    fn outside(&self) -> PathBuf {
        self.root().join("outside.txt")
    }

    /// The command the model has the CLI run: the loop's work for each phase.
    fn work_script(&self) -> PathBuf {
        let script = format!(
            r#"plan="$WIGGUM_DIR/fix_plan.md"
case "$WIGGUM_PHASE" in
planning)
    printf '# Plan\n\n- [ ] Explain why the tags panel is empty\n- [ ] Say how to fix it\n' > "$plan"
    echo "planned two items"
    ;;
iteration)
    if echo probe > '{outside}' 2>/dev/null; then echo "outside: written"; else echo "outside: denied"; fi
    item=$(grep -m1 -- '- \[ \] ' "$plan" | sed 's/^- \[ \] //')
    case "$ITERATION" in
    1) body='The role the UI runs as lost `iam.roles.get` when it was split in release 4.2, so the panel stays empty for the projects that moved to it.' ;;
    *) body='Grant `iam.roles.get` again with `terraform apply -target=module.reader`, then check that the panel loads for a viewer in `monarch-eu-7`.' ;;
    esac
    printf '\n## %s\n\n%s\n' "$item" "$body" >> "$ITERATION_DIR/artifact.md"
    awk -v it="$item" '!d && $0 == "- [ ] " it {{ print "- [x] " it; d = 1; next }} {{ print }}' "$plan" > "$plan.tmp" && mv "$plan.tmp" "$plan"
    printf '%s\n\nDone with a shell command.\n' "$item" > "$ITERATION_DIR/review.md"
    echo "iteration $ITERATION done"
    grep -q -- '- \[ \] ' "$plan" || echo "<promise>COMPLETE</promise>"
    ;;
revision)
    cat "$ITERATION_DIR/artifact.md"
    printf '\nChecked again in a revision round: the permission is the only one missing.\n'
    ;;
esac
"#,
            outside = self.outside().display()
        );
        let path = self.root().join("work.sh");
        std::fs::write(&path, script).unwrap();
        path
    }

    /// The user's settings: the sandbox required, the network confined to the server's port.
    fn settings(&self, port: u16, extra: &str) {
        std::fs::write(
            self.store().join("wiggum.toml"),
            format!(
                "[safety]\nsandbox = \"required\"\nnetwork = [{port}]\nmax_time_per_iteration = 180\nmax_idle_secs = 120\n{extra}"
            ),
        )
        .unwrap();
    }

    /// `wiggum <args…>` with the CLIs on `PATH` and `env`.
    fn run(
        &self,
        bin: &Path,
        args: &[&str],
        env: &[(&str, String)],
    ) -> (Option<i32>, String, String) {
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_studio-agents"));
        cmd.args(args)
            .env_clear()
            .env("PATH", path)
            .env("HOME", self.home())
            .env("STUDIO_AGENTS_HOME", self.store())
            .env("LANG", "C.UTF-8")
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(Stdio::null());
        let out = cmd.output().expect("run studio-agents");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// `wiggum start <topic> --agent <agent>` in the foreground: two iterations, `rounds` gate
    /// rounds at the pass threshold `pass`.
    fn start(
        &self,
        bin: &Path,
        topic: &str,
        agent: &str,
        rounds: &str,
        pass: &str,
        env: &[(&str, String)],
    ) -> (Option<i32>, String, String) {
        let art = self.art().display().to_string();
        let args = [
            "wiggum",
            "start",
            topic,
            "--agent",
            agent,
            "--artifact-path",
            &art,
            "--foreground",
            "--max-iterations",
            "2",
            "--max-rounds",
            rounds,
            "--pass-threshold",
            pass,
        ];
        self.run(bin, &args, env)
    }

    fn runs(&self) -> Vec<Value> {
        std::fs::read_to_string(self.art().join("wiggum/runs.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    fn state(&self) -> Value {
        serde_json::from_str(
            &std::fs::read_to_string(self.art().join("wiggum/state.json")).unwrap(),
        )
        .unwrap()
    }

    fn git_log(&self) -> Vec<String> {
        let out = Command::new("git")
            .args(["log", "--format=%s"])
            .current_dir(self.art())
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    }
}

/// A loop with `cli`'s preset: planning, two iterations, a revision round in each (no draft
/// passes a gate at 10), and what the user would check afterwards. `tokens`: the CLI reports
/// its usage (opencode's plain output does not).
/// The layer of the loop on the world's artifact: its home's writes (docs/agents.md), under
/// the temp dir (`/tmp`: the command runs with no `TMPDIR`).
fn layer(w: &World) -> PathBuf {
    use md5::{Digest, Md5};
    let art = w.art();
    let digest = Md5::digest(art.as_os_str().as_encoded_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    let uid = std::fs::metadata("/proc/self").map_or(0, |m| {
        use std::os::unix::fs::MetadataExt;
        m.uid()
    });
    let name = art.file_name().unwrap().to_string_lossy().to_string();
    std::env::temp_dir()
        .join(format!("studio-agents-homes-{uid}"))
        .join(format!("{name}-{hex}"))
}

fn a_whole_loop(
    cli: &str,
    tokens: bool,
    env: impl Fn(&World, u16) -> Vec<(&'static str, String)>,
    state: impl Fn(&World) -> PathBuf,
) {
    let Some(bin) = clis() else { return };
    let w = World::new();
    let work = w.work_script();
    let srv = Server::start(&w.root(), &format!("sh {}", work.display()), 0, 0);
    w.settings(srv.port, "");
    let env = env(&w, srv.port);
    let started = std::time::Instant::now();
    let (code, out, err) = w.start(&bin, cli, cli, "2", "10", &env);
    let took = started.elapsed();
    let all = format!("{out}\n{err}\nrequests: {:?}", srv.paths());
    assert_eq!(code, Some(0), "{all}");
    eprintln!("{cli}: a loop of planning, two iterations and two revisions in {took:?}\n{out}");
    // Planned, and two iterations committed.
    let log = w.git_log();
    assert!(
        log.iter()
            .any(|s| s.contains("Wiggum iteration 2: Say how to fix it"))
            && log
                .iter()
                .any(|s| s.contains("Wiggum iteration 1: Explain why the tags panel is empty")),
        "{log:?}\n{all}"
    );
    let runs = w.runs();
    let iterations: Vec<&Value> = runs.iter().filter(|r| r["record"] == "iteration").collect();
    assert_eq!(iterations.len(), 2, "{runs:?}");
    // A revision round in each iteration: the producer (the same CLI) revised the draft.
    let rounds: Vec<&Value> = runs
        .iter()
        .filter(|r| r["record"] == "gate_round" && r["round"].as_u64() == Some(2))
        .collect();
    assert_eq!(rounds.len(), 2, "{runs:?}\n{all}");
    // Tokens of every run: the planning and iteration records carry theirs, and the spend
    // holds more (the revisions').
    let recorded: u64 = runs
        .iter()
        .filter(|r| r["record"] == "iteration" || r["record"] == "planning")
        .map(|r| {
            let t = r["tokens_in"].as_u64().unwrap_or(0) + r["tokens_out"].as_u64().unwrap_or(0);
            assert!(t > 0 || !tokens, "a run without tokens: {r}");
            t
        })
        .sum();
    let st = w.state();
    let spent = st["spend"]["tokens"].as_u64().unwrap_or(0);
    assert!(
        spent > recorded || !tokens,
        "spent {spent}, recorded {recorded}: {st}"
    );
    // The promise of the last iteration was recognised (and not taken: the gate failed).
    assert_eq!(iterations[1]["promise_seen"], true, "{:?}", iterations[1]);
    assert!(
        iterations[1]["premature_promise"]
            .as_str()
            .unwrap_or_default()
            .starts_with("the gate did not pass"),
        "{:?}",
        iterations[1]
    );
    assert_eq!(st["stop_reason"], "plan_empty", "{st}");
    // The write outside the repository was denied.
    assert!(!w.outside().exists(), "the agent wrote outside: {all}");
    // The CLI's state went where its variable moved it, and was written there.
    let state_dir = state(&w);
    let written = std::fs::read_dir(&state_dir)
        .map(|d| d.count())
        .unwrap_or(0);
    assert!(written > 0, "nothing in {}", state_dir.display());
    let _gone = std::fs::remove_dir_all(layer(&w));
    assert!(took < Duration::from_secs(240), "{took:?}");
}

#[test]
fn codex_runs_a_whole_loop_in_the_harness() {
    a_whole_loop(
        "codex",
        true,
        |w, port| {
            vec![
                ("CODEX_HOME", codex_home(w, port).display().to_string()),
                ("OPENAI_API_KEY", "scripted".into()),
            ]
        },
        |w| w.root().join("codex-home/sessions"),
    );
}

#[test]
fn claude_runs_a_whole_loop_in_the_harness() {
    a_whole_loop(
        "claude",
        true,
        |w, port| {
            vec![
                (
                    "CLAUDE_CONFIG_DIR",
                    w.root().join("claude-config").display().to_string(),
                ),
                ("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}")),
                ("ANTHROPIC_API_KEY", "scripted".into()),
                ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
            ]
        },
        |w| w.root().join("claude-config"),
    );
}

#[test]
fn gemini_runs_a_whole_loop_in_the_harness() {
    a_whole_loop(
        "gemini",
        true,
        |w, port| {
            let home = w.root().join("gemini-home");
            std::fs::create_dir_all(home.join(".gemini")).unwrap();
            std::fs::write(
                home.join(".gemini/settings.json"),
                r#"{"security": {"auth": {"selectedType": "gemini-api-key"}}}"#,
            )
            .unwrap();
            vec![
                ("GEMINI_CLI_HOME", home.display().to_string()),
                ("GEMINI_API_KEY", "scripted".into()),
                ("GOOGLE_GEMINI_BASE_URL", format!("http://127.0.0.1:{port}")),
            ]
        },
        |w| w.root().join("gemini-home/.gemini/tmp"),
    );
}

#[test]
fn opencode_runs_a_whole_loop_in_the_harness() {
    a_whole_loop(
        "opencode",
        false,
        |w, port| {
            let config = w.home().join(".config/opencode");
            std::fs::create_dir_all(&config).unwrap();
            std::fs::write(
                config.join("opencode.json"),
                format!(
                    r#"{{"provider": {{"scripted": {{"npm": "@ai-sdk/openai-compatible", "name": "scripted", "options": {{"baseURL": "http://127.0.0.1:{port}/v1"}}, "models": {{"local": {{"name": "local"}}}}}}}}, "model": "scripted/local"}}"#
                ),
            )
            .unwrap();
            vec![]
        },
        // Under the home: what opencode writes there lands in the loop's layer, not the home.
        |w| {
            let real = w.home().join(".local/share/opencode");
            let layered = layer(w).join("upper/.local/share/opencode");
            assert_eq!(
                std::fs::read_dir(&real).map(|d| d.count()).unwrap_or(0),
                0,
                "opencode wrote in the user's home"
            );
            layered
        },
    );
}

/// codex's `$CODEX_HOME/config.toml` pointing at the scripted server on `port`.
fn codex_home(w: &World, port: u16) -> PathBuf {
    let home = w.root().join("codex-home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("config.toml"),
        format!(
            "model = \"local-model\"\nmodel_provider = \"scripted\"\n\n[model_providers.scripted]\nname = \"scripted\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nwire_api = \"responses\"\nrequest_max_retries = 0\nstream_max_retries = 0\n"
        ),
    )
    .unwrap();
    home
}

/// codex's rejection of a command the model asked to run outside its sandbox is a run that
/// asked: recorded `asked` with codex's words as its question, said under the run line, and —
/// planning asking every time — the loop ends naming it and how to answer.
#[test]
fn codex_rejecting_a_command_that_asked_for_approval_is_a_run_that_asked() {
    let Some(bin) = clis() else { return };
    let w = World::new();
    let srv = Server::escalating(
        &w.root(),
        "git push origin main",
        "Should I push the fix to origin?",
    );
    w.settings(srv.port, "max_questions = 0\n");
    let env = vec![
        ("CODEX_HOME", codex_home(&w, srv.port).display().to_string()),
        ("OPENAI_API_KEY", "scripted".into()),
    ];
    let (code, out, err) = w.start(&bin, "push", "codex", "1", "0", &env);
    let all = format!("{out}\n{err}\nrequests: {:?}", srv.paths());
    // A loop that never got a plan ends on its breaker.
    assert_eq!(code, Some(1), "{all}");
    let rejected = "approval policy is Never; reject command — you cannot ask for escalated permissions if the approval policy is Never";
    let runs = w.runs();
    let planning: Vec<&Value> = runs.iter().filter(|r| r["record"] == "planning").collect();
    assert_eq!(planning.len(), 3, "{runs:?}\n{all}");
    for r in &planning {
        assert_eq!(r["outcome"], "asked", "{r}\n{all}");
        assert_eq!(r["question"], rejected, "{r}\n{all}");
    }
    assert!(out.contains(&format!("? asked: \"{rejected}\"")), "{all}");
    let st = w.state();
    assert_eq!(st["stop_reason"], "breaker", "{st}");
    assert!(
        st["stop_detail"]
            .as_str()
            .unwrap_or_default()
            .starts_with(&format!(
                "planning asked \"{rejected}\" instead of writing fix_plan.md, 3 times: answer it ("
            )),
        "{st}"
    );
}

#[test]
fn claude_at_its_rate_limit_hands_the_iteration_to_codex() {
    let Some(bin) = clis() else { return };
    let w = World::new();
    let work = w.work_script();
    let command = format!("sh {}", work.display());
    // claude's server plans, then refuses every conversation with Anthropic's 429; codex's
    // answers.
    let limited = Server::start(&w.root(), &command, 100, 1);
    let open = Server::start(&w.root(), &command, 0, 0);
    std::fs::write(
        w.store().join("wiggum.toml"),
        format!(
            "[defaults]\nfallback_agents = [\"codex\"]\n\n[safety]\nsandbox = \"required\"\nnetwork = [{}, {}]\nmax_time_per_iteration = 180\n",
            limited.port, open.port
        ),
    )
    .unwrap();
    let env = vec![
        (
            "ANTHROPIC_BASE_URL",
            format!("http://127.0.0.1:{}", limited.port),
        ),
        ("ANTHROPIC_API_KEY", "scripted".into()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
        // Claude Code retries a 429 ten times over minutes before it gives up; a user who
        // has fallbacks lets it give up at once.
        ("CLAUDE_CODE_MAX_RETRIES", "0".into()),
        (
            "CODEX_HOME",
            codex_home(&w, open.port).display().to_string(),
        ),
        ("OPENAI_API_KEY", "scripted".into()),
    ];
    let (code, out, err) = w.start(&bin, "fb", "claude", "1", "0", &env);
    let all = format!(
        "{out}\n{err}\nclaude's server: {:?}\ncodex's: {:?}",
        limited.paths(),
        open.paths()
    );
    assert_eq!(code, Some(0), "{all}");
    let runs = w.runs();
    let iterations: Vec<&Value> = runs.iter().filter(|r| r["record"] == "iteration").collect();
    assert_eq!(iterations[0]["outcome"], "limited", "{all}");
    assert!(
        iterations[0]["note"]
            .as_str()
            .unwrap_or_default()
            .starts_with("rate limit: "),
        "{:?}",
        iterations[0]
    );
    let accepted: Vec<&&Value> = iterations
        .iter()
        .filter(|r| r["outcome"] == "accepted")
        .collect();
    assert_eq!(accepted.len(), 2, "{all}");
    assert!(accepted.iter().all(|r| r["agent"] == "codex"), "{all}");
    assert!(out.contains("✓ accepted · by codex · "), "{all}");
    // codex's runs were counted: their tokens are in the spend.
    assert!(
        accepted
            .iter()
            .all(|r| r["tokens_in"].as_u64().unwrap_or(0) > 0),
        "{all}"
    );
    let st = w.state();
    assert!(st["limited_agents"]["claude"].is_string(), "{st}");
}

/// The command the model has codex run in a code loop on a tiny Python project: planning writes
/// two items; iteration 1 adds `mul` but breaks `add` and ticks everything; iteration 2 mends
/// `add` and ticks again.
fn code_work_script(w: &World) -> PathBuf {
    let script = r#"plan="$WIGGUM_DIR/fix_plan.md"
case "$WIGGUM_PHASE" in
planning)
    printf '# Plan\n\n- [ ] Add mul to calc.py\n- [ ] Keep add working\n' > "$plan"
    echo "planned two items"
    ;;
iteration)
    case "$ITERATION" in
    1) printf 'def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n' > calc.py
       echo "Add mul" > "$ITERATION_DIR/review.md" ;;
    *) printf 'def add(a, b):\n    return a + b  # mended\n\n\ndef mul(a, b):\n    return a * b\n' > calc.py
       echo "Mend add" > "$ITERATION_DIR/review.md" ;;
    esac
    sed -i 's/- \[ \]/- [x]/' "$plan"
    echo "iteration $ITERATION done"
    ;;
esac
"#;
    let path = w.root().join("code-work.sh");
    std::fs::write(&path, script).unwrap();
    path
}

#[test]
fn codex_runs_a_code_loop_that_breaks_a_test_then_mends_it_and_ends_green() {
    let Some(bin) = clis() else { return };
    let w = World::new();
    std::fs::write(
        w.art().join("artifact.md"),
        "# Calculator\n\ncalc.py adds and multiplies.\n",
    )
    .unwrap();
    std::fs::write(
        w.art().join("calc.py"),
        "def add(a, b):\n    return a + b\n",
    )
    .unwrap();
    std::fs::write(
        w.art().join("test_calc.py"),
        "import unittest\nimport calc\n\n\nclass TestCalc(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(calc.add(2, 2), 4)\n\n    def test_mul(self):\n        self.assertEqual(calc.mul(3, 4), 12)\n",
    )
    .unwrap();
    let work = code_work_script(&w);
    let srv = Server::start(&w.root(), &format!("sh {}", work.display()), 0, 0);
    w.settings(srv.port, "");
    let env = vec![
        ("CODEX_HOME", codex_home(&w, srv.port).display().to_string()),
        ("OPENAI_API_KEY", "scripted".into()),
    ];
    let art = w.art().display().to_string();
    let args = [
        "wiggum",
        "start",
        "calc",
        "--type",
        "code",
        "--agent",
        "codex",
        "--artifact-path",
        &art,
        "--foreground",
        "--max-iterations",
        "4",
    ];
    let (code, out, err) = w.run(&bin, &args, &env);
    let all = format!("{out}\n{err}\nrequests: {:?}", srv.paths());
    assert_eq!(code, Some(0), "{all}");
    let runs = w.runs();
    let iterations: Vec<&Value> = runs.iter().filter(|r| r["record"] == "iteration").collect();
    assert_eq!(iterations[0]["outcome"], "rejected", "{all}");
    assert!(
        iterations[0]["validation_failed"]
            .as_str()
            .unwrap_or_default()
            .contains("it broke test_calc.TestCalc.test_add"),
        "{all}"
    );
    assert_eq!(iterations[1]["outcome"], "accepted", "{all}");
    assert_eq!(iterations[1]["validation"]["green"], true, "{all}");
    assert_eq!(w.state()["stop_reason"], "plan_empty", "{all}");
    // codex was told why: the second iteration's request carried the failing test's message.
    let requests = std::fs::read_to_string(&srv.log).unwrap_or_default();
    assert!(requests.contains("AssertionError: 0 != 4"), "{all}");
    let log = w.git_log();
    assert!(
        log.iter()
            .any(|s| s.contains("Wiggum iteration 2: Mend add")),
        "{log:?}"
    );
}
