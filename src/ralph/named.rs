//! Files the plan names (`- [ ] Fix the parser in \`src/parse.rs\``), fingerprinted before and
//! after a run: an agent that changed one of them made progress even where the loop's own
//! snapshot (the artifact directory) shows nothing, so the no-progress breaker does not count
//! it. Finding the names is pure; the fingerprints read metadata only, never following a link.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// At most this many named files are watched per iteration.
const MAX_NAMED: usize = 64;

/// The paths an item text names: code spans and bare words that look like a relative file path
/// (a `/` or a file extension, no spaces, no URL, no `..`), in order, each once.
#[must_use]
pub fn paths_in(plan: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    crate::ralph::fix_plan::each_text(plan, |text| {
        for (i, part) in text.trim().split('`').enumerate() {
            let spanned = i % 2 == 1;
            let mut consider = |c: &str| {
                let c = c.trim_end_matches([',', '.', ';', ':', ')', '!', '?']);
                let c = c.trim_start_matches('(');
                if looks_like_path(c, spanned) && !out.iter().any(|o| o == c) {
                    out.push(c.to_string());
                }
            };
            if spanned {
                consider(part.trim());
            } else {
                // A path has a `/` or an extension: a word without either is no path (most of
                // a plan's words, and plans run to thousands of items).
                part.split_whitespace()
                    .filter(|w| w.contains(['/', '.']))
                    .for_each(consider);
            }
        }
        out.len() < MAX_NAMED
    });
    out.truncate(MAX_NAMED);
    out
}

/// A bare word needs a `/` or an extension of two characters or more (`e.g.` is no file); a
/// code span may name `main.c`.
fn looks_like_path(s: &str, spanned: bool) -> bool {
    if s.is_empty() || s.contains(char::is_whitespace) || s.contains("://") || s.len() > 255 {
        return false;
    }
    let p = Path::new(s);
    if !p
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return false;
    }
    let ext = p.extension().and_then(|e| e.to_str()).is_some_and(|e| {
        (1..=8).contains(&e.len())
            && (spanned || e.len() >= 2)
            && e.chars().all(|c| c.is_ascii_alphanumeric())
            && !e.chars().all(|c| c.is_ascii_digit())
    });
    let name_ok = p
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.chars().all(|c| c.is_alphanumeric() || "._-".contains(c)));
    name_ok && (ext || s.contains('/'))
}

/// What a named file looked like: absent, or its size, change time and inode.
type Print = Option<(u64, i64, i64, u64)>;

/// The fingerprints of the named files, each looked up under the artifact directory, else
/// under the repository's work tree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fingerprints(BTreeMap<String, (PathBuf, Print)>);

impl Fingerprints {
    /// Fingerprint the files `plan` names.
    #[must_use]
    pub fn take(plan: &str, artifact_dir: &Path, workdir: &Path) -> Fingerprints {
        let mut map = BTreeMap::new();
        for name in paths_in(plan) {
            let in_artifact = artifact_dir.join(&name);
            let path = if in_artifact.symlink_metadata().is_ok() {
                in_artifact
            } else {
                workdir.join(&name)
            };
            let print = print(&path);
            map.insert(name, (path, print));
        }
        Fingerprints(map)
    }

    /// The named files whose fingerprint differs now.
    #[must_use]
    pub fn changed(&self) -> Vec<String> {
        self.0
            .iter()
            .filter(|(_, (path, before))| print(path) != *before)
            .map(|(name, _)| name.clone())
            .collect()
    }
}

fn print(path: &Path) -> Print {
    use std::os::unix::fs::MetadataExt;
    let m = path.symlink_metadata().ok()?;
    Some((m.len(), m.ctime(), m.ctime_nsec(), m.ino()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_named_in_items() {
        let plan = "# Plan\n\
            - [ ] Fix the parser in `src/parse.rs` and its test tests/parse_test.py.\n\
            - [x] Update docs/guide.md (twice: docs/guide.md)\n\
            - [ ] Read https://docs.rs/x/1.2/index.html and `../etc/passwd`, `/etc/hosts`\n\
            - [ ] Bump to version 1.2 or `v2.0`, e.g. the `cargo test` run\n\
            - [ ] Edit `Makefile` and `scripts/run all.sh`\n\
            Not an item: src/other.rs\n";
        assert_eq!(
            paths_in(plan),
            ["src/parse.rs", "tests/parse_test.py", "docs/guide.md"]
        );
    }

    #[test]
    fn a_named_file_written_outside_the_artifact_counts_and_an_untouched_one_does_not() {
        let repo = tempfile::tempdir().unwrap();
        let art = repo.path().join("notes");
        std::fs::create_dir_all(repo.path().join("src")).unwrap();
        std::fs::create_dir_all(&art).unwrap();
        std::fs::write(repo.path().join("src/lib.rs"), "fn a() {}\n").unwrap();
        std::fs::write(art.join("todo.md"), "x\n").unwrap();
        let plan = "- [ ] Change `src/lib.rs`\n- [ ] Keep `todo.md`\n- [ ] Add `src/new.rs`\n";
        let before = Fingerprints::take(plan, &art, repo.path());
        assert!(before.changed().is_empty());
        std::fs::write(repo.path().join("src/lib.rs"), "fn b() {}\n").unwrap();
        std::fs::write(repo.path().join("src/new.rs"), "\n").unwrap();
        assert_eq!(before.changed(), ["src/lib.rs", "src/new.rs"]);
    }
}
