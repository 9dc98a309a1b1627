//! `list`'s table: a header row, aligned columns, the status coloured on request, durations like
//! `12h38m`, and an ETA from the mean iteration time so far. Pure over the read model and `now`.

use chrono::{DateTime, Utc};

use super::model::LoopView;
use crate::disk::state::{Shown, Status};

/// ANSI colour of a shown status: green while it works, yellow while it waits, red when it
/// failed or its supervisor is gone.
#[must_use]
pub fn status_colour(status: Shown) -> Option<&'static str> {
    use Status as S;
    match status {
        Shown::Is(S::Running | S::Planning) | Shown::Starting => Some("32"),
        Shown::Is(S::Paused | S::Waiting | S::Stopping) | Shown::Suspended => Some("33"),
        Shown::Is(S::Failed) | Shown::Dead | Shown::Unknown | Shown::Missing => Some("31"),
        Shown::Is(S::Stopped | S::Completed) | Shown::Replaced => None,
    }
}

/// `1m05s`, `12h38m`: whole seconds.
#[must_use]
pub fn secs(s: u64) -> String {
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// Seconds left, from the mean time of the iterations done so far and what is left (open
/// items, capped by the iteration limit). Only for a loop that is working.
#[must_use]
pub fn eta(v: &LoopView, now: DateTime<Utc>) -> Option<u64> {
    let s = v.state.as_ref()?;
    // A loop that waits (paused, on a limit) has no time of arrival to tell.
    if !v.running() || v.status != Shown::Is(Status::Running) {
        return None;
    }
    let done = u64::from(s.current_iteration.saturating_sub(1));
    if done == 0 {
        return None;
    }
    let elapsed = s.elapsed_ms(now) / 1000;
    let by_limit = u64::from(s.max_iterations.saturating_sub(s.current_iteration - 1));
    let left = s
        .items_remaining
        .map_or(by_limit, |n| (n as u64).min(by_limit));
    Some(elapsed / done * left)
}

/// The cells of one loop's row.
fn cells(v: &LoopView, now: DateTime<Utc>) -> [String; 8] {
    let Some(s) = &v.state else {
        let dash = || "-".to_string();
        return [
            v.topic.clone(),
            v.status.to_string(),
            dash(),
            dash(),
            dash(),
            dash(),
            dash(),
            match (&v.replaced_by, &v.missing_dir, &v.worktree) {
                (Some(o), _, _) => format!("-  by `{o}`"),
                (None, _, Some(w)) => format!("-  {}", w.short()),
                (None, Some(d), None) => format!("-  gone: {}", d.display()),
                (None, None, None) => dash(),
            },
        ];
    };
    let opt = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.2}"));
    let items = s.items_remaining.map_or("-".to_string(), |n| {
        match s.items_optional.filter(|o| *o > 0) {
            Some(o) => format!("{n} (+{o} optional)"),
            None => n.to_string(),
        }
    });
    let end = if v.running() { now } else { s.stopped_at() };
    let elapsed = s.elapsed_ms(end) / 1000;
    let note = match (v.pid, s.stop_reason()) {
        (Some(p), _) => format!("pid {p}"),
        (None, Some(r)) => r.as_str().to_string(),
        (None, None) => String::new(),
    };
    let eta = eta(v, now).map_or_else(|| "-".to_string(), secs);
    let note = match &v.worktree {
        Some(w) if note.is_empty() => w.short(),
        Some(w) => format!("{note}  {}", w.short()),
        None => note,
    };
    // A question waits for the user (`status` says what, and how to answer it).
    let open = s.question.as_ref().is_some_and(|q| q.answer.is_none()) && !v.answer_given;
    let note = if open {
        format!("{note}  ? question").trim_start().to_string()
    } else {
        note
    };
    [
        v.topic.clone(),
        v.status.to_string(),
        format!("{}/{}", s.current_iteration, s.max_iterations),
        opt(s.last_quality),
        opt(s.last_gate_score),
        items,
        secs(elapsed),
        format!("{eta}  {note}").trim_end().to_string(),
    ]
}

