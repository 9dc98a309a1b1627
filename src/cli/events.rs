//! `events <topic> [--follow] [--since T]`: the loop's events as JSON lines (`view::events`),
//! from its records; with `--follow`, as they happen, until the loop ends.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, Seek, SeekFrom, Write};
use std::time::Duration;

use clap::Args;

use crate::disk::handle::Handle;
use crate::error::{Error, IoContext, Result};
use crate::sys::term;
use crate::view::events::{self, Event};
use crate::view::feed;

/// Flags of `events`.
#[derive(Debug, Args)]
pub struct EventsArgs {
    /// The loop's topic.
    pub topic: String,
    /// Keep printing events as they happen, until the loop ends.
    #[arg(long)]
    pub follow: bool,
    /// Only events at or after this time: RFC 3339, or a time ago (`30m`, `2h`, `1d`).
    #[arg(long, value_name = "T")]
    pub since: Option<String>,
}

/// The longest line of `runs.jsonl` read (a longer one is skipped).
const MAX_LINE: u64 = 4 << 20;

/// `events`.
pub fn run(a: &EventsArgs) -> Result<i32> {
    let since = a
        .since
        .as_deref()
        .map(|s| events::since(s, chrono::Utc::now()))
        .transpose()
        .map_err(Error::input)?;
    let h = Handle::open_present(&a.topic)?;
    let runs = h.layout.runs();
    let home = crate::config::home_dir()?;
    let mut out = std::io::stdout().lock();
    let mut print = |e: &Event| -> Result<()> {
        if since.is_some_and(|t| e.at < t) {
            return Ok(());
        }
        let line = term::json_line(&serde_json::to_string(e).unwrap_or_default());
        writeln!(out, "{line}").at(&runs, "print")?;
        out.flush().at(&runs, "print")
    };
    let mut follower = Follower::default();
    loop {
        // Whether the loop runs, read before the records: once it has ended, what follows has
        // everything.
        let live = a.follow && crate::disk::lock::find(&home, &h.layout)?.is_some();
        for e in follower.next(&h, live)? {
            print(&e)?;
        }
        if !live {
            return Ok(0);
        }
        std::thread::sleep(Duration::from_millis(300)); // allow: follow polls, never spins
    }
}

/// Reads a loop's events as they come: the records' new lines, a run going on now, the end.
#[derive(Default)]
pub struct Follower {
    pos: u64,
    /// Runs already said to have started (iteration, attempt).
    started: BTreeSet<(u32, u32)>,
    /// Records read per iteration.
    records: BTreeMap<u32, u32>,
    ended: bool,
}

impl Follower {
    /// The events since the last call; `live`: the loop runs (else its end comes once).
    pub fn next(&mut self, h: &Handle, live: bool) -> Result<Vec<Event>> {
        let runs = h.layout.runs();
        // A gate round's line is written before its run's: within what is read at once, the
        // events go in the order they happened.
        let mut batch: Vec<Event> = read_from(&runs, &mut self.pos)?
            .iter()
            .flat_map(|line| events::of_line(&h.topic, line))
            .collect();
        batch.sort_by_key(|e| e.at);
        let mut out = Vec::new();
        for e in batch {
            if let events::Detail::RunStarted { attempt, .. } = e.detail {
                *self.records.entry(e.iteration).or_default() += 1;
                if !self.started.insert((e.iteration, attempt)) {
                    continue;
                }
            }
            out.push(e);
        }
        let st = crate::disk::state::read(&h.layout.state()).ok().flatten();
        if live {
            if let Some(st) = &st {
                let attempt = self
                    .records
                    .get(&st.current_iteration)
                    .copied()
                    .unwrap_or(0)
                    + 1;
                if let Some(e) = events::live_start(st, attempt, chrono::Utc::now())
                    && self.started.insert((e.iteration, attempt))
                {
                    out.push(e);
                }
            }
        } else if !self.ended {
            self.ended = true;
            out.extend(st.as_ref().map(events::of_end).unwrap_or_default());
        }
        Ok(out)
    }
}

/// Reads a loop's feed as it comes (`view::feed`): its records' new lines (from their copy in
/// the store, out of the agents' reach) as the terminal said them, what it does now (said again only when that changes), the completion block at the end.
#[derive(Default)]
pub struct FeedFollower {
    pos: u64,
    now: Option<String>,
    ended: bool,
}

impl FeedFollower {
    /// The feed's items since the last call; `live`: the loop runs (else its end comes once).
    pub fn next(&mut self, h: &Handle, live: bool) -> Result<Vec<feed::Item>> {
        let st = crate::disk::state::read(&h.layout.state()).ok().flatten();
        let max = st.as_ref().map_or(0, |s| s.max_iterations);
        // The records' copy in the store: `wiggum/runs.jsonl` is in the agent's reach while it
        // runs (put back after, but a follower reading it then would show what it wrote).
        let mut out: Vec<feed::Item> = read_from(&h.layout.runs_copy(), &mut self.pos)?
            .iter()
            .filter_map(|line| feed::of_line(line, max))
            .collect();
        if !out.is_empty() {
            self.now = None;
        }
        if live {
            let now = st
                .as_ref()
                .and_then(|s| feed::now_line(s, chrono::Utc::now()));
            if let Some(item) = now
                && self.now.as_deref() != Some(item.line.as_str())
            {
                self.now = Some(item.line.clone());
                out.push(item);
            }
        } else if !self.ended {
            self.ended = true;
            if let Some(st) = &st
                && let Some(block) = super::status::completion(h, Some(st))
            {
                out.push(feed::end(st, block));
            }
        }
        Ok(out)
    }
}

/// The complete lines of `path` from `pos` on (a line being written stays for the next read);
/// `pos` moves past them.
fn read_from(path: &std::path::Path, pos: &mut u64) -> Result<Vec<String>> {
    let Ok(mut f) = std::fs::File::open(path) else {
        return Ok(Vec::new());
    };
    f.seek(SeekFrom::Start(*pos)).at(path, "seek")?;
    let mut r = std::io::BufReader::new(f);
    let mut lines = Vec::new();
    loop {
        let mut buf = Vec::new();
        let n = std::io::Read::take(&mut r, MAX_LINE)
            .read_until(b'\n', &mut buf)
            .at(path, "read")?;
        if n == 0 || !buf.ends_with(b"\n") {
            if n as u64 == MAX_LINE {
                // Too long to be a record: skip to its end.
                *pos += n as u64;
                continue;
            }
            return Ok(lines);
        }
        *pos += n as u64;
        lines.push(String::from_utf8_lossy(&buf).into_owned());
    }
}
