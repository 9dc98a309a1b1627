//! `wiggum run-remote`: a loop on a machine of its own (a Kubernetes Job's pod), whose whole
//! state is a git branch. It clones the branch (or lays out the ConfigMap's files), claims the
//! loop, runs `wiggum start --foreground` as a child, and pushes: the loop's commits to the
//! branch whenever HEAD moves, and its records (`state.json`, `runs.jsonl`) with a heartbeat to
//! `refs/studio-agents/<topic>` every few seconds and at the end. A pod that is evicted loses at most
//! the running iteration; the next one resumes from the branch like `start` after a crash.
//!
//! The branch is the lock: the claim is a push of `refs/studio-agents/<topic>` with
//! `--force-with-lease` (the server compares and swaps), so of two runs started at once exactly
//! one wins; a record whose heartbeat is fresh refuses a second run (exit 3). Pushing and
//! fetching use the `git` program, so credentials come from git's own mechanisms (a mounted
//! SSH key, a credential helper), never from our settings.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use chrono::Utc;

use crate::disk::state::LoopState;
use crate::error::{Error, Result};
use crate::sys::fsutil;

/// What `run-remote` was asked.
#[derive(Debug, Clone)]
pub struct RemoteRun {
    /// The loop's topic.
    pub topic: String,
    /// Where the loop's files are laid out (a fresh directory).
    pub work: PathBuf,
    /// The repository to clone and push to.
    pub remote: Option<String>,
    /// Its branch.
    pub branch: String,
    /// A directory holding `artifact.md` and the memory files (a ConfigMap's mount), used when
    /// the branch does not have them yet (or there is no remote).
    pub files: Option<PathBuf>,
    /// The artifact dir inside the repository.
    pub path: PathBuf,
    /// A record older than this is a dead run's: the next run may take over.
    pub stale_after: Duration,
    /// How often the heartbeat is pushed.
    pub heartbeat: Duration,
}

/// The ref holding a topic's records.
#[must_use]
pub fn records_ref(topic: &str) -> String {
    format!("refs/studio-agents/{topic}")
}

