//! Content git converts with something libgit2 does not have: a filter driver from the user's
//! config (`filter=lfs` with `filter.lfs.process`, any `filter.<name>.clean`) or a
//! `working-tree-encoding`. libgit2 would store such a file's bytes as they are on disk — the
//! whole binary instead of the LFS pointer, UTF-16 instead of UTF-8 — and `git status` would
//! then call the committed file modified. These files are stored by `git hash-object -w`, which
//! runs the same conversion `git add` does.

use std::path::Path;
use std::process::{Command, Stdio};

use git2::{AttrCheckFlags, AttrValue, Oid, Repository};

use crate::error::{Error, Result};

/// The attributes that name a conversion only git can run.
pub const EXTERNAL: [&str; 2] = ["filter", "working-tree-encoding"];

/// What converts `repo_rel` that only git can run: `filter=<driver>` or
/// `working-tree-encoding=<enc>`, as git's attributes name them. `None` for everything libgit2
/// converts itself (line endings, `ident`) or leaves alone.
#[must_use]
pub fn external(repo: &Repository, repo_rel: &Path) -> Option<String> {
    EXTERNAL.iter().find_map(|attr| {
        let value = repo
            .get_attr(repo_rel, attr, AttrCheckFlags::FILE_THEN_INDEX)
            .ok()
            .flatten();
        // `-filter` (unset) and a bare `filter` (set, no driver) convert nothing.
        match AttrValue::from_string(value) {
            AttrValue::String(v) => Some(format!("{attr}={v}")),
            _ => None,
        }
    })
}

/// How a `git` command is confined: the program and arguments it runs behind (our
/// `sandbox-exec` with the agent's policy) and the environment it gets instead of ours.
#[derive(Debug, Clone)]
pub struct Confine {
    /// The wrapper's program and arguments, the `git` command line appended.
    pub argv: Vec<String>,
    /// The whole environment (built from the agents' allow-list).
    pub env: Vec<(String, String)>,
}

/// Store the work-tree file `repo_rel` as `git add` would, conversion included, and return its
/// blob id. Runs git on exactly the repository libgit2 opened, behind `confine` when given.
pub fn hash_with_git(
    repo: &Repository,
    workdir: &Path,
    repo_rel: &Path,
    why: &str,
    confine: Option<&Confine>,
) -> Result<Oid> {
    let full = workdir.join(repo_rel);
    let fail = |detail: String| {
        Error::runtime(format!(
            "{}: git could not store the file ({why}): {detail}",
            full.display()
        ))
    };
    let mut cmd = match confine.and_then(|c| c.argv.split_first().map(|a| (a, c))) {
        Some(((program, args), c)) => {
            let mut cmd = Command::new(program);
            cmd.args(args)
                .arg("git")
                .env_clear()
                .envs(c.env.iter().cloned());
            cmd
        }
        None => Command::new("git"),
    };
    let out = cmd
        .env("GIT_DIR", repo.path())
        .env("GIT_WORK_TREE", workdir)
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_OBJECT_DIRECTORY")
        .current_dir(workdir)
        // Nothing but the conversion: no fsmonitor, no hooks, whatever the repository says.
        .args([
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.hooksPath=/dev/null",
        ])
        .args(["hash-object", "-w", "--"])
        .arg(repo_rel)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| fail(format!("run git: {e}")))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let line = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        return Err(fail(format!("{} {}", out.status, line.trim())));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    Oid::from_str(text.trim()).map_err(|_| fail(format!("unexpected output {:?}", text.trim())))
}
