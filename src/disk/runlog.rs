//! `runs.jsonl`: append-only, one JSON object per iteration and per gate round. Reading tolerates
//! a torn last line (a crash mid-append).

use std::path::Path;

use serde::Serialize;

use super::layout::Layout;
pub use super::records::{GateRoundRecord, Outcome, RecordKind, RunRecord};
use crate::error::{Error, IoContext, Result};
use crate::sys::fsutil;

/// Append a record to a file.
pub fn append(path: &Path, rec: &impl Serialize) -> Result<()> {
    let line = serde_json::to_string(rec)
        .map_err(|e| Error::runtime(format!("serialise run record: {e}")))?;
    fsutil::append_line(path, &line)
}

/// Append a record to the loop's `runs.jsonl` and to the records' copy (which the agent
/// cannot reach, and which restores the other when an agent changed it).
pub fn record(layout: &Layout, rec: &impl Serialize) -> Result<()> {
    append(&layout.runs(), rec)?;
    if layout.runs_copy() != layout.runs() {
        fsutil::create_dir_all(layout.records())?;
        append(&layout.runs_copy(), rec)?;
    }
    Ok(())
}

/// Read every iteration record that parses; a torn or foreign line is skipped.
pub fn read(path: &Path) -> Result<Vec<RunRecord>> {
    let mut out = Vec::new();
    for_each(path, |r| out.push(r))?;
    Ok(out)
}

/// Stream the records that parse, one line at a time (a torn, foreign or non-UTF-8 line is
/// skipped); a missing file has none.
pub fn for_each(path: &Path, mut each: impl FnMut(RunRecord)) -> Result<()> {
    let f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).at(path, "read"),
    };
    crate::sys::lines::stream_lines(std::io::BufReader::new(f), 1024 * 1024, |l| {
        if let Ok(r) = serde_json::from_slice::<RunRecord>(l) {
            each(r);
        }
    })
    .at(path, "read")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disk::records::Ending;
    use chrono::Utc;

    fn rec(i: u32) -> RunRecord {
        RunRecord {
            record: RecordKind::Iteration,
            iteration: i,
            attempt: 1,
            started_at: Utc::now(),
            ended_at: Utc::now(),
            duration_ms: 5,
            agent_pid: Some(1),
            agent_exit: Some(Ending::Exited { code: 0 }),
            timed_out: false,
            cost_usd: None,
            tokens_in: None,
            tokens_out: None,
            files_changed: vec![],
            commit: None,
            quality: None,
            validation_failed: None,
            gate: None,
            promise_seen: false,
            premature_promise: None,
            agent: None,
            outcome: Outcome::Accepted,
            note: None,
            env_passed: vec![],
            protected_changed: vec![],
            validation: None,
            lines: None,
            since: None,
            left_out: vec![],
            question: None,
            what: None,
            best: None,
            original: None,
        }
    }

    #[test]
    fn a_torn_last_line_is_tolerated() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("runs.jsonl");
        append(&p, &rec(1)).unwrap();
        append(&p, &rec(2)).unwrap();
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        std::io::Write::write_all(&mut f, b"{\"record\":\"iteration\",\"itera").unwrap();
        let got = read(&p).unwrap();
        assert_eq!(
            got.iter().map(|r| r.iteration).collect::<Vec<_>>(),
            vec![1, 2]
        );
    }

    #[test]
    fn outcome_names_match_the_json() {
        for o in [
            Outcome::Accepted,
            Outcome::GateFailed,
            Outcome::Rejected,
            Outcome::NoChange,
            Outcome::Crashed,
            Outcome::Interrupted,
            Outcome::Planned,
            Outcome::Limited,
            Outcome::Asked,
        ] {
            assert_eq!(serde_json::to_value(o).unwrap(), o.as_str());
        }
    }

    #[test]
    fn agent_exit_serialises_as_tagged() {
        let s = serde_json::to_string(&rec(1)).unwrap();
        assert!(
            s.contains(r#""agent_exit":{"kind":"exited","code":0}"#),
            "{s}"
        );
        assert!(s.contains(r#""outcome":"accepted""#), "{s}");
    }
}
