//! The run's own mount namespace on Linux, made in the `sandbox-exec` helper before Landlock
//! (which forbids mount changes once enforced): a `/dev` of its own, the home through the
//! loop's layer, the protected files read-only, the hidden places masked.

use std::path::Path;

pub use super::masks::beneath_grants;

use super::policy::Policy;
use crate::config::SandboxMode;

/// What the run's private mount namespace holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Mounts {
    /// The protected paths (`.git`, the loop's control files) are read-only.
    pub read_only: bool,
    /// `/dev/shm` is a tmpfs of the run's own, as large as its memory ceiling, gone with it.
    pub shm: bool,
    /// `/dev/pts` is a devpts instance of the run's own: only the terminals it made.
    pub ptys: bool,
    /// `/dev` is the run's own (`sandbox::dev`): no terminal, disk or console of the machine.
    pub dev: bool,
    /// The home is an overlay whose upper layer is the loop's own.
    pub home: bool,
    /// And the hidden places in it (the store, the secret places) are masked by empty mounts:
    /// the whole home may be written (into the layer).
    pub home_writable: bool,
    /// Every hidden place is masked (`sandbox::masks`): Landlock has nothing to hide.
    pub hidden_masked: bool,
}

/// A private mount namespace for the run, as bubblewrap makes one: as root directly, as anyone
/// else inside a user namespace of its own (the same user and group mapped to themselves) where
/// the kernel allows it. In it `/dev` is the run's own (with its own `/dev/shm`, at most its
/// memory ceiling, and `/dev/pts`; `sandbox::dev`), the home is seen through the loop's layer,
/// the policy's protected paths are bound read-only and the hidden places are masked
/// (`sandbox::masks`). Returns what was done; without a namespace, nothing (the after-run
/// checks and Landlock's rules are what there is).
pub fn private_mounts(p: &Policy) -> Result<Mounts, String> {
    if p.mode == SandboxMode::Off {
        return Ok(Mounts::default());
    }
    if p.no_namespace {
        return Err(format!(
            "mount namespaces are switched off ({})",
            super::policy::NO_NAMESPACE
        ));
    }
    enter_namespace()?;
    let none: Option<&str> = None;
    use nix::mount::{MsFlags, mount};
    mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none)
        .map_err(|e| format!("private mounts: {e}"))?;
    // First /dev (a repository in /dev/shm is bound into it, and bound read-only below).
    let mut done = devices(p);
    // Then the home (what is bound below may lie in it).
    done.home = p.home_layer.as_ref().is_some_and(|h| {
        overlay_home(h, nix::unistd::geteuid().is_root())
            .inspect_err(|e| {
                eprintln!("studio-agents sandbox: {e}; the run writes its CLI's state in the home")
            })
            .is_ok()
    });
    // Only what exists can be bound; what a run makes in place of a missing one is checked
    // after it.
    for path in p.read_only.iter().filter(|r| r.exists()) {
        bind_read_only(path)?;
    }
    done.read_only = !p.read_only.is_empty();
    // What a grant above it would open (`[safety] writable = ["~"]` holding the store) must be
    // masked: Landlock cannot narrow a grant (an error refuses the run).
    let masked = super::masks::mask(p, done.home)?;
    done.home_writable = done.home && masked.home;
    done.hidden_masked = masked.all;
    enter_cwd_again()?;
    Ok(done)
}

/// The working directory again, looked up through the mounts just made. The one the process
/// came with was looked up before them: a path relative to it would walk the file system under
/// every mount made since — the home's layer over an ancestor (a repository in the home), and
/// with it the read-only binds of `.git` and the control files, which lie on the layer's side.
fn enter_cwd_again() -> Result<(), String> {
    let cwd = std::env::current_dir().map_err(|e| format!("the working directory: {e}"))?;
    std::env::set_current_dir(&cwd)
        .map_err(|e| format!("the working directory {} again: {e}", cwd.display()))
}

/// The run's own `/dev`; where it cannot be made, a private `/dev/shm` and `/dev/pts` on the
/// machine's (its other terminals are then hidden by Landlock).
fn devices(p: &Policy) -> Mounts {
    use super::dev;
    match dev::own_dev(p) {
        Ok(d) => {
            return Mounts {
                dev: true,
                shm: d.shm,
                ptys: d.ptys,
                ..Mounts::default()
            };
        }
        Err(e) => eprintln!("studio-agents sandbox: {e}; the run sees the machine's /dev"),
    }
    // A repository (or another place the run writes) inside /dev/shm stays in sight: a tmpfs
    // over it would hide the work itself.
    let shm = !dev::works_in_shm(p)
        && dev::private_shm(p.shm_bytes)
            .inspect_err(|e| eprintln!("studio-agents sandbox: {e}; /dev/shm is shared"))
            .is_ok();
    let ptys = dev::private_ptys()
        .inspect_err(|e| eprintln!("studio-agents sandbox: {e}; other terminals are hidden"))
        .is_ok();
    Mounts {
        shm,
        ptys,
        ..Mounts::default()
    }
}

