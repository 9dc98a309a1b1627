//! What an agent's output says: the promise, cost and tokens, and the answer text. One parser
//! per known CLI format, plain text otherwise, fed line by line (a log is streamed, never read
//! whole).

use std::path::Path;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::config::OutputFormat;
use crate::error::{IoContext, Result};

/// What we learned from one agent run's output.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// The agent's answer text: claude's `result`; for other formats the whole text when parsed
    /// from a bounded answer, or the last [`TAIL_BYTES`] of a streamed log.
    #[serde(skip)]
    pub text: String,
    /// Lines of the agent's own answer equal to the completion promise (see `ralph::promise`).
    #[serde(skip)]
    pub promise_lines: usize,
    /// Cost of the run in USD, when the agent reports it.
    pub cost_usd: Option<f64>,
    /// Input tokens, when reported.
    pub tokens_in: Option<u64>,
    /// Output tokens, when reported.
    pub tokens_out: Option<u64>,
    /// Tools the CLI refused the agent, as `Bash (rm -rf build)`: claude's `permission_denials`.
    #[serde(skip)]
    pub denials: Vec<String>,
}

impl RunReport {
    /// Take the cost and token counts `other` has where this report has none.
    pub fn fill_usage(&mut self, other: &RunReport) {
        self.cost_usd = self.cost_usd.or(other.cost_usd);
        self.tokens_in = self.tokens_in.or(other.tokens_in);
        self.tokens_out = self.tokens_out.or(other.tokens_out);
    }
}

/// How much of a streamed log's end is kept as [`RunReport::text`].
pub const TAIL_BYTES: usize = 64 * 1024;
/// Lines longer than this are cut (claude's one-line JSON result included).
pub const MAX_LINE: usize = 4 * 1024 * 1024;
/// A claude log up to this size is also tried as one (pretty-printed) JSON document.
const WHOLE_JSON: usize = 4 * 1024 * 1024;

/// Parse a bounded text (an answer read back from a file) as the given format.
#[must_use]
pub fn parse(format: OutputFormat, text: &str) -> RunReport {
    let mut s = Scanner::new(format, "", 0);
    for line in text.lines() {
        s.line(line.as_bytes());
    }
    let (mut r, is_tail) = s.finish();
    if is_tail {
        text.clone_into(&mut r.text);
    }
    r
}

/// [`scan_file_from`] from the start.
#[cfg(test)]
fn scan_file(format: OutputFormat, path: &Path, promise: &str) -> Result<RunReport> {
    scan_file_from(format, path, promise, 0)
}

/// Stream a log file of any size and any bytes, past its first `from` bytes (one run's part of
/// a log the runs of an iteration share: its attempts, its revision rounds): memory stays
/// bounded (a tail, one line, and for claude a bounded copy for its one JSON document). A
/// missing log reads as empty.
pub fn scan_file_from(
    format: OutputFormat,
    path: &Path,
    promise: &str,
    from: u64,
) -> Result<RunReport> {
    use std::io::Seek;
    let mut s = Scanner::new(format, promise, TAIL_BYTES);
    match std::fs::File::open(path) {
        Ok(mut f) => {
            f.seek(std::io::SeekFrom::Start(from)).at(path, "seek")?;
            crate::sys::lines::stream_lines(std::io::BufReader::new(f), MAX_LINE, |l| {
                s.line(l);
            })
            .at(path, "read")?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).at(path, "read"),
    }
    Ok(s.finish().0)
}

/// Line-by-line extraction, shared by [`parse`] and [`scan_file_from`].
struct Scanner {
    format: OutputFormat,
    promise: String,
    tail_cap: usize,
    tail: String,
    whole: Option<String>,
    report: RunReport,
    after_tokens_used: bool,
    claude_result: Option<serde_json::Value>,
    aider: Option<[Regex; 2]>,
}

