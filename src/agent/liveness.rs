//! Watching a running job besides its wall limit: ending it never depends on the model's
//! cooperation. A run that prints nothing and changes no file for `idle` ends as `idle` (real
//! CLIs retry a dead endpoint forever); a tree whose resident memory crosses the ceiling ends as
//! `memory_limit`, a log that grows past its ceiling as `output_limit`. File changes come from
//! the loop's file watch (`sys::watch`), or one of the run's own when there is no loop; the
//! supervisor's own files and `.git/` do not count.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::kill;
use crate::disk::records::Ending;
use crate::sys::procs;
use crate::sys::watch::TreeWatch;

/// What is watched of a running job besides its wall limit.
#[derive(Debug, Clone)]
pub struct Liveness {
    /// End the job after this long without output and without a file change (zero: never).
    pub idle: Duration,
    /// The directory whose changes count as activity.
    pub watch: std::path::PathBuf,
    /// A watch over it already running (the loop's), read instead of starting one.
    pub activity: Option<crate::sys::watch::Shared>,
    /// End the job when its tree's resident memory crosses this many bytes (zero: never).
    pub max_memory: u64,
    /// End the job when its log grows past this many bytes (zero: never).
    pub max_log: u64,
    /// The completion promise, how often the prompt itself holds it (an echo is not the
    /// agent's word), and how long an agent may linger after printing it.
    pub promise: Option<PromiseWatch>,
    /// The machine's `/dev/shm` where the run has none of its own: what it adds there counts
    /// towards `max_memory`, and is removed when it ends.
    #[cfg(target_os = "linux")]
    pub shm: Option<Arc<crate::sys::shm::ShmLedger>>,
}

/// Watching the log for the completion promise.
#[derive(Debug, Clone)]
pub struct PromiseWatch {
    /// The promise line.
    pub line: String,
    /// Lines of the prompt equal to it.
    pub in_prompt: usize,
    /// How long the agent may go on after printing it.
    pub grace: Duration,
}

