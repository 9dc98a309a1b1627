//! Several loops on one repository, each in a worktree of its own (`start --worktree`), merged
//! back only when they merge cleanly (`merge`), removed once merged (`clean`). Real git
//! repositories, real loops, the user's own edits beside them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::support::{TestHome, git, wait_for};

/// A repository at the test root with the artifact directories `names` inside it (each with
/// an `artifact.md`), one base commit on `main`.
pub(crate) fn repo_with(t: &TestHome, names: &[&str]) -> PathBuf {
    let root = t.root();
    git(&root, &["init", "-q", "-b", "main"]);
    std::fs::write(
        root.join(".gitignore"),
        "home/\npids.txt\n.fake-*\ntmp/\nrelease\n",
    )
    .unwrap();
    std::fs::write(root.join("README.md"), "the user's readme\n").unwrap();
    for n in names {
        std::fs::create_dir_all(root.join(n)).unwrap();
        std::fs::write(
            root.join(n).join("artifact.md"),
            format!("# {n}\n\nDraft.\n"),
        )
        .unwrap();
    }
    git(&root, &["add", "."]);
    git(&root, &["commit", "-qm", "base"]);
    root
}

/// `start <topic> --artifact-path <root>/<topic> --worktree` with the fake agent, and `extra`.
pub(crate) fn start(
    t: &TestHome,
    topic: &str,
    fake: &str,
    env: &str,
    extra: &[&str],
) -> crate::support::home::Run {
    let art = t.root().join(topic);
    let mut more = vec!["--worktree"];
    if !extra.contains(&"--max-iterations") {
        more.extend(["--max-iterations", "2"]);
    }
    more.extend_from_slice(extra);
    let args = t.start_args(topic, &art, &t.agent_cmd(fake, env), &more);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    t.run(&args)
}

/// The loop's worktree (the default place).
fn worktree(t: &TestHome, topic: &str) -> PathBuf {
    t.root().join(".git/wiggum-worktrees").join(topic)
}

fn state_of(t: &TestHome, topic: &str) -> Option<Value> {
    let p = worktree(t, topic).join(topic).join("wiggum/state.json");
    serde_json::from_str(&std::fs::read_to_string(p).ok()?).ok()
}

/// Subjects of `rev`'s history, newest first.
fn subjects(dir: &Path, rev: &str) -> Vec<String> {
    git(dir, &["log", "--format=%s", rev])
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn three_loops_on_one_repository_each_commit_on_their_own_branch_beside_the_users_edits() {
    let t = TestHome::new();
    let root = repo_with(&t, &["ta", "tb", "tc"]);
    let main_before = git(&root, &["rev-parse", "main"]).trim().to_string();
    // All three at once, detached, each holding its agent in iteration 1 until released.
    let env = format!(
        "FAKE_RELEASE={} FAKE_BLOCK_AT=1",
        t.release_file().display()
    );
    for topic in ["ta", "tb", "tc"] {
        start(&t, topic, "block", &env, &[]).code(0);
    }
    wait_for("three agents at work", Duration::from_secs(30), || {
        let p = std::fs::read_to_string(t.pids_file()).unwrap_or_default();
        let n = p.lines().filter(|l| l.starts_with("blocked ")).count();
        if n == 3 { Ok(()) } else { Err(p) }
    });
    // Meanwhile the user edits the main work tree.
    std::fs::write(root.join("README.md"), "the user's readme, edited\n").unwrap();
    std::fs::write(
        root.join("ta/artifact.md"),
        "# ta\n\nThe user's own draft.\n",
    )
    .unwrap();
    std::fs::write(t.release_file(), "").unwrap();
    for topic in ["ta", "tb", "tc"] {
        t.wait_stopped(topic);
    }
    for topic in ["ta", "tb", "tc"] {
        let branch = format!("wiggum/{topic}");
        let log = subjects(&root, &branch);
        // Each loop numbers its own iterations: 1 and 2, whoever committed elsewhere.
        assert_eq!(
            log[..3],
            [
                "Wiggum iteration 2: Improve part 2".to_string(),
                "Wiggum iteration 1: Improve part 1".to_string(),
                "Wiggum planning: fix_plan.md".to_string()
            ],
            "{branch}: {log:?}"
        );
        // Only its own files in its commits.
        let files = git(&root, &["diff", "--name-only", &main_before, &branch]);
        assert!(
            files.lines().all(|f| f.starts_with(&format!("{topic}/"))),
            "{branch} touched {files}"
        );
        let st = state_of(&t, topic).expect("the loop's state in its worktree");
        assert_eq!(
            (
                st["status"].as_str(),
                st["last_committed_iteration"].as_u64()
            ),
            (Some("completed"), Some(2))
        );
    }
    // The user's branch, index and work tree are as the user left them.
    assert_eq!(git(&root, &["rev-parse", "main"]).trim(), main_before);
    assert_eq!(
        std::fs::read_to_string(root.join("README.md")).unwrap(),
        "the user's readme, edited\n"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("ta/artifact.md")).unwrap(),
        "# ta\n\nThe user's own draft.\n"
    );
    assert!(
        !root.join("ta/wiggum").exists(),
        "nothing of the loop in the main work tree"
    );
    // `list` names each loop's branch.
    let list = t.run(&["wiggum", "list"]);
    list.code(0);
    for topic in ["ta", "tb", "tc"] {
        assert!(
            list.stdout().contains(&format!("wiggum/{topic}")),
            "{}",
            list.stdout()
        );
    }
}

