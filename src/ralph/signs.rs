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

/// [`add`], or — when a sign with the same title is there already (a question answered again)
/// — that sign with its fix replaced, in place and under its number: one sign says one thing.
#[must_use]
pub fn set(agent_md: &str, what: &str, fix: &str) -> String {
    let title = first_line(what);
    let lines: Vec<&str> = agent_md.lines().collect();
    let Some(at) = lines.iter().position(|l| {
        l.strip_prefix("### Sign ")
            .and_then(|rest| rest.split_once(": "))
            .is_some_and(|(_, t)| t == title)
    }) else {
        return add(agent_md, what, fix);
    };
    let end = lines[at + 1..]
        .iter()
        .position(|l| l.starts_with("## ") || l.starts_with("### "))
        .map_or(lines.len(), |i| at + 1 + i);
    let mut out: Vec<String> = lines[..at].iter().map(|l| (*l).to_string()).collect();
    out.push(lines[at].to_string());
    out.push(format!("**Why**: {}", what.trim()));
    out.push(format!("**Fix**: {}", fix.trim()));
    if end < lines.len() {
        out.push(String::new());
    }
    out.extend(lines[end..].iter().map(|l| (*l).to_string()));
    let mut text = out.join("\n");
    text.push('\n');
    text
}

/// Whether `agent_md` holds a sign titled as `what` is.
#[must_use]
pub fn has(agent_md: &str, what: &str) -> bool {
    let title = first_line(what);
    agent_md.lines().any(|l| {
        l.strip_prefix("### Sign ")
            .and_then(|rest| rest.split_once(": "))
            .is_some_and(|(_, t)| t == title)
    })
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

    #[test]
    fn a_sign_set_again_is_replaced_in_place() {
        let one = set("# Conventions\n", "An agent asked: Update it?", "Yes.");
        let two = set(&one, "Rewrote a section", "Make surgical edits");
        let again = set(&two, "An agent asked: Update it?", "No, never.");
        assert_eq!(
            again,
            "# Conventions\n\n## Signs\n\n### Sign 1: An agent asked: Update it?\n**Why**: An agent asked: Update it?\n**Fix**: No, never.\n\n### Sign 2: Rewrote a section\n**Why**: Rewrote a section\n**Fix**: Make surgical edits\n"
        );
        assert_eq!(
            set(&again, "New", "x").matches("### Sign 3: New").count(),
            1
        );
    }
}
