//! `fix_plan.md` parsing: Markdown task-list items outside code fences; items under a heading
//! named Optional, Future, Nice to have or Later (configurable) are optional and never hold the
//! loop open. Pure.

pub use crate::config::OPTIONAL_SECTIONS;
use crate::quality::markdown::{Fence, fence_of, heading};

/// One checkbox item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// The item's text after the checkbox.
    pub text: String,
    /// Ticked (`- [x]`).
    pub done: bool,
    /// 1-based line number.
    pub line: usize,
    /// Under an optional section's heading.
    pub optional: bool,
}

/// Whether a heading's text names an optional section (`## Later (v2)`, `### Nice to have:`).
/// `names` are lowercase.
fn is_optional_heading(text: &str, names: &[String]) -> bool {
    if names.is_empty() {
        return false;
    }
    let t = text.trim().to_lowercase();
    names.iter().any(|n| {
        t.strip_prefix(n.as_str())
            .is_some_and(|rest| !rest.starts_with(|c: char| c.is_alphanumeric()))
    })
}

/// The items of a plan, in order, with the default optional sections.
#[must_use]
pub fn items(plan: &str) -> Vec<Item> {
    items_with(plan, &default_sections())
}

/// The items of a plan, in order; items under a heading named in `optional` are optional
/// (until a heading of the same or a higher level).
#[must_use]
pub fn items_with(plan: &str, optional: &[String]) -> Vec<Item> {
    let mut out = Vec::new();
    scan(plan, optional, |i, text| {
        out.push(Item {
            text: text.trim().to_string(),
            ..i
        });
        true
    });
    out
}

/// Call `f` with each item's raw text (after the checkbox, untrimmed), in order, while it
/// returns true; optional sections aside (every item counts). No allocation per item.
pub fn each_text<'a>(plan: &'a str, mut f: impl FnMut(&'a str) -> bool) {
    scan(plan, &[], |_, text| f(text));
}

/// Call `f` with each item (its `text` left empty) and its raw text, in order, while it returns
/// true. No allocation per item: the loop reads plans of thousands of items several times an
/// iteration.
fn scan<'a>(plan: &'a str, optional: &[String], mut f: impl FnMut(Item, &'a str) -> bool) {
    let names: Vec<String> = optional.iter().map(|n| n.to_lowercase()).collect();
    let mut fence: Option<Fence> = None;
    let mut optional_level: Option<usize> = None;
    for (i, raw) in plan.lines().enumerate() {
        let line = raw.trim_start();
        if let Some(open) = fence {
            if fence_of(raw).is_some_and(|f| f.closes(open, line)) {
                fence = None;
            }
            continue;
        }
        if let Some(f) = fence_of(raw) {
            fence = Some(f);
            continue;
        }
        if let Some((level, title)) = heading(raw) {
            if optional_level.is_some_and(|l| level <= l) {
                optional_level = None;
            }
            if optional_level.is_none() && is_optional_heading(title, &names) {
                optional_level = Some(level);
            }
            continue;
        }
        if let Some((done, text)) = checkbox(line) {
            let item = Item {
                text: String::new(),
                done,
                line: i + 1,
                optional: optional_level.is_some(),
            };
            if !f(item, text) {
                return;
            }
        }
    }
}

