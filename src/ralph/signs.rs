//! Signs: lessons the person watching the loop adds to `AGENT.md` after a failure. Pure.

/// `agent_md` with a new sign appended under `## Signs` (created if missing), numbered after the
/// existing ones.
#[must_use]
pub fn add(agent_md: &str, what: &str, fix: &str) -> String {
    let n = agent_md
        .lines()
        .filter(|l| l.starts_with("### Sign "))
        .count()
        + 1;
    let sign = format!(
        "### Sign {n}: {}\n**Why**: {}\n**Fix**: {}\n",
        first_line(what),
        what.trim(),
        fix.trim()
    );
    let mut out = agent_md.trim_end().to_string();
    if !agent_md
        .lines()
        .any(|l| l.trim() == "## Signs" || l.starts_with("## Signs "))
    {
        out.push_str("\n\n## Signs");
    }
    out.push_str("\n\n");
    out.push_str(&sign);
    out
}

fn first_line(s: &str) -> &str {
    s.trim().lines().next().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signs_are_numbered_and_go_under_signs() {
        let one = add(
            "# Conventions\n",
            "Broken links added",
            "Test each link first",
        );
        assert!(one.contains("## Signs\n\n### Sign 1: Broken links added\n**Why**: Broken links added\n**Fix**: Test each link first\n"), "{one}");
        let two = add(&one, "Rewrote a section", "Make surgical edits");
        assert!(two.contains("### Sign 2: Rewrote a section"));
        assert_eq!(two.matches("## Signs").count(), 1);
    }
}
