//! The store (`$STUDIO_AGENTS_HOME`: every loop's records, the copies of the user's work, the
//! registry) out of every run's reach. A run's own roots are checked against it before the run
//! starts (and before a loop starts): a directory it works in, writes or reads may not lie
//! inside the store. One that holds it (`[safety] writable = ["~"]`) is a grant Landlock cannot
//! narrow: in the run's mount namespace the store is then masked by an empty mount
//! (`masks::mask`); where no namespace can be made, such a run is refused.

use std::path::{Path, PathBuf};

/// What a run would reach of the store: the first root that lies inside it or holds it, and how
/// the run uses that root (`works in`, `writes`, `reads`), and whether it holds the store
/// (looked for only when `holding` counts: where no mount namespace can mask the store). `real`
/// resolves a path as the kernel would (links followed).
#[must_use]
pub fn reached<'a>(
    roots: &[(&'a Path, &'static str)],
    store: &Path,
    holding: bool,
    real: impl Fn(&Path) -> PathBuf,
) -> Option<(&'a Path, &'static str, bool)> {
    roots.iter().find_map(|&(path, how)| {
        let p = real(path);
        if p.starts_with(store) {
            Some((path, how, false))
        } else if holding && how != "works in" && store.starts_with(&p) {
            Some((path, how, true))
        } else {
            None
        }
    })
}

/// The line that refuses such a run (exit 2): which root, how, and what to do instead.
#[must_use]
pub fn refusal(path: &Path, how: &str, holds: bool, store: &Path) -> String {
    let (where_, key) = match how {
        "writes" => (
            "[safety] writable",
            "name the directories the agent needs beside it",
        ),
        "reads" => (
            "[safety] readable",
            "name the directories the agent needs beside it",
        ),
        _ => ("--artifact-path", "choose a directory outside it"),
    };
    if holds {
        format!(
            "{where_}: {} holds the store {} (every loop's records and the copies of the user's work), and with no mount namespace to mask it an agent {how} it through that: {key}",
            path.display(),
            store.display()
        )
    } else {
        format!(
            "an agent run {how} {}, inside the store {} (every loop's records and the copies of the user's work): choose a directory outside it (--artifact-path, [safety] writable, [safety] readable)",
            path.display(),
            store.display()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_inside_or_above_the_store_is_named() {
        let store = Path::new("/home/u/.local/share/studio-agents");
        let same = |p: &Path| p.to_path_buf();
        let cases: [(&str, &'static str, Option<bool>); 7] = [
            ("/home/u/src/app", "works in", None),
            (
                "/home/u/.local/share/studio-agents/artifacts/x",
                "works in",
                Some(false),
            ),
            (
                "/home/u/.local/share/studio-agents/kept",
                "writes",
                Some(false),
            ),
            ("/home/u", "writes", Some(true)),
            ("/home/u/.local", "reads", Some(true)),
            ("/home/u/.local/share/other", "reads", None),
            // A working directory above the store is where the loop runs, not a grant.
            ("/home/u", "works in", None),
        ];
        for (path, how, want) in cases {
            let roots = [(Path::new(path), how)];
            let got = reached(&roots, store, true, same).map(|(_, _, holds)| holds);
            assert_eq!(got, want, "{path} {how}");
            // Where the store can be masked, only a root inside it is refused.
            let got = reached(&roots, store, false, same).map(|(_, _, holds)| holds);
            assert_eq!(got, want.filter(|holds| !holds), "{path} {how} (masked)");
        }
        // Links are followed: a root that resolves into the store is inside it.
        let roots = [(Path::new("/tmp/link"), "writes")];
        let into = |_: &Path| store.join("runs");
        assert_eq!(
            reached(&roots, store, false, into).map(|r| r.2),
            Some(false)
        );
    }

    #[test]
    fn the_refusal_names_the_key_and_the_store() {
        let store = Path::new("/s");
        let line = refusal(Path::new("/"), "writes", true, store);
        assert_eq!(
            line,
            "[safety] writable: / holds the store /s (every loop's records and the copies of the user's work), and with no mount namespace to mask it an agent writes it through that: name the directories the agent needs beside it"
        );
        assert!(
            refusal(Path::new("/s/a"), "works in", false, store).contains("inside the store /s")
        );
    }
}
