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
/// named `.cache` starts empty. What a run left in the seeded home is never followed: a link
/// (or anything but a directory or a file) where the seeding writes is removed first, so a link
/// an agent planted cannot turn the seeding into a write into the user's files.
///
/// # Errors
/// When the seeded home cannot be made, or the loop's layer is not the user's own (`private_dir`).
pub fn seed(h: &HomeLayer, s: &Seeded) -> Result<(), String> {
    if let Some(base) = h.layer.parent() {
        private_dir(base)?;
    }
    private_dir(&h.layer)?;
    private_dir(&s.home)?;
    let mut budget = TOTAL_CAP;
    for real in &s.state {
        let Ok(rel) = real.strip_prefix(&h.home) else {
            continue;
        };
        let Some(parent) = dirs_to(&s.home, rel) else {
            continue;
        };
        let to = parent.join(rel.file_name().unwrap_or_default());
        if rel == Path::new(".cache") {
            let _made = own_dir(&to);
            continue;
        }
        copy_tree(real, &to, &mut budget);
    }
    Ok(())
}

/// A directory of the user's own, private: made (0700) when missing; refused when it is a link,
/// not a directory, or another user's (a shared temp dir where someone made it first); its mode
/// narrowed to 0700 when it is the user's but open to others.
///
/// # Errors
/// Naming the directory and what is wrong with it.
pub fn private_dir(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    let me = nix::unistd::geteuid().as_raw();
    match dir.symlink_metadata() {
        Err(_) => std::fs::DirBuilder::new()
            .mode(0o700)
            .create(dir)
            .map_err(|e| format!("the home's layer {}: {e}", dir.display())),
        Ok(m) if !m.file_type().is_dir() => Err(format!(
            "the home's layer {} is not a directory (a link?); remove it",
            dir.display()
        )),
        Ok(m) if m.uid() != me => Err(format!(
            "the home's layer {} belongs to uid {}, not to you (uid {me}); remove it",
            dir.display(),
            m.uid()
        )),
        Ok(m) if m.mode() & 0o077 != 0 => {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                .map_err(|e| format!("the home's layer {}: {e}", dir.display()))
        }
        Ok(_) => Ok(()),
    }
}

/// Make `dir` a real directory: whatever else is there (a link, a file) is removed first.
fn own_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    match dir.symlink_metadata() {
        Ok(m) if m.file_type().is_dir() => return Ok(()),
        Ok(_) => std::fs::remove_file(dir)?,
        Err(_) => {}
    }
    std::fs::DirBuilder::new().mode(0o700).create(dir)
}

/// The directories on the way from `home` to `rel`'s parent, each made a real directory;
/// returns that parent (`None` when one cannot be made).
fn dirs_to(home: &Path, rel: &Path) -> Option<PathBuf> {
    let mut at = home.to_path_buf();
    let parents: Vec<_> = rel
        .parent()
        .into_iter()
        .flat_map(Path::components)
        .collect();
    for c in parents {
        at.push(c);
        own_dir(&at).ok()?;
    }
    Some(at)
}

/// Copy `from` (a file or a directory; links in it left out) to `to`, where newer; never
/// through a link at `to`.
fn copy_tree(from: &Path, to: &Path, budget: &mut u64) {
    let Ok(meta) = from.symlink_metadata() else {
        return;
    };
    if meta.is_dir() {
        if own_dir(to).is_err() {
            return;
        }
        for entry in std::fs::read_dir(from).into_iter().flatten().flatten() {
            copy_tree(&entry.path(), &to.join(entry.file_name()), budget);
        }
    } else if meta.is_file() && meta.len() <= FILE_CAP && meta.len() <= *budget {
        let there = to.symlink_metadata().ok();
        let newer = there.as_ref().is_none_or(|t| {
            !t.file_type().is_file()
                || matches!((meta.modified(), t.modified()), (Ok(a), Ok(b)) if a > b)
        });
        if newer && copy_file(from, to, there.is_some()).is_ok() {
            *budget -= meta.len();
        }
    }
}

