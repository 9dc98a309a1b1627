//! Repositories as people have them: staged and untracked work of the user's, sparse checkouts,
//! linked worktrees, submodules, a detached HEAD; and repositories the loop must refuse before
//! any agent runs (mid-rebase, a held index.lock, a split index, an ignored artifact dir).

use std::path::Path;

use crate::support::{TestHome, git};

/// Files of a commit (`git show --name-only`).
fn files_of(dir: &Path, rev: &str) -> Vec<String> {
    git(dir, &["show", "--format=", "--name-only", rev])
        .lines()
        .map(str::to_string)
        .collect()
}

/// Every commit the loop made (author wiggum-agent), oldest first.
fn loop_commits(dir: &Path) -> Vec<String> {
    git(
        dir,
        &["log", "--reverse", "--format=%H", "--author=wiggum-agent"],
    )
    .lines()
    .map(str::to_string)
    .collect()
}

/// A repository at the test root with the artifact dir `art/` inside it, one base commit.
fn repo_with_art(t: &TestHome) -> std::path::PathBuf {
    let root = t.root();
    git(&root, &["init", "-q"]);
    std::fs::write(root.join(".gitignore"), "home/\npids.txt\n.fake-*\n").unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/lib.rs"), "pub fn a() {}\n").unwrap();
    std::fs::write(t.art().join("notes.md"), "user notes\n").unwrap();
    git(&root, &["add", "."]);
    git(&root, &["commit", "-qm", "base"]);
    root
}

#[test]
fn the_users_staged_and_untracked_work_is_never_committed_and_stays_as_it_was() {
    let t = TestHome::new();
    let root = repo_with_art(&t);
    // Staged elsewhere in the repository, modified and untracked inside the artifact dir.
    std::fs::write(root.join("src/lib.rs"), "pub fn a() { b() }\n").unwrap();
    git(&root, &["add", "src/lib.rs"]);
    std::fs::write(t.art().join("notes.md"), "user notes, edited\n").unwrap();
    std::fs::write(t.art().join(".env.local"), "API_KEY=secret\n").unwrap();
    let before = git(&root, &["status", "--porcelain"]);

    let r = t.start_fg("staged", "", &[]);
    r.code(0);
    let err = r.stderr();
    assert!(
        err.contains("left out of the loop's commits")
            && err.contains(".env.local")
            && err.contains("notes.md"),
        "{err}"
    );
    let commits = loop_commits(&root);
    assert_eq!(commits.len(), 4, "planning + 3 iterations");
    for c in &commits {
        for f in files_of(&root, c) {
            assert!(f.starts_with("art/wiggum/"), "commit {c} took {f}");
        }
    }
    // What the user had staged is still staged; their other work is untouched.
    assert_eq!(git(&root, &["status", "--porcelain"]), before);
    assert_eq!(
        git(&root, &["diff", "--cached", "--name-only"]),
        "src/lib.rs\n"
    );
    assert_eq!(
        std::fs::read_to_string(t.art().join(".env.local")).unwrap(),
        "API_KEY=secret\n"
    );
}

/// An agent that throws the user's uncommitted work away cannot lose it: `start` kept a copy out
/// of its reach, and says where; a restart with the same work makes no second copy.
#[test]
fn the_users_uncommitted_work_is_copied_out_of_the_agents_reach_before_it_runs() {
    let t = TestHome::new();
    let root = repo_with_art(&t);
    std::fs::write(t.art().join("notes.md"), "user notes, edited\n").unwrap();
    std::fs::write(t.art().join("draft.md"), "the user's draft\n").unwrap();

    let r = t.start_fg("careless", "discard-user", &["--max-iterations", "1"]);
    r.code(0);
    let kept = t.home().join("kept/careless");
    let dirs: Vec<_> = std::fs::read_dir(&kept).unwrap().flatten().collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let dir = dirs[0].path();
    assert!(
        r.stderr().contains(&format!("is in {}", dir.display())),
        "{}",
        r.stderr()
    );
    // The agent did throw it away...
    assert!(!t.art().join("draft.md").exists());
    assert_eq!(git(&root, &["show", "HEAD:art/notes.md"]), "user notes\n");
    // ...and the copy holds it as it was.
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.md")).unwrap(),
        "user notes, edited\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("draft.md")).unwrap(),
        "the user's draft\n"
    );

    // Restarted with the same work again: the copy is named, not made twice.
    std::fs::write(t.art().join("draft.md"), "the user's draft\n").unwrap();
    std::fs::write(t.art().join("notes.md"), "user notes, edited\n").unwrap();
    std::fs::write(t.wiggum("fix_plan.md"), "- [ ] again\n").unwrap();
    let again = t.start_fg("careless", "", &["--max-iterations", "1"]);
    again.code(0);
    assert_eq!(std::fs::read_dir(&kept).unwrap().count(), 1);
    assert!(
        again.stderr().contains(&dir.display().to_string()),
        "{}",
        again.stderr()
    );
    // `status` says where the copy is.
    let status = t.run(&["wiggum", "status", "careless"]).stdout();
    assert!(
        status.contains(&format!("kept:      {}", dir.display())),
        "{status}"
    );
}

