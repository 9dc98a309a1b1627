use std::path::{Path, PathBuf};
use std::process::Command;

use super::*;

pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=user", "-c", "user.email=u@x"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).to_string()
}

fn paths(v: &[&str]) -> Vec<PathBuf> {
    v.iter().map(PathBuf::from).collect()
}

#[test]
fn init_snapshot_commit_cycle() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    std::fs::create_dir_all(root.join("wiggum")).unwrap();
    std::fs::write(root.join("artifact.md"), "# A\n").unwrap();
    let repo = Repo::open_or_init(root).unwrap();
    let s0 = repo.snapshot().unwrap();
    // Supervisor files are not changes.
    std::fs::write(root.join("wiggum/state.json"), "{}").unwrap();
    std::fs::write(root.join("wiggum/runs.jsonl"), "{}\n").unwrap();
    assert!(repo.snapshot().unwrap().changed_since(&s0).is_empty());
    std::fs::write(root.join("notes.md"), "x").unwrap();
    let s1 = repo.snapshot().unwrap();
    assert_eq!(s1.changed_since(&s0), vec!["notes.md"]);
    // Runtime files named among the paths are still left out.
    let mut changed = s1.changed_paths(&s0);
    changed.push("wiggum/state.json".into());
    let sha = repo
        .commit_paths(&changed, "first", "w", "w@x")
        .unwrap()
        .unwrap();
    assert_eq!(sha.len(), 40);
    let patch = repo.commit_patch_from(None, &sha).unwrap();
    assert!(
        patch.contains("notes.md") && !patch.contains("state.json"),
        "{patch}"
    );
    // artifact.md was not among the paths: still untracked.
    assert!(git(root, &["status", "--porcelain"]).contains("?? artifact.md"));
    // Nothing new: no commit.
    assert_eq!(
        repo.commit_paths(&changed, "again", "w", "w@x").unwrap(),
        None
    );
}

#[test]
fn an_agent_that_committed_itself_is_neither_duplicated_nor_an_error() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    std::fs::write(root.join("a.md"), "a").unwrap();
    let repo = Repo::open_or_init(root).unwrap();
    repo.commit_paths(&paths(&["a.md"]), "base", "w", "w@x")
        .unwrap()
        .unwrap();
    let before = repo.snapshot().unwrap();
    // The agent (as aider does) edits two files and commits one of them itself.
    std::fs::write(root.join("a.md"), "a2").unwrap();
    std::fs::write(root.join("b.md"), "b").unwrap();
    git(root, &["add", "a.md"]);
    git(root, &["commit", "-qm", "aider: a"]);
    let after = repo.snapshot().unwrap();
    assert_eq!(after.changed_paths(&before), paths(&["b.md"]));
    let ours = repo
        .commit_paths(
            &after.changed_paths(&before),
            "Wiggum iteration 1: x",
            "w",
            "w@x",
        )
        .unwrap()
        .unwrap();
    let patch = repo.commit_patch_from(None, &ours).unwrap();
    assert!(patch.contains("b.md") && !patch.contains("a.md"), "{patch}");
    // Everything committed by the agent: nothing left for us, and no error.
    let before = repo.snapshot().unwrap();
    std::fs::write(root.join("c.md"), "c").unwrap();
    git(root, &["add", "c.md"]);
    git(root, &["commit", "-qm", "aider: c"]);
    let after = repo.snapshot().unwrap();
    assert_eq!(
        after.changed_since(&before),
        vec!["(commits made by the agent)"]
    );
    assert_eq!(
        repo.commit_paths(
            &after.changed_paths(&before),
            "Wiggum iteration 2: y",
            "w",
            "w@x"
        )
        .unwrap(),
        None
    );
}

#[test]
fn commits_only_under_the_artifact_dir_of_a_larger_repo() {
    let d = tempfile::tempdir().unwrap();
    Repository::init(d.path()).unwrap();
    let art = d.path().join("loops/a");
    std::fs::create_dir_all(&art).unwrap();
    std::fs::write(d.path().join("unrelated.txt"), "user work").unwrap();
    std::fs::write(art.join("artifact.md"), "# A\n").unwrap();
    let repo = Repo::open_or_init(&art).unwrap();
    let s = repo.snapshot().unwrap();
    assert_eq!(
        s.paths().collect::<Vec<_>>(),
        vec![Path::new("artifact.md")]
    );
    let sha = repo
        .commit_paths(&s.changed_paths(&Snapshot::default()), "m", "w", "w@x")
        .unwrap()
        .unwrap();
    let patch = repo.commit_patch_from(None, &sha).unwrap();
    assert!(patch.contains("loops/a/artifact.md"));
    assert!(!patch.contains("unrelated.txt"), "{patch}");
}

