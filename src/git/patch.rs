//! A unified patch read back by file: its path, the lines it adds and removes, whether it
//! deletes the file. What the gate's hygiene judge, a code loop's line counts and `diff --stat`
//! read of a patch the loop made itself (`Repo::commit_patch`, `Repo::worktree_patch`). Pure.

/// One file of a patch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FilePatch {
    /// Its path (the `b/` side).
    pub path: String,
    /// The lines it adds, without their `+`.
    pub added: Vec<String>,
    /// The lines it removes, without their `-`.
    pub removed: Vec<String>,
    /// The patch deletes the file.
    pub deleted: bool,
}

/// The files of `patch`, in its order.
#[must_use]
pub fn files(patch: &str) -> Vec<FilePatch> {
    let mut out: Vec<FilePatch> = Vec::new();
    for line in patch.lines() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            let path = rest.rsplit_once(" b/").map_or(rest, |(_, b)| b).to_string();
            out.push(FilePatch {
                path,
                ..FilePatch::default()
            });
            continue;
        }
        let Some(f) = out.last_mut() else { continue };
        if line.starts_with("deleted file mode") {
            f.deleted = true;
        } else if line.starts_with("+++ ") || line.starts_with("--- ") {
            // The file's header, not a line of it.
        } else if let Some(l) = line.strip_prefix('+') {
            f.added.push(l.to_string());
        } else if let Some(l) = line.strip_prefix('-') {
            f.removed.push(l.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_is_read_back_by_file() {
        let patch = "diff --git a/calc.py b/calc.py\nindex 1..2 100644\n--- a/calc.py\n+++ b/calc.py\n@@ -1 +1,2 @@\n-a\n+b\n+c\n context\ndiff --git a/old.py b/old.py\ndeleted file mode 100644\n--- a/old.py\n+++ /dev/null\n-gone\n";
        let f = files(patch);
        assert_eq!(f.len(), 2);
        assert_eq!(
            (
                f[0].path.as_str(),
                f[0].added.len(),
                f[0].removed.len(),
                f[0].deleted
            ),
            ("calc.py", 2, 1, false)
        );
        assert_eq!(
            (f[1].path.as_str(), f[1].removed.as_slice(), f[1].deleted),
            ("old.py", &["gone".to_string()][..], true)
        );
        assert!(files("no patch").is_empty());
    }
}
