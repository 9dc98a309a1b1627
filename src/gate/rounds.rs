//! The Wiggum gate's round loop (seed 000): evaluate → PASS, or revise with a fresh producer
//! call → re-evaluate, up to max rounds; cycling and unchanged revisions stop early; the best
//! round's content is returned whatever the verdict.

use std::collections::BTreeMap;
use std::future::Future;

use super::rubric::{self};
use super::{Evaluation, prompts, text};
pub use crate::disk::records::Round;
use crate::disk::records::{GateRecord, Termination, Verdict};
use crate::error::Result;

/// The gate's knobs.
#[derive(Debug, Clone)]
pub struct Opts {
    /// Pass threshold, 0–10.
    pub pass_threshold: f64,
    /// Rounds (≥ 1).
    pub max_rounds: u32,
    /// Dimensions below this are named in the revision prompt.
    pub focus_threshold: f64,
    /// Rubric weights.
    pub weights: BTreeMap<String, f64>,
    /// Characters of output the evaluator sees.
    pub input_chars: usize,
    /// The revision prompt template.
    pub revision_template: String,
}

impl Opts {
    /// The gate's knobs from the settings (the revision template loaded and checked).
    pub fn from_settings(s: &crate::config::Settings, max_rounds: u32) -> Result<Opts> {
        Ok(Opts {
            pass_threshold: s.defaults.pass_threshold,
            max_rounds,
            focus_threshold: s.gate.focus_threshold,
            weights: s.gate.weights.clone(),
            input_chars: s.gate.evaluator_input_chars,
            revision_template: prompts::load(
                s.gate.revision_template.as_deref(),
                prompts::DEFAULT_REVISION,
            )?,
        })
    }
}

/// What the gate returns.
#[derive(Debug, Clone)]
pub struct GateOutcome {
    /// The best content seen (the input itself on ERROR before any round).
    pub best: String,
    /// The record.
    pub record: GateRecord,
    /// Every round, in order.
    pub rounds: Vec<Round>,
}

/// Scores an output. Sees only the task, its type and the output (seed 002).
pub trait Judge {
    /// A label for records (`heuristic`, `command:judge`, `openai:local`, ...).
    fn label(&self) -> String;
    /// Evaluate.
    fn judge(
        &self,
        task: &str,
        task_type: &str,
        output: &str,
    ) -> impl Future<Output = Result<Evaluation>>;
    /// Extra issues from the panel for this round (none by default).
    fn panel(&self, _task: &str, _output: &str) -> impl Future<Output = Vec<super::panel::Review>> {
        async { Vec::new() }
    }
}

/// Writes revisions.
pub trait Producer {
    /// Whether there is anyone to revise with.
    fn available(&self) -> bool;
    /// Return the complete revised document for `prompt`.
    fn revise(&mut self, round: u32, prompt: &str) -> impl Future<Output = Result<String>>;
}

struct Best {
    content: String,
    score: f64,
    round: u32,
}

