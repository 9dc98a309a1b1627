//! The run's home: the loop's layer laid on the user's (`sandbox::mounts`) or, where none can be
//! laid, the seeded home (`sandbox::seeded`), where the layer lies, the one thing ever written
//! back from it (the CLI's refreshed credentials), and the CLI's state directories made before a
//! run so the harness can grant them.

use std::path::{Path, PathBuf};

use super::sandbox;
use super::spec::AgentSpec;
use crate::config::{Safety, SandboxMode};
use crate::sys::fsutil;

/// The home through the loop's own layer (keyed by its artifact directory), unless there is no
/// home to lay it on or `[safety] writable` grants the home itself (then writes land in it, as
/// asked). `tmp`: the run's temp dir, bound back as itself like the repository.
pub fn home_layer(
    home: &Path,
    root: &Path,
    artifact_root: &Path,
    tmp: &Path,
    safety: &Safety,
) -> Option<sandbox::policy::HomeLayer> {
    let home = home.canonicalize().ok()?;
    if safety.sandbox == SandboxMode::Off
        || home == Path::new("/")
        || safety.writable.iter().any(|w| home.starts_with(w))
        || home.starts_with(root)
    {
        return None;
    }
    let key = crate::disk::layout::Layout::key(artifact_root);
    let uid = nix::unistd::geteuid().as_raw();
    let mut pass_through = vec![root.to_path_buf(), tmp.to_path_buf()];
    pass_through.extend(safety.writable.iter().cloned());
    Some(sandbox::policy::HomeLayer {
        layer: sandbox::policy::layer_dir(&home, &std::env::temp_dir(), &key, uid),
        home,
        pass_through,
    })
}

/// Where the home's layer of the loop on `artifact_root` lies (whether or not it was made).
#[must_use]
pub fn layer_of(artifact_root: &Path) -> Option<PathBuf> {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)?
        .canonicalize()
        .ok()?;
    let key = crate::disk::layout::Layout::key(artifact_root);
    let uid = nix::unistd::geteuid().as_raw();
    Some(sandbox::policy::layer_dir(
        &home,
        &std::env::temp_dir(),
        &key,
        uid,
    ))
}

/// Every place the loops of the store at `store` keep home layers in, `ours` among them (added
/// to the list when new). Loops started with another `TMPDIR` keep theirs elsewhere, and every
/// one must be out of every run's sight: the list lies in the store (`layer-bases`, a path a
/// line, out of every agent's reach), read before each run.
#[must_use]
pub fn known_layer_bases(store: &Path, ours: &[PathBuf]) -> Vec<PathBuf> {
    let file = store.join("layer-bases");
    // A list that cannot be read (too long, not a file) is added to no more: it would grow a
    // line every run.
    let (text, keep) = match crate::sys::fsutil::read_capped(&file, 64 * 1024) {
        Ok(text) => (text, true),
        Err(_) => (String::new(), std::fs::symlink_metadata(&file).is_err()),
    };
    let mut all: Vec<PathBuf> = text
        .lines()
        .filter(|l| l.starts_with('/'))
        .map(PathBuf::from)
        .collect();
    for base in ours {
        if !all.contains(base) {
            if keep && let Some(line) = base.to_str().filter(|l| !l.contains('\n')) {
                // Not kept: the next run tries again; this one still hides `ours`.
                let _kept = crate::sys::fsutil::append_line(&file, line);
            }
            all.push(base.clone());
        }
    }
    all
}

/// Remove a loop's home layer. The overlay leaves directories of its own in the layer's work
/// directory that nobody may enter (mode 000: a volatile mount's mark among them); a user who
/// is not root can remove them only once they are theirs to enter again.
///
/// # Errors
/// When the layer cannot be removed.
pub fn remove_layer(layer: &Path) -> crate::error::Result<()> {
    open_up(&layer.join("work"));
    crate::sys::fsutil::remove_dir_all_opt(layer)
}

/// Make every directory of ours under `work` (links not followed) ours to enter and empty.
fn open_up(work: &Path) {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let uid = nix::unistd::geteuid().as_raw();
    let mut todo = vec![work.to_path_buf()];
    while let Some(dir) = todo.pop() {
        let Ok(m) = std::fs::symlink_metadata(&dir) else {
            continue;
        };
        if !m.is_dir() || m.uid() != uid {
            continue;
        }
        if m.mode() & 0o700 != 0o700 {
            let _opened = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
        }
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            todo.push(e.path());
        }
    }
}

