//! Test failpoints: `STUDIO_AGENTS_FAILPOINT=<name>[@N][,…]` makes the process abort (as a crash
//! would) at the Nth time (default the first) it reaches that named point, so tests can prove a
//! crash mid-write loses nothing. Unset, it is a no-op.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::error::Result;

static HITS: Mutex<BTreeMap<String, u32>> = Mutex::new(BTreeMap::new());

/// Whether `spec` (`name` or `name@N`) arms `name` at its `count`th hit. Pure.
#[must_use]
pub fn armed(spec: &str, name: &str, count: u32) -> bool {
    spec.split(',')
        .map(str::trim)
        .any(|one| match one.split_once('@') {
            Some((n, at)) => n == name && at.parse() == Ok(count),
            None => one == name && count == 1,
        })
}

/// Abort the process when the failpoint `name` is armed for this hit.
#[allow(clippy::unnecessary_wraps)]
pub fn hit(name: &str) -> Result<()> {
    let Ok(spec) = std::env::var("STUDIO_AGENTS_FAILPOINT") else {
        return Ok(());
    };
    let count = HITS.lock().map_or(1, |mut h| {
        let c = h.entry(name.to_string()).or_insert(0);
        *c += 1;
        *c
    });
    if armed(&spec, name, count) {
        eprintln!("failpoint {name}@{count}: aborting");
        std::process::abort();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_arm_the_right_hit() {
        assert!(armed("a", "a", 1));
        assert!(!armed("a", "a", 2));
        assert!(armed("b,a@3", "a", 3));
        assert!(!armed("a@3", "a", 2));
        assert!(!armed("ab", "a", 1));
    }
}