#[test]
fn the_users_staged_work_stays_staged_and_out_of_the_commit() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    git(root, &["init", "-q"]);
    std::fs::write(root.join("lib.rs"), "fn a() {}\n").unwrap();
    std::fs::write(root.join("doc.md"), "doc\n").unwrap();
    git(root, &["add", "."]);
    git(root, &["commit", "-qm", "base"]);
    // The user stages one change and leaves an untracked secret.
    std::fs::write(root.join("lib.rs"), "fn a() { b() }\n").unwrap();
    git(root, &["add", "lib.rs"]);
    std::fs::write(root.join(".env.local"), "TOKEN=1\n").unwrap();
    let repo = Repo::open(root).unwrap();
    let before = repo.snapshot().unwrap();
    std::fs::write(root.join("doc.md"), "doc, improved\n").unwrap();
    let after = repo.snapshot().unwrap();
    assert_eq!(after.changed_paths(&before), paths(&["doc.md"]));
    let sha = repo
        .commit_paths(
            &after.changed_paths(&before),
            "Wiggum iteration 1: doc",
            "w",
            "w@x",
        )
        .unwrap()
        .unwrap();
    assert_eq!(
        git(root, &["show", "--format=", "--name-only", &sha]),
        "doc.md\n"
    );
    let status = git(root, &["status", "--porcelain"]);
    assert_eq!(status, "M  lib.rs\n?? .env.local\n");
}

#[test]
fn links_exec_bits_and_deletions_are_committed_as_git_would() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    git(root, &["init", "-q"]);
    std::fs::write(root.join("gone.md"), "x\n").unwrap();
    git(root, &["add", "."]);
    git(root, &["commit", "-qm", "base"]);
    let repo = Repo::open(root).unwrap();
    let before = repo.snapshot().unwrap();
    std::fs::remove_file(root.join("gone.md")).unwrap();
    std::fs::write(root.join("run.sh"), "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(root.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("run.sh", root.join("latest")).unwrap();
    let changed = repo.snapshot().unwrap().changed_paths(&before);
    assert_eq!(changed, paths(&["gone.md", "latest", "run.sh"]));
    repo.commit_paths(&changed, "m", "w", "w@x")
        .unwrap()
        .unwrap();
    let tree = git(root, &["ls-tree", "HEAD"]);
    assert!(
        tree.contains("100755 blob") && tree.contains("\trun.sh"),
        "{tree}"
    );
    assert!(
        tree.contains("120000 blob") && tree.contains("\tlatest"),
        "{tree}"
    );
    assert!(!tree.contains("gone.md"), "{tree}");
    assert_eq!(git(root, &["status", "--porcelain"]), "");
}

/// A directory made a link (or a file) and a file made a directory are committed as git would,
/// the index left clean: libgit2 replaces an entry only by one of its kind.
#[test]
fn a_directory_made_a_link_and_a_file_made_a_directory_are_committed() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    git(root, &["init", "-q"]);
    std::fs::create_dir_all(root.join("src/deep/inner")).unwrap();
    std::fs::write(root.join("src/deep/inner/s.txt"), "s\n").unwrap();
    std::fs::write(root.join("src/deep/t.txt"), "t\n").unwrap();
    std::fs::write(root.join("notes"), "a file\n").unwrap();
    git(root, &["add", "."]);
    git(root, &["commit", "-qm", "base"]);
    let repo = Repo::open(root).unwrap();
    let before = repo.snapshot().unwrap();
    std::fs::rename(root.join("src/deep"), root.join("moved")).unwrap();
    std::os::unix::fs::symlink("../moved", root.join("src/deep")).unwrap();
    std::fs::remove_file(root.join("notes")).unwrap();
    std::fs::create_dir_all(root.join("notes")).unwrap();
    std::fs::write(root.join("notes/n.md"), "now a directory\n").unwrap();
    let changed = repo.snapshot().unwrap().changed_paths(&before);
    repo.commit_paths(&changed, "m", "w", "w@x")
        .unwrap()
        .unwrap();
    let tree = git(root, &["ls-tree", "-r", "HEAD"]);
    let names: Vec<&str> = tree.lines().filter_map(|l| l.split('\t').nth(1)).collect();
    assert_eq!(
        names,
        ["moved/inner/s.txt", "moved/t.txt", "notes/n.md", "src/deep"],
        "{tree}"
    );
    assert!(tree.contains("120000 blob"), "{tree}");
    assert_eq!(git(root, &["status", "--porcelain"]), "");
}

