//! The dashboard's port, out of every run's reach: `serve` records the port it listens on in the
//! store (`dashboard/<port>`, its pid inside), and every run's network rules leave out the ports
//! of the dashboards still running.

use std::path::{Path, PathBuf};

fn dir(store: &Path) -> PathBuf {
    store.join("dashboard")
}

/// Record that this process serves the dashboard on `port`. A failure is a warning: the
/// dashboard still serves, and agent runs may then reach it.
pub fn record(store: &Path, port: u16) {
    let d = dir(store);
    let written = std::fs::create_dir_all(&d)
        .and_then(|()| std::fs::write(d.join(port.to_string()), std::process::id().to_string()));
    if let Err(e) = written {
        tracing::warn!(
            "cannot record the dashboard's port in {}: {e}; agent runs are not kept from it",
            d.display()
        );
    }
}

/// The ports of the dashboards still running (their recording process alive).
#[must_use]
pub fn ports(store: &Path) -> Vec<u16> {
    let Ok(rd) = std::fs::read_dir(dir(store)) else {
        return Vec::new();
    };
    let mut out: Vec<u16> = rd
        .flatten()
        .filter_map(|e| {
            let port: u16 = e.file_name().to_str()?.parse().ok()?;
            let pid: i32 = std::fs::read_to_string(e.path())
                .ok()?
                .trim()
                .parse()
                .ok()?;
            alive(pid).then_some(port)
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

fn alive(pid: i32) -> bool {
    pid > 0 && nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
}
