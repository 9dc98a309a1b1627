//! git2 at the edge: find or create the repository, snapshot what is dirty under the loop's
//! directory (to tell whether the agent changed anything), commit an accepted iteration, diff.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use git2::{IndexAddOption, Oid, Repository, Signature, StatusOptions};

use crate::error::{Error, GitContext, Result};
use crate::layout::Layout;

/// The iteration number and sha of HEAD when it is one of our iteration commits
/// (`Wiggum iteration N: …`). Never creates a repository.
#[must_use]
pub fn head_iteration(dir: &Path) -> Option<(u32, String)> {
    let repo = Repository::discover(dir).ok()?;
    let head = repo.head().ok()?.peel_to_commit().ok()?;
    let n = head
        .message()
        .ok()?
        .strip_prefix("Wiggum iteration ")?
        .split(':')
        .next()?
        .parse()
        .ok()?;
    Some((n, head.id().to_string()))
}

/// The repository holding a loop's artifact directory.
pub struct Repo {
    repo: Repository,
    workdir: PathBuf,
    /// The artifact dir relative to the work tree ("" when they are the same).
    scope: PathBuf,
}

/// What is dirty under the scope, and where HEAD is: two equal snapshots mean "no change".
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Snapshot {
    head: Option<Oid>,
    files: BTreeMap<PathBuf, Option<Oid>>,
}

impl Snapshot {
    /// Paths (relative to the artifact dir) that differ between two snapshots.
    #[must_use]
    pub fn changed_since(&self, before: &Snapshot) -> Vec<String> {
        let mut out: Vec<String> = self
            .files
            .iter()
            .filter(|(p, oid)| before.files.get(*p) != Some(oid))
            .chain(
                before
                    .files
                    .iter()
                    .filter(|(p, _)| !self.files.contains_key(*p)),
            )
            .map(|(p, _)| p.display().to_string())
            .collect();
        out.sort();
        out.dedup();
        if out.is_empty() && self.head != before.head {
            out.push("(commits made by the agent)".into());
        }
        out
    }
}

impl Repo {
    /// Open the repository containing `artifact`, or init one there.
    pub fn open_or_init(artifact: &Path) -> Result<Repo> {
        let repo = match Repository::discover(artifact) {
            Ok(r) if !r.is_bare() => r,
            _ => Repository::init(artifact).git_at(artifact, "init a repository")?,
        };
        let workdir = repo
            .workdir()
            .ok_or_else(|| Error::runtime(format!("{} has no work tree", artifact.display())))?
            .canonicalize()
            .map_err(|e| Error::runtime(format!("canonicalise work tree: {e}")))?;
        let canon = artifact
            .canonicalize()
            .map_err(|e| Error::runtime(format!("canonicalise {}: {e}", artifact.display())))?;
        let scope = canon
            .strip_prefix(&workdir)
            .unwrap_or(Path::new(""))
            .to_path_buf();
        Ok(Repo {
            repo,
            workdir,
            scope,
        })
    }

    /// The work tree's root.
    #[must_use]
    pub fn workdir(&self) -> &Path {
        &self.workdir
    }

