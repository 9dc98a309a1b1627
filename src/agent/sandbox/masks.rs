//! The hidden places (the store, the secret places of the home) masked in the run's mount
//! namespace: an empty tmpfs on a directory, `/dev/null` on a file. Reads find nothing, writes
//! go nowhere, and Landlock needs no rule to hide them — where each is masked, its read rules
//! (which must cover everything else, `policy::cover_except`) are not made at all.

use std::path::{Path, PathBuf};

use nix::mount::{MsFlags, mount};

use super::policy::Policy;

/// What masking did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Masked {
    /// Every hidden place in the layered home is masked: the run may write its whole home
    /// (into the layer).
    pub home: bool,
    /// Every hidden place is masked: Landlock has nothing left to hide.
    pub all: bool,
}

/// Mask every hidden place that exists. In the layered home (`home_layered`) a masked
/// directory is writable (what the run writes there goes with the namespace); elsewhere it is
/// read-only. A place that cannot be masked is left to Landlock (`all` false), unless it lies
/// beneath a root the run may write or read, which Landlock cannot narrow.
///
/// # Errors
/// When a hidden place beneath a grant cannot be masked: the run would see it.
pub fn mask(p: &Policy, home_layered: bool) -> Result<Masked, String> {
    let home = p
        .home_layer
        .as_ref()
        .filter(|_| home_layered)
        .map(|h| h.home.as_path());
    let beneath = beneath_grants(p);
    let mut done = Masked {
        home: true,
        all: true,
    };
    // The run's own layer, where it is not mounted as the home, is its seeded home: the
    // directory that holds it is left to Landlock, which grants the seeded home by a rule.
    let own_layer = p
        .home_layer
        .as_ref()
        .filter(|_| !home_layered)
        .map(|h| h.layer.as_path());
    for path in &p.hidden {
        let holds_own = own_layer.is_some_and(|l| {
            l.starts_with(path) || l.canonicalize().is_ok_and(|c| c.starts_with(path))
        });
        if holds_own {
            done.all = false;
            continue;
        }
        let in_home = home.is_some_and(|h| path.starts_with(h) && path != h);
        match mask_one(path, in_home) {
            Ok(()) => {}
            Err(e) if beneath.contains(&path) => {
                return Err(format!("mask {} beneath a grant: {e}", path.display()));
            }
            Err(e) => {
                eprintln!("studio-agents sandbox: mask {}: {e}", path.display());
                done.all = false;
                done.home &= !in_home;
            }
        }
    }
    Ok(done)
}

/// Mask one place (nothing to do where there is nothing).
fn mask_one(path: &Path, writable: bool) -> Result<(), String> {
    let Ok(meta) = path.metadata() else {
        return Ok(());
    };
    let none: Option<&str> = None;
    let done = if meta.is_dir() {
        let (flags, options) = if writable {
            (MsFlags::empty(), "mode=0700,size=1m")
        } else {
            (MsFlags::MS_RDONLY, "mode=0500,size=4k")
        };
        mount(
            Some("tmpfs"),
            path,
            Some("tmpfs"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV | flags,
            Some(options),
        )
    } else if meta.is_file() {
        mount(Some("/dev/null"), path, none, MsFlags::MS_BIND, none)
    } else {
        return Err("neither a file nor a directory".into());
    };
    done.map_err(|e| e.to_string())
}

/// The hidden places that lie beneath a root the run may write or read (`sandbox::store`):
/// Landlock's rules only add, so only a mount can keep them out of its sight.
#[must_use]
pub fn beneath_grants(p: &Policy) -> Vec<&PathBuf> {
    let grants: Vec<&PathBuf> = p
        .writable
        .iter()
        .chain(p.readable.iter().flatten())
        .collect();
    p.hidden
        .iter()
        .filter(|h| grants.iter().any(|g| h.starts_with(g) && h != g))
        .collect()
}