/// A repository with tracked files inside and outside the artifact dir `art/`.
fn refresh_repo() -> (tempfile::TempDir, Repo) {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    for f in ["art/a.md", "art/docs/b.md", "art/docs/c.md", "outside.md"] {
        let p = root.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, f).unwrap();
    }
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "base"]);
    let repo = Repo::open(&root.join("art")).unwrap();
    (d, repo)
}

fn set(v: &[&str]) -> std::collections::BTreeSet<PathBuf> {
    v.iter().map(PathBuf::from).collect()
}

#[test]
fn a_refresh_for_the_touched_paths_equals_a_full_walk() {
    type Change = fn(&Path);
    // (what happens under art/, what the watch reports touched)
    let cases: [(&str, Change, &[&str]); 7] = [
        (
            "edit",
            |a| std::fs::write(a.join("a.md"), "new").unwrap(),
            &["a.md"],
        ),
        (
            "delete",
            |a| std::fs::remove_file(a.join("docs/b.md")).unwrap(),
            &["docs/b.md"],
        ),
        (
            "new dir, reported as the dir",
            |a| {
                std::fs::create_dir_all(a.join("new/deep")).unwrap();
                std::fs::write(a.join("new/deep/x.md"), "x").unwrap();
            },
            &["new"],
        ),
        (
            "exec bit",
            |a| {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(
                    a.join("docs/c.md"),
                    std::fs::Permissions::from_mode(0o755),
                )
                .unwrap();
            },
            &["docs/c.md"],
        ),
        (
            "edited back to what HEAD has",
            |a| std::fs::write(a.join("a.md"), "art/a.md").unwrap(),
            &["a.md"],
        ),
        (
            "rename a dir",
            |a| std::fs::rename(a.join("docs"), a.join("moved")).unwrap(),
            &["docs", "moved"],
        ),
        ("nothing", |_| {}, &[]),
    ];
    let (d, repo) = refresh_repo();
    let art = d.path().join("art");
    // Dirty to begin with: an edit the refresh must keep and one it must drop.
    std::fs::write(art.join("docs/c.md"), "dirty").unwrap();
    let mut prev = repo.snapshot().unwrap();
    for (what, change, touched) in cases {
        change(&art);
        let got = repo.refresh(&prev, Some(&set(touched))).unwrap();
        let want = repo.snapshot().unwrap();
        assert_eq!(got, want, "{what}");
        prev = got;
    }
    // And it did not walk: a change the watch did not report is not seen.
    std::fs::write(art.join("a.md"), "unreported").unwrap();
    assert_eq!(repo.refresh(&prev, Some(&set(&[]))).unwrap(), prev);
    assert_ne!(repo.snapshot().unwrap(), prev);
}

#[test]
fn a_refresh_walks_when_the_index_or_head_moved_under_it() {
    let (d, repo) = refresh_repo();
    let root = d.path();
    let prev = repo.snapshot().unwrap();
    // No file changes, so no watch event: only the index says a.md is no longer tracked.
    git(root, &["rm", "-q", "--cached", "art/a.md"]);
    let got = repo.refresh(&prev, Some(&set(&[]))).unwrap();
    assert_eq!(got.paths().collect::<Vec<_>>(), [Path::new("a.md")]);
    // Someone commits that, then puts it back: HEAD moved, a.md clean again.
    git(root, &["commit", "-qm", "untrack"]);
    git(root, &["add", "art/a.md"]);
    git(root, &["commit", "-qm", "back"]);
    let got = repo.refresh(&got, Some(&set(&[]))).unwrap();
    assert_eq!(got, repo.snapshot().unwrap());
    assert_eq!(got.paths().count(), 0);
    // Unknown changes: a walk.
    std::fs::write(root.join("art/a.md"), "x").unwrap();
    assert_eq!(repo.refresh(&got, None).unwrap(), repo.snapshot().unwrap());
}

