//! Step timings, for the benchmark's breakdown of an iteration: with `STUDIO_AGENTS_LOG`
//! turning the `timing` target on at debug level (`info,timing=debug`), each step timed with
//! [`step`] logs its wall time as `step=<name> us=<microseconds>`; otherwise a step costs one
//! cached check and no clock read.

use std::time::{Duration, Instant};

/// Whether step timings are being logged.
#[must_use]
pub fn enabled() -> bool {
    tracing::enabled!(target: "timing", tracing::Level::DEBUG)
}

/// One timed step: logged when dropped.
#[must_use = "a step is timed until it is dropped"]
pub struct Step {
    name: &'static str,
    start: Option<Instant>,
}

/// Time `name` from now until the returned guard is dropped.
pub fn step(name: &'static str) -> Step {
    Step {
        name,
        start: enabled().then(Instant::now),
    }
}

/// Log a step measured elsewhere (by the sandbox helper, in its own process).
pub fn record(name: &str, took: Duration) {
    tracing::debug!(target: "timing", step = name, us = took.as_micros() as u64);
}

impl Drop for Step {
    fn drop(&mut self) {
        if let Some(start) = self.start {
            record(self.name, start.elapsed());
        }
    }
}
