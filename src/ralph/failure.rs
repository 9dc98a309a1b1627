//! Why an agent run failed, in the CLI's own words: its exit code and the last error line it
//! printed, or the limit that ended it — not the symptom the loop sees afterwards ("planning
//! wrote no checkbox items"). Pure.

use crate::disk::records::Ending;

/// The longest quoted line.
const MAX_QUOTE: usize = 200;

/// What ended a failed run, for its progress line, its record's note and `status`: `None` for a
/// run that ended well or was stopped by a person.
#[must_use]
pub fn describe(ending: Ending, tail: &str) -> Option<String> {
    let said = quote(tail);
    let with = |head: String| match &said {
        Some(line) => format!("{head}: {line}"),
        None => head,
    };
    Some(match ending {
        Ending::Exited { code: 0 } | Ending::Stopped | Ending::Finished => return None,
        Ending::Exited { code } => match said {
            Some(line) => format!("exit {code}: {line}"),
            None => format!("exit {code}, nothing printed"),
        },
        Ending::Signaled { signal } => with(format!("killed by signal {signal}")),
        Ending::TimedOut => with(
            "timed out: killed at the wall limit ([safety] max_time_per_iteration); its last words"
                .into(),
        ),
        Ending::Idle => {
            "idle: nothing printed and no file changed for [safety] max_idle_secs; killed".into()
        }
        Ending::MemoryLimit => "its processes crossed [safety] max_memory_mb; killed".into(),
        Ending::OutputLimit => "it printed past [safety] max_log_mb; killed".into(),
    })
}

/// Whether the run was ended by a limit rather than by itself (said "timed out", not
/// "crashed").
#[must_use]
pub fn label(ending: Option<Ending>) -> Option<&'static str> {
    match ending? {
        Ending::TimedOut => Some("timed out"),
        Ending::Idle => Some("idle"),
        _ => None,
    }
}

/// The line that says what went wrong: the last one naming an error, else the last one
/// printed; control sequences removed (`sys::term`: colours, titles, anything a terminal would
/// act on), cut to a line's length.
fn quote(tail: &str) -> Option<String> {
    let lines: Vec<String> = tail
        .lines()
        .map(crate::sys::term::printable)
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    let errorish = |l: &&String| {
        let low = l.to_lowercase();
        [
            "error",
            "fatal",
            "failed",
            "exception",
            "panic",
            "denied",
            "cannot",
            "refus",
        ]
        .iter()
        .any(|w| low.contains(w))
    };
    let line = lines
        .iter()
        .rev()
        .take(40)
        .find(errorish)
        .or_else(|| lines.last())?;
    Some(if line.chars().count() > MAX_QUOTE {
        format!("{}…", line.chars().take(MAX_QUOTE).collect::<String>())
    } else {
        line.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clis_own_last_error_and_exit_code() {
        let exited = |code| Ending::Exited { code };
        let cases: [(Ending, &str, Option<&str>); 9] = [
            (
                exited(1),
                "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons\n",
                Some(
                    "exit 1: --dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons",
                ),
            ),
            (
                exited(55),
                "Loaded cached credentials.\n\x1b[31mGemini CLI is not running in a trusted directory. To proceed, trust this folder.\x1b[0m\n",
                Some(
                    "exit 55: Gemini CLI is not running in a trusted directory. To proceed, trust this folder.",
                ),
            ),
            (
                exited(1),
                "Error: failed to initialize in-process app-server client: Permission denied (os error 13)\n\n",
                Some(
                    "exit 1: Error: failed to initialize in-process app-server client: Permission denied (os error 13)",
                ),
            ),
            // The error line wins over what was printed after it.
            (
                exited(2),
                "Error: EACCES: permission denied, mkdir '/root/.claude/session-env'\n    at mkdirSync (node:fs:1391:26)\n",
                Some("exit 2: Error: EACCES: permission denied, mkdir '/root/.claude/session-env'"),
            ),
            (exited(3), "", Some("exit 3, nothing printed")),
            (
                Ending::TimedOut,
                "Reconnecting... 5/5\n",
                Some(
                    "timed out: killed at the wall limit ([safety] max_time_per_iteration); its last words: Reconnecting... 5/5",
                ),
            ),
            (
                Ending::Signaled { signal: 9 },
                "",
                Some("killed by signal 9"),
            ),
            (exited(0), "Error: but it exited 0\n", None),
            (Ending::Stopped, "", None),
        ];
        for (ending, tail, want) in cases {
            assert_eq!(
                describe(ending, tail).as_deref(),
                want,
                "{ending:?} {tail:?}"
            );
        }
        let long = "x".repeat(500);
        assert_eq!(
            describe(exited(1), &long).unwrap().chars().count(),
            8 + MAX_QUOTE + 1
        );
    }

    #[test]
    fn a_limit_is_named_not_called_a_crash() {
        assert_eq!(label(Some(Ending::TimedOut)), Some("timed out"));
        assert_eq!(label(Some(Ending::Idle)), Some("idle"));
        assert_eq!(label(Some(Ending::Exited { code: 1 })), None);
        assert_eq!(label(None), None);
    }
}
