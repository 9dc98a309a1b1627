//! Small filesystem helpers with path-carrying errors: atomic replace, append, read.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::Path;

use crate::error::{Error, IoContext, Result};

/// Replace `path` atomically: write a temp file in the same directory, fsync it, rename it over
/// `path`, fsync the directory. A crash leaves either the old or the new content, never half.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> Result<()> {
    atomic_write_at(path, bytes, "atomic-after-temp-write")
}

/// [`atomic_write`] with its own failpoint name (tests crash between the temp write and the
/// rename of one kind of file).
pub fn atomic_write_at(path: &Path, bytes: &[u8], failpoint: &str) -> Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| Error::input(format!("{} has no parent directory", path.display())))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".")
        .suffix(".tmp")
        .tempfile_in(dir)
        .at(dir, "create a temp file in")?;
    tmp.write_all(bytes).at(tmp.path(), "write")?;
    tmp.as_file().sync_all().at(tmp.path(), "fsync")?;
    crate::failpoint::hit(failpoint)?;
    tmp.persist(path)
        .map_err(|e| e.error)
        .at(path, "rename a temp file over")?;
    sync_dir(dir)
}

/// fsync a directory so a rename in it is durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .at(dir, "fsync directory")
}

/// Append one line (a newline is added) to `path`, creating it if needed, and fsync it.
pub fn append_line(path: &Path, line: &str) -> Result<()> {
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .at(path, "open for append")?;
    let mut buf = String::with_capacity(line.len() + 1);
    buf.push_str(line);
    buf.push('\n');
    f.write_all(buf.as_bytes()).at(path, "append to")?;
    f.sync_data().at(path, "fsync")
}

/// Read a UTF-8 file, naming it on failure.
pub fn read(path: &Path) -> Result<String> {
    fs::read_to_string(path).at(path, "read")
}

/// Read a file if it exists.
pub fn read_opt(path: &Path) -> Result<Option<String>> {
    match fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).at(path, "read"),
    }
}

/// `mkdir -p`, naming the directory on failure.
pub fn create_dir_all(path: &Path) -> Result<()> {
    fs::create_dir_all(path).at(path, "create directory")
}

/// Write a file only if it does not exist yet (the loop's memory is never overwritten).
/// Returns whether it was written.
pub fn write_new(path: &Path, bytes: &[u8]) -> Result<bool> {
    if path.exists() {
        return Ok(false);
    }
    atomic_write(path, bytes)?;
    Ok(true)
}

/// Remove a directory tree if it exists.
pub fn remove_dir_all_opt(path: &Path) -> Result<()> {
    match fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).at(path, "remove directory"),
    }
}

/// Remove a file if it exists.
pub fn remove_file_opt(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).at(path, "remove"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.json");
        atomic_write(&p, b"one").unwrap();
        atomic_write(&p, b"two").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "two");
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn write_new_keeps_existing() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("fix_plan.md");
        fs::write(&p, "mine").unwrap();
        assert!(!write_new(&p, b"template").unwrap());
        assert_eq!(fs::read_to_string(&p).unwrap(), "mine");
    }

    #[test]
    fn append_line_appends() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("runs.jsonl");
        append_line(&p, "{}").unwrap();
        append_line(&p, "{\"a\":1}").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "{}\n{\"a\":1}\n");
    }
}
