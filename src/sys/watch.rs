//! Which paths under a directory changed, told by the kernel (inotify through `notify`) rather
//! than found by walking the tree: the loop's per-iteration cost then follows what the agent
//! touched, not the size of the repository (as git's fsmonitor and watchman do).
//!
//! One watch per directory, set up once by one walk of the directories (files are never listed
//! or stat'ed); `.git` and directories the caller skips (ignored ones) are not watched. A
//! directory created later is watched when its event is read, and reported itself, so whatever
//! was written into it before the watch existed is still looked at. Events are read on the
//! caller's thread; [`TreeWatch::take`] first writes a marker file and waits for its event, so
//! every change made before the call has been read. When the kernel's queue overflowed, a watch
//! could not be added or the marker never came, the answer is [`Changes::Unknown`]: walk once.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, TrySendError, sync_channel};
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode, CreateKind, Flag, ModifyKind, RenameMode};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};

/// What changed since the last [`TreeWatch::take`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Changes {
    /// These paths (relative to the root; a directory stands for everything under it).
    Paths(BTreeSet<PathBuf>),
    /// Events were lost: only a walk can tell.
    Unknown,
}

/// Directories not to watch, by their path relative to the root.
pub type Skip = Box<dyn Fn(&Path) -> bool + Send>;

/// A watch shared by the loop (which takes its changes) and the runs it starts (activity).
pub type Shared = std::sync::Arc<std::sync::Mutex<TreeWatch>>;

/// A watch over a directory tree.
pub struct TreeWatch {
    root: PathBuf,
    marker_dir: PathBuf,
    watcher: RecommendedWatcher,
    rx: Receiver<notify::Result<Event>>,
    /// Set by the watcher's thread when the queue was full and events were dropped.
    overflowed: Arc<AtomicBool>,
    skip: Skip,
    touched: BTreeSet<PathBuf>,
    lost: bool,
    /// A directory could not be watched: its changes would go unseen, so every answer from now
    /// on is "unknown" (walk).
    blind: bool,
    seq: u64,
}

impl std::fmt::Debug for TreeWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TreeWatch")
            .field("root", &self.root)
            .field("touched", &self.touched.len())
            .field("lost", &self.lost)
            .finish_non_exhaustive()
    }
}

/// How long [`TreeWatch::take`] waits for its marker before it calls the changes unknown.
const MARKER_WAIT: Duration = Duration::from_secs(2);

/// Events held between two reads at most: past it they are dropped and the next answer is
/// "unknown" (walk). An agent that renames files in a tight loop makes events faster than any
/// reader: unbounded, the queue grew by tens of megabytes a second and a read never ended.
const QUEUE: usize = 16_384;

/// Paths remembered between two takes at most: past it, a walk is cheaper anyway.
const MAX_TOUCHED: usize = 20_000;

impl TreeWatch {
    /// Watch `root`'s tree. `marker_dir` (under `root`, watched) receives the short-lived
    /// marker files; `skip` names directories to leave unwatched. `None` when the platform
    /// offers no watch at all (the caller walks every time).
    pub fn start(root: &Path, marker_dir: &Path, skip: Skip) -> Option<TreeWatch> {
        let (tx, rx) = sync_channel(QUEUE);
        let overflowed = Arc::new(AtomicBool::new(false));
        let flag = overflowed.clone();
        let watcher = match notify::recommended_watcher(move |ev| {
            // Never blocks the watcher's thread: a full queue drops the event and says so (the
            // receiver gone means the watch is being dropped).
            if let Err(TrySendError::Full(_)) = tx.try_send(ev) {
                flag.store(true, Ordering::Relaxed);
            }
        }) {
            Ok(w) => w,
            Err(e) => {
                tracing::info!("no file watch ({e}); the work tree is walked each iteration");
                return None;
            }
        };
        let mut w = TreeWatch {
            root: root.to_path_buf(),
            marker_dir: marker_dir.to_path_buf(),
            watcher,
            rx,
            overflowed,
            skip,
            touched: BTreeSet::new(),
            lost: false,
            blind: false,
            seq: 0,
        };
        w.add_tree(root);
        Some(w)
    }

