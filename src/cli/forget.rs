//! `wiggum forget <topic> [--kept]`: the topic's registration and records under
//! `$STUDIO_AGENTS_HOME` go (refused while the loop runs, or while it has a worktree that
//! `clean` removes with its record); the artifact directory, its `wiggum/` and its commits stay.
//! The copies of the user's work go only with `--kept`, each listed first.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::disk::handle::Handle;
use crate::disk::{kept, lock, registry, worktrees};
use crate::error::{Error, Result};
use crate::sys::fsutil;

/// Flags of `forget`.
#[derive(Debug, Args)]
pub struct ForgetArgs {
    /// The loop's topic.
    pub topic: String,
    /// Remove the copies of your work `start` kept for it too ($STUDIO_AGENTS_HOME/kept/<topic>).
    #[arg(long)]
    pub kept: bool,
}

/// `forget`.
pub fn run(a: &ForgetArgs) -> Result<i32> {
    let home = crate::config::home_dir()?;
    let topic = &a.topic;
    registry::check_topic(topic)?;
    let copies = kept::copies(&kept::topic_dir(&home, topic));
    match registry::lookup(&home, topic)? {
        Some(root) => forget_loop(&home, topic, root)?,
        None if a.kept && !copies.is_empty() => {}
        None => {
            registry::require(&home, topic)?;
        }
    }
    if a.kept {
        forget_copies(&home, topic, &copies)?;
    } else if !copies.is_empty() {
        println!(
            "  kept copies of your work stay: {} in {} (`studio-agents wiggum forget {topic} --kept` removes them)",
            copies.len(),
            kept::topic_dir(&home, topic).display()
        );
    }
    Ok(0)
}

/// Refuse while the loop runs or has a worktree; else remove its registration, and its records
/// and home lock unless another registered topic names the same directory.
fn forget_loop(home: &Path, topic: &str, root: PathBuf) -> Result<()> {
    let h = Handle::at(home, topic, root);
    if let Some(holder) = h.holder()?
        && (holder.topic.is_empty() || holder.topic == topic)
    {
        return Err(Error::AlreadyRunning(format!(
            "loop `{topic}` is running (pid {}); stop it first: studio-agents wiggum stop {topic}",
            holder.pid
        )));
    }
    if let Some(w) = worktrees::read(home, topic)? {
        return Err(Error::input(format!(
            "loop `{topic}` has its worktree {} (branch {}); `studio-agents wiggum clean {topic}` removes it and forgets the loop",
            w.worktree.display(),
            w.branch
        )));
    }
    let shared = registry::all(home)?
        .into_iter()
        .any(|(t, p)| t != topic && p == h.layout.root());
    registry::unregister(home, topic)?;
    let mut said = format!("forgot loop `{topic}`");
    if !shared {
        let records = h.layout.records().to_path_buf();
        fsutil::remove_dir_all_opt(&records)?;
        fsutil::remove_file_opt(&lock::home_lock(home, h.layout.root()))?;
        said.push_str(&format!(" and its records ({})", records.display()));
        // The home's layer its runs wrote in (the CLI's state, caches), kept across its
        // iterations: let go with it.
        if let Some(layer) = crate::agent::home::layer_of(h.layout.root())
            && layer.is_dir()
        {
            crate::agent::home::remove_layer(&layer)?;
            said.push_str(&format!(
                ", the home's layer of its runs ({})",
                layer.display()
            ));
        }
    }
    println!("{said}");
    println!(
        "  its directory {} is left as it is ({} and the commits stay)",
        h.layout.root().display(),
        h.layout.wiggum().display()
    );
    Ok(())
}

/// List each copy, then remove them all.
fn forget_copies(home: &Path, topic: &str, copies: &[(PathBuf, usize, u64)]) -> Result<()> {
    if copies.is_empty() {
        println!("  no kept copies of `{topic}`");
        return Ok(());
    }
    println!(
        "  removing {} kept cop{} of your work:",
        copies.len(),
        if copies.len() == 1 { "y" } else { "ies" }
    );
    for (dir, files, bytes) in copies {
        println!(
            "    {}: {files} file{}, {}",
            dir.display(),
            if *files == 1 { "" } else { "s" },
            kept::size(*bytes)
        );
    }
    fsutil::remove_dir_all_opt(&kept::topic_dir(home, topic))
}
