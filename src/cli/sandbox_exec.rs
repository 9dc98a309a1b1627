//! `studio-agents sandbox-exec --policy JSON -- CMD…` (hidden): the leader of every agent run.
//! In this fresh, single-threaded process it sets the resource limits and the Landlock rules of
//! the policy, then executes the command, which — and every process it starts — inherits them.
//! `--probe` applies the policy and prints what the kernel enforced, as JSON, instead.

use std::os::unix::process::CommandExt;

use clap::Args;

use crate::agent::sandbox::{Policy, apply};
use crate::config::SandboxMode;
use crate::error::{Error, Result};

/// The exit code of a run the harness refused (as a shell's "cannot execute").
pub const REFUSED: i32 = 126;

/// Flags of `sandbox-exec`.
#[derive(Debug, Args)]
pub struct SandboxArgs {
    /// The policy, as JSON.
    #[arg(long)]
    pub policy: String,
    /// Apply the policy and print what was enforced.
    #[arg(long)]
    pub probe: bool,
    /// The command to execute.
    #[arg(last = true)]
    pub command: Vec<String>,
}

/// Apply, then execute (never returns on success).
pub fn run(a: &SandboxArgs) -> Result<i32> {
    let policy: Policy =
        serde_json::from_str(&a.policy).map_err(|e| Error::input(format!("--policy: {e}")))?;
    // First: everything this run starts lives in its cgroup, whatever it does to escape.
    if let Some(group) = &policy.cgroup
        && let Err(e) = crate::sys::cgroup::join(group)
    {
        eprintln!(
            "studio-agents sandbox: cannot join {}: {e}; the run is stopped by process group and token",
            group.display()
        );
    }
    if let Err(e) = apply::limits(&policy) {
        eprintln!("studio-agents sandbox: {e}");
        return Ok(REFUSED);
    }
    // Before Landlock (which forbids mount changes once enforced).
    let read_only = match apply::read_only(&policy) {
        Ok(done) => done,
        Err(e) => {
            eprintln!("studio-agents sandbox: {e}; protected files are checked after the run");
            false
        }
    };
    let mut enforced = match apply::landlock(&policy) {
        Ok(e) => e,
        Err(e) if policy.mode == SandboxMode::Required => {
            eprintln!("studio-agents sandbox: {e}; refusing to run unconfined");
            return Ok(REFUSED);
        }
        Err(e) => crate::agent::sandbox::Enforcement {
            mode: policy.mode.as_str().into(),
            note: e,
            ..Default::default()
        },
    };
    enforced.read_only = read_only;
    if policy.mode != SandboxMode::Off {
        // After the mounts (they need the capabilities), before the filter (it needs none).
        match apply::drop_capabilities() {
            Ok(dropped) => enforced.no_capabilities = dropped,
            Err(e) if policy.mode == SandboxMode::Required => {
                eprintln!("studio-agents sandbox: {e}; refusing to run with privileges");
                return Ok(REFUSED);
            }
            Err(e) => eprintln!("studio-agents sandbox: {e}"),
        }
        match crate::agent::sandbox::seccomp::apply(&policy) {
            Ok(()) => enforced.seccomp = true,
            Err(e) if policy.mode == SandboxMode::Required => {
                eprintln!("studio-agents sandbox: {e}; refusing to run unconfined");
                return Ok(REFUSED);
            }
            Err(e) => eprintln!("studio-agents sandbox: {e}"),
        }
    }
    if a.probe {
        println!("{}", serde_json::to_string(&enforced).unwrap_or_default());
        return Ok(0);
    }
    if policy.mode == SandboxMode::Required && !enforced.filesystem {
        eprintln!(
            "studio-agents sandbox: {}; [safety] sandbox = \"required\" refuses to run unconfined",
            enforced.note
        );
        return Ok(REFUSED);
    }
    let Some((program, args)) = a.command.split_first() else {
        return Err(Error::input("sandbox-exec: no command"));
    };
    let mut command = std::process::Command::new(program);
    command.args(args);
    if enforced.filesystem {
        for (k, v) in &policy.when_enforced {
            if std::env::var_os(k).is_none() {
                command.env(k, v);
            }
        }
    }
    let err = command.exec();
    eprintln!("studio-agents sandbox: cannot execute {program}: {err}");
    Ok(REFUSED)
}