    /// Watch `dir` and every directory under it that is not skipped.
    fn add_tree(&mut self, dir: &Path) {
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            if let Err(e) = self.watcher.watch(&d, RecursiveMode::NonRecursive) {
                // Gone already is fine (its parent's event covers it); a full table is not.
                if d.exists() {
                    tracing::info!("cannot watch {} ({e}); walking instead", d.display());
                    self.blind = true;
                }
                continue;
            }
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in entries.flatten() {
                if !e.file_type().is_ok_and(|t| t.is_dir()) || e.file_name() == ".git" {
                    continue;
                }
                let path = e.path();
                // The marker's directory is always watched: without it no read could be vouched for.
                if let Ok(rel) = path.strip_prefix(&self.root)
                    && !self.marker_dir.starts_with(&path)
                    && (self.skip)(rel)
                {
                    continue;
                }
                stack.push(path);
            }
        }
    }

    /// Read the events that have arrived; returns the paths they touched (relative to the
    /// root, `.git` and marker files aside): activity, for idle detection. They are kept for
    /// the next [`Self::take`].
    pub fn poll(&mut self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        // At most a queue's worth: events that keep coming are the next read's.
        for _ in 0..QUEUE {
            let Ok(ev) = self.rx.try_recv() else {
                break;
            };
            self.absorb(ev, None, &mut out);
        }
        out.sort();
        out.dedup();
        out
    }

    /// Take what changed since the previous call. Every change made before the call is in it.
    pub fn take(&mut self) -> Changes {
        // A marker's event read means every event before it was read — unless events were
        // dropped meanwhile: then the answer is "unknown", and a fresh marker (the queue has
        // room again) settles what the next answer starts from.
        let mut overflowed = false;
        let mut synced = false;
        for _ in 0..3 {
            let seen = self.sync();
            let dropped = self.overflowed.swap(false, Ordering::Relaxed);
            overflowed |= dropped;
            if !dropped {
                synced = seen;
                break;
            }
        }
        self.poll();
        if overflowed {
            // A directory made while events were dropped may be unwatched: watch the tree again
            // (a directory watched already stays as it is).
            tracing::info!("the file watch fell behind (events dropped); walking instead");
            let root = self.root.clone();
            self.add_tree(&root);
        }
        let lost = std::mem::take(&mut self.lost) || overflowed || !synced || self.blind;
        let touched = std::mem::take(&mut self.touched);
        if lost {
            Changes::Unknown
        } else {
            Changes::Paths(touched)
        }
    }

    /// Write a marker and read events until its own comes (true) or [`MARKER_WAIT`] is gone
    /// (a marker whose event was dropped never comes).
    fn sync(&mut self) -> bool {
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
                        let mut hit = false;
                        self.absorb(ev, Some((&marker, &mut hit)), &mut Vec::new());
                        seen = hit;
                    }
                    Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
                }
            }
            seen
        };
        let _gone = std::fs::remove_file(&marker);
        seen
    }

    /// Fold one event in, adding the paths it touched to `seen`. `marker` is set when the
    /// event is the marker's creation.
    fn absorb(
        &mut self,
        ev: notify::Result<Event>,
        marker: Option<(&Path, &mut bool)>,
        seen: &mut Vec<PathBuf>,
    ) {
        let ev = match ev {
            Ok(ev) => ev,
            Err(e) => {
                tracing::info!("file watch error ({e}); walking instead");
                self.lost = true;
                return;
            }
        };
        if ev.flag() == Some(Flag::Rescan) {
            self.lost = true;
            return;
        }
        if let Some((m, hit)) = marker
            && ev.paths.iter().any(|p| p == m)
        {
            *hit = true;
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
        for p in &ev.paths {
            let Ok(rel) = p.strip_prefix(&self.root) else {
                continue;
            };
            if rel.as_os_str().is_empty()
                || rel.components().any(|c| c.as_os_str() == ".git")
                || is_marker(rel)
            {
                continue;
            }
            if new_dir && p.is_dir() && !(self.skip)(rel) {
                self.add_tree(p);
            }
            seen.push(rel.to_path_buf());
            if !self.lost {
                self.touched.insert(rel.to_path_buf());
            }
            if self.touched.len() > MAX_TOUCHED {
                self.lost = true;
                self.touched.clear();
            }
        }
    }
}

