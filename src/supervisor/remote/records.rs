//! The loop's records on a remote: `refs/studio-agents/<topic>`, a commit without parent holding
//! `state.json` and `runs.jsonl` (or, just after a claim, `claim.json`), pushed with a lease so
//! a run that lost its claim cannot overwrite its successor's; read back for `list --remote`,
//! `status --remote`, `report --remote` and `summary --remote`. Pushing and fetching use the
//! `git` program (git's own credentials); the objects are written with git2.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use chrono::Utc;

use super::RemoteRun;
use crate::disk::state::LoopState;
use crate::error::{Error, GitContext, Result};
use crate::sys::fsutil;

/// The ref holding a topic's records.
#[must_use]
pub fn records_ref(topic: &str) -> String {
    format!("refs/studio-agents/{topic}")
}

pub(super) fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=wiggum-agent",
            "-c",
            "user.email=wiggum@studio-agents.local",
        ])
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::runtime(format!("cannot run git: {e}")))?;
    if !out.status.success() {
        // One line: git's first `fatal:`/`error:` line says what went wrong.
        let err = String::from_utf8_lossy(&out.stderr);
        let why = err
            .lines()
            .find(|l| l.starts_with("fatal:") || l.starts_with("error:"))
            .or_else(|| err.lines().find(|l| !l.trim().is_empty()))
            .unwrap_or("failed")
            .trim();
        return Err(Error::runtime(format!(
            "git {} (in {}): {why}",
            args.first().copied().unwrap_or_default(),
            dir.display()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Whether a state says its loop is alive, by its heartbeat.
#[must_use]
pub fn fresh(st: &LoopState, now: chrono::DateTime<Utc>, stale_after: Duration) -> bool {
    let age = (now - st.updated_at).to_std().unwrap_or_default();
    st.status().is_live() && age < stale_after
}

/// What a remote holds of one loop: its last pushed state and run log.
#[derive(Debug, Clone)]
pub struct RemoteRecord {
    /// The topic.
    pub topic: String,
    /// `state.json`, when it was pushed and parses.
    pub state: Option<LoopState>,
    /// `runs.jsonl` (its last 8 MiB).
    pub runs: String,
}

/// The records a remote holds for every topic, read through a throwaway bare repository.
pub fn remote_records(url: &str) -> Result<Vec<RemoteRecord>> {
    let tmp = tempfile::tempdir().map_err(|e| Error::runtime(format!("temp dir: {e}")))?;
    let dir = tmp.path();
    git(dir, &["init", "-q", "--bare"])?;
    git(
        dir,
        &[
            "fetch",
            "-q",
            url,
            "+refs/studio-agents/*:refs/studio-agents/*",
        ],
    )
    .map_err(|e| Error::runtime(format!("--remote {url}: {e}")))?;
    let refs = git(
        dir,
        &["for-each-ref", "--format=%(refname)", "refs/studio-agents/"],
    )?;
    let mut out = Vec::new();
    for r in refs.lines().filter(|l| !l.is_empty()) {
        let topic = r.trim_start_matches("refs/studio-agents/").to_string();
        let state = git(dir, &["show", &format!("{r}:state.json")])
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
        let runs = git(dir, &["show", &format!("{r}:runs.jsonl")]).unwrap_or_default();
        out.push(RemoteRecord { topic, state, runs });
    }
    Ok(out)
}

/// A loop as its branch and records hold it, checked out for reading (`summary --remote`): the
/// branch's head (shallow) with the pushed `state.json` and `runs.jsonl` put back in its
/// `wiggum/`. Returns the checkout (removed when dropped) and the artifact dir in it.
pub fn checkout_for_reading(
    url: &str,
    topic: &str,
    branch: &str,
    path: &Path,
) -> Result<(tempfile::TempDir, PathBuf)> {
    let tmp = tempfile::tempdir().map_err(|e| Error::runtime(format!("temp dir: {e}")))?;
    let dir = tmp.path().join("repo");
    let d = dir.display().to_string();
    git(
        tmp.path(),
        &[
            "clone",
            "-q",
            "--depth",
            "1",
            "--single-branch",
            "--branch",
            branch,
            url,
            &d,
        ],
    )
    .map_err(|e| Error::runtime(format!("--remote {url} --branch {branch}: {e}")))?;
    let rref = records_ref(topic);
    git(
        &dir,
        &[
            "fetch",
            "-q",
            "--depth",
            "1",
            "origin",
            &format!("+{rref}:{rref}"),
        ],
    )?;
    let art = dir.join(path);
    let wig = art.join("wiggum");
    fsutil::create_dir_all(&wig)?;
    for f in ["state.json", "runs.jsonl"] {
        if let Ok(text) = git(&dir, &["show", &format!("{rref}:{f}")]) {
            fsutil::atomic_write(&wig.join(f), format!("{text}\n").as_bytes())?;
        }
    }
    Ok((tmp, art))
}

/// A commit (no parent) holding `files`, written into the objects of the repository at `dir`.
pub(super) fn record_commit(dir: &Path, files: &[(&str, String)]) -> Result<String> {
    let repo = git2::Repository::open(dir).git_at(dir, "open the clone")?;
    let mut tree = repo
        .treebuilder(None)
        .git_at(dir, "build the records' tree")?;
    for (name, text) in files {
        let blob = repo.blob(text.as_bytes()).git_at(dir, "store a record")?;
        tree.insert(name, blob, i32::from(git2::FileMode::Blob))
            .git_at(dir, "build the records' tree")?;
    }
    let tree = tree.write().git_at(dir, "write the records' tree")?;
    let tree = repo.find_tree(tree).git_at(dir, "read the records' tree")?;
    let sig = git2::Signature::now("wiggum-agent", "wiggum@studio-agents.local")
        .git_at(dir, "make a signature")?;
    let oid = repo
        .commit(None, &sig, &sig, "wiggum records", &tree, &[])
        .git_at(dir, "commit the records")?;
    Ok(oid.to_string())
}

/// Push HEAD to the loop's branch.
pub(super) fn push_branch(r: &RemoteRun) -> Result<()> {
    git(
        &r.work,
        &[
            "push",
            "-q",
            "origin",
            &format!("HEAD:refs/heads/{}", r.branch),
        ],
    )
    .map(|_| ())
}

/// Push the loop's records (with our lease: a run that took over makes this fail).
pub(super) fn push_records(r: &RemoteRun, art: &Path, lease: Option<&str>) -> Result<String> {
    let wig = art.join("wiggum");
    let mut files = Vec::new();
    if let Some(st) = fsutil::read_opt(&wig.join("state.json"))? {
        files.push(("state.json", st));
    }
    let runs = fsutil::read_tail(&wig.join("runs.jsonl"), 8 << 20)?;
    files.push(("runs.jsonl", runs));
    let sha = record_commit(&r.work, &files)?;
    let rref = records_ref(&r.topic);
    let lease = format!("--force-with-lease={rref}:{}", lease.unwrap_or(""));
    git(
        &r.work,
        &["push", "-q", &lease, "origin", &format!("{sha}:{rref}")],
    )?;
    Ok(sha)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disk::state::{Ending, Phase};

    #[test]
    fn a_record_is_fresh_while_its_loop_is_live_and_its_heartbeat_recent() {
        let now = Utc::now();
        let st = |phase, age: i64| {
            let mut s = LoopState::in_phase(phase);
            s.updated_at = now - chrono::Duration::seconds(age);
            s
        };
        let ended = |ending| Phase::Ended {
            ending,
            reason: None,
            detail: None,
        };
        let window = Duration::from_secs(90);
        let cases = [
            (Phase::Running { agent: None }, 10, true),
            (Phase::Running { agent: None }, 200, false),
            (Phase::Planning { agent: None }, 0, true),
            (ended(Ending::Completed), 0, false),
            (ended(Ending::Stopped), 5, false),
        ];
        for (phase, age, want) in cases {
            let name = phase.status().as_str();
            assert_eq!(fresh(&st(phase, age), now, window), want, "{name} {age}s");
        }
    }
}
