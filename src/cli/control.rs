//! `wiggum stop`, `pause`, `resume`: requests to a running loop from any shell.

use std::time::{Duration, Instant};

use clap::Args;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::config;
use crate::disk::layout::Layout;
use crate::disk::lock::{self, Holder};
use crate::disk::registry;
use crate::disk::requests;
use crate::disk::state;
use crate::error::{Error, Result};

/// Flags of `stop`.
#[derive(Debug, Args)]
pub struct StopArgs {
    /// The loop's topic.
    pub topic: String,
    /// Let the current iteration finish, then stop.
    #[arg(long)]
    pub after_iteration: bool,
    /// Seconds the agent gets between SIGTERM and SIGKILL.
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    pub timeout: u64,
}

/// The loop's layout for a registered topic (exit 2 when unknown).
pub fn layout_of(topic: &str) -> Result<Layout> {
    let home = config::home_dir()?;
    Ok(Layout::new(registry::require(&home, topic)?))
}

/// Who runs the loop on `layout`, by its locks (the home lock first: the agent cannot reach it).
pub fn holder_of(layout: &Layout) -> Result<Option<Holder>> {
    lock::find(&config::home_dir()?, layout)
}

/// The live holder of a loop's lock, or exit 3 saying what the state shows.
pub fn running(topic: &str, layout: &Layout) -> Result<Holder> {
    if let Some(h) = holder_of(layout)? {
        return Ok(h);
    }
    let st = state::read(&layout.state()).ok().flatten();
    let shown = st.map_or_else(
        || "never started".to_string(),
        |s| {
            let status = state::shown_status(Some(&s), false);
            match s.stop_reason {
                Some(r) => format!("status {status}, stop reason {}", r.as_str()),
                None => format!("status {status}"),
            }
        },
    );
    Err(Error::NotRunning(format!(
        "loop `{topic}` is not running ({shown})"
    )))
}

fn signal_holder(h: &Holder, sig: Signal) -> Result<()> {
    if !h.is_same_process() {
        return Err(Error::runtime(format!(
            "pid {} holds the lock but is not the process that took it (start time differs); not signalling it",
            h.pid
        )));
    }
    kill(Pid::from_raw(h.pid.cast_signed()), sig)
        .map_err(|e| Error::runtime(format!("cannot signal pid {}: {e}", h.pid)))
}

fn wait_released(layout: &Layout, deadline: Option<Instant>) -> Result<bool> {
    loop {
        if holder_of(layout)?.is_none() {
            return Ok(true);
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(false);
        }
        std::thread::sleep(Duration::from_millis(25)); // allow: CLI poll
    }
}

/// Ask a running loop to stop (graceful, with `grace` seconds for the agent) without waiting.
pub fn request_stop(topic: &str, layout: &Layout, grace: u64) -> Result<Holder> {
    let h = running(topic, layout)?;
    requests::update(&layout.control(), |r| r.stop_grace_secs = Some(grace))?;
    signal_holder(&h, Signal::SIGTERM)?;
    Ok(h)
}

/// Set or clear the pause request of a running loop.
pub fn pause_quiet(topic: &str, layout: &Layout, on: bool) -> Result<Holder> {
    let h = running(topic, layout)?;
    requests::update(&layout.control(), |r| {
        r.pause = on;
        r.pause_reason = on.then(|| "paused by the user".into());
    })?;
    Ok(h)
}

/// `stop`.
pub fn stop(a: &StopArgs) -> Result<i32> {
    let layout = layout_of(&a.topic)?;
    let h = running(&a.topic, &layout)?;
    if a.after_iteration {
        requests::update(&layout.control(), |r| r.stop_after_iteration = true)?;
        let n = state::read(&layout.state())?.map_or(0, |s| s.current_iteration);
        println!(
            "loop `{}` (pid {}) will stop after iteration {n}; waiting…",
            a.topic, h.pid
        );
        wait_released(&layout, None)?;
        println!("stopped loop `{}`", a.topic);
        return Ok(0);
    }
    request_stop(&a.topic, &layout, a.timeout)?;
    let force_at = Instant::now() + Duration::from_secs(a.timeout + 5);
    if !wait_released(&layout, Some(force_at))? {
        let _gone = signal_holder(&h, Signal::SIGTERM);
        if !wait_released(&layout, Some(Instant::now() + Duration::from_secs(25)))? {
            return Err(Error::runtime(format!(
                "loop `{}` (pid {}) is still running {} s after the stop request; see {}",
                a.topic,
                h.pid,
                a.timeout + 30,
                layout.daemon_log().display()
            )));
        }
    }
    println!("stopped loop `{}` (pid {})", a.topic, h.pid);
    Ok(0)
}

/// `pause` (`on = true`) and `resume`.
pub fn pause(topic: &str, on: bool) -> Result<i32> {
    let layout = layout_of(topic)?;
    let h = pause_quiet(topic, &layout, on)?;
    if on {
        println!(
            "loop `{topic}` (pid {}) will pause at the next iteration boundary",
            h.pid
        );
    } else {
        println!("loop `{topic}` (pid {}) resumed", h.pid);
    }
    Ok(0)
}
