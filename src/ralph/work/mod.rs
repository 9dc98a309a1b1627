//! What a loop works on, and everything that follows from it: a **document** (the iteration's
//! `artifact.md`, seeded from the one before, judged as prose) or **code** (the repository
//! itself, the spec never modified, judged by its tests against the tree before each
//! iteration). The iteration's steps are the same for both; what differs — the prompt's
//! templates, the seed, how validation judges, when the loop may call itself done, what the gate
//! reads — is asked of [`Kind`] here, in one place.

pub mod setup;

use std::path::Path;

use super::validation::{Judgement, Results, compare};
use crate::disk::layout::Layout;
use crate::disk::records::{LineCounts, TreeValidation, ValidationShown};
use crate::error::Result;
use crate::quality::types::ArtifactType;
use crate::sys::fsutil;

/// What a loop works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A document: `artifact.md`, rewritten iteration by iteration.
    Document,
    /// Code: the repository, the spec (`artifact.md` or `--spec`) read, never written.
    Code,
}

impl Kind {
    /// The kind of an artifact type (`code` works on the repository).
    #[must_use]
    pub fn of(t: &ArtifactType) -> Kind {
        if t.writes_repository() {
            Kind::Code
        } else {
            Kind::Document
        }
    }

    /// Whether an iteration's directory starts with a copy of the artifact to build on.
    #[must_use]
    pub fn seeds_artifact(self) -> bool {
        self == Kind::Document
    }

    /// Judge a validation run. A document's validation is all or nothing; code is judged
    /// against the tree before the iteration (`baseline`), so a loop that starts red can
    /// commit progress, and an iteration that breaks what passed is named and rejected.
    #[must_use]
    pub fn judge(self, baseline: Option<&Results>, now: &Results, item_done: bool) -> Judgement {
        match (self, baseline) {
            (Kind::Code, Some(before)) => compare::judge(before, now, item_done),
            _ if now.green() => Judgement::Accept,
            _ => Judgement::Reject(now.summary()),
        }
    }

    /// Whether the loop may end as done (plan empty, promise, quality) with the work tree as
    /// its last validation left it: code never ends done while its tests fail.
    #[must_use]
    pub fn may_end_done(self, last: Option<&Results>) -> bool {
        self == Kind::Document || last.is_none_or(Results::green)
    }
}

/// The files a patch changes and its lines added and removed, the loop's own directory
/// (`loop_dir`, as the repository names it: `wiggum/`, `docs/wiggum/`) left out.
#[must_use]
pub fn line_counts(patch: &str, loop_dir: &str) -> LineCounts {
    crate::git::patch::files(patch)
        .iter()
        .filter(|f| !f.path.starts_with(loop_dir))
        .fold(LineCounts::default(), |c, f| LineCounts {
            files: c.files + 1,
            added: c.added + f.added.len(),
            removed: c.removed + f.removed.len(),
        })
}

/// How many failing names a record keeps.
const NAMES_KEPT: usize = 50;

/// A validation run as people read it.
#[must_use]
pub fn shown(r: &Results) -> ValidationShown {
    ValidationShown {
        green: r.green(),
        summary: r.summary(),
        failing: r.failing_names().into_iter().take(NAMES_KEPT).collect(),
        excerpt: r.failing_output(),
    }
}

/// The largest spec file kept to put back.
const SPEC_CAP: u64 = 4 << 20;

/// A code loop's spec as the loop found it: read by the agents, never written. An agent's edit
/// is put back after its run.
#[derive(Debug, Clone, Default)]
pub struct SpecCopy {
    files: Vec<(std::path::PathBuf, Option<Vec<u8>>)>,
}

impl SpecCopy {
    /// Keep the spec files of `kind` (none for a document: its original has its own rules).
    #[must_use]
    pub fn take(kind: Kind, files: &[std::path::PathBuf]) -> SpecCopy {
        if kind == Kind::Document {
            return SpecCopy::default();
        }
        let files = files
            .iter()
            .map(|f| {
                let bytes = std::fs::metadata(f)
                    .ok()
                    .filter(|m| m.is_file() && m.len() <= SPEC_CAP)
                    .and_then(|_| std::fs::read(f).ok());
                (f.clone(), bytes)
            })
            .collect();
        SpecCopy { files }
    }

    /// Put back every spec file that changed (or went) since it was taken; returns the ones
    /// put back. A file that did not exist is left as the agent made it.
    pub fn put_back(&self) -> Result<Vec<std::path::PathBuf>> {
        let mut out = Vec::new();
        for (path, kept) in &self.files {
            let Some(kept) = kept else { continue };
            let now = std::fs::metadata(path)
                .ok()
                .filter(|m| m.is_file() && m.len() <= SPEC_CAP)
                .and_then(|_| std::fs::read(path).ok());
            if now.as_deref() != Some(kept.as_slice()) {
                if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
                    fsutil::remove_dir_all_opt(path)?;
                }
                fsutil::atomic_write(path, kept)?;
                out.push(path.clone());
            }
        }
        Ok(out)
    }
}