impl Scanner {
    fn new(format: OutputFormat, promise: &str, tail_cap: usize) -> Self {
        let aider = (format == OutputFormat::Aider).then(|| {
            [
                r"Tokens: ([\d.]+[kKmM]?) sent, ([\d.]+[kKmM]?) received",
                r"Cost: \$([\d.]+) message",
            ]
            .map(|re| Regex::new(re).unwrap_or_else(|_| Regex::new("$^").expect("valid")))
        });
        Self {
            format,
            promise: promise.trim().to_string(),
            tail_cap,
            tail: String::new(),
            whole: matches!(format, OutputFormat::ClaudeJson | OutputFormat::GeminiJson)
                .then(String::new),
            report: RunReport::default(),
            after_tokens_used: false,
            claude_result: None,
            aider,
        }
    }

    fn line(&mut self, raw: &[u8]) {
        let line = String::from_utf8_lossy(raw);
        let line = line.as_ref();
        self.keep(line);
        match self.format {
            OutputFormat::Plain => self.count_promise(line),
            OutputFormat::Codex => {
                self.count_promise(line);
                if self.after_tokens_used
                    && let Ok(n) = line.trim().replace(',', "").parse()
                {
                    self.report.tokens_in = Some(n);
                }
                self.after_tokens_used = line.trim() == "tokens used";
            }
            OutputFormat::Aider => {
                self.count_promise(line);
                self.aider_line(line);
            }
            OutputFormat::GeminiJson => {
                // The document starts at a line of its own `{`; what the CLI printed on stderr
                // before it (warnings) is not part of it.
                if line.trim_end() == "{" {
                    self.whole = Some(String::new());
                }
                self.collect(line);
            }
            OutputFormat::ClaudeJson => {
                self.collect(line);
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(line.trim())
                    && v.get("type").and_then(|t| t.as_str()) == Some("result")
                {
                    self.claude_result = Some(v);
                }
            }
        }
    }

    /// Collect the log as one document while it is small enough to be one.
    fn collect(&mut self, line: &str) {
        if let Some(w) = &mut self.whole {
            if w.len() + line.len() < WHOLE_JSON {
                w.push_str(line);
                w.push('\n');
            } else {
                self.whole = None;
            }
        }
    }

    fn keep(&mut self, line: &str) {
        self.tail.push_str(line);
        self.tail.push('\n');
        if self.tail.len() > self.tail_cap.saturating_mul(2) {
            let mut cut = self.tail.len() - self.tail_cap;
            while !self.tail.is_char_boundary(cut) {
                cut += 1;
            }
            self.tail.drain(..cut);
        }
    }

    fn count_promise(&mut self, line: &str) {
        if !self.promise.is_empty() && line.trim() == self.promise {
            self.report.promise_lines += 1;
        }
    }

    fn aider_line(&mut self, line: &str) {
        let Some([tokens, cost]) = &self.aider else {
            return;
        };
        let r = &mut self.report;
        if let Some(c) = tokens.captures(line) {
            r.tokens_in = Some(r.tokens_in.unwrap_or(0) + scaled(&c[1]).unwrap_or(0));
            r.tokens_out = Some(r.tokens_out.unwrap_or(0) + scaled(&c[2]).unwrap_or(0));
        }
        if let Some(c) = cost.captures(line) {
            r.cost_usd = Some(r.cost_usd.unwrap_or(0.0) + c[1].parse::<f64>().unwrap_or(0.0));
        }
    }

    /// The report, and whether its text is the kept tail (rather than claude's result).
    fn finish(mut self) -> (RunReport, bool) {
        if self.tail.len() > self.tail_cap {
            let mut cut = self.tail.len() - self.tail_cap;
            while !self.tail.is_char_boundary(cut) {
                cut += 1;
            }
            self.tail.drain(..cut);
        }
        if !matches!(
            self.format,
            OutputFormat::ClaudeJson | OutputFormat::GeminiJson
        ) {
            self.report.text = self.tail;
            return (self.report, true);
        }
        let doc = self
            .whole
            .as_deref()
            .and_then(|w| serde_json::from_str::<serde_json::Value>(w.trim()).ok())
            .or(self.claude_result);
        let Some(v) = doc else {
            self.report.text = self.tail;
            return (self.report, true);
        };
        let mut r = if self.format == OutputFormat::GeminiJson {
            gemini_json(&v)
        } else {
            claude_json(&v)
        };
        if !self.promise.is_empty() {
            r.promise_lines = r.text.lines().filter(|l| l.trim() == self.promise).count();
        }
        (r, false)
    }
}

