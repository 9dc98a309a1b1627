//! A process's exit through its pidfd (Linux): the descriptor turns readable once the process
//! has exited, which the runtime's reactor waits for as for a socket; then it is reaped with
//! `waitid(P_PIDFD)`. No signal handler, no polling.

use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
use tokio::io::unix::AsyncFd;

/// The exit of one child, by its pidfd.
pub struct Exit {
    fd: AsyncFd<OwnedFd>,
    status: Option<ExitStatus>,
}

impl Exit {
    /// Watch the child `pidfd` refers to (in the current runtime).
    ///
    /// # Errors
    /// When the reactor cannot watch the descriptor.
    pub fn new(pidfd: OwnedFd) -> io::Result<Exit> {
        Ok(Exit {
            fd: crate::sys::kernel::born::watch(pidfd)?,
            status: None,
        })
    }

    /// Until the child has exited: its status (the same on every later call; reaped once).
    ///
    /// # Errors
    /// When the reactor or `waitid` fails.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        loop {
            if let Some(s) = self.status {
                return Ok(s);
            }
            let mut ready = self.fd.readable().await?;
            let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG;
            match waitid(
                Id::PIDFd(std::os::fd::AsFd::as_fd(self.fd.get_ref())),
                flags,
            ) {
                Ok(WaitStatus::Exited(_, code)) => {
                    self.status = Some(ExitStatus::from_raw((code & 0xff) << 8));
                }
                Ok(WaitStatus::Signaled(_, signal, core)) => {
                    let raw = signal as i32 | if core { 0x80 } else { 0 };
                    self.status = Some(ExitStatus::from_raw(raw));
                }
                Ok(_) => ready.clear_ready(),
                Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
}