/// Run the gate on `content`: judge, keep the best, revise, until it passes, runs out of
/// rounds, cycles, has no one to revise with or the revision changes nothing.
pub async fn run<J: Judge, P: Producer>(
    task: &str,
    task_type: &str,
    content: &str,
    judge: &J,
    producer: &mut P,
    opts: &Opts,
    mut on_round: impl FnMut(&Round),
) -> GateOutcome {
    let mut rounds: Vec<Round> = Vec::new();
    let mut best: Option<Best> = None;
    let mut panel_reviews = BTreeMap::new();
    let mut output = text::strip_thinking(content);
    let mut r = 0;
    let (termination, error) = loop {
        r += 1;
        let round = match judge_round(task, task_type, &output, judge, opts, r).await {
            Ok((round, reviews)) => {
                if !reviews.is_empty() {
                    panel_reviews.insert(format!("r{r}"), reviews);
                }
                round
            }
            Err(e) => break (Termination::Error, Some(e)),
        };
        on_round(&round);
        if best.as_ref().is_none_or(|b| round.score > b.score) {
            best = Some(Best {
                content: output.clone(),
                score: round.score,
                round: r,
            });
        }
        let cycling = rounds
            .last()
            .is_some_and(|p: &Round| rubric::is_cycling(&p.dims, &round.dims));
        rounds.push(round);
        let round = &rounds[rounds.len() - 1];
        if let Some(end) = ended(round, r, cycling, producer.available(), opts) {
            break (end, None);
        }
        let prompt = prompts::revision(
            &opts.revision_template,
            task,
            &output,
            &round.issues,
            &round.focus,
            &round.dims,
        );
        let revised = match producer.revise(r + 1, &prompt).await {
            Ok(t) => text::strip_thinking(&t),
            Err(e) => break (Termination::Error, Some(format!("producer: {e}"))),
        };
        // No revision at all (nothing printed, nothing edited) is an unchanged one: the
        // producer has nothing to add, and the evaluator did nothing wrong.
        if revised.trim().is_empty() || rubric::same_text(&revised, &output) {
            break (Termination::Unchanged, None);
        }
        output = revised;
    };
    let record = record(
        termination,
        error,
        &rounds,
        best.as_ref(),
        judge.label(),
        panel_reviews,
    );
    GateOutcome {
        best: best.map_or_else(|| content.to_string(), |b| b.content),
        record,
        rounds,
    }
}

/// One round's judgement of `output`: its scores, issues (the panel's merged in) and focus.
async fn judge_round<J: Judge>(
    task: &str,
    task_type: &str,
    output: &str,
    judge: &J,
    opts: &Opts,
    r: u32,
) -> std::result::Result<(Round, Vec<super::panel::Review>), String> {
    let shown = text::compress(output, opts.input_chars);
    let ev = judge
        .judge(task, task_type, &shown)
        .await
        .map_err(|e| format!("evaluator: {e}"))?;
    let mut dims = ev.dims;
    let stub_penalty = rubric::apply_stub_penalty(&mut dims, output);
    let score = rubric::weighted(&dims, &opts.weights);
    let mut issues = ev.issues;
    let reviews = judge.panel(task, output).await;
    if !reviews.is_empty() {
        issues = super::panel::merge_issues(issues, &reviews);
    }
    let round = Round {
        round: r,
        score,
        focus: rubric::focus_dims(&dims, opts.focus_threshold),
        dims,
        issues,
        stub_penalty,
    };
    Ok((round, reviews))
}

/// Whether the gate ends after `round` (the `r`th), and how: pass, rounds exhausted, cycling, no
/// producer — in that order.
fn ended(round: &Round, r: u32, cycling: bool, producer: bool, opts: &Opts) -> Option<Termination> {
    if round.score >= opts.pass_threshold {
        Some(Termination::Pass)
    } else if r >= opts.max_rounds {
        Some(Termination::RoundsExhausted)
    } else if cycling {
        Some(Termination::Cycling)
    } else if !producer {
        Some(Termination::NoProducer)
    } else {
        None
    }
}

/// The gate's record of its rounds.
fn record(
    termination: Termination,
    error: Option<String>,
    rounds: &[Round],
    best: Option<&Best>,
    evaluator: String,
    panel_reviews: BTreeMap<String, Vec<super::panel::Review>>,
) -> GateRecord {
    let verdict = match termination {
        Termination::Pass => Verdict::Pass,
        Termination::Error => Verdict::Error,
        _ => Verdict::Fail,
    };
    GateRecord {
        verdict,
        termination,
        rounds: u32::try_from(rounds.len()).unwrap_or(u32::MAX),
        wiggum_r1: rounds.first().map(|r| r.score),
        final_score: best.map(|b| b.score),
        best_round: best.map(|b| b.round),
        wiggum_scores: rounds
            .iter()
            .map(|r| (format!("r{}", r.round), r.dims.clone()))
            .collect(),
        issues: rounds
            .iter()
            .map(|r| (format!("r{}", r.round), r.issues.clone()))
            .collect(),
        evaluator,
        panel_reviews,
        contamination_warning: None,
        error,
        tokens_in: None,
        tokens_out: None,
        cost_usd: None,
    }
}

#[cfg(test)]
mod tests;
