//! The supervisor's log: tracing records to `wiggum/daemon.log` when detached, to stderr (coloured
//! on a terminal) in the foreground; `STUDIO_AGENTS_LOG` sets the filter (default `info`).

use crate::disk::layout::Layout;
use crate::error::Result;

/// Install the subscriber (once per process).
pub fn init(layout: &Layout, daemonized: bool) -> Result<()> {
    use tracing_subscriber::EnvFilter;
    let filter =
        EnvFilter::try_from_env("STUDIO_AGENTS_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    if daemonized {
        let appender = tracing_appender::rolling::never(layout.wiggum(), "daemon.log");
        let _already = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(false)
            .with_writer(appender)
            .try_init();
    } else {
        let _already = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_writer(std::io::stderr)
            .try_init();
    }
    Ok(())
}
