//! Reading text line by line, whatever its size: a reader streamed with lines cut at a cap
//! (bounded memory whatever the input holds), and a long file read in pieces on several cores,
//! cut at line starts.

use std::fs::{self, File};
use std::io::{BufRead, Read, Seek, SeekFrom};
use std::path::Path;

use crate::error::{Error, IoContext, Result};

/// Call `each` with every line of `r` (without its newline). A line longer than `max_line` is
/// cut there (the rest of it is skipped), so memory stays bounded whatever the input holds.
pub fn stream_lines(
    mut r: impl std::io::BufRead,
    max_line: usize,
    mut each: impl FnMut(&[u8]),
) -> std::io::Result<()> {
    let mut line = Vec::new();
    loop {
        let buf = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            if !line.is_empty() {
                each(&line);
            }
            return Ok(());
        }
        let (chunk, ends_line) = match memchr::memchr(b'\n', buf) {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        let used = ends_line.unwrap_or(buf.len());
        if ends_line.is_some() && line.is_empty() {
            // A whole line in the buffer: handed over where it lies, not copied.
            each(&chunk[..chunk.len().min(max_line)]);
        } else {
            let room = max_line.saturating_sub(line.len());
            line.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if ends_line.is_some() {
                each(&line);
                line.clear();
            }
        }
        r.consume(used);
    }
}

/// [`stream_lines`] over the file at `path`, cut at line starts into up to `parts` pieces of
/// about equal size that are read at once, one thread each; `init` makes each piece's state and
/// `each` feeds it a line. Returns the states in file order (none when the file is missing). A
/// file under 32 MiB is read in one piece.
pub fn stream_lines_parallel<T: Send>(
    path: &Path,
    max_line: usize,
    parts: usize,
    init: impl Fn() -> T + Sync,
    each: impl Fn(&mut T, &[u8]) + Sync,
) -> Result<Vec<T>> {
    stream_pieces(path, max_line, parts, 32 << 20, init, each)
}

/// [`stream_lines_parallel`] with the size under which a file is read in one piece.
fn stream_pieces<T: Send>(
    path: &Path,
    max_line: usize,
    parts: usize,
    whole_below: u64,
    init: impl Fn() -> T + Sync,
    each: impl Fn(&mut T, &[u8]) + Sync,
) -> Result<Vec<T>> {
    let size = match fs::metadata(path) {
        Ok(m) => m.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).at(path, "read"),
    };
    let parts = if size < whole_below {
        1
    } else {
        parts.max(1) as u64
    };
    let mut bounds = vec![0];
    for k in 1..parts {
        let at = line_start_after(path, size * k / parts)?;
        if at > *bounds.last().unwrap_or(&0) && at < size {
            bounds.push(at);
        }
    }
    bounds.push(size);
    let (init, each) = (&init, &each);
    std::thread::scope(|scope| {
        let pieces: Vec<_> = bounds
            .windows(2)
            .map(|w| {
                let (start, end) = (w[0], w[1]);
                scope.spawn(move || -> Result<T> {
                    let mut f = File::open(path).at(path, "read")?;
                    f.seek(SeekFrom::Start(start)).at(path, "seek in")?;
                    let r = std::io::BufReader::with_capacity(1 << 18, f.take(end - start));
                    let mut state = init();
                    stream_lines(r, max_line, |l| each(&mut state, l)).at(path, "read")?;
                    Ok(state)
                })
            })
            .collect();
        pieces
            .into_iter()
            .map(|p| {
                p.join()
                    .unwrap_or_else(|_| Err(Error::runtime("a reading thread panicked")))
            })
            .collect()
    })
}

/// The offset of the first line that starts at or after `at` (the file's size when none does).
fn line_start_after(path: &Path, at: u64) -> Result<u64> {
    if at == 0 {
        return Ok(0);
    }
    let mut f = File::open(path).at(path, "read")?;
    f.seek(SeekFrom::Start(at - 1)).at(path, "seek in")?;
    let skipped = std::io::BufReader::with_capacity(1 << 16, f)
        .skip_until(b'\n')
        .at(path, "read")?;
    Ok(at - 1 + skipped as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_are_cut_and_the_rest_still_read() {
        let mut input = vec![b'x'; 10_000];
        input.extend_from_slice(b"\nshort\nlast");
        let mut got = Vec::new();
        stream_lines(&input[..], 100, |l| got.push(l.to_vec())).unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].len(), 100);
        assert_eq!(got[1], b"short");
        assert_eq!(got[2], b"last");
    }

    #[test]
    fn lines_across_buffer_boundaries_come_whole_and_cut_at_the_cap() {
        let input = b"ab\n\ncdefghij\nk\nlmnopqrstuvw\nxy";
        for cap in [1, 2, 3, 5, 64] {
            let mut got = Vec::new();
            let r = std::io::BufReader::with_capacity(cap, &input[..]);
            stream_lines(r, 8, |l| got.push(String::from_utf8_lossy(l).into_owned())).unwrap();
            assert_eq!(
                got,
                ["ab", "", "cdefghij", "k", "lmnopqrs", "xy"],
                "buffer of {cap}"
            );
        }
    }

    #[test]
    fn a_file_read_in_pieces_yields_every_line_once_in_order() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("runs.jsonl");
        // Lines of many lengths, so the cuts fall everywhere: mid-line, on a newline, at a start.
        let lines: Vec<String> = (0..500)
            .map(|i| "x".repeat(i % 37) + &i.to_string())
            .collect();
        fs::write(&p, lines.join("\n") + "\n").unwrap();
        for parts in 1..=7 {
            let got = stream_pieces(&p, 1 << 20, parts, 0, Vec::new, |v: &mut Vec<String>, l| {
                v.push(String::from_utf8_lossy(l).into_owned());
            })
            .unwrap();
            assert_eq!(got.len(), parts, "pieces");
            assert_eq!(got.concat(), lines, "{parts} pieces");
        }
        let none = stream_pieces(&d.path().join("none"), 1, 2, 0, || 0, |_, _| {}).unwrap();
        assert!(none.is_empty());
    }
}
