//! What an accepted iteration commits, and the commit itself: the paths the agent changed, the
//! work carried from rejected attempts, and the loop's own files (its memory in `wiggum/`, the
//! iteration's directory) — never anything else of the user's. With `[git] hooks = "run"` the
//! repository's `pre-commit` and `commit-msg` hooks run first, as git runs them.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::context::Loop;
use crate::agent::process::{self, Job};
use crate::config::GitHooks;
use crate::disk::layout::Layout;
use crate::error::{Error, IoContext, Result};
use crate::git::{Pending, preflight};

/// How long a commit waits for a git operation someone else has in progress (a rebase, a
/// merge) before the loop gives up.
const BUSY_WAIT: std::time::Duration = std::time::Duration::from_secs(3600);

/// How a commit attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Committed {
    /// A new commit.
    Sha(String),
    /// Nothing differs from HEAD (or committing is off).
    Nothing,
    /// A hook refused it, or a stop came while it waited for a git operation; the reason, for
    /// the run record.
    Rejected(String),
}

impl Committed {
    /// The new commit's sha, if one was made.
    #[must_use]
    pub fn sha(&self) -> Option<String> {
        match self {
            Committed::Sha(s) => Some(s.clone()),
            _ => None,
        }
    }
}

/// The files the loop itself owns (relative to the artifact dir): its settings and memory in
/// `wiggum/`, its result (`wiggum/final/artifact.md`, with an iteration's commit only: planning
/// keeps no iteration), whatever else of `dirty` (a current snapshot's paths) lies directly in
/// `wiggum/`, the iteration's directory, and — while the repository has no commit yet (the
/// loop created it) — its inputs. `wiggum/` itself is not listed: it holds a directory per
/// iteration, and reading it would cost more with every iteration. Runtime files are left out
/// by the commit itself.
pub fn loop_paths<'a>(
    layout: &Layout,
    unborn: bool,
    iteration_dir: Option<&Path>,
    dirty: impl Iterator<Item = &'a Path>,
) -> Vec<PathBuf> {
    let root = layout.root();
    let wiggum = Path::new("wiggum");
    let mut out: Vec<PathBuf> = std::iter::once("wiggum.toml")
        .chain(super::templates::FILES.iter().map(|(name, _)| *name))
        .map(|name| wiggum.join(name))
        .filter(|rel| root.join(rel).is_file())
        .collect();
    // The loop's result, committed with the iteration that changes it (`ralph::best`).
    let result = wiggum.join("final").join("artifact.md");
    if iteration_dir.is_some() && root.join(&result).is_file() {
        out.push(result);
    }
    let known = out.len();
    for p in dirty {
        if p.parent() == Some(wiggum) && !out[..known].iter().any(|o| o == p) {
            out.push(p.to_path_buf());
        }
    }
    if let Some(dir) = iteration_dir
        && let Ok(rd) = std::fs::read_dir(dir)
    {
        for e in rd.flatten() {
            if e.file_type().is_ok_and(|t| !t.is_dir())
                && let Ok(rel) = e.path().strip_prefix(root)
            {
                out.push(rel.to_path_buf());
            }
        }
    }
    if unborn {
        for input in ["artifact.md", "metadata.json", "task.md"] {
            if root.join(input).is_file() {
                out.push(input.into());
            }
        }
    }
    out
}

/// Wait while `why` names a reason not to commit now (at most BUSY_WAIT). `Some` when a stop
/// came meanwhile: the work is carried to the next commit. An error when the reason outlasts
/// the wait.
async fn wait_out(
    lp: &mut Loop,
    changed: &[PathBuf],
    waits: &str,
    why: impl Fn() -> Option<String>,
) -> Result<Option<Committed>> {
    let Some(first) = why() else {
        return Ok(None);
    };
    let until = chrono::Utc::now() + chrono::Duration::from_std(BUSY_WAIT).unwrap_or_default();
    let reason = format!("{first}; the commit {waits}");
    if lp
        .runner
        .wait_while(until, &reason, || why().is_some())
        .await?
    {
        carry(lp, changed);
        return Ok(Some(Committed::Rejected(format!(
            "stopped while {first}; the work is left in the work tree and carried to the next commit"
        ))));
    }
    match why() {
        Some(still) => Err(Error::runtime(format!(
            "{still} — still so after {} minutes; the iteration's work is left uncommitted in the work tree",
            BUSY_WAIT.as_secs() / 60
        ))),
        None => Ok(None),
    }
}