#[test]
fn a_clean_merge_brings_the_loop_home_and_status_and_list_say_so() {
    let t = TestHome::new();
    let root = repo_with(&t, &["ta"]);
    start(&t, "ta", "", "", &["--foreground"]).code(0);
    let branch_head = git(&root, &["rev-parse", "wiggum/ta"]);
    // An edit of the user's elsewhere stays uncommitted and untouched.
    std::fs::write(root.join("README.md"), "edited\n").unwrap();
    let r = t.run(&["wiggum", "merge", "ta"]);
    r.code(0);
    assert!(
        r.stdout()
            .contains("merged wiggum/ta into main (fast-forward"),
        "{}",
        r.stdout()
    );
    assert_eq!(git(&root, &["rev-parse", "main"]), branch_head);
    assert_eq!(
        std::fs::read_to_string(root.join("README.md")).unwrap(),
        "edited\n"
    );
    assert!(
        root.join("ta/wiggum/fix_plan.md").is_file(),
        "the merged tree is checked out"
    );
    let v = t.status_json("ta");
    assert_eq!(v["worktree"]["merged_into"], "main", "{v}");
    let list = t.run(&["wiggum", "list"]);
    assert!(
        list.stdout().contains("wiggum/ta merged into main"),
        "{}",
        list.stdout()
    );
    let status = t.run(&["wiggum", "status", "ta"]);
    assert!(
        status.stdout().contains("merged:    into main"),
        "{}",
        status.stdout()
    );
}

#[test]
fn a_conflicting_merge_changes_nothing_and_names_the_paths() {
    let t = TestHome::new();
    let root = repo_with(&t, &["ta"]);
    start(&t, "ta", "edit-notes", "", &["--foreground"]).code(0);
    // The user committed notes of their own on main meanwhile (the loop's agent wrote its
    // own), and left an uncommitted edit elsewhere.
    std::fs::write(root.join("ta/notes.md"), "The user's notes.\n").unwrap();
    git(&root, &["add", "ta/notes.md"]);
    git(&root, &["commit", "-qm", "user notes"]);
    std::fs::write(root.join("README.md"), "uncommitted\n").unwrap();
    let head = git(&root, &["rev-parse", "HEAD"]);
    let status = git(&root, &["status", "--porcelain"]);
    let index = std::fs::read(root.join(".git/index")).unwrap();
    let r = t.run(&["wiggum", "merge", "ta"]);
    r.code(1);
    let err = r.stderr();
    assert!(
        err.contains("conflict: ta/notes.md") && err.contains("nothing was changed"),
        "{err}"
    );
    assert_eq!(git(&root, &["rev-parse", "HEAD"]), head);
    assert_eq!(git(&root, &["status", "--porcelain"]), status);
    assert_eq!(
        std::fs::read(root.join(".git/index")).unwrap(),
        index,
        "the index as it was"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("ta/notes.md")).unwrap(),
        "The user's notes.\n"
    );
    assert!(
        !root.join("ta/wiggum").exists(),
        "nothing of the branch checked out"
    );
    assert!(!root.join(".git/MERGE_HEAD").exists());
    assert!(t.status_json("ta")["worktree"]["merged_into"].is_null());
    // --ff-only refuses, too, and says why.
    let r = t.run(&["wiggum", "merge", "ta", "--ff-only"]);
    r.code(1);
    assert!(r.stderr().contains("has moved on"), "{}", r.stderr());
}

#[test]
fn merge_all_merges_what_merges_cleanly_and_lists_the_rest() {
    let t = TestHome::new();
    let root = repo_with(&t, &["ta", "tb"]);
    start(&t, "ta", "", "", &["--foreground"]).code(0);
    start(&t, "tb", "edit-notes", "", &["--foreground"]).code(0);
    std::fs::write(root.join("tb/notes.md"), "The user's.\n").unwrap();
    git(&root, &["add", "tb/notes.md"]);
    git(&root, &["commit", "-qm", "user notes of tb"]);
    let r = t.run(&["wiggum", "merge", "--all", "--no-ff"]);
    r.code(1);
    assert!(
        r.stdout()
            .contains("ta: merged wiggum/ta into main (merge commit"),
        "{}",
        r.stdout()
    );
    assert!(
        r.stderr()
            .contains("tb: merge of wiggum/tb into main stopped"),
        "{}",
        r.stderr()
    );
    let log = subjects(&root, "main");
    assert_eq!(
        log[0], "Merge loop `ta` (branch wiggum/ta) into main",
        "{log:?}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("tb/notes.md")).unwrap(),
        "The user's.\n"
    );
    assert!(!root.join("tb/wiggum").exists());
}

