//! The run's own mount namespace on Linux, made in the `sandbox-exec` helper before Landlock
//! (which forbids mount changes once enforced): the protected files read-only, a private
//! `/dev/shm` and `/dev/pts`, the home through the loop's layer with the secret places masked.

use std::path::{Path, PathBuf};

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
    /// The home is an overlay whose upper layer is the loop's own.
    pub home: bool,
    /// And the hidden places in it (the store, the secret places) are masked by empty mounts:
    /// the whole home may be written (into the layer).
    pub home_writable: bool,
}

/// A private mount namespace for the run, as bubblewrap makes one: as root directly, as anyone
/// else inside a user namespace of its own (the same user and group mapped to themselves) where
/// the kernel allows it. In it the policy's protected paths are bound read-only, `/dev/shm` is a
/// tmpfs of the run's own (at most its memory ceiling; nothing is left in memory after the run,
/// since the namespace ends with its last process) and `/dev/pts` a devpts instance of its own
/// (no other terminal of the machine in it). Returns what was done; without a namespace,
/// nothing (the after-run checks and Landlock's device rules are what there is).
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
    // First the home (what is bound below may lie in it).
    let home = p.home_layer.as_ref().is_some_and(|h| {
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
    // With the home layered, what is hidden in it is masked, and the home is the run's to write.
    let home_writable = home
        && mask_hidden(p)
            .inspect_err(|e| eprintln!("studio-agents sandbox: {e}; the home stays read-only"))
            .is_ok();
    // What a grant above it would open (`[safety] writable = ["~"]` holding the store) is
    // masked whether or not the home is layered: Landlock cannot narrow a grant.
    mask_beneath_grants(p)?;
    let mut done = Mounts {
        read_only: !p.read_only.is_empty(),
        home,
        home_writable,
        ..Mounts::default()
    };
    // A repository (or another place the run writes) inside /dev/shm stays in sight: a tmpfs
    // over it would hide the work itself.
    let shm = Path::new("/dev/shm");
    let works_in_shm = p.writable.iter().any(|w| w.starts_with(shm) && w != shm);
    done.shm = !works_in_shm
        && private_shm(p.shm_bytes)
            .inspect_err(|e| eprintln!("studio-agents sandbox: {e}; /dev/shm is shared"))
            .is_ok();
    done.ptys = private_ptys()
        .inspect_err(|e| eprintln!("studio-agents sandbox: {e}; other terminals are hidden"))
        .is_ok();
    Ok(done)
}

/// Mount an overlay on the home: the user's home below, the loop's layer above; then bind the
/// real directories the run works in back over it (opened before the overlay hides them).
fn overlay_home(h: &super::policy::HomeLayer, root: bool) -> Result<(), String> {
    use nix::mount::{MsFlags, mount};
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
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
    let kept: Vec<(std::fs::File, &PathBuf)> = h
        .pass_through
        .iter()
        .filter(|p| p.starts_with(&h.home) && *p != &h.home)
        .filter_map(|p| {
            std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(nix::fcntl::OFlag::O_PATH.bits())
                .open(p)
                .ok()
                .map(|f| (f, p))
        })
        .collect();
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
    mount(
        Some("overlay"),
        &h.home,
        Some("overlay"),
        MsFlags::empty(),
        Some(options.as_str()),
    )
    .map_err(|e| format!("an overlay on {}: {e}", h.home.display()))?;
    for (file, path) in kept {
        let source = format!("/proc/self/fd/{}", file.as_raw_fd());
        let bound = mount(
            Some(source.as_str()),
            path,
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

/// Mask each hidden place in the layered home: an empty tmpfs on a directory, `/dev/null` on a
/// file (reads find nothing, writes go nowhere).
fn mask_hidden(p: &Policy) -> Result<(), String> {
    use nix::mount::{MsFlags, mount};
    let Some(h) = &p.home_layer else {
        return Ok(());
    };
    let none: Option<&str> = None;
    for path in p
        .hidden
        .iter()
        .filter(|x| x.starts_with(&h.home) && **x != h.home)
    {
        let Ok(meta) = path.symlink_metadata() else {
            continue;
        };
        let done = if meta.is_dir() {
            mount(
                Some("tmpfs"),
                path,
                Some("tmpfs"),
                MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
                Some("mode=0700,size=1m"),
            )
        } else if meta.is_file() {
            mount(Some("/dev/null"), path, none, MsFlags::MS_BIND, none)
        } else {
            return Err(format!(
                "{} is neither a file nor a directory",
                path.display()
            ));
        };
        done.map_err(|e| format!("mask {}: {e}", path.display()))?;
    }
    Ok(())
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

/// Mask each hidden place beneath a grant with an empty tmpfs (refused when that cannot be
/// done: the run would see what is hidden).
fn mask_beneath_grants(p: &Policy) -> Result<(), String> {
    use nix::mount::{MsFlags, mount};
    for path in beneath_grants(p).into_iter().filter(|h| h.is_dir()) {
        mount(
            Some("tmpfs"),
            path.as_path(),
            Some("tmpfs"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_RDONLY,
            Some("mode=0500,size=4k"),
        )
        .map_err(|e| format!("mask {} beneath a grant: {e}", path.display()))?;
    }
    Ok(())
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

/// A tmpfs of the run's own on `/dev/shm`, at most `bytes` (0: the kernel's default size).
fn private_shm(bytes: u64) -> Result<(), String> {
    use nix::mount::{MsFlags, mount};
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        return Err("no /dev/shm".into());
    }
    let size = if bytes > 0 {
        format!(",size={bytes}")
    } else {
        String::new()
    };
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
    mount(
        Some("tmpfs"),
        shm,
        Some("tmpfs"),
        flags,
        Some(format!("mode=1777{size}").as_str()),
    )
    .map_err(|e| format!("a private /dev/shm: {e}"))
}

/// A devpts instance of the run's own on `/dev/pts`, its `ptmx` bound on `/dev/ptmx`: a
/// terminal the run makes is one of its own, and no other is in sight.
fn private_ptys() -> Result<(), String> {
    use nix::mount::{MsFlags, mount};
    let none: Option<&str> = None;
    let pts = Path::new("/dev/pts");
    mount(
        Some("devpts"),
        pts,
        Some("devpts"),
        MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
        Some("newinstance,ptmxmode=0666,mode=0620"),
    )
    .map_err(|e| format!("a private /dev/pts: {e}"))?;
    mount(
        Some(Path::new("/dev/pts/ptmx")),
        Path::new("/dev/ptmx"),
        none,
        MsFlags::MS_BIND,
        none,
    )
    .map_err(|e| format!("a private /dev/ptmx: {e}"))
}
