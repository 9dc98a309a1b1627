//! The supervisor is never the agent's deputy: what an agent writes inside the repository is
//! data to the supervisor. Each test has a scripted agent do what a confused or prompt-injected
//! one would, and checks what the user would lose.

use std::path::{Path, PathBuf};

use crate::support::wait_for;
use crate::support::*;

/// A directory outside the test's root, which the agent's sandbox does not open: the user's
/// files elsewhere on the machine.
struct Outside {
    dir: tempfile::TempDir,
}

impl Outside {
    fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("sa-outside-")
            .tempdir()
            .unwrap();
        std::fs::write(dir.path().join("victim.txt"), "the user's file\n").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "TOKEN=s3cr3t-value\n").unwrap();
        std::fs::create_dir_all(dir.path().join("dir")).unwrap();
        Self { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().canonicalize().unwrap().join(rel)
    }

    /// Everything outside is as the user left it.
    fn assert_untouched(&self) {
        assert_eq!(
            std::fs::read_to_string(self.path("victim.txt")).unwrap(),
            "the user's file\n"
        );
        let inside: Vec<_> = std::fs::read_dir(self.path("dir"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        assert!(
            inside.is_empty(),
            "the supervisor wrote outside: {inside:?}"
        );
    }
}

/// Write the attack script the fake agent runs (`FAKE=attack`).
fn attack(t: &TestHome, script: &str) -> String {
    let p = t.root().join("attack.sh");
    std::fs::write(&p, script).unwrap();
    format!("FAKE_ATTACK={}", p.display())
}

fn protected_changed(run: &serde_json::Value) -> Vec<String> {
    run["protected_changed"]
        .as_array()
        .map(|a| a.iter().map(|v| v.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

fn committed_files(dir: &Path) -> String {
    git(dir, &["log", "-p", "--all", "--format=%s"])
}

#[test]
fn settings_the_agent_writes_are_restored_and_never_taken() {
    let t = TestHome::new();
    let out = Outside::new();
    let env = attack(
        &t,
        &format!(
            "cat > \"$WIGGUM_DIR/wiggum.toml\" <<'EOF'\n[safety]\nsandbox = \"off\"\nenv_allow = [\"*\"]\n[hooks]\non_iteration_end = \"touch {m}/hook-ran\"\n[validation]\ncommands = [\"touch {m}/validation-ran\"]\nEOF\n",
            m = out.path("dir").display()
        ),
    );
    t.start_bg(
        "cfg",
        "attack",
        &format!("{env} FAKE_AT=1"),
        &["--foreground", "--max-iterations", "2"],
    )
    .code(0);
    out.assert_untouched();
    let toml = std::fs::read_to_string(t.wiggum("wiggum.toml")).unwrap();
    assert!(!toml.contains("sandbox = \"off\""), "{toml}");
    let first = &t.runs("iteration")[0];
    let st = t.state();
    let sandbox = st["harness"]["sandbox"].as_str().unwrap().to_string();
    if sandbox.contains("read-only") {
        // As root the file is read-only to the agent: its write failed, nothing to restore.
        let log = std::fs::read_to_string(t.records("iteration-001/agent.log")).unwrap();
        assert!(log.contains("Read-only file system"), "{log}");
    } else {
        assert_eq!(first["outcome"], "rejected", "{first}");
        assert_eq!(protected_changed(first), ["wiggum/wiggum.toml"]);
        // The agent's version is kept aside, never executable, never committed.
        let kept = crate::support::home::walk(&t.wiggum("discarded"));
        assert!(kept.contains("wiggum.toml"), "{kept}");
    }
    // The next start is still sandboxed, and takes none of the agent's settings.
    t.start_bg("cfg", "", "", &["--foreground", "--max-iterations", "3"])
        .code(0);
    let st = t.state();
    assert!(
        st["harness"]["sandbox"]
            .as_str()
            .unwrap()
            .contains("enforced"),
        "{st}"
    );
    out.assert_untouched();
}

/// The working directory the run starts in is looked up through its mounts: a path relative
/// to it meets the same read-only `.git` and control files an absolute one does, with the
/// repository in the home (the kit's is, and the home's layer lies over it).
#[test]
fn relative_paths_meet_the_read_only_files_too() {
    let t = TestHome::new();
    let env = attack(
        &t,
        "pwd\nprintf '[x]\\n' >> wiggum/wiggum.toml && echo WROTE-SETTINGS\nprintf '# x\\n' >> .git/config && echo WROTE-GIT\n",
    );
    // The kit's home (the test's directory) is granted to runs, so it gets no layer: the home
    // here is the directory above it, which holds the repository as a user's home does.
    let above = t.root().parent().unwrap().to_path_buf();
    let args = t.start_args(
        "rel",
        &t.art(),
        &t.agent_cmd("attack", &format!("{env} FAKE_AT=1")),
        &["--foreground", "--max-iterations", "1"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    t.run_with(&args, &[("HOME", above.to_str().unwrap())])
        .code(0);
    let sandbox = t.state()["harness"]["sandbox"]
        .as_str()
        .unwrap()
        .to_string();
    let first = t.runs("iteration")[0].clone();
    if sandbox.contains("read-only") {
        // Refused by the kernel, nothing changed to restore: the iteration stands.
        assert_eq!(first["outcome"], "accepted", "{first}");
        let log = std::fs::read_to_string(t.records("iteration-001/agent.log")).unwrap();
        assert!(log.contains(&t.art().display().to_string()), "{log}");
        assert!(
            !log.contains("WROTE-SETTINGS") && !log.contains("WROTE-GIT"),
            "{log}"
        );
        assert_eq!(log.matches("Read-only file system").count(), 2, "{log}");
        assert!(
            sandbox.contains("home through the loop's layer"),
            "{sandbox}"
        );
    } else {
        // No mount namespace here: written, then restored and the iteration rejected.
        assert_eq!(first["outcome"], "rejected", "{first}");
    }
    assert!(
        !std::fs::read_to_string(t.wiggum("wiggum.toml"))
            .unwrap()
            .contains("[x]")
    );
}

#[test]
fn a_changed_settings_file_is_refused_at_start_until_allowed() {
    let t = TestHome::new();
    t.start_bg("allow", "", "", &["--foreground", "--max-iterations", "1"])
        .code(0);
    let cfg = t.wiggum("wiggum.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    assert!(
        text.contains("[hooks]\n") && text.contains("sandbox = \"landlock\""),
        "{text}"
    );
    let text = text
        .replace("[hooks]\n", "[hooks]\non_stop = \"echo stopped\"\n")
        .replace("sandbox = \"landlock\"", "sandbox = \"off\"");
    std::fs::write(&cfg, &text).unwrap();
    let state_before = std::fs::read(t.wiggum("state.json")).unwrap();
    let r = t.start_bg("allow", "", "", &["--foreground", "--max-iterations", "2"]);
    r.code(2);
    let err = r.stderr();
    assert!(
        err.contains("wiggum.toml: changed since it was last allowed (2 keys, 2 of them weakening the harness)"),
        "{err}"
    );
    assert!(
        err.contains("~ safety.sandbox: \"landlock\" → \"off\"  (weakens the harness)")
            && err.contains("+ hooks.on_stop: (unset) → \"echo stopped\"  (weakens the harness)")
            && err.contains("studio-agents wiggum allow allow"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(t.wiggum("state.json")).unwrap(),
        state_before,
        "a refused start writes nothing"
    );
    assert_eq!(
        std::fs::read_to_string(&cfg).unwrap(),
        text,
        "the file is left as it is"
    );
    let a = t.run(&["wiggum", "allow", "allow"]);
    a.code(0);
    assert!(
        a.stdout().contains("allowed, with these changes:"),
        "{}",
        a.stdout()
    );
    t.start_bg("allow", "", "", &["--foreground", "--max-iterations", "2"])
        .code(0);
    assert!(
        t.state()["harness"]["sandbox"]
            .as_str()
            .unwrap()
            .starts_with("sandbox: off"),
        "the person's allowed setting is taken"
    );
}

#[test]
fn links_planted_where_the_loops_files_belong_are_never_written_through() {
    let t = TestHome::new();
    let out = Outside::new();
    let env = attack(
        &t,
        &format!(
            "cd \"$WIGGUM_DIR\"\n\
             rm -rf final discarded; ln -s {dir} final; ln -s {dir} discarded\n\
             rm -f AGENT.md; ln -s {secret} AGENT.md\n\
             rm -f \"$ITERATION_DIR/review.md\"; ln -s {secret} \"$ITERATION_DIR/review.md\"\n\
             (rm -f runs.jsonl && ln -s {victim} runs.jsonl) 2>/dev/null\n\
             (rm -f daemon.log && ln -s {victim} daemon.log) 2>/dev/null\n\
             mkdir -p iterations/001-100 && ln -s {dir} iterations/001-100/iteration-002\n\
             exit 0\n",
            dir = out.path("dir").display(),
            secret = out.path("secret.txt").display(),
            victim = out.path("victim.txt").display(),
        ),
    );
    t.start_bg(
        "links",
        "attack",
        &format!("{env} FAKE_AT=1 FAKE_ITEMS=3"),
        &["--foreground", "--max-iterations", "3"],
    )
    .code(0);
    out.assert_untouched();
    let st = t.state();
    assert_ne!(st["status"], "failed", "{st}");
    let first = &t.runs("iteration")[0];
    assert_eq!(first["outcome"], "rejected", "{first}");
    let changed = protected_changed(first).join(", ");
    for name in [
        "wiggum/AGENT.md (a symbolic link)",
        "wiggum/final (a symbolic link)",
        "wiggum/discarded (a symbolic link)",
        "review.md (a symbolic link)",
    ] {
        assert!(changed.contains(name), "{name} in {changed}");
    }
    // The links are gone, and no secret reached a commit.
    for p in ["AGENT.md", "final", "discarded"] {
        assert!(
            !std::fs::symlink_metadata(t.wiggum(p))
                .unwrap()
                .file_type()
                .is_symlink(),
            "{p}"
        );
    }
    assert!(!committed_files(&t.art()).contains("s3cr3t"));
    // Later iterations ran, in a directory of their own, and were committed.
    let later: Vec<_> = t
        .runs("iteration")
        .into_iter()
        .filter(|r| r["outcome"] == "accepted")
        .collect();
    assert!(!later.is_empty(), "{:?}", t.runs("iteration"));
    // A later start writes its log and records into the loop's own files, not through links.
    t.start_bg("links", "", "", &["--foreground", "--max-iterations", "4"])
        .code(0);
    out.assert_untouched();
}

#[test]
fn a_nul_byte_in_the_review_or_an_oversized_artifact_rejects_nothing_but_that() {
    let t = TestHome::new();
    let env = attack(
        &t,
        "if [ \"$ITERATION\" = 1 ]; then printf 'Fixed\\000 the \\033[31mthing\\n' > \"$ITERATION_DIR/review.md\"; fi\n\
         if [ \"$ITERATION\" = 2 ]; then head -c 17000000 /dev/zero | tr '\\0' a >> \"$ITERATION_DIR/artifact.md\"; fi\n",
    );
    t.start_bg(
        "bytes",
        "attack",
        &format!("{env} FAKE_ITEMS=4"),
        &["--foreground", "--max-iterations", "3"],
    )
    .code(0);
    let st = t.state();
    assert_eq!(st["stop_reason"], "max_iterations", "{st}");
    let log = t.git_log();
    assert!(
        log.iter()
            .any(|s| s.ends_with("|Wiggum iteration 1: Fixed the [31mthing")),
        "{log:?}"
    );
    let runs = t.runs("iteration");
    let second = runs.iter().find(|r| r["iteration"] == 2).unwrap();
    assert_eq!(second["outcome"], "rejected", "{second}");
    assert!(
        protected_changed(second)
            .join(",")
            .contains("artifact.md (larger than the loop reads)"),
        "{second}"
    );
    assert!(
        runs.iter()
            .any(|r| r["iteration"] == 3 && r["outcome"] == "accepted"),
        "{runs:?}"
    );
}

/// Subjects of the commits on `branch`, newest first.
fn subjects(dir: &Path, branch: &str) -> Vec<String> {
    git(dir, &["log", "--format=%s", branch])
        .lines()
        .map(str::to_string)
        .collect()
}

/// The artifact directory as a repository of its own on `main`, its artifact committed.
fn repo_on_main(t: &TestHome) {
    let art = t.art();
    git(&art, &["init", "-q", "-b", "main"]);
    git(&art, &["add", "artifact.md"]);
    git(
        &art,
        &[
            "-c",
            "user.name=u",
            "-c",
            "user.email=u@x",
            "commit",
            "-q",
            "-m",
            "the user's artifact",
        ],
    );
}

/// Run a loop whose agent does `script` to the repository's history at iteration `at`; returns
/// the rejected run's record.
/// Settings with the sandbox off: what the supervisor checks after a run, as on a machine
/// where the run cannot have a mount namespace (`.git` is then writable to a code loop's agent).
fn fallback(t: &TestHome) {
    t.write_home_config("[safety]\nsandbox = \"off\"\n");
}

fn history_attack(t: &TestHome, script: &str, at: u32) -> serde_json::Value {
    // As where no mount namespace can be made: with one, `.git` is read-only to the agent
    // (`doors::a_code_loops_agent_in_place_cannot_touch_git`).
    fallback(t);
    repo_on_main(t);
    let env = attack(
        t,
        &format!(
            "cd \"$ARTIFACT_PATH\"\nexport GIT_AUTHOR_NAME=agent GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=agent GIT_COMMITTER_EMAIL=a@b\n{script}\n"
        ),
    );
    t.start_bg(
        "hist",
        "attack",
        &format!("{env} FAKE_AT={at} FAKE_ITEMS=6"),
        &["--foreground", "--max-iterations", "4"],
    )
    .code(0);
    let st = t.state();
    assert_eq!(st["stop_reason"], "max_iterations", "{st}");
    assert_eq!(
        git(&t.art(), &["symbolic-ref", "HEAD"]),
        "refs/heads/main\n",
        "HEAD is back on the loop's branch"
    );
    t.runs("iteration")
        .into_iter()
        .find(|r| r["iteration"] == at)
        .unwrap()
}

fn assert_every_accepted_iteration_is_on_main(t: &TestHome) {
    let on_main = subjects(&t.art(), "main");
    for r in t.runs("iteration") {
        if r["outcome"] == "accepted" {
            let n = r["iteration"].as_u64().unwrap();
            assert!(
                on_main
                    .iter()
                    .any(|s| s.starts_with(&format!("Wiggum iteration {n}:"))),
                "iteration {n} is on main: {on_main:?}"
            );
        }
    }
    assert_eq!(
        git(
            &t.art(),
            &["status", "--porcelain", "--", "wiggum/fix_plan.md"]
        ),
        ""
    );
}

#[test]
fn an_agent_that_rewinds_the_loops_branch_loses_no_accepted_iteration() {
    let t = TestHome::new();
    let rejected = history_attack(&t, "git reset -q --hard HEAD~2", 3);
    assert_eq!(rejected["outcome"], "rejected", "{rejected}");
    assert!(
        protected_changed(&rejected)
            .join(",")
            .contains("no longer holds its last accepted commit; put back"),
        "{rejected}"
    );
    assert_every_accepted_iteration_is_on_main(&t);
    assert!(subjects(&t.art(), "main")[0].starts_with("Wiggum iteration 4:"));
}

#[test]
fn an_agent_that_amends_a_loop_commit_is_rejected_and_the_commit_kept() {
    let t = TestHome::new();
    let rejected = history_attack(&t, "git commit -q --amend -m 'rewritten by the agent'", 2);
    assert_eq!(rejected["outcome"], "rejected", "{rejected}");
    assert!(
        !subjects(&t.art(), "main")
            .iter()
            .any(|s| s.contains("rewritten"))
    );
    assert_every_accepted_iteration_is_on_main(&t);
}

#[test]
fn an_agent_that_deletes_the_loops_branch_does_not_park_the_loop() {
    let t = TestHome::new();
    let rejected = history_attack(
        &t,
        "git checkout -q -b elsewhere && git branch -q -D main",
        2,
    );
    assert_eq!(rejected["outcome"], "rejected", "{rejected}");
    let why = protected_changed(&rejected).join(",");
    assert!(
        why.contains("HEAD moved off `main` (to `elsewhere`); put back"),
        "{why}"
    );
    assert!(
        !t.wiggum("state.json").exists()
            || t.runs("iteration")
                .iter()
                .all(|r| r["outcome"] != "waiting")
    );
    assert_every_accepted_iteration_is_on_main(&t);
}

#[test]
fn an_agent_that_commits_its_own_work_on_top_is_not_a_rewind() {
    let t = TestHome::new();
    // The supervisor's own check, as where no mount namespace can be made: with one (as
    // root, or in a user namespace) `.git` is read-only to the agent and the write fails
    // (`doors::a_code_loops_agent_in_place_cannot_touch_git`).
    fallback(&t);
    repo_on_main(&t);
    let env = attack(
        &t,
        "cd \"$ARTIFACT_PATH\" && echo mine > own.md && git add own.md && git -c user.name=a -c user.email=a@b commit -q -m 'the agent commits'\n",
    );
    t.start_bg(
        "own",
        "attack",
        &format!("{env} FAKE_AT=2"),
        &["--foreground", "--max-iterations", "3"],
    )
    .code(0);
    let second = t
        .runs("iteration")
        .into_iter()
        .find(|r| r["iteration"] == 2)
        .unwrap();
    assert_eq!(second["outcome"], "accepted", "{second}");
    assert!(
        subjects(&t.art(), "main")
            .iter()
            .any(|s| s == "the agent commits")
    );
    // What it committed is the run's change like any other: counted in its record.
    assert!(
        second["files_changed"]
            .as_array()
            .is_some_and(|f| f.iter().any(|p| p == "own.md")),
        "{second}"
    );
}

#[test]
fn a_code_loops_change_an_agent_committed_itself_is_judged_counted_and_shown() {
    let t = TestHome::new();
    fallback(&t);
    repo_on_main(&t);
    let env = attack(
        &t,
        "cd \"$ARTIFACT_PATH\" && printf 'def mine():\\n    return 1\\n' > mine.py && git add mine.py && git -c user.name=a -c user.email=a@b commit -q -m 'the agent commits'\n",
    );
    t.start_bg(
        "owncode",
        "attack",
        &format!("{env} FAKE_AT=2"),
        &[
            "--foreground",
            "--max-iterations",
            "2",
            "--type",
            "code",
            "--no-validate",
        ],
    )
    .code(0);
    let second = t
        .runs("iteration")
        .into_iter()
        .find(|r| r["iteration"] == 2)
        .unwrap();
    assert_eq!(second["outcome"], "accepted", "{second}");
    assert!(
        second["files_changed"]
            .as_array()
            .is_some_and(|f| f.iter().any(|p| p == "mine.py")),
        "{second}"
    );
    // Its lines counted from the loop's commit before, the agent's own commit in between.
    assert!(second["lines"]["added"].as_u64() >= Some(2), "{second}");
    assert!(second["since"].is_string(), "{second}");
    let shown = t
        .run(&[
            "wiggum",
            "diff",
            "owncode",
            "--iteration",
            "2",
            "--color",
            "never",
        ])
        .stdout();
    assert!(shown.contains("+def mine():"), "{shown}");
}

#[test]
fn git_indirections_the_agent_plants_run_nothing_and_are_put_back() {
    let t = TestHome::new();
    // The supervisor's own check, as where no mount namespace can be made: with one (as
    // root, or in a user namespace) `.git` is read-only to the agent and the write fails
    // (`doors::a_code_loops_agent_in_place_cannot_touch_git`).
    fallback(&t);
    repo_on_main(&t);
    let out = Outside::new();
    let marker = out.path("dir/filter-ran");
    let evil = t.root().join("evil-common");
    let env = attack(
        &t,
        &format!(
            "cd \"$ARTIFACT_PATH\"\n\
             mkdir -p {evil}\n\
             for d in objects refs HEAD; do ln -s \"$PWD/.git/$d\" {evil}/$d; done\n\
             printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = touch {m}\\n[filter \"x\"]\\n\\tclean = touch {m}; cat\\n' > {evil}/config\n\
             echo {evil} > .git/commondir\n\
             echo '*.md filter=x' > .gitattributes\n\
             echo 'more' >> notes.md\n\
             echo '/tmp/elsewhere' > .git/objects/info/alternates 2>/dev/null\n\
             {{ printf '#!/bin/sh\\ntouch {m}\\n'; head -c 2000000 /dev/zero | tr '\\0' '#'; }} > .git/hooks/post-commit 2>/dev/null\n\
             ln -s {m}.sh .git/hooks/pre-push 2>/dev/null\n\
             exit 0\n",
            evil = evil.display(),
            m = marker.display(),
        ),
    );
    std::fs::write(t.art().join("notes.md"), "notes\n").unwrap();
    git(&t.art(), &["add", "notes.md"]);
    git(
        &t.art(),
        &[
            "-c",
            "user.name=u",
            "-c",
            "user.email=u@x",
            "commit",
            "-q",
            "-m",
            "notes",
        ],
    );
    t.start_bg(
        "gitind",
        "attack",
        &format!("{env} FAKE_AT=1"),
        &["--foreground", "--max-iterations", "2"],
    )
    .code(0);
    assert!(!marker.exists(), "a command the agent planted ran");
    assert!(!t.art().join(".git/commondir").exists());
    assert!(!t.art().join(".git/objects/info/alternates").exists());
    let first = &t.runs("iteration")[0];
    assert_eq!(first["outcome"], "rejected", "{first}");
    let changed = protected_changed(first).join(",");
    assert!(changed.contains(".git/commondir"), "{changed}");
    let hooks = std::fs::read_dir(t.art().join(".git/hooks"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| !n.ends_with(".sample"))
        .collect::<Vec<_>>();
    assert!(hooks.is_empty(), "planted hooks left: {hooks:?}");
    // The user's next git commands run nothing of the agent's either.
    git(&t.art(), &["status", "--porcelain"]);
    assert!(
        !marker.exists(),
        "the user's git status ran the agent's fsmonitor"
    );
    assert_ne!(t.state()["status"], "failed");
    out.assert_untouched();
}

#[test]
fn a_git_directory_swapped_for_a_gitfile_ends_the_loop_saying_so() {
    let t = TestHome::new();
    // The supervisor's own check, as where no mount namespace can be made: with one (as
    // root, or in a user namespace) `.git` is read-only to the agent and the write fails
    // (`doors::a_code_loops_agent_in_place_cannot_touch_git`).
    fallback(&t);
    repo_on_main(&t);
    let env = attack(
        &t,
        "cd \"$ARTIFACT_PATH\" && mv .git .git-moved && echo 'gitdir: .git-moved' > .git\n",
    );
    let r = t.start_bg(
        "gitfile",
        "attack",
        &format!("{env} FAKE_AT=1"),
        &["--foreground", "--max-iterations", "2"],
    );
    r.code(1);
    let st = t.state();
    let detail = st["stop_detail"].as_str().unwrap();
    assert!(
        detail.contains(".git (was a directory, now a file)")
            && detail.contains("put the repository back"),
        "{detail}"
    );
    assert!(t.art().join(".git-moved/HEAD").exists(), "nothing lost");
}

#[test]
fn the_supervisors_store_is_out_of_the_agents_sight() {
    let t = TestHome::new();
    // Settings without the test kit's writable root (which holds the store): as a user has them.
    t.write_home_config_raw("");
    let home = t.home().canonicalize().unwrap();
    let env = attack(
        &t,
        &format!(
            "{{ echo \"prompt: $PROMPT_FILE\"\n\
               cat {log} 2>&1 | head -c 300\n\
               cat {prompt} 2>&1 | head -c 300\n\
               ls -R {h} 2>&1 | head -c 300\n\
               test -s \"$PROMPT_FILE\" && echo 'the prompt is readable'\n\
             }} > \"$ARTIFACT_PATH/leak-$ITERATION.txt\"\n",
            h = home.display(),
            log = t.records("iteration-001/agent.log").display(),
            prompt = t.records("iteration-001/prompt.md").display(),
        ),
    );
    t.start_bg(
        "sight",
        "attack,marker",
        &format!("{env} FAKE_AT=2"),
        &["--foreground", "--max-iterations", "2"],
    )
    .code(0);
    let st = t.state();
    if !st["harness"]["sandbox"]
        .as_str()
        .unwrap()
        .contains("enforced")
    {
        panic!("this test needs Landlock, which CI's kernel has: {st}");
    }
    let leak = std::fs::read_to_string(t.art().join("leak-2.txt")).unwrap();
    assert!(!leak.contains("MARKER-1-secret"), "{leak}");
    assert!(
        !leak.contains("Iteration"),
        "an earlier prompt was read: {leak}"
    );
    assert!(leak.contains("the prompt is readable"), "{leak}");
    // Each read is refused by Landlock, or finds nothing where the layered home masks the
    // store with an empty mount (the listing then lists nothing of it).
    let refused = leak.matches("Permission denied").count();
    let empty = leak.matches("No such file").count();
    assert!(refused == 3 || (empty == 2 && refused == 0), "{leak}");
    assert!(!leak.contains("runs\n"), "the store was listed: {leak}");
    // The records are there, for the supervisor and the user.
    let log = std::fs::read_to_string(t.records("iteration-001/agent.log")).unwrap();
    assert!(log.contains("MARKER-1-secret"), "{log}");
}

#[test]
fn the_users_work_anywhere_the_agent_may_write_is_kept_before_it_runs() {
    let t = TestHome::new();
    // A repository of the user's, the loop on one directory of it.
    let proj = t.root().join("proj");
    let art = proj.join("art");
    std::fs::create_dir_all(proj.join("src")).unwrap();
    std::fs::create_dir_all(proj.join("target/debug")).unwrap();
    std::fs::create_dir_all(&art).unwrap();
    std::fs::copy(t.art().join("artifact.md"), art.join("artifact.md")).unwrap();
    std::fs::write(proj.join(".gitignore"), ".env\ntarget/\n").unwrap();
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
    // The user's work in progress, outside the artifact dir.
    std::fs::write(proj.join("src/main.rs"), "fn main() { todo() }\n").unwrap();
    std::fs::write(proj.join("notes.txt"), "half a thought\n").unwrap();
    std::fs::write(proj.join(".env"), "API_KEY=the-users-key\n").unwrap();
    std::fs::write(proj.join("target/debug/big.bin"), vec![0u8; 1 << 20]).unwrap();
    let env = attack(
        &t,
        "cd \"$ARTIFACT_PATH/..\" && git checkout -q -- . && git clean -q -fdx -e art\n",
    );
    let cmd = t.agent_cmd("attack", &format!("{env} FAKE_AT=1"));
    let args = t.start_args(
        "whole",
        &art,
        &cmd,
        &["--foreground", "--max-iterations", "1"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = t.run(&args);
    r.code(0);
    // The agent threw it all away...
    assert!(!proj.join(".env").exists() && !proj.join("notes.txt").exists());
    // ...and the copy holds it as it was, ignored build output aside.
    let kept = t.home().join("kept/whole");
    let dirs: Vec<_> = std::fs::read_dir(&kept).unwrap().flatten().collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let dir = dirs[0].path();
    assert!(
        r.stderr().contains(&format!("is in {}", dir.display())),
        "{}",
        r.stderr()
    );
    let read = |rel: &str| std::fs::read_to_string(dir.join(rel)).unwrap();
    assert_eq!(read("src/main.rs"), "fn main() { todo() }\n");
    assert_eq!(read("notes.txt"), "half a thought\n");
    assert_eq!(read(".env"), "API_KEY=the-users-key\n");
    assert!(
        !dir.join("target").exists(),
        "ignored directories are not copied"
    );
    let status = t.run(&["wiggum", "status", "whole"]).stdout();
    assert!(status.contains(&dir.display().to_string()), "{status}");
}

#[test]
fn recovery_kills_no_live_loops_agent_when_its_lock_file_is_gone() {
    let t = TestHome::new();
    let daemon = t.blocked_at_first("live", "");
    let agent = t.state()["agent_pid"].as_i64().unwrap();
    let alive = |pid: i64| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| !s.split(") ").nth(1).unwrap_or("").starts_with('Z'))
    };
    // Frozen, the supervisor cannot put its lock file back; then a start of the same loop under
    // another $STUDIO_AGENTS_HOME (whose home lock is another file) finds no lock held.
    let signal = |sig: &str| {
        std::process::Command::new("kill")
            .args([sig, &daemon.to_string()])
            .status()
            .unwrap()
    };
    signal("-STOP");
    std::fs::remove_file(t.wiggum(".lock")).unwrap();
    let other = t.root().join("other-home");
    std::fs::create_dir_all(&other).unwrap();
    let cmd = t.agent_cmd("", "");
    let args = t.start_args("live", &t.art(), &cmd, &["--foreground"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let under_other = [("STUDIO_AGENTS_HOME", other.to_str().unwrap())];
    // The person takes the loop's settings under the other home first (it never ran there).
    let art = t.art().display().to_string();
    t.run_with(
        &["wiggum", "allow", "live", "--artifact-path", &art],
        &under_other,
    )
    .code(0);
    let r = t.run_with(&args, &under_other);
    signal("-CONT");
    r.code(3);
    assert!(
        r.stderr()
            .contains(&format!("still run by its supervisor (pid {daemon})")),
        "{}",
        r.stderr()
    );
    assert!(alive(agent), "the running loop's agent was killed");
    std::fs::write(t.release_file(), "").unwrap();
    let st = t.wait_stopped("live");
    assert_eq!(st["status"], "completed", "{st}");
}

#[test]
fn the_git_command_the_loop_runs_is_confined_like_an_agent() {
    let t = TestHome::new();
    repo_on_main(&t);
    let out = Outside::new();
    let art = t.art();
    // A filter the repository configures: what it writes outside the repository is refused,
    // what it converts is stored as `git add` would.
    git(
        &art,
        &[
            "config",
            "filter.up.clean",
            &format!("tee {}/leak | tr a-z A-Z", out.path("dir").display()),
        ],
    );
    std::fs::write(art.join(".gitattributes"), "*.up filter=up\n").unwrap();
    git(&art, &["add", ".gitattributes"]);
    git(
        &art,
        &[
            "-c",
            "user.name=u",
            "-c",
            "user.email=u@x",
            "commit",
            "-q",
            "-m",
            "attrs",
        ],
    );
    let env = attack(&t, "echo 'shout this' > \"$ARTIFACT_PATH/note.up\"\n");
    t.start_bg(
        "conf",
        "attack",
        &format!("{env} FAKE_AT=1"),
        &["--foreground", "--max-iterations", "1"],
    )
    .code(0);
    assert_eq!(git(&art, &["show", "HEAD:note.up"]), "SHOUT THIS\n");
    out.assert_untouched();
}

#[test]
fn settings_the_agent_writes_are_restored_as_an_unprivileged_user_too() {
    // Unprivileged, the file is bound read-only in the run's user namespace where the kernel
    // allows one; elsewhere the supervisor's check is what restores.
    let t = TestHome::new();
    let env = attack(
        &t,
        "printf '[safety]\\nsandbox = \"off\"\\nenv_allow = [\"*\"]\\n' > \"$WIGGUM_DIR/wiggum.toml\"\n",
    );
    let cmd = t.agent_cmd("attack", &format!("{env} FAKE_AT=1"));
    let args = t.start_args(
        "cfgu",
        &t.art(),
        &cmd,
        &["--foreground", "--max-iterations", "2"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    t.run_unprivileged(&args, &[]).code(0);
    let first = &t.runs("iteration")[0];
    let sandbox = t.state()["harness"]["sandbox"]
        .as_str()
        .unwrap()
        .to_string();
    if sandbox.contains("read-only") {
        let log = std::fs::read_to_string(t.records("iteration-001/agent.log")).unwrap();
        assert!(log.contains("Read-only file system"), "{log}");
    } else {
        assert_eq!(first["outcome"], "rejected", "{first}");
        assert_eq!(protected_changed(first), ["wiggum/wiggum.toml"]);
    }
    let toml = std::fs::read_to_string(t.wiggum("wiggum.toml")).unwrap();
    assert!(!toml.contains("sandbox = \"off\""), "{toml}");
    assert!(
        t.state()["harness"]["sandbox"]
            .as_str()
            .unwrap()
            .contains("enforced")
    );
}

#[test]
fn what_a_run_planted_before_its_supervisor_was_killed_is_put_back_at_the_next_start() {
    let t = TestHome::new();
    // The supervisor's own check, as where no mount namespace can be made: with one (as
    // root, or in a user namespace) `.git` is read-only to the agent and the write fails
    // (`doors::a_code_loops_agent_in_place_cannot_touch_git`).
    fallback(&t);
    let env = format!(
        "FAKE_AT=1 FAKE_RELEASE={} FAKE_BLOCK_AT=1",
        t.release_file().display()
    );
    t.start_bg("crashplant", "tamper,block", &env, &[]).code(0);
    // The agent garbles state.json before it blocks: the supervisor is found by its lock.
    t.wait_blocked();
    let pid = t.status_json("crashplant")["pid"]
        .as_i64()
        .expect("the supervisor holds the lock");
    let planted = t.art().join(".git/config.worktree");
    assert!(planted.exists(), "the agent planted its config");
    kill_outright(pid);
    // With the sandbox off the run has no cgroup, so no watcher ends it with its supervisor:
    // end the orphaned agent as the watcher does, before it holds the loop's lock any longer.
    crate::support::procs::kill_all(&t.token);
    wait_for(
        "the orphaned run to end",
        std::time::Duration::from_secs(10),
        || match crate::support::procs::with_token(&t.token).len() {
            0 => Ok(()),
            n => Err(n),
        },
    );
    std::fs::write(t.release_file(), "").unwrap();
    // The killed supervisor's lock goes with its last open file: wait for the kernel to say
    // so (a loaded machine reaps late), not for a time.
    wait_for(
        "the killed supervisor's lock to be free",
        std::time::Duration::from_secs(30),
        || {
            let v = t.status_json("crashplant");
            if v["pid"].is_null() { Ok(()) } else { Err(v) }
        },
    );
    let r = t.start_bg(
        "crashplant",
        "",
        "",
        &["--foreground", "--max-iterations", "1"],
    );
    assert!(
        !planted.exists(),
        "the planted config.worktree is still there; the start said:\n{}",
        r.stderr()
    );
    assert!(
        r.stderr()
            .contains("the run a dead supervisor left changed .git/config.worktree"),
        "{}",
        r.stderr()
    );
    // A hook that was not there before the run (git's own samples only) goes too.
    let hook = t.art().join(".git/hooks/pre-commit");
    assert!(
        !hook.exists(),
        "the planted hook is still there:\n{}",
        r.stderr()
    );
    assert!(r.stderr().contains("hooks/pre-commit"), "{}", r.stderr());
    crate::support::procs::kill_all(&t.token);
}

#[test]
fn a_settings_file_found_at_a_first_start_is_not_taken_when_it_weakens_the_harness() {
    let t = TestHome::new();
    let out = Outside::new();
    let marker = out.path("hook-ran");
    std::fs::create_dir_all(t.wiggum("")).unwrap();
    let helper = t.agent_cmd("", "FAKE_ITEMS=1");
    // Planted before the user's first start: a hook, an agent, the planning agent.
    std::fs::write(
        t.wiggum("wiggum.toml"),
        format!(
            "[defaults]\nmax_iterations = 1\nplanning_agent = \"helper\"\n[agents]\nhelper = {helper:?}\n[hooks]\non_iteration_end = \"touch {}\"\n",
            marker.display()
        ),
    )
    .unwrap();
    let disk = || {
        let mut all = crate::support::home::snapshot(&t.home());
        all.extend(crate::support::home::snapshot(&t.art()));
        all
    };
    let before = disk();
    let r = t.start_fg("first", "", &["--max-iterations", "1"]);
    r.code(2);
    let art = t.art().display().to_string();
    assert_eq!(
        r.stderr(),
        format!(
            "error: {cfg}: never allowed for this loop, 3 keys weakening the harness; the agent can write this file, so it is not taken silently — review it, then `STUDIO_AGENTS_HOME={home} studio-agents wiggum allow first --artifact-path {art}` (or put it back)\n  + agents.helper: (unset) → {helper:?}  (weakens the harness)\n  + defaults.planning_agent: (unset) → \"helper\"  (weakens the harness)\n  + hooks.on_iteration_end: (unset) → \"touch {m}\"  (weakens the harness)\n",
            cfg = t.wiggum("wiggum.toml").display(),
            m = marker.display(),
            home = t.home().display(),
        )
    );
    assert_eq!(disk(), before, "a refused start writes nothing");
    assert!(!marker.exists());
    // The person reviews it and allows it: the loop never ran, so its directory names it.
    let a = t.run(&["wiggum", "allow", "first", "--artifact-path", &art]);
    a.code(0);
    assert!(
        a.stdout()
            .contains("allowed, with these changes:\n  + agents.helper:"),
        "{}",
        a.stdout()
    );
    t.start_fg("first", "", &["--max-iterations", "1"]).code(0);
    assert!(marker.exists(), "the allowed hook ran");
}

#[test]
fn a_settings_file_that_only_tunes_the_loop_is_taken_at_a_first_start() {
    let t = TestHome::new();
    std::fs::create_dir_all(t.wiggum("")).unwrap();
    std::fs::write(
        t.wiggum("wiggum.toml"),
        "[defaults]\nmax_iterations = 1\npass_threshold = 0.5\n[safety]\nsandbox = \"landlock\"\n",
    )
    .unwrap();
    t.start_fg("tuned", "", &[]).code(0);
    assert_eq!(t.state()["max_iterations"], 1, "{}", t.state());
}

#[test]
fn fallback_agents_changed_in_the_loop_s_file_are_named_as_weakening_the_harness() {
    let t = TestHome::new();
    t.start_fg("fb", "", &["--max-iterations", "1"]).code(0);
    let cfg = t.wiggum("wiggum.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    assert!(!text.contains("fallback_agents"), "{text}");
    std::fs::write(
        &cfg,
        text.replace(
            "[defaults]\n",
            "[defaults]\nfallback_agents = [\"helper\"]\n",
        ),
    )
    .unwrap();
    let r = t.start_fg("fb", "", &["--max-iterations", "2"]);
    r.code(2);
    assert!(
        r.stderr()
            .contains("(1 key, 1 of them weakening the harness)")
            && r.stderr().contains(
                "\n  + defaults.fallback_agents: (unset) → [\"helper\"]  (weakens the harness)"
            ),
        "{}",
        r.stderr()
    );
}

/// The state lies in the agent's reach: a run that names another process group there (a
/// process of the user's) before its supervisor is killed does not have the next start stop
/// that group.
#[test]
fn a_process_group_an_agent_named_in_the_state_is_not_stopped_at_the_next_start() {
    let t = TestHome::new();
    let mut victim = std::process::Command::new("setsid")
        .args(["sleep", "300"])
        .spawn()
        .unwrap();
    let vpid = victim.id();
    // The victim leads a group of its own once setsid has made it a session leader.
    let group_of = |pid: u32| -> Option<String> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let rest = stat.rsplit_once(") ")?.1.to_string();
        rest.split(' ').nth(2).map(str::to_string)
    };
    wait_for(
        "the victim's own group",
        std::time::Duration::from_secs(10),
        || match group_of(vpid) {
            Some(g) if g == vpid.to_string() => Ok(()),
            other => Err(other),
        },
    );
    let agent = t.root().join("forger.sh");
    std::fs::write(
        &agent,
        format!(
            "#!/bin/sh\ncat > /dev/null\nwhile [ ! -e '{release}' ]; do\n  python3 -c 'import json,os; p=os.environ[\"WIGGUM_DIR\"]+\"/state.json\"; s=json.load(open(p)); s[\"agent_pgid\"]={vpid}; open(p,\"w\").write(json.dumps(s))'\n  sleep 0.1\ndone\n",
            release = t.release_file().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&agent, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let args = t.start_args("forged", &t.art(), &agent.display().to_string(), &[]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    t.run(&args).code(0);
    let st = t.wait_state("the agent's forgery", |s| {
        s["agent_pgid"] == serde_json::json!(vpid)
    });
    let pid = st["pid"].as_i64().unwrap();
    kill_outright(pid);
    std::fs::write(t.release_file(), "").unwrap();
    crate::support::procs::kill_all(&t.token);
    wait_for(
        "the killed supervisor's lock to be free",
        std::time::Duration::from_secs(30),
        || {
            let v = t.status_json("forged");
            if v["pid"].is_null() { Ok(()) } else { Err(v) }
        },
    );
    let again = t.start_args(
        "forged",
        &t.art(),
        "",
        &["--foreground", "--max-iterations", "1"],
    );
    let again: Vec<&str> = again.iter().map(String::as_str).collect();
    let r = t.run(&again);
    let alive =
        std::fs::read_to_string(format!("/proc/{vpid}/stat")).is_ok_and(|s| !s.contains(") Z"));
    victim.kill().unwrap();
    victim.wait().unwrap();
    assert!(
        alive,
        "the victim was stopped: {}\n{}",
        r.stdout(),
        r.stderr()
    );
}

/// Kill the supervisor `pid` outright (SIGKILL) and wait until it is gone (a zombie counts).
fn kill_outright(pid: i64) {
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    wait_for(
        "the supervisor to be gone",
        std::time::Duration::from_secs(10),
        || match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(s) if !s.contains(") Z") => Err(s),
            _ => Ok(()),
        },
    );
}

#[test]
fn a_fifo_an_agent_puts_where_git_reads_its_rules_does_not_hang_the_loop() {
    let t = TestHome::new();
    repo_on_main(&t);
    // libgit2 (and git) would open it and wait for a writer for ever.
    let env = attack(
        &t,
        "cd \"$ARTIFACT_PATH\" && mkdir -p sub x/y && echo hi > sub/a.txt && echo q > x/y/f.txt \\
         && mkfifo sub/.gitattributes sub/.gitignore .gitignore x/.gitignore sub/.p \\
         && ln -s ../../sub/.p x/y/.gitattributes\n",
    );
    t.start_bg(
        "fifo",
        "attack",
        &format!("{env} FAKE_AT=1"),
        &["--foreground", "--max-iterations", "2"],
    )
    .code(0);
    for planted in [
        "sub/.gitattributes",
        "sub/.gitignore",
        ".gitignore",
        "x/.gitignore",
        "x/y/.gitattributes",
    ] {
        assert!(
            std::fs::symlink_metadata(t.art().join(planted)).is_err(),
            "{planted} is still there"
        );
    }
    let tracked = git(&t.art(), &["ls-files"]);
    assert!(
        tracked.contains("sub/a.txt") && tracked.contains("x/y/f.txt"),
        "{tracked}"
    );
}

#[test]
fn a_fifo_an_agent_puts_in_the_git_directory_does_not_hang_the_loop() {
    let t = TestHome::new();
    // With `.git` writable (no mount namespace): the config as a FIFO, after a commit of the
    // agent's own that sends the check to the repository itself.
    let run = history_attack(
        &t,
        "echo own > own.md && git add own.md && git commit -q -m own && rm .git/config && mkfifo .git/config .git/packed-refs",
        2,
    );
    assert!(
        std::fs::symlink_metadata(t.art().join(".git/config")).is_ok_and(|m| m.is_file()),
        "{run}"
    );
    assert!(!t.art().join(".git/packed-refs").exists());
    // The attack ran to its end: its commit is there, its config put back and said.
    assert!(subjects(&t.art(), "main").iter().any(|s| s == "own"));
    assert!(
        protected_changed(&run).iter().any(|c| c.contains("config")),
        "{run}"
    );
    assert_every_accepted_iteration_is_on_main(&t);
}

#[test]
fn what_an_agent_puts_in_the_place_of_the_state_or_its_spare_neither_hangs_nor_ends_the_loop() {
    // A FIFO for the state (read back after the run to see whether the agent changed it), and a
    // deep directory, read-only to its owner, for the spare the state is saved through.
    let t = TestHome::new();
    let env = attack(
        &t,
        "cd \"$WIGGUM_DIR\" && rm -f state.json && mkfifo state.json \\
         && rm -rf .state.json.spare.tmp && mkdir -p .state.json.spare.tmp/a/b/c/d \\
         && echo x > .state.json.spare.tmp/a/b/c/d/f && chmod 500 .state.json.spare.tmp/a\n",
    );
    t.start_bg(
        "state",
        "attack",
        &format!("{env} FAKE_AT=1"),
        &["--foreground", "--max-iterations", "3"],
    )
    .code(0);
    let st = t.state();
    assert_eq!(st["stop_reason"], "max_iterations", "{st}");
    let iters = t.runs("iteration");
    assert_eq!(iters.len(), 3, "{iters:?}");
    assert!(
        protected_changed(&iters[0]).contains(&"wiggum/state.json".to_string()),
        "{iters:?}"
    );
    // Nothing of it is left beside the state of the loop that ended.
    assert!(!t.wiggum(".state.json.spare.tmp").exists());
}
