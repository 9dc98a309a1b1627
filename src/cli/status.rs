//! `wiggum status` and `list`: read state from disk, without the daemon's help. A loop whose
//! state says it is live but whose lock nobody holds is `dead`.

use clap::Args;

use crate::config;
use crate::disk::handle::Handle;
use crate::disk::registry;
use crate::disk::state::{LoopState, Shown, Status};
use crate::error::{Error, Result};
use crate::ralph::progress;
use crate::view::model::{self, LoopView, Want};
use crate::view::table;

use super::common::Color;

/// Flags of `status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The loop's topic (all loops when omitted).
    pub topic: Option<String>,
    /// Read loops from the records their runs pushed to this repository (run-remote).
    #[arg(long, value_name = "URL")]
    pub remote: Option<String>,
    /// Machine-readable output (documented in docs/json.md).
    #[arg(long)]
    pub json: bool,
    /// Colour the status.
    #[arg(long, value_name = "WHEN", default_value = "auto")]
    pub color: Color,
}

/// Flags of `list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Also list the loops whose runs push their records to this repository (run-remote).
    #[arg(long, value_name = "URL")]
    pub remote: Option<String>,
    /// Machine-readable output (documented in docs/json.md).
    #[arg(long)]
    pub json: bool,
    /// Colour the status.
    #[arg(long, value_name = "WHEN", default_value = "auto")]
    pub color: Color,
}

/// A limit for people: `300 s`, or `off` for zero.
fn or_off(v: u64, unit: &str) -> String {
    if v == 0 {
        "off".to_string()
    } else {
        format!("{v} {unit}")
    }
}

/// `status <topic>`: the loop's line, then what it works on, its agent, its time and cost,
/// its harness, and what wants attention.
fn detail(v: &LoopView) -> String {
    let mut out = v.line();
    if let Some(r) = v.reason() {
        out.push_str(&format!("\n  reason:    {r}"));
    }
    if let Some(s) = &v.state {
        where_lines(&mut out, v, s);
        agent_lines(&mut out, v, s);
        time_lines(&mut out, v, s);
        harness_lines(&mut out, s);
        attention_lines(&mut out, v, s);
    }
    out
}

/// What the loop works on: its artifact, its result, its worktree.
fn where_lines(out: &mut String, v: &LoopView, s: &LoopState) {
    out.push_str(&format!("\n  artifact:  {}", s.artifact_path.display()));
    if let Some(result) = crate::ralph::progress::result_of(s) {
        out.push_str(&format!("\n  result:    {result}"));
    }
    if let Some(w) = &v.worktree {
        out.push_str(&format!(
            "\n  worktree:  {} (branch {}, from {})",
            w.path.display(),
            w.branch,
            w.from
        ));
        if let Some(into) = &w.merged_into {
            out.push_str(&format!("\n  merged:    into {into}"));
        }
    }
}

/// The agent, the agents limited for now, the running one's pid and usage, the planner.
fn agent_lines(out: &mut String, v: &LoopView, s: &LoopState) {
    out.push_str(&format!("\n  agent:     {}", s.agent));
    for (name, until) in &s.limited_agents {
        out.push_str(&format!(
            "\n  limited:   {name} until {}",
            until.with_timezone(&chrono::Local).format("%H:%M:%S")
        ));
    }
    if let Some(p) = v.agent_pid {
        out.push_str(&format!(" (pid {p}"));
        if let (Some(c), Some(r)) = (v.agent_cpu_percent, v.agent_rss_bytes) {
            out.push_str(&format!(
                ", cpu {c:.1}%, rss {:.1} MiB",
                r as f64 / 1_048_576.0
            ));
        }
        out.push(')');
    }
    if let Some(p) = &s.planning_agent {
        out.push_str(&format!("; planning: {p}"));
    }
}

/// Time spent and left, the last scores, and the cost.
fn time_lines(out: &mut String, v: &LoopView, s: &LoopState) {
    if let Some(e) = v.elapsed_secs {
        let e = u64::try_from(e).unwrap_or(0);
        out.push_str(&format!("\n  elapsed:   {}", table::secs(e)));
    }
    if let Some(eta) = table::eta(v, chrono::Utc::now()) {
        out.push_str(&format!(
            "\n  eta:       about {} (the mean iteration time × what is left)",
            table::secs(eta)
        ));
    }
    if !s.last_scores.is_empty() {
        let dims: Vec<String> = s
            .last_scores
            .iter()
            .map(|(k, x)| format!("{k} {x:.1}"))
            .collect();
        out.push_str(&format!("\n  scores:    {}", dims.join(", ")));
    }
    out.push_str(&format!("\n  cost:      {}", s.spend.shown()));
    if s.spend.tokens > 0 {
        out.push_str(&format!(" ({} tokens)", s.spend.tokens));
    }
}

/// The harness the agent runs in: its sandbox, writable roots, network and limits.
fn harness_lines(out: &mut String, s: &LoopState) {
    if let Some(h) = &s.harness {
        out.push_str(&format!("\n  {}", h.sandbox));
        let roots: Vec<String> = h.writable.iter().map(|w| w.display().to_string()).collect();
        out.push_str(&format!("\n  writable:  {}", roots.join(", ")));
        out.push_str(&format!(
            "\n  network:   {}; limits: {} s per run, idle {}, memory {}, output {}",
            h.network,
            h.max_time_secs,
            or_off(h.max_idle_secs, "s"),
            or_off(h.max_memory_mb, "MB"),
            or_off(h.max_log_mb, "MB"),
        ));
    }
}

