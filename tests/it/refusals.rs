//! A refused command leaves the disk as it found it; `forget` lets a topic go; kept copies hold
//! the user's work only, say what they hold, and expire.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::support::home::snapshot;
use crate::support::{TestHome, git};

/// A repository at `dir` with `artifact.md` committed and the user's `notes.md` not.
fn repo_with_work(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("artifact.md"),
        "# B\n\n## Summary\nAnother report.\n",
    )
    .unwrap();
    git(dir, &["init", "-q"]);
    git(dir, &["add", "artifact.md"]);
    git(dir, &["commit", "-qm", "base"]);
    std::fs::write(dir.join("notes.md"), "the user's notes\n").unwrap();
}

/// Everything under the home but the running loop's own records, and everything under `b`.
fn disk(t: &TestHome, b: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let running = t.records("");
    let mut all: BTreeMap<PathBuf, Vec<u8>> = snapshot(&t.home())
        .into_iter()
        .filter(|(p, _)| !p.starts_with(&running))
        .collect();
    all.extend(snapshot(b));
    all
}

#[test]
fn every_refusal_of_start_leaves_the_disk_as_it_found_it() {
    let t = TestHome::new();
    let pid = t.blocked_at_first("dup", "");
    let b = t.root().join("b");
    repo_with_work(&b);
    let no_artifact = t.root().join("empty");
    std::fs::create_dir_all(&no_artifact).unwrap();
    let fake = t.agent_cmd("", "FAKE_ITEMS=1");
    let (art, bs, empty) = (
        t.art().display().to_string(),
        b.display().to_string(),
        no_artifact.display().to_string(),
    );
    let cases: [(&[&str], i32, String); 12] = [
        (
            &["dup", "--artifact-path", &bs, "--agent-cmd", &fake],
            2,
            format!(
                "error: topic `dup` is already registered for {art}; pick another topic, or `studio-agents wiggum forget dup` first"
            ),
        ),
        (
            &["dup", "--artifact-path", &art, "--agent-cmd", &fake],
            3,
            format!("error: loop `dup` is already running (pid {pid}"),
        ),
        (
            &["other", "--artifact-path", &bs, "--agent", "no-such-agent"],
            2,
            "no-such-agent".into(),
        ),
        (
            &[
                "other",
                "--artifact-path",
                &bs,
                "--agent-cmd",
                "./missing-agent.sh",
            ],
            2,
            "missing-agent.sh".into(),
        ),
        (
            &[
                "other",
                "--artifact-path",
                &bs,
                "--agent-cmd",
                &fake,
                "--evaluator",
                "nope",
            ],
            2,
            "nope".into(),
        ),
        (
            &[
                "other",
                "--artifact-path",
                &bs,
                "--agent-cmd",
                &fake,
                "--type",
                "nope",
            ],
            2,
            "nope".into(),
        ),
        (
            &[
                "other",
                "--artifact-path",
                &bs,
                "--agent-cmd",
                &fake,
                "--max-iterations",
                "0",
            ],
            2,
            "error: --max-iterations ".into(),
        ),
        (
            &["other", "--artifact-path", &empty, "--agent-cmd", &fake],
            2,
            format!("error: --artifact-path {empty}: no artifact.md"),
        ),
        (
            &["../x", "--artifact-path", &bs, "--agent-cmd", &fake],
            2,
            "error: topic `../x`".into(),
        ),
        (
            &[
                "other",
                "--artifact-path",
                &bs,
                "--agent-cmd",
                &fake,
                "--validate",
                " ",
            ],
            2,
            "error: --validate \" \": an empty command".into(),
        ),
        (
            &[
                "other",
                "--artifact-path",
                &bs,
                "--agent-cmd",
                &fake,
                "--foreground",
                "--agent",
                "x",
            ],
            2,
            "cannot be used with".into(),
        ),
        // Every check passes: the dry run, which is every check and nothing more, writes nothing.
        (
            &[
                "other",
                "--artifact-path",
                &bs,
                "--agent-cmd",
                &fake,
                "--dry-run",
            ],
            0,
            String::new(),
        ),
    ];
    for (args, code, said) in cases {
        let before = (disk(&t, &b), snapshot(&no_artifact));
        let mut full = vec!["wiggum", "start"];
        full.extend_from_slice(args);
        let r = t.run(&full);
        r.code(code);
        assert!(r.stderr().contains(&said), "{args:?}: {}", r.stderr());
        assert_eq!(
            (disk(&t, &b), snapshot(&no_artifact)),
            before,
            "{args:?} wrote"
        );
    }
    // `forget` of the running loop is refused too, and changes nothing.
    let before = disk(&t, &b);
    let r = t.run(&["wiggum", "forget", "dup", "--kept"]);
    r.code(3);
    assert_eq!(
        r.stderr(),
        format!(
            "error: loop `dup` is running (pid {pid}); stop it first: studio-agents wiggum stop dup\n"
        )
    );
    assert_eq!(disk(&t, &b), before);
    std::fs::write(t.release_file(), "").unwrap();
    t.run(&["wiggum", "stop", "dup"]).code(0);
}

