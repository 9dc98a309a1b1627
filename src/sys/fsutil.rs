//! Small filesystem helpers with path-carrying errors: atomic replace, append, bounded reads.
//!
//! Files the supervisor creates are private to the user (0600, directories 0700, narrowed further
//! by the umask); a file it replaces keeps its mode. Reads are bounded and decode lossily: users'
//! files and agents' output may hold any bytes and any amount of them.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use rustix::fs::OFlags;

use crate::error::{Error, IoContext, Result};
use crate::sys::beneath;

/// Replace `path` atomically: write a temp file in the same directory and rename it over `path`.
/// A crash of the process leaves either the old or the new content, never half. Like git's own
/// index, ref and object writes (git does not fsync by default), nothing is fsync'd: the loop's
/// files can be no more durable than the commits they describe, and an fsync per write was most
/// of the loop's cost per iteration (docs/performance.md).
pub fn atomic_write(path: &Path, bytes: &[u8]) -> Result<()> {
    atomic_write_at(path, bytes, "atomic-after-temp-write")
}

/// [`atomic_write`] with its own failpoint name (tests crash between the temp write and the
/// rename of one kind of file).
pub fn atomic_write_at(path: &Path, bytes: &[u8], failpoint: &str) -> Result<()> {
    if beneath::atomic_write(path, bytes, || crate::sys::failpoint::hit(failpoint))?.is_some() {
        return Ok(());
    }
    let dir = match path.parent() {
        // A bare file name lives in the current directory.
        Some(d) if d.as_os_str().is_empty() => Path::new("."),
        Some(d) => d,
        None => {
            return Err(Error::input(format!(
                "{} has no parent directory",
                path.display()
            )));
        }
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(bare)
        .at(dir, "create a temp file in")?;
    // The file the user knows is named, not the temp file.
    tmp.as_file_mut().write_all(bytes).at(path, "write")?;
    // A replaced file keeps its mode; a new one stays 0600 (tempfile's).
    if let Ok(old) = fs::metadata(path) {
        let mode = old.permissions().mode() & 0o7777;
        fs::set_permissions(tmp.path(), fs::Permissions::from_mode(mode))
            .at(tmp.path(), "set the mode of")?;
    }
    crate::sys::failpoint::hit(failpoint)?;
    tmp.persist(path)
        .map_err(|e| e.error)
        .at(path, "rename a temp file over")?;
    Ok(())
}

/// tempfile's error without the ` at path "…"` it appends to the text (the caller names the
/// path the user knows).
fn bare(e: std::io::Error) -> std::io::Error {
    if e.raw_os_error().is_some() {
        return e;
    }
    let text = e.to_string();
    match text.split_once(" at path ") {
        Some((what, _)) => std::io::Error::new(e.kind(), what.to_string()),
        None => e,
    }
}

/// Append one line (a newline is added) to `path`, creating it if needed, in one write (readers
/// never see half a line of a record under 4 KiB; `O_APPEND` keeps concurrent writers whole).
pub fn append_line(path: &Path, line: &str) -> Result<()> {
    let mut f = open_append(path)?;
    let mut buf = String::with_capacity(line.len() + 1);
    buf.push_str(line);
    buf.push('\n');
    f.write_all(buf.as_bytes()).at(path, "append to")
}

/// The most the supervisor reads of one text file (an artifact, a plan, a settings file, a state
/// file); past it the read is an error naming the file.
pub const TEXT_CAP: u64 = 16 * 1024 * 1024;

/// The most the supervisor reads of one answer from an evaluator, a model or a revision
/// producer; a longer answer is an error (the gate records ERROR).
pub const ANSWER_CAP: u64 = 4 * 1024 * 1024;

/// Read a text file (lossily decoded, at most [`TEXT_CAP`] bytes), naming it on failure.
pub fn read(path: &Path) -> Result<String> {
    read_capped(path, TEXT_CAP)
}

/// [`read`] for a file that may not exist.
pub fn read_opt(path: &Path) -> Result<Option<String>> {
    match read(path) {
        Ok(s) => Ok(Some(s)),
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Read at most `cap` bytes of a file, decoded lossily; a longer file is an error naming it.
pub fn read_capped(path: &Path, cap: u64) -> Result<String> {
    // Most files read here are small (a state, a registry entry, a plan): the first
    // `FIRST_READ` bytes are read without asking the file's size (`list` would pay that stat for
    // every loop); a file that fills them is sized then, so the rest is one read, not a run of
    // growing ones.
    const FIRST_READ: u64 = 8 * 1024;
    // Non-blocking: a FIFO an agent put in a file's place (`mkfifo fix_plan.md`) reads as empty
    // instead of blocking the supervisor in `open` for good (signals included).
    let f = open_read(path).at(path, "read")?;
    let mut buf = Vec::with_capacity(usize::try_from(FIRST_READ).unwrap_or(0));
    (&f).take(FIRST_READ.min(cap + 1))
        .read_to_end(&mut buf)
        .at(path, "read")?;
    if buf.len() as u64 == FIRST_READ && cap >= FIRST_READ {
        let size = f.metadata().map_or(0, |m| m.len()).min(cap);
        let rest = usize::try_from(size.saturating_sub(FIRST_READ)).unwrap_or(0);
        buf.reserve(rest.saturating_add(1));
        (&f).take(cap + 1 - FIRST_READ)
            .read_to_end(&mut buf)
            .at(path, "read")?;
    }
    if buf.len() as u64 > cap {
        return Err(Error::TooLarge {
            path: path.to_path_buf(),
            cap,
        });
    }
    Ok(match String::from_utf8(buf) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// The last `max` bytes of a file (lossily decoded, starting at a line boundary when one is in
/// the window); empty when the file does not exist.
pub fn read_tail(path: &Path, max: u64) -> Result<String> {
    let mut f = match open_read(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(String::new()),
        Err(e) => return Err(e).at(path, "read"),
    };
    let len = f.metadata().at(path, "stat")?.len();
    let start = len.saturating_sub(max);
    f.seek(SeekFrom::Start(start)).at(path, "seek in")?;
    let mut buf = Vec::new();
    f.take(max).read_to_end(&mut buf).at(path, "read")?;
    let from = if start > 0 {
        buf.iter().position(|b| *b == b'\n').map_or(0, |i| i + 1)
    } else {
        0
    };
    Ok(String::from_utf8_lossy(&buf[from..]).into_owned())
}

/// `mkdir -p` (new directories 0700), naming the directory on failure.
pub fn create_dir_all(path: &Path) -> Result<()> {
    if beneath::create_dir_all(path).at(path, "create directory")? {
        return Ok(());
    }
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .at(path, "create directory")
}

/// Open a log file for appending, creating it 0600.
pub fn open_append(path: &Path) -> Result<File> {
    let flags = OFlags::WRONLY | OFlags::APPEND | OFlags::CREATE;
    match beneath::open(path, flags, 0o600) {
        Ok(Some(f)) => return Ok(f),
        Ok(None) => {}
        // A link where the supervisor's own log or record file belongs is the agent's: removed,
        // and the file made anew (the guard restores what it held after the run).
        Err(_) if beneath::is_link(path) => {
            tracing::warn!(
                "{}: a symbolic link in the loop's file's place; removed",
                path.display()
            );
            beneath::remove(path).at(path, "remove a link in place of")?;
            if let Some(f) = beneath::open(path, flags, 0o600).at(path, "open for append")? {
                return Ok(f);
            }
        }
        Err(e) => return Err(e).at(path, "open for append"),
    }
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
        .at(path, "open for append")
}

/// Remove the temp files an interrupted [`atomic_write`] left in `dir` (`.<name>.tmp`).
pub fn remove_stale_temps(dir: &Path) -> Result<usize> {
    let Ok(rd) = fs::read_dir(dir) else {
        return Ok(0);
    };
    let mut n = 0;
    for e in rd.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.')
            && name.ends_with(".tmp")
            && e.file_type().is_ok_and(|t| t.is_file())
        {
            remove_file_opt(&e.path())?;
            n += 1;
        }
    }
    Ok(n)
}

/// Open a file for reading, non-blocking (a FIFO an agent put in a file's place reads as empty
/// instead of blocking the supervisor in `open` for good), following no link under a guarded
/// root (`sys::beneath`).
pub fn open_read(path: &Path) -> std::io::Result<File> {
    let flags = OFlags::RDONLY | OFlags::NONBLOCK;
    if let Some(f) = beneath::open(path, flags, 0)? {
        return Ok(f);
    }
    OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)
}

/// Copy `from` over `to` (streamed; `to` is replaced through a temp file beside it, so a link in
/// its place is replaced, never written through).
pub fn copy_file(from: &Path, to: &Path) -> Result<()> {
    let mut src = open_read(from).at(from, "read")?;
    let dir = to.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.copy.tmp",
        to.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    ));
    remove_file_opt(&tmp)?;
    let mut dst = if let Some(f) =
        beneath::open(&tmp, OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL, 0o600)
            .at(&tmp, "create")?
    {
        f
    } else {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .at(&tmp, "create")?
    };
    std::io::copy(&mut src, &mut dst).at(to, "copy into")?;
    drop(dst);
    rename(&tmp, to)
}

/// Rename `from` to `to`, following no link under a guarded root on the way to either.
pub fn rename(from: &Path, to: &Path) -> Result<()> {
    match (
        beneath::parent(from).at(from, "rename")?,
        beneath::parent(to).at(to, "rename to")?,
    ) {
        (Some(a), Some(b)) => rustix::fs::renameat(&a.dir, &a.name, &b.dir, &b.name)
            .map_err(std::io::Error::from)
            .at(from, "rename"),
        _ => fs::rename(from, to).at(from, "rename"),
    }
}

/// Create `path` (0600, it must not exist, a link in its place is not followed) holding `bytes`:
/// for a file in a directory just made, which nobody reads before it is whole.
pub fn create_with(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .at(path, "create")?;
    f.write_all(bytes).at(path, "write")
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

/// Whether `path` is a plain file holding exactly `bytes`: read no further than their length,
/// never blocking (a FIFO in its place is no such file), following no link under a guarded root.
#[must_use]
pub fn holds_exactly(path: &Path, bytes: &[u8]) -> bool {
    let Ok(f) = open_read(path) else {
        return false;
    };
    let same_size = f
        .metadata()
        .is_ok_and(|m| m.is_file() && m.len() == bytes.len() as u64);
    let mut held = Vec::with_capacity(bytes.len());
    same_size
        && f.take(bytes.len() as u64 + 1)
            .read_to_end(&mut held)
            .is_ok()
        && held == bytes
}

/// Whether two files hold the same bytes (streamed, bounded memory).
pub fn same_content(a: &Path, b: &Path) -> Result<bool> {
    let (Ok(fa), Ok(fb)) = (open_read(a), open_read(b)) else {
        return Ok(false);
    };
    if fa.metadata().at(a, "stat")?.len() != fb.metadata().at(b, "stat")?.len() {
        return Ok(false);
    }
    let (mut ra, mut rb) = (std::io::BufReader::new(fa), std::io::BufReader::new(fb));
    let (mut ba, mut bb) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
    loop {
        let n = ra.read(&mut ba).at(a, "read")?;
        if n == 0 {
            return Ok(true);
        }
        rb.read_exact(&mut bb[..n]).at(b, "read")?;
        if ba[..n] != bb[..n] {
            return Ok(false);
        }
    }
}

/// Remove a directory tree (or a file or link in its place) if it exists.
pub fn remove_dir_all_opt(path: &Path) -> Result<()> {
    if beneath::remove(path).at(path, "remove directory")? {
        return Ok(());
    }
    // A file or a link in the directory's place goes as such (nothing followed).
    if std::fs::symlink_metadata(path).is_ok_and(|m| !m.is_dir()) {
        return remove_file_opt(path);
    }
    // However deep a tree an agent made (std's removal recurses once per level).
    beneath::remove_anywhere(path).at(path, "remove directory")
}

/// Remove a file if it exists.
pub fn remove_file_opt(path: &Path) -> Result<()> {
    if beneath::remove(path).at(path, "remove")? {
        return Ok(());
    }
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
    fn a_failed_replace_names_the_file_once_and_leaves_no_temp() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("state.json");
        std::fs::create_dir_all(target.join("inside")).unwrap();
        let err = atomic_write(&target, b"{}").unwrap_err().to_string();
        assert_eq!(
            err.matches(&*target.display().to_string()).count(),
            1,
            "{err}"
        );
        assert!(!err.contains("at path"), "{err}");
        let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().flatten().collect();
        assert_eq!(left.len(), 1, "{left:?}");
        // A directory that is gone: named once too.
        let gone = d.path().join("gone");
        let err = atomic_write(&gone.join("x"), b"{}")
            .unwrap_err()
            .to_string();
        assert_eq!(err.matches("gone").count(), 1, "{err}");
    }

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
    fn reads_are_lossy_and_bounded() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("out.log");
        fs::write(&p, b"ok \xff\xfe bytes\n").unwrap();
        assert_eq!(read(&p).unwrap(), "ok \u{fffd}\u{fffd} bytes\n");
        let e = read_capped(&p, 4).unwrap_err();
        assert!(
            e.to_string().contains("out.log") && e.to_string().contains("4 bytes"),
            "{e}"
        );
        assert_eq!(read_opt(&d.path().join("none")).unwrap(), None);
    }

    #[test]
    fn files_around_the_first_read_are_read_whole_and_capped_exactly() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        // Sizes about the first read (8 KiB) and about the cap, each with a last byte that
        // differs, so a short or doubled read shows.
        for (len, cap, fits) in [
            (8191, 1 << 20, true),
            (8192, 1 << 20, true),
            (8193, 1 << 20, true),
            (100_000, 1 << 20, true),
            (8192, 8192, true),
            (8193, 8192, false),
            (8192, 8191, false),
            (100_000, 99_999, false),
            (100_000, 100_000, true),
            (5, 4, false),
        ] {
            let mut bytes = vec![b'a'; len];
            bytes[len - 1] = b'z';
            fs::write(&p, &bytes).unwrap();
            match read_capped(&p, cap) {
                Ok(text) => {
                    assert!(fits, "{len} over {cap} was read");
                    assert_eq!(text.as_bytes(), &bytes[..], "{len} bytes, cap {cap}");
                }
                Err(e) => assert!(!fits && e.to_string().contains("bytes"), "{len}/{cap}: {e}"),
            }
        }
    }

    #[test]
    fn a_tail_starts_at_a_line() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("log");
        fs::write(&p, "first line\nsecond\nthird\n").unwrap();
        assert_eq!(read_tail(&p, 10).unwrap(), "third\n");
        assert_eq!(read_tail(&p, 1000).unwrap(), "first line\nsecond\nthird\n");
        assert_eq!(read_tail(&d.path().join("none"), 10).unwrap(), "");
    }

    #[test]
    fn new_files_and_dirs_are_private_and_replaced_files_keep_their_mode() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("a/b");
        create_dir_all(&dir).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        let new = dir.join("state.json");
        atomic_write(&new, b"{}").unwrap();
        assert_eq!(mode(&new), 0o600);
        append_line(&dir.join("runs.jsonl"), "{}").unwrap();
        assert_eq!(mode(&dir.join("runs.jsonl")), 0o600);
        let users = dir.join("notes.md");
        fs::write(&users, "x").unwrap();
        fs::set_permissions(&users, fs::Permissions::from_mode(0o644)).unwrap();
        atomic_write(&users, b"y").unwrap();
        assert_eq!(mode(&users), 0o644);
    }

    #[test]
    fn a_fifo_in_a_files_place_reads_as_empty_instead_of_blocking() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("fix_plan.md");
        nix::unistd::mkfifo(&p, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _sent = tx.send(read_opt(&p).map_err(|e| e.to_string()));
        });
        let got = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("reading a FIFO blocked");
        assert_eq!(got, Ok(Some(String::new())));
    }

    #[test]
    fn stale_temps_are_removed() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join(".state.json.abc.tmp"), "x").unwrap();
        fs::write(d.path().join("fix_plan.md.tmp"), "agent's").unwrap();
        assert_eq!(remove_stale_temps(d.path()).unwrap(), 1);
        assert!(d.path().join("fix_plan.md.tmp").exists());
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
