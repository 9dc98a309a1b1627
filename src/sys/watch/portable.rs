//! The watch's events where there is no inotify (macOS: FSEvents), through the `notify` crate.
//! Its own thread reads the kernel's events into a bounded queue, so a read is vouched for by a
//! marker: a file written into the marker's directory, whose event, once read, comes after
//! every event of a change made before it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, TrySendError, sync_channel};
use std::time::Instant;

use notify::event::{AccessKind, AccessMode, CreateKind, Flag, ModifyKind, RenameMode};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use super::{QUEUE, Seen};

/// How long a take waits for its marker's event before it calls the changes unknown.
pub(super) const MARKER_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// notify's watcher, the queue its thread fills, and the markers written.
pub(super) struct Source {
    watcher: RecommendedWatcher,
    rx: Receiver<notify::Result<Event>>,
    /// Set by the watcher's thread when the queue was full and events were dropped.
    overflowed: Arc<AtomicBool>,
    marker_dir: PathBuf,
    seq: u64,
}

impl Source {
    /// A watcher whose markers go to `marker_dir`.
    pub(super) fn start(marker_dir: &Path) -> notify::Result<Source> {
        let (tx, rx) = sync_channel(QUEUE);
        let overflowed = Arc::new(AtomicBool::new(false));
        let flag = overflowed.clone();
        let watcher = notify::recommended_watcher(move |ev| {
            // Never blocks the watcher's thread: a full queue drops the event and says so (the
            // receiver gone means the watch is being dropped).
            if let Err(TrySendError::Full(_)) = tx.try_send(ev) {
                flag.store(true, Ordering::Relaxed);
            }
        })?;
        Ok(Source {
            watcher,
            rx,
            overflowed,
            marker_dir: marker_dir.to_path_buf(),
            seq: 0,
        })
    }

    /// Watch `dir` (itself, not what is under it).
    pub(super) fn watch(&mut self, dir: &Path) -> notify::Result<()> {
        self.watcher.watch(dir, RecursiveMode::NonRecursive)
    }

    /// The events queued now, `max` at most; true when the queue was read empty.
    pub(super) fn read(&mut self, max: usize, out: &mut Vec<Seen>) -> bool {
        for _ in 0..max {
            let Ok(ev) = self.rx.try_recv() else {
                self.dropped(out);
                return true;
            };
            fold(ev, out);
        }
        self.dropped(out);
        false
    }

    /// Every event of a change made before the call: a marker's event read means every event
    /// before it was — unless events were dropped meanwhile: then a fresh marker (the queue
    /// has room again) settles what the next answer starts from, three at most.
    pub(super) fn settle(&mut self, max: usize, out: &mut Vec<Seen>) -> bool {
        for _ in 0..3 {
            let seen = self.marker(out);
            if !self.dropped(out) {
                return seen && self.read(max, out);
            }
        }
        false
    }

    /// Whether the watcher's thread dropped events since the last look (an overflow, said).
    fn dropped(&self, out: &mut Vec<Seen>) -> bool {
        let dropped = self.overflowed.swap(false, Ordering::Relaxed);
        if dropped {
            out.push(Seen::Overflow);
        }
        dropped
    }

    /// Write a marker and read events until its own comes (true) or [`MARKER_WAIT`] is gone
    /// (a marker whose event was dropped never comes).
    fn marker(&mut self, out: &mut Vec<Seen>) -> bool {
        self.seq += 1;
        let marker =
            self.marker_dir
                .join(format!(".watch-{}-{}.tmp", std::process::id(), self.seq));
        let seen = std::fs::write(&marker, b"").is_ok() && {
            let deadline = Instant::now() + MARKER_WAIT;
            let mut seen = false;
            while !seen {
                let left = deadline.saturating_duration_since(Instant::now());
                match self.rx.recv_timeout(left) {
                    Ok(ev) => {
                        seen = ev
                            .as_ref()
                            .is_ok_and(|e| e.paths.iter().any(|p| p == &marker));
                        fold(ev, out);
                    }
                    Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
                }
            }
            seen
        };
        let _gone = std::fs::remove_file(&marker);
        seen
    }
}

/// One of notify's events as the watch needs it.
fn fold(ev: notify::Result<Event>, out: &mut Vec<Seen>) {
    let ev = match ev {
        Ok(ev) => ev,
        Err(e) => return out.push(Seen::Failed(e.to_string())),
    };
    if ev.flag() == Some(Flag::Rescan) {
        return out.push(Seen::Overflow);
    }
    // Reads change nothing (our own directory listing opens directories, too).
    if matches!(ev.kind, EventKind::Access(k) if k != AccessKind::Close(AccessMode::Write)) {
        return;
    }
    let new_dir = matches!(
        ev.kind,
        EventKind::Create(CreateKind::Folder | CreateKind::Any)
            | EventKind::Modify(ModifyKind::Name(RenameMode::To | RenameMode::Both))
    );
    out.extend(
        ev.paths
            .into_iter()
            .map(|path| Seen::Changed { path, new_dir }),
    );
}
