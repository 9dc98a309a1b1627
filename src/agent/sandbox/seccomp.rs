//! The seccomp filter of every confined run: what Landlock's rules cannot name. A filter sees a
//! system call's plain arguments, never the memory they point at, so it cannot read the path a
//! `connect` names: the mechanism is to refuse *creating* the sockets a confused agent would use
//! to reach out of its sandbox, and the ioctls that type into another terminal.
//!
//! - `socket(AF_UNIX, …)`: the user's tmux server, ssh-agent and desktop bus are pathname or
//!   abstract Unix sockets, so a Unix socket is not made at all unless `[safety] unix_sockets =
//!   "allow"`. `socketpair` (what Node and Python use for their children's pipes) stays open.
//! - `ioctl(TIOCSTI)` and `ioctl(TIOCLINUX)`: push characters into a terminal's input, typed into
//!   the user's shell when the agent can open its pty.
//! - `network = "none"`: no `AF_INET`/`AF_INET6` socket of any type. With a list of ports, TCP
//!   is confined by Landlock; datagram and raw sockets are refused unless the list names 53, the
//!   DNS port (a filter cannot see a datagram's destination: then every UDP port is open).
//! - Always: packet sockets (`AF_PACKET`), and `io_uring_setup` (its operations would bypass
//!   this filter).
//!
//! A refused call fails with `EACCES`, which programs report as a permission error. The rules
//! are data ([`denials`], pure, table-tested); [`program`] compiles them with the `seccompiler`
//! crate (the one Codex's Linux sandbox uses).

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::policy::Policy;

const AF_UNIX: u64 = 1;
const AF_INET: u64 = 2;
const AF_INET6: u64 = 10;
const AF_PACKET: u64 = 17;
const SOCK_DGRAM: u64 = 2;
const SOCK_RAW: u64 = 3;
/// The low bits of `socket`'s type argument (the rest are `SOCK_NONBLOCK`/`SOCK_CLOEXEC`).
const SOCK_TYPE_MASK: u64 = 0xf;
const TIOCSTI: u64 = 0x5412;
const TIOCLINUX: u64 = 0x541C;

/// One refused call: the system call, and the arguments that must all match (none: every call).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// What it stops, for people and docs.
    pub what: &'static str,
    /// The system call.
    pub syscall: Syscall,
    /// `(argument index, mask, value)`: the argument, masked, equals the value.
    pub args: Vec<(u8, u64, u64)>,
}

/// The system calls the filter knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Syscall {
    /// `socket(2)`.
    Socket,
    /// `ioctl(2)`.
    Ioctl,
    /// `io_uring_setup(2)`.
    IoUringSetup,
}

impl Syscall {
    fn number(self) -> i64 {
        match self {
            Syscall::Socket => nix::libc::SYS_socket,
            Syscall::Ioctl => nix::libc::SYS_ioctl,
            Syscall::IoUringSetup => nix::libc::SYS_io_uring_setup,
        }
    }
}

fn deny(what: &'static str, syscall: Syscall, args: &[(u8, u64, u64)]) -> Denial {
    Denial {
        what,
        syscall,
        args: args.to_vec(),
    }
}

/// What the filter of policy `p` refuses. Pure.
#[must_use]
pub fn denials(p: &Policy) -> Vec<Denial> {
    let all = u64::MAX;
    let mut out = vec![
        deny(
            "terminal input injection (TIOCSTI)",
            Syscall::Ioctl,
            &[(1, 0xffff_ffff, TIOCSTI)],
        ),
        deny(
            "terminal input injection (TIOCLINUX)",
            Syscall::Ioctl,
            &[(1, 0xffff_ffff, TIOCLINUX)],
        ),
        deny("packet sockets", Syscall::Socket, &[(0, all, AF_PACKET)]),
        deny(
            "io_uring (would bypass this filter)",
            Syscall::IoUringSetup,
            &[],
        ),
    ];
    if !p.unix_sockets {
        out.push(deny("Unix sockets", Syscall::Socket, &[(0, all, AF_UNIX)]));
    }
    match &p.ports {
        None => {}
        Some(ports) if ports.is_empty() => {
            out.push(deny("IPv4 sockets", Syscall::Socket, &[(0, all, AF_INET)]));
            out.push(deny("IPv6 sockets", Syscall::Socket, &[(0, all, AF_INET6)]));
        }
        Some(ports) => {
            for family in [AF_INET, AF_INET6] {
                out.push(deny(
                    "raw IP sockets",
                    Syscall::Socket,
                    &[(0, all, family), (1, SOCK_TYPE_MASK, SOCK_RAW)],
                ));
                if !ports.contains(&53) {
                    out.push(deny(
                        "datagram sockets (no DNS port in the list)",
                        Syscall::Socket,
                        &[(0, all, family), (1, SOCK_TYPE_MASK, SOCK_DGRAM)],
                    ));
                }
            }
        }
    }
    out
}

