//! What an agent's output says: the text to look for the promise in, cost, tokens, errors and
//! the agent's own commits. One parser per known CLI format; plain text otherwise. Pure.

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::config::OutputFormat;

/// What we learned from one agent run's output.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The agent's answer text (the whole log for plain agents).
    #[serde(skip)]
    pub text: String,
    /// Cost of the run in USD, when the agent reports it.
    pub cost_usd: Option<f64>,
    /// Input tokens, when reported.
    pub tokens_in: Option<u64>,
    /// Output tokens, when reported.
    pub tokens_out: Option<u64>,
    /// The agent said it failed.
    pub is_error: bool,
    /// Commits the agent made itself (aider).
    pub agent_commits: Vec<String>,
}

/// Parse `log` as the given format.
#[must_use]
pub fn parse(format: OutputFormat, log: &str) -> Report {
    match format {
        OutputFormat::Plain => Report {
            text: log.to_string(),
            ..Report::default()
        },
        OutputFormat::ClaudeJson => claude_json(log),
        OutputFormat::Codex => codex(log),
        OutputFormat::Aider => aider(log),
    }
}

fn claude_json(log: &str) -> Report {
    let value = serde_json::from_str::<serde_json::Value>(log.trim())
        .ok()
        .or_else(|| {
            log.lines()
                .rev()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l.trim()).ok())
                .find(|v| v.get("type").and_then(|t| t.as_str()) == Some("result"))
        });
    let Some(v) = value else {
        return Report {
            text: log.to_string(),
            ..Report::default()
        };
    };
    let usage = v.get("usage");
    let tok = |k: &str| {
        usage
            .and_then(|u| u.get(k))
            .and_then(serde_json::Value::as_u64)
    };
    let tokens_in = match (
        tok("input_tokens"),
        tok("cache_read_input_tokens"),
        tok("cache_creation_input_tokens"),
    ) {
        (None, None, None) => None,
        (a, b, c) => Some(a.unwrap_or(0) + b.unwrap_or(0) + c.unwrap_or(0)),
    };
    Report {
        text: v
            .get("result")
            .and_then(|r| r.as_str())
            .unwrap_or_default()
            .to_string(),
        cost_usd: v.get("total_cost_usd").and_then(serde_json::Value::as_f64),
        tokens_in,
        tokens_out: tok("output_tokens"),
        is_error: v
            .get("is_error")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false),
        agent_commits: Vec::new(),
    }
}

fn codex(log: &str) -> Report {
    let lines: Vec<&str> = log.lines().collect();
    let tokens = lines
        .iter()
        .rposition(|l| l.trim() == "tokens used")
        .and_then(|i| lines.get(i + 1))
        .and_then(|n| n.trim().replace(',', "").parse().ok());
    Report {
        text: log.to_string(),
        tokens_in: tokens,
        ..Report::default()
    }
}

/// `1.3k` → 1300, `2M` → 2000000.
fn scaled(n: &str) -> Option<u64> {
    let (num, mult) = match n.chars().last()? {
        'k' | 'K' => (&n[..n.len() - 1], 1e3),
        'm' | 'M' => (&n[..n.len() - 1], 1e6),
        _ => (n, 1.0),
    };
    let v: f64 = num.parse().ok()?;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Some((v * mult).round() as u64)
}

fn aider(log: &str) -> Report {
    let tokens = Regex::new(r"Tokens: ([\d.]+[kKmM]?) sent, ([\d.]+[kKmM]?) received").ok();
    let cost = Regex::new(r"Cost: \$([\d.]+) message").ok();
    let commit = Regex::new(r"^Commit ([0-9a-f]{7,40}) ").ok();
    let mut r = Report {
        text: log.to_string(),
        ..Report::default()
    };
    for line in log.lines() {
        if let Some(c) = tokens.as_ref().and_then(|re| re.captures(line)) {
            r.tokens_in = Some(r.tokens_in.unwrap_or(0) + scaled(&c[1]).unwrap_or(0));
            r.tokens_out = Some(r.tokens_out.unwrap_or(0) + scaled(&c[2]).unwrap_or(0));
        }
        if let Some(c) = cost.as_ref().and_then(|re| re.captures(line)) {
            r.cost_usd = Some(r.cost_usd.unwrap_or(0.0) + c[1].parse::<f64>().unwrap_or(0.0));
        }
        if let Some(c) = commit.as_ref().and_then(|re| re.captures(line)) {
            r.agent_commits.push(c[1].to_string());
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLAUDE1: &str =
        include_str!("../../tests/fixtures/agent-output/claude-p-output-format-json.1.json");
    const CLAUDE2: &str =
        include_str!("../../tests/fixtures/agent-output/claude-p-output-format-json.2.json");
    const CODEX1: &str = include_str!("../../tests/fixtures/agent-output/codex-exec-plain.1.txt");
    const AIDER1: &str = include_str!("../../tests/fixtures/agent-output/aider-message.1.txt");

    #[test]
    fn claude_json_gives_cost_tokens_and_result() {
        let r = parse(OutputFormat::ClaudeJson, CLAUDE1);
        assert!((r.cost_usd.unwrap() - 0.004_718_5).abs() < 1e-9);
        assert_eq!(r.tokens_in, Some(659 + 47));
        assert_eq!(r.tokens_out, Some(56));
        assert!(!r.is_error);
        assert!(r.text.contains("calc.py"));
        let r2 = parse(OutputFormat::ClaudeJson, CLAUDE2);
        assert!(r2.cost_usd.is_some());
    }

    #[test]
    fn claude_json_after_other_lines_and_garbage() {
        let noisy = format!("warning: something\n{}\n", CLAUDE1.trim());
        assert!(parse(OutputFormat::ClaudeJson, &noisy).cost_usd.is_some());
        let r = parse(OutputFormat::ClaudeJson, "not json at all");
        assert_eq!(r.cost_usd, None);
        assert_eq!(r.text, "not json at all");
    }

    #[test]
    fn codex_tokens_used() {
        let r = parse(OutputFormat::Codex, CODEX1);
        assert_eq!(r.tokens_in, Some(6257));
    }

    #[test]
    fn codex_echoed_prompt_is_not_a_promise() {
        let prompt = "Fix the bug in calc.py: add(a, b) must return a + b. Use apply_patch or a shell command to edit the file.";
        let with_promise_prompt = format!("{prompt}\n<promise>COMPLETE</promise>");
        let log = CODEX1.replace(prompt, &with_promise_prompt);
        let r = parse(OutputFormat::Codex, &log);
        assert!(!crate::ralph::promise::seen(
            &r.text,
            &with_promise_prompt,
            "<promise>COMPLETE</promise>"
        ));
    }

    #[test]
    fn aider_tokens_and_commits() {
        let r = parse(OutputFormat::Aider, AIDER1);
        assert_eq!(r.tokens_in, Some(1300));
        assert_eq!(r.tokens_out, Some(67));
        assert_eq!(r.agent_commits, vec!["86b0308".to_string()]);
    }
}
