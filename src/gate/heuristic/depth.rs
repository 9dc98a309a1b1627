//! Depth as what a reader can act on, in any form: commands, configs, queries and code in
//! fenced blocks or inline code spans, numbered steps that each name an action, figures with
//! units. A command written twice counts once; one beside nothing the task names counts less.
//! Pure.

use std::collections::HashSet;

use super::topic::Topic;
use crate::quality::markdown::{self, Block, Section};

/// What an unrelated command, config or name counts for, against one beside the task's terms.
const UNRELATED: f64 = 0.4;
/// What a name in a code span (`iam.roles.get`, a path) counts for, against a command.
const NAME: f64 = 0.34;

/// Verbs a step begins with when it names an action.
const ACTIONS: [&str; 60] = [
    "add",
    "remove",
    "run",
    "set",
    "use",
    "install",
    "configure",
    "create",
    "update",
    "replace",
    "enable",
    "disable",
    "check",
    "verify",
    "grant",
    "revoke",
    "restart",
    "deploy",
    "write",
    "move",
    "rename",
    "open",
    "call",
    "test",
    "document",
    "apply",
    "confirm",
    "rotate",
    "delete",
    "roll",
    "upgrade",
    "pin",
    "monitor",
    "alert",
    "measure",
    "compare",
    "review",
    "start",
    "stop",
    "build",
    "merge",
    "invalidate",
    "purge",
    "send",
    "store",
    "export",
    "import",
    "schedule",
    "retry",
    "revert",
    "migrate",
    "fix",
    "patch",
    "keep",
    "wait",
    "inspect",
    "query",
    "raise",
    "lower",
    "limit",
];

/// Units a figure is given in (a number right before one, or with it as its suffix).
const UNITS: [&str; 58] = [
    "ms", "s", "sec", "secs", "second", "seconds", "min", "mins", "minute", "minutes", "h", "hr",
    "hrs", "hour", "hours", "day", "days", "week", "weeks", "month", "months", "%", "percent", "b",
    "kb", "mb", "gb", "tb", "kib", "mib", "gib", "bytes", "k", "x", "×", "rps", "qps", "req/s",
    "requests", "calls", "errors", "entries", "users", "projects", "keys", "nodes", "pods",
    "replicas", "regions", "retries", "attempts", "times", "usd", "eur", "cores", "lines", "files",
    "items",
];

/// What a reader can act on in a document.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Actions {
    /// Distinct commands, configs, queries and code (fenced or inline), weighted.
    pub runnable: f64,
    /// Numbered steps naming an action (bulleted ones count half).
    pub steps: f64,
    /// Distinct figures with units.
    pub figures: usize,
}

impl Actions {
    /// Depth's share of them, 0–1 (the words' share is the evaluator's).
    #[must_use]
    pub fn credit(&self) -> f64 {
        0.4 * (self.runnable / 4.0).min(1.0)
            + 0.15 * (self.steps / 3.0).min(1.0)
            + 0.15 * (figures_f64(self.figures) / 4.0).min(1.0)
    }
}

#[allow(clippy::cast_precision_loss)]
fn figures_f64(n: usize) -> f64 {
    n as f64
}

/// Read what `sections` give a reader to act on, for the task's `topic`.
#[must_use]
pub fn read(sections: &[Section], topic: &Topic) -> Actions {
    let mut seen = HashSet::new();
    let mut figures = HashSet::new();
    let mut a = Actions::default();
    for s in sections {
        let mut before = s.title.clone();
        for b in markdown::blocks(&s.body) {
            match &b {
                Block::Code(c) => {
                    if seen.insert(normal(c)) {
                        let related = topic.related(c) || topic.related(&before);
                        a.runnable += if related { 1.0 } else { UNRELATED };
                    }
                }
                Block::Para(t) | Block::Item(t) => {
                    a.runnable += spans(t, topic, &mut seen);
                    figures.extend(figures_in(t));
                    before.clone_from(t);
                }
            }
        }
        a.steps += steps(&s.body);
    }
    a.figures = figures.len();
    a
}

/// Commands and names in a text's code spans not seen before, weighted.
fn spans(text: &str, topic: &Topic, seen: &mut HashSet<String>) -> f64 {
    let mut related: Option<bool> = None;
    let mut sum = 0.0;
    for span in text.split('`').skip(1).step_by(2) {
        let span = span.trim();
        if span.chars().count() < 3 || !seen.insert(normal(span)) {
            continue;
        }
        let command = span.contains(char::is_whitespace)
            || span.contains(['=', '|', '>'])
            || span.contains("--");
        let on_task = *related.get_or_insert_with(|| topic.related(text));
        sum += if command { 1.0 } else { NAME } * if on_task { 1.0 } else { UNRELATED };
    }
    sum
}

