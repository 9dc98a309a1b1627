//! The loop's result: which accepted iteration's artifact is `wiggum/final/artifact.md` (a
//! document loop's; a code loop's result is its repository). With `[gate] on_gate_fail =
//! "keep-best"` it is the best so far by the gate's score (the later among equals); otherwise
//! the latest accepted. The copy is written before the commit of the iteration that changes it,
//! so it is committed with that iteration, and put back from the best iteration's artifact at
//! every other accepted iteration (an agent's edit of it is not the loop's result).

use crate::disk::layout::Layout;
use crate::disk::state::Best;
use crate::error::Result;
use crate::gate::{GateRecord, Verdict};
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
        (Some(p), Some(n)) => n >= p,
        // What no gate scored is compared by its order alone.
        _ => true,
    }
}

/// The result after iteration `n` was kept: `next` when it replaces `prev`, else `prev`. The
/// copy is written from that iteration's artifact when it differs (it is then committed).
pub fn settle(layout: &Layout, prev: Option<&Best>, next: Best, keep_best: bool) -> Result<Best> {
    let best = match prev {
        Some(p) if !replaces(Some(p), &next, keep_best) => *p,
        _ => next,
    };
    write_copy(layout, best.iteration)?;
    Ok(best)
}

/// Make `wiggum/final/artifact.md` iteration `n`'s artifact, byte for byte (nothing written when
/// it already is, or when that iteration has none).
pub fn write_copy(layout: &Layout, n: u32) -> Result<()> {
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
    fn keep_best_keeps_the_highest_score_and_the_later_among_equals() {
        for (prev, next, keep_best, want) in [
            (None, b(1, Some(5.0)), true, true),
            (Some(b(1, Some(6.7))), b(2, Some(5.2)), true, false),
            (Some(b(1, Some(6.7))), b(2, Some(6.7)), true, true),
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
    fn the_copy_is_the_best_iteration_s_artifact() {
        let d = tempfile::tempdir().unwrap();
        let l = Layout::new(d.path());
        for (n, text) in [(1, "# one\n"), (2, "# two\n")] {
            std::fs::create_dir_all(l.iteration_dir(n)).unwrap();
            std::fs::write(l.iteration_artifact(n), text).unwrap();
        }
        let first = settle(&l, None, b(1, Some(6.7)), true).unwrap();
        let kept = settle(&l, Some(&first), b(2, Some(5.0)), true).unwrap();
        assert_eq!(kept.iteration, 1);
        assert_eq!(
            std::fs::read_to_string(l.final_artifact()).unwrap(),
            "# one\n"
        );
        let latest = settle(&l, Some(&first), b(2, Some(5.0)), false).unwrap();
        assert_eq!(latest.iteration, 2);
        assert_eq!(
            std::fs::read_to_string(l.final_artifact()).unwrap(),
            "# two\n"
        );
    }
}
