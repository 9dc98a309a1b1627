//! Protected files: what an agent in the loop's repository must not change — the loop's own
//! control files (`wiggum/state.json`, `runs.jsonl`) and the repository's `.git/config` and
//! hooks (a rewritten hook would run the agent's code at the user's next commit). Landlock grants
//! whole hierarchies and cannot carve these out of the work tree, so every agent run is checked:
//! what they held before is kept, a change is restored from the supervisor's copy, and the
//! iteration is rejected and the event recorded.

mod held;
mod known;
pub mod persist;

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use self::held::{Held, put_back};
use crate::disk::layout::Layout;
use crate::error::{Error, Result};
use crate::sys::fsutil;

fn held(p: &Path) -> Held {
    known::held(p)
}

/// What the protected files held before an agent run.
#[derive(Debug, Clone, Default)]
pub struct Before {
    git_configs: Vec<(String, PathBuf, Held)>,
    hooks: Option<(PathBuf, Held, BTreeMap<String, Held>)>,
    runs: Option<(u64, i64, i64)>,
    /// The loop's memory files and what they held: the agent may change them, but never put a
    /// link in their place (the supervisor would read and commit what it points at).
    memory: Vec<(String, PathBuf, Held)>,
    /// The loop's directories the supervisor writes into, and whether each was one.
    dirs: Vec<(String, PathBuf, bool)>,
    /// The run's own output files the supervisor reads whole (the iteration's `artifact.md` and
    /// `review.md`).
    outputs: Vec<(String, PathBuf)>,
}

fn too_large(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.len() > fsutil::TEXT_CAP)
}

/// The loop's directories the supervisor writes into under `wiggum/` (the run's own work
/// directory when it is one of the loop's, such as the iteration's).
fn loop_dirs(layout: &Layout, work: &Path) -> Vec<(String, PathBuf)> {
    let wiggum = layout.wiggum();
    let mut dirs: Vec<PathBuf> = vec![
        layout.final_dir(),
        layout.discarded(),
        wiggum.join("iterations"),
    ];
    if work != wiggum && work.starts_with(&wiggum) {
        // The iteration's directory and the folders on the way to it.
        dirs.extend(
            work.ancestors()
                .take_while(|a| *a != wiggum && a.starts_with(&wiggum))
                .map(Path::to_path_buf),
        );
    }
    dirs.sort();
    dirs.dedup();
    dirs.into_iter()
        .map(|d| {
            let name = d
                .strip_prefix(layout.root())
                .map_or_else(|_| d.display().to_string(), |r| r.display().to_string());
            (name, d)
        })
        .collect()
}

fn is_dir_itself(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir())
}

/// Where the repository keeps what is protected.
#[derive(Debug, Clone, Default)]
pub struct Protected {
    /// The config files git reads that the work tree's side can write, with the names people
    /// know them by (`git::preflight::config_files`: `.git/config` first).
    pub git_configs: Vec<(String, PathBuf)>,
    /// The hooks directory (`core.hooksPath` honoured).
    pub hooks_dir: Option<PathBuf>,
    /// The loop's settings file, `wiggum/wiggum.toml` (the next `start` reads it).
    pub loop_config: Option<PathBuf>,
    /// The repository's layout as `start` found it: the `.git` entry (a directory, or a gitfile
    /// naming the git dir), the git dir's `commondir` and the object store's `alternates` —
    /// each would let an agent point the supervisor's git at a config (a filter, an fsmonitor)
    /// of its own.
    pub git_layout: Vec<(String, PathBuf)>,
}

/// Every entry of the hooks directory, of any type and size (a link or a large file is a hook
/// git runs too).
fn entries_of(dir: &Path) -> BTreeMap<String, Held> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return BTreeMap::new();
    };
    rd.flatten()
        .map(|e| (e.file_name().to_string_lossy().to_string(), held(&e.path())))
        .collect()
}

fn stat(p: &Path) -> Option<(u64, i64, i64)> {
    std::fs::metadata(p)
        .ok()
        .map(|m| (m.len(), m.mtime(), m.mtime_nsec()))
}

