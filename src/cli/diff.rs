//! `wiggum diff`: what the loop changed in the artifact. An iteration against the previous
//! committed one (the original for the first), or with no `--iteration` the original against
//! the final artifact; `--stat` for the counts; coloured on a terminal and paged like git. A loop
//! with no `artifact.md` (a code loop judged on its diff) shows the iteration's commit instead.

pub use super::common::Color;
use std::path::Path;

use clap::Args;

use crate::disk::handle::Handle;
use crate::disk::layout::Layout;
use crate::disk::records::RecordKind;
use crate::disk::runlog;
use crate::error::{Error, Result};
use crate::git::{Repo, text_diff};
use crate::sys::fsutil;

/// Flags of `diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The loop's topic.
    pub topic: String,
    /// One iteration against the previous committed one (default: original → final).
    #[arg(long, value_name = "N")]
    pub iteration: Option<u32>,
    /// Only the counts of added and removed lines.
    #[arg(long)]
    pub stat: bool,
    /// Colour the output.
    #[arg(long, value_name = "WHEN", default_value = "auto")]
    pub color: Color,
}

/// What a code loop committed: one iteration's commit (from the loop's commit before it when the
/// agent committed some of its work itself), or with none named every committed iteration's,
/// oldest first; with `stat`, the files and their added and removed lines.
fn commits_patch(
    layout: &Layout,
    committed: &[(u32, String)],
    since: &std::collections::BTreeMap<u32, String>,
    iteration: Option<u32>,
    stat: bool,
) -> Result<String> {
    let repo = Repo::open(layout.root())?;
    let mut out = String::new();
    for (n, sha) in committed
        .iter()
        .filter(|(i, _)| iteration.is_none_or(|n| *i == n))
    {
        let patch = repo.commit_patch_from(since.get(n).map(String::as_str), sha)?;
        if iteration.is_none() {
            out.push_str(&format!(
                "# iteration {n}: commit {}\n",
                &sha[..sha.len().min(12)]
            ));
        }
        if stat {
            out.push_str(&patch_stat(&patch));
        } else {
            out.push_str(&patch);
        }
    }
    Ok(out)
}

/// The files of a patch and their counts, as `git diff --stat` prints them.
fn patch_stat(patch: &str) -> String {
    let files: Vec<(String, usize, usize)> = crate::git::patch::files(patch)
        .iter()
        .map(|f| (f.path.clone(), f.added.len(), f.removed.len()))
        .collect();
    stat_lines(&files)
}

/// The largest artifact version compared.
const CAP: u64 = 64 << 20;

/// Run `diff`.
pub fn run(a: &DiffArgs) -> Result<i32> {
    let text = crate::sys::term::printable(&patch_text(&a.topic, a.iteration, a.stat)?);
    let text = if a.color.on() && !a.stat {
        paint(&text)
    } else {
        text
    };
    super::common::page(&text);
    Ok(0)
}

/// What `iteration` of loop `topic` committed (the latest by default), as a patch or with
/// `stat` its counts.
pub fn patch_text(topic: &str, iteration: Option<u32>, stat: bool) -> Result<String> {
    let a = DiffLike {
        topic: topic.to_string(),
        iteration,
        stat,
    };
    let handle = Handle::open_present(&a.topic)?;
    let code = crate::quality::types::of(&handle.settings()).writes_repository();
    let layout = handle.layout;
    // Iterations that were committed, in order (a discarded attempt has no commit).
    let mut committed: Vec<(u32, String)> = Vec::new();
    // Where an iteration's change starts when the agent committed some of it itself.
    let mut since = std::collections::BTreeMap::new();
    let mut seen = Vec::new();
    runlog::for_each(&layout.runs(), |r| {
        if r.record == RecordKind::Iteration && r.attempt > 0 {
            seen.push((r.iteration, r.outcome));
            if let Some(c) = r.commit {
                if let Some(from) = r.since {
                    since.insert(r.iteration, from);
                }
                committed.push((r.iteration, c));
            }
        }
    })?;
    if let Some(n) = a.iteration
        && !committed.iter().any(|(i, _)| *i == n)
    {
        return Err(Error::input(
            match seen.iter().rev().find(|(i, _)| *i == n) {
                Some((_, o)) => format!(
                    "iteration {n} of `{}` was not committed (outcome {})",
                    a.topic,
                    o.as_str()
                ),
                None => format!(
                    "`{}` has no such iteration in {}",
                    a.topic,
                    layout.runs().display()
                ),
            },
        ));
    }
    let Some(last) = committed.last().map(|(i, _)| *i) else {
        return Err(Error::input(format!(
            "`{}` has no committed iteration yet",
            a.topic
        )));
    };
    // A code loop's work is the repository: its commits, across it (its artifact.md is the
    // spec, never changed).
    let text = if !code && layout.original_artifact().exists() {
        let (old, new) = match a.iteration {
            Some(n) => {
                let prev = committed.iter().rev().map(|(i, _)| *i).find(|i| *i < n);
                (
                    prev.map_or(layout.original_artifact(), |p| layout.iteration_artifact(p)),
                    layout.iteration_artifact(n),
                )
            }
            None if layout.final_artifact().exists() => {
                (layout.original_artifact(), layout.final_artifact())
            }
            None => (layout.original_artifact(), layout.iteration_artifact(last)),
        };
        versions(&layout, &old, &new, a.stat)?
    } else {
        commits_patch(&layout, &committed, &since, a.iteration, a.stat)?
    };
    Ok(text)
}

