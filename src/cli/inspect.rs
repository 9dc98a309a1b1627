//! Looking into a loop from any shell: `logs`, `diff`, `summary`, `report`.

use std::io::{Seek, SeekFrom, Write};
use std::time::Duration;

use clap::Args;

use crate::config;
use crate::disk::handle::Handle;
use crate::disk::layout::Layout;
use crate::disk::registry;
use crate::error::{Error, IoContext, Result};
use crate::ralph::progress;
use crate::sys::{fsutil, term};
use crate::view::model::{self, Want};
use crate::view::report;
use crate::view::summary;

/// Flags of `logs`.
#[derive(Debug, Args)]
pub struct LogsArgs {
    /// The loop's topic.
    pub topic: String,
    /// Which iteration (default: the latest); 0 is the planning phase.
    #[arg(long, value_name = "N", conflicts_with = "planning")]
    pub iteration: Option<u32>,
    /// The planning phase's log (the same as `--iteration 0`).
    #[arg(long)]
    pub planning: bool,
    /// Keep printing as the log grows, across iterations (without --iteration), until the
    /// loop stops.
    #[arg(long)]
    pub follow: bool,
    /// The log's bytes as the agent wrote them, control sequences included (by default they are
    /// removed: a log may hold anything).
    #[arg(long)]
    pub raw: bool,
}

/// Flags of `summary` and `report`.
#[derive(Debug, Args)]
pub struct SummaryArgs {
    /// The loop's topic.
    pub topic: String,
    /// Read the loop from its branch and pushed records in this repository (run-remote).
    #[arg(long, value_name = "URL")]
    pub remote: Option<String>,
    /// With --remote: the loop's branch (default wiggum/<topic>).
    #[arg(long, value_name = "B", requires = "remote")]
    pub branch: Option<String>,
    /// With --remote: the artifact dir inside the repository.
    #[arg(long, value_name = "REL", default_value = ".", requires = "remote")]
    pub path: std::path::PathBuf,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

/// Flags of `report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Topics (default: every registered loop, or every loop of --remote).
    pub topics: Vec<String>,
    /// Report on the loops whose runs push their records to this repository (run-remote).
    #[arg(long, value_name = "URL")]
    pub remote: Option<String>,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

/// `logs`.
pub fn logs(a: &LogsArgs) -> Result<i32> {
    let layout = Handle::open_present(&a.topic)?.layout;
    let pinned = a.iteration.or(a.planning.then_some(0));
    // Unpinned: the newest iteration, by its directory or by the state (a stopped or crashed
    // iteration's directory is moved to the discarded attempts, whose logs are shown).
    let current = || {
        crate::disk::state::read(&layout.state())
            .ok()
            .flatten()
            .map(|s| s.current_iteration)
    };
    let mut n = pinned
        .or_else(|| layout.latest_run().max(current()))
        .unwrap_or(0);
    let mut path = layout.agent_log(n);
    let discarded = if a.follow {
        Vec::new()
    } else {
        discarded_logs(&layout, n)
    };
    if !path.exists() && !a.follow && discarded.is_empty() {
        return Err(Error::input(format!(
            "no log for iteration {n} of `{}` ({})",
            a.topic,
            path.display()
        )));
    }
    let mut out: Box<dyn Write> = if a.raw {
        Box::new(std::io::stdout())
    } else {
        Box::new(term::Printable::new(std::io::stdout()))
    };
    for (name, log) in &discarded {
        writeln!(out, "--- discarded attempt {name} ---").at(log, "print")?;
        let mut f = std::fs::File::open(log).at(log, "read")?;
        std::io::copy(&mut f, &mut out).at(log, "print")?;
    }
    if !discarded.is_empty() && path.exists() {
        writeln!(out, "--- iteration {n} ---").at(&path, "print")?;
    }
    let mut pos = 0u64;
    let home = crate::config::home_dir()?;
    loop {
        // Whether the loop runs, read before the copy: once it has stopped, the copy that
        // follows has everything.
        let live = a.follow && crate::disk::lock::find(&home, &layout)?.is_some();
        if let Ok(mut f) = std::fs::File::open(&path) {
            f.seek(SeekFrom::Start(pos)).at(&path, "seek")?;
            // Copied in chunks: a log of any size prints without being held in memory.
            pos += std::io::copy(&mut f, &mut out).at(&path, "print")?;
            out.flush().at(&path, "print")?;
        }
        if !a.follow {
            print_validation(&layout.validation_log(n), n, &mut out)?;
            return Ok(0);
        }
        // Followed without --iteration: the next iteration's log takes over once this one is
        // read to its end (like `tail -F`).
        let latest = layout.latest_run().unwrap_or(0);
        if pinned.is_none()
            && let Some(next) = (n + 1..=latest).find(|m| layout.run_dir(*m).exists())
        {
            // What it wrote between the last read and the switch.
            if let Ok(mut f) = std::fs::File::open(&path) {
                f.seek(SeekFrom::Start(pos)).at(&path, "seek")?;
                std::io::copy(&mut f, &mut out).at(&path, "print")?;
            }
            n = next;
            path = layout.agent_log(n);
            pos = 0;
            writeln!(out, "--- iteration {n} ---").at(&path, "print")?;
            continue;
        }
        if !live {
            return Ok(0);
        }
        std::thread::sleep(Duration::from_millis(200)); // allow: follow polls, never spins
    }
}

/// The logs of iteration `n`'s discarded attempts (oldest first), named by their directory
/// (`iteration-003.attempt-1.<time>`).
fn discarded_logs(
    layout: &crate::disk::layout::Layout,
    n: u32,
) -> Vec<(String, std::path::PathBuf)> {
    let prefix = format!("{}.", crate::disk::layout::iteration_dir_name(n));
    let Ok(rd) = std::fs::read_dir(layout.discarded_records()) else {
        return Vec::new();
    };
    let mut found: Vec<(String, std::path::PathBuf)> = rd
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let log = e.path().join("agent.log");
            (name.starts_with(&prefix) && log.is_file()).then_some((name, log))
        })
        .collect();
    let when = |p: &std::path::Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    found.sort_by(|a, b| when(&a.1).cmp(&when(&b.1)).then(a.0.cmp(&b.0)));
    found
}

