//! What a loop has spent and whether it may spend more: cost as the agents report it, else
//! tokens × a price table, else `unknown` (never `$0`); and the budgets — cost, tokens, wall
//! time — checked before every agent run and gate round, including the run about to start
//! (a budget is a ceiling, not a suggestion), and the time left bounding the run itself. Pure.

use crate::config::Price;
pub use crate::disk::state::Spend;

/// The cost of `tokens_in` + `tokens_out` at `price`, when there is one and tokens were reported.
#[must_use]
pub fn price(price: Option<Price>, tokens_in: Option<u64>, tokens_out: Option<u64>) -> Option<f64> {
    let p = price?;
    if tokens_in.is_none() && tokens_out.is_none() {
        return None;
    }
    #[allow(clippy::cast_precision_loss)]
    let mtok = |t: Option<u64>| t.unwrap_or(0) as f64 / 1e6;
    Some(mtok(tokens_in) * p.input_per_mtok + mtok(tokens_out) * p.output_per_mtok)
}

/// The budgets of a loop (0: none).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Budget {
    /// USD.
    pub max_cost: f64,
    /// Tokens.
    pub max_tokens: u64,
    /// Seconds of wall time for the whole loop.
    pub max_secs: u64,
}

/// Whether the loop must stop before its next paid run: which budget, and the figures.
#[must_use]
pub fn exhausted(spend: &Spend, elapsed_secs: u64, b: Budget) -> Option<String> {
    if b.max_cost > 0.0 {
        if spend.cost_usd >= b.max_cost {
            return Some(format!(
                "cost budget: ${:.4} spent of ${:.2}",
                spend.cost_usd, b.max_cost
            ));
        }
        if let Some(next) = spend.next_run()
            && spend.cost_usd + next > b.max_cost
        {
            return Some(format!(
                "cost budget: ${:.4} spent of ${:.2}, and the next run would cost about ${next:.4}",
                spend.cost_usd, b.max_cost
            ));
        }
    }
    if b.max_tokens > 0 && spend.tokens >= b.max_tokens {
        return Some(format!(
            "token budget: {} tokens used of {}",
            spend.tokens, b.max_tokens
        ));
    }
    if b.max_secs > 0 && elapsed_secs >= b.max_secs {
        return Some(format!("time budget: {elapsed_secs} s of {} s", b.max_secs));
    }
    None
}

/// The wall limit of a run about to start: its own (`[safety] max_time_per_iteration`), cut to
/// what is left of the loop's time budget (`max_loop_secs`, 0: none) after `elapsed`; `None`
/// when nothing is left, so the run must not start.
#[must_use]
pub fn run_limit(
    own: std::time::Duration,
    max_loop_secs: u64,
    elapsed: std::time::Duration,
) -> Option<std::time::Duration> {
    if max_loop_secs == 0 {
        return Some(own);
    }
    let left = std::time::Duration::from_secs(max_loop_secs).checked_sub(elapsed)?;
    (!left.is_zero()).then(|| own.min(left))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_ends_by_the_loops_time_budget_and_none_starts_past_it() {
        let ms = std::time::Duration::from_millis;
        // (own limit, loop budget s, elapsed, limit of the run)
        let table = [
            (ms(12_000), 0, ms(99_000), Some(ms(12_000))),
            (ms(12_000), 60, ms(1_000), Some(ms(12_000))),
            (ms(12_000), 5, ms(1_600), Some(ms(3_400))),
            (ms(12_000), 5, ms(4_999), Some(ms(1))),
            (ms(12_000), 5, ms(5_000), None),
            (ms(12_000), 5, ms(13_600), None),
        ];
        for (own, budget, elapsed, want) in table {
            assert_eq!(
                run_limit(own, budget, elapsed),
                want,
                "{own:?} {budget} {elapsed:?}"
            );
        }
    }

    fn spend(costs: &[Option<f64>]) -> Spend {
        let mut s = Spend::default();
        for c in costs {
            s.add(*c, Some(100), true);
        }
        s
    }

    #[test]
    fn spend_is_shown_as_known_unknown_or_both() {
        assert_eq!(spend(&[]).shown(), "$0.0000");
        assert_eq!(spend(&[None, None]).shown(), "unknown");
        assert_eq!(spend(&[Some(0.25), Some(0.5)]).shown(), "$0.7500");
        assert_eq!(spend(&[Some(0.25), None]).shown(), "$0.2500 + unknown");
    }

    #[test]
    fn budgets_stop_before_a_run_that_would_cross_them() {
        let no = Budget::default();
        let cost = Budget {
            max_cost: 1.0,
            ..no
        };
        for (costs, tokens, secs, budget, want) in [
            (vec![Some(0.4)], 0, 0, cost, None),
            (
                vec![Some(0.4), Some(0.4)],
                0,
                0,
                cost,
                Some("the next run would cost about $0.4000"),
            ),
            (vec![Some(1.2)], 0, 0, cost, Some("$1.2000 spent of $1.00")),
            (vec![None, None], 0, 0, cost, None),
            (
                vec![],
                5_000,
                0,
                Budget {
                    max_tokens: 4_000,
                    ..no
                },
                Some("5000 tokens used of 4000"),
            ),
            (
                vec![],
                0,
                61,
                Budget { max_secs: 60, ..no },
                Some("61 s of 60 s"),
            ),
            (vec![Some(9.0)], 9_999, 9_999, no, None),
        ] {
            let mut s = spend(&costs);
            s.tokens = s.tokens.max(tokens);
            let got = exhausted(&s, secs, budget);
            match want {
                None => assert_eq!(got, None, "{costs:?}"),
                Some(w) => assert!(
                    got.as_deref().is_some_and(|g| g.contains(w)),
                    "{got:?} lacks {w}"
                ),
            }
        }
    }

    #[test]
    fn tokens_are_priced_per_million() {
        let p = Some(Price {
            input_per_mtok: 3.0,
            output_per_mtok: 15.0,
        });
        let c = price(p, Some(2_000_000), Some(100_000)).unwrap();
        assert!((c - 7.5).abs() < 1e-9);
        assert_eq!(price(None, Some(1), None), None);
        assert_eq!(price(p, None, None), None);
        let s = crate::config::Settings::default();
        assert_eq!(
            s.price("claude-sonnet-4").map(|p| p.output_per_mtok),
            Some(15.0)
        );
        assert_eq!(s.price("nobody-knows"), None);
    }
}
