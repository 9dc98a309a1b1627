//! Layered settings: built-in defaults < `$STUDIO_AGENTS_HOME/wiggum.toml` < the loop's
//! `wiggum/wiggum.toml` < `--config FILE` < flags. May import `sys` only. Each file is parsed on its own first, so a bad
//! key or value is reported with that file's path and line; then the tables are merged.

pub mod allow;
mod entries;
mod names;
mod settings;

use std::path::{Path, PathBuf};

pub use entries::{
    AgentEntry, AgentTable, EvaluatorEntry, EvaluatorKind, OutputFormat, RevisionOutput,
};
pub use names::check_names;
pub use settings::{
    Finish, ForgeKind, GateTarget, GitHooks, Hooks, Isolation, Notify, NotifyEvent, NotifySink,
    OPTIONAL_SECTIONS, OnGateFail, OnQuestion, Price, PromiseCheck, QualityWeights, Safety,
    SandboxMode, Settings, SinkKind, TypeDef, UnixSockets, code_weights, price_of,
};
#[cfg(test)]
pub use settings::{Network, NetworkRule, default_weights};

use crate::error::{Error, Result};
use crate::sys::fsutil;

/// The home directory of studio-agents: `$STUDIO_AGENTS_HOME`, else `~/.studio-agents`.
pub fn home_dir() -> Result<PathBuf> {
    let (var, home) = match std::env::var_os("STUDIO_AGENTS_HOME").filter(|h| !h.is_empty()) {
        Some(h) => ("STUDIO_AGENTS_HOME", PathBuf::from(h)),
        None => std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(|h| ("HOME", PathBuf::from(h).join(".studio-agents")))
            .ok_or_else(|| Error::input("neither STUDIO_AGENTS_HOME nor HOME is set"))?,
    };
    // A relative path is taken from the directory the command runs in, once: the daemon runs
    // in `/` and is handed the absolute path, so every process of a loop agrees on its home.
    std::path::absolute(&home).map_err(|e| Error::input(format!("{var} {}: {e}", home.display())))
}

/// The home to name in the commands a loop prints for people (`STUDIO_AGENTS_HOME=… studio-agents
/// …`): this process's, when it is not the default `$HOME/.studio-agents` (a shell without the
/// variable would find another home). `None` for the default.
#[must_use]
pub fn home_to_name() -> Option<PathBuf> {
    let home = home_dir().ok()?;
    let default = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .and_then(|h| std::path::absolute(PathBuf::from(h).join(".studio-agents")).ok());
    (default.as_ref() != Some(&home)).then_some(home)
}

/// The settings files to layer, lowest first. Missing optional files are skipped; a missing
/// `--config` file is an error.
#[derive(Debug, Default)]
pub struct Sources {
    /// `$STUDIO_AGENTS_HOME/wiggum.toml` (optional).
    pub home: Option<PathBuf>,
    /// The loop's `wiggum/wiggum.toml` (optional).
    pub loop_file: Option<PathBuf>,
    /// `--config FILE` (must exist).
    pub explicit: Option<PathBuf>,
}

/// Load and merge the layers into effective settings.
pub fn load(sources: &Sources) -> Result<Settings> {
    let mut merged = toml::Table::new();
    let layers = [
        (sources.home.as_deref(), false),
        (sources.loop_file.as_deref(), false),
        (sources.explicit.as_deref(), true),
    ];
    for (path, required) in layers {
        let Some(path) = path else { continue };
        let Some(table) = parse_layer(path, required)? else {
            continue;
        };
        deep_merge(&mut merged, table);
    }
    let settings: Settings =
        toml::Value::Table(merged)
            .try_into()
            .map_err(|e: toml::de::Error| {
                Error::input(format!("settings: {}", one_line(e.message())))
            })?;
    check(&settings, "settings", None)?;
    Ok(settings)
}

/// Parse one settings file alone: syntax, unknown keys, types and ranges, each reported as
/// `path:line:col: message`.
pub fn parse_layer(path: &Path, required: bool) -> Result<Option<toml::Table>> {
    let text = match fsutil::read_opt(path)? {
        Some(t) => t,
        None if required => {
            return Err(Error::input(format!(
                "{}: settings file not found",
                path.display()
            )));
        }
        None => return Ok(None),
    };
    parse_text(path, &text)?;
    let table: toml::Table = toml::from_str(&text).map_err(|e| locate(path, &text, &e))?;
    Ok(Some(table))
}

/// Settings from one file's text alone (read from `path`, named in errors), checked as a layer
/// is: what a process given just this file as its settings runs with.
pub fn parse_text(path: &Path, text: &str) -> Result<Settings> {
    let settings: Settings = toml::from_str(text).map_err(|e| locate(path, text, &e))?;
    check(&settings, &path.display().to_string(), Some(text))?;
    Ok(settings)
}

