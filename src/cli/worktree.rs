//! `start --worktree`'s preparation, `merge` and `clean`: a loop in a linked worktree of its
//! own (`git/worktree.rs`), merged back only when it merges cleanly, removed once merged. The
//! records are `disk/worktrees.rs`'s.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::config::{self, Isolation, Sources};
use crate::disk::worktrees::{self, MergeRecord, Worktree};
use crate::disk::{lock, registry};
use crate::error::{Error, Result};
use crate::git::worktree::{self as wt, How, Merged};
use crate::ralph::start::StartOpts;

/// Flags of `merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The loop whose branch to merge (or --all).
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub topic: Option<String>,
    /// Every ended loop that merges cleanly; the others are listed.
    #[arg(long)]
    pub all: bool,
    /// One commit with the branch's changes, instead of its history.
    #[arg(long, group = "how")]
    pub squash: bool,
    /// Only a fast-forward; refused when the target has moved on.
    #[arg(long, group = "how")]
    pub ff_only: bool,
    /// Always a merge commit, even where a fast-forward would do.
    #[arg(long, group = "how")]
    pub no_ff: bool,
    /// The branch to merge into (default: the one the loop started from).
    #[arg(long, value_name = "BRANCH")]
    pub into: Option<String>,
}

/// Flags of `clean`.
#[derive(Debug, Args)]
pub struct CleanArgs {
    /// The loop whose worktree to remove.
    pub topic: String,
    /// Remove it even when unmerged or holding uncommitted changes.
    #[arg(long)]
    pub force: bool,
    /// Delete the loop's branch too (only once merged, unless --force).
    #[arg(long)]
    pub delete_branch: bool,
}

/// Before `start`: when the loop is to run in a worktree (`--worktree`, `[defaults] isolation
/// = "worktree"`, or a worktree made before), make or find it and point the start at the
/// artifact directory inside it. Returns the worktree when this start made it: a start refused
/// after it takes it away again ([`undo_start`]).
pub fn before_start(opts: &mut StartOpts, asked: bool) -> Result<Option<wt::Made>> {
    let home = config::home_dir()?;
    registry::check_topic(&opts.topic)?;
    let known = worktrees::read(&home, &opts.topic)?;
    // The user's own settings only: a loop's settings file lies inside what the worktree maps.
    let settings = config::load(&Sources {
        home: Some(home.join("wiggum.toml")),
        loop_file: None,
        explicit: opts.config.clone(),
    })?;
    let wanted = asked
        || known.is_some()
        || (settings.defaults.isolation == Isolation::Worktree && opts.artifact_path.is_some());
    if !wanted {
        return Ok(None);
    }
    let original = match (&opts.artifact_path, &known) {
        (Some(p), _) => std::path::absolute(p)
            .map_err(|e| Error::input(format!("--artifact-path {}: {e}", p.display())))?,
        (None, Some(k)) => k.original.clone(),
        (None, None) => registry::lookup(&home, &opts.topic)?.ok_or_else(|| {
            Error::input(format!(
                "--artifact-path is required: no loop `{}` is registered yet",
                opts.topic
            ))
        })?,
    };
    if let Some(k) = &known
        && original != k.original
        && !original.starts_with(&k.worktree)
    {
        return Err(Error::input(format!(
            "loop `{}` runs in a worktree for {}; --artifact-path {} is another directory (`wiggum clean {}` first)",
            opts.topic,
            k.original.display(),
            original.display(),
            opts.topic
        )));
    }
    // Restarted with its worktree's own path: the original is the record's.
    let original = match &known {
        Some(k) if original.starts_with(&k.worktree) => k.original.clone(),
        _ => original,
    };
    if !original.is_dir() {
        return Err(Error::input(format!(
            "--artifact-path {}: not a directory",
            original.display()
        )));
    }
    let made = wt::make(
        &opts.topic,
        &original,
        settings.defaults.worktree_dir.as_deref(),
    )?;
    let had_record = known.is_some();
    let merged = known.and_then(|k| k.merged);
    worktrees::write(
        &home,
        &opts.topic,
        &Worktree {
            repo: made.repo.clone(),
            worktree: made.worktree.clone(),
            branch: made.branch.clone(),
            from: made.from.clone(),
            original: original.canonicalize().unwrap_or(original),
            merged,
        },
    )?;
    eprintln!(
        "note: loop `{}` runs in worktree {} on branch {} (from {}); `studio-agents wiggum merge {}` brings it back",
        opts.topic,
        made.worktree.display(),
        made.branch,
        made.from,
        opts.topic
    );
    opts.artifact_path = Some(made.artifact.clone());
    Ok((made.made_now && !had_record).then_some(made))
}

