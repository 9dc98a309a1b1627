//! The files git reads its rules from in the work tree, `.gitignore` and `.gitattributes`: libgit2
//! opens one that is a FIFO and waits for a writer for ever (the supervisor would hang, deaf to a
//! stop; git would too). One that is a FIFO, a socket or a device, found where the supervisor is
//! about to ask libgit2, is an agent's plant: it is removed first, and said; so is a link to one.
//! (A link to a plain file is left: it may be the user's. libgit2 reads what it points to where
//! git reads nothing — the one case where a commit's conversion can differ from `git add`'s;
//! docs/security.md.)

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The names of the rule files in a directory.
const NAMES: [&str; 2] = [".gitignore", ".gitattributes"];

/// Remove the rule files of the directory `dir` that are FIFOs, sockets or devices, or links to
/// one; the removed ones.
pub fn clear_odd_in(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for name in NAMES {
        let p = dir.join(name);
        let Ok(m) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        // A link is left unless what it names would block too.
        if !odd(&p) {
            continue;
        }
        match std::fs::remove_file(&p) {
            Ok(()) => {
                tracing::warn!(
                    "{}: a {} where git reads its rules; removed (git and libgit2 would wait on it for ever)",
                    p.display(),
                    kind_of(&m),
                );
                out.push(p);
            }
            Err(e) => tracing::warn!("{}: cannot remove it: {e}", p.display()),
        }
    }
    out
}

/// [`clear_odd_in`] for `dir` and every directory beneath it (links not followed, `.git` and
/// nested repositories left out).
pub fn clear_odd_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = clear_odd_in(dir);
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        if e.file_name() == ".git" || !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let sub = e.path();
        if !sub.join(".git").exists() {
            out.extend(clear_odd_under(&sub));
        }
    }
    out
}

/// [`clear_odd_in`] for the directories from the work tree `root` down to each of `paths`
/// (relative to it), each once.
pub fn clear_odd_above<'a>(root: &Path, paths: impl IntoIterator<Item = &'a Path>) -> Vec<PathBuf> {
    let dirs: BTreeSet<&Path> = paths
        .into_iter()
        .flat_map(|p| p.ancestors().skip(1))
        .collect();
    dirs.into_iter()
        .flat_map(|d| clear_odd_in(&root.join(d)))
        .collect()
}

/// The files of a git directory libgit2 opens by name when it opens the repository, reads a
/// ref, an object or the index, or asks about ignored paths and attributes.
const GIT_FILES: [&str; 10] = [
    "HEAD",
    "config",
    "config.worktree",
    "commondir",
    "packed-refs",
    "index",
    "info/exclude",
    "info/attributes",
    "info/grafts",
    "objects/info/alternates",
];

/// Remove what in the git directory `git_dir` libgit2 would wait on for ever: its named files
/// and its refs that are FIFOs, sockets or devices (or links to one). Only an agent with `.git`
/// writable (the sandbox off) can leave one; the protected files among them are put back after
/// the run as any change of theirs. The removed ones.
pub fn clear_odd_git_dir(git_dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = GIT_FILES
        .iter()
        .map(|f| git_dir.join(f))
        .filter(|p| odd(p))
        .collect();
    refs_under(&git_dir.join("refs"), &mut out, 0);
    out.retain(|p| match std::fs::remove_file(p) {
        Ok(()) => {
            tracing::warn!("{}: not a file git reads; removed", p.display());
            true
        }
        Err(_) => false,
    });
    out
}

/// The odd entries under the refs directory `dir` (at most 32 levels down), into `out`.
fn refs_under(dir: &Path, out: &mut Vec<PathBuf>, depth: u32) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if e.file_type().is_ok_and(|t| t.is_dir()) && depth < 32 {
            refs_under(&p, out, depth + 1);
        } else if odd(&p) {
            out.push(p);
        }
    }
}

/// Whether `p` is a FIFO, a socket or a device, or a link to one (stat opens nothing).
fn odd(p: &Path) -> bool {
    let blocks = |m: &std::fs::Metadata| !(m.is_file() || m.is_dir());
    match std::fs::symlink_metadata(p) {
        Ok(m) if m.file_type().is_symlink() => std::fs::metadata(p).is_ok_and(|t| blocks(&t)),
        Ok(m) => blocks(&m),
        Err(_) => false,
    }
}

/// What a file that is not a plain one is, for people.
fn kind_of(m: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = m.file_type();
    if t.is_fifo() {
        "FIFO"
    } else if t.is_socket() {
        "socket"
    } else {
        "device"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_where_git_reads_its_rules_is_removed_a_plain_file_and_a_link_kept() {
        let d = tempfile::tempdir().unwrap();
        let w = d.path();
        std::fs::create_dir_all(w.join("a/b")).unwrap();
        std::fs::write(w.join(".gitignore"), "target/\n").unwrap();
        nix::unistd::mkfifo(&w.join("a/b/.gitattributes"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", w.join("a/.gitignore")).unwrap();
        nix::unistd::mkfifo(&w.join("pipe"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        std::os::unix::fs::symlink("pipe", w.join(".gitattributes")).unwrap();
        // A nested repository's own rules are its own.
        std::fs::create_dir_all(w.join("nested/.git")).unwrap();
        nix::unistd::mkfifo(&w.join("nested/.gitignore"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let mut removed = clear_odd_under(w);
        removed.sort();
        assert_eq!(
            removed,
            [w.join(".gitattributes"), w.join("a/b/.gitattributes")]
        );
        assert!(w.join(".gitignore").is_file());
        assert!(std::fs::symlink_metadata(w.join("a/.gitignore")).is_ok());
        assert!(std::fs::symlink_metadata(w.join("nested/.gitignore")).is_ok());
        // Above paths: only the directories on their way.
        nix::unistd::mkfifo(&w.join("a/b/.gitattributes"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(clear_odd_above(w, [Path::new("a/x.txt")]).is_empty());
        assert_eq!(
            clear_odd_above(w, [Path::new("a/b/c/y.txt")]),
            [w.join("a/b/.gitattributes")]
        );
    }

    #[test]
    fn what_libgit2_would_wait_on_in_a_git_directory_is_removed() {
        let d = tempfile::tempdir().unwrap();
        let g = d.path();
        std::fs::create_dir_all(g.join("refs/heads/deep")).unwrap();
        std::fs::create_dir_all(g.join("objects/info")).unwrap();
        std::fs::create_dir_all(g.join("info")).unwrap();
        std::fs::write(g.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(g.join("refs/heads/main"), "x\n").unwrap();
        let fifo = |p: &str| {
            nix::unistd::mkfifo(&g.join(p), nix::sys::stat::Mode::S_IRWXU).unwrap();
        };
        for p in [
            "config",
            "packed-refs",
            "objects/info/alternates",
            "refs/heads/deep/x",
        ] {
            fifo(p);
        }
        fifo("pipe");
        std::os::unix::fs::symlink("../pipe", g.join("info/exclude")).unwrap();
        let mut removed = clear_odd_git_dir(g);
        removed.sort();
        let want: Vec<PathBuf> = [
            "config",
            "info/exclude",
            "objects/info/alternates",
            "packed-refs",
            "refs/heads/deep/x",
        ]
        .iter()
        .map(|p| g.join(p))
        .collect();
        assert_eq!(removed, want);
        assert!(g.join("HEAD").is_file() && g.join("refs/heads/main").is_file());
    }
}