/// Commit `changed` (and the carried and loop-owned paths) of run `n` (0: planning) with
/// `message`.
pub async fn commit(
    lp: &mut Loop,
    message: &str,
    changed: &[PathBuf],
    n: u32,
) -> Result<Committed> {
    if !lp.settings.git.commit {
        return Ok(Committed::Nothing);
    }
    if let Some(stopped) = wait_for_git(lp, changed).await? {
        return Ok(stopped);
    }
    let paths = candidates(lp, changed, n)?;
    let paths = leave_out(lp, paths);
    let Some(pending) = lp.repo.stage_tree(&paths)? else {
        lp.runner.carried_committed();
        return Ok(Committed::Nothing);
    };
    write_commit(lp, pending, message, n).await
}

/// Never commit in the middle of someone's rebase or merge (a rebase detaches HEAD), nor on
/// a branch the loop did not start on: the commit waits (status `waiting`), as long as
/// BUSY_WAIT; a stop meanwhile carries the work to the next commit.
async fn wait_for_git(lp: &mut Loop, changed: &[PathBuf]) -> Result<Option<Committed>> {
    if lp.repo.busy().is_some() {
        let git_dir = lp.repo.git().path().to_path_buf();
        let busy = move || crate::git::busy_at(&git_dir);
        if let Some(stopped) = wait_out(lp, changed, "waits for it to finish", busy).await? {
            return Ok(Some(stopped));
        }
    }
    let head = lp.runner.head.clone();
    let moved = move || {
        head.as_ref()
            .and_then(|(dir, at)| crate::git::head_moved(dir, at))
    };
    wait_out(lp, changed, "waits for it", moved).await
}

/// What run `n` may commit: what it changed, what earlier runs carried, and the loop's own
/// files that can differ from HEAD, less what an agent planted in the loop's own tree.
fn candidates(lp: &mut Loop, changed: &[PathBuf], n: u32) -> Result<BTreeSet<PathBuf>> {
    let iteration_dir = (n > 0).then(|| lp.runner.layout.iteration_dir(n));
    let mut paths: BTreeSet<PathBuf> = changed.iter().cloned().collect();
    paths.extend(lp.runner.state.carried_paths.iter().cloned());
    let unborn = lp.repo.head().is_none();
    // Of the loop's own files, only those that can differ from HEAD: dirty now, written by the
    // supervisor (which snapshots leave out), or ignored (committed all the same, as
    // `git add -f` would). The others would cost a read and a hash each for nothing.
    let now = lp.tracker.snapshot(&lp.repo)?;
    let lpaths = loop_paths(
        &lp.runner.layout,
        unborn,
        iteration_dir.as_deref(),
        now.paths(),
    );
    paths.extend(
        lpaths
            .into_iter()
            .filter(|p| now.holds(p) || Layout::is_supervisor_path(p) || lp.repo.is_ignored(p)),
    );
    // Never what an agent planted in the loop's own tree: a link there, or an entry where
    // another iteration's directory belongs (that iteration makes its directory again).
    let root = lp.runner.layout.root().to_path_buf();
    paths.retain(|p| !planted(&root, p, n));
    Ok(paths)
}