#[test]
fn new_trees_renames_deletions_and_modes_are_committed_exactly_as_a_walk_would_see_them() {
    let t = TestHome::new();
    let root = repo_with_art(&t);
    std::fs::create_dir_all(t.art().join("docs")).unwrap();
    std::fs::write(t.art().join("docs/a.md"), "a\n").unwrap();
    std::fs::write(t.art().join("run.sh"), "echo\n").unwrap();
    git(&root, &["add", "."]);
    git(&root, &["commit", "-qm", "more"]);
    t.start_fg("reshape", "reshape", &[]).code(0);
    let commits = loop_commits(&root);
    // Both sides of the rename (git would show it as one rename).
    let mut first: Vec<String> = git(
        &root,
        &[
            "show",
            "--format=",
            "--name-only",
            "--no-renames",
            &commits[1],
        ],
    )
    .lines()
    .filter(|f| !f.starts_with("art/wiggum/"))
    .map(str::to_string)
    .collect();
    first.sort();
    assert_eq!(
        first,
        [
            "art/docs/a.md",
            "art/gen/deep/er/file.md",
            "art/moved/a.md",
            "art/notes.md",
            "art/run.sh"
        ],
        "iteration 1's commit"
    );
    let second: Vec<String> = files_of(&root, &commits[2])
        .into_iter()
        .filter(|f| !f.starts_with("art/wiggum/"))
        .collect();
    assert_eq!(second, ["art/gen/deep/er/file.md"], "iteration 2's commit");
    assert_eq!(
        git(&root, &["show", "HEAD:art/gen/deep/er/file.md"]),
        "generated\nagain\n"
    );
    assert!(git(&root, &["ls-tree", "HEAD", "art/run.sh"]).starts_with("100755"));
    // Nothing the agent did is left behind uncommitted.
    assert_eq!(git(&root, &["status", "--porcelain"]), "");
}

#[test]
fn what_the_agent_changes_outside_wiggum_is_committed_and_only_that() {
    let t = TestHome::new();
    let root = repo_with_art(&t);
    std::fs::write(t.art().join("draft.md"), "the user's draft\n").unwrap();
    t.start_fg("outside", "edit-notes", &[]).code(0);
    let commits = loop_commits(&root);
    let first_iteration = files_of(&root, &commits[1]);
    assert!(
        first_iteration.contains(&"art/notes.md".to_string()),
        "{first_iteration:?}"
    );
    assert!(
        commits
            .iter()
            .all(|c| !files_of(&root, c).contains(&"art/draft.md".to_string())),
        "the untouched draft stays the user's"
    );
    assert_eq!(git(&root, &["status", "--porcelain"]), "?? art/draft.md\n");
}

