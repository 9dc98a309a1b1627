//! The run's own `/dev`, made in its mount namespace as bubblewrap's `--dev` makes one: an
//! empty tmpfs over the machine's `/dev`, the few devices tools use bound back into it (the
//! null devices, the random ones, `/dev/tty`), the links to the process's own descriptors, a
//! `/dev/shm` and a `/dev/pts` of the run's own, and whatever `[safety] writable` or `readable`
//! names under `/dev` (`/dev/kvm`, a GPU) — then made read-only. No other terminal of the
//! machine, no disk, no console is in sight, so nothing in `/dev` needs a Landlock rule to hide.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use nix::mount::{MntFlags, MsFlags, mount, umount2};

use super::policy::Policy;

/// The machine's devices every run gets.
const NODES: [&str; 6] = ["null", "zero", "full", "random", "urandom", "tty"];

/// The links to the process's own descriptors.
const LINKS: [(&str, &str); 4] = [
    ("fd", "/proc/self/fd"),
    ("stdin", "/proc/self/fd/0"),
    ("stdout", "/proc/self/fd/1"),
    ("stderr", "/proc/self/fd/2"),
];

/// What the run's `/dev` holds beyond its devices.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dev {
    /// `/dev/shm` is a tmpfs of the run's own (not when the run works in the machine's).
    pub shm: bool,
    /// `/dev/pts` is a devpts instance of the run's own.
    pub ptys: bool,
}

/// Put a `/dev` of the run's own over the machine's. On an error the tmpfs is taken away again
/// (the machine's `/dev` is what the run sees, and the caller falls back to [`private_shm`] and
/// [`private_ptys`] on it).
///
/// # Errors
/// When the tmpfs, a bind or the read-only remount cannot be made.
pub fn own_dev(p: &Policy) -> Result<Dev, String> {
    let dev = Path::new("/dev");
    if !dev.is_dir() {
        return Err("no /dev".into());
    }
    let works_in_shm = works_in_shm(p);
    // Opened before the tmpfs hides them: bound back from these descriptors.
    let kept = opened(&kept_paths(p, works_in_shm));
    mount(
        Some("tmpfs"),
        dev,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
        Some("mode=0755,size=64k"),
    )
    .map_err(|e| format!("a /dev of the run's own: {e}"))?;
    let filled = fill(p, &kept, works_in_shm);
    if let Err(e) = filled {
        let _undone = umount2(dev, MntFlags::MNT_DETACH);
        return Err(e);
    }
    filled
}

/// The devices bound back, the run's own `/dev/shm` and `/dev/pts`, the links; then read-only.
fn fill(p: &Policy, kept: &[(File, PathBuf)], works_in_shm: bool) -> Result<Dev, String> {
    for (file, path) in kept {
        if !made_again(file, path) {
            bind_back(file, path)?;
        }
    }
    for (name, target) in LINKS {
        std::os::unix::fs::symlink(target, Path::new("/dev").join(name))
            .map_err(|e| format!("/dev/{name}: {e}"))?;
    }
    let shm = Path::new("/dev/shm");
    let own_shm = !works_in_shm;
    if own_shm {
        make_dir(shm)?;
        private_shm(p.shm_bytes)?;
    }
    make_dir(Path::new("/dev/pts"))?;
    make_file(Path::new("/dev/ptmx"))?;
    private_ptys()?;
    let none: Option<&str> = None;
    mount(
        none,
        "/dev",
        none,
        MsFlags::MS_REMOUNT
            | MsFlags::MS_BIND
            | MsFlags::MS_RDONLY
            | MsFlags::MS_NOSUID
            | MsFlags::MS_NOEXEC,
        none,
    )
    .map_err(|e| format!("/dev read-only: {e}"))?;
    Ok(Dev {
        shm: own_shm,
        ptys: true,
    })
}

/// Whether the run works in the machine's `/dev/shm` (a repository there): then it is bound
/// back whole, never replaced.
#[must_use]
pub fn works_in_shm(p: &Policy) -> bool {
    let shm = Path::new("/dev/shm");
    p.writable.iter().any(|w| w.starts_with(shm) && w != shm)
}

/// What of the machine's `/dev` the run's own holds: the devices every run gets, what the
/// settings grant under `/dev` (but not `/dev` itself, nor what the run has its own of), and
/// the machine's `/dev/shm` when the run works in it.
fn kept_paths(p: &Policy, works_in_shm: bool) -> Vec<PathBuf> {
    let dev = Path::new("/dev");
    let own = ["/dev/shm", "/dev/pts", "/dev/ptmx"].map(Path::new);
    let mut out: Vec<PathBuf> = NODES.iter().map(|n| dev.join(n)).collect();
    let granted = p.writable.iter().chain(p.readable.iter().flatten());
    for g in granted {
        let mine =
            own.iter().any(|o| g.starts_with(o)) || LINKS.iter().any(|(n, _)| g == &dev.join(n));
        if g.starts_with(dev) && g != dev && !mine && !out.contains(g) {
            out.push(g.clone());
        }
    }
    if works_in_shm {
        out.push(dev.join("shm"));
    }
    out
}

