//! Validation, the backpressure of a loop: the commands `[validation] commands` (or
//! `start --validate`) name, run in the repository after every iteration. Their output is read
//! as it is streamed (`parse`): which tests fail, and an excerpt for the next agent's prompt.
//! A code loop judges an iteration against the tree before it (`compare`), and proposes the
//! project's own test command when none is set (`detect`).

pub mod compare;
pub mod detect;
pub mod junit;
pub mod parse;

use std::fs::File;
use std::io::{BufReader, Seek, SeekFrom};
use std::path::Path;
use std::time::Duration;

pub use compare::{CommandResult, Judgement, Results};

use tokio::sync::watch;

use crate::agent::process::{self, StopLevel};
use crate::error::{IoContext, Result};
use crate::sys::fsutil;

/// Longest line of a validation log that is read (the rest of it is skipped).
const MAX_LINE: usize = 64 * 1024;

/// Where and how the validation commands run.
#[derive(Debug, Clone, Copy)]
pub struct Setting<'a> {
    /// The commands, in order.
    pub commands: &'a [String],
    /// The harness's settings (the sandbox they run in).
    pub safety: &'a crate::config::Safety,
    /// The artifact directory.
    pub root: &'a Path,
    /// The top of its work tree, where they run.
    pub workdir: &'a Path,
    /// The wall limit of one command.
    pub limit: Duration,
    /// JUnit XML reports the commands write (relative to `workdir`).
    pub junit: &'a [String],
}

/// Run every validation command once, in the repository, each with its time limit, appending
/// their output to `log`; each command's output is read as it lies in the log, never whole.
pub async fn run(
    s: Setting<'_>,
    stops: &mut watch::Receiver<StopLevel>,
    log: &Path,
) -> Result<Results> {
    let mut results = Results::default();
    for cmd in s.commands {
        let (job, tmp) = crate::agent::launch::validation_job(
            s.safety,
            s.root,
            s.workdir,
            cmd,
            log.to_path_buf(),
            s.limit,
        )?;
        fsutil::append_line(log, &format!("$ {cmd}"))?;
        let from = std::fs::metadata(log).map_or(0, |m| m.len());
        let started = std::time::SystemTime::now();
        let out = process::run(&job, stops, |_| true).await;
        fsutil::remove_dir_all_opt(&tmp)?;
        let out = out?;
        let reader = read_from(log, from)?;
        let tests = reports(s.workdir, s.junit, started).or_else(|| reader.tests());
        // A command that exits 0 while its own output names failing tests is red.
        let named_failures = tests.as_ref().is_some_and(|t| t.failing() > 0);
        let ok = out.ending.success() && !named_failures;
        let ending = if out.ending.success() && named_failures {
            "exited with code 0, but its output names failing tests".to_string()
        } else {
            out.ending.to_string()
        };
        results.commands.push(CommandResult {
            command: cmd.clone(),
            ok,
            ending,
            tests,
            excerpt: if ok {
                String::new()
            } else {
                reader.excerpt_text()
            },
        });
    }
    Ok(results)
}

/// The largest JUnit report read.
const REPORT_CAP: u64 = 16 << 20;

/// The tests of the JUnit reports written since `started` (none: `None`).
fn reports(
    workdir: &Path,
    junit: &[String],
    started: std::time::SystemTime,
) -> Option<parse::Tests> {
    let mut found: Option<parse::Tests> = None;
    for rel in junit {
        let path = workdir.join(rel);
        let fresh = std::fs::metadata(&path)
            .ok()
            .filter(|m| m.is_file() && m.len() <= REPORT_CAP)
            .and_then(|m| m.modified().ok())
            .is_some_and(|at| at >= started);
        let Some(t) = fresh
            .then(|| fsutil::read_capped(&path, REPORT_CAP).ok())
            .flatten()
            .and_then(|xml| junit::read(&xml))
        else {
            continue;
        };
        let all = found.get_or_insert_with(parse::Tests::default);
        all.failed.extend(t.failed);
        all.passed.extend(t.passed);
        all.failures = Some(all.failures.unwrap_or(0) + t.failures.unwrap_or(0));
        all.ran = Some(all.ran.unwrap_or(0) + t.ran.unwrap_or(0));
    }
    found
}

/// Stream `log` from byte `from` through a runner-output reader.
fn read_from(log: &Path, from: u64) -> Result<parse::Reader> {
    let mut reader = parse::Reader::default();
    let Some(mut f) = File::open(log)
        .map(Some)
        .or_else(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Ok(None)
            } else {
                Err(e)
            }
        })
        .at(log, "open the validation log")?
    else {
        return Ok(reader);
    };
    f.seek(SeekFrom::Start(from))
        .at(log, "seek in the validation log")?;
    crate::sys::lines::stream_lines(BufReader::new(f), MAX_LINE, |line| {
        reader.line(&String::from_utf8_lossy(line));
    })
    .at(log, "read the validation log")?;
    Ok(reader)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_is_read_from_where_the_command_began() {
        let d = tempfile::tempdir().unwrap();
        let log = d.path().join("v.log");
        std::fs::write(&log, "$ a\nFAIL: old (t.old)\n").unwrap();
        let from = std::fs::metadata(&log).unwrap().len();
        std::fs::write(
            &log,
            b"$ a\nFAIL: old (t.old)\nFAIL: new (t.new)\n\xff\xfe bytes\nFAILED (failures=1)\n",
        )
        .unwrap();
        let r = read_from(&log, from).unwrap();
        let t = r.tests().unwrap();
        assert_eq!(t.failed.into_iter().collect::<Vec<_>>(), ["t.new"]);
        assert!(r.excerpt_text().starts_with("FAIL: new (t.new)"));
        assert!(
            read_from(&d.path().join("none"), 0)
                .unwrap()
                .tests()
                .is_none()
        );
    }
}
