//! Applying a policy to the current process on Linux: a private mount namespace (the protected
//! files read-only, a private `/dev/shm` and terminals of its own), no capabilities, and Landlock
//! rules. Runs in the single-threaded `sandbox-exec` helper just before it executes the agent's
//! shell, so every process of the run inherits them.

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, LandlockStatus, NetPort, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};

use super::policy::{Enforcement, Policy};
use crate::config::SandboxMode;

/// The newest ABI this build knows; older kernels get what they offer (best effort).
const TARGET: ABI = ABI::V6;

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
    let mut done = Mounts {
        read_only: !p.read_only.is_empty(),
        home,
        home_writable,
        ..Mounts::default()
    };
    done.shm = private_shm(p.shm_bytes)
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
    for d in [&upper, &work] {
        std::fs::create_dir_all(d).map_err(|e| format!("the home's layer {}: {e}", d.display()))?;
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

/// The terminals of the machine in `/dev` the run may not open (its own private `/dev/pts`
/// aside), listed now.
fn terminals(private_ptys: bool) -> Vec<PathBuf> {
    let dev = Path::new("/dev");
    let names: Vec<String> = std::fs::read_dir(dev)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names
        .iter()
        .filter(|n| super::policy::is_terminal(n) && !(private_ptys && n.as_str() == "pts"))
        .map(|n| dev.join(n))
        .collect()
}

/// No privilege inside: every capability leaves the bounding, ambient and inheritable sets, so
/// what this process executes has none even as root (and, with `no_new_privs`, cannot gain one
/// from a setuid program). Returns whether there was anything to drop (only root has it).
pub fn drop_capabilities() -> Result<bool, String> {
    use caps::CapSet;
    nix::sys::prctl::set_no_new_privs().map_err(|e| format!("no_new_privs: {e}"))?;
    let bounding = caps::read(None, CapSet::Bounding).map_err(|e| format!("capabilities: {e}"))?;
    if bounding.is_empty() {
        return Ok(true);
    }
    let effective =
        caps::read(None, CapSet::Effective).map_err(|e| format!("capabilities: {e}"))?;
    if !effective.contains(&caps::Capability::CAP_SETPCAP) {
        // Not root: nothing to drop, nothing the run could gain (no_new_privs).
        return Ok(false);
    }
    for cap in bounding {
        caps::drop(None, CapSet::Bounding, cap).map_err(|e| format!("drop {cap}: {e}"))?;
    }
    caps::clear(None, CapSet::Ambient).map_err(|e| format!("ambient capabilities: {e}"))?;
    caps::clear(None, CapSet::Inheritable).map_err(|e| format!("inheritable capabilities: {e}"))?;
    Ok(true)
}

/// Confine this process (and what it executes) with Landlock; `mounts` is what the private
/// mount namespace holds (a private `/dev/pts` is the run's own to use). Returns what the kernel
/// enforced.
pub fn landlock(p: &Policy, mounts: Mounts) -> Result<Enforcement, String> {
    let mut e = Enforcement {
        mode: p.mode.as_str().into(),
        ..Enforcement::default()
    };
    if p.mode == SandboxMode::Off {
        return Ok(e);
    }
    let write = AccessFs::from_write(TARGET);
    let read = AccessFs::from_read(TARGET);
    // Out of sight: the store, and every terminal of the machine (reading one is reading what
    // its user types; writing one, typing into their screen).
    let mut hidden = p.hidden.clone();
    hidden.extend(terminals(mounts.ptys));
    let mut writable = p.writable.clone();
    if mounts.ptys {
        writable.push("/dev/pts".into());
    }
    if let Some(h) = p.home_layer.as_ref().filter(|_| mounts.home_writable) {
        writable.push(h.home.clone());
    }
    // Reads are handled when narrowed, or when something is hidden (then every other path is
    // covered by a read rule).
    let hide = !hidden.is_empty();
    let handled = if p.readable.is_some() || hide {
        write | read
    } else {
        write
    };
    fn err(what: &'static str) -> impl Fn(landlock::RulesetError) -> String {
        move |x| format!("landlock {what}: {x}")
    }
    // Signals and abstract Unix sockets reach only the run's own processes (ABI 6; best
    // effort: an older kernel leaves them open, and `scoped` says so).
    let mut ruleset = Ruleset::default()
        .handle_access(handled)
        .map_err(err("filesystem rules"))?
        .scope(Scope::from_all(TARGET))
        .map_err(err("scopes"))?;
    // Any port but the closed ones: a rule per port, the closed ones left out.
    let open_but = (p.ports.is_none() && !p.closed_ports.is_empty())
        .then(|| super::policy::allowed_but(&p.closed_ports));
    let ports = p.ports.as_ref().or(open_but.as_ref());
    if ports.is_some() {
        ruleset = ruleset
            .handle_access(AccessNet::ConnectTcp)
            .map_err(err("network rules"))?;
    }
    let mut created = ruleset.create().map_err(err("ruleset"))?;
    let existing =
        |v: &[PathBuf]| -> Vec<PathBuf> { v.iter().filter(|w| w.exists()).cloned().collect() };
    // A link needs no rule of its own (what it names is covered where it lies); one into a
    // pipe (`/dev/stdin`) could not have one.
    let list = |d: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(d)
            .map(|rd| {
                rd.flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| !t.is_symlink()))
                    .map(|e| e.path())
                    .collect()
            })
            .unwrap_or_default()
    };
    created = created
        .add_rules(path_beneath_rules(existing(&writable), handled))
        .map_err(err("write roots"))?;
    let reads = match &p.readable {
        Some(r) => super::policy::reads_without(&existing(r), &hidden, list),
        None if hide => super::policy::cover_except(&hidden, list),
        None => Vec::new(),
    };
    created = created
        .add_rules(path_beneath_rules(reads, read))
        .map_err(err("read roots"))?;
    for port in ports.into_iter().flatten() {
        created = created
            .add_rule(NetPort::new(*port, AccessNet::ConnectTcp))
            .map_err(err("a port"))?;
    }
    let status = created.restrict_self().map_err(err("restrict"))?;
    e.abi = match status.landlock {
        LandlockStatus::Available { effective_abi, .. } => effective_abi as u8,
        _ => 0,
    };
    e.filesystem = status.ruleset != RulesetStatus::NotEnforced;
    e.scoped = e.filesystem && e.abi >= 6;
    e.network = p.ports.is_some() && e.abi >= 4 && e.filesystem;
    e.note = match status.landlock {
        LandlockStatus::NotEnabled => "Landlock is not enabled in this kernel".into(),
        LandlockStatus::NotImplemented => "kernel has no Landlock".into(),
        LandlockStatus::Available { .. } if p.ports.is_some() && !e.network => {
            format!(
                "network rules need Landlock ABI 4, the kernel has {}",
                e.abi
            )
        }
        _ => String::new(),
    };
    Ok(e)
}