impl Protected {
    /// Keep what the protected files hold now.
    #[must_use]
    pub fn before(&self, layout: &Layout, work: &Path) -> Before {
        Before {
            memory: crate::disk::layout::MEMORY_FILES
                .iter()
                .map(|name| {
                    let p = layout.memory(name);
                    (format!("wiggum/{name}"), p.clone(), held(&p))
                })
                .collect(),
            outputs: if work != layout.wiggum() && work.starts_with(layout.wiggum()) {
                ["artifact.md", "review.md"]
                    .iter()
                    .map(|f| {
                        let p = work.join(f);
                        let name = p
                            .strip_prefix(layout.root())
                            .map_or_else(|_| p.display().to_string(), |r| r.display().to_string());
                        (name, p)
                    })
                    .collect()
            } else {
                Vec::new()
            },
            dirs: loop_dirs(layout, work)
                .into_iter()
                .map(|(name, d)| {
                    let was = is_dir_itself(&d);
                    (name, d, was)
                })
                .collect(),
            // The layout first: a `.git` that cannot be put back leaves the files under it alone.
            git_configs: self
                .git_layout
                .iter()
                .cloned()
                .chain(
                    self.git_configs
                        .iter()
                        .map(|(name, p)| (name.clone(), p.clone())),
                )
                .chain(
                    self.loop_config
                        .iter()
                        .map(|p| ("wiggum/wiggum.toml".to_string(), p.clone())),
                )
                .map(|(name, p)| {
                    let h = held(&p);
                    (name, p, h)
                })
                .collect(),
            hooks: self
                .hooks_dir
                .as_ref()
                .map(|d| (d.clone(), held(d), entries_of(d))),
            runs: stat(&layout.runs()),
        }
    }
}

/// The hooks git runs (githooks(5)), by name.
const GIT_HOOKS: &[&str] = &[
    "applypatch-msg",
    "pre-applypatch",
    "post-applypatch",
    "pre-commit",
    "pre-merge-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "pre-rebase",
    "post-checkout",
    "post-merge",
    "pre-push",
    "pre-receive",
    "update",
    "proc-receive",
    "post-receive",
    "post-update",
    "reference-transaction",
    "push-to-checkout",
    "pre-auto-gc",
    "post-rewrite",
    "sendemail-validate",
    "fsmonitor-watchman",
    "p4-changelist",
    "p4-prepare-changelist",
    "p4-post-changelist",
    "p4-pre-submit",
    "post-index-change",
];

impl Before {
    /// Keep the list of what the protected files held in `dir` (the loop's records), for a
    /// start after a crash ([`persist::restore_after_crash`]).
    pub fn persist(&self, dir: &Path) -> Result<()> {
        let mut entries: Vec<(String, PathBuf, Held)> = self
            .git_configs
            .iter()
            .filter(|(name, ..)| name != "wiggum/wiggum.toml")
            .cloned()
            .collect();
        if let Some((dir, _, hooks)) = &self.hooks {
            for (name, held) in hooks {
                entries.push((format!("hooks/{name}"), dir.join(name), held.clone()));
            }
            // A hook git runs that was not there: one planted before a crash is removed.
            for name in GIT_HOOKS.iter().filter(|n| !hooks.contains_key(**n)) {
                entries.push((format!("hooks/{name}"), dir.join(name), Held::Absent));
            }
        }
        persist::save(dir, &entries)
    }

    /// Links (and files) the agent put where the loop's memory files and directories belong:
    /// removed, what the file held put back, the directory made again. Nothing is followed.
    fn unlink_planted(&self) -> Result<Vec<String>> {
        let mut changed = Vec::new();
        for (name, path, was) in &self.memory {
            let why = if crate::sys::beneath::is_link(path) {
                "a symbolic link"
            } else if too_large(path) && name != "wiggum/fix_plan.md" {
                // (The plan's own guard restores a bloated plan, and says so.)
                "larger than the loop reads"
            } else {
                continue;
            };
            fsutil::remove_file_opt(path)?;
            put_back(path, was)?;
            changed.push(format!("{name} ({why})"));
        }
        for (name, path) in &self.outputs {
            let why = if crate::sys::beneath::is_link(path) {
                "a symbolic link"
            } else if too_large(path) {
                "larger than the loop reads"
            } else {
                continue;
            };
            fsutil::remove_file_opt(path)?;
            changed.push(format!("{name} ({why})"));
        }
        for (name, dir, was) in &self.dirs {
            let link = crate::sys::beneath::is_link(dir);
            let other = !link && dir.exists() && !is_dir_itself(dir);
            let missing = *was && !link && !other && !dir.exists();
            if missing {
                // Deleted by the run (the iteration's directory, `final/`): made again.
                fsutil::create_dir_all(dir)?;
                changed.push(format!("{name} (deleted)"));
                continue;
            }
            if !link && !other {
                continue;
            }
            fsutil::remove_dir_all_opt(dir)?;
            if *was {
                fsutil::create_dir_all(dir)?;
            }
            changed.push(format!(
                "{name} ({})",
                if link {
                    "a symbolic link"
                } else {
                    "not a directory"
                }
            ));
        }
        Ok(changed)
    }