/// After a run through the home's layer (or its seeded home): its CLI's credentials, when the run refreshed them
/// (an OAuth token rotates) and they still parse as the same kind, are written back to the
/// user's file — the one thing of the layer that ever is.
pub fn write_back_credentials(program: &str, policy: Option<&sandbox::Policy>) {
    let Some(h) = policy.and_then(|p| p.home_layer.as_ref()) else {
        return;
    };
    let Some(rel) = sandbox::policy::credentials_of(program) else {
        return;
    };
    // Written in the layer, or in the seeded home where no layer could be laid: the newer.
    // Read only as the file it is: no link on the way (an agent's link to another file is not
    // a credential it refreshed).
    let written = [h.layer.join("upper"), sandbox::seeded::dir(&h.layer)];
    let Some(layered) = written
        .into_iter()
        .filter(|root| no_link_below(root, Path::new(rel)))
        .map(|root| root.join(rel))
        .filter_map(|p| Some((p.symlink_metadata().ok()?.modified().ok()?, p)))
        .max()
        .map(|(_, p)| p)
    else {
        return;
    };
    let real = h.home.join(rel);
    let (Ok(new), Ok(old)) = (
        fsutil::read_capped(&layered, 1 << 20),
        fsutil::read_capped(&real, 1 << 20),
    ) else {
        return;
    };
    if new != old && sandbox::policy::same_kind_of_credentials(old.as_bytes(), new.as_bytes()) {
        // Written in place: the file keeps its owner and mode (0600).
        match std::fs::write(&real, &new) {
            Ok(()) => tracing::info!(
                "`{program}` refreshed its credentials: {} updated",
                real.display()
            ),
            Err(e) => tracing::warn!("cannot write back `{program}`'s refreshed credentials: {e}"),
        }
    }
}

/// Whether `root/rel` is a file reached through directories only: no component of `rel` is a link
/// (nor the file itself).
fn no_link_below(root: &Path, rel: &Path) -> bool {
    let mut at = root.to_path_buf();
    let mut parts = rel.components().peekable();
    while let Some(c) = parts.next() {
        at.push(c);
        let Ok(m) = at.symlink_metadata() else {
            return false;
        };
        let ok = if parts.peek().is_some() {
            m.is_dir()
        } else {
            m.is_file()
        };
        if !ok {
            return false;
        }
    }
    true
}

/// Make the state directory the agent's CLI writes in when it is missing (a fresh machine, or
/// one its variable moved): the harness can grant only paths that exist, and the CLI would fail
/// every write with `EACCES`. A failure is a warning; the run shows what it costs.
pub fn make_state_dirs(agent: &AgentSpec, env: &[(String, String)]) {
    use std::os::unix::fs::DirBuilderExt;
    let program = sandbox::env::program_of(&agent.table.command);
    let Some((_, home)) = env.iter().find(|(k, _)| k == "HOME") else {
        return;
    };
    for dir in sandbox::policy::state_dirs_to_make(&program, Path::new(home), env) {
        if dir.symlink_metadata().is_ok() {
            continue;
        }
        match std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
        {
            Ok(()) => tracing::info!("made {} for `{program}`", dir.display()),
            Err(e) => tracing::warn!(
                "cannot make {}, the state directory of `{program}`: {e}",
                dir.display()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_places_of_every_loops_layers_are_kept_in_the_store_and_read_back() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (
            PathBuf::from("/t1/studio-agents-homes-0"),
            PathBuf::from("/t2/x"),
        );
        assert_eq!(
            known_layer_bases(d.path(), std::slice::from_ref(&a)),
            std::slice::from_ref(&a)
        );
        // Another loop, started with another temp dir, sees the first one's too.
        assert_eq!(
            known_layer_bases(d.path(), std::slice::from_ref(&b)),
            [a.clone(), b.clone()]
        );
        assert_eq!(known_layer_bases(d.path(), &[]), [a, b]);
        let kept = std::fs::read_to_string(d.path().join("layer-bases")).unwrap();
        assert_eq!(kept.lines().count(), 2, "{kept}");
        // A list too long to read is added to no more.
        let long = "/x\n".repeat(40_000);
        std::fs::write(d.path().join("layer-bases"), &long).unwrap();
        let c = PathBuf::from("/t3/y");
        assert_eq!(known_layer_bases(d.path(), std::slice::from_ref(&c)), [c]);
        assert_eq!(
            std::fs::read_to_string(d.path().join("layer-bases")).unwrap(),
            long
        );
    }

    /// What a volatile overlay leaves in its work directory (directories nobody may enter) is
    /// opened up for its owner, so a layer can go without root.
    #[test]
    fn a_layers_closed_work_directories_are_opened_before_it_goes() {
        let d = tempfile::tempdir().unwrap();
        let layer = d.path().join("layer");
        let mark = layer.join("work/work/incompat/volatile");
        std::fs::create_dir_all(mark.join("dirty")).unwrap();
        std::fs::create_dir_all(layer.join("upper/.config")).unwrap();
        for p in [&mark, &mark.parent().unwrap().to_path_buf()] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o000)).unwrap();
        }
        open_up(&layer.join("work"));
        for p in [&mark, &mark.parent().unwrap().to_path_buf()] {
            let mode = std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{}", p.display());
        }
        remove_layer(&layer).unwrap();
        assert!(!layer.exists());
    }
}
