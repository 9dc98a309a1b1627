//! Every path of a loop in one place (DESIGN §3). Nothing else builds loop paths by hand.
//!
//! Two places: the loop's directory `wiggum/` beside the artifact, where the agent works (its
//! memory, the artifacts of each iteration, the state), and the loop's records under
//! `$STUDIO_AGENTS_HOME/runs/<dir>-<hash>/`, out of the agent's sight: every agent log, prompt,
//! revision scratch and validation log, and the authoritative copy of `runs.jsonl`. A fresh
//! context must not read an earlier agent's process (seed 004, anti-pattern 1).

use std::path::{Path, PathBuf};

use md5::{Digest, Md5};

/// The loop's memory files in `wiggum/` (the agent reads and may edit them; the supervisor
/// reads them, so none of them may be a link).
pub const MEMORY_FILES: [&str; 5] = [
    "PROMPT.md",
    "PLANNING_PROMPT.md",
    "AGENT.md",
    "fix_plan.md",
    ".gitignore",
];

/// The paths of one loop, rooted at its artifact directory.
#[derive(Debug, Clone)]
pub struct Layout {
    root: PathBuf,
    records: PathBuf,
}

impl Layout {
    /// A layout for the artifact directory `root` (absolute) whose records stay in its own
    /// `wiggum/` (tests that look at a loop's files alone).
    #[cfg(test)]
    #[must_use]
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        let records = root.join("wiggum");
        Self { root, records }
    }

    /// The layout of the loop on `root` whose records live under `home`.
    #[must_use]
    pub fn for_loop(home: &Path, root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        let records = home.join("runs").join(Self::key(&root));
        Self { root, records }
    }

    /// A readable, unique name for the loop on `root`: `<dir name>-<16 hex of md5(path)>`.
    #[must_use]
    pub fn key(root: &Path) -> String {
        let digest = Md5::digest(root.as_os_str().as_encoded_bytes());
        let mut head = [0u8; 8];
        head.copy_from_slice(&digest[..8]);
        let name: String = root
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .take(40)
            .collect();
        format!("{name}-{:016x}", u64::from_be_bytes(head))
    }

    /// The loop's records directory (out of the agent's sight).
    #[must_use]
    pub fn records(&self) -> &Path {
        &self.records
    }

    /// The records' own copy of `runs.jsonl`, which the agent cannot reach: restores the one
    /// in `wiggum/` when an agent changed it.
    #[must_use]
    pub fn runs_copy(&self) -> PathBuf {
        self.records.join("runs.jsonl")
    }

    /// The bytes of `wiggum/wiggum.toml` a person last allowed (or the supervisor wrote), out of
    /// the agent's reach: a loop file that differs is not taken without `wiggum allow`.
    #[must_use]
    pub fn allowed_settings(&self) -> PathBuf {
        self.records.join("allowed.toml")
    }

    /// The answer a person gave to the open question (`wiggum answer`), out of the agent's
    /// reach, until the next run's prompt carries it.
    #[must_use]
    pub fn answer(&self) -> PathBuf {
        self.records.join("answer.json")
    }

    /// The open question and the answered ones, as the supervisor keeps them out of the
    /// agent's reach (`disk::questions::Kept`).
    #[must_use]
    pub fn questions(&self) -> PathBuf {
        self.records.join("question.json")
    }

    /// What the loop has spent, as the supervisor keeps it out of the agent's reach
    /// (`disk::ledger`).
    #[must_use]
    pub fn spend(&self) -> PathBuf {
        self.records.join("spend.json")
    }

    /// The effective settings the running loop was started with, pinned out of the agent's
    /// reach (what `status` and the other readers take).
    #[must_use]
    pub fn pinned_settings(&self) -> PathBuf {
        self.records.join("settings.toml")
    }

    /// The artifact directory.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }
    /// The original artifact, never modified by the loop.
    #[must_use]
    pub fn original_artifact(&self) -> PathBuf {
        self.root.join("artifact.md")
    }
    /// Optional delegation metadata.
    #[must_use]
    pub fn metadata(&self) -> PathBuf {
        self.root.join("metadata.json")
    }
    /// The loop's own directory.
    #[must_use]
    pub fn wiggum(&self) -> PathBuf {
        self.root.join("wiggum")
    }
    /// This loop's settings (the effective config written at start).
    #[must_use]
    pub fn config(&self) -> PathBuf {
        self.wiggum().join("wiggum.toml")
    }
    /// A file of the loop's memory (PROMPT.md, AGENT.md, fix_plan.md, ...).
    #[must_use]
    pub fn memory(&self, name: &str) -> PathBuf {
        self.wiggum().join(name)
    }
    /// The plan the agent ticks.
    #[must_use]
    pub fn fix_plan(&self) -> PathBuf {
        self.memory("fix_plan.md")
    }
    /// `state.json`.
    #[must_use]
    pub fn state(&self) -> PathBuf {
        self.wiggum().join("state.json")
    }
    /// The lock file held by the running loop.
    #[must_use]
    pub fn lock(&self) -> PathBuf {
        self.wiggum().join(".lock")
    }
    /// The control file through which other shells ask for pause or stop-after-iteration.
    #[must_use]
    pub fn requests(&self) -> PathBuf {
        self.wiggum().join("control.json")
    }
    /// Append-only run records.
    #[must_use]
    pub fn runs(&self) -> PathBuf {
        self.wiggum().join("runs.jsonl")
    }
    /// The daemon's own log.
    #[must_use]
    pub fn daemon_log(&self) -> PathBuf {
        self.wiggum().join("daemon.log")
    }
    /// The directory of iteration `n` (1-based): `wiggum/iterations/001-100/iteration-007/`, a
    /// hundred to a folder, so that the tree git rewrites for each commit of the loop holds at
    /// most a hundred of them, however old the loop. A loop started by an earlier version keeps
    /// the iterations it made as `wiggum/iteration-NNN/`, and they are found there; a new one is
    /// always made in its folder (an agent that makes a `wiggum/iteration-NNN/` of its own while
    /// the iteration's folder exists does not move it).
    #[must_use]
    pub fn iteration_dir(&self, n: u32) -> PathBuf {
        let dir = self.wiggum().join(iteration_rel(n));
        if dir.symlink_metadata().is_err() {
            let flat = self.wiggum().join(iteration_dir_name(n));
            if flat.symlink_metadata().is_ok_and(|m| m.is_dir()) {
                return flat;
            }
        }
        dir
    }
    /// `fix_plan.md` as it was when the current attempt began: restored when the attempt is
    /// discarded, so a retried iteration does not skip items the discarded one had ticked. In
    /// the loop's records, out of the agent's reach (an agent could make a discarded attempt
    /// restore a plan of its choosing).
    #[must_use]
    pub fn plan_backup(&self) -> PathBuf {
        self.records.join("fix_plan.attempt")
    }

    /// Where an earlier version kept [`Layout::plan_backup`], in the agent's reach: removed at a
    /// start, never read.
    #[must_use]
    pub fn old_plan_backup(&self) -> PathBuf {
        self.wiggum().join(".fix_plan.attempt")
    }

    /// The planning phase's records (its prompt and agent log).
    #[must_use]
    pub fn planning_dir(&self) -> PathBuf {
        self.records.join("planning")
    }
    /// Where run `n`'s prompt, log and scratch live (in the records): planning for 0.
    #[must_use]
    pub fn run_dir(&self, n: u32) -> PathBuf {
        if n == 0 {
            self.planning_dir()
        } else {
            self.records.join(iteration_dir_name(n))
        }
    }
    /// The newest iteration with records (its agent's log and prompt), if any.
    #[must_use]
    pub fn latest_run(&self) -> Option<u32> {
        std::fs::read_dir(&self.records)
            .ok()?
            .flatten()
            .filter_map(|e| iteration_number(e.file_name().to_str()?))
            .max()
    }
    /// The agent log of run `n` (see [`Self::run_dir`]).
    #[must_use]
    pub fn agent_log(&self, n: u32) -> PathBuf {
        self.run_dir(n).join("agent.log")
    }
    /// The artifact iteration `n` works on.
    #[must_use]
    pub fn iteration_artifact(&self, n: u32) -> PathBuf {
        self.iteration_dir(n).join("artifact.md")
    }
    /// What iteration `n`'s agent says it did (the commit's subject).
    #[must_use]
    pub fn review(&self, n: u32) -> PathBuf {
        self.iteration_dir(n).join("review.md")
    }
    /// The gate's record of iteration `n`.
    #[must_use]
    pub fn eval_record(&self, n: u32) -> PathBuf {
        self.iteration_dir(n).join("eval.json")
    }
    /// The output of iteration `n`'s validation commands.
    #[must_use]
    pub fn validation_log(&self, n: u32) -> PathBuf {
        self.run_dir(n).join("validation.log")
    }
    /// The output of the validation run outside an iteration: `baseline` (before the first
    /// iteration of a start) and `final` (on the final tree).
    #[must_use]
    pub fn loop_validation_log(&self, what: &str) -> PathBuf {
        self.records.join(format!("validation-{what}.log"))
    }
    /// What the last validation showed of the work tree (`records::TreeValidation`).
    #[must_use]
    pub fn tree_validation(&self) -> PathBuf {
        self.records.join("validation.json")
    }
    /// The output of the git hooks run for run `n`'s commit (planning: 0).
    #[must_use]
    pub fn hooks_log(&self, n: u32) -> PathBuf {
        self.run_dir(n).join("hooks.log")
    }
    /// The answer of revision round `round` of iteration `n`.
    #[must_use]
    pub fn revision_answer(&self, n: u32, round: u32) -> PathBuf {
        self.run_dir(n).join(format!("revision-r{round}.md"))
    }
    /// Where discarded attempts are kept.
    #[must_use]
    pub fn discarded(&self) -> PathBuf {
        self.wiggum().join("discarded")
    }
    /// Where the records of discarded attempts are kept.
    #[must_use]
    pub fn discarded_records(&self) -> PathBuf {
        self.records.join("discarded")
    }
    /// The delegation's records (its prompt, log and answer).
    #[must_use]
    pub fn delegation_dir(&self) -> PathBuf {
        self.records.join("delegation")
    }
    /// The task a delegation was given (the gate's task when present).
    #[must_use]
    pub fn task(&self) -> PathBuf {
        self.root.join("task.md")
    }
    /// The directory of the final copy.
    #[must_use]
    pub fn final_dir(&self) -> PathBuf {
        self.wiggum().join("final")
    }
    /// The final accepted artifact.
    #[must_use]
    pub fn final_artifact(&self) -> PathBuf {
        result_path(&self.root)
    }

    /// A path's components, with an iteration directory's folder left out
    /// (`wiggum/iterations/001-100/iteration-007/x` → `wiggum/iteration-007/x`), so both
    /// layouts are classified alike.
    fn parts(rel: &Path) -> Vec<&str> {
        let mut parts: Vec<&str> = rel.iter().filter_map(|c| c.to_str()).collect();
        if let ["wiggum", ITERATIONS, _, dir, ..] = parts.as_slice()
            && iteration_number(dir).is_some()
        {
            parts.drain(1..3);
        }
        parts
    }

    /// Paths (relative to the artifact dir) written by the supervisor itself: they are never
    /// counted as the agent's change, and the runtime ones are never committed.
    #[must_use]
    pub fn is_supervisor_path(rel: &Path) -> bool {
        let parts = Self::parts(rel);
        match parts.as_slice() {
            ["wiggum", name] => {
                matches!(
                    *name,
                    ".lock"
                        | "state.json"
                        | "control.json"
                        | "runs.jsonl"
                        | "wiggum.toml"
                        | ".fix_plan.attempt"
                ) || name.starts_with("daemon.log")
                    || name.starts_with("state.json.")
                    || name.ends_with(".tmp")
            }
            [
                "wiggum",
                "final" | "planning" | "discarded" | "delegation",
                ..,
            ] => true,
            ["wiggum", dir, file] if dir.starts_with("iteration-") => {
                matches!(
                    *file,
                    "agent.log"
                        | "eval.json"
                        | "prompt.md"
                        | "validation.log"
                        | "eval.log"
                        | "hooks.log"
                ) || file.starts_with("revision-")
                    || file.starts_with("eval-")
            }
            _ => false,
        }
    }

    /// Runtime files that are never committed: the lock, state, run records, logs, prompts
    /// and revision scratch, discarded attempts (the `final/` copy is the loop's result: it is
    /// committed). `templates/gitignore` lists the same.
    #[must_use]
    pub fn is_runtime_path(rel: &Path) -> bool {
        let parts = Self::parts(rel);
        match parts.as_slice() {
            ["wiggum", name] => {
                matches!(
                    *name,
                    ".lock" | "state.json" | "control.json" | "runs.jsonl" | ".fix_plan.attempt"
                ) || name.starts_with("daemon.log")
                    || name.starts_with("state.json.")
                    || name.ends_with(".tmp")
            }
            ["wiggum", "discarded" | "planning" | "delegation", ..] => true,
            ["wiggum", dir, file] if dir.starts_with("iteration-") => {
                matches!(
                    *file,
                    "agent.log" | "validation.log" | "eval.log" | "prompt.md" | "hooks.log"
                ) || file.starts_with("revision-")
                    || file.starts_with("eval-")
            }
            _ => false,
        }
    }
}