/// Never a file past `[safety] max_file_mb`, whoever carried it here; build output and caches
/// only when HEAD holds them already (the others are named in `left_out` and logged).
fn leave_out(lp: &mut Loop, paths: BTreeSet<PathBuf>) -> Vec<PathBuf> {
    let oversized: Vec<PathBuf> = lp
        .repo
        .oversized(paths.iter().map(PathBuf::as_path))
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    let (paths, left_out): (Vec<PathBuf>, Vec<PathBuf>) = paths
        .into_iter()
        .filter(|p| !oversized.contains(p))
        .partition(|p| !crate::git::generated::is_generated(p) || lp.repo.in_head(p));
    lp.left_out = left_out.iter().map(|p| p.display().to_string()).collect();
    if !left_out.is_empty() {
        tracing::info!(
            "left out of the commit (build output or caches): {}",
            lp.left_out.join(", ")
        );
    }
    paths
}

/// Run the hooks (when the settings say so) and write the staged commit of run `n`.
async fn write_commit(
    lp: &mut Loop,
    mut pending: Pending,
    message: &str,
    n: u32,
) -> Result<Committed> {
    let mut message = message.to_string();
    if lp.settings.git.hooks == GitHooks::Run {
        match run_hooks(lp, &pending, &message, n).await? {
            Ok(m) => message = m,
            Err(why) => return Ok(Committed::Rejected(why)),
        }
    }
    let git = &lp.settings.git;
    let sha = lp
        .repo
        .finish(&mut pending, &message, &git.name, &git.email)?;
    lp.tracker.committed(&lp.repo, &pending);
    lp.runner.last_accepted = Some(sha.clone());
    // libgit2's caches gain entries for every new directory it is asked about (one per
    // iteration): a fresh handle now and then keeps a long night's loop from growing.
    if n.is_multiple_of(100) {
        lp.repo.reopen()?;
    }
    lp.runner.carried_committed();
    Ok(Committed::Sha(sha))
}

/// Whether `rel` (relative to the artifact dir) is something an agent planted in the loop's own
/// tree: a link on the way under `wiggum/`, or anything in the directory of an iteration that
/// has not run yet (after `n`, the one committing; 0: planning).
fn planted(root: &Path, rel: &Path, n: u32) -> bool {
    if rel
        .components()
        .next()
        .is_none_or(|c| c.as_os_str() != "wiggum")
    {
        return false;
    }
    let linked = rel
        .ancestors()
        .take_while(|a| !a.as_os_str().is_empty())
        .any(|a| std::fs::symlink_metadata(root.join(a)).is_ok_and(|m| m.file_type().is_symlink()));
    let ahead = rel.ancestors().any(|a| {
        a.file_name()
            .and_then(|f| f.to_str())
            .and_then(crate::disk::layout::iteration_number)
            .is_some_and(|i| i > n)
    });
    linked || ahead
}

/// Remember paths an attempt changed but no commit took, for the next commit.
pub fn carry(lp: &mut Loop, changed: &[PathBuf]) {
    let kept = changed.iter().filter(|p| {
        // The state file is JSON: a name that is no UTF-8 cannot be written there (it stays in
        // the work tree, and is committed when an iteration that changes it is accepted).
        if p.to_str().is_none() {
            tracing::warn!(
                "{}: a file name that is not UTF-8 is not carried to the next commit",
                p.display()
            );
            return false;
        }
        !Layout::is_runtime_path(p)
    });
    lp.runner.carry(kept.cloned());
}

