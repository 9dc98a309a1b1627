//! The supervisor's log: tracing records to `wiggum/daemon.log`, and in the foreground warnings on
//! stderr (coloured on a terminal; every record with `-v`); `STUDIO_AGENTS_LOG` sets the filter
//! (default `info`).

use crate::disk::layout::Layout;
use crate::error::Result;

/// The terminal's default leaves out the file watch's own warnings (they stay in `daemon.log`).
const QUIET_NOTIFY: &str = "notify=error";

/// Install the subscriber (once per process). Detached, every record goes to `daemon.log`. In
/// the foreground too, and stderr shows warnings and errors (everything with `verbose` or
/// `STUDIO_AGENTS_LOG` set), so the terminal shows the progress lines, not log records.
pub fn init(layout: &Layout, daemonized: bool, verbose: bool) -> Result<()> {
    use tracing_subscriber::filter::LevelFilter;
    use tracing_subscriber::prelude::*;
    use tracing_subscriber::{EnvFilter, fmt};
    // An empty STUDIO_AGENTS_LOG counts as unset.
    let from_env = std::env::var("STUDIO_AGENTS_LOG")
        .ok()
        .filter(|v| !v.trim().is_empty());
    let loud = verbose || from_env.is_some();
    let filter = || {
        from_env
            .as_deref()
            .and_then(|v| EnvFilter::try_new(v).ok())
            .unwrap_or_else(|| EnvFilter::new("info"))
    };
    // One file, appended to, never rotated while the loop runs (`detach::rotate_log` before).
    let log = crate::sys::fsutil::open_append(&layout.daemon_log())?;
    let file = fmt::layer()
        .with_ansi(false)
        .with_writer(std::sync::Mutex::new(log))
        .with_filter(filter());
    let terminal = (!daemonized).then(|| {
        let level = if loud {
            filter()
        } else {
            // notify warns of its own watch bookkeeping (a watched directory the agent
            // deleted); the loop handles what the watch cannot vouch for itself.
            EnvFilter::default()
                .add_directive(LevelFilter::WARN.into())
                .add_directive(QUIET_NOTIFY.parse().expect("a valid directive"))
        };
        fmt::layer()
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_writer(std::io::stderr)
            .with_filter(level)
    });
    let _already = tracing_subscriber::registry()
        .with(file)
        .with(terminal)
        .try_init();
    Ok(())
}