/// Each path opened as a place to bind from (`O_PATH`: a device is not opened as one); what
/// cannot be opened is left out.
#[must_use]
pub fn opened(paths: &[PathBuf]) -> Vec<(File, PathBuf)> {
    paths
        .iter()
        .filter_map(|p| {
            std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(nix::fcntl::OFlag::O_PATH.bits())
                .open(p)
                .ok()
                .map(|f| (f, p.clone()))
        })
        .collect()
}

/// One of the devices every run gets made again in the new `/dev` as the same device with the
/// same permissions, where the helper may make devices (as root outside a user namespace):
/// cheaper than a bind to set up and to take down with the run. Whether it was.
fn made_again(file: &File, path: &Path) -> bool {
    use nix::sys::stat::{Mode, SFlag, mknod};
    use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
    let common = NODES.iter().any(|n| path == Path::new("/dev").join(n));
    let Ok(meta) = file.metadata() else {
        return false;
    };
    if !common || !meta.file_type().is_char_device() {
        return false;
    }
    let bits = meta.mode() & 0o777;
    if mknod(
        path,
        SFlag::S_IFCHR,
        Mode::from_bits_truncate(bits),
        meta.rdev(),
    )
    .is_err()
    {
        return false;
    }
    // The umask narrowed it: the machine's own permissions, exactly.
    if std::fs::set_permissions(path, std::fs::Permissions::from_mode(bits)).is_err() {
        let _gone = std::fs::remove_file(path);
        return false;
    }
    true
}

/// Bind what `file` is onto `path` in the new `/dev` (a place for it made first).
fn bind_back(file: &File, path: &Path) -> Result<(), String> {
    let is_dir = file.metadata().is_ok_and(|m| m.is_dir());
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    if is_dir {
        make_dir(path)?;
    } else {
        make_file(path)?;
    }
    let source = format!("/proc/self/fd/{}", file.as_raw_fd());
    let none: Option<&str> = None;
    mount(
        Some(source.as_str()),
        path,
        none,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        none,
    )
    .map_err(|e| format!("bind {} into the run's /dev: {e}", path.display()))
}

fn make_dir(path: &Path) -> Result<(), String> {
    match std::fs::create_dir(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

fn make_file(path: &Path) -> Result<(), String> {
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map(drop)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// A tmpfs of the run's own on `/dev/shm`, at most `bytes` (0: the kernel's default size).
///
/// # Errors
/// When there is no `/dev/shm` or the tmpfs cannot be mounted.
pub fn private_shm(bytes: u64) -> Result<(), String> {
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
///
/// # Errors
/// When the devpts or the bind cannot be mounted.
pub fn private_ptys() -> Result<(), String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(writable: &[&str], readable: Option<&[&str]>) -> Policy {
        let mut p = super::super::policy::build(
            &crate::config::Safety::default(),
            Path::new("/work"),
            Path::new("/tmp/run"),
            &[],
        );
        p.writable = writable.iter().map(PathBuf::from).collect();
        p.readable = readable.map(|r| r.iter().map(PathBuf::from).collect());
        p
    }

    /// Writable roots, readable roots (`None`: everywhere), what the run's `/dev` holds beyond
    /// the common devices.
    type Case<'a> = (&'a [&'a str], Option<&'a [&'a str]>, &'a [&'a str]);

    #[test]
    fn the_runs_dev_holds_the_common_devices_and_what_the_settings_grant_there() {
        let cases: &[Case<'_>] = &[
            // The defaults: the devices every run gets, nothing of the machine's shm.
            (&["/work", "/dev/null", "/dev/shm", "/dev/ptmx"], None, &[]),
            // A device granted by the settings is bound back; /dev itself never is.
            (&["/work", "/dev/kvm", "/dev"], None, &["/dev/kvm"]),
            (&["/work"], Some(&["/dev/dri", "/dev/pts/3"]), &["/dev/dri"]),
            // A repository in the machine's /dev/shm: that /dev/shm is bound back.
            (&["/dev/shm/repo"], None, &["/dev/shm"]),
        ];
        for (writable, readable, extra) in cases {
            let p = policy(writable, *readable);
            let got = kept_paths(&p, works_in_shm(&p));
            let mut want: Vec<PathBuf> = NODES.iter().map(|n| Path::new("/dev").join(n)).collect();
            want.extend(extra.iter().map(PathBuf::from));
            assert_eq!(got, want, "{writable:?} {readable:?}");
        }
    }
}