#[test]
fn clean_refuses_uncommitted_or_unmerged_work_and_keeps_the_branch() {
    let t = TestHome::new();
    let root = repo_with(&t, &["ta"]);
    start(&t, "ta", "", "", &["--foreground"]).code(0);
    let wt = worktree(&t, "ta");
    // Not merged yet: refused.
    let r = t.run(&["wiggum", "clean", "ta"]);
    r.code(1);
    assert!(r.stderr().contains("is not merged"), "{}", r.stderr());
    assert!(wt.is_dir());
    t.run(&["wiggum", "merge", "ta", "--squash"]).code(0);
    assert_eq!(
        subjects(&root, "main")[0],
        "Loop `ta`: 2 iteration(s) of branch wiggum/ta, squashed"
    );
    // Uncommitted work in the worktree: refused, then taken with --force.
    std::fs::write(wt.join("ta/scratch.md"), "unsaved\n").unwrap();
    let r = t.run(&["wiggum", "clean", "ta"]);
    r.code(1);
    assert!(r.stderr().contains("ta/scratch.md"), "{}", r.stderr());
    assert!(wt.join("ta/scratch.md").is_file());
    let r = t.run(&["wiggum", "clean", "ta", "--force"]);
    r.code(0);
    assert!(!wt.exists());
    assert!(git(&root, &["worktree", "list"]).lines().count() == 1);
    assert!(
        git(&root, &["branch", "--list", "wiggum/ta"]).contains("wiggum/ta"),
        "kept"
    );
}

#[test]
fn a_squashed_loop_cleans_with_its_branch_and_a_removed_worktree_is_said_so() {
    let t = TestHome::new();
    let root = repo_with(&t, &["ta", "tb"]);
    start(&t, "ta", "", "", &["--foreground"]).code(0);
    t.run(&["wiggum", "merge", "ta"]).code(0);
    t.run(&["wiggum", "clean", "ta", "--delete-branch"]).code(0);
    assert!(git(&root, &["branch", "--list", "wiggum/ta"]).is_empty());
    // The loop's result came home with the merge, and the clean keeps it.
    assert_eq!(
        git(&root, &["ls-files", "ta/wiggum/final/artifact.md"]),
        "ta/wiggum/final/artifact.md\n"
    );
    assert!(
        std::fs::read_to_string(root.join("ta/wiggum/final/artifact.md"))
            .unwrap()
            .contains("## Improve part 2")
    );
    // A worktree removed by hand.
    start(&t, "tb", "", "", &["--foreground"]).code(0);
    std::fs::remove_dir_all(worktree(&t, "tb")).unwrap();
    let r = t.run(&["wiggum", "status", "tb"]);
    assert!(
        r.stdout().contains("its worktree") && r.stdout().contains("was removed"),
        "{}",
        r.stdout()
    );
    // Started again, it is made again on the same branch and goes on from its commits.
    start(&t, "tb", "", "", &["--foreground", "--max-iterations", "3"]).code(0);
    let log = subjects(&root, "wiggum/tb");
    assert_eq!(log[0], "Wiggum iteration 3: Improve part 3", "{log:?}");
}

#[test]
fn kill_9_inside_a_worktree_then_start_resumes_there() {
    let t = TestHome::new();
    t.write_home_config("[safety]\nkill_grace_secs = 1\n");
    let root = repo_with(&t, &["ta"]);
    let env = format!(
        "FAKE_RELEASE={} FAKE_BLOCK_AT=2",
        t.release_file().display()
    );
    start(&t, "ta", "block", &env, &[]).code(0);
    let st = wait_for(
        "iteration 2 to run",
        Duration::from_secs(30),
        || match state_of(&t, "ta") {
            Some(s) if s["current_iteration"] == 2 && s["agent_pid"].is_number() => Ok(s),
            other => Err(other),
        },
    );
    t.wait_blocked();
    std::process::Command::new("kill")
        .args(["-9", &st["pid"].as_i64().unwrap().to_string()])
        .status()
        .unwrap();
    wait_for("status dead", Duration::from_secs(10), || {
        let v = t.status_json("ta");
        if v["status"] == "dead" {
            Ok(())
        } else {
            Err(v)
        }
    });
    std::fs::write(t.release_file(), "").unwrap();
    // No flags: the registry and the worktree record know the rest.
    t.run(&["wiggum", "start", "ta", "--foreground"]).code(0);
    let log = subjects(&root, "wiggum/ta");
    assert_eq!(
        log[..3],
        [
            "Wiggum iteration 2: Improve part 2".to_string(),
            "Wiggum iteration 1: Improve part 1".to_string(),
            "Wiggum planning: fix_plan.md".to_string()
        ],
        "{log:?}"
    );
    assert_eq!(subjects(&root, "main"), ["base"]);
}