/// A start refused after [`before_start`] made its worktree: the worktree, its branch (when
/// made now) and its record go, so the refusal leaves things as they were.
pub fn undo_start(topic: &str, made: &wt::Made) -> Result<()> {
    wt::undo(topic, made)?;
    let home = config::home_dir()?;
    worktrees::remove(&home, topic)?;
    let _kept = std::fs::remove_dir(home.join("worktrees")); // only when empty
    Ok(())
}

fn record(home: &Path, topic: &str) -> Result<Worktree> {
    worktrees::read(home, topic)?.ok_or_else(|| {
        Error::input(format!(
            "loop `{topic}` does not run in a worktree (start it with --worktree)"
        ))
    })
}

/// Refuse while the loop runs: its branch is still moving.
fn not_running(topic: &str, w: &Worktree) -> Result<()> {
    let home = config::home_dir()?;
    let Some(path) = registry::lookup(&home, topic)? else {
        return Ok(());
    };
    let layout = crate::disk::layout::Layout::for_loop(&home, path);
    if let Some(h) = lock::find(&home, &layout)? {
        return Err(Error::AlreadyRunning(format!(
            "loop `{topic}` is running (pid {}) on branch {}; stop it first: studio-agents wiggum stop {topic}",
            h.pid, w.branch
        )));
    }
    Ok(())
}

/// `merge`.
pub fn merge(a: &MergeArgs) -> Result<i32> {
    let how = if a.squash {
        How::Squash
    } else if a.ff_only {
        How::FfOnly
    } else if a.no_ff {
        How::NoFf
    } else {
        How::Merge
    };
    let home = config::home_dir()?;
    let Some(topic) = &a.topic else {
        return merge_all(&home, how, a.into.as_deref());
    };
    let w = record(&home, topic)?;
    not_running(topic, &w)?;
    let (code, said) = merge_one(&home, topic, &w, how, a.into.as_deref())?;
    if code == 0 {
        println!("{said}");
    } else {
        eprintln!("{said}");
    }
    Ok(code)
}

/// Merge one loop; the exit code and what to say.
fn merge_one(
    home: &Path,
    topic: &str,
    w: &Worktree,
    how: How,
    into: Option<&str>,
) -> Result<(i32, String)> {
    let into = into.unwrap_or(&w.from).to_string();
    if let Some(said) = already_merged(w, &into) {
        return Ok((0, said));
    }
    let message = merge_message(home, topic, w, how, &into);
    let note = uncommitted_note(w)?;
    let merged = wt::merge(&w.repo, &w.branch, &into, how, &message)?;
    match &merged {
        Merged::Done {
            commit,
            fast_forward,
        } => save_merged(
            home,
            topic,
            w,
            &into,
            commit,
            merge_kind(how, *fast_forward),
        )?,
        Merged::UpToDate => {
            let head = wt::branch_head(&w.repo, &into).unwrap_or_default();
            save_merged(home, topic, w, &into, &head, "up to date")?;
        }
        _ => {}
    }
    Ok(merge_said(w, &into, how, &merged, &note))
}

/// The line saying the branch's head was merged into `into` already, when the record says so.
fn already_merged(w: &Worktree, into: &str) -> Option<String> {
    let m = w.merged.as_ref()?;
    if !m.covers(into, wt::branch_head(&w.repo, &w.branch).as_deref()) {
        return None;
    }
    let short: String = m.commit.chars().take(7).collect();
    Some(format!(
        "{} was already merged into {into} ({}, {short}, {}); nothing to do",
        w.branch,
        m.how,
        m.at.format("%Y-%m-%d %H:%M UTC")
    ))
}

/// The merge commit's message: a squash counts the loop's committed iterations.
fn merge_message(home: &Path, topic: &str, w: &Worktree, how: How, into: &str) -> String {
    let iterations = crate::disk::state::read(
        &crate::disk::layout::Layout::for_loop(home, artifact_in(w)).state(),
    )
    .ok()
    .flatten()
    .map_or(0, |s| s.last_committed_iteration);
    match how {
        How::Squash => format!(
            "Loop `{topic}`: {iterations} iteration(s) of branch {}, squashed",
            w.branch
        ),
        _ => format!("Merge loop `{topic}` (branch {}) into {into}", w.branch),
    }
}

/// A note naming the changes the worktree holds that no iteration committed (empty when none).
fn uncommitted_note(w: &Worktree) -> Result<String> {
    let left = if w.worktree.is_dir() {
        wt::uncommitted(&w.worktree)?
    } else {
        Vec::new()
    };
    Ok(if left.is_empty() {
        String::new()
    } else {
        format!(
            "\n  note: the worktree holds changes no iteration committed, not merged: {}",
            left.join(", ")
        )
    })
}

/// How a merge that was made is named.
fn merge_kind(how: How, fast_forward: bool) -> &'static str {
    match (how, fast_forward) {
        (_, true) => "fast-forward",
        (How::Squash, _) => "squash",
        _ => "merge commit",
    }
}

