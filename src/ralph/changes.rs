//! What changed in the work tree between two moments of the loop, without walking it: a file
//! watch over the repository (started once per loop, `.git` and ignored directories left out)
//! tells which paths were touched, and the last snapshot is brought up to date for those only.
//! The snapshot after an iteration, updated for the loop's own commit, is the next iteration's
//! "before". Whenever the watch cannot vouch for what it saw, the snapshot is a walk.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::disk::layout::Layout;
use crate::error::Result;
use crate::git::{Pending, Repo, Snapshot};
use crate::sys::watch::{Changes, Shared, TreeWatch};

/// The loop's change tracker.
#[derive(Debug, Default)]
pub struct Tracker {
    watch: Option<Shared>,
    last: Option<Snapshot>,
    /// The artifact dir relative to the work tree's root.
    scope: PathBuf,
}

impl Tracker {
    /// Watch the repository of `repo` (from now on: a snapshot taken after this sees every
    /// change made after it).
    #[must_use]
    pub fn start(repo: &Repo, layout: &Layout) -> Tracker {
        let root = repo.workdir().to_path_buf();
        let scope = layout
            .root()
            .canonicalize()
            .ok()
            .and_then(|a| a.strip_prefix(&root).ok().map(Path::to_path_buf))
            .unwrap_or_default();
        // Ignored directories (build output, dependencies) are not watched — unless the index
        // tracks something inside one (a force-added file), whose changes still count.
        let ignored = git2::Repository::open(&root).ok();
        let work_root = root.clone();
        let skip = Box::new(move |rel: &Path| {
            // No rule file on the way that libgit2 would wait on for ever.
            crate::git::rules::clear_odd_above(&work_root, [rel]);
            crate::git::rules::clear_odd_in(&work_root.join(rel));
            ignored.as_ref().is_some_and(|r| {
                r.is_path_ignored(rel).unwrap_or(false)
                    && r.index()
                        .is_ok_and(|i| i.find_prefix(rel.join("")).is_err())
            })
        });
        let watch =
            TreeWatch::start(&root, &layout.wiggum(), skip).map(|w| Arc::new(Mutex::new(w)));
        Tracker {
            watch,
            last: None,
            scope,
        }
    }

    /// The watch, shared with the liveness check of agent runs (activity).
    #[must_use]
    pub fn shared(&self) -> Option<Shared> {
        self.watch.clone()
    }

    /// What is dirty now.
    pub fn snapshot(&mut self, repo: &Repo) -> Result<Snapshot> {
        let touched = self.touched();
        tracing::debug!("touched since the last snapshot: {touched:?}");
        let snap = match (&self.last, touched) {
            (Some(prev), touched) => repo.refresh(prev, touched.as_ref())?,
            (None, _) => repo.snapshot()?,
        };
        self.last = Some(snap.clone());
        Ok(snap)
    }

    /// The loop made the commit `pending`, on top of the last snapshot unless another writer
    /// moved HEAD meanwhile (then the next snapshot walks).
    pub fn committed(&mut self, repo: &Repo, pending: &Pending) {
        self.last = match self.last.take() {
            Some(last) => repo.after_commit(&last, pending).ok().flatten(),
            None => None,
        };
    }

    /// Touched paths relative to the artifact dir; `None` when unknown.
    fn touched(&self) -> Option<BTreeSet<PathBuf>> {
        let watch = self.watch.as_ref()?;
        let changes = watch.lock().ok()?.take();
        match changes {
            Changes::Unknown => None,
            Changes::Paths(p) => in_scope(&self.scope, p),
        }
    }
}

/// Paths under `scope` made relative to it; `None` when one of them is `scope` itself or holds
/// it (the artifact dir moved or was replaced: only a walk can tell).
fn in_scope(scope: &Path, paths: BTreeSet<PathBuf>) -> Option<BTreeSet<PathBuf>> {
    let mut out = BTreeSet::new();
    for p in paths {
        if scope.starts_with(&p) {
            return None;
        }
        if let Ok(rel) = p.strip_prefix(scope) {
            out.insert(rel.to_path_buf());
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(v: &[&str]) -> BTreeSet<PathBuf> {
        v.iter().map(PathBuf::from).collect()
    }

    #[test]
    fn a_tracked_file_in_an_ignored_directory_is_still_seen() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        let run = |args: &[&str]| {
            let ok = std::process::Command::new("git")
                .args(["-c", "user.name=u", "-c", "user.email=u@x"])
                .args(args)
                .current_dir(&root)
                .status()
                .unwrap();
            assert!(ok.success(), "git {args:?}");
        };
        std::fs::create_dir_all(root.join("build")).unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::create_dir_all(root.join("wiggum")).unwrap();
        std::fs::write(root.join(".gitignore"), "build/\ntarget/\n").unwrap();
        std::fs::write(root.join("build/keep.txt"), "kept\n").unwrap();
        run(&["init", "-q"]);
        run(&["add", ".gitignore"]);
        run(&["add", "-f", "build/keep.txt"]);
        run(&["commit", "-qm", "base"]);
        let repo = Repo::open(&root).unwrap();
        let layout = Layout::for_loop(&root.join("home"), &root);
        let mut t = Tracker::start(&repo, &layout);
        let before = t.snapshot(&repo).unwrap();
        std::fs::write(root.join("build/keep.txt"), "changed\n").unwrap();
        std::fs::write(root.join("target/out.bin"), "x").unwrap();
        let after = t.snapshot(&repo).unwrap();
        assert_eq!(
            after.changed_paths(&before),
            [PathBuf::from("build/keep.txt")]
        );
    }

    #[test]
    fn touched_paths_are_taken_relative_to_the_artifact_dir() {
        // (artifact dir in the repository, touched, what the refresh is asked about)
        type Case<'a> = (&'a str, &'a [&'a str], Option<&'a [&'a str]>);
        let cases: [Case<'_>; 5] = [
            ("", &["a.md", "src/b.rs"], Some(&["a.md", "src/b.rs"])),
            (
                "docs/art",
                &["docs/art/a.md", "src/b.rs", "docs/other"],
                Some(&["a.md"]),
            ),
            ("docs/art", &["docs/art"], None),
            ("docs/art", &["docs"], None),
            ("docs/art", &[], Some(&[])),
        ];
        for (scope, touched, want) in cases {
            let got = in_scope(Path::new(scope), set(touched));
            assert_eq!(got, want.map(set), "{scope} {touched:?}");
        }
    }
}
