//! `wiggum stop`, `pause`, `resume`: requests to a running loop from any shell.

use std::time::{Duration, Instant};

use clap::Args;
use nix::sys::signal::Signal;

use crate::disk::handle::{self, Handle};
use crate::disk::{requests, state};
use crate::error::{Error, Result};
use crate::supervisor::control;

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

/// `stop`.
pub fn stop(a: &StopArgs) -> Result<i32> {
    let lp = Handle::open(&a.topic)?;
    let layout = &lp.layout;
    let h = lp.running()?;
    if a.after_iteration {
        requests::update(&layout.requests(), |r| r.stop_after_iteration = true)?;
        let n = state::read(&layout.state())?.map_or(0, |s| s.current_iteration);
        // A suspended loop would never finish its iteration: it is continued to do so.
        if handle::suspended(&h) {
            control::signal(&h, Signal::SIGCONT)?;
            println!(
                "loop `{}` (pid {}) was suspended; continued so it can finish iteration {n}",
                a.topic, h.pid
            );
        }
        println!(
            "loop `{}` (pid {}) will stop after iteration {n}; waiting…",
            a.topic, h.pid
        );
        lp.wait_released(None)?;
        println!("stopped loop `{}`", a.topic);
        return Ok(0);
    }
    control::request_stop_of(&lp, &h, a.timeout)?;
    let force_at = Instant::now() + Duration::from_secs(a.timeout + 5);
    if !lp.wait_released(Some(force_at))? {
        let _gone = control::signal(&h, Signal::SIGTERM);
        if !lp.wait_released(Some(Instant::now() + Duration::from_secs(25)))? {
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

/// Flags of `allow`.
#[derive(Debug, Args)]
pub struct AllowArgs {
    /// The loop's topic.
    pub topic: String,
    /// The loop's directory, for a loop that never ran (not registered yet).
    #[arg(long, value_name = "DIR")]
    pub artifact_path: Option<std::path::PathBuf>,
}

/// `allow`: take the loop's settings file as it is now, saying what that changes.
pub fn allow(a: &AllowArgs) -> Result<i32> {
    let lp = match &a.artifact_path {
        Some(dir) => unregistered(&a.topic, dir)?,
        None => Handle::open_present(&a.topic)?,
    };
    let changes = crate::ralph::start::allow(&lp.home, &lp.layout)?;
    if changes.is_empty() {
        println!("{}: allowed (no key changed)", lp.layout.config().display());
    } else {
        println!(
            "{}: allowed, with these changes:",
            lp.layout.config().display()
        );
        for c in &changes {
            println!("  {c}");
        }
    }
    Ok(0)
}

/// The loop `topic` on `dir` as `start --artifact-path` would resolve it: a directory, and the
/// topic free for it (registered there, nowhere, or for a directory that holds no loop now).
fn unregistered(topic: &str, dir: &std::path::Path) -> Result<Handle> {
    let home = crate::config::home_dir()?;
    let root = dir
        .canonicalize()
        .ok()
        .filter(|r| r.is_dir())
        .ok_or_else(|| {
            Error::input(format!(
                "--artifact-path {}: not a directory",
                dir.display()
            ))
        })?;
    crate::disk::registry::check_path("--artifact-path", &root)?;
    crate::disk::registry::check_free(&home, topic, &root)?;
    Ok(Handle::at(&home, topic, root))
}

/// `pause` (`on = true`) and `resume`.
pub fn pause(topic: &str, on: bool) -> Result<i32> {
    let lp = Handle::open(topic)?;
    if !on && !crate::disk::requests::read(&lp.layout.requests()).pause {
        let h = lp.running()?;
        return Err(Error::NotRunning(format!(
            "loop `{topic}` (pid {}) is not paused; nothing to resume",
            h.pid
        )));
    }
    let before = crate::disk::requests::read(&lp.layout.requests());
    let already = on && before.pause;
    let h = lp.set_pause(on)?;
    if already && before.paused_for_question {
        // The user's pause takes over the one that waited for the answer.
        println!(
            "loop `{topic}` (pid {}) was paused for a question; it is now paused by you: an answer no longer lifts the pause, `resume` goes on",
            h.pid
        );
    } else if already {
        println!(
            "loop `{topic}` (pid {}) is already paused (or pausing at the next iteration boundary); `resume` goes on",
            h.pid
        );
    } else if on {
        println!(
            "loop `{topic}` (pid {}) will pause at the next iteration boundary",
            h.pid
        );
    } else {
        println!("loop `{topic}` (pid {}) resumed", h.pid);
    }
    Ok(0)
}
