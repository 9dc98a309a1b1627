//! Beyond one machine, offline: `run-remote` as a pod runs it, against a local bare repository
//! as the remote — it clones, claims the topic, pushes after each accepted iteration, survives a
//! SIGKILL with no commit lost, refuses a second run while the first one's heartbeat is fresh;
//! `list --remote` reads the loop back from another directory; `manifest` renders the objects.

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::Duration;

use crate::support::{TestHome, git, wait_for};

/// A bare repository whose main branch holds a loop's artifact dir `art/` with its settings:
/// the scripted agent, no gate, `items` plan items.
fn origin(t: &TestHome, fake: &str, extra_env: &str, items: u32) -> String {
    let seed = t.root().join("seed");
    std::fs::create_dir_all(seed.join("art/wiggum")).unwrap();
    git(&seed, &["init", "-q", "-b", "main"]);
    std::fs::write(seed.join("art/artifact.md"), "# Notes\n\nA first draft.\n").unwrap();
    let agent = t.agent_cmd(fake, &format!("FAKE_ITEMS={items} {extra_env}"));
    std::fs::write(
        seed.join("art/wiggum/wiggum.toml"),
        format!(
            "[defaults]\nagent = \"fake\"\nmax_iterations = 10\n[agents]\nfake = {agent:?}\n[gate]\ntarget = \"off\"\n"
        ),
    )
    .unwrap();
    git(&seed, &["add", "."]);
    git(&seed, &["commit", "-qm", "the draft"]);
    let bare = t.root().join("origin.git");
    git(
        &t.root(),
        &[
            "clone",
            "-q",
            "--bare",
            seed.to_str().unwrap(),
            bare.to_str().unwrap(),
        ],
    );
    bare.display().to_string()
}

fn run_remote(t: &TestHome, url: &str, work: &Path, extra: &[&str]) -> Child {
    let w = work.display().to_string();
    let mut args = vec![
        "wiggum",
        "run-remote",
        "notes",
        "--remote",
        url,
        "--work",
        &w,
        "--path",
        "art",
        "--heartbeat",
        "1",
    ];
    args.extend_from_slice(extra);
    // Output to a file: a pipe nobody reads while the pod runs would fill and stall it.
    let log = std::fs::File::create(work.with_extension("log")).unwrap();
    t.cmd(&args)
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap()
}

