//! `wiggum status` and `list`: read state from disk, without the daemon's help. A loop whose
//! state says it is live but whose lock nobody holds is `dead`.

use clap::Args;
use serde::Serialize;

use crate::config;
use crate::disk::layout::Layout;
use crate::disk::state::{self, LoopState};
use crate::disk::{registry, requests};
use crate::error::Result;

/// Flags of `status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The loop's topic (all loops when omitted).
    pub topic: Option<String>,
    /// Machine-readable output (documented in docs/json.md).
    #[arg(long)]
    pub json: bool,
}

/// Flags of `list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Machine-readable output (documented in docs/json.md).
    #[arg(long)]
    pub json: bool,
}

/// What `status --json` prints for one loop.
#[derive(Debug, Serialize)]
pub struct View {
    /// The topic.
    pub topic: String,
    /// State status, or `dead`, or `unknown` when there is no state yet.
    pub status: String,
    /// The supervisor's pid while it runs.
    pub pid: Option<u32>,
    /// The agent's pid while one runs.
    pub agent_pid: Option<u32>,
    /// The agent's CPU use, percent.
    pub agent_cpu_percent: Option<f32>,
    /// The agent's resident memory, bytes.
    pub agent_rss_bytes: Option<u64>,
    /// Seconds since the loop started.
    pub elapsed_secs: Option<i64>,
    /// Why it is paused.
    pub pause_reason: Option<String>,
    /// The full state, when there is one.
    pub state: Option<LoopState>,
}

fn agent_usage(pid: u32) -> (Option<f32>, Option<u64>) {
    use sysinfo::{Pid, ProcessRefreshKind, ProcessesToUpdate, System};
    let Ok(mut sys) = System::new() else {
        return (None, None);
    };
    let p = [Pid::from_u32(pid)];
    let kind = ProcessRefreshKind::nothing().with_cpu().with_memory();
    sys.refresh_processes_specifics(ProcessesToUpdate::Some(&p), true, kind);
    std::thread::sleep(sysinfo::MINIMUM_CPU_UPDATE_INTERVAL); // allow: CPU needs two samples
    sys.refresh_processes_specifics(ProcessesToUpdate::Some(&p), true, kind);
    sys.process(p[0])
        .map_or((None, None), |pr| (Some(pr.cpu_usage()), Some(pr.memory())))
}

/// Build the view of one loop.
pub fn view(topic: &str, layout: &Layout, usage: bool) -> Result<View> {
    let st = state::read(&layout.state()).unwrap_or(None);
    let holder = crate::disk::lock::find(&config::home_dir()?, layout)?;
    let status = state::shown_status(st.as_ref(), holder.is_some()).to_string();
    let agent_pid = st
        .as_ref()
        .and_then(|s| s.agent_pid)
        .filter(|_| holder.is_some());
    let (cpu, rss) = match agent_pid {
        Some(p) if usage => agent_usage(p),
        _ => (None, None),
    };
    let ctl = requests::read(&layout.control());
    Ok(View {
        topic: topic.to_string(),
        status,
        pid: holder.as_ref().map(|h| h.pid),
        agent_pid,
        agent_cpu_percent: cpu,
        agent_rss_bytes: rss,
        elapsed_secs: st.as_ref().map(|s| {
            let end = if holder.is_some() {
                chrono::Utc::now()
            } else {
                s.updated_at
            };
            (end - s.started_at).num_seconds()
        }),
        pause_reason: (holder.is_some() && ctl.pause)
            .then_some(ctl.pause_reason)
            .flatten(),
        state: st,
    })
}

fn line(v: &View) -> String {
    state::one_line(&v.topic, v.state.as_ref(), v.pid)
}

fn detail(v: &View) -> String {
    let mut out = line(v);
    if let Some(s) = &v.state {
        out.push_str(&format!("\n  artifact:  {}", s.artifact_path.display()));
        out.push_str(&format!("\n  agent:     {}", s.agent));
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
        if let Some(e) = v.elapsed_secs {
            out.push_str(&format!("\n  elapsed:   {}m{:02}s", e / 60, e % 60));
        }
        if !s.last_scores.is_empty() {
            let dims: Vec<String> = s
                .last_scores
                .iter()
                .map(|(k, x)| format!("{k} {x:.1}"))
                .collect();
            out.push_str(&format!("\n  scores:    {}", dims.join(", ")));
        }
        out.push_str(&format!("\n  cost:      ${:.4}", s.cost_usd));
        if let Some(r) = &v.pause_reason {
            out.push_str(&format!("\n  paused:    {r}"));
        }
        if let (Some(r), Some(d)) = (s.stop_reason, &s.stop_detail) {
            out.push_str(&format!("\n  stopped:   {} ({d})", r.as_str()));
        }
    }
    out
}

fn all_views() -> Result<Vec<View>> {
    let home = config::home_dir()?;
    registry::all(&home)?
        .into_iter()
        .map(|(t, p)| view(&t, &Layout::new(p), false))
        .collect()
}

/// `status`.
pub fn status(a: &StatusArgs) -> Result<i32> {
    let Some(topic) = &a.topic else {
        return list(&ListArgs { json: a.json });
    };
    let layout = crate::disk::handle::Handle::open(topic)?.layout;
    let v = view(topic, &layout, true)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    } else {
        println!("{}", detail(&v));
    }
    Ok(0)
}

/// `list`.
pub fn list(a: &ListArgs) -> Result<i32> {
    let views = all_views()?;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&views).unwrap_or_default()
        );
    } else if views.is_empty() {
        println!(
            "no loops registered (start one with: studio-agents wiggum start <topic> --artifact-path <dir>)"
        );
    } else {
        for v in &views {
            println!("{}", line(v));
        }
    }
    Ok(0)
}
