//! Settings the agent could have written are not taken silently. The loop's
//! `wiggum/wiggum.toml` lies in the agent's reach: an agent that rewrites it (`sandbox = "off"`,
//! `env_allow = ["*"]`, a hook) would get, at the next `start`, a loop without its harness. So
//! the bytes a person last allowed are kept under `$STUDIO_AGENTS_HOME`, and a file that differs
//! from them is shown as a diff of keys and refused until the person runs `wiggum allow <topic>`
//! (the way direnv asks again for a changed `.envrc`). This module is the pure part: the diff, and
//! which changes weaken the harness.

use std::collections::BTreeMap;
use std::fmt;

/// One changed key, dotted (`safety.sandbox`), with its values before and after (TOML text;
/// `None` where the key was not set).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyChange {
    /// The dotted key.
    pub key: String,
    /// Its value in the allowed file.
    pub before: Option<String>,
    /// Its value now.
    pub after: Option<String>,
    /// Whether the change loosens what confines the agent or what bounds the loop: the sandbox
    /// off, wider `writable`/`readable`/`env_allow`/`network`, a raised or removed ceiling, a
    /// new or changed command (agents, evaluators, hooks, validation, types).
    pub weakens: bool,
}

impl fmt::Display for KeyChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = |v: &Option<String>| v.clone().unwrap_or_else(|| "(unset)".into());
        write!(
            f,
            "{} {}: {} → {}{}",
            match (&self.before, &self.after) {
                (None, _) => '+',
                (_, None) => '-',
                _ => '~',
            },
            self.key,
            v(&self.before),
            v(&self.after),
            if self.weakens {
                "  (weakens the harness)"
            } else {
                ""
            }
        )
    }
}

/// Flatten a table to dotted keys and their values as TOML text (arrays kept whole).
fn flatten(prefix: &str, t: &toml::Table, out: &mut BTreeMap<String, toml::Value>) {
    for (k, v) in t {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            toml::Value::Table(sub) => flatten(&key, sub, out),
            other => {
                out.insert(key, other.clone());
            }
        }
    }
}

/// The keys that differ between the allowed settings and the ones found, in key order.
#[must_use]
pub fn diff(allowed: &toml::Table, found: &toml::Table) -> Vec<KeyChange> {
    let (mut a, mut b) = (BTreeMap::new(), BTreeMap::new());
    flatten("", allowed, &mut a);
    flatten("", found, &mut b);
    let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| KeyChange {
            key: k.clone(),
            before: a.get(k).map(|v| v.to_string()),
            after: b.get(k).map(|v| v.to_string()),
            weakens: weakens(k, a.get(k), b.get(k)),
        })
        .collect()
}

/// Prefixes whose every change names a command or a program that runs (outside the agent's
/// sandbox, for hooks, validation and command evaluators), or an agent that runs.
const COMMANDS: [&str; 11] = [
    "agents.",
    "evaluators.",
    "hooks.",
    "validation.",
    "types.",
    "gate.producer",
    "gate.pool",
    "defaults.agent",
    "defaults.planning_agent",
    "defaults.fallback_agents",
    "defaults.evaluator",
];

fn strings(v: Option<&toml::Value>) -> Vec<String> {
    match v {
        Some(toml::Value::Array(a)) => a.iter().map(ToString::to_string).collect(),
        Some(other) => vec![other.to_string()],
        None => Vec::new(),
    }
}

fn number(v: Option<&toml::Value>) -> Option<f64> {
    match v? {
        toml::Value::Integer(i) => Some(*i as f64),
        toml::Value::Float(f) => Some(*f),
        _ => None,
    }
}

