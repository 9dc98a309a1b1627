//! What the protected files held before a run, kept in the loop's records while it runs: a
//! supervisor killed outright (the OOM killer, `kill -9`) never checks them after that run, so
//! the next `start` does, before anything else — a hook or a `core.fsmonitor` planted just before
//! the crash is put back like one planted in a run the supervisor saw end.
//!
//! `protected.json` lists each path and what it held; small files' bytes live beside it in
//! `protected/<md5>`, written once per content (after the first run nothing new is written).
//! A run checked leaves the list empty (`[]`), not removed: the list is saved through its spare
//! (`sys::spare`), so a run makes and frees no file here.

use std::path::{Path, PathBuf};

use md5::{Digest, Md5};
use serde::{Deserialize, Serialize};

use super::held::{Held, put_back};
use crate::error::Result;
use crate::sys::fsutil;

/// One protected path as it was.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Entry {
    /// For people (`.git/config`, `hooks/pre-commit`).
    pub name: String,
    /// The path.
    pub path: PathBuf,
    /// What it held.
    pub was: Kept,
}

/// What a path held, as kept on disk.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Kept {
    /// Nothing.
    Absent,
    /// A small file: its content's md5 (the bytes are in the store) and mode.
    File {
        /// md5 of the content, hex.
        md5: String,
        /// Permission bits.
        mode: u32,
    },
    /// A symbolic link.
    Link {
        /// Where it pointed.
        target: PathBuf,
    },
    /// Anything else (a directory, a large file): seen, not put back from here.
    Other,
}

fn hex(bytes: &[u8]) -> String {
    Md5::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Keep `entries` (name, path, what it held) under `dir`.
pub fn save(dir: &Path, entries: &[(String, PathBuf, Held)]) -> Result<()> {
    let store = dir.join("protected");
    fsutil::create_dir_all(&store)?;
    let mut out = Vec::with_capacity(entries.len());
    for (name, path, held) in entries {
        let was = match held {
            Held::Absent => Kept::Absent,
            Held::Bytes(bytes, mode) => {
                let md5 = hex(bytes);
                fsutil::write_new(&store.join(&md5), bytes)?;
                Kept::File { md5, mode: *mode }
            }
            Held::Link(target) => Kept::Link {
                target: target.clone(),
            },
            _ => Kept::Other,
        };
        out.push(Entry {
            name: name.clone(),
            path: path.clone(),
            was,
        });
    }
    let json = serde_json::to_vec(&out)
        .map_err(|e| crate::error::Error::runtime(format!("record the protected files: {e}")))?;
    crate::sys::spare::replace(&dir.join(LIST), &json, "atomic-after-temp-write")
}

/// The list's name in the records.
const LIST: &str = "protected.json";

/// The run was checked: nothing to do at the next start (the list is left empty).
pub fn clear(dir: &Path) -> Result<()> {
    let list = dir.join(LIST);
    if std::fs::symlink_metadata(&list).is_err() {
        return Ok(());
    }
    crate::sys::spare::replace(&list, b"[]", "atomic-after-temp-write")
}

/// The loop is done: the list's spare goes, and the list with it when it is empty.
pub fn discard(dir: &Path) {
    let list = dir.join(LIST);
    crate::sys::spare::discard(&list);
    if fsutil::read_opt(&list)
        .ok()
        .flatten()
        .is_some_and(|t| t.trim() == "[]")
    {
        let _gone = fsutil::remove_file_opt(&list);
    }
}

/// After a crash: put back what changed since the kept list was written; returns the names.
pub fn restore_after_crash(dir: &Path) -> Result<Vec<String>> {
    let Some(text) = fsutil::read_opt(&dir.join(LIST))? else {
        return Ok(Vec::new());
    };
    let entries: Vec<Entry> = serde_json::from_str(&text).unwrap_or_default();
    let store = dir.join("protected");
    let mut changed = Vec::new();
    for e in entries {
        let now = Held::of(&e.path);
        let then = match &e.was {
            Kept::Absent => Held::Absent,
            Kept::File { md5, mode } => match std::fs::read(store.join(md5)) {
                Ok(bytes) if hex(&bytes) == *md5 => Held::Bytes(bytes, *mode),
                _ => continue,
            },
            Kept::Link { target } => Held::Link(target.clone()),
            Kept::Other => continue,
        };
        if now != then {
            put_back(&e.path, &then)?;
            changed.push(e.name);
        }
    }
    clear(dir)?;
    Ok(changed)
}