#[test]
fn a_sparse_checkout_keeps_every_file_outside_the_cone() {
    let t = TestHome::new();
    let art = t.art();
    git(&art, &["init", "-q"]);
    std::fs::write(art.join(".gitignore"), ".fake-*\n").unwrap();
    for d in ["docs", "vendor/big"] {
        std::fs::create_dir_all(art.join(d)).unwrap();
        std::fs::write(art.join(d).join("file.txt"), d).unwrap();
    }
    git(&art, &["add", "."]);
    git(&art, &["commit", "-qm", "base"]);
    git(
        &art,
        &["sparse-checkout", "set", "--no-cone", "/*", "!/vendor/"],
    );
    assert!(!art.join("vendor/big/file.txt").exists());
    let r = t.start_fg("sparse", "", &[]);
    r.code(0);
    assert!(!r.stderr().contains("vendor"), "{}", r.stderr());
    let tree = git(&art, &["ls-tree", "-r", "--name-only", "HEAD"]);
    assert!(tree.contains("vendor/big/file.txt"), "{tree}");
    assert!(tree.contains("wiggum/fix_plan.md"), "{tree}");
    assert_eq!(git(&art, &["status", "--porcelain"]), "");
    // The sparse flag of the files outside the cone survived the index updates.
    assert!(git(&art, &["ls-files", "-t"]).contains("S vendor/big/file.txt"));
}

#[test]
fn a_linked_worktree_commits_on_its_own_branch() {
    let t = TestHome::new();
    let root = repo_with_art(&t);
    let wt = t.root().join("wt");
    git(
        &root,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "loop-branch",
            wt.to_str().unwrap(),
        ],
    );
    let art = wt.join("art");
    let cmd = t.agent_cmd("", "");
    let art_s = art.display().to_string();
    t.run(&[
        "wiggum",
        "start",
        "wt",
        "--artifact-path",
        &art_s,
        "--agent-cmd",
        &cmd,
        "--foreground",
    ])
    .code(0);
    assert_eq!(
        git(&wt, &["log", "--format=%s", "-1"]),
        "Wiggum iteration 3: Improve part 3\n"
    );
    assert_eq!(git(&root, &["log", "--format=%s", "-1", "main"]), "base\n");
    assert_eq!(git(&wt, &["status", "--porcelain"]), "");
}

#[test]
fn a_submodule_and_a_detached_head_are_left_as_they_were() {
    let t = TestHome::new();
    let sub = t.root().join("sub-origin");
    std::fs::create_dir_all(&sub).unwrap();
    git(&sub, &["init", "-q"]);
    std::fs::write(sub.join("lib.txt"), "lib").unwrap();
    git(&sub, &["add", "."]);
    git(&sub, &["commit", "-qm", "sub"]);
    let art = t.art();
    git(&art, &["init", "-q"]);
    std::fs::write(art.join(".gitignore"), ".fake-*\n").unwrap();
    git(&art, &["add", "."]);
    git(&art, &["commit", "-qm", "base"]);
    git(
        &art,
        &["submodule", "add", "-q", sub.to_str().unwrap(), "deps/sub"],
    );
    git(&art, &["commit", "-qm", "add sub"]);
    let gitlink = git(&art, &["ls-tree", "HEAD", "deps/sub"]);
    git(&art, &["checkout", "-q", "--detach"]);
    t.start_fg("sub", "", &[]).code(0);
    // HEAD moved (detached), no branch did; the gitlink is unchanged.
    assert_eq!(
        git(&art, &["log", "--format=%s", "-1", "main"]),
        "add sub\n"
    );
    assert_eq!(
        git(&art, &["log", "--format=%s", "-1"]),
        "Wiggum iteration 3: Improve part 3\n"
    );
    assert!(git(&art, &["status"]).contains("HEAD detached"));
    assert_eq!(git(&art, &["ls-tree", "HEAD", "deps/sub"]), gitlink);
    assert_eq!(git(&art, &["status", "--porcelain"]), "");
}

/// `start` refuses with exit 2 and a message containing `want`, and writes nothing.
#[track_caller]
fn refused(t: &TestHome, want: &str) {
    let r = t.start_fg("refused", "", &[]);
    r.code(2);
    assert!(r.stderr().contains(want), "{}", r.stderr());
    assert!(!t.art().join("wiggum").exists(), "nothing written");
    assert!(!t.pids_file().exists(), "no agent ran");
}