/// What [`patch_text`] is asked.
struct DiffLike {
    topic: String,
    iteration: Option<u32>,
    stat: bool,
}

/// Two versions of the artifact: the patch, or with `stat` its counts.
fn versions(layout: &Layout, old: &Path, new: &Path, stat: bool) -> Result<String> {
    let name = |p: &Path| {
        p.strip_prefix(layout.root())
            .unwrap_or(p)
            .display()
            .to_string()
    };
    let (a, b) = (
        fsutil::read_capped(old, CAP)?,
        fsutil::read_capped(new, CAP)?,
    );
    let d = text_diff::between(a.as_bytes(), &name(old), b.as_bytes(), &name(new))?;
    Ok(if stat {
        stat_text(&name(new), d.added, d.removed)
    } else {
        d.patch
    })
}

/// ` wiggum/final/artifact.md | 12 +++++++++---` and the totals line, like `git diff --stat`.
#[must_use]
pub fn stat_text(name: &str, added: usize, removed: usize) -> String {
    stat_lines(&[(name.to_string(), added, removed)])
}

/// One ` name | count +++--` line per file (names and counts aligned), then the totals line,
/// like `git diff --stat`.
fn stat_lines(files: &[(String, usize, usize)]) -> String {
    let width = files.iter().map(|f| f.0.chars().count()).max().unwrap_or(0);
    let most = files.iter().map(|f| f.1 + f.2).max().unwrap_or(0);
    let digits = most.to_string().len();
    // At most 50 marks, in proportion to the file with the most.
    let scale = |n: usize| {
        if most <= 50 {
            n
        } else {
            (n * 50).div_ceil(most)
        }
    };
    let mut out = String::new();
    for (name, added, removed) in files {
        out.push_str(&format!(
            " {name:<width$} | {:>digits$} {}{}\n",
            added + removed,
            "+".repeat(scale(*added)),
            "-".repeat(scale(*removed)),
        ));
    }
    let (added, removed) = files.iter().fold((0, 0), |(a, d), f| (a + f.1, d + f.2));
    // Like git, a count of zero is left out.
    let n = files.len();
    let mut counts = vec![format!("{n} file{} changed", if n == 1 { "" } else { "s" })];
    if added > 0 {
        counts.push(format!(
            "{added} insertion{}(+)",
            if added == 1 { "" } else { "s" }
        ));
    }
    if removed > 0 {
        counts.push(format!(
            "{removed} deletion{}(-)",
            if removed == 1 { "" } else { "s" }
        ));
    }
    out.push_str(&format!(" {}\n", counts.join(", ")));
    out
}

/// Colour a unified diff as git does: headers bold, hunks cyan, additions green, removals red.
#[must_use]
pub fn paint(patch: &str) -> String {
    let mut out = String::with_capacity(patch.len() + patch.len() / 4);
    for line in patch.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        let code =
            if body.starts_with("+++") || body.starts_with("---") || body.starts_with("diff ") {
                "1"
            } else if body.starts_with("@@") {
                "36"
            } else if body.starts_with('+') {
                "32"
            } else if body.starts_with('-') {
                "31"
            } else {
                ""
            };
        if code.is_empty() {
            out.push_str(line);
        } else {
            out.push_str(&format!("\x1b[{code}m{body}\x1b[m{nl}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_counts_like_git_and_scales_long_bars() {
        assert_eq!(
            stat_text("wiggum/final/artifact.md", 3, 1),
            " wiggum/final/artifact.md | 4 +++-\n 1 file changed, 3 insertions(+), 1 deletion(-)\n"
        );
        let long = stat_text("a.md", 300, 100);
        let bar = long.lines().next().unwrap().rsplit(' ').next().unwrap();
        assert_eq!(bar.matches('+').count(), 38);
        assert_eq!(bar.matches('-').count(), 13);
        assert!(stat_text("a.md", 2, 0).ends_with(" 1 file changed, 2 insertions(+)\n"));
    }

    /// A code loop's commit: the files and counts of the patch as git's own `--stat` has them.
    #[test]
    fn a_patchs_stat_is_gits() {
        let d = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .args(["-c", "user.name=u", "-c", "user.email=u@e"])
                .args(args)
                .current_dir(d.path())
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            String::from_utf8(out.stdout).unwrap()
        };
        git(&["init", "-q"]);
        std::fs::write(d.path().join("calc.py"), "a\nb\nc\n").unwrap();
        std::fs::write(d.path().join("NOTES.md"), "n\n").unwrap();
        git(&["add", "."]);
        git(&["commit", "-qm", "base"]);
        std::fs::write(d.path().join("calc.py"), "a\nB\nc\nd\n").unwrap();
        std::fs::write(d.path().join("NOTES.md"), "n\nmore\n").unwrap();
        std::fs::write(d.path().join("new_test.py"), "t\n".repeat(12)).unwrap();
        git(&["add", "."]);
        git(&["commit", "-qm", "change"]);
        let patch = git(&["show", "--format=", "HEAD"]);
        let want = git(&["show", "--format=", "--stat=200", "HEAD"]);
        assert_eq!(patch_stat(&patch), want);
    }

    #[test]
    fn paint_colours_additions_removals_hunks_and_headers() {
        assert_eq!(
            paint("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n same"),
            "\x1b[1m--- a/x\x1b[m\n\x1b[1m+++ b/x\x1b[m\n\x1b[36m@@ -1 +1 @@\x1b[m\n\x1b[31m-old\x1b[m\n\x1b[32m+new\x1b[m\n same"
        );
    }
}
