//! A private home where no layer can be laid on the user's (no mount namespace, or no overlay):
//! the loop's own directory, seeded from the CLI's state in the user's home (its credentials
//! and settings, so it runs as it would), with `HOME` and the XDG variables pointing into it, so
//! what a run writes there — settings, hooks, caches — lands in the loop's directory and never
//! in the user's files. The user's home stays readable (toolchains, their caches) and is no
//! longer writable. Nothing of it is ever copied back but the CLI's refreshed credentials
//! (`agent::launch`).

use std::path::{Path, PathBuf};

use super::policy::{HomeLayer, Policy};

/// A file larger than this is not seeded (a CLI's history, a cache): a run starts without it.
const FILE_CAP: u64 = 4 << 20;
/// At most this much is copied in all (what is over it is left out, said nowhere: the run is
/// the CLI's, it makes what it misses).
const TOTAL_CAP: u64 = 64 << 20;

/// The seeded home of the loop whose layer is `layer`.
#[must_use]
pub fn dir(layer: &Path) -> PathBuf {
    layer.join("seeded")
}

/// What a seeded home changes of a run: the policy (the home's own grants moved into the seeded
/// home) and the variables that point the run at it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seeded {
    /// Where the run writes instead of the user's home.
    pub home: PathBuf,
    /// The real paths under the home the policy granted (the CLI's state), now seeded.
    pub state: Vec<PathBuf>,
    /// `HOME`, the XDG directories, and the toolchains' homes read where they are.
    pub env: Vec<(String, String)>,
}

/// Plan the seeded home for `p` (pure): the grants under the user's home that are not the
/// run's own directories (the repository, its temp dir, `[safety] writable`) move into it.
#[must_use]
pub fn plan(p: &Policy, h: &HomeLayer, exists: impl Fn(&Path) -> bool) -> Seeded {
    let home = dir(&h.layer);
    let state: Vec<PathBuf> = p
        .writable
        .iter()
        .filter(|w| w.starts_with(&h.home) && **w != h.home)
        .filter(|w| !h.pass_through.iter().any(|t| w.starts_with(t)))
        .cloned()
        .collect();
    let at = |rel: &str| home.join(rel).display().to_string();
    let mut env = vec![
        ("HOME".to_string(), home.display().to_string()),
        ("XDG_CONFIG_HOME".into(), at(".config")),
        ("XDG_CACHE_HOME".into(), at(".cache")),
        ("XDG_DATA_HOME".into(), at(".local/share")),
        ("XDG_STATE_HOME".into(), at(".local/state")),
    ];
    // Toolchains are read where the user has them (a build works, offline too).
    for (var, rel) in [
        ("CARGO_HOME", ".cargo"),
        ("RUSTUP_HOME", ".rustup"),
        ("NVM_DIR", ".nvm"),
        ("GOPATH", "go"),
    ] {
        let real = h.home.join(rel);
        if exists(&real) {
            env.push((var.into(), real.display().to_string()));
        }
    }
    Seeded { home, state, env }
}

/// The policy a seeded run gets: the moved grants dropped, the seeded home granted instead.
#[must_use]
pub fn confine(p: &Policy, s: &Seeded) -> Policy {
    let mut out = p.clone();
    out.writable.retain(|w| !s.state.contains(w));
    out.writable.push(s.home.clone());
    out
}

/// Make the seeded home and copy the CLI's state into it: each file that is missing there or
/// older than the user's (a credential the user renewed since), up to the caps. A directory
/// named `.cache` starts empty.
///
/// # Errors
/// When the seeded home cannot be made.
pub fn seed(h: &HomeLayer, s: &Seeded) -> Result<(), String> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&s.home)
        .map_err(|e| format!("the seeded home {}: {e}", s.home.display()))?;
    let mut budget = TOTAL_CAP;
    for real in &s.state {
        let Ok(rel) = real.strip_prefix(&h.home) else {
            continue;
        };
        if rel == Path::new(".cache") {
            std::fs::create_dir_all(s.home.join(rel)).ok();
            continue;
        }
        copy_tree(real, &s.home.join(rel), &mut budget);
    }
    Ok(())
}