/// The validation state a loop keeps: the tree each iteration is judged against, and what the
/// work tree showed last (a rejected iteration's changes stay in it, carried to the next commit).
#[derive(Debug, Clone, Default)]
pub struct Tracked {
    /// The tree before the next iteration: the start's, then each accepted iteration's.
    pub baseline: Option<Results>,
    /// The work tree's last validation.
    pub last: Option<Results>,
    /// Iterations after which the validation failed.
    pub red_iterations: u32,
    /// Iterations validated.
    pub validated: u32,
    /// Why the last iteration was rejected, for the next agent's prompt.
    pub rejected: Option<String>,
}

impl Tracked {
    /// Take the start's validation as the baseline, counting on from what an earlier start of
    /// the loop recorded.
    pub fn start(&mut self, r: Results, earlier: Option<&TreeValidation>) {
        if let Some(e) = earlier {
            self.red_iterations = e.red_iterations;
            self.validated = e.validated;
        }
        self.baseline = Some(r.clone());
        self.last = Some(r);
    }

    /// Record an iteration's validation; an accepted one becomes the baseline.
    pub fn iteration(&mut self, r: Results, accepted: bool) {
        self.validated += 1;
        if !r.green() {
            self.red_iterations += 1;
        }
        if accepted {
            self.baseline = Some(r.clone());
        }
        self.last = Some(r);
    }

    /// What the next agent's prompt says when the work tree is red: the failing output, the
    /// first failure first.
    #[must_use]
    pub fn prompt_section(&self, rejected: Option<&str>) -> Option<String> {
        let last = self.last.as_ref().filter(|r| !r.green())?;
        let head = match rejected {
            Some(why) => format!(
                "The last iteration was rejected: {why}. Its changes are still in the tree."
            ),
            None => "The validation fails on the tree as it is now.".to_string(),
        };
        Some(format!(
            "\n\n## The last validation failed\n\n{head} Fix this first and leave the tree green; \
             here is the output (the first failure first, then the last lines):\n\n```text\n{}\n```\n",
            last.failing_output().replace("```", "ʼʼʼ")
        ))
    }

    /// Write what the last validation showed to the loop's records.
    pub fn save(&self, layout: &Layout, after_iteration: u32) -> Result<()> {
        let Some(last) = &self.last else {
            return Ok(());
        };
        let rec = TreeValidation {
            tree: shown(last),
            after_iteration,
            red_iterations: self.red_iterations,
            validated: self.validated,
        };
        write_json(&layout.tree_validation(), &rec)
    }
}

fn write_json(path: &Path, v: &impl serde::Serialize) -> Result<()> {
    let text = serde_json::to_string_pretty(v).unwrap_or_default();
    fsutil::atomic_write(path, text.as_bytes())
}

/// What the last validation of a loop's work tree showed, if it was recorded.
#[must_use]
pub fn read_tree(layout: &Layout) -> Option<TreeValidation> {
    let text = fsutil::read_capped(&layout.tree_validation(), 1 << 20).ok()?;
    serde_json::from_str(&text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ralph::validation::CommandResult;

    fn red(names: &[&str]) -> Results {
        Results {
            commands: vec![CommandResult {
                command: "t".into(),
                ok: false,
                ending: "exited with code 1".into(),
                tests: Some(crate::ralph::validation::parse::Tests {
                    failed: names.iter().map(|s| (*s).to_string()).collect(),
                    ..Default::default()
                }),
                excerpt: "FAIL: a\n```boom```".into(),
            }],
        }
    }

    #[test]
    fn a_document_is_all_or_nothing_and_code_is_judged_against_the_tree_before() {
        let before = red(&["a", "b"]);
        let now = red(&["b"]);
        assert!(matches!(
            Kind::Document.judge(Some(&before), &now, true),
            Judgement::Reject(_)
        ));
        assert_eq!(
            Kind::Code.judge(Some(&before), &now, false),
            Judgement::Accept
        );
        assert!(Kind::Document.may_end_done(Some(&now)));
        assert!(!Kind::Code.may_end_done(Some(&now)));
        assert!(Kind::Code.may_end_done(None));
    }

    #[test]
    fn a_patch_s_lines_are_counted_without_the_loop_s_own_files() {
        let patch = "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1 +1,2 @@\n-a\n+b\n+c\ndiff --git a/wiggum/fix_plan.md b/wiggum/fix_plan.md\n--- a/wiggum/fix_plan.md\n+++ b/wiggum/fix_plan.md\n-x\n+y\n";
        assert_eq!(
            line_counts(patch, "wiggum/"),
            LineCounts {
                files: 1,
                added: 2,
                removed: 1
            }
        );
    }

    #[test]
    fn the_prompt_carries_the_failing_output_while_the_tree_is_red() {
        let mut t = Tracked::default();
        t.start(red(&["a"]), None);
        let s = t.prompt_section(Some("it broke a")).unwrap();
        assert!(s.contains("rejected: it broke a"));
        assert!(s.contains("FAIL: a"));
        // The output cannot close the fence it is shown in.
        assert_eq!(s.matches("```").count(), 2);
        t.iteration(Results::default(), true);
        assert_eq!(t.prompt_section(None), None);
        assert_eq!((t.validated, t.red_iterations), (1, 0));
    }
}
