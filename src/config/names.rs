//! Names a setting refers to that another table must define: `[gate] pool` names evaluators,
//! `[types.<name>] agent` and `[defaults] planning_agent` an agent. The layers are parsed one by one and then merged, so such a
//! name is resolved only on the merged settings; a name nothing defines is refused naming the
//! file (the highest layer that sets the key) and its line, before any agent runs.

use std::path::PathBuf;

use super::{Settings, Sources, line_of_key};
use crate::error::{Error, Result};
use crate::sys::fsutil;

/// A name nothing defines: where it is set and why it is refused.
#[derive(Debug, PartialEq, Eq)]
pub struct Unknown {
    /// The table path (`["gate"]`, `["types", "notes"]`).
    pub table: Vec<String>,
    /// The key in that table.
    pub key: String,
    /// The message after `[table] key`.
    pub message: String,
}

/// The first name in `s` nothing defines: `[gate] pool` entries must be `[evaluators]` entries
/// or `heuristic`; a `[types]` entry's `agent` and `[defaults] planning_agent` an `[agents]`
/// entry or one of `presets`.
#[must_use]
pub fn unknown(s: &Settings, presets: &[&str]) -> Option<Unknown> {
    let evaluators = || {
        let mut known: Vec<&str> = s.evaluators.keys().map(String::as_str).collect();
        known.push("heuristic");
        known
    };
    if let Some(name) = s
        .gate
        .pool
        .iter()
        .find(|n| *n != "heuristic" && !s.evaluators.contains_key(*n))
    {
        return Some(Unknown {
            table: vec!["gate".into()],
            key: "pool".into(),
            message: format!(
                "names an unknown evaluator `{name}` (known: {})",
                evaluators().join(", ")
            ),
        });
    }
    let unknown_agent = |table: Vec<String>, key: &str, agent: &str| {
        let known_agent = s.agents.contains_key(agent) || presets.contains(&agent);
        (!known_agent).then(|| {
            let mut known: Vec<&str> = s.agents.keys().map(String::as_str).collect();
            known.extend(presets);
            Unknown {
                table,
                key: key.into(),
                message: format!(
                    "names an unknown agent `{agent}` (known: {})",
                    known.join(", ")
                ),
            }
        })
    };
    for (kind, def) in &s.types {
        if let Some(u) = def
            .agent
            .as_deref()
            .and_then(|agent| unknown_agent(vec!["types".into(), kind.clone()], "agent", agent))
        {
            return Some(u);
        }
    }
    let planner = s.defaults.planning_agent.as_deref()?;
    unknown_agent(vec!["defaults".into()], "planning_agent", planner)
}

/// Refuse the merged settings `s` when a name in them is defined nowhere (see [`unknown`]); the
/// error names the highest of `sources` that sets the key, with its line.
pub fn check_names(s: &Settings, sources: &Sources, presets: &[&str]) -> Result<()> {
    let Some(u) = unknown(s, presets) else {
        return Ok(());
    };
    let header = format!("[{}]", u.table.join("."));
    let at = where_set(sources, &u.table, &u.key)?.map_or_else(
        || "settings".to_string(),
        |(path, line)| match line {
            Some(l) => format!("{}:{l}", path.display()),
            None => path.display().to_string(),
        },
    );
    Err(Error::input(format!(
        "{at}: {header} {} {}",
        u.key, u.message
    )))
}

/// The highest layer whose file sets `table.key`, with the key's line when it is found.
fn where_set(
    sources: &Sources,
    table: &[String],
    key: &str,
) -> Result<Option<(PathBuf, Option<usize>)>> {
    let layers = [&sources.explicit, &sources.loop_file, &sources.home];
    for path in layers.into_iter().flatten() {
        let Some(text) = fsutil::read_opt(path)? else {
            continue;
        };
        let Ok(parsed) = toml::from_str::<toml::Table>(&text) else {
            continue;
        };
        let mut at = Some(&parsed);
        for t in table {
            at = at.and_then(|tb| tb.get(t)).and_then(toml::Value::as_table);
        }
        if at.is_some_and(|tb| tb.contains_key(key)) {
            return Ok(Some((path.clone(), line_of_key(&text, key))));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(text: &str) -> Settings {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn names_resolve_or_are_refused() {
        let presets = ["claude", "codex"];
        // (settings, refused as (table, key, message's end) or taken)
        type Want<'a> = Option<(&'a str, &'a str, &'a str)>;
        let table: [(&str, Want<'_>); 9] = [
            ("", None),
            ("[gate]\npool = [\"heuristic\"]\n", None),
            (
                "[gate]\npool = [\"a\"]\n[evaluators.a]\nkind = \"command\"\ncommand = \"x\"\n",
                None,
            ),
            (
                "[gate]\npool = [\"heuristic\", \"nosuch\"]\n",
                Some(("gate", "pool", "`nosuch` (known: heuristic)")),
            ),
            ("[types.notes]\nagent = \"codex\"\n", None),
            (
                "[agents]\nmine = \"run-it\"\n[types.notes]\nagent = \"mine\"\n",
                None,
            ),
            (
                "[types.notes]\nagent = \"cluade\"\n",
                Some(("types.notes", "agent", "`cluade` (known: claude, codex)")),
            ),
            ("[defaults]\nplanning_agent = \"claude\"\n", None),
            (
                "[defaults]\nplanning_agent = \"opus\"\n",
                Some((
                    "defaults",
                    "planning_agent",
                    "`opus` (known: claude, codex)",
                )),
            ),
        ];
        for (text, want) in table {
            let got = unknown(&settings(text), &presets);
            match (got, want) {
                (None, None) => {}
                (Some(u), Some((t, k, m))) => {
                    assert_eq!(u.table.join("."), t, "{text}");
                    assert_eq!(u.key, k, "{text}");
                    assert!(u.message.ends_with(m), "{text}: {}", u.message);
                }
                (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn the_error_names_the_file_that_set_the_key_and_its_line() {
        let d = tempfile::tempdir().unwrap();
        let home = d.path().join("home.toml");
        let lp = d.path().join("loop.toml");
        std::fs::write(&home, "[gate]\npool = [\"heuristic\"]\n").unwrap();
        std::fs::write(
            &lp,
            "[defaults]\nmax_rounds = 2\n\n[gate]\npool = [\"nosuch\"]\n",
        )
        .unwrap();
        let sources = Sources {
            home: Some(home),
            loop_file: Some(lp.clone()),
            explicit: None,
        };
        let s = super::super::load(&sources).unwrap();
        let e = check_names(&s, &sources, &["claude"]).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.to_string(),
            format!(
                "{}:5: [gate] pool names an unknown evaluator `nosuch` (known: heuristic)",
                lp.display()
            )
        );
    }
}
