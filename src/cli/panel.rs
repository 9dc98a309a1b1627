//! `wiggum panel <task> <file>`: the three personas alone on one document. The panel never
//! gates: it prints each persona's score, issues and strengths. Exit 1 only when every persona
//! failed to answer.

use std::path::PathBuf;

use clap::Args;
use tokio::sync::watch;

use crate::agent::process::StopLevel;
use crate::config::{self, Sources};
use crate::error::{Error, Result};
use crate::wiggum::evaluator;
use crate::wiggum::gate::Judge;

/// Flags of `panel`.
#[derive(Debug, Args)]
pub struct PanelArgs {
    /// What the document is for.
    pub task: String,
    /// The document (Markdown).
    pub file: PathBuf,
    /// The model evaluator the personas run on (an [evaluators] entry).
    #[arg(long, alias = "evaluator", value_name = "NAME")]
    pub model: Option<String>,
    /// Print the reviews as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Run `panel`.
pub fn run(a: &PanelArgs, config_file: Option<PathBuf>) -> Result<i32> {
    let home = config::home_dir()?;
    let settings = config::load(&Sources {
        home: Some(home.join("wiggum.toml")),
        loop_file: None,
        explicit: config_file,
    })?;
    let content = std::fs::read_to_string(&a.file).map_err(|e| {
        Error::input(format!(
            "{}: cannot read the document: {e}",
            a.file.display()
        ))
    })?;
    let name = a
        .model
        .clone()
        .unwrap_or_else(|| settings.defaults.evaluator.clone());
    let origin = if a.model.is_some() {
        "--model"
    } else {
        "[defaults] evaluator"
    };
    let (_tx, rx) = watch::channel(StopLevel::None);
    let work =
        tempfile::tempdir().map_err(|e| Error::runtime(format!("cannot make a temp dir: {e}")))?;
    let mut judge = evaluator::resolve(&settings, &name, origin, work.path().to_path_buf(), rx)?;
    judge.enable_panel(&settings)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::runtime(format!("cannot start the async runtime: {e}")))?;
    let reviews = rt.block_on(judge.panel(&a.task, &content));
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&reviews).unwrap_or_default()
        );
    } else {
        for r in &reviews {
            let score = r
                .score
                .map_or_else(|| "-".to_string(), |s| format!("{s:.1}"));
            println!("{} ({score}/10)", r.persona);
            for i in &r.issues {
                println!("  - {i}");
            }
            for s in &r.strengths {
                println!("  + {s}");
            }
        }
    }
    if reviews.is_empty() {
        return Err(Error::runtime(
            "no persona answered (see the warnings above)",
        ));
    }
    Ok(0)
}