#[test]
fn after_our_own_commit_the_snapshot_needs_no_walk_and_is_exact() {
    let (d, repo) = refresh_repo();
    let art = d.path().join("art");
    std::fs::write(art.join("a.md"), "one").unwrap();
    std::fs::write(art.join("docs/b.md"), "two").unwrap();
    let snap = repo.snapshot().unwrap();
    let mut pending = repo.stage_tree(&paths(&["a.md"])).unwrap().unwrap();
    repo.finish(&mut pending, "m", "w", "w@x").unwrap();
    let after = repo.after_commit(&snap, &pending).unwrap().unwrap();
    assert_eq!(after, repo.snapshot().unwrap());
    assert_eq!(after.paths().collect::<Vec<_>>(), [Path::new("docs/b.md")]);
}

#[test]
fn a_commit_whose_head_another_writer_moved_goes_on_the_new_head_and_keeps_both() {
    let (d, repo) = refresh_repo();
    let root = d.path();
    std::fs::write(root.join("art/a.md"), "ours").unwrap();
    let snap = repo.snapshot().unwrap();
    let mut pending = repo.stage_tree(&paths(&["a.md"])).unwrap().unwrap();
    // Another loop (or the user) commits in the same repository meanwhile.
    std::fs::write(root.join("outside.md"), "theirs").unwrap();
    git(root, &["commit", "-qm", "theirs", "--", "outside.md"]);
    let theirs = git(root, &["rev-parse", "HEAD"]).trim().to_string();
    let sha = repo.finish(&mut pending, "ours", "w", "w@x").unwrap();
    assert_eq!(git(root, &["rev-parse", "HEAD^"]).trim(), theirs);
    assert_eq!(git(root, &["rev-parse", "HEAD"]).trim(), sha);
    assert_eq!(git(root, &["show", "HEAD:art/a.md"]), "ours");
    assert_eq!(git(root, &["show", "HEAD:outside.md"]), "theirs");
    assert_eq!(git(root, &["status", "--porcelain"]), "");
    // The snapshot before cannot be carried over: the next one walks.
    assert_eq!(repo.after_commit(&snap, &pending).unwrap(), None);
}

#[test]
fn a_commit_waits_for_another_writers_index_lock_and_leaves_the_index_right() {
    let (d, repo) = refresh_repo();
    let root = d.path().to_path_buf();
    std::fs::write(root.join("art/a.md"), "ours").unwrap();
    let mut pending = repo.stage_tree(&paths(&["a.md"])).unwrap().unwrap();
    // Another writer holds the index (as `git add` does) before the commit begins, so the
    // commit always meets it.
    let lock = root.join(".git/index.lock");
    std::fs::write(&lock, "").unwrap();
    let (done_tx, done) = std::sync::mpsc::channel();
    let ours = std::thread::spawn(move || {
        let r = repo.finish(&mut pending, "ours", "w", "w@x");
        done_tx.send(()).unwrap();
        r
    });
    // While the other writer holds it, the commit waits.
    assert!(
        done.recv_timeout(std::time::Duration::from_millis(100))
            .is_err(),
        "the commit went on while another writer held index.lock"
    );
    std::fs::remove_file(&lock).unwrap();
    ours.join().unwrap().unwrap();
    assert_eq!(git(&root, &["status", "--porcelain"]), "");
}

