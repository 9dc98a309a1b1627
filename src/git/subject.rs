//! The subjects of the loop's commits, made and parsed side by side: recovery reads the
//! iteration number back from HEAD's subject, so the two must always agree.

/// The planning commit's subject.
pub const PLANNING: &str = "Wiggum planning: fix_plan.md";

const ITERATION: &str = "Wiggum iteration ";

/// `Wiggum iteration N: <summary>` (the summary on one line).
#[must_use]
pub fn iteration(n: u32, summary: &str) -> String {
    let one_line = summary.lines().next().unwrap_or_default().trim();
    format!("{ITERATION}{n}: {one_line}")
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
