//! The watch's events on Linux: inotify, read on the caller's thread. The kernel queues an
//! event before the call that made the change returns, so a queue read until empty holds every
//! change made before the read began: no marker, no thread. Only changes are asked for — never
//! opens or reads, which the harness and git make by the thousand each iteration.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};

use super::Seen;

/// What a watched directory tells: its entries made, removed, renamed, written or changed in
/// their metadata, and its own removal or renaming. Never through a link (a directory replaced
/// by one is its parent's change).
fn mask() -> AddWatchFlags {
    AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_DELETE
        | AddWatchFlags::IN_MODIFY
        | AddWatchFlags::IN_CLOSE_WRITE
        | AddWatchFlags::IN_ATTRIB
        | AddWatchFlags::IN_MOVED_FROM
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_DELETE_SELF
        | AddWatchFlags::IN_MOVE_SELF
        | AddWatchFlags::IN_ONLYDIR
        | AddWatchFlags::IN_DONT_FOLLOW
}

/// An inotify instance and the directory each of its watches stands for.
pub(super) struct Source {
    fd: Inotify,
    dirs: HashMap<WatchDescriptor, PathBuf>,
}

impl Source {
    /// A fresh instance (`marker_dir` is not needed here).
    pub(super) fn start(_marker_dir: &Path) -> std::io::Result<Source> {
        let fd = Inotify::init(InitFlags::IN_CLOEXEC | InitFlags::IN_NONBLOCK)?;
        Ok(Source {
            fd,
            dirs: HashMap::new(),
        })
    }

    /// Watch `dir` (itself, not what is under it). A directory watched already under another
    /// name (renamed) is known by the new one from now on.
    pub(super) fn watch(&mut self, dir: &Path) -> std::io::Result<()> {
        let wd = self.fd.add_watch(dir, mask())?;
        self.dirs.insert(wd, dir.to_path_buf());
        Ok(())
    }

    /// The events queued now, `max` at most; true when the queue was read empty.
    pub(super) fn read(&mut self, max: usize, out: &mut Vec<Seen>) -> bool {
        let mut read = 0;
        while read < max {
            match self.fd.read_events() {
                Ok(events) => {
                    read += events.len();
                    for ev in events {
                        self.fold(ev, out);
                    }
                }
                Err(Errno::EAGAIN) => return true,
                Err(Errno::EINTR) => {}
                Err(e) => {
                    out.push(Seen::Failed(format!("reading inotify: {e}")));
                    return false;
                }
            }
        }
        false
    }

    /// Every event of a change made before the call: the queue read empty (`max` at most).
    pub(super) fn settle(&mut self, max: usize, out: &mut Vec<Seen>) -> bool {
        self.read(max, out)
    }

    /// One kernel event as the watch needs it.
    fn fold(&mut self, ev: nix::sys::inotify::InotifyEvent, out: &mut Vec<Seen>) {
        if ev.mask.contains(AddWatchFlags::IN_Q_OVERFLOW) {
            out.push(Seen::Overflow);
            return;
        }
        if ev.mask.contains(AddWatchFlags::IN_IGNORED) {
            // The directory is gone (or unwatched): its removal came as its own event.
            self.dirs.remove(&ev.wd);
            return;
        }
        let Some(dir) = self.dirs.get(&ev.wd) else {
            return;
        };
        let path = ev
            .name
            .as_ref()
            .map_or_else(|| dir.clone(), |n| dir.join(n));
        let new_dir = ev.mask.contains(AddWatchFlags::IN_ISDIR)
            && ev
                .mask
                .intersects(AddWatchFlags::IN_CREATE | AddWatchFlags::IN_MOVED_TO);
        out.push(Seen::Changed { path, new_dir });
    }
}