    fn rel_to_artifact<'a>(&self, repo_rel: &'a Path) -> Option<&'a Path> {
        repo_rel.strip_prefix(&self.scope).ok()
    }

    fn pathspec(&self) -> String {
        if self.scope.as_os_str().is_empty() {
            "*".into()
        } else {
            self.scope.display().to_string()
        }
    }

    /// The current HEAD commit, if any.
    #[must_use]
    pub fn head(&self) -> Option<Oid> {
        self.repo.head().ok().and_then(|h| h.target())
    }

    /// What is dirty under the artifact dir, ignoring the supervisor's own files.
    pub fn snapshot(&self) -> Result<Snapshot> {
        let mut opts = StatusOptions::new();
        opts.include_untracked(true)
            .recurse_untracked_dirs(true)
            .include_ignored(false)
            .pathspec(self.pathspec());
        let statuses = self
            .repo
            .statuses(Some(&mut opts))
            .git_at(&self.workdir, "read status")?;
        let mut files = BTreeMap::new();
        for entry in statuses.iter() {
            let Ok(path) = entry.path() else { continue };
            let repo_rel = PathBuf::from(path);
            let Some(rel) = self.rel_to_artifact(&repo_rel) else {
                continue;
            };
            if Layout::is_supervisor_path(rel) {
                continue;
            }
            let full = self.workdir.join(&repo_rel);
            let oid = Oid::hash_file(git2::ObjectType::Blob, &full).ok();
            files.insert(rel.to_path_buf(), oid);
        }
        Ok(Snapshot {
            head: self.head(),
            files,
        })
    }

    /// Stage everything under the artifact dir (but the runtime files) and commit it.
    /// Returns the new commit's sha, or `None` when there was nothing to commit.
    pub fn commit(&self, message: &str, name: &str, email: &str) -> Result<Option<String>> {
        let wd = &self.workdir;
        let mut index = self.repo.index().git_at(wd, "open the index")?;
        // The agent may have staged or committed with its own git since we last looked.
        index.read(false).git_at(wd, "reload the index")?;
        let spec = [self.pathspec()];
        let scope = self.scope.clone();
        let mut skip_runtime = |path: &Path, _: &[u8]| -> i32 {
            match path.strip_prefix(&scope) {
                Ok(rel) if Layout::is_runtime_path(rel) => 1,
                _ => 0,
            }
        };
        index
            .add_all(
                spec.iter(),
                IndexAddOption::DEFAULT,
                Some(&mut skip_runtime),
            )
            .git_at(wd, "stage changes")?;
        index
            .update_all(spec.iter(), Some(&mut skip_runtime))
            .git_at(wd, "stage deletions")?;
        crate::failpoint::hit("commit-after-stage")?;
        index.write().git_at(wd, "write the index")?;
        let tree_id = index.write_tree().git_at(wd, "write the tree")?;
        let parent = match self.head() {
            Some(oid) => Some(self.repo.find_commit(oid).git_at(wd, "read HEAD")?),
            None => None,
        };
        if parent.as_ref().is_some_and(|p| p.tree_id() == tree_id) {
            return Ok(None);
        }
        let tree = self.repo.find_tree(tree_id).git_at(wd, "read the tree")?;
        let sig = Signature::now(name, email).git_at(wd, "make a signature")?;
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        let oid = self
            .repo
            .commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
            .git_at(wd, "commit")?;
        Ok(Some(oid.to_string()))
    }

    /// The patch a commit introduced (against its first parent), as text.
    pub fn commit_patch(&self, sha: &str) -> Result<String> {
        let wd = &self.workdir;
        let oid = Oid::from_str(sha).git_at(wd, "parse a commit id")?;
        let commit = self.repo.find_commit(oid).git_at(wd, "find the commit")?;
        let tree = commit.tree().git_at(wd, "read the tree")?;
        let parent_tree = match commit.parent(0) {
            Ok(p) => Some(p.tree().git_at(wd, "read the parent tree")?),
            Err(_) => None,
        };
        let diff = self
            .repo
            .diff_tree_to_tree(parent_tree.as_ref(), Some(&tree), None)
            .git_at(wd, "diff")?;
        patch_text(&diff, wd)
    }

    /// The uncommitted changes under the artifact dir (the work tree against HEAD), as text.
    pub fn worktree_patch(&self) -> Result<String> {
        let wd = &self.workdir;
        let head_tree = match self.head() {
            Some(oid) => Some(
                self.repo
                    .find_commit(oid)
                    .and_then(|c| c.tree())
                    .git_at(wd, "read HEAD")?,
            ),
            None => None,
        };
        let mut opts = git2::DiffOptions::new();
        opts.include_untracked(true)
            .recurse_untracked_dirs(true)
            .show_untracked_content(true)
            .pathspec(self.pathspec());
        let diff = self
            .repo
            .diff_tree_to_workdir_with_index(head_tree.as_ref(), Some(&mut opts))
            .git_at(wd, "diff the work tree")?;
        patch_text(&diff, wd)
    }
}

