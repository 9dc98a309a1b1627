use std::cell::RefCell;
use std::collections::VecDeque;

use super::*;
use crate::config::default_weights;
use crate::error::Error;
use crate::gate::Evaluation;
use crate::gate::rubric::Dims;

/// A judge that answers scripted dimension sets in order, recording what it was shown.
struct Scripted {
    answers: RefCell<VecDeque<Result<[f64; 6]>>>,
    seen: RefCell<Vec<String>>,
}

fn dims(v: [f64; 6]) -> Dims {
    rubric::six(v)
}

impl Scripted {
    fn new(a: Vec<Result<[f64; 6]>>) -> Self {
        Self {
            answers: RefCell::new(a.into()),
            seen: RefCell::new(vec![]),
        }
    }
}

impl Judge for Scripted {
    fn label(&self) -> String {
        "scripted".into()
    }
    async fn judge(&self, _t: &str, _tt: &str, output: &str) -> Result<Evaluation> {
        self.seen.borrow_mut().push(output.to_string());
        let a = self
            .answers
            .borrow_mut()
            .pop_front()
            .expect("more evaluations than scripted")?;
        Ok(Evaluation {
            dims: dims(a),
            issues: vec![format!("issue after {} chars", output.len())],
        })
    }
}

struct Revisions {
    outputs: VecDeque<String>,
    prompts: Vec<String>,
}

impl Producer for Revisions {
    fn available(&self) -> bool {
        true
    }
    async fn revise(&mut self, _round: u32, prompt: &str) -> Result<String> {
        self.prompts.push(prompt.to_string());
        self.outputs
            .pop_front()
            .ok_or_else(|| Error::runtime("no more revisions"))
    }
}

fn opts() -> Opts {
    Opts {
        pass_threshold: 8.0,
        max_rounds: 3,
        focus_threshold: 7.0,
        weights: default_weights(),
        input_chars: 6000,
        revision_template: prompts::DEFAULT_REVISION.into(),
    }
}

fn producer(outs: &[&str]) -> Revisions {
    Revisions {
        outputs: outs.iter().map(|s| (*s).to_string()).collect(),
        prompts: vec![],
    }
}

#[tokio::test]
async fn passes_at_round_two_and_the_issues_reach_the_producer() {
    let j = Scripted::new(vec![
        Ok([7.0, 8.0, 7.0, 6.0, 6.0, 9.0]),
        Ok([8.0, 9.0, 8.0, 8.0, 8.0, 9.0]),
    ]);
    let mut p = producer(&["# Doc v2\nbetter"]);
    let out = run(
        "task",
        "research",
        "# Doc v1\n",
        &j,
        &mut p,
        &opts(),
        |_| {},
    )
    .await;
    assert_eq!(out.record.verdict, Verdict::Pass);
    assert_eq!(out.record.rounds, 2);
    assert_eq!(out.record.wiggum_r1, Some(7.15));
    assert_eq!(out.record.final_score, Some(8.3));
    assert_eq!(out.best, "# Doc v2\nbetter");
    assert!(p.prompts[0].contains("issue after"), "{}", p.prompts[0]);
    assert!(
        p.prompts[0].contains("grounded"),
        "focus dims named: {}",
        p.prompts[0]
    );
    assert!(!p.prompts[0].contains("- structure"), "{}", p.prompts[0]);
}

#[tokio::test]
async fn cycling_stops_after_two_evaluations() {
    let same = [7.0, 7.0, 7.0, 7.0, 7.0, 7.0];
    let j = Scripted::new(vec![Ok(same), Ok(same)]);
    let mut p = producer(&["# v2", "# v3"]);
    let out = run("t", "r", "# v1", &j, &mut p, &opts(), |_| {}).await;
    assert_eq!(out.record.termination, Termination::Cycling);
    assert_eq!(out.record.verdict, Verdict::Fail);
    assert_eq!(j.seen.borrow().len(), 2);
}

#[tokio::test]
async fn best_round_is_restored_on_fail() {
    // 7.0, 7.65, 7.2 → keep round 2.
    let j = Scripted::new(vec![
        Ok([7.0; 6]),
        Ok([8.0, 8.0, 7.0, 7.0, 8.0, 8.0]),
        Ok([7.2; 6]),
    ]);
    let mut p = producer(&["# round two", "# round three"]);
    let out = run("t", "r", "# round one", &j, &mut p, &opts(), |_| {}).await;
    let scores: Vec<f64> = out.rounds.iter().map(|r| r.score).collect();
    assert_eq!(scores, vec![7.0, 7.65, 7.2]);
    assert_eq!(out.record.verdict, Verdict::Fail);
    assert_eq!(out.record.termination, Termination::RoundsExhausted);
    assert_eq!(out.record.best_round, Some(2));
    assert_eq!(out.best, "# round two");
}

#[tokio::test]
async fn an_unchanged_revision_is_cycling_without_an_evaluation() {
    let j = Scripted::new(vec![Ok([6.0; 6])]);
    let mut p = producer(&["#  v1 \n"]);
    let out = run("t", "r", "# v1", &j, &mut p, &opts(), |_| {}).await;
    assert_eq!(out.record.termination, Termination::Unchanged);
    assert_eq!(j.seen.borrow().len(), 1);
}

#[tokio::test]
async fn evaluator_failure_is_error_with_the_input_kept() {
    let j = Scripted::new(vec![Err(Error::runtime("no JSON in the answer"))]);
    let mut p = producer(&[]);
    let out = run("t", "r", "# original", &j, &mut p, &opts(), |_| {}).await;
    assert_eq!(out.record.verdict, Verdict::Error);
    assert!(out.record.error.as_deref().unwrap().contains("no JSON"));
    assert_eq!(out.best, "# original");
}

#[tokio::test]
async fn producer_failure_is_error_but_keeps_the_best_round() {
    let j = Scripted::new(vec![Ok([6.0; 6])]);
    let mut p = producer(&[]);
    let out = run("t", "r", "# original", &j, &mut p, &opts(), |_| {}).await;
    assert_eq!(out.record.verdict, Verdict::Error);
    assert!(
        out.record
            .error
            .as_deref()
            .unwrap()
            .starts_with("producer:")
    );
    assert_eq!(out.best, "# original");
}

#[tokio::test]
async fn stubs_are_docked_before_weighting_and_thinking_is_stripped() {
    let j = Scripted::new(vec![Ok([8.0; 6])]);
    let mut p = producer(&[]);
    let doc = "<think>plan it</think>\n# Doc\nclient.generate_contextual_embedding_chain()\n";
    let out = run(
        "t",
        "r",
        doc,
        &j,
        &mut p,
        &Opts {
            max_rounds: 1,
            ..opts()
        },
        |_| {},
    )
    .await;
    assert_eq!(out.rounds[0].stub_penalty, 1);
    assert!((out.rounds[0].dims["depth"] - 7.0).abs() < 1e-9);
    assert!(!j.seen.borrow()[0].contains("plan it"));
}

#[tokio::test]
async fn long_outputs_reach_the_evaluator_compressed() {
    let j = Scripted::new(vec![Ok([9.0; 6])]);
    let mut p = producer(&[]);
    let doc: String = (0..40)
        .map(|i| format!("## S{i}\n{}\n", "words here. ".repeat(50)))
        .collect();
    run("t", "r", &doc, &j, &mut p, &opts(), |_| {}).await;
    let shown = &j.seen.borrow()[0];
    assert!(shown.chars().count() <= 6000);
    assert!(shown.contains("## S39"));
}