/// The output of iteration `n`'s validation commands, after its agent's log (copied in chunks).
fn print_validation(log: &std::path::Path, n: u32, out: &mut impl Write) -> Result<()> {
    let Ok(mut f) = std::fs::File::open(log) else {
        return Ok(());
    };
    writeln!(out, "--- validation of iteration {n} ---").at(log, "print")?;
    std::io::copy(&mut f, out).at(log, "print")?;
    Ok(())
}

/// `summary`: the lift (quality before → after, gate r1 → final) and one line per run.
pub fn summary(a: &SummaryArgs) -> Result<i32> {
    // A remote loop is read from a throwaway checkout of its branch (kept until the end).
    let (h, _checkout) = match &a.remote {
        Some(url) => {
            let branch = a
                .branch
                .clone()
                .unwrap_or_else(|| format!("wiggum/{}", a.topic));
            let (tmp, art) =
                crate::view::remote::checkout_for_reading(url, &a.topic, &branch, &a.path)?;
            let home = tmp.path().join("home");
            (Handle::at(&home, &a.topic, art), Some(tmp))
        }
        None => (Handle::open_present(&a.topic)?, None),
    };
    let g = gather(&h)?;
    if a.json {
        let v = summary::SummaryJson {
            topic: &a.topic,
            state: g.state.as_ref(),
            lift: &g.lift,
            lines: &g.lines,
            iterations: &g.runs,
            report: report::aggregate(&g.runs, 7.0),
        };
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return Ok(0);
    }
    say(&g.text(&a.topic, &h.layout));
    Ok(0)
}

/// What `summary` shows of a loop.
pub(crate) struct Gathered {
    runs: Vec<crate::disk::records::RunRecord>,
    /// `state.json`, when there is one.
    pub state: Option<crate::disk::state::LoopState>,
    lift: summary::Lift,
    lines: Vec<String>,
}

impl Gathered {
    /// `summary`'s text.
    pub(crate) fn text(&self, topic: &str, layout: &Layout) -> String {
        let tests = crate::ralph::work::read_tree(layout);
        summary_text(
            topic,
            &self.lift,
            tests.as_ref(),
            &self.lines,
            self.state.as_ref(),
        )
    }
}

/// The loop's records, state, lift and a line per run.
pub(crate) fn gather(h: &Handle) -> Result<Gathered> {
    let all = Want {
        recent: usize::MAX,
        ..Want::default()
    };
    let v = model::load(h, all)?;
    let (runs, st) = (v.recent, v.state);
    let layout = &h.layout;
    let lift = summary::lift_of(h, st.as_ref(), &runs);
    // What each iteration did: its review's first line.
    let what = |n: u32| -> Option<String> {
        let text = fsutil::read_capped(&layout.review(n), 64 << 10).ok()?;
        let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
        Some(line.trim_start_matches('#').trim().to_string())
    };
    let max = st.as_ref().map_or(0, |s| s.max_iterations);
    let lines: Vec<String> = runs
        .iter()
        .map(|r| {
            let did = (r.record == crate::disk::records::RecordKind::Iteration)
                .then(|| what(r.iteration))
                .flatten();
            progress::run_line(r, max, did.as_deref())
        })
        .collect();
    Ok(Gathered {
        runs,
        state: st,
        lift,
        lines,
    })
}