/// Whether changing `key` from `before` to `after` loosens the harness or the loop's bounds.
fn weakens(key: &str, before: Option<&toml::Value>, after: Option<&toml::Value>) -> bool {
    if COMMANDS.iter().any(|p| key.starts_with(p)) {
        return after.is_some();
    }
    let added = || {
        let was = strings(before);
        strings(after).iter().any(|x| !was.contains(x))
    };
    match key {
        "safety.sandbox" => {
            let was = before.and_then(toml::Value::as_str).unwrap_or("landlock");
            let now = after.and_then(toml::Value::as_str).unwrap_or("landlock");
            now == "off" || (was == "required" && now != "required")
        }
        "safety.writable" | "safety.env_allow" => added(),
        // `deny_tools` narrows what the agent may do: an entry gone lets it do more.
        "safety.deny_tools" => {
            let now = strings(after);
            strings(before).iter().any(|x| !now.contains(x))
        }
        "safety.unix_sockets" => after.and_then(toml::Value::as_str) == Some("allow"),
        // `readable` narrows reads when set: an entry added or the list emptied reads more.
        "safety.readable" => {
            let now = strings(after);
            added() || (now.is_empty() && !strings(before).is_empty())
        }
        "safety.network" => {
            let now = after.and_then(toml::Value::as_str);
            now == Some("any") || after.is_none() || (now.is_none() && added())
        }
        "git.hooks" => after.and_then(toml::Value::as_str) == Some("run"),
        // Where the branch is pushed and the forge's token is sent.
        "finish.api" | "finish.token_env" | "finish.remote" | "finish.repository"
        | "finish.forge" => after.is_some(),
        "finish.pull_request" => after.and_then(toml::Value::as_bool) == Some(true),
        k if k.starts_with("safety.max_") => {
            // A ceiling raised, or set to 0 (none) or removed where one was set.
            match (number(before), number(after)) {
                (Some(b), Some(a)) => b != 0.0 && (a == 0.0 || a > b),
                (Some(b), None) => b != 0.0,
                (None, Some(_)) => false,
                (None, None) => false,
            }
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> toml::Table {
        s.parse().unwrap()
    }

    fn changes(a: &str, b: &str) -> Vec<(String, bool)> {
        diff(&t(a), &t(b))
            .into_iter()
            .map(|c| (c.key, c.weakens))
            .collect()
    }

    #[test]
    fn the_same_settings_differ_in_nothing() {
        let s = "[safety]\nsandbox = \"landlock\"\n[defaults]\nmax_iterations = 3\n";
        assert!(diff(&t(s), &t(s)).is_empty());
    }

    #[test]
    fn what_weakens_the_harness_is_named_as_such() {
        let base = "[safety]\nsandbox = \"required\"\nnetwork = [443]\nwritable = []\nreadable = [\"/src\"]\nenv_allow = []\nmax_cost_per_loop = 10.0\nmax_memory_mb = 2048\n[git]\nhooks = \"skip\"\n";
        let table: &[(&str, &str, bool)] = &[
            ("safety.sandbox", "sandbox = \"off\"", true),
            ("safety.sandbox", "sandbox = \"landlock\"", true),
            ("safety.network", "network = \"any\"", true),
            ("safety.network", "network = [443, 22]", true),
            ("safety.network", "network = \"none\"", false),
            ("safety.network", "network = []", false),
            ("safety.writable", "writable = [\"/home/me\"]", true),
            ("safety.readable", "readable = []", true),
            (
                "safety.readable",
                "readable = [\"/src\", \"/home/me/.ssh\"]",
                true,
            ),
            ("safety.env_allow", "env_allow = [\"*\"]", true),
            ("safety.max_cost_per_loop", "max_cost_per_loop = 0.0", true),
            ("safety.max_cost_per_loop", "max_cost_per_loop = 50.0", true),
            ("safety.max_cost_per_loop", "max_cost_per_loop = 5.0", false),
            ("safety.max_memory_mb", "max_memory_mb = 1024", false),
        ];
        for (key, line, weak) in table {
            let table_name = "[safety]\n";
            let changed = base
                .lines()
                .map(|l| {
                    let k = l.split(" =").next().unwrap_or("");
                    if l.contains(" = ") && key.ends_with(&format!(".{k}")) {
                        line.to_string()
                    } else {
                        l.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join("\n");
            assert!(changed.contains(line), "{table_name}{line}");
            assert_eq!(
                changes(base, &changed),
                vec![(key.to_string(), *weak)],
                "{line}"
            );
        }
        assert_eq!(
            changes(base, &base.replace("hooks = \"skip\"", "hooks = \"run\"")),
            vec![("git.hooks".to_string(), true)]
        );
    }

    #[test]
    fn new_commands_weaken_and_are_listed_key_by_key() {
        let got = changes(
            "[defaults]\nmax_iterations = 3\n",
            "[defaults]\nmax_iterations = 3\nfallback_agents = [\"mine\"]\nevaluator = \"mine\"\n[gate]\nproducer = \"mine\"\npool = [\"mine\"]\n[safety]\ndeny_tools = []\n",
        );
        assert_eq!(
            got,
            vec![
                ("defaults.evaluator".to_string(), true),
                ("defaults.fallback_agents".to_string(), true),
                ("gate.pool".to_string(), true),
                ("gate.producer".to_string(), true),
                ("safety.deny_tools".to_string(), false),
            ],
            "every key naming an agent that runs"
        );
        assert_eq!(
            changes(
                "[safety]\ndeny_tools = [\"Bash\", \"WebFetch\"]\n",
                "[safety]\ndeny_tools = [\"Bash\"]\n"
            ),
            vec![("safety.deny_tools".to_string(), true)],
            "a tool no longer denied"
        );
        let got = changes(
            "[defaults]\nmax_iterations = 3\n",
            "[defaults]\nmax_iterations = 5\nplanning_agent = \"mine\"\n[hooks]\non_iteration_end = \"curl x\"\n[validation]\ncommands = [\"make\"]\n[agents]\nmine = \"evil --yes\"\n",
        );
        assert_eq!(
            got,
            vec![
                ("agents.mine".to_string(), true),
                ("defaults.max_iterations".to_string(), false),
                ("defaults.planning_agent".to_string(), true),
                ("hooks.on_iteration_end".to_string(), true),
                ("validation.commands".to_string(), true),
            ]
        );
    }

    #[test]
    fn where_the_token_and_the_branch_go_weakens() {
        let got = changes(
            "[finish]\napi = \"https://git.example.org/api/v1\"\npull_request = true\n",
            "[finish]\napi = \"http://elsewhere.example/api/v1\"\ntoken_env = \"HOME\"\npull_request = false\nbase = \"dev\"\n",
        );
        assert_eq!(
            got,
            vec![
                ("finish.api".to_string(), true),
                ("finish.base".to_string(), false),
                ("finish.pull_request".to_string(), false),
                ("finish.token_env".to_string(), true),
            ]
        );
        assert_eq!(
            changes("", "[finish]\npull_request = true\n"),
            vec![("finish.pull_request".to_string(), true)]
        );
    }

    #[test]
    fn a_change_reads_as_one_line_with_both_values() {
        let c = &diff(
            &t("[safety]\nsandbox = \"landlock\"\n"),
            &t("[safety]\nsandbox = \"off\"\n"),
        )[0];
        assert_eq!(
            c.to_string(),
            "~ safety.sandbox: \"landlock\" → \"off\"  (weakens the harness)"
        );
        let removed = &diff(&t("[defaults]\nmax_iterations = 3\n"), &t(""))[0];
        assert_eq!(
            removed.to_string(),
            "- defaults.max_iterations: 3 → (unset)"
        );
    }
}
