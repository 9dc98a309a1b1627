//! `[agents]` and `[evaluators]` entries. An agent is a command line or a table; unknown keys in
//! either are refused like everywhere else.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};

/// How a producer returns a revised document in a gate revision round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum RevisionOutput {
    /// The complete revised document on stdout (seed semantics).
    #[default]
    Stdout,
    /// The agent edits the file; the loop reads it back.
    File,
}

/// How to read the agent's output for cost, tokens and result text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum OutputFormat {
    /// Plain text; nothing to parse.
    #[default]
    Plain,
    /// `claude -p --output-format json`.
    ClaudeJson,
    /// `codex exec` plain output.
    Codex,
    /// aider's chat output.
    Aider,
    /// `gemini --output-format json`: one (pretty-printed) JSON document with `response` and
    /// `stats.models.*.tokens`.
    GeminiJson,
}

/// An agent in table form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentTable {
    /// The command line, run through `sh -c`. `{prompt_file}` expands to the prompt's path.
    pub command: String,
    /// Feed the prompt on stdin (default true).
    #[serde(default = "yes")]
    pub stdin: bool,
    /// How revision rounds return the document.
    #[serde(default)]
    pub revision_output: RevisionOutput,
    /// How to parse the agent's output.
    #[serde(default)]
    pub output_format: OutputFormat,
    /// Working directory, relative to the artifact dir (default: the artifact dir).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Extra environment variables.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// The model it uses, to price the tokens it reports (`[prices]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

fn yes() -> bool {
    true
}

/// An `[agents]` entry: `name = "command line"` or `name = { command = "...", ... }`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum AgentEntry {
    /// Just a command line.
    Command(String),
    /// A table with options.
    Table(AgentTable),
}

impl<'de> Deserialize<'de> for AgentEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let v = toml::Value::deserialize(d)?;
        match v {
            toml::Value::String(s) => Ok(AgentEntry::Command(s)),
            toml::Value::Table(_) => AgentTable::deserialize(v)
                .map(AgentEntry::Table)
                .map_err(|e| D::Error::custom(e.message().replace('\n', " "))),
            other => Err(D::Error::custom(format!(
                "an agent is a command string or a table, not a {}",
                other.type_str()
            ))),
        }
    }
}

impl AgentEntry {
    /// The entry as a table (a bare command gets the defaults).
    #[must_use]
    pub fn to_table(&self) -> AgentTable {
        match self {
            AgentEntry::Command(c) => AgentTable {
                command: c.clone(),
                stdin: true,
                revision_output: RevisionOutput::Stdout,
                output_format: OutputFormat::Plain,
                cwd: None,
                env: BTreeMap::new(),
                model: None,
            },
            AgentEntry::Table(t) => t.clone(),
        }
    }
}

/// Evaluator backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EvaluatorKind {
    /// Any CLI: prompt on stdin, answer on stdout.
    Command,
    /// Ollama's `/api/chat`.
    Ollama,
    /// An OpenAI-compatible `/v1/chat/completions`.
    Openai,
    /// An Anthropic-style `/v1/messages`.
    Anthropic,
    /// Built-in, deterministic, offline.
    Heuristic,
}

impl EvaluatorKind {
    /// The lowercase name, as in the settings file.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            EvaluatorKind::Command => "command",
            EvaluatorKind::Ollama => "ollama",
            EvaluatorKind::Openai => "openai",
            EvaluatorKind::Anthropic => "anthropic",
            EvaluatorKind::Heuristic => "heuristic",
        }
    }
}

/// An `[evaluators.NAME]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvaluatorEntry {
    /// The backend.
    pub kind: EvaluatorKind,
    /// Command line (kind = command).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Base URL (ollama, openai).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Model name (ollama, openai).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Custom prompt template path (checked for contamination signals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// Per-request timeout, seconds.
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    /// Retries after a failed request.
    #[serde(default = "default_retries")]
    pub retries: u32,
    /// Environment variable holding an API key, sent as a bearer token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
}

fn default_timeout() -> u64 {
    120
}
fn default_retries() -> u32 {
    2
}

impl EvaluatorEntry {
    /// The built-in heuristic evaluator.
    #[must_use]
    pub fn heuristic() -> Self {
        Self {
            kind: EvaluatorKind::Heuristic,
            command: None,
            url: None,
            model: None,
            template: None,
            timeout_secs: default_timeout(),
            retries: default_retries(),
            api_key_env: None,
        }
    }

    /// What a bad entry lacks, as a message naming the key.
    pub fn check(&self, name: &str) -> Result<(), String> {
        let need = |field: &str, v: &Option<String>| match v {
            Some(s) if !s.trim().is_empty() => Ok(()),
            _ => Err(format!(
                "[evaluators.{name}] kind = \"{}\" needs `{field}`",
                self.kind.as_str()
            )),
        };
        match self.kind {
            EvaluatorKind::Command => need("command", &self.command),
            EvaluatorKind::Ollama | EvaluatorKind::Openai | EvaluatorKind::Anthropic => {
                need("model", &self.model)
            }
            EvaluatorKind::Heuristic => Ok(()),
        }
    }
}