fn git(dir: &Path, args: &[&str]) -> Result<String> {
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
        return Err(Error::runtime(format!(
            "git {} (in {}): {}",
            args.join(" "),
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Whether a state says its loop is alive, by its heartbeat.
#[must_use]
pub fn fresh(st: &LoopState, now: chrono::DateTime<Utc>, stale_after: Duration) -> bool {
    let age = (now - st.updated_at).to_std().unwrap_or_default();
    st.status.is_live() && age < stale_after
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
    )?;
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
    )?;
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

/// Run the loop as the pod runs it. Returns the loop's exit code.
pub fn run(r: &RemoteRun) -> Result<i32> {
    if r.work.exists() && std::fs::read_dir(&r.work).is_ok_and(|mut d| d.next().is_some()) {
        return Err(Error::input(format!(
            "--work {}: not empty (run-remote lays the loop out in a fresh directory)",
            r.work.display()
        )));
    }
    fsutil::create_dir_all(&r.work)?;
    let art = r.work.join(&r.path);
    let mut lease = None;
    if let Some(url) = &r.remote {
        git(&r.work, &["clone", "-q", url, "."])?;
        if git(&r.work, &["ls-remote", "--heads", "origin", &r.branch])?.is_empty() {
            git(&r.work, &["checkout", "-q", "-b", &r.branch])?;
        } else {
            git(&r.work, &["checkout", "-q", &r.branch])?;
        }
        lease = Some(claim(r)?);
    } else {
        git(&r.work, &["init", "-q"])?;
    }
    lay_out(r, &art)?;
    // The branch is the lock: a topic this machine ran before (an earlier pod's directory on
    // a shared home) is this run's now.
    let home = crate::config::home_dir()?;
    if crate::disk::registry::lookup(&home, &r.topic)?.is_some_and(|p| p != art) {
        crate::disk::registry::unregister(&home, &r.topic)?;
    }
    let code = crate::sys::runtime::runtime()?.block_on(supervise(r, &art, lease))?;
    Ok(code)
}

/// Run the loop as a child, pushing as it goes; SIGTERM/SIGINT stop it gracefully first.
async fn supervise(r: &RemoteRun, art: &Path, mut lease: Option<String>) -> Result<i32> {
    use tokio::signal::unix::{SignalKind, signal};
    let exe = std::env::current_exe()
        .map_err(|e| Error::runtime(format!("cannot find own executable: {e}")))?;
    let mut cmd = process_wrap::tokio::CommandWrap::with_new(&exe, |c| {
        c.args([
            "wiggum",
            "start",
            &r.topic,
            "--foreground",
            "--artifact-path",
        ])
        .arg(art)
        .stdin(Stdio::null());
    });
    // The loop dies with us: a pod that is killed leaves nothing behind.
    cmd.wrap(crate::sys::kernel::KillWithParent);
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::runtime(format!("cannot start the loop: {e}")))?;
    let pid = child.id().unwrap_or(0);
    let (mut term, mut int) = (
        signal(SignalKind::terminate()).map_err(|e| Error::runtime(format!("signals: {e}")))?,
        signal(SignalKind::interrupt()).map_err(|e| Error::runtime(format!("signals: {e}")))?,
    );
    let mut pushed_head = head(&r.work);
    let mut beat = Instant::now();
    let mut pushed_now = false;
    let status = loop {
        tokio::select! {
            s = child.wait() => {
                break s.map_err(|e| Error::runtime(format!("waiting for the loop: {e}")))?;
            }
            _ = term.recv() => forward(pid),
            _ = int.recv() => forward(pid),
            () = tokio::time::sleep(Duration::from_millis(200)) => {}
        }
        if r.remote.is_none() {
            continue;
        }
        let now = head(&r.work);
        // The records follow a new commit at once and again at the next tick (the run record is
        // appended just after the commit): the branch and its log never drift by more than that.
        let records_due = std::mem::take(&mut pushed_now);
        let mut due = records_due;
        if now != pushed_head {
            match push_branch(r) {
                Ok(()) => {
                    pushed_head = now;
                    pushed_now = true;
                    due = true;
                }
                Err(e) => eprintln!("warning: push: {e}"),
            }
        }
        if due || beat.elapsed() >= r.heartbeat {
            beat = Instant::now();
            match push_records(r, art, lease.as_deref()) {
                Ok(sha) => lease = Some(sha),
                Err(e) => eprintln!("warning: heartbeat: {e}"),
            }
        }
    };
    if r.remote.is_some() {
        push_branch(r)?;
        push_records(r, art, lease.as_deref())?;
    }
    Ok(status.code().unwrap_or(1))
}

/// Pass a stop on to the loop (it stops its agent's tree and records the interruption).
fn forward(pid: u32) {
    let _gone = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid.cast_signed()),
        nix::sys::signal::Signal::SIGTERM,
    );
}

fn head(dir: &Path) -> String {
    git(dir, &["rev-parse", "-q", "--verify", "HEAD"]).unwrap_or_default()
}

/// Take the loop: refuse when its record has a fresh heartbeat; otherwise swap the record for
/// ours, atomically against a run that claims it at the same moment. Returns our record's sha.
fn claim(r: &RemoteRun) -> Result<String> {
    let rref = records_ref(&r.topic);
    let theirs = git(&r.work, &["ls-remote", "origin", &rref])?;
    let theirs = theirs.split_whitespace().next().unwrap_or("").to_string();
    if !theirs.is_empty() {
        git(
            &r.work,
            &["fetch", "-q", "origin", &format!("+{rref}:{rref}")],
        )?;
        // A claim whose loop has not written its state yet is as alive as its claim is fresh.
        if let Ok(claim) = git(&r.work, &["show", &format!("{rref}:claim.json")])
            && let Ok(c) = serde_json::from_str::<serde_json::Value>(&claim)
            && let Some(at) = c["updated_at"]
                .as_str()
                .and_then(|t| t.parse::<chrono::DateTime<Utc>>().ok())
            && (Utc::now() - at).to_std().unwrap_or_default() < r.stale_after
        {
            return Err(Error::AlreadyRunning(format!(
                "loop `{}` is running on branch {} (claimed {} s ago); one Job per topic",
                r.topic,
                r.branch,
                (Utc::now() - at).num_seconds()
            )));
        }
        if let Ok(text) = git(&r.work, &["show", &format!("{rref}:state.json")])
            && let Ok(st) = serde_json::from_str::<LoopState>(&text)
        {
            if fresh(&st, Utc::now(), r.stale_after) {
                let age = (Utc::now() - st.updated_at).num_seconds();
                return Err(Error::AlreadyRunning(format!(
                    "loop `{}` is running on branch {} (its heartbeat is {age} s old); one Job per topic",
                    r.topic, r.branch
                )));
            }
            // Resume from what the dead run recorded: its counts, spend and breakers.
            let wig = r.work.join(&r.path).join("wiggum");
            fsutil::create_dir_all(&wig)?;
            fsutil::atomic_write(&wig.join("state.json"), text.as_bytes())?;
            if let Ok(runs) = git(&r.work, &["show", &format!("{rref}:runs.jsonl")]) {
                fsutil::atomic_write(&wig.join("runs.jsonl"), format!("{runs}\n").as_bytes())?;
            }
        }
    }
    let claim = serde_json::json!({
        "topic": r.topic, "status": "starting", "updated_at": Utc::now(),
        "host": std::env::var("HOSTNAME").unwrap_or_default(), "pid": std::process::id(),
    });
    let sha = record_commit(&r.work, &[("claim.json", claim.to_string())])?;
    let lease = format!("--force-with-lease={rref}:{theirs}");
    git(
        &r.work,
        &["push", "-q", &lease, "origin", &format!("{sha}:{rref}")],
    )
    .map_err(|_| {
        Error::AlreadyRunning(format!(
            "loop `{}` was claimed by another run at the same moment; one Job per topic",
            r.topic
        ))
    })?;
    Ok(sha)
}