/// The loop's result, `wiggum/final/artifact.md`, of the loop on `root` (committed).
#[must_use]
pub fn result_path(root: &Path) -> PathBuf {
    root.join("wiggum").join("final").join("artifact.md")
}

/// `iteration-007` for 7.
#[must_use]
pub fn iteration_dir_name(n: u32) -> String {
    format!("iteration-{n:03}")
}

/// 7 for `iteration-007` (and nothing for a name of another shape, such as a discarded
/// attempt's `iteration-007.attempt-1.<time>`).
#[must_use]
pub fn iteration_number(name: &str) -> Option<u32> {
    let digits = name.strip_prefix("iteration-")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Where iteration `n`'s directory is made, relative to `wiggum/`:
/// `iterations/001-100/iteration-007` for 7.
#[must_use]
pub fn iteration_rel(n: u32) -> PathBuf {
    Path::new(ITERATIONS)
        .join(bucket_name(n))
        .join(iteration_dir_name(n))
}

/// The folder under `wiggum/` that holds the iteration directories.
const ITERATIONS: &str = "iterations";

/// The folder of iteration `n` among the iterations: `001-100` for 1 to 100, `101-200`, ...
#[must_use]
pub fn bucket_name(n: u32) -> String {
    let first = n.saturating_sub(1) / 100 * 100 + 1;
    format!("{first:03}-{:03}", first + 99)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_records_key_of_a_directory_never_changes() {
        // Records and locks of loops started by earlier versions are found under this name.
        assert_eq!(
            Layout::key(Path::new("/home/u/my notes")),
            "my_notes-33b757d19a77a6e3"
        );
    }

    #[test]
    fn iteration_dirs_are_zero_padded_a_hundred_to_a_folder() {
        let l = Layout::new("/nonexistent-loop");
        for (n, dir) in [
            (1, "001-100/iteration-001"),
            (7, "001-100/iteration-007"),
            (100, "001-100/iteration-100"),
            (101, "101-200/iteration-101"),
            (999, "901-1000/iteration-999"),
            (1000, "901-1000/iteration-1000"),
            (1001, "1001-1100/iteration-1001"),
            (1234, "1201-1300/iteration-1234"),
        ] {
            assert_eq!(
                l.iteration_dir(n),
                Path::new("/nonexistent-loop/wiggum/iterations").join(dir),
                "{n}"
            );
        }
    }

    #[test]
    fn iterations_an_earlier_version_made_are_found_where_it_made_them() {
        let d = tempfile::tempdir().unwrap();
        let l = Layout::new(d.path());
        // Iterations 1 and 2 made flat by an earlier version; 3 made by this one.
        for n in [1, 2] {
            std::fs::create_dir_all(l.wiggum().join(iteration_dir_name(n))).unwrap();
        }
        assert_eq!(l.iteration_dir(2), l.wiggum().join("iteration-002"));
        assert_eq!(
            l.iteration_artifact(1),
            l.wiggum().join("iteration-001/artifact.md")
        );
        let third = l.wiggum().join("iterations/001-100/iteration-003");
        assert_eq!(l.iteration_dir(3), third);
        std::fs::create_dir_all(&third).unwrap();
        // A flat directory made beside the folder's (an agent following old notes) moves
        // nothing: the iteration stays in its folder.
        std::fs::create_dir_all(l.wiggum().join("iteration-003")).unwrap();
        assert_eq!(l.iteration_dir(3), third);
        // A plain file of that name is no iteration directory.
        std::fs::write(l.wiggum().join("iteration-004"), "x").unwrap();
        assert_eq!(
            l.iteration_dir(4),
            l.wiggum().join("iterations/001-100/iteration-004")
        );
    }

    #[test]
    fn the_latest_run_is_the_highest_numbered_records_directory() {
        let d = tempfile::tempdir().unwrap();
        let l = Layout::for_loop(&d.path().join("home"), d.path().join("art"));
        assert_eq!(l.latest_run(), None);
        for dir in [
            "planning",
            "iteration-099",
            "iteration-1001",
            "iteration-1002.attempt-1.20260101",
            "iteration-150",
        ] {
            std::fs::create_dir_all(l.records().join(dir)).unwrap();
        }
        // By number: `iteration-1001` sorts before `iteration-150` by name.
        assert_eq!(l.latest_run(), Some(1001));
    }

    #[test]
    fn iteration_names_and_numbers() {
        assert_eq!(iteration_number("iteration-007"), Some(7));
        assert_eq!(iteration_number("iteration-1234"), Some(1234));
        for name in [
            "iteration-",
            "iteration-007.attempt-1.x",
            "iteration-+7",
            "iterations",
            "x",
        ] {
            assert_eq!(iteration_number(name), None, "{name}");
        }
        assert_eq!(bucket_name(0), "001-100");
    }

    #[test]
    fn supervisor_paths_are_not_agent_changes() {
        for p in [
            "wiggum/state.json",
            "wiggum/.lock",
            "wiggum/runs.jsonl",
            "wiggum/daemon.log.2026-01-01",
            "wiggum/iteration-002/agent.log",
            "wiggum/iterations/001-100/iteration-002/agent.log",
            "wiggum/iterations/001-100/iteration-002/eval.json",
            "wiggum/final/artifact.md",
        ] {
            assert!(Layout::is_supervisor_path(Path::new(p)), "{p}");
        }
        for p in [
            "wiggum/fix_plan.md",
            "wiggum/AGENT.md",
            "wiggum/iteration-002/artifact.md",
            "wiggum/iterations/001-100/iteration-002/artifact.md",
            "wiggum/iterations/001-100/notes.md",
            "src/main.rs",
            "state.json",
        ] {
            assert!(!Layout::is_supervisor_path(Path::new(p)), "{p}");
        }
    }

    fn ignore_lists(pattern: &str) -> bool {
        include_str!("../../templates/gitignore")
            .lines()
            .any(|l| l == pattern)
    }

    #[test]
    fn runtime_paths_are_supervisor_paths_and_match_the_gitignore() {
        let runtime = [
            "wiggum/state.json",
            "wiggum/iteration-001/agent.log",
            "wiggum/iteration-001/revision-r2.md",
            "wiggum/iterations/001-100/iteration-001/agent.log",
            "wiggum/iterations/101-200/iteration-101/revision-r2.md",
            "wiggum/planning/agent.log",
            "wiggum/discarded/iteration-001.attempt-1/artifact.md",
        ];
        for p in runtime {
            assert!(Layout::is_runtime_path(Path::new(p)), "{p}");
            assert!(Layout::is_supervisor_path(Path::new(p)), "{p}");
        }
        for p in [
            "wiggum/wiggum.toml",
            "wiggum/iteration-001/eval.json",
            "wiggum/iteration-001/artifact.md",
            "wiggum/iterations/001-100/iteration-001/artifact.md",
            "wiggum/iterations/001-100/iteration-001/review.md",
            "wiggum/.gitignore",
            "wiggum/final/artifact.md",
        ] {
            assert!(!Layout::is_runtime_path(Path::new(p)), "{p}");
        }
        assert!(!ignore_lists("final/"));
        for pattern in [
            ".lock",
            "runs.jsonl",
            "**/iteration-*/agent.log",
            "**/iteration-*/revision-*",
            "discarded/",
        ] {
            assert!(ignore_lists(pattern), "{pattern}");
        }
    }
}
