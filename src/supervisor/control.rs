//! What other shells send a running supervisor: a stop (the request file, then SIGTERM), a
//! continue for a suspended one. With `agent::kill` (an agent's tree), the only place signals
//! are sent; `disk::handle` finds the loop, this signals it.

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::disk::handle::Handle;
use crate::disk::lock::Holder;
use crate::disk::requests;
use crate::error::{Error, Result};

/// Send `sig` to the holder, after checking it is still the process that took the lock.
pub fn signal(h: &Holder, sig: Signal) -> Result<()> {
    if !h.is_same_process() {
        return Err(Error::runtime(format!(
            "pid {} holds the lock but is not the process that took it (start time differs); not signalling it",
            h.pid
        )));
    }
    let pid = Pid::from_raw(h.pid.cast_signed());
    kill(pid, sig).map_err(|e| Error::runtime(format!("cannot signal pid {}: {e}", h.pid)))?;
    // A supervisor that is stopped (Ctrl-Z on a foreground loop, `kill -STOP`) would hold a
    // SIGTERM pending until it is continued: it is continued, as service managers do after a
    // stop signal.
    if sig == Signal::SIGTERM {
        let _continued = kill(pid, Signal::SIGCONT);
    }
    Ok(())
}

/// Ask the running loop to stop (graceful, `grace` seconds for the agent); do not wait.
pub fn request_stop(lp: &Handle, grace: u64) -> Result<Holder> {
    let h = lp.running()?;
    request_stop_of(lp, &h, grace)?;
    Ok(h)
}

/// [`request_stop`] for a holder just found by [`Handle::running`].
pub fn request_stop_of(lp: &Handle, h: &Holder, grace: u64) -> Result<()> {
    requests::update(&lp.layout.requests(), |r| r.stop_grace_secs = Some(grace))?;
    signal(h, Signal::SIGTERM)
}

/// Ask a detached delegation (pid `pid`, checked alive by its caller) to stop.
pub fn stop_delegation(pid: u32) {
    let _gone = kill(Pid::from_raw(pid.cast_signed()), Signal::SIGTERM);
}
