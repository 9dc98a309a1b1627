//! Text preparation for the evaluator, pure: strip chain-of-thought, and compress long outputs
//! to a character budget while keeping every heading (never a blind cut mid-section).

use std::sync::LazyLock;

use regex::Regex;

use crate::quality::markdown;

static THINK: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?is)<(think|thinking|reasoning|scratchpad)>.*?</(think|thinking|reasoning|scratchpad)>",
    )
    .ok()
});
static OPEN_THINK: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?is)^\s*<(think|thinking|reasoning)>.*$").ok());

/// Remove `<think>…</think>` (and `thinking`, `reasoning`, `scratchpad`) blocks; an unclosed
/// leading block (a model cut off while thinking) is dropped whole.
#[must_use]
pub fn strip_thinking(text: &str) -> String {
    if !may_hold_tag(text) {
        return text.to_string();
    }
    let Some(re) = THINK.as_ref() else {
        return text.to_string();
    };
    // Text without a thinking block passes byte for byte (its final newline included).
    let out = if re.is_match(text) {
        re.replace_all(text, "").trim().to_string()
    } else {
        text.to_string()
    };
    match OPEN_THINK.as_ref() {
        Some(open) if open.is_match(&out) => String::new(),
        _ => out,
    }
}

/// Whether `text` could hold a thinking tag: a `<` followed by the first letter of a tag's name in
/// any form the regexes' case-insensitive match accepts (`ſ` folds to `s`). Most documents and
/// answers hold none, and then the regexes are never compiled: the regex engine's code and
/// tables stay out of a running loop's memory.
fn may_hold_tag(text: &str) -> bool {
    text.match_indices('<').any(|(i, _)| {
        matches!(
            text[i + 1..].chars().next(),
            Some('t' | 'T' | 'r' | 'R' | 's' | 'S' | 'ſ')
        )
    })
}

/// Take at most `n` characters of `s`, ending at a line or sentence boundary when one is near.
fn head_chars(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let cut: String = s.chars().take(n).collect();
    let boundary = cut
        .rfind('\n')
        .or_else(|| cut.rfind(". ").map(|i| i + 1))
        .filter(|i| *i >= n / 2)
        .unwrap_or(cut.len());
    format!("{} …", cut[..boundary].trim_end())
}

/// Fit `text` in `limit` characters. Short texts pass unchanged. Longer ones keep every heading
/// line, in order, and give each section's body an equal share of what is left.
#[must_use]
pub fn compress(text: &str, limit: usize) -> String {
    if text.chars().count() <= limit {
        return text.to_string();
    }
    let sections = markdown::sections(text);
    let heading_chars: usize = sections
        .iter()
        .map(|s| s.heading_line.chars().count() + 1)
        .sum();
    if heading_chars >= limit {
        // Headings alone overflow: keep as many headings as fit.
        let mut out = String::new();
        for s in &sections {
            if out.chars().count() + s.heading_line.chars().count() + 1 > limit {
                break;
            }
            out.push_str(&s.heading_line);
            out.push('\n');
        }
        return out;
    }
    let share = (limit - heading_chars) / sections.len().max(1);
    let mut out = String::new();
    for s in &sections {
        if !s.heading_line.is_empty() {
            out.push_str(&s.heading_line);
            out.push('\n');
        }
        let body = s.body.trim();
        if !body.is_empty() && share > 2 {
            out.push_str(&head_chars(body, share - 2));
            out.push_str("\n\n");
        }
    }
    out.chars().take(limit).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_thinking_blocks() {
        assert_eq!(
            strip_thinking("<think>secret plan</think>\n# Doc\nbody"),
            "# Doc\nbody"
        );
        assert_eq!(
            strip_thinking("# A\n<THINKING>x\ny</THINKING>\nb"),
            "# A\n\nb"
        );
        assert_eq!(strip_thinking("<think>never closed"), "");
        // Case-insensitive as Unicode folds case: the long s and the Kelvin sign count.
        assert_eq!(strip_thinking("<ſcratchpad>x</Scratchpad>\nrest"), "rest");
        assert_eq!(strip_thinking("<thin\u{212A}>x</think> rest"), "rest");
        assert_eq!(strip_thinking("  <Reasoning>cut off"), "");
        assert_eq!(
            strip_thinking("a < b, <b>bold</b>\n"),
            "a < b, <b>bold</b>\n"
        );
        assert_eq!(strip_thinking("plain"), "plain");
        // Without a thinking block the text is kept exactly, its final newline included.
        assert_eq!(strip_thinking("\n# Doc\r\nbody\n"), "\n# Doc\r\nbody\n");
    }

    #[test]
    fn short_text_is_unchanged() {
        assert_eq!(compress("# A\nshort", 6000), "# A\nshort");
    }

    #[test]
    fn compression_keeps_every_heading_within_budget() {
        let mut doc = String::from("# Title\n");
        for i in 0..12 {
            doc.push_str(&format!(
                "## Section {i}\n{}\n\n",
                "A sentence of body text. ".repeat(60)
            ));
        }
        let out = compress(&doc, 6000);
        assert!(out.chars().count() <= 6000, "{}", out.len());
        for i in 0..12 {
            assert!(
                out.contains(&format!("## Section {i}\n")),
                "lost heading {i}"
            );
        }
        assert!(out.contains("A sentence of body text."));
    }

    #[test]
    fn headings_alone_overflowing_still_fit() {
        let doc: String = (0..500)
            .map(|i| format!("## Heading number {i}\n"))
            .collect();
        let out = compress(&doc, 1000);
        assert!(out.chars().count() <= 1000);
        assert!(out.starts_with("## Heading number 0\n"));
    }
}
