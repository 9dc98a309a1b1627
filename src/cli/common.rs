//! What the standalone commands (`gate`, `panel`) share: settings without a loop, the document,
//! an evaluator with a scratch directory, and a runtime.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use tokio::sync::watch;

use crate::agent::process::StopLevel;
use crate::config::{self, Settings, Sources};
use crate::error::{Error, Result};
use crate::gate::evaluator::{self, Evaluator};

/// `$STUDIO_AGENTS_HOME/wiggum.toml` < `--config FILE`.
pub fn settings(config_file: Option<PathBuf>) -> Result<Settings> {
    let home = config::home_dir()?;
    config::load(&Sources {
        home: Some(home.join("wiggum.toml")),
        loop_file: None,
        explicit: config_file,
    })
}

/// The document to judge (exit 2 naming it when unreadable).
pub fn read_document(path: &Path) -> Result<String> {
    crate::sys::fsutil::read(path).map_err(|e| match e {
        Error::Io { source, .. } => Error::input(format!(
            "{}: cannot read the document: {source}",
            path.display()
        )),
        other => Error::input(other.to_string()),
    })
}

/// An evaluator chosen by a flag (or `[defaults] evaluator`), its scratch dir, and a stop
/// control for the processes it runs.
pub struct Judging {
    /// The evaluator.
    pub judge: Evaluator,
    /// Where its prompts, answers and logs go (removed on drop).
    pub work: tempfile::TempDir,
    /// Stop control (never triggered by these commands; Ctrl-C ends the process group).
    pub stops: watch::Receiver<StopLevel>,
    _tx: watch::Sender<StopLevel>,
}

/// Resolve the evaluator named by `flag` (`--evaluator`, `--model`) or the default.
pub fn judging(settings: &Settings, value: Option<&String>, flag: &str) -> Result<Judging> {
    let name = value
        .cloned()
        .unwrap_or_else(|| settings.defaults.evaluator.clone());
    let origin = if value.is_some() {
        flag
    } else {
        "[defaults] evaluator"
    };
    let (tx, rx) = watch::channel(StopLevel::None);
    let work =
        tempfile::tempdir().map_err(|e| Error::runtime(format!("cannot make a temp dir: {e}")))?;
    let judge = evaluator::resolve(
        settings,
        &name,
        origin,
        work.path().to_path_buf(),
        rx.clone(),
    )?;
    Ok(Judging {
        judge,
        work,
        stops: rx,
        _tx: tx,
    })
}

/// When to colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum Color {
    /// On a terminal, unless NO_COLOR is set.
    #[default]
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

impl Color {
    /// Whether to colour stdout.
    #[must_use]
    pub fn on(self) -> bool {
        match self {
            Color::Always => true,
            Color::Never => false,
            Color::Auto => {
                std::io::IsTerminal::is_terminal(&std::io::stdout())
                    && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
            }
        }
    }
}

/// Print through the user's pager when stdout is a terminal (`STUDIO_AGENTS_PAGER`, else
/// `PAGER`, else `less -FRX`; an empty one or `cat` prints directly), like git.
pub fn page(text: &str) {
    let pager = std::env::var("STUDIO_AGENTS_PAGER")
        .or_else(|_| std::env::var("PAGER"))
        .unwrap_or_else(|_| "less -FRX".into());
    let direct = || {
        // A closed pipe (`| head`) ends the output quietly.
        let _closed = std::io::stdout().lock().write_all(text.as_bytes());
    };
    if !std::io::stdout().is_terminal() || pager.trim().is_empty() || pager.trim() == "cat" {
        return direct();
    }
    let child = std::process::Command::new("sh")
        .args(["-c", &pager])
        .env(
            "LESS",
            std::env::var("LESS").unwrap_or_else(|_| "FRX".into()),
        )
        .stdin(std::process::Stdio::piped())
        .spawn();
    match child {
        Ok(mut c) => {
            if let Some(mut stdin) = c.stdin.take() {
                let _closed = stdin.write_all(text.as_bytes());
            }
            let _status = c.wait();
        }
        Err(_) => direct(),
    }
}