fn is_marker(rel: &Path) -> bool {
    rel.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(".watch-") && n.ends_with(".tmp"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(c: Changes) -> Vec<String> {
        match c {
            Changes::Paths(p) => p.iter().map(|p| p.display().to_string()).collect(),
            Changes::Unknown => vec!["<unknown>".into()],
        }
    }

    fn watch(root: &Path) -> TreeWatch {
        TreeWatch::start(root, root, Box::new(|rel: &Path| rel.starts_with("target"))).unwrap()
    }

    #[test]
    fn reports_exactly_the_paths_written_since_the_last_take() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("src/deep")).unwrap();
        std::fs::write(d.path().join("src/deep/a.rs"), "a").unwrap();
        let mut w = watch(d.path());
        assert_eq!(paths(w.take()), Vec::<String>::new());
        std::fs::write(d.path().join("src/deep/a.rs"), "b").unwrap();
        std::fs::write(d.path().join("top.md"), "t").unwrap();
        assert_eq!(paths(w.take()), ["src/deep/a.rs", "top.md"]);
        // Nothing since: nothing.
        assert_eq!(paths(w.take()), Vec::<String>::new());
        std::fs::remove_file(d.path().join("top.md")).unwrap();
        std::fs::rename(d.path().join("src/deep"), d.path().join("src/moved")).unwrap();
        assert_eq!(paths(w.take()), ["src/deep", "src/moved", "top.md"]);
    }

    /// A flood of events (an agent renaming files in a tight loop) neither grows without bound
    /// nor hangs a take: the answer is "walk", and the watch goes on exactly after it.
    #[test]
    fn a_flood_of_events_is_a_walk_and_the_watch_goes_on() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("sub")).unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        std::fs::write(&a, "x").unwrap();
        let mut w = watch(d.path());
        for _ in 0..(QUEUE * 2) {
            std::fs::rename(&a, &b).unwrap();
            std::fs::rename(&b, &a).unwrap();
        }
        // A directory made while events were being dropped is watched from now on.
        std::fs::create_dir_all(d.path().join("sub/late")).unwrap();
        assert_eq!(paths(w.take()), ["<unknown>"]);
        std::fs::write(d.path().join("sub/late/f"), "y").unwrap();
        assert_eq!(paths(w.take()), ["sub/late/f"]);
    }

    #[test]
    fn a_new_directory_is_reported_and_then_watched() {
        let d = tempfile::tempdir().unwrap();
        let mut w = watch(d.path());
        // Written at once, before any event is read: the directory stands for its contents.
        std::fs::create_dir_all(d.path().join("new/inner")).unwrap();
        std::fs::write(d.path().join("new/inner/f"), "x").unwrap();
        assert_eq!(paths(w.take()), ["new"]);
        std::fs::write(d.path().join("new/inner/f"), "y").unwrap();
        assert_eq!(paths(w.take()), ["new/inner/f"]);
    }

    #[test]
    fn git_and_skipped_directories_are_not_reported() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join(".git/objects")).unwrap();
        std::fs::create_dir_all(d.path().join("target/debug")).unwrap();
        let mut w = watch(d.path());
        std::fs::write(d.path().join(".git/index"), "i").unwrap();
        std::fs::write(d.path().join("target/debug/bin"), "b").unwrap();
        std::fs::write(d.path().join("kept"), "k").unwrap();
        assert_eq!(paths(w.take()), ["kept"]);
    }

    #[test]
    fn the_marker_directory_is_watched_even_when_skipped() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("wiggum")).unwrap();
        let mut w = TreeWatch::start(
            d.path(),
            &d.path().join("wiggum"),
            Box::new(|rel: &Path| rel.starts_with("wiggum")),
        )
        .unwrap();
        let t0 = Instant::now();
        std::fs::write(d.path().join("f"), "x").unwrap();
        assert_eq!(paths(w.take()), ["f"]);
        assert!(
            t0.elapsed() < MARKER_WAIT,
            "the marker was waited for in vain"
        );
    }

    #[test]
    fn poll_counts_activity_and_keeps_it_for_take() {
        let d = tempfile::tempdir().unwrap();
        let mut w = watch(d.path());
        std::fs::write(d.path().join("f"), "x").unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut seen = Vec::new();
        while seen.is_empty() && Instant::now() < deadline {
            // A write is several events (create, modify, close); they may come in two polls.
            seen = w.poll();
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(
            seen,
            [PathBuf::from("f")],
            "the write was never seen as activity"
        );
        assert_eq!(paths(w.take()), ["f"]);
    }
}