#[test]
fn a_repository_mid_rebase_is_refused_before_any_agent_runs() {
    let t = TestHome::new();
    let root = repo_with_art(&t);
    git(&root, &["checkout", "-q", "-b", "topic"]);
    std::fs::write(root.join("src/lib.rs"), "topic\n").unwrap();
    git(&root, &["commit", "-qam", "topic"]);
    git(&root, &["checkout", "-q", "main"]);
    std::fs::write(root.join("src/lib.rs"), "main\n").unwrap();
    git(&root, &["commit", "-qam", "main"]);
    let out = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=u",
            "-c",
            "user.email=u@x",
            "rebase",
            "topic",
        ])
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(!out.status.success(), "the rebase stops on a conflict");
    refused(&t, "a rebase is in progress");
}

/// A repository owned by another user (a checkout mounted into a container, say): git refuses it
/// ("dubious ownership"), and so does the loop — it must not take the directory for one outside
/// any repository and create a repository of its own inside it.
#[test]
fn a_repository_of_another_user_is_refused_not_nested() {
    let t = TestHome::new();
    let root = repo_with_art(&t);
    for dir in [root.clone(), root.join(".git")] {
        if let Err(e) = std::os::unix::fs::chown(&dir, Some(4321), Some(4321)) {
            eprintln!("SKIPPED: changing the owner needs root ({e})");
            return;
        }
    }
    refused(&t, "belongs to another user");
    assert!(
        !t.art().join(".git").exists(),
        "no repository made inside it"
    );
}

#[test]
fn a_held_index_lock_is_refused() {
    let t = TestHome::new();
    let root = repo_with_art(&t);
    std::fs::write(root.join(".git/index.lock"), "").unwrap();
    refused(&t, "index.lock: exists");
}

#[test]
fn an_index_lock_released_within_moments_is_waited_for() {
    let t = TestHome::new();
    let root = repo_with_art(&t);
    // Another loop's commit holds the lock for half a second after `start` begins.
    let lock = root.join(".git/index.lock");
    std::fs::write(&lock, "").unwrap();
    let held = lock.clone();
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(500)); // the other commit's duration
        std::fs::remove_file(held).unwrap();
    });
    t.start_fg("waits", "", &[]).code(0);
    releaser.join().unwrap();
    assert!(t.state()["status"] == "completed", "{}", t.state());
}

#[test]
fn a_split_index_is_refused_with_the_fix() {
    let t = TestHome::new();
    let root = repo_with_art(&t);
    git(&root, &["update-index", "--split-index"]);
    refused(&t, "git update-index --no-split-index");
}

#[test]
fn an_ignored_artifact_dir_is_refused_naming_the_rule() {
    let t = TestHome::new();
    let root = repo_with_art(&t);
    std::fs::write(root.join(".gitignore"), "home/\npids.txt\n# loops\nart/\n").unwrap();
    refused(&t, ".gitignore:4: `art/`");
}

#[test]
fn an_artifact_dir_inside_the_git_directory_is_refused_saying_so() {
    let t = TestHome::new();
    let root = repo_with_art(&t);
    let inside = root.join(".git/notes-loop");
    std::fs::create_dir_all(&inside).unwrap();
    std::fs::write(inside.join("artifact.md"), "# Doc\n").unwrap();
    let a = t.start_args("ingit", &inside, &t.agent_cmd("", ""), &["--foreground"]);
    let r = t.run(&a.iter().map(String::as_str).collect::<Vec<_>>());
    r.code(2);
    assert!(
        r.stderr().contains("inside the repository's git directory"),
        "{}",
        r.stderr()
    );
    assert!(!inside.join("wiggum").exists(), "nothing written");
    assert!(!t.pids_file().exists(), "no agent ran");
}

/// A repository whose `pre-commit` hook exits with `code` and whose `commit-msg` hook appends
/// a trailer.
fn with_hooks(t: &TestHome, pre_commit_code: i32) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let root = repo_with_art(t);
    let hooks = root.join(".git/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let write = |name: &str, body: &str| {
        let p = hooks.join(name);
        std::fs::write(&p, body).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    write(
        "pre-commit",
        &format!(
            "#!/bin/sh\ngit diff --cached --name-only > \"$(git rev-parse --git-dir)/staged-seen\"\necho 'lint: trailing whitespace' >&2\nexit {pre_commit_code}\n"
        ),
    );
    write(
        "commit-msg",
        "#!/bin/sh\nprintf '\\nReviewed-by: hook\\n' >> \"$1\"\n",
    );
    root
}

