//! `fix_plan.md` parsing: Markdown task-list items outside code fences. Pure.

/// One checkbox item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// The item's text after the checkbox.
    pub text: String,
    /// Ticked (`- [x]`).
    pub done: bool,
    /// 1-based line number.
    pub line: usize,
}

/// The items of a plan, in order.
#[must_use]
pub fn items(plan: &str) -> Vec<Item> {
    let mut out = Vec::new();
    let mut fence: Option<&str> = None;
    for (i, raw) in plan.lines().enumerate() {
        let line = raw.trim_start();
        if let Some(f) = fence {
            if line.starts_with(f) {
                fence = None;
            }
            continue;
        }
        if line.starts_with("```") {
            fence = Some("```");
            continue;
        }
        if line.starts_with("~~~") {
            fence = Some("~~~");
            continue;
        }
        if let Some((done, text)) = checkbox(line) {
            out.push(Item {
                text: text.trim().to_string(),
                done,
                line: i + 1,
            });
        }
    }
    out
}

fn checkbox(line: &str) -> Option<(bool, &str)> {
    let rest = line
        .strip_prefix("- ")
        .or_else(|| line.strip_prefix("* "))
        .or_else(|| line.strip_prefix("+ "))
        .or_else(|| {
            let digits = line.find(|c: char| !c.is_ascii_digit())?;
            (digits > 0)
                .then(|| line[digits..].strip_prefix(". "))
                .flatten()
        })?;
    let rest = rest.trim_start();
    let (mark, tail) = (rest.get(..3)?, &rest[3..]);
    let done = match mark {
        "[ ]" => false,
        "[x]" | "[X]" => true,
        _ => return None,
    };
    if !(tail.is_empty() || tail.starts_with(' ') || tail.starts_with('\t')) {
        return None;
    }
    Some((done, tail))
}

/// Unchecked items left.
#[must_use]
pub fn remaining(plan: &str) -> usize {
    items(plan).iter().filter(|i| !i.done).count()
}

/// Whether the plan has any checkbox at all (if not, the planning phase runs).
#[must_use]
pub fn has_items(plan: &str) -> bool {
    !items(plan).is_empty()
}

/// Items ticked in `after` that were open in `before` (what an iteration claims to have done).
#[must_use]
pub fn newly_done(before: &str, after: &str) -> Vec<String> {
    let open: Vec<String> = items(before)
        .into_iter()
        .filter(|i| !i.done)
        .map(|i| i.text)
        .collect();
    items(after)
        .into_iter()
        .filter(|i| i.done && open.contains(&i.text))
        .map(|i| i.text)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = "# Plan\n\n## Incomplete\n- [ ] Add evidence links\n* [x] Add summary\n  - [ ] nested item\n1. [ ] numbered\n- [] not a box\n- [x]glued\n```\n- [ ] in a fence\n```\n- [X] Capital\n";

    #[test]
    fn parses_open_and_done_items_outside_fences() {
        let it = items(PLAN);
        let texts: Vec<_> = it.iter().map(|i| (i.text.as_str(), i.done)).collect();
        assert_eq!(
            texts,
            vec![
                ("Add evidence links", false),
                ("Add summary", true),
                ("nested item", false),
                ("numbered", false),
                ("Capital", true),
            ]
        );
        assert_eq!(it[0].line, 4);
        assert_eq!(remaining(PLAN), 3);
    }

    #[test]
    fn empty_and_itemless_plans() {
        assert!(!has_items("# Improvement Plan\n\nNothing yet.\n"));
        assert_eq!(remaining(""), 0);
        assert!(has_items("- [x] done\n"));
        assert_eq!(remaining("- [x] done\n"), 0);
    }

    #[test]
    fn newly_done_finds_ticked_items() {
        let before = "- [ ] a\n- [ ] b\n";
        let after = "- [x] a\n- [ ] b\n- [x] c\n";
        assert_eq!(newly_done(before, after), vec!["a".to_string()]);
    }
}
