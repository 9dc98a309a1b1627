//! Pushing a remote run's records: the branch, and `state.json`/`runs.jsonl` as a parentless
//! commit under `refs/studio-agents/<topic>` (`git::remote`). What reads them back is
//! `view/remote.rs`.

use std::path::Path;

use super::RemoteRun;
use crate::error::{GitContext, Result};
use crate::git::remote::{git, records_ref};
use crate::sys::fsutil;

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
