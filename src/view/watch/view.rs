//! Drawing a snapshot, pure: the same frame for the same facts (tested on ratatui's TestBackend).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

use crate::view::model::LoopView;

fn bar(v: f64) -> String {
    let filled = (v.clamp(0.0, 1.0) * 10.0).round() as usize;
    format!("{}{} {v:.2}", "█".repeat(filled), "░".repeat(10 - filled))
}

fn header(s: &LoopView) -> Vec<Line<'static>> {
    let mut lines = vec![Line::styled(
        format!("Wiggum loop: {}", s.topic),
        Style::default().add_modifier(Modifier::BOLD),
    )];
    let Some(st) = &s.state else {
        lines.push(Line::from(format!("Status: {}", s.status)));
        return lines;
    };
    lines.push(Line::from(format!(
        "Status: {}   Iteration: {} / {}   Items remaining: {}",
        s.status,
        st.current_iteration,
        st.max_iterations,
        st.items_remaining
            .map_or("-".to_string(), |n| n.to_string())
    )));
    lines.push(Line::from(format!(
        "Quality: {} → {:.2} (target)   Gate: {}   Cost: {}",
        st.last_quality
            .map_or("-".to_string(), |q| format!("{q:.2}")),
        st.quality_threshold,
        st.last_gate_score
            .map_or("-".to_string(), |g| format!("{g:.2}")),
        // As `status` says it: never `$0.0000` for spend nobody reported.
        st.spend.shown()
    )));
    if let Some(r) = &s.pause_reason {
        lines.push(Line::from(format!(
            "Paused: {}",
            crate::sys::term::printable(r)
        )));
    }
    if let Some(q) = st.question.as_ref().filter(|q| q.answer.is_none()) {
        lines.push(Line::from(format!(
            "Question ({}): {}",
            q.asker(),
            crate::sys::term::printable(&q.text)
        )));
    }
    if let (Some(r), false) = (st.stop_reason(), s.running()) {
        lines.push(Line::from(format!(
            "Stopped: {} ({})",
            r.as_str(),
            crate::sys::term::printable(st.stop_detail().unwrap_or_default())
        )));
    }
    lines
}

fn metrics(s: &LoopView) -> Vec<Line<'static>> {
    let Some(q) = s.recent.iter().rev().find_map(|r| r.quality) else {
        return vec![Line::from("no metrics yet")];
    };
    [
        ("Completeness ", q.completeness),
        ("Verification ", q.verification),
        ("Clarity      ", q.clarity),
        ("Actionability", q.actionability),
    ]
    .into_iter()
    .map(|(k, v)| Line::from(format!("{k}  {}", bar(v))))
    .collect()
}

fn current(s: &LoopView) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    if let Some(item) = s.open_items.first() {
        lines.push(Line::from(format!("Next item: {item}")));
    }
    if let Some(st) = &s.state
        && let Some(pid) = st.agent_run().and_then(|a| a.pid)
    {
        lines.push(Line::from(format!(
            "Agent {} running (pid {pid})",
            st.agent
        )));
    }
    lines.extend(s.log_tail.iter().map(|l| Line::from(format!("> {l}"))));
    lines
}

fn recent(s: &LoopView) -> Vec<Line<'static>> {
    s.recent
        .iter()
        .rev()
        .map(|r| {
            let outcome = r.outcome.as_str();
            let gate = r.gate.as_ref().map_or(String::new(), |g| {
                format!(
                    "  gate {} {:.2}",
                    g.verdict.as_str(),
                    g.final_score.unwrap_or(0.0)
                )
            });
            let commit = r
                .commit
                .as_deref()
                .map_or(String::new(), |c| format!("  {}", &c[..8.min(c.len())]));
            Line::from(format!(
                "Iteration {}: {outcome}{gate}  {} files{commit}",
                r.iteration,
                r.files_changed.len()
            ))
        })
        .collect()
}