/// Mount an overlay on the home: the user's home below, the loop's layer above; then bind the
/// real directories the run works in back over it (opened before the overlay hides them).
fn overlay_home(h: &super::policy::HomeLayer, root: bool) -> Result<(), String> {
    use nix::mount::{MsFlags, mount};
    use std::os::fd::AsRawFd;
    let upper = h.layer.join("upper");
    let work = h.layer.join("work");
    // The layer lies in a shared temp dir: it must be the user's own, all the way down.
    if let Some(base) = h.layer.parent() {
        super::seeded::private_dir(base)?;
    }
    for d in [&h.layer, &upper, &work] {
        super::seeded::private_dir(d)?;
    }
    let text = |p: &Path| -> Result<String, String> {
        p.to_str()
            .filter(|s| !s.contains([',', ':', '\\']))
            .map(str::to_string)
            .ok_or_else(|| format!("{} cannot be named in overlay options", p.display()))
    };
    let inside: Vec<std::path::PathBuf> = h
        .pass_through
        .iter()
        .filter(|p| p.starts_with(&h.home) && *p != &h.home)
        .cloned()
        .collect();
    let kept = super::dev::opened(&inside);
    let mut options = format!(
        "lowerdir={},upperdir={},workdir={}",
        text(&h.home)?,
        text(&upper)?,
        text(&work)?
    );
    if !root {
        options.push_str(",userxattr");
    }
    let none: Option<&str> = None;
    mount_volatile(&h.home, &work, &options)
        .map_err(|e| format!("an overlay on {}: {e}", h.home.display()))?;
    for (file, path) in &kept {
        let source = format!("/proc/self/fd/{}", file.as_raw_fd());
        let bound = mount(
            Some(source.as_str()),
            path.as_path(),
            none,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            none,
        );
        if let Err(e) = bound {
            // Never a run whose repository is the layer's: the overlay goes again.
            nix::mount::umount2(&h.home, nix::mount::MntFlags::MNT_DETACH)
                .map_err(|u| format!("the home's overlay cannot be undone: {u}"))?;
            return Err(format!(
                "bind {} back over the home's overlay: {e}",
                path.display()
            ));
        }
    }
    Ok(())
}

/// Mount the overlay `volatile` (Linux 5.10 and later): its end then syncs nothing. Without it,
/// the overlay's unmount when the run's last process exits syncs the whole file system its layer
/// lies on (`syncfs`), every run — the repository's writes included, which the next commit then
/// waits behind. The layer is written like every other file of the loop's, never synced; the
/// mark a volatile mount leaves in its work directory (which makes the next mount refuse, in
/// case the machine crashed meanwhile) is taken away first. A kernel that does not know the
/// option gets the overlay as before.
fn mount_volatile(home: &Path, work: &Path, options: &str) -> nix::Result<()> {
    use nix::mount::{MsFlags, mount};
    let incompat = work.join("work").join("incompat");
    if std::fs::symlink_metadata(&incompat).is_ok() {
        // Never followed: `remove_dir_all` removes links, not what they point to.
        let _gone = std::fs::remove_dir_all(&incompat);
    }
    let overlay = |options: &str| {
        mount(
            Some("overlay"),
            home,
            Some("overlay"),
            MsFlags::empty(),
            Some(options),
        )
    };
    match overlay(&format!("{options},volatile")) {
        Err(nix::errno::Errno::EINVAL) => overlay(options),
        done => done,
    }
}

/// Enter a mount namespace of our own: root unshares it, anyone else with a user namespace.
fn enter_namespace() -> Result<(), String> {
    use nix::sched::{CloneFlags, unshare};
    let uid = nix::unistd::geteuid();
    if uid.is_root() {
        return unshare(CloneFlags::CLONE_NEWNS).map_err(|e| format!("mount namespace: {e}"));
    }
    let gid = nix::unistd::getegid();
    unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS)
        .map_err(|e| format!("user namespace: {e}"))?;
    let write = |file: &str, text: String| {
        std::fs::write(file, text).map_err(|e| format!("user namespace: write {file}: {e}"))
    };
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1\n"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1\n"))
}

/// Bind `path` onto itself read-only, keeping the flags of the mount it is on (a user
/// namespace may not clear `nosuid`, `nodev`, `noexec` or the atime flags of a mount it
/// inherited).
fn bind_read_only(path: &Path) -> Result<(), String> {
    use nix::mount::{MsFlags, mount};
    use nix::sys::statvfs::{FsFlags, statvfs};
    let none: Option<&str> = None;
    mount(Some(path), path, none, MsFlags::MS_BIND, none)
        .map_err(|e| format!("bind {}: {e}", path.display()))?;
    let kept = statvfs(path).map(|s| s.flags()).unwrap_or(FsFlags::empty());
    let mut flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY;
    for (fs, ms) in [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ] {
        if kept.contains(fs) {
            flags |= ms;
        }
    }
    mount(none, path, none, flags, none).map_err(|e| format!("read-only {}: {e}", path.display()))
}