/// A commit (no parent) holding `files`, written into the repository's objects.
fn record_commit(dir: &Path, files: &[(&str, String)]) -> Result<String> {
    let mut tree = String::new();
    for (name, text) in files {
        let tmp = tempfile::NamedTempFile::new()
            .map_err(|e| Error::runtime(format!("temp file: {e}")))?;
        std::fs::write(tmp.path(), text).map_err(|e| Error::runtime(format!("temp file: {e}")))?;
        let path = tmp.path().display().to_string();
        let blob = git(dir, &["hash-object", "-w", &path])?;
        tree.push_str(&format!("100644 blob {blob}\t{name}\n"));
    }
    let mut mktree = Command::new("git")
        .arg("mktree")
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| Error::runtime(format!("cannot run git: {e}")))?;
    if let Some(mut stdin) = mktree.stdin.take() {
        std::io::Write::write_all(&mut stdin, tree.as_bytes())
            .map_err(|e| Error::runtime(format!("git mktree: {e}")))?;
    }
    let out = mktree
        .wait_with_output()
        .map_err(|e| Error::runtime(format!("git mktree: {e}")))?;
    let tree = String::from_utf8_lossy(&out.stdout).trim().to_string();
    git(dir, &["commit-tree", &tree, "-m", "wiggum records"])
}

fn push_branch(r: &RemoteRun) -> Result<()> {
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
fn push_records(r: &RemoteRun, art: &Path, lease: Option<&str>) -> Result<String> {
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

/// Put the ConfigMap's files where a loop expects them, keeping what the branch has.
fn lay_out(r: &RemoteRun, art: &Path) -> Result<()> {
    let Some(files) = &r.files else {
        return Ok(());
    };
    let wig = art.join("wiggum");
    fsutil::create_dir_all(&wig)?;
    let place = [
        ("artifact.md", art.join("artifact.md")),
        ("task.md", art.join("task.md")),
        ("metadata.json", art.join("metadata.json")),
        ("wiggum.toml", wig.join("wiggum.toml")),
        ("PROMPT.md", wig.join("PROMPT.md")),
        ("PLANNING_PROMPT.md", wig.join("PLANNING_PROMPT.md")),
        ("AGENT.md", wig.join("AGENT.md")),
        ("fix_plan.md", wig.join("fix_plan.md")),
    ];
    for (name, to) in place {
        let from = files.join(name);
        if from.is_file() && !to.exists() {
            fsutil::atomic_write(
                &to,
                &std::fs::read(&from).map_err(|e| Error::Io {
                    path: from.clone(),
                    action: "read",
                    source: e,
                })?,
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disk::state::Status;

    #[test]
    fn a_record_is_fresh_while_its_loop_is_live_and_its_heartbeat_recent() {
        let now = Utc::now();
        let st = |status, age: i64| LoopState {
            status,
            updated_at: now - chrono::Duration::seconds(age),
            ..LoopState::default()
        };
        let window = Duration::from_secs(90);
        let cases = [
            (Status::Running, 10, true),
            (Status::Running, 200, false),
            (Status::Planning, 0, true),
            (Status::Completed, 0, false),
            (Status::Stopped, 5, false),
        ];
        for (status, age, want) in cases {
            assert_eq!(
                fresh(&st(status, age), now, window),
                want,
                "{status:?} {age}s"
            );
        }
    }
}
