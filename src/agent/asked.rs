//! Whether a run ended by asking instead of working, and what it asked: a tool the CLI refused
//! (claude's `permission_denials`), a CLI's refusal line (codex's and gemini's "approval
//! required"), or — for any agent — last words that are a question to the user. Pure.

use crate::config::OutputFormat;

/// The longest question kept, in characters.
pub const MAX_QUESTION: usize = 200;

/// Lines a CLI prints when it refused a step it would have had to ask about (lowercase).
const REFUSALS: [&str; 7] = [
    "cannot ask for escalated permissions",
    "approval required",
    "requires approval",
    "requires user approval",
    "requires user confirmation",
    "rejected by user",
    "was denied by the user",
];

/// What a run asked, bounded and without control characters; `None` when it asked nothing.
/// `answer`: the agent's answer as the output parser read it (claude's `result`, gemini's
/// `response`, else the log's end); `tail`: the end of the log as written (a CLI's own lines);
/// `denials`: the tools the CLI refused it; `prompt`: what the run was given (codex echoes it:
/// a line of it is not the CLI's).
#[must_use]
pub fn asked(
    format: OutputFormat,
    answer: &str,
    tail: &str,
    denials: &[String],
    prompt: &str,
) -> Option<String> {
    // Whole control sequences out first (a question in colour is a question; an OSC's words are
    // none of it), not only their escape byte.
    let (answer, tail) = (
        &crate::sys::term::printable(answer),
        &crate::sys::term::printable(tail),
    );
    let question = last_question(answer);
    if !denials.is_empty() {
        let refused = format!("permission for {}", denials.join(", "));
        return Some(bounded(&question.unwrap_or(refused), MAX_QUESTION));
    }
    let refusal = match format {
        OutputFormat::Codex => {
            codex_rejection(tail, prompt).or_else(|| refusal_line(after_prompt_echo(tail)))
        }
        OutputFormat::GeminiJson => refusal_line(tail).or_else(|| refusal_line(answer)),
        _ => None,
    };
    question
        .or(refusal)
        .map(|q| bounded(&q, MAX_QUESTION))
        .filter(|q| !q.is_empty())
}

/// codex's own log line when it rejected a command the model asked to run outside its sandbox
/// (`exec` runs with approval `never`): `… ERROR codex_core::tools::router: error=approval policy
/// is Never; reject command — …`. What follows `error=`, when it is such a refusal, on a line
/// of that shape that is not one of the prompt's (which codex echoes).
fn codex_rejection(tail: &str, prompt: &str) -> Option<String> {
    const ROUTER: &str = " ERROR codex_core::tools::router: error=";
    // The prompt as the log's lines are read: its escape sequences out too.
    let prompt = crate::sys::term::printable(prompt);
    let echoed: std::collections::HashSet<&str> = prompt.lines().map(str::trim).collect();
    tail.lines()
        .rev()
        .filter(|l| !echoed.contains(l.trim()))
        .filter_map(|l| {
            let (stamp, why) = l.split_once(ROUTER)?;
            // `2026-11-27T15:14:24.676915Z`: the time codex logs at, and nothing else before.
            let stamped = stamp.len() >= 20
                && stamp.ends_with('Z')
                && stamp.as_bytes()[4] == b'-'
                && stamp.as_bytes()[10] == b'T'
                && !stamp.contains(char::is_whitespace);
            stamped.then(|| why.trim())
        })
        .find(|why| refusal_line(why).is_some())
        .map(str::to_string)
}

/// codex echoes the prompt between a `user` line and a `codex` line: what it said comes after.
fn after_prompt_echo(text: &str) -> &str {
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        at += line.len();
        if line.trim_end() == "codex" {
            return &text[at..];
        }
    }
    text
}

/// The last line that says a step was refused for want of approval.
fn refusal_line(text: &str) -> Option<String> {
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| {
            let lower = l.to_lowercase();
            REFUSALS.iter().any(|r| lower.contains(r))
        })
        .map(str::to_string)
}