#[test]
fn hooks_are_skipped_by_default_and_start_says_so() {
    let t = TestHome::new();
    let root = with_hooks(&t, 1);
    let r = t.start_fg("skip", "", &[]);
    r.code(0);
    assert!(
        r.stderr()
            .contains("skip this repository's git hooks (pre-commit, commit-msg)")
    );
    assert_eq!(loop_commits(&root).len(), 4);
}

/// A repository that signs its commits: the loop's commits cannot be, and `start` says so with
/// the way to sign them afterwards (the loop still runs).
#[test]
fn start_says_that_the_loops_commits_are_not_signed_where_git_would_sign() {
    let t = TestHome::new();
    let root = repo_with_art(&t);
    git(&root, &["config", "commit.gpgsign", "true"]);
    let r = t.start_fg("signed", "", &[]);
    r.code(0);
    assert!(
        r.stderr().contains("commit.gpgsign is set")
            && r.stderr().contains("git commit --amend --no-edit -n -S"),
        "{}",
        r.stderr()
    );
    assert_eq!(loop_commits(&root).len(), 4);
}

/// A pre-commit hook (run, as the settings allow) that rejects a commit holding an iteration's
/// files ("tests fail"), unless `first` (shell lines run before) lets it through.
fn rejecting_hook(t: &TestHome, root: &Path, first: &str) {
    use std::os::unix::fs::PermissionsExt;
    let hook = root.join(".git/hooks/pre-commit");
    std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\ngit diff --cached --name-only | grep -q iteration- || exit 0\n{first}echo 'tests fail' >&2\nexit 1\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    t.write_home_config("[git]\nhooks = \"run\"\n");
}

#[test]
fn a_pre_commit_hook_that_rejects_an_iteration_rejects_it_like_a_failed_validation() {
    let t = TestHome::new();
    let root = repo_with_art(&t);
    // Rejects the first commit that holds an iteration's files, once.
    rejecting_hook(
        &t,
        &root,
        "gd=$(git rev-parse --git-dir)\n[ -e \"$gd/once\" ] && exit 0\n: > \"$gd/once\"\n",
    );
    t.start_fg("hooked", "", &[]).code(0);
    let iters = t.runs("iteration");
    assert_eq!(iters[0]["outcome"], "rejected", "{iters:?}");
    assert!(
        iters[0]["validation_failed"]
            .as_str()
            .unwrap()
            .contains("pre-commit hook exited with code 1: tests fail"),
        "{iters:?}"
    );
    // The rejected iteration's work was carried into the next accepted commit.
    let commits = loop_commits(&root);
    let second = files_of(&root, &commits[1]);
    assert!(
        second.iter().any(|f| f.contains("iteration-001/"))
            && second.iter().any(|f| f.contains("iteration-002/")),
        "{second:?}"
    );
    assert_eq!(git(&root, &["status", "--porcelain"]), "");
}

#[test]
fn what_rejected_attempts_left_is_counted_as_git_shows_it_and_not_kept_as_the_users_at_a_restart() {
    let t = TestHome::new();
    let root = repo_with_art(&t);
    // Rejects every commit that holds an iteration's files.
    rejecting_hook(&t, &root, "");
    let r = t.start_fg("left", "", &["--max-iterations", "1"]);
    let out = r.stdout();
    assert_eq!(t.runs("iteration")[0]["outcome"], "rejected", "{out}");
    // The count is what `git status` lists under the artifact dir, not every path the attempt
    // touched.
    let dirty = git(&root, &["status", "--porcelain", "-uall", "--", "art"])
        .lines()
        .count();
    let said = out
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("uncommitted "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse::<usize>().ok());
    assert_eq!(said, Some(dirty), "{out}");
    // A restart knows it for the loop's: no copy of it is kept as the user's work.
    let again = t.start_fg("left", "", &["--max-iterations", "1"]);
    assert!(
        !again.stderr().contains("a copy of that work"),
        "{}",
        again.stderr()
    );
    assert!(!t.home().join("kept/left").exists());
}