fn claude_json(v: &serde_json::Value) -> RunReport {
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
    RunReport {
        text: v
            .get("result")
            .and_then(|r| r.as_str())
            .unwrap_or_default()
            .to_string(),
        promise_lines: 0,
        cost_usd: v.get("total_cost_usd").and_then(serde_json::Value::as_f64),
        tokens_in,
        tokens_out: tok("output_tokens"),
        denials: v
            .get("permission_denials")
            .and_then(serde_json::Value::as_array)
            .map(|d| d.iter().take(8).map(denial).collect())
            .unwrap_or_default(),
    }
}

/// One of claude's `permission_denials` in words: the tool, and what it was to do (its
/// command, file or first text argument), cut short.
fn denial(d: &serde_json::Value) -> String {
    let tool = d
        .get("tool_name")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("a tool");
    let input = d.get("tool_input").and_then(serde_json::Value::as_object);
    let what = input.and_then(|i| {
        ["command", "file_path", "path", "url"]
            .iter()
            .find_map(|k| i.get(*k).and_then(serde_json::Value::as_str))
            .or_else(|| i.values().find_map(serde_json::Value::as_str))
    });
    match what {
        Some(w) => format!("{tool} ({})", super::asked::bounded(w, 80)),
        None => tool.to_string(),
    }
}