/// The last sentence of the answer's last words, when that is a question.
fn last_question(answer: &str) -> Option<String> {
    let last = answer
        .lines()
        .map(|l| l.trim().trim_matches(|c| c == '*' || c == '_').trim())
        .rfind(|l| !l.is_empty() && !l.starts_with("```"))?;
    if !last.ends_with('?') {
        return None;
    }
    let body = &last[..last.len() - 1];
    let start = body
        .char_indices()
        .rev()
        .find(|(i, c)| matches!(c, '.' | '!' | '?') && body[i + 1..].starts_with(' '))
        .map(|(i, _)| i + 1)
        .unwrap_or(0);
    Some(last[start..].trim().to_string())
}

/// `text` on one line, bounded to `max` characters (`sys::term::one_line`).
#[must_use]
pub fn bounded(text: &str, max: usize) -> String {
    crate::sys::term::one_line(text, max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::output::parse;

    const CLAUDE_DENIED: &str =
        include_str!("../../tests/fixtures/agent-output/claude-p-permission-denials.1.json");
    /// Captured: Claude Code 2.1.197 in `-p` mode without `--dangerously-skip-permissions`, the
    /// real-CLI tier's scripted server asking for a Bash command that needs approval.
    const CLAUDE_DENIED_REAL: &str =
        include_str!("../../tests/fixtures/agent-output/claude-p-permission-denials.2.json");
    const CODEX_APPROVAL: &str =
        include_str!("../../tests/fixtures/agent-output/codex-exec-approval.1.txt");
    /// Captured: codex 0.169.0 `exec` with the preset's flags, the scripted server's call asking
    /// to run `git push` outside the sandbox (`require_escalated`).
    const CODEX_REJECTED: &str = "approval policy is Never; reject command — you cannot ask for escalated permissions if the approval policy is Never";
    /// Captured: gemini-cli 0.61.0 `--output-format json` without `--yolo`, the scripted
    /// server calling its shell tool.
    const GEMINI_NO_SHELL: &str =
        include_str!("../../tests/fixtures/agent-output/gemini-output-format-json.no-shell.1.txt");
    const GEMINI_CONFIRM: &str = include_str!(
        "../../tests/fixtures/agent-output/gemini-output-format-json.confirmation.1.txt"
    );
    const CODEX1: &str = include_str!("../../tests/fixtures/agent-output/codex-exec-plain.1.txt");
    const CLAUDE1: &str =
        include_str!("../../tests/fixtures/agent-output/claude-p-output-format-json.1.json");
    const GEMINI1: &str =
        include_str!("../../tests/fixtures/agent-output/gemini-output-format-json.1.txt");

    fn of(format: OutputFormat, log: &str) -> Option<String> {
        let r = parse(format, log);
        asked(format, &r.text, log, &r.denials, "")
    }

    #[test]
    fn what_each_cli_says_when_it_asked() {
        use OutputFormat::{Aider, ClaudeJson, Codex, GeminiJson, Plain};
        let long = format!("Shall I {}?", "really ".repeat(60));
        let codex_own_words = CODEX_APPROVAL.replace(
            &format!("codex\n{CODEX_REJECTED}\ntokens used\n2,560\n{CODEX_REJECTED}"),
            "codex\nI could not push: it needs your approval.\ntokens used\n2,560",
        );
        assert_ne!(codex_own_words, CODEX_APPROVAL);
        let not_logged = codex_own_words.replace(
            "2026-11-27T15:14:24.676915Z ERROR",
            "note: 2026-11-27T15:14:24.676915Z ERROR",
        );
        let cases: Vec<(OutputFormat, &str, Option<&str>)> = vec![
            // claude's refused tools, with its own last question when it asked one.
            (
                ClaudeJson,
                CLAUDE_DENIED,
                Some("Should I also update the migration?"),
            ),
            (
                ClaudeJson,
                CLAUDE_DENIED_REAL,
                Some("permission for Bash (touch made.txt && git push origin main)"),
            ),
            (
                ClaudeJson,
                r#"{"type":"result","result":"I could not run it.","permission_denials":[{"tool_name":"Bash","tool_use_id":"t1","tool_input":{"command":"rm -rf build"}}]}"#,
                Some("permission for Bash (rm -rf build)"),
            ),
            (ClaudeJson, CLAUDE1, None),
            // codex's rejection of a command the model asked to run outside its sandbox
            // (captured), in its own log line whatever the model says after it.
            (Codex, CODEX_APPROVAL, Some(CODEX_REJECTED)),
            (Codex, &codex_own_words, Some(CODEX_REJECTED)),
            // Its shape, but not at the start of a line codex logged: not codex's.
            (Codex, &not_logged, None),
            // A refusal line after its echo of the prompt; the echo itself is not its word.
            (
                Codex,
                "user\nPush it.\ncodex\nexec command rejected: approval required to run `git push`\n",
                Some("exec command rejected: approval required to run `git push`"),
            ),
            (
                Codex,
                "user\nSay \"approval required\" if in doubt.\ncodex\nDone.\n",
                None,
            ),
            (Codex, CODEX1, None),
            (
                GeminiJson,
                GEMINI_CONFIRM,
                Some(
                    "Tool \"run_shell_command\" requires user confirmation, which is not supported in non-interactive mode.",
                ),
            ),
            (GeminiJson, GEMINI1, None),
            // Without `--yolo` gemini 0.61 offers no shell tool at all: a call of it is "not
            // found", nothing it would have asked about (captured).
            (GeminiJson, GEMINI_NO_SHELL, None),
            // Any agent: last words that are a question, its last sentence only.
            (
                Plain,
                "I read the plan.\nThe schema changed. Should I also update the migration?\n\n",
                Some("Should I also update the migration?"),
            ),
            (
                Aider,
                "**Do you want me to proceed?**\n",
                Some("Do you want me to proceed?"),
            ),
            (Plain, "Is it done? Yes. All tests pass.\n", None),
            (Plain, "", None),
            // Bounded, on one line, without control characters.
            (
                Plain,
                "Should I \u{1b}[31mdelete\u{7} it?\n",
                Some("Should I delete it?"),
            ),
            // A question in colour is a question; an escape sequence's words are none of it.
            (
                Plain,
                "\u{1b}[1mShould I also update the migration?\u{1b}[0m\n",
                Some("Should I also update the migration?"),
            ),
            (
                Plain,
                "Should I \u{1b}]0;evil\u{7}also \u{1b}[31mupdate\u{1b}[0m the migration?\n",
                Some("Should I also update the migration?"),
            ),
            // Characters that show nothing are gone.
            (
                Plain,
                "Shall I \u{E0041}\u{E0042}\u{200B}delete\u{FEFF} it\u{00AD}\u{3164}?\n",
                Some("Shall I delete it?"),
            ),
            // Bidirectional controls, which would show the words in another order, are gone.
            (
                Plain,
                "Shall I keep \u{2067}\u{202E}?yaw dlo eht\u{2069} or\u{200F} the new one\u{061C}?\n",
                Some("Shall I keep ?yaw dlo eht or the new one?"),
            ),
        ];
        for (format, log, want) in cases {
            assert_eq!(of(format, log).as_deref(), want, "{format:?}: {log:?}");
        }
        // A router line the prompt holds (an agent planted it in the loop's memory) is codex's
        // echo of the prompt, not its word.
        let planted = CODEX_APPROVAL
            .lines()
            .find(|l| l.contains("codex_core::tools::router"))
            .unwrap();
        let echo = codex_own_words.replace(
            "user\nPush the fix to origin.\n",
            &format!("user\n{planted}\n"),
        );
        let echo = echo.replace(&format!("{planted}\ncodex\n"), "codex\n");
        assert!(echo.contains(planted), "{echo}");
        let r = parse(Codex, &echo);
        assert_eq!(
            asked(Codex, &r.text, &echo, &r.denials, planted),
            None,
            "{echo}"
        );
        assert_eq!(
            asked(Codex, &r.text, &echo, &r.denials, "").as_deref(),
            Some(CODEX_REJECTED)
        );
        // With an escape sequence in it, it is still the prompt's line.
        let escaped = planted.replace("Z ERROR", "Z\u{1b}[0m ERROR");
        let echo2 = echo.replace(planted, &escaped);
        assert_ne!(echo2, echo);
        let r = parse(Codex, &echo2);
        assert_eq!(
            asked(Codex, &r.text, &echo2, &r.denials, &escaped),
            None,
            "{echo2}"
        );
        let cut = of(Plain, &long).unwrap();
        assert_eq!(cut.chars().count(), MAX_QUESTION);
        assert!(cut.ends_with('…'));
    }
}
