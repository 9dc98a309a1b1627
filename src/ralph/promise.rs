//! Completion-promise detection. A promise counts only as a line of the agent's own output
//! equal to the promise, and never when that line is also a line of the prompt the agent was fed
//! (agents such as codex echo their prompt). Pure.

/// Whether `output` contains the promise as its own line, not echoed from `prompt`.
#[cfg(test)]
#[must_use]
pub fn seen(output: &str, prompt: &str, promise: &str) -> bool {
    let p = promise.trim();
    seen_count(
        output.lines().filter(|l| l.trim() == p).count(),
        prompt,
        promise,
    )
}

/// Whether the promise was seen, for streamed output: `in_output` lines of it equalled the promise.
/// When the prompt itself carries the promise line, an echo is indistinguishable from the agent's
/// word unless the promise appears more often in the output than in the prompt.
#[must_use]
pub fn seen_count(in_output: usize, prompt: &str, promise: &str) -> bool {
    let promise = promise.trim();
    if promise.is_empty() {
        return false;
    }
    let in_prompt = prompt.lines().filter(|l| l.trim() == promise).count();
    in_output > in_prompt
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: &str = "<promise>COMPLETE</promise>";

    #[test]
    fn a_line_equal_to_the_promise_counts() {
        assert!(seen(
            "work done\n<promise>COMPLETE</promise>\n",
            "do work",
            P
        ));
        assert!(seen("  <promise>COMPLETE</promise>  ", "do work", P));
    }

    #[test]
    fn the_promise_inside_a_line_does_not_count() {
        assert!(!seen(
            "I will print <promise>COMPLETE</promise> later",
            "x",
            P
        ));
    }

    #[test]
    fn an_echoed_prompt_does_not_count() {
        let prompt = "Do one thing.\nWhen all is done print:\n<promise>COMPLETE</promise>\n";
        let echo = format!("user\n{prompt}\nassistant\nI did a thing.\n");
        assert!(!seen(&echo, prompt, P));
        let real = format!("{echo}<promise>COMPLETE</promise>\n");
        assert!(seen(&real, prompt, P));
    }

    #[test]
    fn counts_from_a_stream_agree_with_the_text() {
        let prompt = "Do one thing.\n<promise>COMPLETE</promise>\n";
        for (out, want) in [
            ("work\n", false),
            ("<promise>COMPLETE</promise>\n", false),
            (
                "<promise>COMPLETE</promise>\n<promise>COMPLETE</promise>\n",
                true,
            ),
        ] {
            let n = out.lines().filter(|l| l.trim() == P).count();
            assert_eq!(seen_count(n, prompt, P), want, "{out:?}");
            assert_eq!(seen(out, prompt, P), want, "{out:?}");
        }
        assert!(seen_count(1, "no promise here", P));
        assert!(!seen_count(3, "x", ""));
    }

    #[test]
    fn empty_promise_never_matches() {
        assert!(!seen("\n\n", "", ""));
    }
    /// The agent side: a real codex transcript, whose echo of the prompt carries the promise.
    #[test]
    fn codex_echoed_prompt_is_not_a_promise() {
        let prompt = "Fix the bug in calc.py: add(a, b) must return a + b. Use apply_patch or a shell command to edit the file.";
        let with_promise_prompt = format!("{prompt}\n<promise>COMPLETE</promise>");
        let log = include_str!("../../tests/fixtures/agent-output/codex-exec-plain.1.txt")
            .replace(prompt, &with_promise_prompt);
        let r = crate::agent::output::parse(crate::config::OutputFormat::Codex, &log);
        assert!(!seen(
            &r.text,
            &with_promise_prompt,
            "<promise>COMPLETE</promise>"
        ));
    }
}