/// Copy `from` (a file or a directory, links left out) to `to`, where newer.
fn copy_tree(from: &Path, to: &Path, budget: &mut u64) {
    let Ok(meta) = from.symlink_metadata() else {
        return;
    };
    if meta.is_dir() {
        if std::fs::create_dir_all(to).is_err() {
            return;
        }
        for entry in std::fs::read_dir(from).into_iter().flatten().flatten() {
            copy_tree(&entry.path(), &to.join(entry.file_name()), budget);
        }
    } else if meta.is_file() && meta.len() <= FILE_CAP && meta.len() <= *budget {
        let newer = to
            .metadata()
            .and_then(|t| Ok(meta.modified()? > t.modified()?))
            .unwrap_or(true);
        if newer && std::fs::copy(from, to).is_ok() {
            *budget -= meta.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer() -> HomeLayer {
        HomeLayer {
            home: "/home/u".into(),
            layer: "/tmp/homes/k".into(),
            pass_through: vec!["/home/u/src/app".into(), "/tmp/run".into()],
        }
    }

    #[test]
    fn the_homes_grants_move_into_the_seeded_home() {
        let mut p = crate::agent::sandbox::policy::build(
            &crate::config::Safety::default(),
            Path::new("/home/u/src/app"),
            Path::new("/tmp/run"),
            &["/home/u/.claude".into(), "/home/u/.cache".into()],
        );
        p.writable.push("/home/u/src/app/sub".into());
        let s = plan(&p, &layer(), |p| p.ends_with(".cargo"));
        assert_eq!(s.home, Path::new("/tmp/homes/k/seeded"));
        assert_eq!(
            s.state,
            vec![PathBuf::from("/home/u/.claude"), "/home/u/.cache".into()]
        );
        let env: Vec<String> = s.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        assert_eq!(
            env,
            [
                "HOME=/tmp/homes/k/seeded",
                "XDG_CONFIG_HOME=/tmp/homes/k/seeded/.config",
                "XDG_CACHE_HOME=/tmp/homes/k/seeded/.cache",
                "XDG_DATA_HOME=/tmp/homes/k/seeded/.local/share",
                "XDG_STATE_HOME=/tmp/homes/k/seeded/.local/state",
                "CARGO_HOME=/home/u/.cargo",
            ]
        );
        let c = confine(&p, &s);
        assert!(!c.writable.iter().any(|w| w.starts_with("/home/u/.claude")));
        assert!(!c.writable.iter().any(|w| w.starts_with("/home/u/.cache")));
        assert!(c.writable.contains(&"/home/u/src/app/sub".into()));
        assert!(c.writable.contains(&"/tmp/homes/k/seeded".into()));
    }

    #[test]
    fn seeding_copies_state_where_newer_and_starts_caches_empty() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        std::fs::create_dir_all(home.join(".claude")).unwrap();
        std::fs::create_dir_all(home.join(".cache/big")).unwrap();
        std::fs::write(home.join(".claude/settings.json"), "{}").unwrap();
        std::fs::write(home.join(".cache/big/x"), "cached").unwrap();
        let h = HomeLayer {
            home: home.clone(),
            layer: t.path().join("layer"),
            pass_through: vec![],
        };
        let s = Seeded {
            home: dir(&h.layer),
            state: vec![home.join(".claude"), home.join(".cache")],
            env: vec![],
        };
        seed(&h, &s).unwrap();
        let seeded = s.home.join(".claude/settings.json");
        assert_eq!(std::fs::read_to_string(&seeded).unwrap(), "{}");
        assert!(s.home.join(".cache").is_dir());
        assert!(!s.home.join(".cache/big").exists());
        // What a run wrote there stays, unless the user's file is newer.
        std::fs::write(&seeded, "{\"hooks\":1}").unwrap();
        seed(&h, &s).unwrap();
        assert_eq!(std::fs::read_to_string(&seeded).unwrap(), "{\"hooks\":1}");
    }
}