/// Files the supervisor itself writes while an agent runs: not the agent's activity.
fn is_supervisor_noise(path: &Path) -> bool {
    if path.components().any(|c| c.as_os_str() == ".git") {
        return true;
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    matches!(
        name.as_str(),
        "state.json" | ".lock" | "runs.jsonl" | "control.json"
    ) || name.starts_with("daemon.log")
        || name.ends_with(".tmp")
}

/// Memory of the run's tree (its group and every token holder), in bytes: what is resident,
/// and on Linux what its processes hold in files no directory shows (an unlinked `/dev/shm`
/// file, a `memfd`).
#[must_use]
pub fn tree_rss(pgid: i32, token: &str) -> u64 {
    let tree = kill::survivors(pgid, token);
    let resident: u64 = tree.iter().map(|s| procs::rss_bytes(s.pid)).sum();
    #[cfg(target_os = "linux")]
    let resident =
        resident + crate::sys::shm::held_by(&tree.iter().map(|s| s.pid).collect::<Vec<_>>());
    resident
}

/// The memory the run's files hold in a shared `/dev/shm`.
#[cfg(target_os = "linux")]
fn shm_bytes(l: &Liveness) -> u64 {
    l.shm.as_ref().map_or(0, |s| s.bytes())
}

/// Nothing to count where there is no shared-memory ledger.
#[cfg(not(target_os = "linux"))]
fn shm_bytes(_: &Liveness) -> u64 {
    0
}

/// Resolve when the job should end for being idle or too big; pending otherwise.
pub async fn watch(
    l: &Liveness,
    log: &Path,
    stdout: Option<&Path>,
    pgid: i32,
    token: &str,
) -> Ending {
    // The loop's watch when it has one; else one of this run's own (delegations, `gate`).
    let own = (l.activity.is_none() && !l.idle.is_zero())
        .then(|| TreeWatch::start(&l.watch, &l.watch, Box::new(|_: &Path| false)))
        .flatten()
        .map(|w| Arc::new(Mutex::new(w)));
    if own.is_none() && l.activity.is_none() && !l.idle.is_zero() {
        tracing::warn!(
            "cannot watch {} for changes; only output counts as activity",
            l.watch.display()
        );
    }
    let files = l.activity.clone().or(own);
    let tick = if l.idle.is_zero() {
        Duration::from_secs(1)
    } else {
        (l.idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(1))
    };
    let log_len = || std::fs::metadata(log).map_or(0, |m| m.len());
    let mut seen = log_len();
    let mut active_at = Instant::now();
    // The promise and the output ceiling are looked at often: at disk speed a second of output
    // is a gigabyte.
    let tick = if l.promise.is_some() || l.max_log > 0 {
        tick.min(Duration::from_millis(250))
    } else {
        tick
    };
    let mut promises = PromiseScan::default();
    loop {
        tokio::time::sleep(tick).await;
        if let Some(p) = &l.promise
            && promises.seen(log, p)
        {
            return Ending::Finished;
        }
        if l.max_memory > 0 {
            let rss = tree_rss(pgid, token) + shm_bytes(l);
            if rss > l.max_memory {
                tracing::warn!(
                    "the agent's tree uses {} MB, over the {} MB ceiling",
                    rss >> 20,
                    l.max_memory >> 20
                );
                return Ending::MemoryLimit;
            }
        }
        let len = log_len();
        // A separate stdout (a revision's answer) counts towards the ceiling too.
        let out_len = stdout.map_or(0, |p| std::fs::metadata(p).map_or(0, |m| m.len()));
        if l.max_log > 0 && len.max(out_len) > l.max_log {
            tracing::warn!(
                "the agent printed {} MB, over the {} MB ceiling",
                len.max(out_len) >> 20,
                l.max_log >> 20
            );
            return Ending::OutputLimit;
        }
        if l.idle.is_zero() {
            continue;
        }
        let touched = files.as_ref().is_some_and(|w| {
            w.lock()
                .is_ok_and(|mut w| w.poll().iter().any(|p| !is_supervisor_noise(p)))
        });
        if len != seen || touched {
            seen = len;
            active_at = Instant::now();
        }
        if active_at.elapsed() >= l.idle {
            return Ending::Idle;
        }
    }
}

/// Cut a log that crossed the output ceiling back to `max` bytes, saying so at its end (the run
/// is over: nothing writes to it any more).
pub fn cut_log(log: &Path, max: u64) -> crate::error::Result<()> {
    use crate::error::IoContext;
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(log)
        .at(log, "open to cut")?;
    f.set_len(max).at(log, "cut")?;
    let note = format!(
        "\n[studio-agents: the output past {} MB was cut off ([safety] max_log_mb)]\n",
        max >> 20
    );
    use std::io::Seek;
    f.seek(std::io::SeekFrom::End(0)).at(log, "cut")?;
    f.write_all(note.as_bytes()).at(log, "cut")
}

/// Reads what the log gained since the last look (bounded), counting promise lines.
#[derive(Debug, Default)]
struct PromiseScan {
    offset: u64,
    partial: Vec<u8>,
    count: usize,
    since: Option<Instant>,
}

impl PromiseScan {
    /// Whether the agent printed the promise (beyond the prompt's echo) at least `grace` ago.
    fn seen(&mut self, log: &Path, p: &PromiseWatch) -> bool {
        use std::io::{Read, Seek, SeekFrom};
        if let Ok(mut f) = std::fs::File::open(log)
            && f.seek(SeekFrom::Start(self.offset)).is_ok()
        {
            let mut buf = Vec::new();
            if let Ok(n) = f.take(1 << 20).read_to_end(&mut buf) {
                self.offset += n as u64;
                self.partial.extend_from_slice(&buf);
                while let Some(i) = self.partial.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = self.partial.drain(..=i).collect();
                    if String::from_utf8_lossy(&line).trim() == p.line.trim() {
                        self.count += 1;
                    }
                }
                if self.partial.len() > 1 << 16 {
                    self.partial.clear();
                }
            }
        }
        if self.count > p.in_prompt && self.since.is_none() {
            self.since = Some(Instant::now());
        }
        self.since.is_some_and(|t| t.elapsed() >= p.grace)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_log_keeps_its_head_and_says_where_it_was_cut() {
        let d = tempfile::tempdir().unwrap();
        let log = d.path().join("agent.log");
        std::fs::write(&log, vec![b'x'; 3 << 20]).unwrap();
        cut_log(&log, 1 << 20).unwrap();
        let bytes = std::fs::read(&log).unwrap();
        let note = b"\n[studio-agents: the output past 1 MB was cut off ([safety] max_log_mb)]\n";
        assert_eq!(bytes.len(), (1 << 20) + note.len());
        assert!(bytes.ends_with(note));
        assert!(bytes[..1 << 20].iter().all(|b| *b == b'x'));
    }

    #[test]
    fn the_supervisors_own_writes_are_not_activity() {
        for (p, noise) in [
            ("/r/wiggum/state.json", true),
            ("/r/wiggum/.state.json.Ab12.tmp", true),
            ("/r/.git/index", true),
            ("/r/wiggum/daemon.log", true),
            ("/r/wiggum/fix_plan.md", false),
            ("/r/src/main.rs", false),
        ] {
            assert_eq!(is_supervisor_noise(Path::new(p)), noise, "{p}");
        }
    }
}
