//! `start --dry-run`: everything a start would resolve — settings, agent, evaluator, the harness,
//! limits — and the prompt it would feed next, printed; nothing run, nothing written.

use serde::Serialize;

use super::start::Prepared;
use super::{fix_plan, templates};
use crate::config::{self, Settings};
use crate::disk::state::Harness;
use crate::error::Result;
use crate::sys::fsutil;

/// What a start would do.
#[derive(Debug, Serialize)]
pub struct DryRun {
    /// The topic.
    pub topic: String,
    /// The artifact directory.
    pub artifact_path: std::path::PathBuf,
    /// The agent's name and the command it would run.
    pub agent: String,
    /// Its command line.
    pub agent_command: String,
    /// The evaluator.
    pub evaluator: String,
    /// `planning` (no plan items yet) or `iteration N`.
    pub next: String,
    /// The prompt the next agent run would be fed.
    pub prompt: String,
    /// What would confine it.
    pub harness: Harness,
    /// The environment names it would get.
    pub agent_env: Vec<String>,
    /// Warnings `start` would print.
    pub notes: Vec<String>,
    /// The effective settings.
    pub settings: Settings,
}

/// What the next prompt says of the questions: the open one and those answered, with the
/// answers given since (as the run would take them).
fn questions(layout: &crate::disk::layout::Layout) -> String {
    let kept = crate::disk::state::questions(layout);
    let (mut question, mut earlier, mut answered) = (kept.question, kept.earlier, kept.answered);
    let given = fsutil::read_opt(&layout.answer())
        .ok()
        .flatten()
        .and_then(|t| crate::disk::questions::parse_answers(&t).ok())
        .unwrap_or_default();
    for a in given {
        crate::disk::questions::take(&mut question, &mut earlier, &mut answered, a);
    }
    answered
        .iter()
        .chain(&earlier)
        .chain(&question)
        .map(super::asking::prompt_section)
        .collect()
}

/// Resolve what a start would do, writing nothing.
pub fn plan(p: &Prepared) -> Result<DryRun> {
    let layout = &p.layout;
    let memory = |name: &str| -> Result<String> {
        Ok(match fsutil::read_opt(&layout.memory(name))? {
            Some(t) => t,
            None => templates::render(
                &templates::template(name, p.own_templates().as_deref(), p.kind())?,
                &p.start_vars(),
            ),
        })
    };
    let plan = fsutil::read_opt(&layout.fix_plan())?.unwrap_or_default();
    let done = crate::git::head_iteration(layout.root()).map_or(0, |(n, _)| n);
    let (next, prompt) = if fix_plan::has_items(&plan) {
        let n = done + 1;
        let vars = templates::iteration_vars(n, &layout.iteration_dir(n));
        (
            format!("iteration {n}"),
            templates::render(&memory("PROMPT.md")?, &vars),
        )
    } else {
        let vars = templates::iteration_vars(0, &layout.wiggum());
        (
            "planning".to_string(),
            templates::render(&memory("PLANNING_PROMPT.md")?, &vars),
        )
    };
    let prompt = prompt + &questions(layout);
    let program = crate::agent::sandbox::env::program_of(&p.agent.table.command);
    let agent_env = crate::agent::sandbox::env::allowed(
        std::env::vars(),
        &program,
        &p.settings.safety.env_allow,
    )
    .into_iter()
    .map(|(k, _)| k)
    .collect();
    Ok(DryRun {
        topic: p.topic.clone(),
        artifact_path: layout.root().to_path_buf(),
        agent: p.agent.name.clone(),
        agent_command: p.agent.table.command.clone(),
        evaluator: p.evaluator.clone(),
        next,
        prompt,
        harness: p.harness.clone(),
        agent_env,
        notes: p.notes.clone(),
        settings: p.settings.clone(),
    })
}

/// The dry run for people.
#[must_use]
pub fn text(d: &DryRun) -> String {
    let h = &d.harness;
    let mut out = format!(
        "dry run of loop `{}` (nothing run, nothing written)\n  artifact:  {}\n  agent:     {} ({})\n  evaluator: {}\n  {}\n  writable:  {}\n  network:   {}; limits: {} s per run, idle {} s, memory {} MB, output {} MB (0 = none)\n  budgets:   ${:.2} cost, {} tokens, {} s (0 = none)\n  agent env: {}\n",
        d.topic,
        d.artifact_path.display(),
        d.agent,
        d.agent_command,
        d.evaluator,
        h.sandbox,
        h.writable
            .iter()
            .map(|w| w.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        h.network,
        h.max_time_secs,
        h.max_idle_secs,
        h.max_memory_mb,
        h.max_log_mb,
        d.settings.safety.max_cost_per_loop,
        d.settings.safety.max_tokens_per_loop,
        d.settings.safety.max_time_per_loop,
        d.agent_env.join(" "),
    );
    for n in &d.notes {
        out.push_str(&format!("  warning:   {n}\n"));
    }
    out.push_str(&format!(
        "\nnext: {}, fed this prompt:\n\n{}",
        d.next, d.prompt
    ));
    if let Ok(toml) = config::to_toml(&d.settings) {
        out.push_str(&format!("\n\neffective settings:\n\n{toml}"));
    }
    out
}