/// A differential check of [`Repo::refresh`] against a full walk over many random changes, in
/// a repository holding what refreshes must get right: work the user staged (a change, a new
/// file, a deletion), ignored files and directories, a file git converts (`eol=crlf`), links,
/// exec bits, nested repositories, files edited back to what the index holds.
#[test]
fn refreshes_over_random_changes_agree_with_full_walks() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    let w = |p: &str, c: &str| {
        let f = root.join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, c).unwrap();
    };
    for f in [
        "a.md",
        "docs/b.md",
        "docs/c.md",
        "docs/deep/d.md",
        "keep/e.md",
    ] {
        w(f, f);
    }
    w(".gitignore", "*.log\nign/\n");
    w(".gitattributes", "crlf.txt text eol=crlf\n");
    w("crlf.txt", "one\ntwo\n");
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "base"]);
    // The user's staged work, there before the loop's first snapshot.
    w("docs/b.md", "staged change");
    git(root, &["add", "docs/b.md"]);
    w("s.md", "staged new");
    git(root, &["add", "s.md"]);
    git(root, &["rm", "-q", "--cached", "docs/c.md"]);
    git(root, &["rm", "-q", "keep/e.md"]);
    let repo = Repo::open(root).unwrap();
    let pool = [
        "a.md",
        "docs/b.md",
        "docs/c.md",
        "docs/deep/d.md",
        "keep/e.md",
        "s.md",
        "crlf.txt",
        "new/x.md",
        "new/deep/y.md",
        "ign/z.md",
        "t.log",
        "docs/deep/link",
    ];
    let heads = [
        "a.md",
        "docs/b.md",
        "staged change",
        "staged new",
        "one\r\ntwo\r\n",
        "x",
    ];
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        usize::try_from(seed % n as u64).unwrap()
    };
    let mut prev = repo.snapshot().unwrap();
    // Bytes that differ from the index's, content git's conversion may make equal.
    w("crlf.txt", "one\r\ntwo\r\n");
    let got = repo.refresh(&prev, Some(&set(&["crlf.txt"]))).unwrap();
    assert_eq!(got, repo.snapshot().unwrap(), "crlf.txt");
    prev = got;
    for step in 0..400 {
        let p = pool[next(pool.len())];
        let full = root.join(p);
        // The topmost directory this change creates: the watch reports that, not the file.
        let mut touched = vec![p.to_string()];
        if let Some(first_new) = Path::new(p)
            .ancestors()
            .skip(1)
            .filter(|a| !a.as_os_str().is_empty() && !root.join(a).exists())
            .last()
        {
            touched = vec![first_new.display().to_string()];
        }
        let what = match next(8) {
            0 | 1 => {
                std::fs::remove_file(&full).ok();
                w(p, heads[next(heads.len())]);
                "write"
            }
            2 => {
                std::fs::remove_file(&full).ok();
                "delete"
            }
            3 => {
                use std::os::unix::fs::PermissionsExt;
                if let Ok(m) = std::fs::metadata(&full) {
                    let mode = m.permissions().mode() ^ 0o111;
                    std::fs::set_permissions(&full, std::fs::Permissions::from_mode(mode)).unwrap();
                }
                "chmod"
            }
            4 => {
                std::fs::remove_file(&full).ok();
                std::fs::create_dir_all(full.parent().unwrap()).unwrap();
                std::os::unix::fs::symlink(heads[next(heads.len())], &full).unwrap();
                "link"
            }
            5 => {
                let dir = ["docs/deep", "new", "ign"][next(3)];
                std::fs::remove_dir_all(root.join(dir)).ok();
                touched = vec![dir.to_string()];
                "remove a directory"
            }
            6 => {
                let dir = root.join("new/repo");
                if !dir.exists() {
                    std::fs::create_dir_all(&dir).unwrap();
                    git(&dir, &["init", "-q"]);
                    git(&dir, &["commit", "-q", "--allow-empty", "-m", "n"]);
                    touched = vec![if root.join("new").read_dir().unwrap().count() == 1 {
                        "new".into()
                    } else {
                        "new/repo".into()
                    }];
                } else {
                    git(&dir, &["commit", "-q", "--allow-empty", "-m", "again"]);
                    touched = vec!["new/repo/.git/HEAD".into()];
                }
                "nested repository"
            }
            _ => {
                if let Ok(c) = std::fs::read(&full) {
                    std::fs::write(&full, c).unwrap();
                }
                "rewrite unchanged"
            }
        };
        let touched: std::collections::BTreeSet<PathBuf> =
            touched.iter().map(PathBuf::from).collect();
        let got = repo.refresh(&prev, Some(&touched)).unwrap();
        let want = repo.snapshot().unwrap();
        assert_eq!(got, want, "step {step}: {what} {p}, touched {touched:?}");
        prev = got;
    }
}

