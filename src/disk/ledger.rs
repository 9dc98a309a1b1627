//! What the loop has spent, kept in its records (`spend.json`), out of the agents' reach.
//!
//! `state.json` holds the spend too, but it lies in the loop's directory: an agent can write it
//! while it runs. The supervisor puts a changed state back after each run, but one killed in
//! between would start again from what the agent wrote there, and spend past its budget. A
//! start takes, for each count, the larger of the two: a state can raise what was spent, never
//! lower it. `forget` removes the ledger with the rest of the loop's records.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::state::Spend;
use crate::error::Result;
use crate::sys::fsutil;

/// The loop's spend as the supervisor last saved it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Ledger {
    /// The state's `cost_usd`.
    pub cost_usd: f64,
    /// The state's `spend`.
    pub spend: Spend,
}

impl Ledger {
    /// Write it to `path` through its spare (no file made or freed per save).
    ///
    /// # Errors
    /// When it cannot be written.
    pub fn write(&self, path: &Path) -> Result<()> {
        let json = serde_json::to_vec(self)
            .map_err(|e| crate::error::Error::runtime(format!("serialise the spend: {e}")))?;
        if let Some(dir) = path.parent() {
            fsutil::create_dir_all(dir)?;
        }
        crate::sys::spare::replace(path, &json, "atomic-after-temp-write")
    }

    /// The ledger at `path`; `None` when there is none or it does not parse.
    #[must_use]
    pub fn read(path: &Path) -> Option<Ledger> {
        let text = fsutil::read_opt(path).ok().flatten()?;
        serde_json::from_str(&text).ok()
    }

    /// The spend a start goes on from: for each count the larger of the state's (`cost_usd`,
    /// `spend`) and the ledger's; the recent costs of whichever spent more. Pure.
    #[must_use]
    pub fn merged(&self, cost_usd: f64, spend: Spend) -> (f64, Spend) {
        let more = |a: f64, b: f64| if b.is_finite() && b > a { b } else { a };
        let recent = if self.spend.cost_usd > spend.cost_usd {
            self.spend.recent.clone()
        } else {
            spend.recent
        };
        (
            more(cost_usd, self.cost_usd),
            Spend {
                cost_usd: more(spend.cost_usd, self.spend.cost_usd),
                tokens: spend.tokens.max(self.spend.tokens),
                known: spend.known.max(self.spend.known),
                unknown: spend.unknown.max(self.spend.unknown),
                recent,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spend(cost: f64, tokens: u64, known: u32, unknown: u32) -> Spend {
        Spend {
            cost_usd: cost,
            tokens,
            known,
            unknown,
            recent: std::iter::once(cost).collect(),
        }
    }

    #[test]
    fn a_state_can_raise_the_spend_a_start_goes_on_from_but_never_lower_it() {
        let kept = Ledger {
            cost_usd: 4.5,
            spend: spend(4.5, 9000, 6, 1),
        };
        // A state an agent zeroed: the ledger's counts.
        let (cost, s) = kept.merged(0.0, Spend::default());
        assert_eq!(cost, 4.5);
        assert_eq!(s, spend(4.5, 9000, 6, 1));
        // A state ahead of the ledger (a run's cost saved in the state, the ledger not yet):
        // the state's.
        let (cost, s) = kept.merged(5.0, spend(5.0, 9500, 7, 1));
        assert_eq!(cost, 5.0);
        assert_eq!(s, spend(5.0, 9500, 7, 1));
        // No ledger (a loop of an earlier version): the state's as it is.
        let (cost, s) = Ledger::default().merged(1.25, spend(1.25, 10, 1, 0));
        assert_eq!((cost, s), (1.25, spend(1.25, 10, 1, 0)));
    }

    #[test]
    fn the_ledger_is_read_back_as_written_and_garbage_is_none() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("records/spend.json");
        assert_eq!(Ledger::read(&path), None);
        let kept = Ledger {
            cost_usd: 2.0,
            spend: spend(2.0, 1, 1, 0),
        };
        kept.write(&path).unwrap();
        kept.write(&path).unwrap();
        assert_eq!(Ledger::read(&path), Some(kept));
        std::fs::write(&path, "{not json").unwrap();
        assert_eq!(Ledger::read(&path), None);
    }
}