/// `summary`'s text: the lift, a line per run, how the loop stands.
fn summary_text(
    topic: &str,
    lift: &summary::Lift,
    tests: Option<&crate::disk::records::TreeValidation>,
    lines: &[String],
    st: Option<&crate::disk::state::LoopState>,
) -> String {
    let mut out = if lines.is_empty() {
        vec![format!("`{topic}` has run no iteration yet")]
    } else {
        let head = match tests {
            Some(t) => format!(
                "tests  {}  (failing after {} of {} iterations)\n",
                t.tree.summary, t.red_iterations, t.validated
            ),
            None => format!("{}\n", summary::text(lift)),
        };
        let mut out = vec![head];
        out.extend(lines.iter().cloned());
        out
    };
    if let Some(s) = st {
        let reason = s.stop_reason().map_or("-", |r| r.as_str());
        out.push(format!(
            "\nstatus {}, stop reason {reason}, cost {}",
            s.status().as_str(),
            s.spend.shown()
        ));
        if let Some(why) = s.stop_detail() {
            out.push(format!("  {why}"));
        }
        if let Some(result) = progress::result_of(s) {
            out.push(format!("result {result}"));
        }
    }
    out.join("\n")
}

/// Dimension scores under this count as weak in `report` (the gate's focus threshold).
const WEAK_BELOW: f64 = 7.0;

/// `report`.
pub fn report_cmd(a: &ReportArgs) -> Result<i32> {
    let mut agg = report::Aggregator::new(WEAK_BELOW);
    let loops = match &a.remote {
        Some(url) => {
            let mut n = 0;
            for r in crate::view::remote::remote_records(url)? {
                if a.topics.is_empty() || a.topics.contains(&r.topic) {
                    n += 1;
                    r.runs.lines().for_each(|l| agg.add_line(l.as_bytes()));
                }
            }
            n
        }
        None => local_report(a, &mut agg)?,
    };
    print_report(a, agg, loops)
}

/// Feed the local loops' run logs to `agg`; returns how many loops.
fn local_report(a: &ReportArgs, agg: &mut report::Aggregator) -> Result<usize> {
    let home = config::home_dir()?;
    let topics: Vec<(String, std::path::PathBuf)> = if a.topics.is_empty() {
        registry::all(&home)?
    } else {
        a.topics
            .iter()
            .map(|t| Ok((t.clone(), registry::require(&home, t)?)))
            .collect::<Result<_>>()?
    };
    // Streamed: a run log of any length is read one line at a time into sums and counts, a
    // long one in pieces on every core at once.
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    for (_, path) in &topics {
        let runs = Layout::for_loop(&home, path).runs();
        let pieces = crate::sys::lines::stream_lines_parallel(
            &runs,
            1 << 20,
            cores.min(4),
            || report::Aggregator::new(WEAK_BELOW),
            report::Aggregator::add_line,
        )?;
        for piece in pieces {
            agg.merge(piece);
        }
    }
    Ok(topics.len())
}

fn print_report(a: &ReportArgs, agg: report::Aggregator, loops: usize) -> Result<i32> {
    let r = agg.finish();
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r).unwrap_or_default());
        return Ok(0);
    }
    let f = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.2}"));
    let mut out = vec![
        format!(
            "loops: {}  iterations: {}  gated: {}",
            loops, r.iterations, r.gated
        ),
        format!(
            "mean r1 {}  mean kept {}  pass rate {}  mean rounds {}",
            f(r.mean_r1),
            f(r.mean_final),
            f(r.pass_rate),
            f(r.mean_rounds)
        ),
        format!("composite (0.7·r1 + 0.3·pass·10): {}", f(r.composite)),
        "weakest dimensions (rounds below 7):".to_string(),
    ];
    out.extend(
        r.weak_dimensions
            .iter()
            .map(|(d, n)| format!("  {d:<14} {n}")),
    );
    out.push("most frequent first-round issues:".into());
    out.extend(r.top_issues.iter().map(|(i, n)| format!("  {n:>3}× {i}")));
    say(&out.join("\n"));
    Ok(0)
}

/// Print `text` for a person: what reviews and records hold is shown without control sequences.
fn say(text: &str) {
    println!("{}", term::printable(text));
}