#[test]
fn forget_lets_a_topic_go_and_its_kept_copies_only_when_asked() {
    let t = TestHome::new();
    let a = t.root().join("a");
    repo_with_work(&a);
    let args = t.start_args(
        "dup",
        &a,
        &t.agent_cmd("", "FAKE_ITEMS=1"),
        &["--foreground", "--max-iterations", "1"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    t.run(&args).code(0);
    let kept = t.home().join("kept/dup");
    let copy = std::fs::read_dir(&kept)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let records = t.home().join("runs").join(
        std::fs::read_dir(t.home().join("runs"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .file_name(),
    );
    let r = t.run(&["wiggum", "forget", "dup"]);
    r.code(0);
    assert_eq!(
        r.stdout(),
        format!(
            "forgot loop `dup` and its records ({})\n  its directory {} is left as it is ({} and the commits stay)\n  kept copies of your work stay: 1 in {} (`studio-agents wiggum forget dup --kept` removes them)\n",
            records.display(),
            a.display(),
            a.join("wiggum").display(),
            kept.display()
        )
    );
    assert!(!t.home().join("loops/dup.toml").exists());
    assert!(!records.exists());
    assert!(copy.join("notes.md").is_file());
    assert!(a.join("wiggum/fix_plan.md").is_file());
    t.run(&["wiggum", "status", "dup"]).code(2);

    // The name is free again: another directory takes it.
    let b = t.root().join("b");
    repo_with_work(&b);
    let again = t.start_args("dup", &b, &t.agent_cmd("", "FAKE_ITEMS=1"), &["--dry-run"]);
    let again: Vec<&str> = again.iter().map(String::as_str).collect();
    t.run(&again).code(0);

    let r = t.run(&["wiggum", "forget", "dup", "--kept"]);
    r.code(0);
    assert_eq!(
        r.stdout(),
        format!(
            "  removing 1 kept copy of your work:\n    {}: 1 file, 17 B\n",
            copy.display()
        )
    );
    assert!(!kept.exists());
    let r = t.run(&["wiggum", "forget", "dup", "--kept"]);
    r.code(2);
    assert!(
        r.stderr().starts_with("error: unknown topic `dup`"),
        "{}",
        r.stderr()
    );
}

#[test]
fn kept_copies_leave_out_every_loop_s_runtime_files_and_say_what_they_kept() {
    let t = TestHome::new();
    let repo = t.root().join("repo");
    let fg = repo.join("fg");
    std::fs::create_dir_all(&fg).unwrap();
    std::fs::write(fg.join("artifact.md"), "# Fg\n\n## Summary\nA report.\n").unwrap();
    std::fs::create_dir_all(repo.join("doc/wiggum")).unwrap();
    std::fs::write(repo.join("doc/artifact.md"), "# Doc\n").unwrap();
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "base"]);
    // A sibling loop's runtime files, and the user's own work.
    for f in ["state.json", ".lock", "daemon.log", "runs.jsonl"] {
        std::fs::write(repo.join("doc/wiggum").join(f), "{}\n").unwrap();
    }
    std::fs::write(fg.join("notes.md"), "mine\n").unwrap();
    std::fs::write(repo.join("todo.md"), "- call Ann\n").unwrap();
    // An old copy, past keep_days.
    let old = t.home().join("kept/fg/20200101T000000.000");
    std::fs::create_dir_all(&old).unwrap();
    std::fs::write(old.join("x.md"), "old\n").unwrap();

    let args = t.start_args(
        "fg",
        &fg,
        &t.agent_cmd("", "FAKE_ITEMS=1"),
        &["--foreground", "--max-iterations", "1"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = t.run(&args);
    r.code(0);
    let kept = t.home().join("kept/fg");
    let copies: Vec<PathBuf> = std::fs::read_dir(&kept)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(copies.len(), 1, "{copies:?}");
    let copy = &copies[0];
    assert_eq!(
        crate::support::home::walk(copy),
        "fg/notes.md (5 bytes)\ntodo.md (11 bytes)"
    );
    let err = r.stderr();
    assert!(
        err.contains(&format!(
            "note: removed 1 kept copy older than 30 days ([defaults] keep_days): {}\n",
            old.display()
        )),
        "{err}"
    );
    let line = err
        .lines()
        .find(|l| l.contains("a copy of that work"))
        .unwrap_or_default()
        .to_string();
    let listed = line.rsplit_once(": 2 files, 16 B (").map(|(_, l)| l);
    assert!(
        matches!(
            listed,
            Some("fg/notes.md, todo.md)" | "todo.md, fg/notes.md)")
        ),
        "{line}"
    );
    assert!(
        line.starts_with(&format!(
            "note: a copy of that work, out of the agent's reach, is in {}: ",
            copy.display()
        )),
        "{line}"
    );
}

#[test]
fn a_start_refused_after_its_worktree_was_made_takes_the_worktree_away_again() {
    let t = TestHome::new();
    let repo = t.root().join("repo");
    repo_with_work(&repo.join("docs"));
    std::fs::remove_dir_all(repo.join("docs/.git")).unwrap();
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "docs/artifact.md"]);
    git(&repo, &["commit", "-qm", "base"]);
    let before = (snapshot(&repo), snapshot(&t.home()));
    let docs = repo.join("docs").display().to_string();
    let r = t.run(&[
        "wiggum",
        "start",
        "wt",
        "--artifact-path",
        &docs,
        "--worktree",
        "--agent",
        "no-such-agent",
    ]);
    r.code(2);
    assert!(r.stderr().contains("no-such-agent"), "{}", r.stderr());
    assert!(
        r.stderr().contains(&format!(
            "note: the start was refused; worktree {} is taken away again\n",
            repo.join(".git/wiggum-worktrees/wt").display()
        )),
        "{}",
        r.stderr()
    );
    let after = (snapshot(&repo), snapshot(&t.home()));
    let changed: Vec<&PathBuf> = after
        .0
        .iter()
        .chain(&after.1)
        .filter(|(p, c)| before.0.get(*p).or_else(|| before.1.get(*p)) != Some(c))
        .map(|(p, _)| p)
        .chain(
            before
                .0
                .keys()
                .chain(before.1.keys())
                .filter(|p| !after.0.contains_key(*p) && !after.1.contains_key(*p)),
        )
        .collect();
    assert!(changed.is_empty(), "changed: {changed:#?}");
    assert_eq!(git(&repo, &["branch", "--list", "wiggum/*"]), "");
}
