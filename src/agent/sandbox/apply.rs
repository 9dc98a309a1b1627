//! Applying a policy to the current process on Linux: read-only mounts of the protected files,
//! no capabilities, and Landlock rules. Runs in the single-threaded `sandbox-exec` helper just
//! before it executes the agent's shell, so every process of the run inherits them.

use landlock::{
    ABI, Access, AccessFs, AccessNet, LandlockStatus, NetPort, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};

use super::policy::{Enforcement, Policy};
use crate::config::SandboxMode;

/// The newest ABI this build knows; older kernels get what they offer (best effort).
const TARGET: ABI = ABI::V6;

/// Make the policy's protected paths read-only for this process and what it executes: a private
/// mount namespace with read-only bind mounts (as bubblewrap does). Needs root; elsewhere the
/// after-run check alone protects them. Returns whether it was done.
pub fn read_only(p: &Policy) -> Result<bool, String> {
    use nix::mount::{MsFlags, mount};
    use nix::sched::{CloneFlags, unshare};
    let paths: Vec<&std::path::PathBuf> = p.read_only.iter().filter(|r| r.exists()).collect();
    if p.read_only.is_empty() || p.mode == SandboxMode::Off || !nix::unistd::geteuid().is_root() {
        return Ok(false);
    }
    unshare(CloneFlags::CLONE_NEWNS).map_err(|e| format!("mount namespace: {e}"))?;
    let none: Option<&str> = None;
    mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none)
        .map_err(|e| format!("private mounts: {e}"))?;
    for path in paths {
        mount(Some(path), path, none, MsFlags::MS_BIND, none)
            .map_err(|e| format!("bind {}: {e}", path.display()))?;
        let ro = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY;
        mount(none, path, none, ro, none)
            .map_err(|e| format!("read-only {}: {e}", path.display()))?;
    }
    Ok(true)
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

/// Confine this process (and what it executes) with Landlock. Returns what the kernel enforced.
pub fn landlock(p: &Policy) -> Result<Enforcement, String> {
    let mut e = Enforcement {
        mode: p.mode.as_str().into(),
        ..Enforcement::default()
    };
    if p.mode == SandboxMode::Off {
        return Ok(e);
    }
    let write = AccessFs::from_write(TARGET);
    let read = AccessFs::from_read(TARGET);
    // Reads are handled when narrowed, or when a directory is hidden (then every other path
    // is covered by a read rule).
    let hide = p.readable.is_none() && !p.hidden.is_empty();
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
    if p.ports.is_some() {
        ruleset = ruleset
            .handle_access(AccessNet::ConnectTcp)
            .map_err(err("network rules"))?;
    }
    let mut created = ruleset.create().map_err(err("ruleset"))?;
    let existing = |v: &[std::path::PathBuf]| -> Vec<std::path::PathBuf> {
        v.iter().filter(|w| w.exists()).cloned().collect()
    };
    created = created
        .add_rules(path_beneath_rules(existing(&p.writable), handled))
        .map_err(err("write roots"))?;
    if let Some(r) = &p.readable {
        created = created
            .add_rules(path_beneath_rules(existing(r), read))
            .map_err(err("read roots"))?;
    }
    if hide {
        let cover = super::policy::cover_except(&p.hidden, |d| {
            std::fs::read_dir(d)
                .map(|rd| rd.flatten().map(|e| e.path()).collect())
                .unwrap_or_default()
        });
        created = created
            .add_rules(path_beneath_rules(cover, read))
            .map_err(err("read cover"))?;
    }
    for port in p.ports.iter().flatten() {
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
