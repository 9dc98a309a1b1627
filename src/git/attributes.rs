//! Whether any attribute source could name an attribute at all. libgit2 answers one attribute
//! of one path at a time, and each answer checks every source for change and resolves the
//! path's directory again: a dozen system calls. A commit asks two attributes of every path it
//! stores, a status refresh six of every path it cannot settle by hashing. Most repositories
//! name none of them anywhere: the sources are read once for the lot, and libgit2 is asked only
//! when one of them could.
//!
//! An attribute is set only by a line of a source that names it, or names a macro whose
//! definition (`[attr]name …`, itself a line of a source) does — the one built-in macro,
//! `binary`, unsets `text`, `diff` and `merge`. A source whose text holds none of the names
//! cannot set them. Anything that cannot be told so (a source unreadable or too large, a
//! `.gitattributes` that is no plain file, one only the index holds) could.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use git2::Repository;

/// The attributes under which git may convert content between the work tree and the object
/// database.
pub const CONVERTING: [&str; 6] = [
    "text",
    "eol",
    "crlf",
    "filter",
    "ident",
    "working-tree-encoding",
];

/// The largest source read; a larger one could name anything.
const LARGEST: u64 = 1024 * 1024;

/// Whether a source git reads for the repository-relative `paths` could set one of `names`:
/// the system's, the user's, the repository's `info/attributes`, and the `.gitattributes` of
/// each directory above a path (in the work tree, or in the index where the work tree has
/// none, as libgit2's `FILE_THEN_INDEX` reads them).
pub fn could_set<'a>(
    repo: &Repository,
    workdir: &Path,
    paths: impl IntoIterator<Item = &'a Path>,
    names: &[&str],
) -> bool {
    could_set_among(&shared_sources(repo), repo, workdir, paths, names)
}

/// [`could_set`] with the sources every path shares given.
fn could_set_among<'a>(
    shared: &[PathBuf],
    repo: &Repository,
    workdir: &Path,
    paths: impl IntoIterator<Item = &'a Path>,
    names: &[&str],
) -> bool {
    let mut words: Vec<&str> = names.to_vec();
    if names.iter().any(|n| ["text", "diff", "merge"].contains(n)) {
        words.push("binary");
    }
    let holds = |file: &Path| source_could(file, &words);
    if shared.iter().any(|s| holds(s)) {
        return true;
    }
    let dirs: BTreeSet<&Path> = paths
        .into_iter()
        .flat_map(|p| p.ancestors().skip(1))
        .collect();
    let mut index = None;
    dirs.into_iter().any(|dir| {
        let rel = dir.join(".gitattributes");
        match std::fs::symlink_metadata(workdir.join(&rel)) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let index = index.get_or_insert_with(|| repo.index().ok());
                index.as_ref().is_none_or(|i| i.get_path(&rel, 0).is_some())
            }
            Ok(m) if m.is_file() => holds(&workdir.join(&rel)),
            _ => true,
        }
    })
}

/// The sources every path shares: the system's, the user's (`core.attributesFile`, and the
/// XDG place git reads when it is unset), and the repository's own.
fn shared_sources(repo: &Repository) -> Vec<PathBuf> {
    let mut out = vec![PathBuf::from("/etc/gitattributes")];
    if let Some(f) = repo
        .config()
        .ok()
        .and_then(|c| c.get_path("core.attributesfile").ok())
    {
        out.push(f);
    }
    match std::env::var_os("XDG_CONFIG_HOME").filter(|x| !x.is_empty()) {
        Some(x) => out.push(Path::new(&x).join("git/attributes")),
        None => out
            .extend(std::env::var_os("HOME").map(|h| Path::new(&h).join(".config/git/attributes"))),
    }
    out.push(repo.path().join("info/attributes"));
    out.push(repo.commondir().join("info/attributes"));
    out
}

/// Whether the source `file` could name one of `words`: it holds one's text, or cannot be read
/// whole. A source that is not there names nothing. Opened without blocking: a FIFO put in a
/// `.gitattributes`' place since it was looked at reads empty.
fn source_could(file: &Path, words: &[&str]) -> bool {
    let f = match crate::sys::fsutil::open_read(file) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return false,
        Err(_) => return true,
    };
    let mut bytes = Vec::new();
    match f.take(LARGEST + 1).read_to_end(&mut bytes) {
        Ok(n) if n as u64 <= LARGEST => {}
        _ => return true,
    }
    words
        .iter()
        .any(|w| bytes.windows(w.len()).any(|b| b == w.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> (tempfile::TempDir, Repository) {
        let d = tempfile::tempdir().unwrap();
        let r = Repository::init(d.path()).unwrap();
        (d, r)
    }

    /// Whether libgit2 itself finds `name` set (or unset) on `p`.
    fn libgit2_has(r: &Repository, p: &str, name: &str) -> bool {
        r.get_attr(Path::new(p), name, git2::AttrCheckFlags::FILE_THEN_INDEX)
            .ok()
            .flatten()
            .is_some()
    }

    #[test]
    fn a_source_that_names_an_attribute_or_a_macro_setting_it_is_found() {
        let (d, r) = repo();
        let w = d.path();
        std::fs::create_dir_all(w.join("docs/deep")).unwrap();
        let (filters, converts) = (super::super::filters::EXTERNAL, CONVERTING);
        // The machine's and the user's sources are left out: they are not this test's.
        let shared = [r.path().join("info/attributes")];
        let asks = |p: &str, names: &[&str]| could_set_among(&shared, &r, w, [Path::new(p)], names);
        // Nothing names anything.
        assert!(!asks("docs/deep/a.md", &converts));
        // A deep directory's source, for the paths beneath it only.
        std::fs::write(w.join("docs/deep/.gitattributes"), "*.md filter=lfs\n").unwrap();
        assert!(asks("docs/deep/a.md", &filters) && libgit2_has(&r, "docs/deep/a.md", "filter"));
        assert!(!asks("docs/b.md", &filters));
        // A macro defined in the repository's own source, used at the top.
        std::fs::remove_file(w.join("docs/deep/.gitattributes")).unwrap();
        std::fs::create_dir_all(r.path().join("info")).unwrap();
        std::fs::write(r.path().join("info/attributes"), "[attr]big filter=lfs\n").unwrap();
        std::fs::write(w.join(".gitattributes"), "*.bin big\n").unwrap();
        assert!(asks("x.bin", &filters) && libgit2_has(&r, "x.bin", "filter"));
        std::fs::remove_file(r.path().join("info/attributes")).unwrap();
        // The built-in `binary` unsets `text`.
        std::fs::write(w.join(".gitattributes"), "*.png binary\n").unwrap();
        assert!(asks("a.png", &converts) && libgit2_has(&r, "a.png", "text"));
        assert!(!asks("a.png", &filters));
        // A `.gitattributes` the index holds where the work tree has none.
        std::fs::write(w.join(".gitattributes"), "*.txt eol=crlf\n").unwrap();
        let mut index = r.index().unwrap();
        index.add_path(Path::new(".gitattributes")).unwrap();
        index.write().unwrap();
        std::fs::remove_file(w.join(".gitattributes")).unwrap();
        assert!(asks("a.txt", &converts) && libgit2_has(&r, "a.txt", "eol"));
        // One that is no plain file could name anything.
        index.remove_path(Path::new(".gitattributes")).unwrap();
        index.write().unwrap();
        std::fs::create_dir(w.join(".gitattributes")).unwrap();
        assert!(asks("a.txt", &converts));
    }
}
