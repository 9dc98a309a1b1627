//! Which paths under a directory changed, told by the kernel rather than found by walking the
//! tree: the loop's per-iteration cost then follows what the agent touched, not the size of the
//! repository (as git's fsmonitor and watchman do).
//!
//! One watch per directory, set up once by one walk of the directories (files are never listed
//! or stat'ed); `.git` and directories the caller skips (ignored ones) are not watched. A
//! directory created later is watched when its event is read, and reported itself, so whatever
//! was written into it before the watch existed is still looked at. When events were lost (the
//! kernel's queue overflowed), a watch could not be added, or a read could not be vouched for,
//! the answer is [`Changes::Unknown`]: walk once.
//!
//! The events come from a [`source`](Source) per platform. On Linux, inotify read on the
//! caller's thread (`kernel`): the kernel queues an event before the call that caused it
//! returns, so reading the queue empty reads every change made before; only changes are asked
//! for (never opens or reads, which the harness itself makes by the thousand). Elsewhere, the
//! `notify` crate (`portable`): its own thread reads, so [`TreeWatch::take`] first writes a
//! marker file and waits for its event.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

#[cfg(target_os = "linux")]
mod kernel;
#[cfg(target_os = "linux")]
use kernel::Source;
#[cfg(not(target_os = "linux"))]
mod portable;
#[cfg(not(target_os = "linux"))]
use portable::Source;

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

/// One event of a source, as the watch needs it.
#[derive(Debug)]
enum Seen {
    /// Something at this absolute path changed; `new_dir`: it may be a directory just made
    /// or moved in (to be watched).
    Changed { path: PathBuf, new_dir: bool },
    /// Events were dropped (the queue was full): only a walk can tell what changed.
    Overflow,
    /// The source failed (said).
    Failed(String),
}

/// A watch over a directory tree.
pub struct TreeWatch {
    root: PathBuf,
    source: Source,
    skip: Skip,
    marker_dir: PathBuf,
    touched: BTreeSet<PathBuf>,
    lost: bool,
    /// A directory could not be watched: its changes would go unseen, so every answer from now
    /// on is "unknown" (walk).
    blind: bool,
    /// Events were dropped, or the rules of what is ignored changed: a directory may be
    /// unwatched that should not be, so the next take watches the tree again.
    rewatch: bool,
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

/// Events read in one [`TreeWatch::poll`] at most: events that keep coming are the next
/// read's, so an agent that renames files in a tight loop cannot keep a read from ending.
const QUEUE: usize = 16_384;

/// Paths remembered between two takes at most: past it, a walk is cheaper anyway.
const MAX_TOUCHED: usize = 20_000;

impl TreeWatch {
    /// Watch `root`'s tree. `marker_dir` (under `root`, always watched) receives a source's
    /// short-lived marker files where it needs them; `skip` names directories to leave
    /// unwatched. `None` when the platform offers no watch at all (the caller walks every
    /// time).
    pub fn start(root: &Path, marker_dir: &Path, skip: Skip) -> Option<TreeWatch> {
        let source = match Source::start(marker_dir) {
            Ok(s) => s,
            Err(e) => {
                tracing::info!("no file watch ({e}); the work tree is walked each iteration");
                return None;
            }
        };
        let mut w = TreeWatch {
            root: root.to_path_buf(),
            source,
            skip,
            marker_dir: marker_dir.to_path_buf(),
            touched: BTreeSet::new(),
            lost: false,
            blind: false,
            rewatch: false,
        };
        w.add_tree(root);
        Some(w)
    }

