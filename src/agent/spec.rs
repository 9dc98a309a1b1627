//! Which agent a loop runs: an `[agents]` entry, a built-in preset, or `--agent-cmd`.

use std::path::Path;

use crate::config::{AgentEntry, AgentTable, OutputFormat, RevisionOutput, Settings};
use crate::error::{Error, Result};

/// A resolved agent.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentSpec {
    /// Its name (`custom` for `--agent-cmd`).
    pub name: String,
    /// Its options.
    pub table: AgentTable,
}

/// Built-in presets: how each known agent CLI is run non-interactively with our prompt.
/// See docs/agents.md for the setups behind them.
#[must_use]
pub fn preset(name: &str) -> Option<AgentTable> {
    let (command, stdin, format) = match name {
        "claude" => (
            "claude -p --dangerously-skip-permissions --output-format json",
            true,
            OutputFormat::ClaudeJson,
        ),
        "codex" => (
            "codex exec --dangerously-bypass-approvals-and-sandbox --skip-git-repo-check -",
            true,
            OutputFormat::Codex,
        ),
        "gemini" => (
            "gemini --yolo --output-format json",
            true,
            OutputFormat::GeminiJson,
        ),
        "kiro-cli" => (
            "kiro-cli chat --no-interactive --trust-all-tools \"$(cat {prompt_file})\"",
            false,
            OutputFormat::Plain,
        ),
        "aider" => (
            "aider --yes-always --no-pretty --no-stream --message-file {prompt_file}",
            false,
            OutputFormat::Aider,
        ),
        "opencode" => (
            "opencode run --auto \"$(cat {prompt_file})\"",
            false,
            OutputFormat::Plain,
        ),
        "amp" => ("amp --execute", true, OutputFormat::Plain),
        _ => return None,
    };
    Some(AgentTable {
        command: command.into(),
        stdin,
        revision_output: if format == OutputFormat::Aider {
            RevisionOutput::File
        } else {
            RevisionOutput::Stdout
        },
        output_format: format,
        cwd: None,
        env: std::collections::BTreeMap::new(),
        model: None,
    })
}

/// Names of the presets, for help and errors.
pub const PRESETS: [&str; 7] = [
    "claude", "codex", "gemini", "kiro-cli", "aider", "opencode", "amp",
];

/// Resolve the agent: `--agent-cmd` wins, then `--agent NAME`, then `[defaults] agent`.
/// A name is looked up in `[agents]` first, then in the presets.
pub fn resolve(
    settings: &Settings,
    agent: Option<&str>,
    agent_cmd: Option<&str>,
) -> Result<AgentSpec> {
    if let Some(cmd) = agent_cmd {
        if cmd.trim().is_empty() {
            return Err(Error::input("--agent-cmd: the command is empty"));
        }
        return Ok(AgentSpec {
            name: "custom".into(),
            table: AgentEntry::Command(cmd.to_string()).to_table(),
        });
    }
    let (name, origin) = match agent {
        Some(a) => (a, "--agent"),
        None => (settings.defaults.agent.as_str(), "[defaults] agent"),
    };
    named(settings, name).ok_or_else(|| unknown(settings, origin, name))
}

/// An agent name neither `[agents]` nor the presets know, refused naming where it came from.
fn unknown(settings: &Settings, origin: &str, name: &str) -> Error {
    let mut known: Vec<&str> = settings.agents.keys().map(String::as_str).collect();
    known.extend(PRESETS);
    Error::input(format!(
        "{origin}: unknown agent `{name}` (known: {})",
        known.join(", ")
    ))
}

/// The agent of `[defaults] planning_agent`, resolved and installed, when it names one other
/// than `primary`; an unknown or missing one is refused naming the key.
pub fn planning(settings: &Settings, primary: &AgentSpec) -> Result<Option<AgentSpec>> {
    let origin = "[defaults] planning_agent";
    let Some(name) = settings.defaults.planning_agent.as_deref() else {
        return Ok(None);
    };
    if name == primary.name {
        return Ok(None);
    }
    let spec = named(settings, name).ok_or_else(|| unknown(settings, origin, name))?;
    check_installed_for(settings, &spec, origin)?;
    Ok(Some(spec))
}

/// An agent by name: `[agents]` entry, else preset.
#[must_use]
pub fn named(settings: &Settings, name: &str) -> Option<AgentSpec> {
    settings
        .agents
        .get(name)
        .map(AgentEntry::to_table)
        .or_else(|| preset(name))
        .map(|table| AgentSpec {
            name: name.to_string(),
            table,
        })
}

/// The program a preset runs, when the agent is a preset not overridden in `[agents]`.
#[must_use]
pub fn preset_program(settings: &Settings, spec: &AgentSpec) -> Option<&'static str> {
    if settings.agents.contains_key(&spec.name) {
        return None;
    }
    PRESETS.iter().copied().find(|p| *p == spec.name)
}

