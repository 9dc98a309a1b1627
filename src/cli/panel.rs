//! `wiggum panel <task> <file>`: the three personas alone on one document. The panel never
//! gates: it prints each persona's score, issues and strengths. Exit 1 only when every persona
//! failed to answer.

use std::path::PathBuf;

use super::common;
use crate::error::{Error, Result};
use crate::gate::rounds::Judge;
use clap::Args;

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
    let settings = common::settings(config_file)?;
    let content = common::read_document(&a.file)?;
    let mut j = common::judging(&settings, a.model.as_ref(), "--model")?;
    let judge = &mut j.judge;
    judge.enable_panel(
        &settings,
        if a.model.is_some() {
            "--model"
        } else {
            "[defaults] evaluator"
        },
    )?;
    let rt = crate::sys::runtime::runtime()?;
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