fn locate(path: &Path, text: &str, e: &toml::de::Error) -> Error {
    let at = match e.span() {
        Some(span) => {
            let (line, col) = line_col(text, span.start);
            format!("{}:{line}:{col}", path.display())
        }
        None => path.display().to_string(),
    };
    Error::input(format!("{at}: {}", one_line(e.message())))
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Tables merge key by key (recursively); any other value replaces the lower layer's.
fn deep_merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => deep_merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// A range check shared by files and flags: `Err` is the message tail after the key or flag.
pub fn check_unit(v: f64) -> std::result::Result<(), String> {
    if (0.0..=1.0).contains(&v) {
        Ok(())
    } else {
        Err(format!("must be between 0 and 1 (got {v})"))
    }
}

/// 0–10 scores.
pub fn check_score(v: f64) -> std::result::Result<(), String> {
    if (0.0..=10.0).contains(&v) {
        Ok(())
    } else {
        Err(format!("must be between 0 and 10 (got {v})"))
    }
}

/// Counts that must be at least 1.
pub fn check_positive(v: u64) -> std::result::Result<(), String> {
    if v >= 1 {
        Ok(())
    } else {
        Err("must be at least 1 (got 0)".into())
    }
}

/// A setting out of bounds: its table, its key, and what is wrong with it.
type Bad = (&'static str, String, String);

/// The `Bad` of `[table] key`, from what is wrong.
fn bad(table: &'static str, key: &str) -> impl Fn(String) -> Bad {
    move |msg| (table, key.to_string(), msg)
}

/// Whether the settings read from `origin` (its `text`, when there is one, names the line) are
/// within bounds.
fn check(s: &Settings, origin: &str, text: Option<&str>) -> Result<()> {
    let fail = |(table, key, msg): Bad| {
        let line = text
            .and_then(|t| line_of_key(t, &key))
            .map(|l| format!(":{l}"))
            .unwrap_or_default();
        Error::input(format!("{origin}{line}: [{table}] {key} {msg}"))
    };
    check_numbers(s).map_err(fail)?;
    check_sinks(s).map_err(fail)?;
    check_gate_weights(s).map_err(fail)?;
    check_evaluators(s, origin, text)
}

/// The counts, thresholds, limits and quality weights.
fn check_numbers(s: &Settings) -> std::result::Result<(), Bad> {
    let d = &s.defaults;
    check_positive(d.max_iterations.into()).map_err(bad("defaults", "max_iterations"))?;
    check_unit(d.quality_threshold).map_err(bad("defaults", "quality_threshold"))?;
    check_score(d.pass_threshold).map_err(bad("defaults", "pass_threshold"))?;
    check_positive(d.max_rounds.into()).map_err(bad("defaults", "max_rounds"))?;
    check_positive(s.safety.max_time_per_iteration)
        .map_err(bad("safety", "max_time_per_iteration"))?;
    check_positive(s.validation.timeout_secs).map_err(bad("validation", "timeout_secs"))?;
    if s.safety.max_cost_per_loop < 0.0 {
        return Err(bad("safety", "max_cost_per_loop")(
            "must not be negative".into(),
        ));
    }
    check_score(s.gate.focus_threshold).map_err(bad("gate", "focus_threshold"))?;
    let q = &s.quality_metrics;
    for (key, w) in [
        ("completeness_weight", q.completeness_weight),
        ("verification_weight", q.verification_weight),
        ("clarity_weight", q.clarity_weight),
        ("actionability_weight", q.actionability_weight),
    ] {
        check_unit(w).map_err(bad("quality_metrics", key))?;
    }
    Ok(())
}

/// Every notification sink but the desktop's names the variable that holds its URL.
fn check_sinks(s: &Settings) -> std::result::Result<(), Bad> {
    for (n, sink) in s.notify.sinks.iter().enumerate() {
        let named = sink
            .url_env
            .as_deref()
            .is_some_and(|v| !v.trim().is_empty());
        if sink.kind != SinkKind::Desktop && !named {
            return Err(bad("notify", "sinks")(format!(
                "entry {}: url_env must name the environment variable that holds its URL (a URL is never written in a settings file)",
                n + 1
            )));
        }
    }
    Ok(())
}

/// The gate's weights: at least one, none negative, each a dimension of the document rubric or
/// a code loop's (docs/code-loops.md).
fn check_gate_weights(s: &Settings) -> std::result::Result<(), Bad> {
    if s.gate.weights.is_empty() || s.gate.weights.values().any(|w| *w < 0.0) {
        return Err(bad("gate", "weights")(
            "must name at least one dimension, none negative".into(),
        ));
    }
    let mut dims = settings::default_weights();
    dims.extend(settings::code_weights());
    if let Some(k) = s.gate.weights.keys().find(|k| !dims.contains_key(*k)) {
        let known: Vec<&str> = dims.keys().map(String::as_str).collect();
        return Err(bad("gate.weights", k)(format!(
            "is not a dimension of the rubric (known: {})",
            known.join(", ")
        )));
    }
    Ok(())
}

/// Each evaluator's own checks; the line is its table's.
fn check_evaluators(s: &Settings, origin: &str, text: Option<&str>) -> Result<()> {
    for (name, e) in &s.evaluators {
        e.check(name).map_err(|m| {
            let line = text.and_then(|t| line_of_key(t, &format!("[evaluators.{name}]")));
            Error::input(format!(
                "{origin}{}: {m}",
                line.map(|l| format!(":{l}")).unwrap_or_default()
            ))
        })?;
    }
    Ok(())
}

/// The 1-based line where `key = ...` (or a `[table]` header) first appears.
fn line_of_key(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .position(|l| {
            let l = l.trim_start();
            if key.starts_with('[') {
                return l.starts_with(key);
            }
            l.strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
        .map(|i| i + 1)
}

/// The effective settings as TOML (written to the loop's `wiggum.toml` at start).
pub fn to_toml(s: &Settings) -> Result<String> {
    toml::to_string_pretty(s).map_err(|e| Error::runtime(format!("serialise settings: {e}")))
}

#[cfg(test)]
mod tests;