    /// Compare with now; restore what changed; return the changed files (for people).
    /// `state_json` is what the supervisor last wrote to `state.json` (its next save restores it).
    pub fn restore_changes(&self, layout: &Layout, state_json: &[u8]) -> Result<Vec<String>> {
        let mut changed = self.unlink_planted()?;
        // What is replaced is kept, not lost: the change may be a person's (`git push -u` and
        // `git remote add` write `.git/config`), not the agent's.
        let aside = Aside(layout.discarded().join(format!(
            "protected.{}",
            chrono::Utc::now().format("%Y%m%dT%H%M%S%.3f")
        )));
        // What cannot be put back (a `.git` directory replaced, a large hook rewritten) ends the
        // loop with the reason, after everything else is put back.
        let mut cannot = Vec::new();
        let lost = self.restore_configs(&aside, &mut changed, &mut cannot)?;
        self.restore_hooks(&aside, &lost, &mut changed, &mut cannot)?;
        self.restore_records(layout, state_json, &mut changed)?;
        if aside.0.exists() {
            tracing::warn!(
                "what replaced the protected files is kept in {} (a person's change is not lost)",
                aside.0.display()
            );
        }
        if !cannot.is_empty() {
            return Err(Error::runtime(format!(
                "an agent run changed what the loop cannot put back: {}; what replaced it is kept in {} — put the repository back as it was, then start the loop again",
                cannot.join(", "),
                aside.0.display()
            )));
        }
        Ok(changed)
    }

    /// The repository's layout, git's config files and the loop's settings put back as they
    /// were; returns the paths that could not be (what lies under them is left alone).
    fn restore_configs(
        &self,
        aside: &Aside,
        changed: &mut Vec<String>,
        cannot: &mut Vec<String>,
    ) -> Result<Vec<PathBuf>> {
        let mut lost: Vec<PathBuf> = Vec::new();
        for (name, path, was) in &self.git_configs {
            let now = held(path);
            if *was == Held::Unknown || now == *was || lost.iter().any(|l| path.starts_with(l)) {
                continue;
            }
            // `.git/config` is kept as `config`, the others by their names made flat.
            let aside_name = match name.as_str() {
                ".git/config" => "config".to_string(),
                "wiggum/wiggum.toml" => "wiggum.toml".to_string(),
                other => other.trim_start_matches(['.', '/']).replace('/', "_"),
            };
            aside.keep(&aside_name, &now)?;
            if !put_back(path, was)? {
                cannot.push(format!("{name} (was {}, now {})", was.kind(), now.kind()));
                lost.push(path.clone());
            }
            changed.push(name.clone());
        }
        Ok(lost)
    }

    /// The hooks directory put back entry by entry (made again when it was replaced).
    fn restore_hooks(
        &self,
        aside: &Aside,
        lost: &[PathBuf],
        changed: &mut Vec<String>,
        cannot: &mut Vec<String>,
    ) -> Result<()> {
        let Some((dir, dir_was, was)) = self
            .hooks
            .as_ref()
            .filter(|(dir, ..)| !lost.iter().any(|l| dir.starts_with(l)))
        else {
            return Ok(());
        };
        if *dir_was == Held::Dir && held(dir) != Held::Dir {
            // The hooks directory itself replaced (by a link elsewhere): made again below.
            changed.push(format!("hooks ({})", held(dir).kind()));
            fsutil::remove_dir_all_opt(dir)?;
            fsutil::create_dir_all(dir)?;
        }
        let now = entries_of(dir);
        for name in now
            .keys()
            .chain(was.keys())
            .collect::<std::collections::BTreeSet<_>>()
        {
            let (then, now) = (
                was.get(name).cloned().unwrap_or(Held::Absent),
                now.get(name).cloned().unwrap_or(Held::Absent),
            );
            if then == now {
                continue;
            }
            changed.push(format!("hooks/{name}"));
            aside.keep(&format!("hooks/{name}"), &now)?;
            if !put_back(&dir.join(name), &then)? {
                cannot.push(format!(
                    "hooks/{name} (was {}, now {})",
                    then.kind(),
                    now.kind()
                ));
                // Never leave a hook the loop cannot vouch for in git's way.
                fsutil::remove_dir_all_opt(&dir.join(name))?;
            }
        }
        Ok(())
    }

