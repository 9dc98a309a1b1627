//! The supervisor's log: tracing records to `wiggum/daemon.log`, and in the foreground warnings on
//! stderr as one readable line each (`warning: …`, like the progress lines; coloured on a
//! terminal), or every record as it is with `-v`; `STUDIO_AGENTS_LOG` sets the filter (default
//! `info`).

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
        let colour = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let layer = fmt::layer().with_ansi(colour).with_writer(std::io::stderr);
        if loud {
            layer.with_filter(level).boxed()
        } else {
            layer
                .event_format(ForPeople { colour })
                .with_filter(level)
                .boxed()
        }
    });
    let _already = tracing_subscriber::registry()
        .with(file)
        .with(terminal)
        .try_init();
    Ok(())
}

/// A record as a person reads it on the terminal: `warning: <message>` (`error:` …), no time,
/// no module path.
struct ForPeople {
    colour: bool,
}

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for ForPeople
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        use tracing::Level;
        let (word, paint) = match *event.metadata().level() {
            Level::ERROR => ("error", "\x1b[1;31m"),
            Level::WARN => ("warning", "\x1b[1;33m"),
            Level::INFO => ("info", "\x1b[1m"),
            _ => ("debug", "\x1b[2m"),
        };
        if self.colour {
            write!(writer, "{paint}{word}:\x1b[0m ")?;
        } else {
            write!(writer, "{word}: ")?;
        }
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}
