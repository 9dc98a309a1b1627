//! Which agent a loop runs, decided from where the choice can come from, in order: the flags
//! (`--agent-cmd` over `--agent`), the agent a delegation ran on this artifact (a fresh loop
//! only), the artifact type's own agent; nothing of these leaves `[defaults] agent`
//! (`agent::spec::resolve`). Pure.

/// The agent a delegation's record names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delegated {
    /// A preset or an `[agents]` entry, by name.
    Named(String),
    /// A bare command (`--agent-cmd` when it delegated).
    Command(String),
}

/// What to resolve: a name, a command (a command wins, as `--agent-cmd` does), or neither.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentChoice {
    /// An agent by name.
    pub name: Option<String>,
    /// A command line.
    pub command: Option<String>,
}

/// Decide. `delegated` counts only when neither flag is given (the caller passes it for a fresh
/// loop only); a delegated name `known` does not name is left out; the type's agent counts only
/// without flags.
#[must_use]
pub fn resolve_agent(
    flag_agent: Option<&str>,
    flag_cmd: Option<&str>,
    delegated: Option<&Delegated>,
    type_agent: Option<&str>,
    known: impl Fn(&str) -> bool,
) -> AgentChoice {
    let no_flags = flag_agent.is_none() && flag_cmd.is_none();
    let (delegated_name, delegated_cmd) = match delegated.filter(|_| no_flags) {
        Some(Delegated::Named(n)) if known(n) => (Some(n.as_str()), None),
        Some(Delegated::Command(c)) => (None, Some(c.as_str())),
        _ => (None, None),
    };
    let type_agent = type_agent.filter(|_| no_flags);
    AgentChoice {
        name: flag_agent
            .or(delegated_name)
            .or(type_agent)
            .map(str::to_string),
        command: flag_cmd.or(delegated_cmd).map(str::to_string),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_then_the_delegation_then_the_type() {
        let known = |n: &str| ["claude", "codex", "mine"].contains(&n);
        let named = |n: &str| Delegated::Named(n.into());
        let cmd = |c: &str| Delegated::Command(c.into());
        let want = |name: Option<&str>, command: Option<&str>| AgentChoice {
            name: name.map(str::to_string),
            command: command.map(str::to_string),
        };
        type Sources<'a> = (
            Option<&'a str>,
            Option<&'a str>,
            Option<Delegated>,
            Option<&'a str>,
        );
        let cases: Vec<(Sources<'_>, AgentChoice)> = vec![
            ((None, None, None, None), want(None, None)),
            (
                (Some("codex"), None, Some(named("claude")), Some("mine")),
                want(Some("codex"), None),
            ),
            (
                (None, Some("./a.sh"), Some(named("claude")), Some("mine")),
                want(None, Some("./a.sh")),
            ),
            // Both flags: the command wins later, the name is kept for the record.
            (
                (Some("codex"), Some("./a.sh"), None, None),
                want(Some("codex"), Some("./a.sh")),
            ),
            (
                (None, None, Some(named("claude")), Some("mine")),
                want(Some("claude"), None),
            ),
            (
                (None, None, Some(cmd("sh agent.sh")), Some("mine")),
                want(Some("mine"), Some("sh agent.sh")),
            ),
            // A delegated name the settings no longer know: the type's agent.
            (
                (None, None, Some(named("gone")), Some("mine")),
                want(Some("mine"), None),
            ),
            ((None, None, None, Some("mine")), want(Some("mine"), None)),
        ];
        for ((agent, command, delegated, kind), expect) in cases {
            let got = resolve_agent(agent, command, delegated.as_ref(), kind, known);
            assert_eq!(got, expect, "{agent:?} {command:?} {delegated:?} {kind:?}");
        }
    }
}