/// The compiled filter for this machine's architecture.
pub fn program(p: &Policy) -> Result<BpfProgram, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| format!("seccomp on {}: {e}", std::env::consts::ARCH))?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for d in denials(p) {
        let entry = rules.entry(d.syscall.number()).or_default();
        if d.args.is_empty() {
            // Every call: an empty list of rules matches unconditionally.
            entry.clear();
            continue;
        }
        let conditions = d
            .args
            .iter()
            .map(|&(index, mask, value)| {
                let op = if mask == u64::MAX {
                    SeccompCmpOp::Eq
                } else {
                    SeccompCmpOp::MaskedEq(mask)
                };
                // Socket families, types and ioctl requests are 32-bit values.
                SeccompCondition::new(index, SeccompCmpArgLen::Dword, op, value & 0xffff_ffff)
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("seccomp rule: {e}"))?;
        entry.push(SeccompRule::new(conditions).map_err(|e| format!("seccomp rule: {e}"))?);
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(nix::libc::EACCES as u32),
        arch,
    )
    .map_err(|e| format!("seccomp filter: {e}"))?;
    filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| format!("seccomp filter: {e}"))
}

/// Install the filter on this process (inherited by what it executes). `no_new_privs` must be
/// set (Landlock sets it; so does this, for a run without it).
pub fn apply(p: &Policy) -> Result<(), String> {
    let prog = program(p)?;
    nix::sys::prctl::set_no_new_privs().map_err(|e| format!("no_new_privs: {e}"))?;
    seccompiler::apply_filter(&prog).map_err(|e| format!("seccomp: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(ports: Option<Vec<u16>>, unix: bool) -> Policy {
        let mut p = super::super::policy::build(
            &crate::config::Safety::default(),
            std::path::Path::new("/r"),
            std::path::Path::new("/t"),
            &[],
        );
        p.ports = ports;
        p.unix_sockets = unix;
        p
    }

    fn whats(p: &Policy) -> Vec<&'static str> {
        let mut w: Vec<_> = denials(p).into_iter().map(|d| d.what).collect();
        w.dedup();
        w
    }

    #[test]
    fn what_is_refused_follows_the_network_and_socket_settings() {
        let always = [
            "terminal input injection (TIOCSTI)",
            "terminal input injection (TIOCLINUX)",
            "packet sockets",
            "io_uring (would bypass this filter)",
        ];
        type Row<'a> = (Option<Vec<u16>>, bool, &'a [&'a str]);
        let table: &[Row<'_>] = &[
            (None, false, &["Unix sockets"]),
            (None, true, &[]),
            (
                Some(vec![]),
                false,
                &["Unix sockets", "IPv4 sockets", "IPv6 sockets"],
            ),
            (
                Some(vec![443]),
                true,
                &[
                    "raw IP sockets",
                    "datagram sockets (no DNS port in the list)",
                    "raw IP sockets",
                    "datagram sockets (no DNS port in the list)",
                ],
            ),
            (Some(vec![443, 53]), true, &["raw IP sockets"]),
        ];
        for (ports, unix, extra) in table {
            let p = policy(ports.clone(), *unix);
            let mut want: Vec<&str> = always.to_vec();
            want.extend(extra.iter().copied());
            want.dedup();
            assert_eq!(whats(&p), want, "{ports:?} unix={unix}");
            // Every set compiles for this machine.
            program(&p).unwrap();
        }
    }
}
