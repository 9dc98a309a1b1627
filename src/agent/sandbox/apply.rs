//! Applying a policy to the current process on Linux, after its mount namespace
//! (`sandbox::mounts`): no capabilities, and Landlock rules. Runs in the single-threaded
//! `sandbox-exec` helper just before it executes the agent's shell, so every process of the run
//! inherits them.

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, LandlockStatus, NetPort, RestrictionStatus,
    Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope,
    path_beneath_rules,
};

use super::mounts::Mounts;
use super::policy::{Enforcement, Policy};
use crate::config::SandboxMode;

/// The newest ABI this build knows; older kernels get what they offer (best effort).
const TARGET: ABI = ABI::V6;

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
    let e = Enforcement {
        mode: p.mode.as_str().into(),
        ..Enforcement::default()
    };
    if p.mode == SandboxMode::Off {
        return Ok(e);
    }
    let (hidden, writable) = hidden_and_writable(p, mounts);
    // Reads are handled when narrowed, or when something is hidden (then every other path is
    // covered by a read rule).
    let handled = if p.readable.is_some() || !hidden.is_empty() {
        AccessFs::from_write(TARGET) | AccessFs::from_read(TARGET)
    } else {
        AccessFs::from_write(TARGET)
    };
    // Any port but the closed ones: a rule per port, the closed ones left out.
    let open_but = (p.ports.is_none() && !p.closed_ports.is_empty())
        .then(|| super::policy::allowed_but(&p.closed_ports));
    let ports = p.ports.as_ref().or(open_but.as_ref());
    let mut created = ruleset(handled, ports.is_some())?;
    created = path_rules(created, p, &hidden, &writable, handled)?;
    for port in ports.into_iter().flatten() {
        created = created
            .add_rule(NetPort::new(*port, AccessNet::ConnectTcp))
            .map_err(err("a port"))?;
    }
    let status = created.restrict_self().map_err(err("restrict"))?;
    Ok(enforced(e, p, &status))
}

/// A Landlock error as the line that says which step failed.
fn err(what: &'static str) -> impl Fn(landlock::RulesetError) -> String {
    move |x| format!("landlock {what}: {x}")
}

/// What Landlock must keep out of the run's sight (the store and the secret places, and every
/// terminal of the machine: reading one is reading what its user types; writing one, typing
/// into their screen) — none of it where the mount namespace masked them and made the run a
/// `/dev` of its own — and where it may write.
fn hidden_and_writable(p: &Policy, mounts: Mounts) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut hidden = if mounts.hidden_masked {
        Vec::new()
    } else {
        p.hidden.clone()
    };
    if !mounts.dev {
        hidden.extend(terminals(mounts.ptys));
    }
    let mut writable = p.writable.clone();
    if mounts.ptys {
        writable.push("/dev/pts".into());
    }
    if let Some(h) = p.home_layer.as_ref().filter(|_| mounts.home_writable) {
        writable.push(h.home.clone());
    }
    (hidden, writable)
}

/// The ruleset handling `handled`, the scopes, and (with `net`) TCP connections. Signals and
/// abstract Unix sockets reach only the run's own processes (ABI 6; best effort: an older
/// kernel leaves them open, and `scoped` says so).
fn ruleset(handled: BitFlags<AccessFs>, net: bool) -> Result<RulesetCreated, String> {
    let mut ruleset = Ruleset::default()
        .handle_access(handled)
        .map_err(err("filesystem rules"))?
        .scope(Scope::from_all(TARGET))
        .map_err(err("scopes"))?;
    if net {
        ruleset = ruleset
            .handle_access(AccessNet::ConnectTcp)
            .map_err(err("network rules"))?;
    }
    ruleset.create().map_err(err("ruleset"))
}

/// The rules of the writable roots, then of what may be read: the narrowed reads less what is
/// hidden, or everything but what is hidden.
fn path_rules(
    created: RulesetCreated,
    p: &Policy,
    hidden: &[PathBuf],
    writable: &[PathBuf],
    handled: BitFlags<AccessFs>,
) -> Result<RulesetCreated, String> {
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
    let created = created
        .add_rules(path_beneath_rules(existing(writable), handled))
        .map_err(err("write roots"))?;
    let reads = match &p.readable {
        Some(r) => super::policy::reads_without(&existing(r), hidden, list),
        None if !hidden.is_empty() => super::policy::cover_except(hidden, list),
        None => Vec::new(),
    };
    created
        .add_rules(path_beneath_rules(reads, AccessFs::from_read(TARGET)))
        .map_err(err("read roots"))
}

/// What the kernel enforced, and why not all of it when it did not.
fn enforced(mut e: Enforcement, p: &Policy, status: &RestrictionStatus) -> Enforcement {
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
    e
}