fn patch_text(diff: &git2::Diff<'_>, wd: &Path) -> Result<String> {
    let mut out = String::new();
    diff.print(git2::DiffFormat::Patch, |_, _, line| {
        if matches!(line.origin(), '+' | '-' | ' ') {
            out.push(line.origin());
        }
        out.push_str(&String::from_utf8_lossy(line.content()));
        true
    })
    .git_at(wd, "print the diff")?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_snapshot_commit_cycle() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        std::fs::create_dir_all(root.join("wiggum")).unwrap();
        std::fs::write(root.join("artifact.md"), "# A\n").unwrap();
        let repo = Repo::open_or_init(root).unwrap();
        let s0 = repo.snapshot().unwrap();
        // Supervisor files are not changes, nor committed when runtime.
        std::fs::write(root.join("wiggum/state.json"), "{}").unwrap();
        std::fs::write(root.join("wiggum/runs.jsonl"), "{}\n").unwrap();
        assert!(repo.snapshot().unwrap().changed_since(&s0).is_empty());
        std::fs::write(root.join("notes.md"), "x").unwrap();
        assert_eq!(
            repo.snapshot().unwrap().changed_since(&s0),
            vec!["notes.md"]
        );
        let sha = repo
            .commit("first", "wiggum-agent", "w@x")
            .unwrap()
            .unwrap();
        assert_eq!(sha.len(), 40);
        let patch = repo.commit_patch(&sha).unwrap();
        assert!(
            patch.contains("notes.md") && !patch.contains("state.json"),
            "{patch}"
        );
        // Nothing new: no commit.
        assert_eq!(repo.commit("again", "w", "w@x").unwrap(), None);
    }

    #[test]
    fn an_agent_that_committed_itself_is_neither_duplicated_nor_an_error() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        std::fs::write(root.join("a.md"), "a").unwrap();
        let repo = Repo::open_or_init(root).unwrap();
        repo.commit("base", "w", "w@x").unwrap().unwrap();
        let before = repo.snapshot().unwrap();
        // The agent (as aider does) edits two files and commits one of them itself.
        std::fs::write(root.join("a.md"), "a2").unwrap();
        std::fs::write(root.join("b.md"), "b").unwrap();
        let git = |args: &[&str]| {
            let ok = std::process::Command::new("git")
                .args(["-c", "user.name=aider", "-c", "user.email=a@x"])
                .args(args)
                .current_dir(root)
                .status()
                .unwrap()
                .success();
            assert!(ok, "git {args:?}");
        };
        git(&["add", "a.md"]);
        git(&["commit", "-qm", "aider: a"]);
        assert!(!repo.snapshot().unwrap().changed_since(&before).is_empty());
        let ours = repo
            .commit("Wiggum iteration 1: x", "w", "w@x")
            .unwrap()
            .unwrap();
        let patch = repo.commit_patch(&ours).unwrap();
        assert!(patch.contains("b.md") && !patch.contains("a.md"), "{patch}");
        // Everything committed by the agent: nothing left for us, and no error.
        std::fs::write(root.join("c.md"), "c").unwrap();
        git(&["add", "c.md"]);
        git(&["commit", "-qm", "aider: c"]);
        assert_eq!(
            repo.commit("Wiggum iteration 2: y", "w", "w@x").unwrap(),
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
        let sha = repo.commit("m", "w", "w@x").unwrap().unwrap();
        let patch = repo.commit_patch(&sha).unwrap();
        assert!(patch.contains("loops/a/artifact.md"));
        assert!(!patch.contains("unrelated.txt"), "{patch}");
    }
}