/// Draw the whole screen; `message` is the footer's last line (prompts, confirmations).
pub fn draw(f: &mut Frame<'_>, s: &LoopView, message: &str) {
    let [top, mid, cur, rec, foot] = Layout::vertical([
        Constraint::Length(7),
        Constraint::Length(6),
        Constraint::Min(6),
        Constraint::Length(10),
        Constraint::Length(3),
    ])
    .areas(f.area());
    let block = |t: &'static str| Block::default().borders(Borders::ALL).title(t);
    f.render_widget(Paragraph::new(header(s)).block(block(" Loop ")), top);
    f.render_widget(
        Paragraph::new(metrics(s)).block(block(" Quality metrics ")),
        mid,
    );
    f.render_widget(
        Paragraph::new(current(s))
            .wrap(Wrap { trim: false })
            .block(block(" Current iteration ")),
        cur,
    );
    f.render_widget(
        Paragraph::new(recent(s)).block(block(" Recent iterations ")),
        rec,
    );
    let help = if message.is_empty() {
        "[s] stop  [p] pause  [r] resume  [a] add sign  [q] quit (the loop continues)".to_string()
    } else {
        message.to_string()
    };
    f.render_widget(Paragraph::new(help).block(block(" Commands ")), foot);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disk::state::{Shown, Status};
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    fn screen(s: &LoopView, msg: &str) -> String {
        let mut t = Terminal::new(TestBackend::new(100, 34)).unwrap();
        t.draw(|f| draw(f, s, msg)).unwrap();
        let buf = t.backend().buffer().clone();
        (0..buf.area.height)
            .map(|y| {
                (0..buf.area.width)
                    .map(|x| buf[(x, y)].symbol().to_string())
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn shows_status_iteration_items_log_and_commands() {
        use crate::disk::state::{AgentRun, LoopState, Phase};
        let mut st = LoopState::in_phase(Phase::Running {
            agent: Some(AgentRun {
                token: "tok".into(),
                pid: Some(4242),
                pgid: Some(4242),
            }),
        });
        st.topic = "t".into();
        st.current_iteration = 3;
        st.max_iterations = 10;
        st.items_remaining = Some(4);
        st.last_quality = Some(0.72);
        st.quality_threshold = 0.85;
        st.agent = "claude".into();
        st.question = Some(crate::disk::questions::Question {
            iteration: 2,
            text: "Should I also update the migration?".into(),
            asked_at: chrono::Utc::now(),
            answer: None,
        });
        let s = LoopView {
            topic: "research".into(),
            status: Shown::Is(Status::Running),
            state: Some(st),
            pid: Some(4241),
            open_items: vec!["Add evidence links".into()],
            log_tail: vec!["Reading fix_plan.md...".into()],
            ..LoopView::default()
        };
        let out = screen(&s, "");
        for want in [
            "Wiggum loop: research",
            "Status: running",
            "Iteration: 3 / 10",
            "Items remaining: 4",
            "Quality: 0.72 → 0.85",
            "Next item: Add evidence links",
            "Agent claude running (pid 4242)",
            "> Reading fix_plan.md...",
            "[s] stop",
            "Question (iteration 2): Should I also update the migration?",
        ] {
            assert!(out.contains(want), "missing {want:?} in\n{out}");
        }
        assert!(screen(&s, "What went wrong? > links").contains("What went wrong? > links"));
    }

    #[test]
    fn spend_nobody_reported_reads_unknown_as_status_says_it() {
        let view = |known: u32, unknown: u32, cost_usd: f64| LoopView {
            status: Shown::Is(Status::Running),
            state: Some({
                let mut st = crate::disk::state::LoopState::default();
                st.spend = crate::disk::state::Spend {
                    cost_usd,
                    known,
                    unknown,
                    ..Default::default()
                };
                st
            }),
            ..LoopView::default()
        };
        for (v, want) in [
            (view(0, 2, 0.0), "Cost: unknown"),
            (view(2, 1, 0.42), "Cost: $0.4200 + unknown"),
            (view(3, 0, 1.5), "Cost: $1.5000"),
        ] {
            let out = screen(&v, "");
            assert!(out.contains(want), "missing {want:?} in\n{out}");
        }
    }

    #[test]
    fn bars_are_bounded() {
        assert_eq!(bar(0.8), "████████░░ 0.80");
        assert_eq!(bar(2.0), "██████████ 2.00");
    }
}
