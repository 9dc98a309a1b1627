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
use std::process::Stdio;
use std::time::{Duration, Instant};

use chrono::Utc;

use crate::disk::state::LoopState;
use crate::error::{Error, IoContext, Result};
use crate::sys::fsutil;

mod records;

use crate::git::remote::{git, records_ref};
use records::{push_branch, push_records, record_commit};

/// `claim.json`: a run's claim of a topic, pushed before its loop writes a state (docs/json.md).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Claim {
    /// The topic.
    topic: String,
    /// `starting`.
    status: String,
    /// When it was claimed: a claim older than the stale window is dead.
    updated_at: chrono::DateTime<Utc>,
    /// The pod (`$HOSTNAME`).
    host: String,
    /// The run's pid there.
    pid: u32,
}

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
        git(&r.work, &["clone", "-q", url, "."])
            .map_err(|e| Error::runtime(format!("--remote {url}: {e}")))?;
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
    allow_shipped(&home, &art)?;
    let code = crate::sys::runtime::runtime()?.block_on(supervise(r, &art, lease))?;
    Ok(code)
}

/// Run the loop as a child, pushing as it goes; SIGTERM/SIGINT stop it gracefully first.
async fn supervise(r: &RemoteRun, art: &Path, mut lease: Option<String>) -> Result<i32> {
    use tokio::signal::unix::{SignalKind, signal};
    let exe = crate::supervisor::spawn_self::own_exe()?;
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
            && let Ok(Claim { updated_at: at, .. }) = serde_json::from_str::<Claim>(&claim)
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
            if st.fresh(Utc::now(), r.stale_after) {
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
    let claim = serde_json::to_string(&Claim {
        topic: r.topic.clone(),
        status: "starting".into(),
        updated_at: Utc::now(),
        host: std::env::var("HOSTNAME").unwrap_or_default(),
        pid: std::process::id(),
    })
    .unwrap_or_default();
    let sha = record_commit(&r.work, &[("claim.json", claim)])?;
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

/// The settings file the run was shipped with (the ConfigMap `manifest` built from the file the
/// person allowed, or the branch they named) is theirs: allowed for this fresh directory, so a
/// first start takes it. What an agent writes to it later is refused as on any machine.
fn allow_shipped(home: &Path, art: &Path) -> Result<()> {
    let Ok(root) = art.canonicalize() else {
        return Ok(());
    };
    let layout = crate::disk::layout::Layout::for_loop(home, root);
    if layout.config().exists() && !layout.runs_copy().exists() {
        crate::ralph::start::allow(home, &layout)?;
    }
    Ok(())
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
            std::fs::copy(&from, &to).at(&from, "copy the loop's file")?;
        }
    }
    Ok(())
}
