//! Topic → artifact path, in `$STUDIO_AGENTS_HOME/loops/<topic>.toml`, so `stop`, `status` and
//! `watch` work from any directory.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::sys::fsutil;

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    artifact_path: PathBuf,
}

/// Refuse topics that are not plain names (they become file names).
pub fn check_topic(topic: &str) -> Result<()> {
    if topic.len() > 100 {
        return Err(Error::input(format!(
            "topic `{}…`: too long ({} characters; at most 100)",
            topic.chars().take(20).collect::<String>(),
            topic.chars().count()
        )));
    }
    let ok = !topic.is_empty()
        && topic.len() <= 100
        && !topic.starts_with('.')
        && topic
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(Error::input(format!(
            "topic `{topic}`: use letters, digits, '-', '_' and '.', not starting with '.'"
        )))
    }
}

/// Refuse an artifact directory whose path is not UTF-8: the registry, the settings and the
/// state name it in TOML and JSON, which hold text only.
pub fn check_path(flag: &str, path: &Path) -> Result<()> {
    if path.to_str().is_some() {
        return Ok(());
    }
    Err(Error::input(format!(
        "{flag} {}: the path is not valid UTF-8, and the loop's records (TOML and JSON text) could not name it; rename the directory",
        path.display()
    )))
}

fn entry_path(home: &Path, topic: &str) -> PathBuf {
    home.join("loops").join(format!("{topic}.toml"))
}

/// Where a topic's loop lives, if registered.
pub fn lookup(home: &Path, topic: &str) -> Result<Option<PathBuf>> {
    check_topic(topic)?;
    let path = entry_path(home, topic);
    let Some(text) = fsutil::read_opt(&path)? else {
        return Ok(None);
    };
    let e: Entry = toml::from_str(&text)
        .map_err(|e| Error::input(format!("{}: {}", path.display(), e.message())))?;
    Ok(Some(e.artifact_path))
}

/// A registered topic's path, or exit 2 naming the topic.
pub fn require(home: &Path, topic: &str) -> Result<PathBuf> {
    lookup(home, topic)?.ok_or_else(|| {
        Error::input(format!(
            "unknown topic `{topic}` (no {}; see `studio-agents wiggum list`)",
            entry_path(home, topic).display()
        ))
    })
}

/// Refuse a topic already pointing elsewhere while that directory still holds a loop, so two
/// loops never share a name (read only: `start` asks before it writes anything).
pub fn check_free(home: &Path, topic: &str, artifact: &Path) -> Result<()> {
    if let Some(existing) = lookup(home, topic)?
        && existing != artifact
        && existing.join("wiggum").is_dir()
    {
        return Err(Error::input(format!(
            "topic `{topic}` is already registered for {}; pick another topic, or `studio-agents wiggum forget {topic}` first",
            existing.display(),
        )));
    }
    Ok(())
}

/// Register a topic ([`check_free`] first).
pub fn register(home: &Path, topic: &str, artifact: &Path) -> Result<()> {
    check_free(home, topic, artifact)?;
    let dir = home.join("loops");
    fsutil::create_dir_all(&dir)?;
    let text = toml::to_string(&Entry {
        artifact_path: artifact.to_path_buf(),
    })
    .map_err(|e| Error::runtime(format!("serialise registry entry: {e}")))?;
    fsutil::atomic_write(&entry_path(home, topic), text.as_bytes())
}

/// Forget a topic (nothing else is touched).
pub fn unregister(home: &Path, topic: &str) -> Result<()> {
    check_topic(topic)?;
    fsutil::remove_file_opt(&entry_path(home, topic))
}

/// Every registered topic with its path, sorted by topic.
pub fn all(home: &Path) -> Result<Vec<(String, PathBuf)>> {
    let dir = home.join("loops");
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if let Some(topic) = name.strip_suffix(".toml")
            && let Ok(Some(p)) = lookup(home, topic)
        {
            out.push((topic.to_string(), p));
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_lookup_and_list() {
        let h = tempfile::tempdir().unwrap();
        let a = tempfile::tempdir().unwrap();
        register(h.path(), "t1", a.path()).unwrap();
        assert_eq!(lookup(h.path(), "t1").unwrap().unwrap(), a.path());
        assert_eq!(all(h.path()).unwrap().len(), 1);
        assert_eq!(require(h.path(), "nope").unwrap_err().exit_code(), 2);
    }

    #[test]
    fn a_live_topic_is_not_stolen() {
        let h = tempfile::tempdir().unwrap();
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        std::fs::create_dir(a.path().join("wiggum")).unwrap();
        register(h.path(), "t", a.path()).unwrap();
        assert_eq!(
            register(h.path(), "t", b.path()).unwrap_err().exit_code(),
            2
        );
    }

    #[test]
    fn a_path_that_is_not_utf8_is_refused_naming_the_flag() {
        use std::os::unix::ffi::OsStrExt;
        let bad = Path::new(std::ffi::OsStr::from_bytes(b"/tmp/art\xff"));
        let e = check_path("--artifact-path", bad).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().starts_with("--artifact-path /tmp/art"), "{e}");
        check_path("--artifact-path", Path::new("/tmp/ärt")).unwrap();
    }

    #[test]
    fn bad_topics_are_refused() {
        for t in ["", "../x", ".hidden", "a/b", "a b"] {
            assert!(check_topic(t).is_err(), "{t}");
        }
        check_topic("research-topic_2026.01").unwrap();
    }
}
