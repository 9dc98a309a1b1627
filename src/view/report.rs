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

fn ranked(m: BTreeMap<String, usize>, n: usize) -> Vec<(String, usize)> {
    let mut v: Vec<(String, usize)> = m.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v.truncate(n);
    v
}

/// Aggregate iteration records; `weak_below` is the focus threshold.
#[must_use]
pub fn aggregate(records: &[RunRecord], weak_below: f64) -> Report {
    let mut a = Aggregator::new(weak_below);
    for r in records {
        a.add(r);
    }
    a.finish()
}

/// What kind of issue an evaluator raised: its text with quoted parts, numbers, paths and ids
/// taken out, so "no source for '3 of 5 users'" and "no source for '40%'" count together.
#[must_use]
pub fn issue_kind(issue: &str) -> String {
    static QUOTED: std::sync::OnceLock<Option<regex::Regex>> = std::sync::OnceLock::new();
    let re = QUOTED.get_or_init(|| regex::Regex::new(r#""[^"]*"|'[^']*'|`[^`]*`|“[^”]*”"#).ok());
    let unquoted = re.as_ref().map_or_else(
        || issue.to_string(),
        |re| re.replace_all(issue, "…").into_owned(),
    );
    crate::ralph::decide::normalise(&unquoted)
}

/// The fields of a run record the report reads (the rest of each line is skipped, not built).
#[derive(serde::Deserialize)]
struct Row {
    record: crate::disk::records::RecordKind,
    outcome: crate::disk::records::Outcome,
    #[serde(default)]
    gate: Option<GateRow>,
}

#[derive(serde::Deserialize)]
struct GateRow {
    #[serde(rename = "final")]
    verdict: Verdict,
    #[serde(default)]
    wiggum_r1: Option<f64>,
    #[serde(default)]
    final_score: Option<f64>,
    #[serde(default)]
    rounds: u32,
    #[serde(default)]
    wiggum_scores: BTreeMap<String, BTreeMap<String, f64>>,
    #[serde(default)]
    issues: BTreeMap<String, Vec<String>>,
}

/// The report built one record at a time, so a run log of any length is streamed through it in
/// bounded memory (sums and counts, not the records).
#[derive(Debug, Clone, Default)]
pub struct Aggregator {
    weak_below: f64,
    iterations: usize,
    gated: usize,
    passes: usize,
    r1: (f64, usize),
    fin: (f64, usize),
    rounds: (f64, usize),
    weak: BTreeMap<String, usize>,
    issues: BTreeMap<String, usize>,
    outcomes: BTreeMap<String, usize>,
    kinds: std::collections::HashMap<String, String>,
}

#[allow(clippy::cast_precision_loss)]
fn mean_of((sum, n): (f64, usize)) -> Option<f64> {
    (n > 0).then(|| (sum / n as f64 * 100.0).round() / 100.0)
}

impl Aggregator {
    /// An empty aggregate; `weak_below` is the focus threshold.
    #[must_use]
    pub fn new(weak_below: f64) -> Self {
        Self {
            weak_below,
            ..Self::default()
        }
    }

    /// Count one record (only iteration records count).
    pub fn add(&mut self, r: &RunRecord) {
        let gate = r.gate.as_ref().map(|g| GateRow {
            verdict: g.verdict,
            wiggum_r1: g.wiggum_r1,
            final_score: g.final_score,
            rounds: g.rounds,
            wiggum_scores: g.wiggum_scores.clone(),
            issues: g.issues.clone(),
        });
        self.add_row(&Row {
            record: r.record,
            outcome: r.outcome,
            gate,
        });
    }

    /// Count one line of `runs.jsonl` (anything but an iteration record is skipped before it is
    /// parsed).
    pub fn add_line(&mut self, line: &[u8]) {
        static KIND: std::sync::OnceLock<memchr::memmem::Finder<'static>> =
            std::sync::OnceLock::new();
        let kind = KIND.get_or_init(|| memchr::memmem::Finder::new(br#""record":"iteration""#));
        if kind.find(line).is_none() {
            return;
        }
        if let Ok(row) = serde_json::from_slice::<Row>(line) {
            self.add_row(&row);
        }
    }

    fn add_row(&mut self, r: &Row) {
        if r.record != crate::disk::records::RecordKind::Iteration {
            return;
        }
        self.iterations += 1;
        *self
            .outcomes
            .entry(r.outcome.as_str().to_string())
            .or_insert(0) += 1;
        let Some(g) = r.gate.as_ref().filter(|g| g.verdict != Verdict::Error) else {
            return;
        };
        self.gated += 1;
        if g.verdict == Verdict::Pass {
            self.passes += 1;
        }
        if let Some(v) = g.wiggum_r1 {
            self.r1 = (self.r1.0 + v, self.r1.1 + 1);
        }
        if let Some(v) = g.final_score {
            self.fin = (self.fin.0 + v, self.fin.1 + 1);
        }
        self.rounds = (self.rounds.0 + f64::from(g.rounds), self.rounds.1 + 1);
        for dims in g.wiggum_scores.values() {
            for (d, s) in dims {
                if *s < self.weak_below {
                    *self.weak.entry(d.clone()).or_insert(0) += 1;
                }
            }
        }
        for i in g.issues.get("r1").into_iter().flatten() {
            // Evaluators repeat themselves: each distinct text is classified once.
            let kind = match self.kinds.get(i) {
                Some(k) => k.clone(),
                None => {
                    let k = issue_kind(i);
                    if self.kinds.len() < 10_000 {
                        self.kinds.insert(i.clone(), k.clone());
                    }
                    k
                }
            };
            *self.issues.entry(kind).or_insert(0) += 1;
        }
    }

    /// Add what `other` counted (a piece of the same logs read alongside).
    pub fn merge(&mut self, other: Aggregator) {
        let sum = |a: &mut (f64, usize), b: (f64, usize)| {
            a.0 += b.0;
            a.1 += b.1;
        };
        self.iterations += other.iterations;
        self.gated += other.gated;
        self.passes += other.passes;
        sum(&mut self.r1, other.r1);
        sum(&mut self.fin, other.fin);
        sum(&mut self.rounds, other.rounds);
        for (mine, theirs) in [
            (&mut self.weak, other.weak),
            (&mut self.issues, other.issues),
            (&mut self.outcomes, other.outcomes),
        ] {
            for (k, n) in theirs {
                *mine.entry(k).or_insert(0) += n;
            }
        }
    }

    /// The report.
    #[must_use]
    pub fn finish(self) -> Report {
        #[allow(clippy::cast_precision_loss)]
        let pass_rate = (self.gated > 0).then(|| self.passes as f64 / self.gated as f64);
        let mean_r1 = mean_of(self.r1);
        Report {
            iterations: self.iterations,
            gated: self.gated,
            mean_r1,
            mean_final: mean_of(self.fin),
            pass_rate: pass_rate.map(|p| (p * 1000.0).round() / 1000.0),
            mean_rounds: mean_of(self.rounds),
            composite: match (mean_r1, pass_rate) {
                (Some(m), Some(p)) => Some(((0.7 * m + 0.3 * p * 10.0) * 100.0).round() / 100.0),
                _ => None,
            },
            weak_dimensions: ranked(self.weak, 6),
            top_issues: ranked(self.issues, 10),
            outcomes: self.outcomes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_counted_in_pieces_and_merged_report_what_one_pass_does() {
        let log = include_str!("../../tests/fixtures/v0.1.0/runs.jsonl").repeat(7);
        let lines: Vec<&str> = log.lines().collect();
        let whole = {
            let mut a = Aggregator::new(7.0);
            lines.iter().for_each(|l| a.add_line(l.as_bytes()));
            a.finish()
        };
        assert!(whole.gated > 0 && !whole.top_issues.is_empty(), "{whole:?}");
        for cut in [1, lines.len() / 3, lines.len() - 1] {
            let (mut first, mut second) = (Aggregator::new(7.0), Aggregator::new(7.0));
            lines[..cut]
                .iter()
                .for_each(|l| first.add_line(l.as_bytes()));
            lines[cut..]
                .iter()
                .for_each(|l| second.add_line(l.as_bytes()));
            first.merge(second);
            assert_eq!(first.finish(), whole, "cut at {cut}");
        }
    }

    #[test]
    fn issues_of_one_kind_count_together() {
        assert_eq!(
            issue_kind("No source for '3 of 5 users' in section 2"),
            issue_kind("no source for \"40% of requests\" in section 7")
        );
        assert_ne!(
            issue_kind("No source for 'x'"),
            issue_kind("Add an example")
        );
    }
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
