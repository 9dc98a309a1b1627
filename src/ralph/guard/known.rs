//! What a protected path held, read again only when its identity moved. A hook or a git config
//! is the same file from one run to the next; reading every one before and after every run
//! (the hooks directory alone is a dozen scripts) costs more than asking the kernel for each
//! one's identity. The identity includes the change time, which no process can set (utimensat
//! sets the others and stamps the change time with the clock; setting the clock takes a
//! capability no run has), so any write, rename over or replacement moves it. The kernel stamps
//! with a clock that ticks every few milliseconds, so a change within the tick of a look could
//! leave every field as the look saw it: what was read is trusted only when the change time
//! was older than the look by more than a tick, as git does with its index ("racy" entries).

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use super::held::Held;

/// Longer than any tick of the kernel's file timestamps (a jiffy: 1 to 10 ms).
const TICK: Duration = Duration::from_millis(50);

/// The most of one file kept known (hooks and configs are a few KB; the plan is read anyway).
const KEEP: usize = 64 << 10;

/// A path's identity as the kernel keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    dev: u64,
    ino: u64,
    size: u64,
    mode: u32,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Identity {
    fn of(m: &std::fs::Metadata) -> Identity {
        Identity {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mode: m.mode(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        }
    }

    /// The change time, as a point in time (`None`: before the epoch, or unrepresentable).
    fn changed(&self) -> Option<SystemTime> {
        let secs = u64::try_from(self.ctime.0).ok()?;
        let nanos = u32::try_from(self.ctime.1).ok()?;
        SystemTime::UNIX_EPOCH.checked_add(Duration::new(secs, nanos))
    }
}

/// Whether what was read of a path that had identity `then`, looked at `seen`, still holds now
/// that it has `now`: the same identity, last changed more than a tick before the look. Pure.
#[must_use]
pub fn still_holds(then: &Identity, seen: SystemTime, now: &Identity) -> bool {
    then == now
        && then
            .changed()
            .and_then(|c| c.checked_add(TICK))
            .is_some_and(|c| c < seen)
}

/// What a path held, with its identity and when it was looked at.
type Known = (Identity, SystemTime, Held);

/// What each path held.
static KNOWN: Mutex<Option<HashMap<PathBuf, Known>>> = Mutex::new(None);

/// What `p` holds now: what was read of it before when its identity has not moved since, else
/// read (and kept, when small).
#[must_use]
pub fn held(p: &Path) -> Held {
    held_at(p, SystemTime::now())
}

/// [`held`], looked at `seen` (taken before the read: a change during it moves the identity
/// from the one kept).
fn held_at(p: &Path, seen: SystemTime) -> Held {
    let Ok(meta) = std::fs::symlink_metadata(p) else {
        return Held::of(p);
    };
    let now = Identity::of(&meta);
    if let Ok(known) = KNOWN.lock()
        && let Some((then, seen, held)) = known.as_ref().and_then(|k| k.get(p))
        && still_holds(then, *seen, &now)
    {
        return held.clone();
    }
    let held = Held::of(p);
    let small = match &held {
        Held::Bytes(b, _) => b.len() <= KEEP,
        Held::Link(_) | Held::Dir => true,
        _ => false,
    };
    if small && let Ok(mut known) = KNOWN.lock() {
        known
            .get_or_insert_with(HashMap::new)
            .insert(p.to_path_buf(), (now, seen, held.clone()));
    }
    held
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(size: u64, ctime: i64) -> Identity {
        Identity {
            dev: 1,
            ino: 2,
            size,
            mode: 0o100_644,
            mtime: (100, 0),
            ctime: (ctime, 0),
        }
    }

    #[test]
    fn what_was_read_holds_only_for_the_same_identity_changed_well_before_the_look() {
        let at = |secs: u64, ms: u64| {
            SystemTime::UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_millis(ms)
        };
        let old = id(10, 100);
        for (then, seen, now, holds) in [
            // Changed long before the look, unchanged since: trusted.
            (old, at(200, 0), old, true),
            // Any field moved: read again.
            (old, at(200, 0), id(11, 100), false),
            (old, at(200, 0), id(10, 101), false),
            // Changed in the tick of the look: a change right after it could look the same.
            (old, at(100, 10), old, false),
            (old, at(100, 50), old, false),
            (old, at(100, 51), old, true),
            // A change time before the epoch is never trusted.
            (id(10, -5), at(200, 0), id(10, -5), false),
        ] {
            assert_eq!(
                still_holds(&then, seen, &now),
                holds,
                "{then:?} {seen:?} {now:?}"
            );
        }
    }

    #[test]
    fn a_file_rewritten_is_read_again_however_soon() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("pre-commit");
        std::fs::write(&p, "#!/bin/sh\nexit 0\n").unwrap();
        // Looked at as if long after its last change: what is read is kept.
        let later = SystemTime::now() + Duration::from_secs(3600);
        let first = held_at(&p, later);
        assert!(matches!(&first, Held::Bytes(b, _) if b.ends_with(b"exit 0\n")));
        assert_eq!(held_at(&p, later), first);
        // The same size, the same second: the identity still moves.
        std::fs::write(&p, "#!/bin/sh\nexit 1\n").unwrap();
        assert!(matches!(held_at(&p, later), Held::Bytes(b, _) if b.ends_with(b"exit 1\n")));
        // Replaced by a link, then gone.
        std::fs::remove_file(&p).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", &p).unwrap();
        assert_eq!(held_at(&p, later), Held::Link("/etc/passwd".into()));
        std::fs::remove_file(&p).unwrap();
        assert_eq!(held_at(&p, later), Held::Absent);
    }
}
