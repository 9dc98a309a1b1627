//! The subjects of the loop's commits, made and parsed side by side: recovery reads the
//! iteration number back from HEAD's subject, so the two must always agree.

/// The planning commit's subject.
pub const PLANNING: &str = "Wiggum planning: fix_plan.md";

const ITERATION: &str = "Wiggum iteration ";

/// The most of an agent's summary a subject carries, in characters.
const SUMMARY_CAP: usize = 200;

/// `Wiggum iteration N: <summary>` (the summary on one line). The summary comes from the agent's
/// `review.md`: NUL and other control bytes are dropped (git refuses a message with a NUL, and
/// an escape sequence would reach the terminal of whoever reads the log), and it is cut at
/// 200 characters (`SUMMARY_CAP`).
#[must_use]
pub fn iteration(n: u32, summary: &str) -> String {
    let one_line: String = summary
        .lines()
        .next()
        .unwrap_or_default()
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    let one_line = one_line.trim();
    let cut: String = one_line.chars().take(SUMMARY_CAP).collect();
    let ellipsis = if cut.len() < one_line.len() {
        "…"
    } else {
        ""
    };
    format!("{ITERATION}{n}: {}{ellipsis}", cut.trim_end())
}

/// The iteration number of a message made by [`iteration`].
#[must_use]
pub fn parse_iteration(message: &str) -> Option<u32> {
    message
        .strip_prefix(ITERATION)?
        .split(':')
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agents_summary_loses_its_control_bytes_and_its_length() {
        assert_eq!(
            iteration(2, "fixed\0 the \x1b[31mbug\x07"),
            "Wiggum iteration 2: fixed the [31mbug"
        );
        let long = "a".repeat(5000);
        let s = iteration(1, &long);
        assert_eq!(s, format!("Wiggum iteration 1: {}…", "a".repeat(200)));
        assert_eq!(parse_iteration(&s), Some(1));
        assert_eq!(iteration(3, "\0\0"), "Wiggum iteration 3: ");
    }

    #[test]
    fn subjects_round_trip() {
        for (n, summary) in [(1, "Added evidence"), (42, "a: b: c"), (7, "two\nlines")] {
            let s = iteration(n, summary);
            assert_eq!(parse_iteration(&s), Some(n), "{s}");
            assert!(!s.contains('\n'));
        }
        assert_eq!(
            iteration(3, "Added links"),
            "Wiggum iteration 3: Added links"
        );
        assert_eq!(parse_iteration(PLANNING), None);
        assert_eq!(parse_iteration("Wiggum iteration x: y"), None);
        assert_eq!(parse_iteration("fix: Wiggum iteration 2: y"), None);
    }
}
