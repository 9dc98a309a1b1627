//! The one module with `unsafe` code: what the kernel interfaces need and safe Rust cannot say.
//!
//! - [`KillWithParent`]: when the supervisor dies abruptly (the OOM killer, `kill -9`), the
//!   kernel sends the agent's leader SIGKILL (Linux `PR_SET_PDEATHSIG`), so an agent CLI does
//!   not keep working — and spending — with nobody watching. The rest of its tree is cleaned up
//!   by the next `start` (the process group and token are recorded in state). The signal is tied
//!   to the thread that forked: the supervisor spawns agents from its current-thread runtime,
//!   whose thread lives as long as the process.
//! - [`default_sigpipe`]: a command whose reader goes away (`status | head -1`) ends quietly, as
//!   Unix tools do, instead of panicking on a failed write.
#![allow(unsafe_code)]

use std::io;

use process_wrap::tokio::{CommandWrap, CommandWrapper};

/// A process-wrap layer that sets the parent-death signal in the child.
#[derive(Debug, Clone, Copy)]
pub struct KillWithParent;

impl CommandWrapper for KillWithParent {
    fn pre_spawn(
        &mut self,
        command: &mut tokio::process::Command,
        _core: &CommandWrap,
    ) -> io::Result<()> {
        #[cfg(target_os = "linux")]
        {
            let parent = nix::unistd::getpid();
            // SAFETY: runs in the forked child before exec. It calls only prctl(2) and
            // getppid(2), both async-signal-safe, and allocates nothing.
            unsafe {
                command.pre_exec(move || {
                    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                        .map_err(io::Error::from)?;
                    // The parent may have died before the signal was armed.
                    if nix::unistd::getppid() != parent {
                        return Err(io::Error::other("the supervisor died while spawning"));
                    }
                    Ok(())
                });
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = command;
        Ok(())
    }
}

/// Restore the default action of SIGPIPE (the Rust runtime ignores it, which turns a closed pipe
/// into a panic in `println!`). For the commands that print; never for the supervisor, which
/// talks to sockets and pipes it must survive losing.
pub fn default_sigpipe() {
    // SAFETY: called once at the start of `main`, before any thread is spawned; SIG_DFL installs
    // no handler, so there is no handler code that could be unsound.
    let _previous = unsafe {
        nix::sys::signal::signal(
            nix::sys::signal::Signal::SIGPIPE,
            nix::sys::signal::SigHandler::SigDfl,
        )
    };
}
