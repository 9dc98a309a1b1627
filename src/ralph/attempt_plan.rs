//! `fix_plan.md` as the current attempt found it (`wiggum/.fix_plan.attempt`): put back when the
//! attempt is discarded, so a retried iteration does not skip items the discarded one ticked.
//!
//! The file stays between attempts, saved through its spare (`sys::spare`), so an attempt makes
//! and frees no file here: while an attempt holds it, it is a header line and the plan; when none
//! does, it is empty. The loop's end removes both.

use crate::disk::layout::Layout;
use crate::error::Result;
use crate::sys::{fsutil, spare};

/// The first line of a plan held by an attempt.
const HELD: &str = "# fix_plan.md as the attempt found it\n";

/// Keep `plan` as the attempt about to run found it.
pub fn keep(layout: &Layout, plan: &str) -> Result<()> {
    let bytes = [HELD.as_bytes(), plan.as_bytes()].concat();
    spare::replace(&layout.plan_backup(), &bytes, "atomic-after-temp-write")
}

/// The plan an attempt holds, if one does. A file without the header line is an earlier
/// version's whole plan.
pub fn kept(layout: &Layout) -> Result<Option<String>> {
    Ok(fsutil::read_opt(&layout.plan_backup())?.and_then(|text| held(&text)))
}

/// What a file's `text` holds. Pure.
fn held(text: &str) -> Option<String> {
    match text.strip_prefix(HELD) {
        Some(plan) => Some(plan.to_string()),
        None if text.is_empty() => None,
        None => Some(text.to_string()),
    }
}

/// No attempt holds the plan any more.
pub fn forget(layout: &Layout) -> Result<()> {
    let path = layout.plan_backup();
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(());
    }
    spare::replace(&path, b"", "atomic-after-temp-write")
}

/// The loop is done: its spare goes, and the file with it when no attempt holds the plan.
pub fn discard(layout: &Layout) {
    let path = layout.plan_backup();
    spare::discard(&path);
    if matches!(kept(layout), Ok(None)) {
        let _gone = fsutil::remove_file_opt(&path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_is_held_until_forgotten_and_an_earlier_versions_file_is_a_whole_plan() {
        let d = tempfile::tempdir().unwrap();
        let l = Layout::new(d.path());
        std::fs::create_dir_all(l.wiggum()).unwrap();
        assert_eq!(kept(&l).unwrap(), None);
        // An empty plan is a plan.
        for plan in ["- [ ] one\n", ""] {
            keep(&l, plan).unwrap();
            assert_eq!(kept(&l).unwrap().as_deref(), Some(plan));
        }
        forget(&l).unwrap();
        assert_eq!(kept(&l).unwrap(), None);
        std::fs::write(l.plan_backup(), "- [x] as an earlier version kept it\n").unwrap();
        assert_eq!(
            kept(&l).unwrap().as_deref(),
            Some("- [x] as an earlier version kept it\n")
        );
        forget(&l).unwrap();
        discard(&l);
        assert!(!l.plan_backup().exists());
        let left: Vec<_> = std::fs::read_dir(l.wiggum()).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }
}