fn default_sections() -> Vec<String> {
    OPTIONAL_SECTIONS.iter().map(|s| (*s).to_string()).collect()
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

/// Unchecked required items left (optional ones never hold the loop open).
#[must_use]
pub fn remaining(plan: &str) -> usize {
    open_counts(plan, &default_sections()).0
}

/// Unchecked items left: (required, optional), with these optional sections.
#[must_use]
pub fn open_counts(plan: &str, optional: &[String]) -> (usize, usize) {
    let (mut required, mut opt) = (0, 0);
    scan(plan, optional, |i, _| {
        if !i.done {
            if i.optional {
                opt += 1;
            } else {
                required += 1;
            }
        }
        true
    });
    (required, opt)
}

/// Whether the plan has any checkbox at all (if not, the planning phase runs).
#[must_use]
pub fn has_items(plan: &str) -> bool {
    let mut any = false;
    scan(plan, &[], |_, _| {
        any = true;
        false
    });
    any
}

/// Items ticked in `after` that were open in `before` (what an iteration claims to have done).
#[must_use]
pub fn newly_done(before: &str, after: &str) -> Vec<String> {
    if before == after {
        return Vec::new();
    }
    let mut open = std::collections::HashSet::new();
    scan(before, &[], |i, text| {
        if !i.done {
            open.insert(text.trim());
        }
        true
    });
    let mut out = Vec::new();
    scan(after, &[], |i, text| {
        if i.done && open.contains(text.trim()) {
            out.push(text.trim().to_string());
        }
        true
    });
    out
}

/// `plan` with the ticked items whose text is in `texts` open again (`- [x]` → `- [ ]`), every
/// other line as it was.
#[must_use]
pub fn reopen(plan: &str, texts: &[String]) -> String {
    let mut lines = std::collections::BTreeSet::new();
    scan(plan, &[], |i, text| {
        if i.done && texts.iter().any(|t| t == text.trim()) {
            lines.insert(i.line);
        }
        true
    });
    let mut out = String::with_capacity(plan.len());
    for (i, line) in plan.split_inclusive('\n').enumerate() {
        if lines.contains(&(i + 1)) {
            out.push_str(&line.replacen("[x]", "[ ]", 1).replacen("[X]", "[ ]", 1));
        } else {
            out.push_str(line);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn reopened_items_are_open_again_and_nothing_else_moves() {
        let before = "# Plan\n- [ ] add\n- [x] old\n";
        let after = "# Plan\n- [x] add\n- [x] old\n- [ ] found\n";
        let claimed = super::newly_done(before, after);
        assert_eq!(claimed, ["add"]);
        assert_eq!(
            super::reopen(after, &claimed),
            "# Plan\n- [ ] add\n- [x] old\n- [ ] found\n"
        );
    }

    use super::*;

    #[test]
    fn items_under_optional_headings_do_not_hold_the_loop_open() {
        let plan = "# Plan\n- [x] done\n- [ ] needed\n\n## Nice to have:\n- [ ] polish\n### Docs\n- [ ] guide\n\n## Later (v2)\n- [ ] port\n\n## Laterality\n- [ ] real work\n\n# Next\n- [ ] also needed\n";
        let names: Vec<String> = OPTIONAL_SECTIONS.iter().map(|s| (*s).to_string()).collect();
        assert_eq!(open_counts(plan, &names), (3, 3));
        assert_eq!(remaining(plan), 3);
        let all = items(plan);
        let optional: Vec<&str> = all
            .iter()
            .filter(|i| i.optional)
            .map(|i| i.text.as_str())
            .collect();
        assert_eq!(optional, ["polish", "guide", "port"]);
        assert_eq!(
            open_counts("## Stretch\n- [ ] x\n", &["stretch".into()]),
            (0, 1)
        );
    }

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
    fn fences_close_as_commonmark_closes_them() {
        // A four-backtick fence shows a three-backtick one inside it; a tilde fence is not
        // closed by backticks; a closing fence may be longer; indented by four spaces or with
        // text after it, a run of backticks closes nothing.
        let plan = "- [ ] real one\n\
                    ````md\n```\n- [ ] example inside\n```\n````\n\
                    ~~~\n```\n- [ ] still inside\n~~~~~\n\
                    ```\n    ```\n``` not a close\n- [ ] inside too\n```\n\
                    - [ ] real two\n\
                    ``inline`` - [ ] is text, not a fence\n";
        let texts: Vec<String> = items(plan).into_iter().map(|i| i.text).collect();
        assert_eq!(texts, ["real one", "real two"]);
        assert_eq!(remaining(plan), 2);
    }

    #[test]
    fn an_empty_heading_ends_an_optional_section_and_seven_hashes_are_no_heading() {
        let plan =
            "## Later\n- [ ] port\n####### not a heading\n- [ ] still later\n##\n- [ ] needed\n";
        assert_eq!(open_counts(plan, &default_sections()), (1, 2));
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
        assert!(newly_done(after, after).is_empty());
    }
}
