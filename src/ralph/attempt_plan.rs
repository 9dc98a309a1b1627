//! `fix_plan.md` as the current attempt found it (`fix_plan.attempt` in the loop's records, out
//! of the agent's reach): put back when the attempt is discarded, so a retried iteration does not
//! skip items the discarded one ticked.
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
    fsutil::create_dir_all(layout.records())?;
    let bytes = [HELD.as_bytes(), plan.as_bytes()].concat();
    spare::replace(&layout.plan_backup(), &bytes, "atomic-after-temp-write")
}

/// The plan an attempt holds, if one does. A file without the header line is an earlier
/// version's whole plan. Whatever cannot be read as one (a link, a directory, a file past the
/// loop's bound: with the sandbox off an agent reaches the records) holds none: it is said,
/// removed, and the loop goes on.
pub fn kept(layout: &Layout) -> Result<Option<String>> {
    let path = layout.plan_backup();
    let read = match std::fs::symlink_metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Ok(m) if !m.is_file() => Err(format!("{} is not a plain file", path.display())),
        _ => fsutil::read_opt(&path).map_err(|e| e.to_string()),
    };
    match read {
        Ok(text) => Ok(text.and_then(|text| held(&text))),
        Err(why) => {
            tracing::warn!("{why}; no plan is put back from it, and it is removed");
            fsutil::remove_dir_all_opt(&path)?;
            Ok(None)
        }
    }
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
        let left: Vec<_> = std::fs::read_dir(l.records()).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn what_cannot_be_read_as_a_plan_holds_none_and_goes() {
        let d = tempfile::tempdir().unwrap();
        let l = Layout::new(d.path());
        std::fs::create_dir_all(l.records()).unwrap();
        let victim = d.path().join("victim");
        std::fs::write(
            &victim,
            "# fix_plan.md as the attempt found it\n- [x] theirs\n",
        )
        .unwrap();
        std::os::unix::fs::symlink(&victim, l.plan_backup()).unwrap();
        std::fs::create_dir_all(l.records().join("x")).unwrap();
        for plant in ["link", "directory"] {
            if plant == "directory" {
                std::fs::create_dir_all(l.plan_backup().join("a/b")).unwrap();
            }
            assert_eq!(kept(&l).unwrap(), None, "{plant}");
            assert!(
                std::fs::symlink_metadata(l.plan_backup()).is_err(),
                "{plant}"
            );
        }
        assert!(victim.is_file());
    }
}
