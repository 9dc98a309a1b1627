//! Signals to the supervisor: the first SIGTERM or SIGINT is a graceful stop (a `stop --timeout`
//! grace turns into a forced one when it runs out), the second forces; SIGHUP is ignored.

use std::time::Duration;

use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;

use crate::agent::process::StopLevel;
use crate::disk::requests;
use crate::error::{Error, Result};

/// Set when the stop came from SIGINT (Ctrl-C): the process then exits 130, as shells expect.
pub static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Turn stop signals into stop levels on `tx`.
pub fn spawn_handler(
    tx: watch::Sender<StopLevel>,
    control_path: Option<std::path::PathBuf>,
) -> Result<()> {
    let sig = |k: SignalKind| {
        signal(k).map_err(|e| Error::runtime(format!("cannot install a signal handler: {e}")))
    };
    let mut term = sig(SignalKind::terminate())?;
    let mut int = sig(SignalKind::interrupt())?;
    let mut hup = sig(SignalKind::hangup())?;
    // Continued after a stop: counted, so the run that went on unwatched is rejected.
    let mut cont = sig(SignalKind::from_raw(nix::libc::SIGCONT))?;
    tokio::spawn(async move {
        while cont.recv().await.is_some() {
            tracing::warn!("the supervisor was stopped and is continued");
            crate::sys::resumed::note();
        }
    });
    tokio::spawn(async move {
        let mut count = 0;
        loop {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => { INTERRUPTED.store(true, std::sync::atomic::Ordering::Relaxed); }
                _ = hup.recv() => { tracing::info!("SIGHUP ignored"); continue; }
            }
            count += 1;
            if count == 1 {
                tracing::info!("stop requested: stopping the agent (a second signal forces)");
                let _sent = tx.send(StopLevel::Now);
                if let Some(g) = control_path
                    .as_ref()
                    .and_then(|p| requests::read(p).stop_grace_secs)
                {
                    let tx = tx.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(Duration::from_secs(g)).await;
                        let _sent = tx.send(StopLevel::Force);
                    });
                }
            } else {
                tracing::warn!("second stop signal: forcing");
                let _sent = tx.send(StopLevel::Force);
            }
        }
    });
    Ok(())
}
