//! Reading what remote runs pushed (`list --remote`, `summary --remote`, the dashboard's
//! `--remote`): every topic's last state and run log, and a loop's branch checked out with its
//! records, through throwaway repositories. Reads only.

use std::path::{Path, PathBuf};

use crate::disk::state::LoopState;
use crate::error::{Error, Result};
use crate::git::remote::{git, records_ref};
use crate::sys::fsutil;

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