/// Write `from`'s bytes to `to` (0600), after removing what was there: a link is never
/// followed (`O_NOFOLLOW`, `O_EXCL`).
fn copy_file(from: &Path, to: &Path, exists: bool) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    if exists {
        std::fs::remove_file(to)?;
    }
    let mut src = std::fs::File::open(from)?;
    let mut dst = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
        .open(to)?;
    std::io::copy(&mut src, &mut dst).map(|_| ())
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

    /// A user's home under `t` with `files` (path, bytes), and the seeding of its `state` dirs.
    fn home_of(
        t: &tempfile::TempDir,
        files: &[(&str, &str)],
        state: &[&str],
    ) -> (PathBuf, HomeLayer, Seeded) {
        let home = t.path().join("home");
        for (path, bytes) in files {
            let p = home.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, bytes).unwrap();
        }
        let h = HomeLayer {
            home: home.clone(),
            layer: t.path().join("layer"),
            pass_through: vec![],
        };
        let s = Seeded {
            home: dir(&h.layer),
            state: state.iter().map(|d| home.join(d)).collect(),
            env: vec![],
        };
        (home, h, s)
    }

    #[test]
    fn seeding_copies_state_where_newer_and_starts_caches_empty() {
        let t = tempfile::tempdir().unwrap();
        let files = [(".claude/settings.json", "{}"), (".cache/big/x", "cached")];
        let (_, h, s) = home_of(&t, &files, &[".claude", ".cache"]);
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

    #[test]
    fn a_link_planted_in_the_seeded_home_is_never_followed() {
        use std::os::unix::fs::symlink;
        let t = tempfile::tempdir().unwrap();
        let files = [
            (".claude/settings.json", "{}"),
            (".config/claude/x", "x"),
            (".bashrc", "mine"),
        ];
        let (home, h, s) = home_of(&t, &files, &[".claude", ".config/claude"]);
        seed(&h, &s).unwrap();
        // A run replaces what the seeding writes with links into the user's home: a file, a
        // missing file, a directory on the way.
        let settings = s.home.join(".claude/settings.json");
        std::fs::remove_file(&settings).unwrap();
        symlink(home.join(".bashrc"), &settings).unwrap();
        symlink(home.join(".bash_login"), s.home.join(".claude/new.json")).unwrap();
        std::fs::remove_dir_all(s.home.join(".config")).unwrap();
        symlink(&home, s.home.join(".config")).unwrap();
        std::fs::write(home.join(".claude/new.json"), "new").unwrap();
        // The user renews their settings: the seeding copies them again.
        let renewed = home.join(".claude/settings.json");
        std::fs::write(&renewed, "{\"renewed\":1}").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&renewed)
            .unwrap()
            .set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(60))
            .unwrap();
        seed(&h, &s).unwrap();
        assert_eq!(
            std::fs::read_to_string(home.join(".bashrc")).unwrap(),
            "mine"
        );
        assert!(!home.join(".bash_login").exists());
        assert!(
            !home.join("claude").exists(),
            "written through the linked .config"
        );
        assert_eq!(
            std::fs::read_to_string(&settings).unwrap(),
            "{\"renewed\":1}"
        );
        assert!(
            !settings
                .symlink_metadata()
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert!(s.home.join(".config/claude/x").is_file());
    }

    #[test]
    fn a_layer_made_by_another_user_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let mine = t.path().join("mine");
        private_dir(&mine).unwrap();
        assert!(private_dir(&mine).is_ok());
        // Open to others: narrowed.
        std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o777)).unwrap();
        private_dir(&mine).unwrap();
        let mode = std::fs::metadata(&mine).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        // A link in its place.
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&mine, &link).unwrap();
        assert!(private_dir(&link).unwrap_err().contains("not a directory"));
        // Another user's (as root the test can make one).
        if nix::unistd::geteuid().is_root() {
            let theirs = t.path().join("theirs");
            std::fs::create_dir(&theirs).unwrap();
            nix::unistd::chown(&theirs, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
            assert!(
                private_dir(&theirs)
                    .unwrap_err()
                    .contains("belongs to uid 65534")
            );
        }
    }
}