/// A working-tree encoding and a filter driver are git's conversions, not libgit2's: the commit
/// stores what `git add` would, and the files are clean afterwards.
#[test]
fn conversions_only_git_runs_are_applied_to_committed_files() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    git(root, &["init", "-q"]);
    git(root, &["config", "filter.upper.clean", "tr a-z A-Z"]);
    std::fs::write(
        root.join(".gitattributes"),
        "*.u16 working-tree-encoding=UTF-16LE\n*.up filter=upper\n*.raw -filter\n",
    )
    .unwrap();
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "base"]);
    std::fs::write(root.join("wide.u16"), b"h\0i\0\n\0").unwrap();
    std::fs::write(root.join("loud.up"), "quiet\n").unwrap();
    std::fs::write(root.join("plain.raw"), "as is\n").unwrap();
    let repo = Repo::open(root).unwrap();
    repo.commit_paths(
        &paths(&["wide.u16", "loud.up", "plain.raw"]),
        "c",
        "w",
        "w@x",
    )
    .unwrap()
    .unwrap();
    assert_eq!(git(root, &["show", "HEAD:wide.u16"]), "hi\n");
    assert_eq!(git(root, &["show", "HEAD:loud.up"]), "QUIET\n");
    assert_eq!(git(root, &["show", "HEAD:plain.raw"]), "as is\n");
    assert_eq!(git(root, &["status", "--porcelain"]), "");
}

/// Every config file git reads that the work tree's side can write is found: `.git/config`,
/// `config.worktree`, and included files inside the repository (not those outside it).
#[test]
fn config_files_include_the_worktree_config_and_included_files_inside_the_repository() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().canonicalize().unwrap();
    git(&root, &["init", "-q"]);
    git(&root, &["config", "include.path", "../team.gitconfig"]);
    git(
        &root,
        &["config", "includeIf.onbranch:main.path", "extra.cfg"],
    );
    git(
        &root,
        &[
            "config",
            "--add",
            "include.path",
            "/etc/elsewhere.gitconfig",
        ],
    );
    git(
        &root,
        &[
            "config",
            "--add",
            "include.path",
            "../../../outside.gitconfig",
        ],
    );
    let repo = git2::Repository::open(&root).unwrap();
    let names: Vec<String> = preflight::config_files(&repo, &root)
        .into_iter()
        .map(|(name, path)| {
            assert!(path.is_absolute(), "{path:?}");
            name.replace(&*root.display().to_string(), "<root>")
        })
        .collect();
    assert_eq!(
        names,
        [
            ".git/config",
            ".git/config.worktree",
            "<root>/team.gitconfig",
            "<root>/.git/extra.cfg"
        ]
    );
}

#[test]
fn head_moved_names_where_head_is_and_how_to_go_back() {
    let d = tempfile::tempdir().unwrap();
    let main = HeadRef::Branch("refs/heads/main".into());
    let cases: [(&str, &HeadRef, Option<&str>); 5] = [
        ("ref: refs/heads/main\n", &main, None),
        (
            "ref: refs/heads/feature/x\n",
            &main,
            Some(
                "HEAD is on `feature/x` but the loop commits on `main` (a `git switch` or `git checkout` in another shell?); switch back with `git switch main`",
            ),
        ),
        (
            "0123456789abcdef0123456789abcdef01234567\n",
            &main,
            Some(
                "HEAD is detached but the loop commits on `main` (a `git switch` or `git checkout` in another shell?); switch back with `git switch main`",
            ),
        ),
        (
            "0123456789abcdef0123456789abcdef01234567\n",
            &HeadRef::Detached,
            None,
        ),
        (
            "ref: refs/heads/main\n",
            &HeadRef::Detached,
            Some(
                "HEAD is on `main` but the loop commits on a detached HEAD (a `git switch` or `git checkout` in another shell?); switch back with `git switch --detach <the loop's last commit>`",
            ),
        ),
    ];
    for (head, at_start, want) in cases {
        std::fs::write(d.path().join("HEAD"), head).unwrap();
        assert_eq!(head_moved(d.path(), at_start).as_deref(), want, "{head}");
    }
}