/// gemini's document: `response`, and the tokens of every model it called (the router's
/// included) from `stats.models.<name>.tokens` (`prompt` in, `candidates` out). No cost: gemini
/// does not report one (a `[prices]` entry prices the tokens).
fn gemini_json(v: &serde_json::Value) -> RunReport {
    let mut tokens_in = None;
    let mut tokens_out = None;
    if let Some(models) = v.pointer("/stats/models").and_then(|m| m.as_object()) {
        for m in models.values() {
            let tok = |k: &str| {
                m.pointer(&format!("/tokens/{k}"))
                    .and_then(serde_json::Value::as_u64)
            };
            if let Some(n) = tok("prompt").or_else(|| tok("input")) {
                tokens_in = Some(tokens_in.unwrap_or(0) + n);
            }
            if let Some(n) = tok("candidates") {
                tokens_out = Some(tokens_out.unwrap_or(0) + n);
            }
        }
    }
    RunReport {
        text: v
            .get("response")
            .and_then(|r| r.as_str())
            .unwrap_or_default()
            .to_string(),
        promise_lines: 0,
        cost_usd: None,
        tokens_in,
        tokens_out,
        denials: Vec::new(),
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

#[cfg(test)]
mod tests {
    use super::*;

    const CLAUDE1: &str =
        include_str!("../../tests/fixtures/agent-output/claude-p-output-format-json.1.json");
    const CLAUDE2: &str =
        include_str!("../../tests/fixtures/agent-output/claude-p-output-format-json.2.json");
    const CODEX1: &str = include_str!("../../tests/fixtures/agent-output/codex-exec-plain.1.txt");
    const AIDER1: &str = include_str!("../../tests/fixtures/agent-output/aider-message.1.txt");

    const GEMINI1: &str =
        include_str!("../../tests/fixtures/agent-output/gemini-output-format-json.1.txt");

    #[test]
    fn gemini_json_after_its_warnings_gives_the_response_and_every_models_tokens() {
        let r = parse(OutputFormat::GeminiJson, GEMINI1);
        assert_eq!(r.text, "work done in iteration\n");
        // The router's request and the two of the conversation.
        assert_eq!((r.tokens_in, r.tokens_out), (Some(3600), Some(240)));
        assert_eq!(r.cost_usd, None);
        let promised = GEMINI1.replace(
            "\"work done in iteration\\n\"",
            "\"done\\n<promise>COMPLETE</promise>\\n\"",
        );
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("agent.log");
        std::fs::write(&log, &promised).unwrap();
        let r = scan_file(
            OutputFormat::GeminiJson,
            &log,
            "<promise>COMPLETE</promise>",
        )
        .unwrap();
        assert_eq!(r.promise_lines, 1);
        // Not a document: the tail, as for plain text.
        let r = parse(OutputFormat::GeminiJson, "Error: quota exceeded\n");
        assert_eq!(
            (r.text.as_str(), r.tokens_in),
            ("Error: quota exceeded\n", None)
        );
    }

    #[test]
    fn claude_json_gives_cost_tokens_and_result() {
        let r = parse(OutputFormat::ClaudeJson, CLAUDE1);
        assert!((r.cost_usd.unwrap() - 0.004_718_5).abs() < 1e-9);
        assert_eq!(r.tokens_in, Some(659 + 47));
        assert_eq!(r.tokens_out, Some(56));
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
    fn a_streamed_log_of_any_bytes_gives_the_promise_and_a_bounded_tail() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("agent.log");
        let mut log = Vec::new();
        for i in 0..20_000 {
            log.extend_from_slice(format!("line {i} ").as_bytes());
            log.extend_from_slice(b"\xff\xfe of output\n");
        }
        log.extend_from_slice(b"<promise>COMPLETE</promise>\n\x80 the end");
        std::fs::write(&p, &log).unwrap();
        let r = scan_file(OutputFormat::Plain, &p, "<promise>COMPLETE</promise>").unwrap();
        assert_eq!(r.promise_lines, 1);
        assert!(r.text.len() <= TAIL_BYTES, "{}", r.text.len());
        assert!(
            r.text.ends_with("\u{fffd} the end\n"),
            "{:?}",
            &r.text[r.text.len() - 20..]
        );
        let none = scan_file(OutputFormat::Plain, &d.path().join("none"), "x").unwrap();
        // The runs of an iteration share its log: a run's report is its own part's.
        let shared = d.path().join("shared.log");
        std::fs::write(
            &shared,
            "{\"type\":\"result\",\"result\":\"first\",\"total_cost_usd\":0.05}\n",
        )
        .unwrap();
        let from = std::fs::metadata(&shared).unwrap().len();
        let first = scan_file_from(OutputFormat::ClaudeJson, &shared, "", 0).unwrap();
        assert_eq!(first.cost_usd, Some(0.05));
        crate::sys::fsutil::append_line(&shared, "the revised draft, in plain words").unwrap();
        let second = scan_file_from(OutputFormat::ClaudeJson, &shared, "", from).unwrap();
        assert_eq!(second.cost_usd, None, "{second:?}");
        assert_eq!(none, RunReport::default());
    }

    #[test]
    fn a_streamed_claude_log_gives_cost_and_the_promise_from_its_result() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("agent.log");
        let mut v: serde_json::Value = serde_json::from_str(CLAUDE1).unwrap();
        v["result"] = "done\n<promise>COMPLETE</promise>".into();
        std::fs::write(&p, format!("noise \u{1}\n{v}\n")).unwrap();
        let r = scan_file(OutputFormat::ClaudeJson, &p, "<promise>COMPLETE</promise>").unwrap();
        assert_eq!(r.promise_lines, 1);
        assert!(r.cost_usd.is_some());
        let pretty = serde_json::to_string_pretty(&v).unwrap();
        std::fs::write(&p, pretty).unwrap();
        let r = scan_file(OutputFormat::ClaudeJson, &p, "<promise>COMPLETE</promise>").unwrap();
        assert_eq!((r.promise_lines, r.text.starts_with("done")), (1, true));
    }

    #[test]
    fn aider_tokens() {
        let r = parse(OutputFormat::Aider, AIDER1);
        assert_eq!(r.tokens_in, Some(1300));
        assert_eq!(r.tokens_out, Some(67));
    }
}