/// Whether a program is found on `PATH`.
#[must_use]
pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            let p = dir.join(program);
            p.is_file()
                && std::fs::metadata(&p).is_ok_and(|m| {
                    use std::os::unix::fs::PermissionsExt;
                    m.permissions().mode() & 0o111 != 0
                })
        })
    })
}

/// Refuse a preset whose CLI is not installed, naming where the choice came from.
pub fn check_installed(settings: &Settings, spec: &AgentSpec, from_flag: bool) -> Result<()> {
    // Nobody chose the default: say that no agent was given, not that a setting is wrong.
    let default = crate::config::Settings::default().defaults.agent;
    let nobody_chose =
        !from_flag && settings.defaults.agent == default && !settings.agents.contains_key(&default);
    if nobody_chose && let Some(program) = preset_program(settings, spec).filter(|p| !on_path(p)) {
        return Err(Error::input(format!(
            "no agent was given (--agent NAME or --agent-cmd CMD), and the default, `{program}`, is not installed: its CLI is not on PATH"
        )));
    }
    let origin = if from_flag {
        "--agent"
    } else {
        "[defaults] agent"
    };
    check_installed_for(settings, spec, origin)
}

/// Words a shell runs without a program on `PATH`.
const SHELL_WORDS: [&str; 14] = [
    ":", "cd", "exec", "export", "eval", "set", "trap", "wait", "read", "command", ".", "[", "if",
    "for",
];

/// Refuse an `--agent-cmd` whose program is not there: a path that names no file, or a plain
/// name that is not on `PATH` (found now, not by the daemon after `start` returned). A command
/// that opens with shell syntax is the shell's to judge.
pub fn check_command(cmd: &str) -> Result<()> {
    let Some(word) = cmd
        .split_whitespace()
        .find(|w| !w.contains('=') && *w != "env")
    else {
        return Ok(());
    };
    let plain = word
        .chars()
        .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | '+'));
    if !plain || SHELL_WORDS.contains(&word) {
        return Ok(());
    }
    let found = if word.contains('/') {
        Path::new(word).is_file()
    } else {
        on_path(word)
    };
    if found {
        return Ok(());
    }
    Err(Error::input(if word.contains('/') {
        format!("--agent-cmd: `{word}` is no file")
    } else if Path::new(word).is_file() {
        format!("--agent-cmd: `{word}` is not on PATH; the file beside you is `./{word}`")
    } else {
        format!("--agent-cmd: `{word}` is not found on PATH")
    }))
}

/// The fallback agents of `[defaults] fallback_agents`, resolved and installed; an unknown or
/// missing one is refused naming the key.
pub fn fallbacks(settings: &Settings, primary: &AgentSpec) -> Result<Vec<AgentSpec>> {
    let origin = "[defaults] fallback_agents";
    let mut out: Vec<AgentSpec> = Vec::new();
    for name in &settings.defaults.fallback_agents {
        if *name == primary.name || out.iter().any(|a| a.name == *name) {
            continue;
        }
        let spec = named(settings, name).ok_or_else(|| unknown(settings, origin, name))?;
        check_installed_for(settings, &spec, origin)?;
        out.push(spec);
    }
    Ok(out)
}

fn check_installed_for(settings: &Settings, spec: &AgentSpec, origin: &str) -> Result<()> {
    match preset_program(settings, spec) {
        Some(program) if !on_path(program) => Err(Error::input(format!(
            "{origin}: the `{program}` CLI is not on PATH (install it, or pick another agent with --agent NAME or --agent-cmd CMD)"
        ))),
        _ => Ok(()),
    }
}

/// An `--agent-cmd` whose program is a relative path (`./my-agent.sh`, `bin/agent`) that exists
/// from the directory the user typed it in (`cwd`): the command with that word made absolute,
/// and the path. The agent runs in the artifact directory, where the relative path would name
/// nothing; the user meant the file beside them, as with every other CLI. `None`: the command is
/// left as it is (a name on `PATH`, an absolute path, or nothing there).
#[must_use]
pub fn anchor_program(
    cmd: &str,
    cwd: &Path,
    exists: impl Fn(&Path) -> bool,
) -> Option<(String, std::path::PathBuf)> {
    let word = cmd
        .split_whitespace()
        .find(|w| !w.contains('=') && *w != "env" && *w != "exec")?;
    if word.starts_with('/') || !word.contains('/') || word.contains(['\'', '"', '$', '`']) {
        return None;
    }
    let full = std::path::absolute(cwd.join(word)).ok()?;
    if !exists(&full) {
        return None;
    }
    let at = cmd.find(word)?;
    let mut out = String::with_capacity(cmd.len() + full.as_os_str().len());
    out.push_str(&cmd[..at]);
    out.push_str(&shell_quote(&full));
    out.push_str(&cmd[at + word.len()..]);
    Some((out, full))
}

