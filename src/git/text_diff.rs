//! A unified diff of two texts (an artifact version against another), by libgit2's own diff
//! of buffers, with its line counts for `--stat`.

use git2::Patch;

use crate::error::{Error, Result};

/// A patch and its counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextDiff {
    /// Unified diff text (`--- a/… +++ b/… @@ …`), empty when the texts are equal.
    pub patch: String,
    /// Lines added.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
}

/// Diff `old` (shown as `a/<old_name>`) against `new` (`b/<new_name>`). Bytes that are not
/// UTF-8 are shown lossily.
pub fn between(old: &[u8], old_name: &str, new: &[u8], new_name: &str) -> Result<TextDiff> {
    let fail = |e: git2::Error| Error::runtime(format!("diff {old_name} and {new_name}: {e}"));
    let mut patch = Patch::from_buffers(
        old,
        Some(old_name.as_ref()),
        new,
        Some(new_name.as_ref()),
        None,
    )
    .map_err(fail)?;
    let (_, added, removed) = patch.line_stats().map_err(fail)?;
    let buf = patch.to_buf().map_err(fail)?;
    Ok(TextDiff {
        patch: String::from_utf8_lossy(&buf).into_owned(),
        added,
        removed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_line_and_an_added_one_are_counted_and_shown() {
        let d = between(
            b"# A\n\nold line\n",
            "original/artifact.md",
            b"# A\n\nnew line\nmore\n",
            "iteration-001/artifact.md",
        )
        .unwrap();
        assert_eq!((d.added, d.removed), (2, 1));
        assert!(
            d.patch
                .contains("--- a/original/artifact.md\n+++ b/iteration-001/artifact.md\n"),
            "{}",
            d.patch
        );
        assert!(
            d.patch.contains("-old line\n+new line\n+more\n"),
            "{}",
            d.patch
        );
        let same = between(b"x\n", "a", b"x\n", "b").unwrap();
        assert_eq!((same.added, same.removed, same.patch.as_str()), (0, 0, ""));
    }
}
