//! `wait_for`: the one poller. Sleeps ~25 ms between tries; panics with what it waited for, how
//! long, and the last value seen. `TEST_TIME_FACTOR` scales every deadline on slow machines.

use std::fmt::Debug;
use std::time::{Duration, Instant};

/// Scale a deadline by `TEST_TIME_FACTOR` (default 1).
pub fn scaled(d: Duration) -> Duration {
    let f: f64 = std::env::var("TEST_TIME_FACTOR")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1.0);
    d.mul_f64(f.max(1.0))
}

/// Poll `probe` until it returns `Some`, or panic after `deadline`.
#[track_caller]
pub fn wait_for<T, L: Debug>(
    what: &str,
    deadline: Duration,
    mut probe: impl FnMut() -> Result<T, L>,
) -> T {
    let deadline = scaled(deadline);
    let start = Instant::now();
    loop {
        match probe() {
            Ok(v) => return v,
            Err(last) => {
                if start.elapsed() >= deadline {
                    panic!(
                        "timed out after {:?} waiting for {what}; last seen: {last:?}",
                        start.elapsed()
                    );
                }
            }
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}
