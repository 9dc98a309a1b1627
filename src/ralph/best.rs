//! The loop's result: which kept iteration's artifact is `wiggum/final/artifact.md` (a
//! document loop's; a code loop's result is its repository). With `[gate] on_gate_fail =
//! "keep-best"` it is the best so far by the gate's score (the earlier among equals: a later
//! iteration must do better to replace it); otherwise the latest accepted. The copy is written
//! before the commit of the iteration that changes it, so it is committed with that iteration,
//! and put back at every other run: from the iteration being committed, or from what HEAD holds
//! of an earlier kept iteration — never from the work tree, where a later run may have edited
//! it. Before an iteration was kept there is no result, and a file a run left there is removed.

use crate::disk::layout::Layout;
use crate::disk::state::Best;
use crate::error::Result;
use crate::gate::{GateRecord, Verdict};
use crate::git::Repo;
use crate::sys::fsutil;

/// Iteration `n` as a candidate for the result, judged by `gate` (none: no gate ran) against
/// the pass score `pass`. Pure.
#[must_use]
pub fn candidate(n: u32, gate: Option<&GateRecord>, pass: f64) -> Best {
    Best {
        iteration: n,
        score: gate.and_then(|g| g.final_score),
        passed: gate.is_none_or(|g| g.verdict == Verdict::Pass),
        pass,
    }
}

/// Whether `next` becomes the result in place of `prev`. Pure.
#[must_use]
pub fn replaces(prev: Option<&Best>, next: &Best, keep_best: bool) -> bool {
    let Some(prev) = prev else {
        return true;
    };
    if !keep_best {
        return true;
    }
    match (prev.score, next.score) {
        (Some(p), Some(n)) => n > p,
        // What no gate scored is compared by its order alone.
        _ => true,
    }
}

/// The result after iteration `next` was kept (and before its commit): `next` when it replaces
/// `prev`, else `prev`. The copy is written from that iteration's artifact when it differs (it
/// is then committed).
pub fn settle(
    layout: &Layout,
    repo: &Repo,
    prev: Option<&Best>,
    next: Best,
    keep_best: bool,
) -> Result<Best> {
    let best = match prev {
        Some(p) if !replaces(Some(p), &next, keep_best) => *p,
        _ => next,
    };
    if best.iteration == next.iteration {
        write_copy(layout, best.iteration)?;
    } else {
        put_back(layout, repo, Some(best.iteration))?;
    }
    Ok(best)
}

/// Put the result back as the loop left it: kept iteration `kept`'s artifact as HEAD holds it
/// (its work-tree file only when no commit holds it: committing is off), or — before any
/// iteration was kept — no file at all (one a run left there is removed, and said).
pub fn put_back(layout: &Layout, repo: &Repo, kept: Option<u32>) -> Result<()> {
    let result = layout.final_artifact();
    let Some(k) = kept else {
        if std::fs::symlink_metadata(&result).is_ok() {
            tracing::warn!(
                "{}: no iteration was kept yet, so there is no result; the file a run left there is removed",
                result.display()
            );
            fsutil::remove_dir_all_opt(&result)?;
        }
        return Ok(());
    };
    let from = layout.iteration_artifact(k);
    let held = from
        .strip_prefix(layout.root())
        .ok()
        .and_then(|rel| repo.head_blob(rel));
    let Some(bytes) = held else {
        return write_copy(layout, k);
    };
    if std::fs::read(&result).is_ok_and(|now| now == bytes) {
        return Ok(());
    }
    fsutil::create_dir_all(&layout.final_dir())?;
    fsutil::remove_dir_all_opt(&result)?;
    fsutil::atomic_write(&result, &bytes)
}

/// Make `wiggum/final/artifact.md` iteration `n`'s artifact in the work tree, byte for byte
/// (nothing written when it already is, or when that iteration has none).
fn write_copy(layout: &Layout, n: u32) -> Result<()> {
    let from = layout.iteration_artifact(n);
    if !from.is_file() || fsutil::same_content(&from, &layout.final_artifact())? {
        return Ok(());
    }
    fsutil::create_dir_all(&layout.final_dir())?;
    fsutil::copy_file(&from, &layout.final_artifact())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(iteration: u32, score: Option<f64>) -> Best {
        Best {
            iteration,
            score,
            passed: score.is_some_and(|s| s >= 8.0),
            pass: 8.0,
        }
    }

    #[test]
    fn keep_best_keeps_the_highest_score_and_the_earlier_among_equals() {
        for (prev, next, keep_best, want) in [
            (None, b(1, Some(5.0)), true, true),
            (Some(b(1, Some(6.7))), b(2, Some(5.2)), true, false),
            // A tie keeps the earlier: an emptied artifact scoring as low as the best does not replace it.
            (Some(b(1, Some(6.7))), b(2, Some(6.7)), true, false),
            (Some(b(1, Some(0.0))), b(2, Some(0.0)), true, false),
            (Some(b(1, Some(6.7))), b(2, Some(7.1)), true, true),
            (Some(b(1, Some(6.7))), b(2, None), true, true),
            (Some(b(1, None)), b(2, Some(3.0)), true, true),
            // Without keep-best, the latest accepted iteration is the result.
            (Some(b(1, Some(9.0))), b(2, Some(8.1)), false, true),
        ] {
            assert_eq!(
                replaces(prev.as_ref(), &next, keep_best),
                want,
                "{prev:?} {next:?} {keep_best}"
            );
        }
    }

    #[test]
    fn the_copy_is_the_best_iteration_s_artifact_as_committed() {
        let d = tempfile::tempdir().unwrap();
        let l = Layout::new(d.path());
        let repo = Repo::open_or_init(d.path()).unwrap();
        for (n, text) in [(1, "# one\n"), (2, "# two\n")] {
            std::fs::create_dir_all(l.iteration_dir(n)).unwrap();
            std::fs::write(l.iteration_artifact(n), text).unwrap();
        }
        let first = settle(&l, &repo, None, b(1, Some(6.7)), true).unwrap();
        let one = l.iteration_artifact(1);
        let rel = one.strip_prefix(d.path()).unwrap().to_path_buf();
        repo.commit_paths(&[rel], "one", "t", "t@example.com")
            .unwrap();
        // A later run edits the kept iteration's file: the result is what the commit holds.
        std::fs::write(&one, "# one, edited later\n").unwrap();
        let kept = settle(&l, &repo, Some(&first), b(2, Some(5.0)), true).unwrap();
        assert_eq!(kept.iteration, 1);
        assert_eq!(
            std::fs::read_to_string(l.final_artifact()).unwrap(),
            "# one\n"
        );
        let latest = settle(&l, &repo, Some(&first), b(2, Some(5.0)), false).unwrap();
        assert_eq!(latest.iteration, 2);
        assert_eq!(
            std::fs::read_to_string(l.final_artifact()).unwrap(),
            "# two\n"
        );
        // Before any iteration was kept there is no result.
        put_back(&l, &repo, None).unwrap();
        assert!(!l.final_artifact().exists());
    }
}
