//! The shell script every agent run starts as: wait at the gate (one line on stdin, sent once
//! the job's process group is on disk; end of file when the supervisor died first), then take
//! the real stdin and run the command. Nothing of the command runs before the supervisor could
//! find it again.
//!
//! A command that is one simple command (a program and its words, quoted or not) is run with
//! `exec`, in the shell's place: `/bin/sh` (dash) forks for its last command otherwise, which
//! is a process more to start and to wait for at every run. Anything else (a pipeline, a list,
//! a redirection, an assignment, a substitution) runs as the shell would run it.

/// The script for `command`, its stdin from `stdin` (a path already quoted for the shell) and
/// the exit code `closed` when the gate never opens. Pure.
#[must_use]
pub fn gated(command: &str, stdin: &str, closed: i32) -> String {
    let run = if simple(command) {
        format!("exec {command}")
    } else {
        command.to_string()
    };
    format!("IFS= read -r _ || exit {closed}\nexec 0<{stdin}\n{run}")
}

/// Whether `command` is one simple command whose first word names a program: words of plain
/// characters or single-quoted strings, nothing the shell would read as an operator, an
/// expansion, an assignment or a reserved word. Conservative: `false` keeps the shell's own
/// way. Pure.
#[must_use]
pub fn simple(command: &str) -> bool {
    let mut quoted = false;
    for c in command.chars() {
        if c == '\'' {
            quoted = !quoted;
        } else if !(quoted || c.is_ascii_alphanumeric() || " _./:,+@%=-".contains(c)) {
            return false;
        }
    }
    let first = command
        .split_whitespace()
        .next()
        .unwrap_or("")
        .replace('\'', "");
    !quoted && !first.is_empty() && !first.contains('=') && !RESERVED.contains(&first.as_str())
}

/// Words the shell reads as its own at the start of a command: its reserved words and the
/// builtins with no program of the same name (quoted or not, the shell runs those itself).
const RESERVED: &[&str] = &[
    "!", "{", "}", "case", "do", "done", "elif", "else", "esac", "fi", "for", "if", "in", "then",
    "until", "while", ":", ".", "break", "continue", "eval", "exec", "exit", "export", "readonly",
    "return", "set", "shift", "times", "trap", "unset", "alias", "unalias", "cd", "command",
    "getopts", "hash", "jobs", "fg", "bg", "local", "read", "type", "ulimit", "umask", "wait",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_program_with_its_words_is_run_in_the_shells_place_and_nothing_else_is() {
        for (command, alone) in [
            ("/tmp/agent.sh", true),
            ("claude -p --model sonnet-4", true),
            ("aider --message-file '/tmp/a b/prompt.md' --yes", true),
            ("codex exec --full-auto -c model=o3", true),
            ("agent | tee out.log", false),
            ("agent; echo done", false),
            ("agent && next", false),
            ("agent > out.log", false),
            ("agent \"$PROMPT_FILE\"", false),
            ("agent $(cat flags)", false),
            ("agent `flags`", false),
            ("FOO=1 agent", false),
            ("agent\nsecond", false),
            ("agent 'unclosed", false),
            ("if true", false),
            ("cd sub", false),
            ("exit 3", false),
            (":", false),
            ("'exit' 0", false),
            ("'/opt/my agent/run' --yes", true),
            ("", false),
            ("   ", false),
            ("agent *.md", false),
            ("agent ~/notes", false),
            ("agent &", false),
            ("agent # comment", false),
        ] {
            assert_eq!(simple(command), alone, "{command:?}");
        }
    }

    #[test]
    fn the_script_waits_at_the_gate_and_takes_its_stdin_before_the_command() {
        assert_eq!(
            gated("claude -p", "'/tmp/p.md'", 125),
            "IFS= read -r _ || exit 125\nexec 0<'/tmp/p.md'\nexec claude -p"
        );
        assert_eq!(
            gated("a | b", "/dev/null", 125),
            "IFS= read -r _ || exit 125\nexec 0</dev/null\na | b"
        );
    }
}
