//! Which agent runs next when agents hit their usage limits (`[defaults] fallback_agents`): the
//! loop's own agent whenever it is not limited, else the first fallback that is not, else — all
//! limited — a wait for the earliest reset. An agent's limit ends at the reset its CLI named (or
//! the backoff when it named none). Pure: the clock is passed in.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

/// What to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// Run this agent.
    Run(String),
    /// Every agent is limited: wait until this time, then run this one.
    Wait(DateTime<Utc>, String),
}

/// The agent for the next run.
#[must_use]
pub fn choose(
    primary: &str,
    fallbacks: &[String],
    limited: &BTreeMap<String, DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Choice {
    let order = std::iter::once(primary).chain(fallbacks.iter().map(String::as_str));
    let free = |name: &str| limited.get(name).is_none_or(|until| *until <= now);
    if let Some(name) = order.clone().find(|n| free(n)) {
        return Choice::Run(name.to_string());
    }
    let (name, until) = order
        .filter_map(|n| limited.get(n).map(|u| (n, *u)))
        .min_by_key(|(_, u)| *u)
        .unwrap_or((primary, now));
    Choice::Wait(until, name.to_string())
}

/// The limits still in force at `now` (those past their reset are forgotten).
#[must_use]
pub fn in_force(
    limited: &BTreeMap<String, DateTime<Utc>>,
    now: DateTime<Utc>,
) -> BTreeMap<String, DateTime<Utc>> {
    limited
        .iter()
        .filter(|(_, until)| **until > now)
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn the_primary_first_then_the_first_free_fallback_then_the_earliest_reset() {
        let now = Utc.with_ymd_and_hms(2026, 11, 25, 3, 0, 0).unwrap();
        let at = |m: i64| now + chrono::Duration::minutes(m);
        let fb = vec!["codex".to_string(), "gemini".to_string()];
        let lim = |pairs: &[(&str, i64)]| -> BTreeMap<String, DateTime<Utc>> {
            pairs
                .iter()
                .map(|(n, m)| ((*n).to_string(), at(*m)))
                .collect()
        };
        let cases: [(BTreeMap<String, DateTime<Utc>>, Choice); 6] = [
            (lim(&[]), Choice::Run("claude".into())),
            (lim(&[("claude", 60)]), Choice::Run("codex".into())),
            (
                lim(&[("claude", 60), ("codex", 5)]),
                Choice::Run("gemini".into()),
            ),
            // The primary's reset passed: back to it, whatever the fallbacks say.
            (
                lim(&[("claude", -1), ("codex", 5)]),
                Choice::Run("claude".into()),
            ),
            (lim(&[("claude", 0)]), Choice::Run("claude".into())),
            (
                lim(&[("claude", 60), ("codex", 30), ("gemini", 45)]),
                Choice::Wait(at(30), "codex".into()),
            ),
        ];
        for (limited, want) in cases {
            assert_eq!(choose("claude", &fb, &limited, now), want, "{limited:?}");
        }
        // Without fallbacks a limited primary is waited for.
        assert_eq!(
            choose("claude", &[], &lim(&[("claude", 60)]), now),
            Choice::Wait(at(60), "claude".into())
        );
        assert_eq!(
            in_force(&lim(&[("claude", -1), ("codex", 5)]), now),
            lim(&[("codex", 5)])
        );
    }
}