    /// The loop's run records put back from their copy in the store; a state the run rewrote is
    /// named (the caller writes its own again).
    fn restore_records(
        &self,
        layout: &Layout,
        state_json: &[u8],
        changed: &mut Vec<String>,
    ) -> Result<()> {
        if stat(&layout.runs()) != self.runs
            && layout.runs_copy() != layout.runs()
            && !fsutil::same_content(&layout.runs(), &layout.runs_copy())?
        {
            fsutil::copy_file(&layout.runs_copy(), &layout.runs())?;
            changed.push("wiggum/runs.jsonl".to_string());
        }
        if !fsutil::holds_exactly(&layout.state(), state_json) {
            changed.push("wiggum/state.json".to_string());
        }
        Ok(())
    }
}

/// Where what replaced the protected files is kept (`wiggum/discarded/protected.<time>/`).
struct Aside(PathBuf);

impl Aside {
    /// Keep what `name` holds now (nothing for what has no bytes to keep).
    fn keep(&self, name: &str, now: &Held) -> Result<()> {
        let Some(bytes) = now.evidence() else {
            return Ok(());
        };
        let at = self.0.join(name);
        fsutil::create_dir_all(at.parent().unwrap_or(&self.0))?;
        fsutil::atomic_write(&at, &bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_hooks_config_and_run_records_are_restored_and_named() {
        let d = tempfile::tempdir().unwrap();
        let home = d.path().join("home");
        let layout = Layout::for_loop(&home, d.path().join("art"));
        std::fs::create_dir_all(layout.wiggum()).unwrap();
        std::fs::create_dir_all(layout.records()).unwrap();
        let git = d.path().join("art/.git");
        std::fs::create_dir_all(git.join("hooks")).unwrap();
        std::fs::write(git.join("config"), "[core]\n").unwrap();
        std::fs::write(git.join("hooks/pre-commit.sample"), "#!/bin/sh\n").unwrap();
        std::fs::write(layout.runs(), "{\"a\":1}\n").unwrap();
        std::fs::write(layout.runs_copy(), "{\"a\":1}\n").unwrap();
        std::fs::write(layout.state(), "{}").unwrap();
        let p = Protected {
            git_configs: vec![
                (".git/config".into(), git.join("config")),
                (".git/config.worktree".into(), git.join("config.worktree")),
            ],
            hooks_dir: Some(git.join("hooks")),
            loop_config: None,
            git_layout: Vec::new(),
        };
        let before = p.before(&layout, &layout.wiggum());
        assert!(before.restore_changes(&layout, b"{}").unwrap().is_empty());
        // The agent plants a hook, edits the config, rewrites the run records and the state.
        std::fs::write(git.join("hooks/pre-commit"), "#!/bin/sh\ncurl evil\n").unwrap();
        std::fs::write(git.join("config"), "[core]\nhooksPath = /tmp\n").unwrap();
        std::fs::write(git.join("config.worktree"), "[core]\nfsmonitor = evil\n").unwrap();
        std::fs::write(layout.runs(), "{\"a\":2}\n").unwrap();
        std::fs::write(layout.state(), "{\"status\":\"completed\"}").unwrap();
        let changed = before.restore_changes(&layout, b"{}").unwrap();
        assert_eq!(
            changed,
            vec![
                ".git/config",
                ".git/config.worktree",
                "hooks/pre-commit",
                "wiggum/runs.jsonl",
                "wiggum/state.json"
            ]
        );
        assert!(!git.join("hooks/pre-commit").exists());
        assert!(!git.join("config.worktree").exists());
        assert_eq!(
            std::fs::read_to_string(git.join("config")).unwrap(),
            "[core]\n"
        );
        assert_eq!(
            std::fs::read_to_string(layout.runs()).unwrap(),
            "{\"a\":1}\n"
        );
        // What was replaced is kept aside (not executable, never committed).
        let kept: Vec<_> = std::fs::read_dir(layout.discarded())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        assert_eq!(kept.len(), 1, "{kept:?}");
        assert_eq!(
            std::fs::read_to_string(kept[0].join("config")).unwrap(),
            "[core]\nhooksPath = /tmp\n"
        );
        assert_eq!(
            std::fs::read_to_string(kept[0].join("git_config.worktree")).unwrap(),
            "[core]\nfsmonitor = evil\n"
        );
        let hook = kept[0].join("hooks/pre-commit");
        assert_eq!(
            std::fs::read_to_string(&hook).unwrap(),
            "#!/bin/sh\ncurl evil\n"
        );
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(
                &std::fs::metadata(&hook).unwrap().permissions()
            ) & 0o111,
            0
        );
    }
}
