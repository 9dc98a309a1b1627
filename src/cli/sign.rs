//! `sign add`: the one write among the commands that look into a loop — a lesson from a failure
//! added to the loop's `AGENT.md`, which the next iteration reads.

use clap::Subcommand;

use crate::disk::handle::Handle;
use crate::error::{Error, Result};
use crate::sys::fsutil;

/// `sign` subcommands.
#[derive(Debug, Subcommand)]
pub enum Sign {
    /// Add a sign (a lesson from a failure) to the loop's AGENT.md; the next iteration reads it.
    #[command(
        after_help = "Example:\n  studio-agents wiggum sign add research --what \"Iteration 3 added broken links\" --fix \"Test each link before adding it\""
    )]
    Add {
        /// The loop's topic.
        topic: String,
        /// What went wrong.
        #[arg(long)]
        what: String,
        /// What the agent should do instead.
        #[arg(long)]
        fix: String,
    },
}

/// `sign add`.
pub fn sign(s: &Sign) -> Result<i32> {
    let Sign::Add { topic, what, fix } = s;
    if what.trim().is_empty() || fix.trim().is_empty() {
        return Err(Error::input("sign add: --what and --fix must not be empty"));
    }
    let layout = Handle::open_present(topic)?.layout;
    let path = layout.memory("AGENT.md");
    let text = fsutil::read_opt(&path)?.unwrap_or_default();
    let new = crate::ralph::signs::add(&text, what, fix);
    fsutil::atomic_write(&path, new.as_bytes())?;
    println!(
        "added a sign to {} (read by the next iteration)",
        path.display()
    );
    Ok(0)
}
