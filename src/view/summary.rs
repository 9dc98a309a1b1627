//! `summary`'s lift: the built-in quality of the original artifact against the final one, per
//! metric with the change in percent, and the gate's first-round score of the first gated
//! iteration against the kept score of the last. Pure; the command reads the files.

use serde::Serialize;

use crate::disk::records::{Metrics, RecordKind, RunRecord};

/// What `summary --json` prints (docs/json.md).
#[derive(Debug, Serialize)]
pub struct SummaryJson<'a> {
    /// The topic.
    pub topic: &'a str,
    /// `state.json`, when there is one.
    pub state: Option<&'a crate::disk::state::LoopState>,
    /// Quality and gate, before → after.
    pub lift: &'a Lift,
    /// One text line per record in `iterations`.
    pub lines: &'a [String],
    /// The records of `runs.jsonl`.
    pub iterations: &'a [RunRecord],
    /// `report`'s figures over them.
    pub report: super::report::Report,
}

/// One metric before and after.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricLift {
    /// `overall`, `completeness`, ...
    pub metric: &'static str,
    /// The original artifact's value.
    pub before: Option<f64>,
    /// The final artifact's value.
    pub after: Option<f64>,
    /// `(after - before) / before`, in percent, when both are known and before is not 0.
    pub change_pct: Option<f64>,
}

/// What a loop changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Lift {
    /// Overall first, then each metric.
    pub quality: Vec<MetricLift>,
    /// The first gated iteration's first-round score.
    pub gate_r1: Option<f64>,
    /// The last gated iteration's kept score.
    pub gate_final: Option<f64>,
}

/// The lift of the loop `h`: its original artifact measured against its final one (the last
/// committed iteration's while it runs), and its gated records.
#[must_use]
pub fn lift_of(
    h: &crate::disk::handle::Handle,
    st: Option<&crate::disk::state::LoopState>,
    runs: &[RunRecord],
) -> Lift {
    let kind = crate::quality::types::of(&h.settings());
    let measure = |p: std::path::PathBuf| crate::ralph::progress::quality_of(&p, &kind);
    let layout = &h.layout;
    let last = st.map_or(0, |s| s.last_committed_iteration);
    let after = if layout.final_artifact().exists() {
        measure(layout.final_artifact())
    } else if last > 0 {
        measure(layout.iteration_artifact(last))
    } else {
        None
    };
    let before = measure(layout.original_artifact());
    lift(before.as_ref(), after.as_ref(), runs)
}

/// `0.22 → 0.60` and `6.1 → 7.4`: overall quality and the gate, before → after, for one line.
#[must_use]
pub fn before_after(l: &Lift) -> (String, String) {
    let q = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.2}"));
    let g = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.1}"));
    let overall = l.quality.first();
    (
        format!(
            "{} → {}",
            q(overall.and_then(|m| m.before)),
            q(overall.and_then(|m| m.after))
        ),
        format!("{} → {}", g(l.gate_r1), g(l.gate_final)),
    )
}

/// The lift from the original's and the final artifact's metrics and the run records.
#[must_use]
pub fn lift(before: Option<&Metrics>, after: Option<&Metrics>, runs: &[RunRecord]) -> Lift {
    type Pick = (&'static str, fn(&Metrics) -> f64);
    let pick: [Pick; 5] = [
        ("overall", |m| m.overall),
        ("completeness", |m| m.completeness),
        ("verification", |m| m.verification),
        ("clarity", |m| m.clarity),
        ("actionability", |m| m.actionability),
    ];
    let quality = pick
        .iter()
        .map(|(metric, f)| {
            let (b, a) = (before.map(f), after.map(f));
            let change_pct = match (b, a) {
                (Some(b), Some(a)) if b > 0.0 => Some((a - b) / b * 100.0),
                _ => None,
            };
            MetricLift {
                metric,
                before: b,
                after: a,
                change_pct,
            }
        })
        .collect();
    let mut gated = runs
        .iter()
        .filter(|r| r.record == RecordKind::Iteration)
        .filter_map(|r| r.gate.as_ref());
    let gate_r1 = gated.next().and_then(|g| g.wiggum_r1);
    let gate_final = runs
        .iter()
        .rev()
        .filter(|r| r.record == RecordKind::Iteration)
        .find_map(|r| r.gate.as_ref())
        .and_then(|g| g.final_score);
    Lift {
        quality,
        gate_r1,
        gate_final,
    }
}

/// The lift as a small table.
#[must_use]
pub fn text(l: &Lift) -> String {
    let v = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.2}"));
    let mut out = vec![format!(
        "{:<16}{:>8}{:>8}{:>9}",
        "quality", "before", "after", "change"
    )];
    for m in &l.quality {
        out.push(format!(
            "  {:<14}{:>8}{:>8}{:>9}",
            m.metric,
            v(m.before),
            v(m.after),
            m.change_pct
                .map_or("-".to_string(), |p| format!("{p:+.0}%"))
        ));
    }
    let g = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.1}"));
    out.push(format!(
        "gate            r1 {} → final {}",
        g(l.gate_r1),
        g(l.gate_final)
    ));
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(overall: f64, completeness: f64) -> Metrics {
        Metrics {
            completeness,
            verification: 0.0,
            clarity: 0.5,
            actionability: 0.5,
            overall,
        }
    }

    #[test]
    fn quality_changes_are_percent_of_before_and_unknown_without_a_base() {
        let l = lift(Some(&m(0.25, 0.0)), Some(&m(0.5, 0.8)), &[]);
        assert_eq!(l.quality[0].metric, "overall");
        assert_eq!(l.quality[0].change_pct, Some(100.0));
        // From zero there is no percent to speak of.
        assert_eq!(l.quality[1].change_pct, None);
        assert_eq!(l.quality[3].change_pct, Some(0.0));
        let none = lift(None, Some(&m(0.5, 0.5)), &[]);
        assert!(none.quality.iter().all(|q| q.change_pct.is_none()));
        assert_eq!((none.gate_r1, none.gate_final), (None, None));
    }

    #[test]
    fn the_table_shows_each_metric_and_the_gate() {
        let l = Lift {
            quality: vec![MetricLift {
                metric: "overall",
                before: Some(0.22),
                after: Some(0.49),
                change_pct: Some(122.7),
            }],
            gate_r1: Some(4.5),
            gate_final: Some(8.12),
        };
        insta::assert_snapshot!(text(&l), @r"
        quality           before   after   change
          overall           0.22    0.49    +123%
        gate            r1 4.5 → final 8.1
        ");
    }
}