/// `core.fileMode = false`: the exec bits on disk mean nothing (NTFS under WSL); a committed file
/// keeps the mode git has for it and a new one is not executable, as `git add` does.
#[test]
fn without_file_modes_a_commit_keeps_the_modes_git_has() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    git(root, &["init", "-q"]);
    std::fs::write(root.join("plain.sh"), "a\n").unwrap();
    std::fs::write(root.join("tool.sh"), "b\n").unwrap();
    git(root, &["add", "-A"]);
    git(root, &["update-index", "--chmod=+x", "tool.sh"]);
    git(root, &["commit", "-qm", "base"]);
    git(root, &["config", "core.fileMode", "false"]);
    let set = |name: &str, mode: u32, text: &str| {
        let p = root.join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    set("plain.sh", 0o755, "a2\n");
    set("tool.sh", 0o644, "b2\n");
    set("new.sh", 0o755, "c\n");
    let repo = Repo::open(root).unwrap();
    repo.commit_paths(&paths(&["plain.sh", "tool.sh", "new.sh"]), "c", "w", "w@x")
        .unwrap()
        .unwrap();
    let tree = git(root, &["ls-tree", "HEAD"]);
    for (mode, name) in [
        ("100644", "plain.sh"),
        ("100755", "tool.sh"),
        ("100644", "new.sh"),
    ] {
        assert!(
            tree.lines()
                .any(|l| l.starts_with(mode) && l.ends_with(name)),
            "{name}: {tree}"
        );
    }
    assert_eq!(git(root, &["status", "--porcelain"]), "");
}

#[test]
fn one_walk_finds_the_users_work_at_risk_and_what_is_dirty_under_the_artifact_dir() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().canonicalize().unwrap();
    let sub = tempfile::tempdir().unwrap();
    git(sub.path(), &["init", "-q"]);
    std::fs::write(sub.path().join("s.txt"), "s").unwrap();
    git(sub.path(), &["add", "."]);
    git(sub.path(), &["commit", "-qm", "s"]);
    git(&root, &["init", "-q"]);
    for (p, text) in [
        ("docs/artifact.md", "# A\n"),
        ("docs/gone.md", "g"),
        ("docs/wiggum/AGENT.md", "memory"),
        ("src/lib.rs", "fn a() {}\n"),
        (".gitignore", ".env\ntarget/\n"),
    ] {
        std::fs::create_dir_all(root.join(p).parent().unwrap()).unwrap();
        std::fs::write(root.join(p), text).unwrap();
    }
    git(&root, &["add", "."]);
    git(
        &root,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            sub.path().to_str().unwrap(),
            "vendor/sub",
        ],
    );
    git(&root, &["commit", "-qm", "base"]);
    // The user's work: a tracked change and a deletion under the artifact dir, a change and an
    // untracked file elsewhere, an ignored file, an ignored directory, the loop's own files, and
    // a dirty submodule.
    std::fs::write(root.join("docs/artifact.md"), "# A, edited\n").unwrap();
    std::fs::remove_file(root.join("docs/gone.md")).unwrap();
    std::fs::write(root.join("docs/draft.md"), "draft").unwrap();
    std::fs::write(root.join("src/lib.rs"), "fn b() {}\n").unwrap();
    std::fs::write(root.join("notes.txt"), "n").unwrap();
    std::fs::write(root.join(".env"), "KEY=1").unwrap();
    std::fs::create_dir_all(root.join("target/debug")).unwrap();
    std::fs::write(root.join("target/debug/out"), "o").unwrap();
    std::fs::write(root.join("docs/wiggum/AGENT.md"), "memory, more").unwrap();
    std::fs::write(root.join("vendor/sub/s.txt"), "changed").unwrap();

    let repo = Repo::open(&root.join("docs")).unwrap();
    let mut found = repo.work_found(Path::new("docs/wiggum")).unwrap();
    found.at_risk.sort();
    found.dirty.sort();
    assert_eq!(
        found.at_risk,
        paths(&[
            ".env",
            "docs/artifact.md",
            "docs/draft.md",
            "notes.txt",
            "src/lib.rs"
        ])
    );
    assert_eq!(
        found.dirty,
        paths(&["artifact.md", "draft.md", "gone.md", "wiggum/AGENT.md"])
    );
    // The same as the snapshot calls dirty under the artifact dir.
    let snap = repo.snapshot().unwrap();
    let mut dirty: Vec<PathBuf> = snap.paths().map(Path::to_path_buf).collect();
    dirty.sort();
    assert_eq!(found.dirty, dirty);
}