#[test]
fn a_pre_commit_hook_that_rejects_the_plan_stops_the_loop_saying_why() {
    let t = TestHome::new();
    let root = with_hooks(&t, 1);
    std::fs::write(t.art().join("wiggum.toml"), "").unwrap();
    t.write_home_config("[git]\nhooks = \"run\"\n[safety]\nmax_no_change_iterations = 2\n");
    let r = t.start_fg("hooked", "", &["--max-iterations", "2"]);
    // Planning cannot be committed either: the loop stops and says why.
    assert_ne!(r.out.status.code(), Some(0), "{}", r.stderr());
    let st = t.state();
    let detail = st["stop_detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("pre-commit hook exited with code 1: lint: trailing whitespace"),
        "{st}"
    );
    assert!(loop_commits(&root).is_empty());
}

#[test]
fn passing_hooks_see_exactly_the_commit_and_may_edit_its_message() {
    let t = TestHome::new();
    let root = with_hooks(&t, 0);
    std::fs::write(root.join("src/lib.rs"), "staged by the user\n").unwrap();
    git(&root, &["add", "src/lib.rs"]);
    t.write_home_config("[git]\nhooks = \"run\"\n");
    t.start_fg("hooked", "", &["--max-iterations", "1"]).code(0);
    let msg = git(&root, &["log", "-1", "--format=%B"]);
    assert!(
        msg.starts_with("Wiggum iteration 1: Improve part 1"),
        "{msg}"
    );
    assert!(msg.contains("Reviewed-by: hook"), "{msg}");
    // pre-commit saw the loop's paths, not the user's staged file.
    let seen = std::fs::read_to_string(root.join(".git/staged-seen")).unwrap();
    assert!(seen.lines().all(|l| l.starts_with("art/wiggum/")), "{seen}");
    assert_eq!(
        git(&root, &["diff", "--cached", "--name-only"]),
        "src/lib.rs\n"
    );
}

#[test]
fn the_loops_own_files_are_committed_even_where_a_rule_of_the_repository_ignores_them() {
    let t = TestHome::new();
    let root = repo_with_art(&t);
    // A repository whose rules happen to name some of the loop's files (the plan and the
    // iterations' artifacts must not be ignored: start refuses that).
    std::fs::write(
        root.join(".gitignore"),
        "home/\npids.txt\n.fake-*\nPROMPT.md\nAGENT.md\n*.toml\n",
    )
    .unwrap();
    git(&root, &["add", ".gitignore"]);
    git(&root, &["commit", "-qm", "ignore md and toml"]);

    t.start_fg("ignored", "", &[]).code(0);
    let tracked = git(&root, &["ls-files", "art/wiggum"]);
    for f in [
        "art/wiggum/fix_plan.md",
        "art/wiggum/PROMPT.md",
        "art/wiggum/AGENT.md",
        "art/wiggum/wiggum.toml",
        "art/wiggum/iterations/001-100/iteration-001/artifact.md",
        "art/wiggum/iterations/001-100/iteration-003/artifact.md",
    ] {
        assert!(
            tracked.lines().any(|l| l == f),
            "{f} not committed:\n{tracked}"
        );
    }
    // The plan the agent ticked is committed as it stands: nothing of the loop's left over.
    assert_eq!(
        git(
            &root,
            &["status", "--porcelain", "--", "art/wiggum/fix_plan.md"]
        ),
        ""
    );
    assert_eq!(
        git(&root, &["diff", "HEAD", "--name-only", "--", "art/wiggum"]),
        ""
    );
}

/// What a filter driver of the user's config (git-lfs's kind) converts is committed as `git add`
/// stores it, not as the bytes on disk.
#[test]
fn files_under_a_filter_driver_are_committed_as_git_add_would_store_them() {
    let t = TestHome::new();
    let root = repo_with_art(&t);
    git(&root, &["config", "filter.upper.clean", "tr a-z A-Z"]);
    git(&root, &["config", "filter.upper.smudge", "cat"]);
    std::fs::write(root.join(".gitattributes"), "art/notes.md filter=upper\n").unwrap();
    git(&root, &["add", "--renormalize", "."]);
    git(&root, &["add", "."]);
    git(&root, &["commit", "-qm", "filters"]);

    t.start_fg("filtered", "edit-notes", &[]).code(0);
    let notes = git(&root, &["show", "HEAD:art/notes.md"]);
    assert!(
        notes.starts_with("USER NOTES\n") && notes.contains("NOTES OF ITERATION 3"),
        "the clean filter was not run: {notes:?}"
    );
    assert_eq!(git(&root, &["status", "--porcelain"]), "");
}