/// What wants attention: the agent's environment, what was caught, the question, a wait, a
/// pause, a stop.
fn attention_lines(out: &mut String, v: &LoopView, s: &LoopState) {
    if !s.agent_env.is_empty() {
        out.push_str(&format!("\n  agent env: {}", s.agent_env.join(" ")));
    }
    if let Some(e) = &s.last_event {
        out.push_str(&format!("\n  caught:    {e}"));
    }
    if let Some(q) = v.question() {
        out.push_str(&format!("\n  question:  {q}"));
    }
    // Questions a newer one replaced, still open: each answerable by its iteration.
    for q in &s.earlier {
        out.push_str(&format!(
            "\n  also open: {} asked: \"{}\" (answer it with --iteration {})",
            q.asker(),
            crate::sys::term::printable(&q.text),
            q.iteration
        ));
    }
    if let Some((until, why)) = s.phase().waiting()
        && v.status == Shown::Is(Status::Waiting)
    {
        let at = until.with_timezone(&chrono::Local).format("%H:%M:%S");
        out.push_str(&format!("\n  waiting:   until {at} ({why})"));
    }
    if v.pause_reason.is_some() && !matches!(v.status, Shown::Is(Status::Paused | Status::Waiting))
    {
        out.push_str("\n  pause:     requested (at the next iteration boundary)");
    } else if let Some(r) = &v.pause_reason {
        // Where it waits, as the `pause` event names it.
        let at = match s.paused_before {
            Some(0) => " (between planning's attempts)".to_string(),
            Some(n) => format!(" (before iteration {n})"),
            None => String::new(),
        };
        out.push_str(&format!("\n  paused:    {r}{at}"));
    }
    if let (Some(r), Some(d)) = (s.stop_reason(), s.stop_detail()) {
        out.push_str(&format!("\n  stopped:   {} ({d})", r.as_str()));
    }
}

fn all_views() -> Result<Vec<LoopView>> {
    let home = config::home_dir()?;
    registry::all(&home)?
        .into_iter()
        .map(|(t, p)| model::load(&Handle::at(&home, &t, p), Want::default()))
        .collect()
}

/// A remote run whose heartbeat is older than this shows as `dead` (run-remote's default).
const REMOTE_STALE: std::time::Duration = std::time::Duration::from_secs(90);

/// `status`.
pub fn status(a: &StatusArgs) -> Result<i32> {
    let Some(topic) = &a.topic else {
        return list(&ListArgs {
            remote: a.remote.clone(),
            json: a.json,
            color: a.color,
        });
    };
    let usage = Want {
        usage: true,
        ..Want::default()
    };
    let v = match &a.remote {
        Some(url) => super::remote::remote_views(url, REMOTE_STALE)?
            .into_iter()
            .find(|v| &v.topic == topic)
            .ok_or_else(|| Error::input(format!("{url} holds no records of a loop `{topic}`")))?,
        None => model::load(&Handle::open(topic)?, usage)?,
    };
    if a.json {
        print_json(&v);
    } else {
        let mut text = crate::sys::term::printable(&detail(&v));
        if a.remote.is_none()
            && let Ok(home) = crate::config::home_dir()
            && let Some(dir) =
                crate::disk::kept::newest(&crate::disk::kept::topic_dir(&home, topic))
        {
            text.push_str(&format!(
                "\n  kept:      {} (your uncommitted work, copied at start)",
                dir.display()
            ));
        }
        if a.remote.is_none()
            && let Some(t) = crate::ralph::work::read_tree(&Handle::open(topic)?.layout)
        {
            let when = match t.after_iteration {
                0 => "before iteration 1".to_string(),
                n => format!("after iteration {n}"),
            };
            text.push_str(&format!(
                "\n  tests:     {} ({when}; failing after {} of {} iterations)",
                crate::sys::term::printable(&t.tree.summary),
                t.red_iterations,
                t.validated
            ));
        }
        if a.color.on()
            && let Some(code) = table::status_colour(v.status)
        {
            // The status word of the first line (after the topic's column).
            let at = text.find(&format!(" {} ", v.status)).map(|i| i + 1);
            if let Some(i) = at {
                let end = i + v.status.as_str().len();
                text = format!(
                    "{}\x1b[{code}m{}\x1b[m{}",
                    &text[..i],
                    &text[i..end],
                    &text[end..]
                );
            }
        }
        println!("{text}");
        if a.remote.is_none()
            && let Some(block) = completion(&Handle::open(topic)?, v.state.as_ref())
        {
            println!("\n{}", crate::sys::term::printable(&block));
        }
    }
    Ok(0)
}

/// The completion block of a loop that has ended (measured with the loop's own settings).
pub(crate) fn completion(h: &Handle, st: Option<&crate::disk::state::LoopState>) -> Option<String> {
    let st = st.filter(|s| !s.status().is_live())?;
    let kind = crate::quality::types::of(&h.settings());
    progress::completion_of(&h.layout, st, &kind, chrono::Utc::now())
        .map(|c| progress::completion_block(&c))
}

/// Pretty JSON on stdout, written as it is made (no copy of the whole text first).
fn print_json(value: &impl serde::Serialize) {
    use std::io::Write;
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    // A closed pipe ends the process quietly (SIGPIPE); nothing else can fail here.
    if serde_json::to_writer_pretty(&mut out, value).is_ok() {
        let _done = writeln!(out).and_then(|()| out.flush());
    }
}

/// `list`.
pub fn list(a: &ListArgs) -> Result<i32> {
    let mut views = all_views()?;
    if let Some(url) = &a.remote {
        views.extend(super::remote::remote_views(url, REMOTE_STALE)?);
    }
    if a.json {
        print_json(&views);
    } else if views.is_empty() {
        println!(
            "no loops registered (start one with: studio-agents wiggum start <topic> --artifact-path <dir>)"
        );
    } else {
        println!(
            "{}",
            table::render(&views, chrono::Utc::now(), a.color.on())
        );
    }
    Ok(0)
}