    /// Watch `dir` and every directory under it that is not skipped.
    fn add_tree(&mut self, dir: &Path) {
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            if let Err(e) = self.source.watch(&d) {
                // Gone or replaced already is fine (its parent's event covers it); a full
                // table is not.
                if d.symlink_metadata().is_ok_and(|m| m.is_dir()) {
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
        let mut seen = Vec::new();
        self.source.read(QUEUE, &mut seen);
        let mut out = Vec::new();
        for s in seen {
            self.absorb(s, &mut out);
        }
        out.sort();
        out.dedup();
        out
    }

    /// Take what changed since the previous call. Every change made before the call is in it.
    pub fn take(&mut self) -> Changes {
        let mut seen = Vec::new();
        let settled = self.source.settle(2 * QUEUE, &mut seen);
        for s in seen {
            self.absorb(s, &mut Vec::new());
        }
        if std::mem::take(&mut self.rewatch) {
            // A directory made while events were dropped, or one no longer ignored, may be
            // unwatched: watch the tree again (a directory watched already stays as it is).
            tracing::info!(
                "the file watch fell behind or the ignore rules changed; walking instead"
            );
            let root = self.root.clone();
            self.add_tree(&root);
        }
        let lost = std::mem::take(&mut self.lost) || !settled || self.blind;
        let touched = std::mem::take(&mut self.touched);
        if lost {
            Changes::Unknown
        } else {
            Changes::Paths(touched)
        }
    }

    /// Fold one event in, adding the paths it touched to `seen`.
    fn absorb(&mut self, ev: Seen, seen: &mut Vec<PathBuf>) {
        let (p, new_dir) = match ev {
            Seen::Changed { path, new_dir } => (path, new_dir),
            Seen::Overflow => {
                self.lost = true;
                self.rewatch = true;
                return;
            }
            Seen::Failed(e) => {
                tracing::info!("file watch error ({e}); walking instead");
                self.lost = true;
                return;
            }
        };
        let Ok(rel) = p.strip_prefix(&self.root) else {
            return;
        };
        if rel.as_os_str().is_empty()
            || rel.components().any(|c| c.as_os_str() == ".git")
            || is_marker(rel)
        {
            return;
        }
        if new_dir && p.symlink_metadata().is_ok_and(|m| m.is_dir()) && !(self.skip)(rel) {
            self.add_tree(&p);
        }
        // Rules of what is ignored changed: a directory left unwatched for them may count now.
        // Watch the tree again and walk once (what was written there unwatched is found).
        if rel.file_name().is_some_and(|n| n == ".gitignore") {
            self.lost = true;
            self.rewatch = true;
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

/// Whether `rel` is a source's marker file.
fn is_marker(rel: &Path) -> bool {
    rel.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(".watch-") && n.ends_with(".tmp"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

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
    fn a_renamed_directory_is_told_by_its_new_name_after() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("src/deep/inner")).unwrap();
        let mut w = watch(d.path());
        std::fs::rename(d.path().join("src/deep"), d.path().join("src/moved")).unwrap();
        assert_eq!(paths(w.take()), ["src/deep", "src/moved"]);
        std::fs::write(d.path().join("src/moved/inner/f"), "x").unwrap();
        std::fs::write(d.path().join("src/moved/g"), "x").unwrap();
        assert_eq!(paths(w.take()), ["src/moved/g", "src/moved/inner/f"]);
    }

    #[test]
    fn reading_files_is_no_change() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("src")).unwrap();
        std::fs::write(d.path().join("src/a"), "x").unwrap();
        let mut w = watch(d.path());
        assert_eq!(std::fs::read(d.path().join("src/a")).unwrap(), b"x");
        let _listing = std::fs::read_dir(d.path().join("src")).unwrap().count();
        assert_eq!(w.poll(), Vec::<PathBuf>::new());
        assert_eq!(paths(w.take()), Vec::<String>::new());
    }

    #[test]
    fn a_directory_no_longer_ignored_is_walked_once_then_watched() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("build/deep")).unwrap();
        std::fs::write(d.path().join(".gitignore"), "build/\n").unwrap();
        let ignored = |root: PathBuf| {
            move |rel: &Path| {
                rel.starts_with("build")
                    && std::fs::read_to_string(root.join(".gitignore"))
                        .is_ok_and(|t| t.contains("build/"))
            }
        };
        let mut w =
            TreeWatch::start(d.path(), d.path(), Box::new(ignored(d.path().into()))).unwrap();
        std::fs::write(d.path().join("build/deep/a"), "x").unwrap();
        assert_eq!(paths(w.take()), Vec::<String>::new());
        // Un-ignored, and written into at once: only a walk can tell what is there.
        std::fs::write(d.path().join(".gitignore"), "# nothing\n").unwrap();
        std::fs::write(d.path().join("build/deep/b"), "y").unwrap();
        assert_eq!(paths(w.take()), ["<unknown>"]);
        // Watched from now on.
        std::fs::write(d.path().join("build/deep/c"), "z").unwrap();
        assert_eq!(paths(w.take()), ["build/deep/c"]);
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
        std::fs::write(d.path().join("wiggum/g"), "x").unwrap();
        assert_eq!(paths(w.take()), ["f", "wiggum/g"]);
        #[cfg(not(target_os = "linux"))]
        assert!(
            t0.elapsed() < portable::MARKER_WAIT,
            "the marker was waited for in vain"
        );
        #[cfg(target_os = "linux")]
        let _ = t0;
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