/// What the loop commits of a file is what `git add` stores: line endings converted where the
/// repository asks for it, `$Id$` collapsed, other bytes as they are — whichever way the blob is
/// written.
#[test]
fn committed_files_hold_what_git_add_would_store() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    git(root, &["init", "-q"]);
    git(root, &["config", "core.autocrlf", "true"]);
    std::fs::write(root.join(".gitattributes"), "*.id ident\n").unwrap();
    git(root, &["add", ".gitattributes"]);
    git(root, &["commit", "-q", "-m", "base"]);
    let files: [(&str, &[u8]); 4] = [
        ("crlf.txt", b"one\r\ntwo\r\n"),
        ("plain.txt", b"one\ntwo\n"),
        ("stamp.id", b"$Id: 0123456789abcdef $\nbody\n"),
        ("binary.bin", &[0, 159, 146, 150, 13, 10, 0]),
    ];
    for (name, bytes) in files {
        std::fs::write(root.join(name), bytes).unwrap();
    }
    let repo = Repo::open_or_init(root).unwrap();
    let names: Vec<&str> = files.iter().map(|(n, _)| *n).collect();
    repo.commit_paths(&paths(&names), "files", "w", "w@x")
        .unwrap()
        .unwrap();
    for name in names {
        let ours = git(root, &["rev-parse", &format!("HEAD:{name}")]);
        let gits = git(root, &["hash-object", name]);
        assert_eq!(ours, gits, "{name}: the blob is not what `git add` stores");
    }
    // The conversions did happen (else the comparison above proves little).
    assert_eq!(git(root, &["show", "HEAD:crlf.txt"]), "one\ntwo\n");
    assert!(git(root, &["show", "HEAD:stamp.id"]).starts_with("$Id$\n"));
}

#[test]
fn what_commits_on_top_changed_is_named_within_the_artifact_dir_only() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    std::fs::create_dir_all(root.join("docs/sub")).unwrap();
    std::fs::create_dir_all(root.join("other")).unwrap();
    git(root, &["init", "-q"]);
    std::fs::write(root.join("docs/a.md"), "a\n").unwrap();
    std::fs::write(root.join("other/b.md"), "b\n").unwrap();
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "base"]);
    let base = git(root, &["rev-parse", "HEAD"]).trim().to_string();
    // Two commits on top: a change inside the artifact dir, one beside it, a new file deep in
    // it, and a removal.
    std::fs::write(root.join("docs/a.md"), "a2\n").unwrap();
    std::fs::write(root.join("other/b.md"), "b2\n").unwrap();
    git(root, &["commit", "-qam", "one"]);
    std::fs::write(root.join("docs/sub/c.md"), "c\n").unwrap();
    git(root, &["add", "-A"]);
    git(root, &["rm", "-q", "other/b.md"]);
    git(root, &["commit", "-qm", "two"]);
    let repo = Repo::open_or_init(&root.join("docs")).unwrap();
    let mut got = repo.changed_since_commit(&base).unwrap();
    got.sort();
    assert_eq!(got, paths(&["a.md", "sub/c.md"]));
    // The patch from the base holds both commits' changes of the artifact dir.
    let head = git(root, &["rev-parse", "HEAD"]).trim().to_string();
    let patch = repo.commit_patch_from(Some(&base), &head).unwrap();
    assert!(patch.contains("+a2") && patch.contains("+c"), "{patch}");
    assert!(repo.changed_since_commit(&head).unwrap().is_empty());
}

#[test]
fn a_path_is_unchanged_only_when_head_and_the_index_hold_it_as_it_is() {
    let (d, repo) = refresh_repo();
    let art = d.path().join("art");
    std::fs::write(d.path().join(".gitignore"), "*.log\n").unwrap();
    std::fs::write(art.join("docs/b.md"), "edited").unwrap();
    std::fs::remove_file(art.join("docs/c.md")).unwrap();
    std::fs::write(art.join("new.md"), "new").unwrap();
    std::fs::write(art.join("run.log"), "ignored").unwrap();
    for (rel, unchanged) in [
        ("a.md", true),
        ("run.log", true),
        ("docs/b.md", false),
        ("docs/c.md", false),
        ("new.md", false),
        ("never.md", true),
        // A directory is not a path git can answer for.
        ("docs", false),
    ] {
        assert_eq!(repo.unchanged(Path::new(rel)), unchanged, "{rel}");
    }
}
