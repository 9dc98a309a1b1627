//! The one module with `unsafe` code: when the supervisor dies abruptly (the OOM killer,
//! `kill -9`), the kernel sends the agent's leader SIGKILL (Linux `PR_SET_PDEATHSIG`), so an agent
//! CLI does not keep working — and spending — with nobody watching. The rest of its tree is
//! cleaned up by the next `start` (the process group and token are recorded in state).
//!
//! The signal is tied to the thread that forked: the supervisor spawns agents from its
//! current-thread runtime, whose thread lives as long as the process.
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
