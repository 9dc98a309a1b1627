//! `skill install <dir>` / `skill show`: a Markdown skill (from `templates/SKILL.md`) that
//! teaches an agent when to start a Wiggum loop on its own output, how to watch and stop it, how
//! to add a sign, and the rules of the loop. The installed file ends with a stamp of its own
//! content, so a later install can tell an untouched copy (replaced) from one the user edited
//! (kept, unless `--force`).

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use md5::{Digest, Md5};

use crate::error::{Error, Result};
use crate::sys::fsutil;

/// The skill's text.
pub const SKILL: &str = include_str!("../../templates/SKILL.md");

/// The skill's directory and file name inside the target directory (Claude Code's
/// `.claude/skills/<name>/SKILL.md` layout; other agents read the Markdown as it is).
const NAME: &str = "studio-agents-wiggum";

/// `skill` subcommands.
#[derive(Debug, Subcommand)]
pub enum Skill {
    /// Write the skill to <dir>/studio-agents-wiggum/SKILL.md (e.g. <repo>/.claude/skills).
    Install(InstallArgs),
    /// Print the skill.
    Show,
}

/// Flags of `skill install`.
#[derive(Debug, Args)]
pub struct InstallArgs {
    /// The skills directory.
    pub dir: PathBuf,
    /// Replace a copy that was edited since it was installed.
    #[arg(long)]
    pub force: bool,
}

const STAMP: &str = "<!-- studio-agents skill ";

fn stamped(body: &str) -> String {
    let sum = Md5::digest(body.as_bytes());
    let hex: String = sum.iter().map(|b| format!("{b:02x}")).collect();
    format!("{body}\n{STAMP}{hex} -->\n")
}

/// Whether `text` is a copy we wrote and nobody edited since (its stamp matches its body).
fn untouched(text: &str) -> bool {
    text.rfind(&format!("\n{STAMP}"))
        .is_some_and(|at| stamped(&text[..at]) == text)
}

/// Run a `skill` subcommand.
pub fn run(s: &Skill) -> Result<i32> {
    match s {
        Skill::Show => {
            print!("{SKILL}");
            Ok(0)
        }
        Skill::Install(a) => install(&a.dir, a.force),
    }
}

fn install(dir: &Path, force: bool) -> Result<i32> {
    let path = dir.join(NAME).join("SKILL.md");
    let want = stamped(SKILL);
    if let Some(have) = fsutil::read_opt(&path)? {
        if have == want {
            println!("{} is up to date", path.display());
            return Ok(0);
        }
        if !untouched(&have) && !force {
            return Err(Error::input(format!(
                "{} was edited since it was installed; keep it, or replace it with --force",
                path.display()
            )));
        }
    }
    fsutil::create_dir_all(path.parent().unwrap_or(dir))?;
    fsutil::atomic_write(&path, want.as_bytes())?;
    println!("installed {}", path.display());
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamped_copy_is_untouched_until_someone_edits_it() {
        let text = stamped("# Skill\n\nbody\n");
        assert!(untouched(&text));
        assert!(!untouched(&text.replace("body", "my body")));
        assert!(!untouched("# Skill written by hand\n"));
    }
}
