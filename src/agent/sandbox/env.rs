//! The agent's environment, built rather than inherited: the basics a shell needs, the loop's
//! own variables, the keys the agent's CLI needs, its `[agents] env`, and `[safety] env_allow`.
//! Everything else — cloud keys, other tokens — is dropped. Pure.

/// What every agent gets from the supervisor's environment (`DO_NOT_TRACK`: the common
/// telemetry opt-out).
const BASE: [&str; 12] = [
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LC_*",
    "TERM",
    "TZ",
    "COLORTERM",
    "STUDIO_AGENTS_*",
    "DO_NOT_TRACK",
];

/// Never passed, whatever matches: the supervisor's home holds the loop's records and locks,
/// which are no business of the agent's; the daemon's own markers would make a `studio-agents`
/// the agent starts believe it is a daemon.
const NEVER: [&str; 3] = [
    "STUDIO_AGENTS_HOME",
    crate::agent::process::DAEMON_ENV,
    crate::agent::process::HARNESS_ENV,
];

/// The keys a known agent CLI needs, by the command's program name.
#[must_use]
pub fn preset_keys(program: &str) -> &'static [&'static str] {
    match program {
        "claude" => &[
            "ANTHROPIC_*",
            "CLAUDE_*",
            "IS_SANDBOX",
            // The opt-outs of Claude Code's telemetry, updater and reports.
            "DISABLE_TELEMETRY",
            "DISABLE_AUTOUPDATER",
            "DISABLE_ERROR_REPORTING",
            "DISABLE_BUG_COMMAND",
            "DISABLE_NON_ESSENTIAL_MODEL_CALLS",
        ],
        "codex" => &["OPENAI_*", "CODEX_*"],
        "gemini" => &["GEMINI_*", "GOOGLE_*"],
        "aider" => &["OPENAI_*", "ANTHROPIC_*", "AIDER_*", "OPENROUTER_*"],
        "kiro-cli" => &["KIRO_*"],
        "opencode" => &["OPENCODE_*", "OPENAI_*", "ANTHROPIC_*"],
        "amp" => &["AMP_*"],
        _ => &[],
    }
}

/// What a CLI needs to run unattended where the harness confines it, set by the helper only
/// when the filesystem confinement is in force: claude refuses to skip its permission prompts
/// as root unless told it is in a sandbox (`IS_SANDBOX=1`); gemini runs in an untrusted folder
/// only when the workspace is trusted (`GEMINI_CLI_TRUST_WORKSPACE=true`, exit 55 otherwise).
#[must_use]
pub fn when_enforced(program: &str, root: bool) -> Vec<(String, String)> {
    let pairs: &[(&str, &str)] = match program {
        "claude" if root => &[("IS_SANDBOX", "1")],
        "gemini" => &[("GEMINI_CLI_TRUST_WORKSPACE", "true")],
        _ => &[],
    };
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect()
}

/// Whether `name` matches `pattern` (`FOO` exactly, or `FOO_*` as a prefix).
#[must_use]
pub fn matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == pattern,
    }
}

/// The variables of `parent` an agent may see: the base, the CLI's keys, `allow`.
#[must_use]
pub fn allowed(
    parent: impl IntoIterator<Item = (String, String)>,
    program: &str,
    allow: &[String],
) -> Vec<(String, String)> {
    let keys = preset_keys(program);
    let mut out: Vec<(String, String)> = parent
        .into_iter()
        .filter(|(k, _)| !NEVER.contains(&k.as_str()))
        .filter(|(k, _)| {
            BASE.iter().any(|p| matches(p, k))
                || keys.iter().any(|p| matches(p, k))
                || allow.iter().any(|p| matches(p, k))
        })
        .collect();
    out.sort();
    out
}

/// The program a command line runs (`env X=1 claude -p` → `claude`), for its preset keys.
#[must_use]
pub fn program_of(command: &str) -> String {
    command
        .split_whitespace()
        .find(|w| !w.contains('=') && *w != "env" && *w != "exec")
        .map(|w| w.rsplit('/').next().unwrap_or(w).to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[&str]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|k| ((*k).to_string(), "v".to_string()))
            .collect()
    }

    fn names(v: &[(String, String)]) -> Vec<&str> {
        v.iter().map(|(k, _)| k.as_str()).collect()
    }

    #[test]
    fn secrets_are_dropped_and_what_the_agent_needs_is_kept() {
        let parent = env(&[
            "PATH",
            "HOME",
            "LC_ALL",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_ACCESS_KEY_ID",
            "GITHUB_TOKEN",
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "MY_FLAG",
            "MY_OTHER",
            "DB_PASSWORD",
            "STUDIO_AGENTS_HOME",
            "STUDIO_AGENTS_DAEMON",
            "STUDIO_AGENTS_PROBED_HARNESS",
            "STUDIO_AGENTS_LOG",
            "LD_PRELOAD",
        ]);
        let cases: [(&str, &[String], &[&str]); 3] = [
            (
                "claude",
                &[],
                &[
                    "ANTHROPIC_API_KEY",
                    "HOME",
                    "LC_ALL",
                    "PATH",
                    "STUDIO_AGENTS_LOG",
                ],
            ),
            (
                "codex",
                &["GITHUB_TOKEN".to_string(), "MY_*".to_string()],
                &[
                    "GITHUB_TOKEN",
                    "HOME",
                    "LC_ALL",
                    "MY_FLAG",
                    "MY_OTHER",
                    "OPENAI_API_KEY",
                    "PATH",
                    "STUDIO_AGENTS_LOG",
                ],
            ),
            ("sh", &[], &["HOME", "LC_ALL", "PATH", "STUDIO_AGENTS_LOG"]),
        ];
        for (program, allow, want) in cases {
            let got = allowed(parent.clone(), program, allow);
            assert_eq!(names(&got), want, "{program}");
        }
    }

    #[test]
    fn opt_outs_are_kept_and_enforced_only_variables_are_per_cli() {
        let parent = env(&[
            "DISABLE_TELEMETRY",
            "DISABLE_AUTOUPDATER",
            "DO_NOT_TRACK",
            "DISABLE_X",
        ]);
        assert_eq!(
            names(&allowed(parent.clone(), "claude", &[])),
            ["DISABLE_AUTOUPDATER", "DISABLE_TELEMETRY", "DO_NOT_TRACK"]
        );
        assert_eq!(names(&allowed(parent, "codex", &[])), ["DO_NOT_TRACK"]);
        let names_of = |v: Vec<(String, String)>| -> Vec<String> {
            v.into_iter().map(|(k, v)| format!("{k}={v}")).collect()
        };
        assert_eq!(names_of(when_enforced("claude", true)), ["IS_SANDBOX=1"]);
        assert!(when_enforced("claude", false).is_empty());
        assert_eq!(
            names_of(when_enforced("gemini", false)),
            ["GEMINI_CLI_TRUST_WORKSPACE=true"]
        );
        assert!(when_enforced("codex", true).is_empty());
    }

    #[test]
    fn the_program_of_a_command_line() {
        for (cmd, want) in [
            ("claude -p --output-format json", "claude"),
            ("env FOO=1 /usr/local/bin/codex exec -", "codex"),
            ("FAKE=x sh /path/fake-agent.sh", "sh"),
            ("", ""),
        ] {
            assert_eq!(program_of(cmd), want, "{cmd}");
        }
    }
}