/// Commits on the loop's branch in the bare repository, oldest first.
fn branch_commits(url: &str) -> Vec<String> {
    let out = std::process::Command::new("git")
        .args([
            "--git-dir",
            url,
            "log",
            "--reverse",
            "--format=%H %s",
            "refs/heads/wiggum/notes",
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

fn accepted(commits: &[String]) -> usize {
    commits
        .iter()
        .filter(|c| c.contains("Wiggum iteration"))
        .count()
}

#[test]
fn a_killed_pod_loses_no_pushed_commit_and_the_next_run_resumes_from_the_branch() {
    let t = TestHome::new();
    t.write_home_config("");
    let env = format!(
        "FAKE_RELEASE={} FAKE_BLOCK_AT=3",
        t.release_file().display()
    );
    let url = origin(&t, "block", &env, 4);
    let mut first = run_remote(&t, &url, &t.root().join("pod1"), &["--stale-after", "3"]);
    // Iterations 1 and 2 are accepted and pushed; iteration 3's agent waits.
    let before = wait_for(
        "two accepted iterations on the branch",
        Duration::from_secs(30),
        || {
            let c = branch_commits(&url);
            if accepted(&c) >= 2 { Ok(c) } else { Err(c) }
        },
    );
    // ... and their run records with them.
    wait_for("their records pushed", Duration::from_secs(30), || {
        let out = std::process::Command::new("git")
            .args([
                "--git-dir",
                &url,
                "show",
                "refs/studio-agents/notes:runs.jsonl",
            ])
            .output()
            .unwrap();
        let log = String::from_utf8_lossy(&out.stdout).to_string();
        let n = log.matches("\"outcome\":\"accepted\"").count();
        if n >= 2 { Ok(()) } else { Err(n) }
    });
    // A second run while the first one's heartbeat is fresh: refused.
    let early = t.root().join("pod-early");
    let refused = run_remote(&t, &url, &early, &["--stale-after", "3"])
        .wait()
        .unwrap();
    let said = std::fs::read_to_string(early.with_extension("log")).unwrap();
    assert_eq!(refused.code(), Some(3), "{said}");
    assert!(said.contains("is running on branch wiggum/notes"), "{said}");
    // The pod is killed outright (eviction): nothing of it survives.
    first.kill().unwrap();
    first.wait().unwrap();
    std::fs::write(t.release_file(), "").unwrap();
    // A new pod is refused (exit 3) while the dead one's last heartbeat is fresh, and takes the
    // loop over once it is stale: no fixed wait, the new pod tries until it may.
    let mut tries = 0;
    let (second, said) = wait_for(
        "the dead pod's heartbeat to go stale",
        Duration::from_secs(30),
        || {
            tries += 1;
            let pod = t.root().join(format!("pod2-{tries}"));
            let out = run_remote(&t, &url, &pod, &["--stale-after", "3"])
                .wait()
                .unwrap();
            let said = std::fs::read_to_string(pod.with_extension("log")).unwrap();
            if out.code() == Some(3) && said.contains("is running on branch wiggum/notes") {
                Err(said)
            } else {
                Ok((out, said))
            }
        },
    );
    assert_eq!(second.code(), Some(0), "{said}");
    let after = branch_commits(&url);
    assert_eq!(
        &after[..before.len()],
        &before[..],
        "a pushed commit was lost"
    );
    assert_eq!(accepted(&after), 4, "{after:#?}");

    // Another directory, no local loop: the branch's records show it.
    let other = TestHome::new();
    let list = other.run(&["wiggum", "list", "--remote", &url]);
    list.code(0);
    let out = list.stdout();
    assert!(
        out.lines()
            .any(|l| l.starts_with("notes") && l.contains("completed")),
        "{out}"
    );
    // The dashboard lists it too.
    let mut serve = other
        .cmd(&["wiggum", "serve", "--bind", "127.0.0.1:0", "--remote", &url])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(serve.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|s| s.split('/').next())
        .unwrap();
    // The page is the user's: the token of the address `serve` printed.
    let token = line
        .split("token=")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap();
    let mut c = std::net::TcpStream::connect(addr).unwrap();
    std::io::Write::write_all(
        &mut c,
        format!(
            "GET / HTTP/1.1\r\nhost: {addr}\r\nx-wiggum-token: {token}\r\nconnection: close\r\n\r\n"
        )
        .as_bytes(),
    )
    .unwrap();
    let mut page = String::new();
    std::io::Read::read_to_string(&mut c, &mut page).unwrap();
    serve.kill().ok();
    serve.wait().ok();
    assert!(
        page.contains(">notes</a>") && page.contains("completed"),
        "{page}"
    );
    let st = other.run(&["wiggum", "status", "notes", "--remote", &url, "--json"]);
    st.code(0);
    let v: serde_json::Value = serde_json::from_str(&st.stdout()).unwrap();
    assert_eq!(v["state"]["stop_reason"], "plan_empty", "{v}");
    // And the analytics over its run log, read from the same records.
    let report = other.run(&["wiggum", "report", "--remote", &url, "--json"]);
    report.code(0);
    let r: serde_json::Value = serde_json::from_str(&report.stdout()).unwrap();
    assert!(r["iterations"].as_u64().unwrap() >= 4, "{r}");
    // And its summary: the lift from the draft to the final artifact on the branch.
    let summary = other.run(&[
        "wiggum", "summary", "notes", "--remote", &url, "--path", "art", "--json",
    ]);
    summary.code(0);
    let s: serde_json::Value = serde_json::from_str(&summary.stdout()).unwrap();
    assert!(s["lift"].is_object(), "{s}");
    assert!(s["lines"].as_array().is_some_and(|l| l.len() >= 4), "{s}");
}

#[test]
fn two_runs_for_one_topic_at_once_exactly_one_runs() {
    let t = TestHome::new();
    t.write_home_config("");
    let env = format!("FAKE_RELEASE={}", t.release_file().display());
    let url = origin(&t, "block", &env, 2);
    let a = run_remote(&t, &url, &t.root().join("a"), &[]);
    let b = run_remote(&t, &url, &t.root().join("b"), &[]);
    // The loser ends at once with exit 3; the winner waits on its blocked agent.
    let mut runs = vec![a, b];
    let loser = wait_for("one run to give up", Duration::from_secs(30), || {
        for (i, c) in runs.iter_mut().enumerate() {
            if let Some(s) = c.try_wait().unwrap() {
                return Ok((i, s));
            }
        }
        Err(())
    });
    assert_eq!(loser.1.code(), Some(3), "the losing run's exit");
    let mut winner = runs.remove(1 - loser.0);
    // Its agent waits for the release file, which does not exist yet: it cannot have ended.
    assert!(winner.try_wait().unwrap().is_none(), "the winner runs on");
    std::fs::write(t.release_file(), "").unwrap();
    let out = winner.wait().unwrap();
    assert_eq!(out.code(), Some(0));
    assert_eq!(accepted(&branch_commits(&url)), 2);
}

#[test]
fn a_manifest_names_the_entrypoint_limits_and_secret_and_never_a_key() {
    let t = TestHome::new();
    t.write_home_config(
        "[safety]\nmax_time_per_loop = 7200\nmax_memory_mb = 2048\nkill_grace_secs = 20\n",
    );
    t.start_fg("notes", "", &["--max-iterations", "1"]).code(0);
    let out: PathBuf = t.root().join("k8s");
    let r = t.run_with(
        &[
            "wiggum",
            "manifest",
            "notes",
            "--kubernetes",
            "--image",
            "reg.example.com/sa:1",
            "--remote",
            "git@example.com:team/notes.git",
            "--secret",
            "agent-keys",
            "-o",
            out.to_str().unwrap(),
        ],
        &[("ANTHROPIC_API_KEY", "sk-secret-value")],
    );
    r.code(0);
    let yaml = std::fs::read_to_string(out.join("wiggum-notes.yaml")).unwrap();
    for want in [
        "kind: ConfigMap",
        "kind: Job",
        "activeDeadlineSeconds: 7200",
        "terminationGracePeriodSeconds: 50",
        "memory: 2304Mi",
        "runAsNonRoot: true",
        "restartPolicy: Never",
        "- run-remote",
        "- \"git@example.com:team/notes.git\"",
        "name: agent-keys",
        "PROMPT.md: |",
    ] {
        assert!(yaml.contains(want), "{want} missing:\n{yaml}");
    }
    assert!(!yaml.contains("sk-secret-value"));
    // An unregistered topic is refused.
    t.run(&["wiggum", "manifest", "nope", "--kubernetes"])
        .code(2);
}

#[test]
fn a_manifest_is_built_from_the_settings_it_ships_and_an_unallowed_change_is_refused() {
    let t = TestHome::new();
    t.start_fg("notes", "", &["--max-iterations", "1"]).code(0);
    let manifest = || t.run(&["wiggum", "manifest", "notes", "--kubernetes"]);
    assert!(
        !manifest()
            .code(0)
            .stdout()
            .contains("activeDeadlineSeconds")
    );
    // The user gives the loop a time budget in its own settings file.
    let file = t.wiggum("wiggum.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    let text = text.replace("max_time_per_loop = 0", "max_time_per_loop = 7200");
    assert!(text.contains("max_time_per_loop = 7200"), "{text}");
    std::fs::write(&file, &text).unwrap();
    // Not allowed yet: refused as `start` refuses it, nothing printed.
    let r = manifest();
    r.code(2);
    assert!(
        r.stderr().contains("changed since it was last allowed"),
        "{}",
        r.stderr()
    );
    assert!(r.stdout().is_empty(), "{}", r.stdout());
    t.run(&["wiggum", "allow", "notes"]).code(0);
    let r = manifest();
    r.code(0);
    let yaml = r.stdout();
    assert!(
        yaml.contains("max_time_per_loop = 7200"),
        "the ConfigMap:\n{yaml}"
    );
    assert!(
        yaml.contains("activeDeadlineSeconds: 7200"),
        "the Job:\n{yaml}"
    );
}