fn normal(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// Numbered steps that name an action (a verb first, or a code span), bulleted ones half.
fn steps(body: &str) -> f64 {
    let mut fence = None;
    let mut n = 0.0;
    let mut seen = HashSet::new();
    for line in body.lines() {
        if let Some(f) = markdown::fence_of(line) {
            fence = match fence {
                Some(open) if f.closes(open, line.trim_start()) => None,
                None => Some(f),
                keep => keep,
            };
            continue;
        }
        if fence.is_some() {
            continue;
        }
        let t = line.trim_start();
        let (numbered, rest) = match t.find(|c: char| !c.is_ascii_digit()) {
            Some(d) if d > 0 && (t[d..].starts_with(". ") || t[d..].starts_with(") ")) => {
                (true, &t[d + 2..])
            }
            _ => match t.strip_prefix("- ").or_else(|| t.strip_prefix("* ")) {
                Some(r) => (false, r),
                None => continue,
            },
        };
        let first = rest
            .split_whitespace()
            .next()
            .unwrap_or("")
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase();
        if (ACTIONS.contains(&first.as_str()) || rest.contains('`')) && seen.insert(normal(rest)) {
            n += if numbered { 1.0 } else { 0.5 };
        }
    }
    n
}

/// Figures with units in a text: `180 ms`, `2.4s`, `40%`, `1,284 entries`.
fn figures_in(text: &str) -> Vec<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        let w = w.trim_matches(|c: char| matches!(c, '(' | ')' | ',' | ';' | ':' | '.' | '`'));
        let w = w.strip_prefix('$').unwrap_or(w);
        let digits = w
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ','))
            .unwrap_or(w.len());
        if digits == 0 || !w.starts_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        let (num, suffix) = w.split_at(digits);
        let unit = if suffix.is_empty() {
            words.get(i + 1).map_or(String::new(), |n| {
                n.trim_matches(|c: char| matches!(c, '(' | ')' | ',' | ';' | ':' | '.'))
                    .to_lowercase()
            })
        } else {
            suffix.to_lowercase()
        };
        if UNITS.contains(&unit.as_str()) {
            out.push(format!("{num} {unit}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_doc(task: &str, doc: &str) -> Actions {
        read(&markdown::sections(doc), &Topic::of(task))
    }

    #[test]
    fn commands_count_fenced_or_inline_and_once() {
        let task = "Make the `monarch-api` deployment restart cleanly";
        let fenced = "## Steps\nRestart `monarch-api` like this:\n\n```sh\nkubectl -n monarch rollout restart deploy/monarch-api\n```\n";
        let inline = "## Steps\nRestart `monarch-api` with `kubectl -n monarch rollout restart deploy/monarch-api`.\n";
        let twice =
            format!("{inline}\nAgain: `kubectl -n monarch rollout restart deploy/monarch-api`.\n");
        let (f, i, t) = (
            read_doc(task, fenced).runnable,
            read_doc(task, inline).runnable,
            read_doc(task, &twice).runnable,
        );
        assert!((f - (1.0 + NAME)).abs() < 1e-9, "{f}");
        assert!((i - f).abs() < 1e-9, "{i} {f}");
        assert!((t - i).abs() < 1e-9, "{t} {i}");
    }

    #[test]
    fn commands_unrelated_to_the_task_count_less() {
        let doc = "## Notes\nWe list the files with `ls -la /tmp/build` before the release.\n";
        let on = read_doc("Clean the /tmp/build directory before a release", doc).runnable;
        let off = read_doc("Rotate the `monarch-ui` service account key", doc).runnable;
        assert!(
            (on - 1.0).abs() < 1e-9 && (off - UNRELATED).abs() < 1e-9,
            "{on} {off}"
        );
    }

    #[test]
    fn numbered_steps_naming_an_action_count_and_bullets_half() {
        let body = "1. Add `iam.roles.get` to the role.\n2. Verify the panel loads.\n3. The panel is nice.\n- Check the logs.\n- Something else.\n```\n1. Run inside a fence\n```\n";
        assert!((steps(body) - 2.5).abs() < 1e-9, "{}", steps(body));
    }

    #[test]
    fn figures_are_numbers_with_units() {
        let got = figures_in(
            "p95 is 180 ms (was 2.4s), 40% of 1,284 entries, $3 in 2026 and 11 projects: 5 minutes.",
        );
        assert_eq!(
            got,
            [
                "180 ms",
                "2.4 s",
                "40 %",
                "1,284 entries",
                "11 projects",
                "5 minutes"
            ]
        );
    }
}