/// [`repo_with_art`] with a second artifact directory, `art2/`, committed.
fn repo_with_two_arts(t: &TestHome) -> (std::path::PathBuf, std::path::PathBuf) {
    let root = repo_with_art(t);
    let art2 = root.join("art2");
    std::fs::create_dir_all(&art2).unwrap();
    std::fs::write(art2.join("artifact.md"), "# Other\n\nA second document.\n").unwrap();
    git(&root, &["add", "art2"]);
    git(&root, &["commit", "-qm", "second"]);
    (root, art2)
}

#[test]
fn two_loops_on_two_directories_of_one_repository_both_commit_every_iteration() {
    let t = TestHome::new();
    let (root, art2) = repo_with_two_arts(&t);
    let cmd = t.agent_cmd("", "FAKE_ITEMS=12");
    for (topic, art) in [("one", t.art()), ("two", art2.clone())] {
        let args = t.start_args(topic, &art, &cmd, &["--max-iterations", "20"]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        t.run(&args).code(0);
    }
    for topic in ["one", "two"] {
        let st = t.wait_stopped(topic);
        assert_eq!(st["status"], "completed", "{topic}: {st}");
    }
    // Every accepted iteration of both is a commit; nothing of theirs is left differing.
    assert_eq!(
        loop_commits(&root).len(),
        2 * 13,
        "{}",
        git(&root, &["log", "--oneline"])
    );
    assert_eq!(
        git(&root, &["status", "--porcelain", "--", "art", "art2"]),
        ""
    );
}

/// A loop whose first iteration's commit waits for a rebase the user began in another shell
/// (as an interrupted rebase leaves the repository): the repository, the rebase's marker, the
/// supervisor's pid and the state while it waits.
fn waiting_on_a_rebase(
    t: &TestHome,
    topic: &str,
) -> (
    std::path::PathBuf,
    std::path::PathBuf,
    i64,
    serde_json::Value,
) {
    let root = repo_with_art(t);
    let daemon = t.blocked_at_first(topic, "");
    let marker = root.join(".git/rebase-merge");
    std::fs::create_dir_all(&marker).unwrap();
    // A rebase detaches HEAD while it runs.
    git(&root, &["checkout", "-q", "--detach"]);
    std::fs::write(t.release_file(), "").unwrap();
    let st = t.wait_state("the commit to wait", |s| s["status"] == "waiting");
    (root, marker, daemon, st)
}

#[test]
fn a_rebase_begun_in_another_shell_mid_iteration_makes_the_commit_wait_not_the_loop_fail() {
    let t = TestHome::new();
    let (root, marker, daemon, st) = waiting_on_a_rebase(&t, "rb");
    let why = st["waiting_reason"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        why.contains("RebaseMerge") && why.contains("waits"),
        "{why}"
    );
    let before = loop_commits(&root).len();
    // The user is done; the loop commits and goes on.
    git(&root, &["checkout", "-q", "main"]);
    std::fs::remove_dir_all(&marker).unwrap();
    let st = t.wait_stopped("rb");
    assert_eq!(st["status"], "completed", "{st}");
    assert!(loop_commits(&root).len() > before);
    assert_eq!(st["state"]["pid"], daemon);
    assert_eq!(git(&root, &["status", "--porcelain", "--", "art"]), "");
}

#[test]
fn a_stop_while_the_commit_waits_for_a_rebase_stops_cleanly_and_keeps_the_work() {
    let t = TestHome::new();
    let (root, marker, _, _) = waiting_on_a_rebase(&t, "rbs");
    t.run(&["wiggum", "stop", "rbs"]).code(0);
    let st = t.wait_stopped("rbs");
    assert_eq!(
        (&st["status"], &st["state"]["stop_reason"]),
        (
            &serde_json::json!("stopped"),
            &serde_json::json!("user_stop")
        ),
        "{st}"
    );
    // The agent's work is still in the work tree, uncommitted.
    assert!(
        !git(&root, &["status", "--porcelain", "--", "art"]).is_empty(),
        "the iteration's work is kept"
    );
    std::fs::remove_dir_all(&marker).unwrap();
}

/// A branch switched while an agent runs is the run's doing (it may be the agent's `git checkout
/// -b`): the loop never commits on a branch it did not start on, and never waits on its own
/// agent. HEAD is put back on the loop's branch, the iteration rejected, and the loop goes on;
/// the other branch is left as it was.
#[test]
fn a_branch_switched_while_the_agent_runs_is_put_back_and_the_iteration_rejected() {
    let t = TestHome::new();
    let root = repo_with_art(&t);
    t.blocked_at_first("sw", "");
    git(&root, &["checkout", "-q", "-b", "elsewhere"]);
    let parked = git(&root, &["rev-parse", "elsewhere"]);
    std::fs::write(t.release_file(), "").unwrap();
    let st = t.wait_stopped("sw");
    assert_eq!(st["status"], "completed", "{st}");
    assert_eq!(git(&root, &["symbolic-ref", "HEAD"]), "refs/heads/main\n");
    let first = &t.runs("iteration")[0];
    assert_eq!(first["outcome"], "rejected", "{first}");
    assert!(
        first["protected_changed"]
            .to_string()
            .contains("HEAD moved off `main` (to `elsewhere`)"),
        "{first}"
    );
    assert_eq!(
        git(&root, &["rev-parse", "elsewhere"]),
        parked,
        "nothing committed there"
    );
    assert!(
        files_of(&root, "main")
            .iter()
            .any(|f| f.starts_with("art/wiggum/iterations/001-100/iteration-"))
    );
    assert_eq!(git(&root, &["status", "--porcelain", "--", "art"]), "");
}

/// A switch, while an agent runs, to a branch without the loop's memory takes the memory away
/// for a moment: it is put back with the branch, and the loop goes on.
#[test]
fn a_branch_switch_that_takes_the_loops_memory_away_is_put_back() {
    let t = TestHome::new();
    let root = repo_with_art(&t);
    git(&root, &["branch", "before-the-loop"]);
    let base = git(&root, &["rev-parse", "HEAD"]);
    t.blocked_at_first("gone", "");
    git(&root, &["checkout", "-q", "before-the-loop"]);
    assert!(!root.join("art/wiggum/PROMPT.md").exists());
    std::fs::write(t.release_file(), "").unwrap();
    let st = t.wait_stopped("gone");
    assert_eq!(st["status"], "completed", "{st}");
    assert!(root.join("art/wiggum/PROMPT.md").exists());
    assert_eq!(
        git(&root, &["rev-parse", "before-the-loop"]),
        base,
        "nothing committed there"
    );
}

#[test]
fn a_second_loop_on_the_same_repository_numbers_its_own_iterations() {
    let t = TestHome::new();
    let (_, art2) = repo_with_two_arts(&t);
    let cmd = t.agent_cmd("", "FAKE_ITEMS=3");
    // Loop `ta` commits its three iterations; HEAD is then its iteration 3.
    let args = t.start_args(
        "ta",
        &t.art(),
        &cmd,
        &["--foreground", "--max-iterations", "3"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    t.run(&args).code(0);
    // Loop `tb` on the other directory starts at its own iteration 1 and does all three.
    let args = t.start_args(
        "tb",
        &art2,
        &cmd,
        &["--foreground", "--max-iterations", "3"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = t.run(&args);
    r.code(0);
    assert!(
        r.stdout().contains("Iteration 1/3 ✓ kept"),
        "{}",
        r.stdout()
    );
    let st: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(art2.join("wiggum/state.json")).unwrap())
            .unwrap();
    assert_eq!(st["stop_reason"], "plan_empty", "{st}");
    assert_eq!(st["last_committed_iteration"], 3, "{st}");
}