/// The exit code and the lines that say how the merge ended.
fn merge_said(w: &Worktree, into: &str, how: How, merged: &Merged, note: &str) -> (i32, String) {
    let b = &w.branch;
    match merged {
        Merged::Done {
            commit,
            fast_forward,
        } => {
            let kind = merge_kind(how, *fast_forward);
            let short: String = commit.chars().take(7).collect();
            (0, format!("merged {b} into {into} ({kind}, {short}){note}"))
        }
        Merged::UpToDate => (0, format!("{b} is already merged into {into}{note}")),
        Merged::Conflicts(paths) => (
            1,
            format!(
                "merge of {b} into {into} stopped: {} conflicting path(s); nothing was changed\n{}\n  resolve them on the branch (in {}) and commit, then merge again",
                paths.len(),
                paths
                    .iter()
                    .map(|p| format!("  conflict: {p}"))
                    .collect::<Vec<_>>()
                    .join("\n"),
                w.worktree.display()
            ),
        ),
        Merged::NotFastForward => (
            1,
            format!(
                "--ff-only: {into} has moved on since {b} branched; nothing was changed (merge without --ff-only, or rebase the branch)"
            ),
        ),
        Merged::Dirty(paths) => (
            1,
            format!(
                "your uncommitted changes in {} touch what the merge would change: {}; nothing was changed (commit or stash them, then merge again)",
                w.repo.display(),
                paths.join(", ")
            ),
        ),
    }
}

fn artifact_in(w: &Worktree) -> PathBuf {
    match w.original.strip_prefix(&w.repo) {
        Ok(rel) => w.worktree.join(rel),
        Err(_) => w.worktree.clone(),
    }
}

fn save_merged(
    home: &Path,
    topic: &str,
    w: &Worktree,
    into: &str,
    commit: &str,
    how: &str,
) -> Result<()> {
    let mut w = w.clone();
    w.merged = Some(MergeRecord {
        into: into.to_string(),
        commit: commit.to_string(),
        how: how.to_string(),
        at: chrono::Utc::now(),
        tip: wt::branch_head(&w.repo, &w.branch),
    });
    worktrees::write(home, topic, &w)
}

/// `merge --all`: every ended, unmerged loop that merges cleanly; the rest listed (exit 1).
fn merge_all(home: &Path, how: How, into: Option<&str>) -> Result<i32> {
    let mut left = 0;
    let mut any = false;
    for topic in worktrees::topics(home)? {
        let w = record(home, &topic)?;
        let tip = wt::branch_head(&w.repo, &w.branch);
        if w.merged
            .as_ref()
            .is_some_and(|m| m.covers(into.unwrap_or(&w.from), tip.as_deref()))
        {
            continue;
        }
        any = true;
        if let Err(e) = not_running(&topic, &w) {
            eprintln!("{topic}: not merged: {e}");
            left += 1;
            continue;
        }
        let (code, said) = merge_one(home, &topic, &w, how, into)?;
        if code == 0 {
            println!("{topic}: {said}");
        } else {
            eprintln!("{topic}: {said}");
            left += 1;
        }
    }
    if !any {
        println!("no unmerged loop in a worktree");
    }
    Ok(i32::from(left > 0))
}

/// `clean`.
pub fn clean(a: &CleanArgs) -> Result<i32> {
    let home = config::home_dir()?;
    let w = record(&home, &a.topic)?;
    not_running(&a.topic, &w)?;
    let into = w
        .merged
        .as_ref()
        .map_or(w.from.as_str(), |m| m.into.as_str());
    // A squash leaves the branch out of the target's history: the record says it was merged.
    let merged = w.merged.is_some() || wt::is_merged(&w.repo, &w.branch, into)?;
    if !merged && !a.force {
        eprintln!(
            "loop `{}`: branch {} is not merged into {into}; nothing was removed (`studio-agents wiggum merge {}` first, or --force)",
            a.topic, w.branch, a.topic
        );
        return Ok(1);
    }
    if w.worktree.is_dir() {
        let left = wt::uncommitted(&w.worktree)?;
        if !left.is_empty() && !a.force {
            eprintln!(
                "loop `{}`: the worktree {} holds uncommitted changes: {}; nothing was removed (--force removes them)",
                a.topic,
                w.worktree.display(),
                left.join(", ")
            );
            return Ok(1);
        }
    }
    let delete = a.delete_branch && (merged || a.force);
    wt::remove(&w.repo, &a.topic, &w.worktree, delete)?;
    if registry::lookup(&home, &a.topic)?.is_some_and(|p| p.starts_with(&w.worktree)) {
        registry::unregister(&home, &a.topic)?;
    }
    worktrees::remove(&home, &a.topic)?;
    let branch = if delete {
        format!("branch {} deleted", w.branch)
    } else {
        format!("branch {} kept", w.branch)
    };
    println!(
        "removed the worktree of loop `{}` ({}); {branch}",
        a.topic,
        w.worktree.display()
    );
    Ok(0)
}