/// Single-quote a path for `sh`.
#[must_use]
pub fn shell_quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', r"'\''"))
}

/// The command line with `{prompt_file}` expanded.
#[must_use]
pub fn command_line(table: &AgentTable, prompt_file: &Path) -> String {
    table
        .command
        .replace("{prompt_file}", &shell_quote(prompt_file))
}

#[cfg(test)]
mod anchor_tests {
    use super::*;

    #[test]
    fn a_relative_program_is_taken_from_where_the_user_typed_it() {
        let cwd = Path::new("/home/me/proj");
        let there = |p: &Path| {
            p == Path::new("/home/me/proj/my-agent.sh") || p == Path::new("/home/me/proj/bin/a b")
        };
        let table: &[(&str, Option<&str>)] = &[
            ("./my-agent.sh", Some("'/home/me/proj/my-agent.sh'")),
            (
                "FOO=1 ./my-agent.sh --yes",
                Some("FOO=1 '/home/me/proj/my-agent.sh' --yes"),
            ),
            (
                "env X=2 ./my-agent.sh",
                Some("env X=2 '/home/me/proj/my-agent.sh'"),
            ),
            // On PATH, absolute, or not there: left as it is.
            ("claude -p", None),
            ("/usr/bin/agent", None),
            ("./missing.sh", None),
        ];
        for (cmd, want) in table {
            assert_eq!(
                anchor_program(cmd, cwd, there).map(|(c, _)| c).as_deref(),
                *want,
                "{cmd}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    /// The flags a preset passes (`--x`, `-x`; the `-` stdin argument is not a flag).
    fn flags(command: &str) -> Vec<&str> {
        command
            .split_whitespace()
            .filter(|w| w.starts_with('-') && *w != "-")
            .map(|w| w.split('=').next().unwrap_or(w))
            .collect()
    }

    #[test]
    fn every_preset_flag_exists_in_the_cli_it_names() {
        let helps = [
            (
                "claude",
                include_str!("../../tests/fixtures/cli-help/claude-code-2.1.197-help.txt"),
            ),
            (
                "codex",
                include_str!("../../tests/fixtures/cli-help/codex-0.169.0-exec-help.txt"),
            ),
            (
                "gemini",
                include_str!("../../tests/fixtures/cli-help/gemini-cli-0.61.0-help.txt"),
            ),
            (
                "opencode",
                include_str!("../../tests/fixtures/cli-help/opencode-1.18.33-run-help.txt"),
            ),
            (
                "amp",
                include_str!("../../tests/fixtures/cli-help/amp-0.0.1790142911-help.txt"),
            ),
            (
                "aider",
                include_str!("../../tests/fixtures/cli-help/aider-chat-0.86.2-help.txt"),
            ),
        ];
        for (name, help) in helps {
            let command = preset(name).unwrap().command;
            for flag in flags(&command) {
                let listed = help.lines().any(|l| {
                    l.split(|c: char| c.is_whitespace() || c == ',')
                        .any(|w| w == flag || w.starts_with(&format!("{flag}=")))
                });
                assert!(listed, "`{flag}` of the {name} preset is not in its --help");
            }
        }
        assert_eq!(flags("codex exec --full-auto -"), ["--full-auto"]);
        assert!(
            !include_str!("../../tests/fixtures/cli-help/codex-0.169.0-exec-help.txt")
                .contains("--full-auto"),
            "the fixture proves the old flag is gone"
        );
    }

    use super::*;

    #[test]
    fn agent_cmd_wins_and_names_resolve() {
        let mut s = Settings::default();
        s.agents
            .insert("mine".into(), AgentEntry::Command("my-agent".into()));
        assert_eq!(
            resolve(&s, Some("mine"), Some("x y"))
                .unwrap()
                .table
                .command,
            "x y"
        );
        assert_eq!(
            resolve(&s, Some("mine"), None).unwrap().table.command,
            "my-agent"
        );
        assert!(
            resolve(&s, Some("claude"), None)
                .unwrap()
                .table
                .command
                .starts_with("claude -p")
        );
        assert_eq!(resolve(&s, None, None).unwrap().name, "claude");
    }

    #[test]
    fn unknown_agent_names_the_flag() {
        let e = resolve(&Settings::default(), Some("nope"), None).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.to_string().starts_with("--agent: unknown agent `nope`"),
            "{e}"
        );
    }

    #[test]
    fn prompt_file_is_quoted() {
        let t = AgentEntry::Command("run --file {prompt_file}".into()).to_table();
        assert_eq!(
            command_line(&t, Path::new("/a b/it's.md")),
            r"run --file '/a b/it'\''s.md'"
        );
    }
}