/// The table of loops.
#[must_use]
pub fn render(views: &[LoopView], now: DateTime<Utc>, colour: bool) -> String {
    const HEAD: [&str; 8] = [
        "TOPIC", "STATUS", "ITER", "QUALITY", "GATE", "ITEMS", "ELAPSED", "ETA",
    ];
    // What a loop's records say is shown without control sequences, before the table's own.
    let rows: Vec<[String; 8]> = views
        .iter()
        .map(|v| cells(v, now).map(|c| crate::sys::term::printable(&c)))
        .collect();
    let mut width = HEAD.map(str::len);
    for r in &rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |r: &[String; 8], paint: Option<Shown>| {
        let mut out = String::new();
        for (i, c) in r.iter().enumerate() {
            let pad = width[i].saturating_sub(c.chars().count());
            let code = paint.filter(|_| i == 1).and_then(status_colour);
            let cell = match code {
                Some(code) => format!("\x1b[{code}m{c}\x1b[m"),
                None => c.clone(),
            };
            if i + 1 == r.len() {
                out.push_str(&cell);
            } else {
                out.push_str(&cell);
                out.push_str(&" ".repeat(pad + 2));
            }
        }
        out.trim_end().to_string()
    };
    let mut out = vec![line(&HEAD.map(String::from), None)];
    out.extend(
        rows.iter()
            .zip(views)
            .map(|(r, v)| line(r, colour.then_some(v.status))),
    );
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disk::state::{Ending, LoopState, Phase, Status, StopReason};

    fn view(topic: &str, status: Status, pid: Option<u32>, current: u32, items: usize) -> LoopView {
        let t0: DateTime<Utc> = "2026-01-01T00:00:00Z".parse().unwrap();
        let mut st = match status {
            Status::Completed => {
                LoopState::ended(Some(StopReason::PlanEmpty), Ending::Completed, None)
            }
            _ => LoopState::in_phase(Phase::Running { agent: None }),
        };
        st.topic = topic.into();
        st.current_iteration = current;
        st.max_iterations = 10;
        st.items_remaining = Some(items);
        st.last_gate_score = Some(7.25);
        st.started_at = t0;
        st.updated_at = t0 + chrono::Duration::seconds(3 * 3600 + 65);
        LoopView {
            topic: topic.into(),
            status: Shown::Is(status),
            pid,
            state: Some(st),
            ..LoopView::default()
        }
    }

    #[test]
    fn durations_are_whole_and_short() {
        for (s, want) in [(0, "0s"), (59, "59s"), (65, "1m05s"), (45_480, "12h38m")] {
            assert_eq!(secs(s), want);
        }
    }

    #[test]
    fn the_table_has_a_header_aligned_columns_and_an_eta_for_working_loops() {
        let now: DateTime<Utc> = "2026-01-01T01:00:00Z".parse().unwrap();
        let views = [
            // 3 iterations done in an hour, 4 items left: 4 × 20 min.
            view("research", Status::Running, Some(4242), 4, 4),
            view("done", Status::Completed, None, 3, 0),
        ];
        insta::assert_snapshot!(render(&views, now, false), @r"
        TOPIC     STATUS     ITER  QUALITY  GATE  ITEMS  ELAPSED  ETA
        research  running    4/10  -        7.25  4      1h00m    1h20m  pid 4242
        done      completed  3/10  -        7.25  0      3h01m    -  plan_empty
        ");
        // Elapsed counts the loop's earlier runs; a paused loop has no ETA.
        let mut again = view("again", Status::Paused, Some(7), 4, 4);
        if let Some(st) = again.state.as_mut() {
            st.earlier_ms = 2 * 3600 * 1000;
        }
        let row = render(&[again], now, false);
        assert!(
            row.ends_with("again  paused  4/10  -        7.25  4      3h00m    -  pid 7"),
            "{row}"
        );
        // A loop with a question waiting says so.
        let mut asked = view("asked", Status::Paused, Some(7), 4, 4);
        if let Some(st) = asked.state.as_mut() {
            st.question = Some(crate::disk::questions::Question {
                iteration: 3,
                text: "Should I?".into(),
                asked_at: now,
                answer: None,
            });
        }
        let row = render(&[asked], now, false);
        assert!(row.ends_with("-  pid 7  ? question"), "{row}");
        let coloured = render(&views, now, true);
        assert!(coloured.contains("\x1b[32mrunning\x1b[m"), "{coloured}");
        assert!(!coloured.contains("\x1b[32mTOPIC"), "{coloured}");
    }
}