/// `pre-commit` with an index holding exactly the commit's tree, then `commit-msg` on the
/// message. `Ok(Ok(message))`: go on with the (possibly edited) message; `Ok(Err(why))`: a hook
/// refused.
async fn run_hooks(
    lp: &mut Loop,
    pending: &Pending,
    message: &str,
    n: u32,
) -> Result<std::result::Result<String, String>> {
    let scratch = tempfile::Builder::new()
        .prefix("wiggum-hooks-")
        .tempdir()
        .map_err(|e| Error::runtime(format!("cannot make a temp dir for git hooks: {e}")))?;
    let index = scratch.path().join("index");
    lp.repo.write_index_file(pending, &index)?;
    let msg_file = scratch.path().join("COMMIT_EDITMSG");
    std::fs::write(&msg_file, format!("{message}\n")).at(&msg_file, "write")?;
    let repo = &lp.repo;
    let hooks: Vec<(&str, PathBuf)> = ["pre-commit", "commit-msg"]
        .into_iter()
        .filter_map(|h| Some((h, preflight::hook_path(repo.git(), repo.workdir(), h)?)))
        .collect();
    for (name, path) in hooks {
        let mut command = quote(&path);
        if name == "commit-msg" {
            command = format!("{command} {}", quote(&msg_file));
        }
        let job = hook_job(lp.repo.workdir(), command, &index, n, lp);
        crate::sys::fsutil::append_line(job.log(), &format!("$ {name}"))?;
        let out = process::run(&job, &mut lp.runner.stops, |_| true).await?;
        if !out.ending.success() {
            let last = crate::sys::fsutil::read_tail(job.log(), 4096)?
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty() && !l.starts_with("$ "))
                .unwrap_or_default()
                .trim()
                .to_string();
            return Ok(Err(format!("the {name} hook {}: {last}", out.ending)));
        }
    }
    let edited = crate::sys::fsutil::read_capped(&msg_file, 64 * 1024)?;
    let edited: Vec<&str> = edited.lines().filter(|l| !l.starts_with('#')).collect();
    let edited = edited.join("\n").trim().to_string();
    if edited.is_empty() {
        return Ok(Err("the commit-msg hook left an empty message".into()));
    }
    Ok(Ok(edited))
}

fn hook_job(workdir: &Path, command: String, index: &Path, n: u32, lp: &Loop) -> Job {
    Job::trusted(
        command,
        workdir.to_path_buf(),
        vec![
            ("GIT_INDEX_FILE".into(), index.display().to_string()),
            ("GIT_EDITOR".into(), ":".into()),
            ("WIGGUM_PHASE".into(), "hook".into()),
        ],
        lp.runner.layout.hooks_log(n),
        Duration::from_secs(lp.settings.validation.timeout_secs),
        Duration::from_secs(lp.settings.safety.kill_grace_secs),
        "hook",
    )
}

/// Single-quote a path for `sh -c`.
fn quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_survives_quotes_and_spaces() {
        assert_eq!(quote(Path::new("/a b/it's")), r"'/a b/it'\''s'");
    }

    #[test]
    fn loop_paths_are_the_loops_own_files() {
        let d = tempfile::tempdir().unwrap();
        let layout = Layout::new(d.path());
        std::fs::create_dir_all(layout.iteration_dir(2)).unwrap();
        std::fs::write(layout.fix_plan(), "- [ ] a").unwrap();
        std::fs::write(layout.iteration_dir(2).join("artifact.md"), "x").unwrap();
        std::fs::write(layout.original_artifact(), "# A").unwrap();
        std::fs::write(d.path().join(".env.local"), "SECRET=1").unwrap();
        let it = layout.iteration_dir(2);
        // A file of the agent's in wiggum/: listed when a snapshot says it is dirty.
        std::fs::write(layout.wiggum().join("notes.md"), "n").unwrap();
        let listed = |dirty: &[&str]| {
            let mut got = loop_paths(&layout, false, Some(&it), dirty.iter().map(Path::new));
            got.sort();
            got.iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            listed(&[]),
            [
                "wiggum/fix_plan.md",
                "wiggum/iterations/001-100/iteration-002/artifact.md"
            ]
        );
        assert_eq!(
            listed(&["wiggum/notes.md", "wiggum/fix_plan.md"]),
            [
                "wiggum/fix_plan.md",
                "wiggum/iterations/001-100/iteration-002/artifact.md",
                "wiggum/notes.md"
            ]
        );
        let unborn = loop_paths(&layout, true, None, std::iter::empty());
        assert!(unborn.contains(&PathBuf::from("artifact.md")));
        assert!(!unborn.contains(&PathBuf::from(".env.local")));
    }
}