#[test]
fn a_sparse_checkout_or_a_repository_with_submodules_is_refused_with_why() {
    let t = TestHome::new();
    let root = repo_with(&t, &["ta"]);
    git(&root, &["config", "core.sparseCheckout", "true"]);
    let r = start(&t, "ta", "", "", &["--foreground"]);
    r.code(2);
    assert!(r.stderr().contains("sparse checkout"), "{}", r.stderr());
    git(&root, &["config", "core.sparseCheckout", "false"]);
    std::fs::write(
        root.join(".gitmodules"),
        "[submodule \"x\"]\n\tpath = x\n\turl = /nowhere\n",
    )
    .unwrap();
    let r = start(&t, "ta", "", "", &["--foreground"]);
    r.code(2);
    assert!(r.stderr().contains("submodules"), "{}", r.stderr());
    assert!(!worktree(&t, "ta").exists(), "nothing made");
    assert!(git(&root, &["branch", "--list", "wiggum/ta"]).is_empty());
}

#[test]
fn a_merge_over_the_users_uncommitted_file_is_refused_and_the_file_kept() {
    let t = TestHome::new();
    let root = repo_with(&t, &["ta"]);
    start(&t, "ta", "edit-notes", "", &["--foreground"]).code(0);
    // Not committed: the user's own notes where the branch brings the loop's.
    std::fs::write(root.join("ta/notes.md"), "mine, unsaved\n").unwrap();
    let head = git(&root, &["rev-parse", "HEAD"]);
    let r = t.run(&["wiggum", "merge", "ta"]);
    r.code(1);
    assert!(
        r.stderr().contains("uncommitted changes") && r.stderr().contains("ta/notes.md"),
        "{}",
        r.stderr()
    );
    assert_eq!(git(&root, &["rev-parse", "HEAD"]), head);
    assert_eq!(
        std::fs::read_to_string(root.join("ta/notes.md")).unwrap(),
        "mine, unsaved\n"
    );
}

#[test]
fn isolation_worktree_in_the_settings_does_what_the_flag_does() {
    let t = TestHome::new();
    t.write_home_config("[defaults]\nisolation = \"worktree\"\n");
    let root = repo_with(&t, &["ta"]);
    let args = t.start_args(
        "ta",
        &root.join("ta"),
        &t.agent_cmd("", ""),
        &["--foreground", "--max-iterations", "1"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = t.run(&args);
    r.code(0);
    assert!(r.stderr().contains("runs in worktree"), "{}", r.stderr());
    assert_eq!(
        subjects(&root, "wiggum/ta")[0],
        "Wiggum iteration 1: Improve part 1"
    );
    assert_eq!(subjects(&root, "main"), ["base"]);
}

#[test]
fn a_loop_merged_once_is_not_merged_again_into_the_same_branch() {
    let t = TestHome::new();
    let root = repo_with(&t, &["ta"]);
    start(&t, "ta", "", "", &["--foreground"]).code(0);
    t.run(&["wiggum", "merge", "ta", "--squash"]).code(0);
    let squashed = git(&root, &["rev-parse", "main"]);
    // Again, by name and with --all: nothing happens, and it says so on one line.
    let r = t.run(&["wiggum", "merge", "ta"]);
    r.code(0);
    assert_eq!(r.stdout().lines().count(), 1, "{}", r.stdout());
    assert!(
        r.stdout()
            .starts_with("wiggum/ta was already merged into main (squash, "),
        "{}",
        r.stdout()
    );
    let r = t.run(&["wiggum", "merge", "--all"]);
    r.code(0);
    assert!(r.stdout().contains("no unmerged loop"), "{}", r.stdout());
    assert_eq!(git(&root, &["rev-parse", "main"]), squashed);
    let log = subjects(&root, "main");
    assert!(
        !log.iter().any(|s| s.starts_with("Wiggum iteration")),
        "the iterations came into main beside their squash: {log:?}"
    );
    // Into another branch, it is merged.
    git(&root, &["branch", "release", "main~1"]);
    let r = t.run(&["wiggum", "merge", "ta", "--into", "release"]);
    r.code(0);
    assert!(
        r.stdout().starts_with("merged wiggum/ta into release"),
        "{}",
        r.stdout()
    );
}
