//! Analytics over `runs.jsonl`, pure: first-round and final scores, pass rates, rounds, the
//! composite `0.7 * mean_r1 + 0.3 * criteria_rate * 10` (seed 000; criteria_rate = the share of
//! gated iterations that passed), and the failure taxonomy: which dimensions score below the
//! focus threshold and which issues recur.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::disk::runlog::RunRecord;
use crate::gate::Verdict;

/// The analytics of a set of iterations.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    /// Iteration records considered (crashes and interruptions excluded).
    pub iterations: usize,
    /// Iterations that went through the gate.
    pub gated: usize,
    /// Mean first-round score.
    pub mean_r1: Option<f64>,
    /// Mean kept score.
    pub mean_final: Option<f64>,
    /// PASS share of gated iterations (0–1).
    pub pass_rate: Option<f64>,
    /// Mean gate rounds.
    pub mean_rounds: Option<f64>,
    /// 0.7 · mean_r1 + 0.3 · pass_rate · 10.
    pub composite: Option<f64>,
    /// How often each dimension scored below the threshold, most first.
    pub weak_dimensions: Vec<(String, usize)>,
    /// The most frequent first-round issues, most first (case-folded).
    pub top_issues: Vec<(String, usize)>,
    /// Outcomes and how many.
    pub outcomes: BTreeMap<String, usize>,
}

#[allow(clippy::cast_precision_loss)]
fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| (v.iter().sum::<f64>() / v.len() as f64 * 100.0).round() / 100.0)
}

fn ranked(m: BTreeMap<String, usize>, n: usize) -> Vec<(String, usize)> {
    let mut v: Vec<(String, usize)> = m.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v.truncate(n);
    v
}

/// Aggregate iteration records; `weak_below` is the focus threshold.
#[must_use]
pub fn aggregate(records: &[RunRecord], weak_below: f64) -> Report {
    let its: Vec<&RunRecord> = records
        .iter()
        .filter(|r| r.record == crate::disk::records::RecordKind::Iteration)
        .collect();
    let mut outcomes = BTreeMap::new();
    for r in &its {
        *outcomes.entry(r.outcome.as_str().to_string()).or_insert(0) += 1;
    }
    let gates: Vec<_> = its
        .iter()
        .filter_map(|r| r.gate.as_ref())
        .filter(|g| g.verdict != Verdict::Error)
        .collect();
    let r1: Vec<f64> = gates.iter().filter_map(|g| g.wiggum_r1).collect();
    let fin: Vec<f64> = gates.iter().filter_map(|g| g.final_score).collect();
    #[allow(clippy::cast_precision_loss)]
    let rounds: Vec<f64> = gates.iter().map(|g| f64::from(g.rounds)).collect();
    #[allow(clippy::cast_precision_loss)]
    let pass_rate = (!gates.is_empty()).then(|| {
        gates.iter().filter(|g| g.verdict == Verdict::Pass).count() as f64 / gates.len() as f64
    });
    let mut weak = BTreeMap::new();
    let mut issues = BTreeMap::new();
    for g in &gates {
        for dims in g.wiggum_scores.values() {
            for (d, s) in dims {
                if *s < weak_below {
                    *weak.entry(d.clone()).or_insert(0) += 1;
                }
            }
        }
        for i in g.issues.get("r1").into_iter().flatten() {
            *issues.entry(i.to_lowercase()).or_insert(0) += 1;
        }
    }
    let mean_r1 = mean(&r1);
    Report {
        iterations: its.len(),
        gated: gates.len(),
        mean_r1,
        mean_final: mean(&fin),
        pass_rate: pass_rate.map(|p| (p * 1000.0).round() / 1000.0),
        mean_rounds: mean(&rounds),
        composite: match (mean_r1, pass_rate) {
            (Some(m), Some(p)) => Some(((0.7 * m + 0.3 * p * 10.0) * 100.0).round() / 100.0),
            _ => None,
        },
        weak_dimensions: ranked(weak, 6),
        top_issues: ranked(issues, 10),
        outcomes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disk::records::{GateRecord, Termination};

    fn rec(verdict: Verdict, r1: f64, fin: f64, rounds: u32, issue: &str) -> RunRecord {
        let dims = crate::gate::rubric::six([6.0, 8.0, 8.0, 6.5, 8.0, 9.0]);
        let gate = GateRecord {
            verdict,
            termination: Termination::Pass,
            rounds,
            wiggum_r1: Some(r1),
            final_score: Some(fin),
            best_round: Some(1),
            wiggum_scores: [("r1".to_string(), dims)].into(),
            issues: [("r1".to_string(), vec![issue.to_string()])].into(),
            evaluator: "h".into(),
            panel_reviews: BTreeMap::new(),
            contamination_warning: None,
            error: None,
            tokens_in: None,
            tokens_out: None,
            cost_usd: None,
        };
        let mut r: RunRecord = serde_json::from_value(serde_json::json!({
            "record": "iteration", "iteration": 1, "started_at": "2026-01-01T00:00:00Z",
            "ended_at": "2026-01-01T00:00:01Z", "duration_ms": 1000, "outcome": "accepted"}))
        .unwrap();
        r.gate = Some(gate);
        r
    }

    #[test]
    fn composite_privileges_the_first_round() {
        let runs = vec![
            rec(Verdict::Pass, 9.0, 9.0, 1, "Thin examples"),
            rec(Verdict::Fail, 7.0, 7.5, 3, "thin examples"),
        ];
        let r = aggregate(&runs, 7.0);
        assert_eq!(r.mean_r1, Some(8.0));
        assert_eq!(r.pass_rate, Some(0.5));
        // 0.7 * 8.0 + 0.3 * 0.5 * 10 = 7.1
        assert_eq!(r.composite, Some(7.1));
        assert_eq!(r.mean_rounds, Some(2.0));
        assert_eq!(r.top_issues, vec![("thin examples".to_string(), 2)]);
        assert_eq!(
            r.weak_dimensions,
            vec![("depth".to_string(), 2), ("grounded".to_string(), 2)]
        );
        assert_eq!(r.outcomes["accepted"], 2);
    }

    #[test]
    fn no_runs_no_numbers() {
        let r = aggregate(&[], 7.0);
        assert_eq!(r.composite, None);
        assert_eq!(r.iterations, 0);
    }
}
