//! `wiggum pr <topic>`: push the loop's branch to its remote and open (or update) its pull
//! request on GitHub, GitLab or Gitea/Forgejo, its body what `summary` shows. Everything that
//! can be refused without the network is checked before the push, and nothing local changes.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::config::Finish;
use crate::disk::handle::Handle;
use crate::error::{Error, Result};
use crate::git::forge::{self, Target, api};
use crate::git::remote::git;

/// Flags of `pr`.
#[derive(Debug, Args)]
pub struct PrArgs {
    /// The loop's topic.
    pub topic: String,
}

/// Where the loop's branch is and where it goes.
#[derive(Debug)]
struct Branch {
    /// A work tree of the repository holding the branch.
    repo: PathBuf,
    /// The top of the work tree the loop's files are in (the branch's root).
    tree: PathBuf,
    /// The loop's branch.
    name: String,
    /// The branch a worktree loop started from.
    from: Option<String>,
}

/// `pr`.
pub fn run(a: &PrArgs, config: Option<PathBuf>) -> Result<i32> {
    let h = Handle::open_present(&a.topic)?;
    refuse_dead(&h)?;
    let finish = finish_settings(&h, config)?;
    let branch = branch_of(&h)?;
    let remote = finish.remote.clone().unwrap_or_else(|| "origin".into());
    let url = remote_url(&branch.repo, &remote)?;
    let target = forge::target(&url, &finish)?;
    let token = token(&target)?;
    let base = base_of(&finish, &branch, &url)?;
    if base == branch.name {
        return Err(Error::input(format!(
            "the loop `{}` ran on {base}, the branch its pull request would go into: run it with --worktree or on a branch of its own, or name another in [finish] base",
            a.topic
        )));
    }
    let pull = api::Pull {
        title: a.topic.clone(),
        body: body(&h, &a.topic, &branch.tree)?,
        head: branch.name.clone(),
        base,
    };
    let rt = crate::sys::runtime::runtime()?;
    let forge = api::Session::new(&target, &token)?;
    let existing = rt.block_on(forge.existing(&pull.head))?;
    push(&branch, &remote, &url)?;
    let opened = rt.block_on(forge.publish(existing, &pull))?;
    let verb = if opened.updated { "updated" } else { "opened" };
    println!(
        "{verb} pull request #{} ({} → {}): {}",
        opened.number, pull.head, pull.base, opened.url
    );
    Ok(0)
}

/// A loop whose supervisor died is not at rest: what its last run changed (a repository it
/// planted in the loop's directory, a hook) is put back by the next `start`, not yet.
fn refuse_dead(h: &Handle) -> Result<()> {
    let st = crate::disk::state::read(&h.layout.state()).ok().flatten();
    let locked = h.holder()?.is_some();
    if crate::disk::state::shown_status(st.as_ref(), locked) == crate::disk::state::Shown::Dead {
        return Err(Error::input(format!(
            "the supervisor of `{0}` died: `studio-agents wiggum start {0}` puts back what its last run changed (and goes on); then open the pull request",
            h.topic
        )));
    }
    Ok(())
}

/// `[finish]` as the user's settings say it now (`$STUDIO_AGENTS_HOME/wiggum.toml`, then
/// `--config`) over the settings the loop was started with; never the loop's own
/// `wiggum/wiggum.toml` as it is now, which its agents can write (it names where the token goes).
fn finish_settings(h: &Handle, config: Option<PathBuf>) -> Result<Finish> {
    let pinned = h.layout.pinned_settings();
    let s = crate::config::load(&crate::config::Sources {
        home: Some(pinned).filter(|p| p.is_file()),
        loop_file: Some(h.home.join("wiggum.toml")),
        explicit: config,
    })?;
    Ok(s.finish)
}

/// The loop's branch: `wiggum/<topic>` of a worktree loop, else the branch its repository is on.
fn branch_of(h: &Handle) -> Result<Branch> {
    let home = crate::config::home_dir()?;
    if let Some(w) = crate::disk::worktrees::read(&home, &h.topic)? {
        return Ok(Branch {
            repo: w.repo,
            tree: w.worktree,
            name: w.branch,
            from: Some(w.from),
        });
    }
    let root = h.layout.root().to_path_buf();
    let name = git(&root, &["symbolic-ref", "--quiet", "--short", "HEAD"]).map_err(|_| {
        Error::input(format!(
            "the repository of `{}` is on no branch ({}): check out the loop's branch first",
            h.topic,
            root.display()
        ))
    })?;
    let tree = git(&root, &["rev-parse", "--show-toplevel"]).map(PathBuf::from)?;
    Ok(Branch {
        repo: root,
        tree,
        name,
        from: None,
    })
}

fn remote_url(repo: &Path, remote: &str) -> Result<String> {
    git(repo, &["remote", "get-url", remote]).map_err(|_| {
        Error::input(format!(
            "no remote `{remote}` in {}: add it (git remote add {remote} URL) or name another in [finish] remote",
            repo.display()
        ))
    })
}

fn token(t: &Target) -> Result<String> {
    match std::env::var(&t.token_env) {
        Ok(v) if !v.trim().is_empty() => Ok(v.trim().to_string()),
        _ => Err(Error::input(format!(
            "no {} token: set ${} (or name the variable that holds it in [finish] token_env)",
            forge::name(t.kind),
            t.token_env
        ))),
    }
}

/// `[finish] base`, else the branch a worktree loop started from, else the remote's default.
fn base_of(f: &Finish, b: &Branch, url: &str) -> Result<String> {
    if let Some(base) = f.base.clone().or_else(|| b.from.clone()) {
        return Ok(base);
    }
    let listing = git(&b.repo, &["ls-remote", "--symref", url, "HEAD"])?;
    listing
        .lines()
        .find_map(|l| l.strip_prefix("ref: refs/heads/"))
        .and_then(|l| l.split_whitespace().next())
        .map(str::to_string)
        .ok_or_else(|| {
            Error::input(format!(
                "the remote {url} names no default branch: set [finish] base"
            ))
        })
}

/// Push the branch to the URL (not the remote's name): no remote-tracking ref moves here.
fn push(b: &Branch, remote: &str, url: &str) -> Result<()> {
    let spec = format!("refs/heads/{0}:refs/heads/{0}", b.name);
    git(&b.repo, &["push", "--quiet", url, &spec]).map_err(|e| {
        let why = e.to_string();
        let why = why.split_once("): ").map_or(why.as_str(), |(_, w)| w);
        Error::runtime(format!(
            "the push of {} to {remote} was refused ({why}): bring the branch up to date with {remote}'s, or check your access to {url}",
            b.name
        ))
    })?;
    Ok(())
}

/// The pull request's description: `summary`'s text and the final artifact's path.
fn body(h: &Handle, topic: &str, tree: &Path) -> Result<String> {
    let g = super::inspect::gather(h)?;
    let text = fit(
        &crate::sys::term::printable(&g.text(topic, &h.layout)),
        MAX_SUMMARY,
    );
    let fence = fence_for(&text);
    let artifact = h.layout.final_artifact();
    let shown = artifact.strip_prefix(tree).map_or_else(
        |_| artifact.display().to_string(),
        |p| p.display().to_string(),
    );
    let took = g.state.as_ref().map_or_else(String::new, |st| {
        let end = if st.status().is_live() {
            chrono::Utc::now()
        } else {
            st.stopped_at()
        };
        let ms = st.elapsed_ms(end);
        format!(
            "Time: {} for {} iterations, cost {}\n",
            crate::ralph::progress::duration(ms),
            st.current_iteration,
            st.spend.shown()
        )
    });
    let open = g
        .state
        .as_ref()
        .and_then(|st| st.question.as_ref())
        .filter(|q| q.answer.is_none())
        .map_or_else(String::new, |q| {
            let asked = crate::sys::term::printable(&q.text);
            let fence = fence_for(&asked);
            format!(
                "\nA question left open ({}; answer with `studio-agents wiggum answer {topic} \"…\"`):\n\n{fence}text\n{asked}\n{fence}\n",
                q.asker()
            )
        });
    Ok(format!(
        "The loop `{topic}`, as `studio-agents wiggum summary {topic}` shows it:\n\n{fence}text\n{text}\n{fence}\n\n{took}Final artifact: `{shown}`\n{open}"
    ))
}

/// The most of `summary`'s text a description holds: forges refuse long ones (GitHub's limit is
/// 65,536 characters).
const MAX_SUMMARY: usize = 50_000;

/// `text` within `max` bytes: its first lines and its last, the lines between left out and
/// counted. Pure.
fn fit(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let lines: Vec<&str> = text.lines().collect();
    let take = |it: &mut dyn Iterator<Item = &&str>| {
        let mut used = 0;
        it.take_while(|l| {
            used += l.len() + 1;
            used <= max / 2
        })
        .count()
    };
    let head = take(&mut lines.iter());
    let tail = take(&mut lines.iter().rev()).min(lines.len() - head);
    let left = lines.len() - head - tail;
    let mut out: Vec<String> = lines[..head].iter().map(|l| (*l).to_string()).collect();
    out.push(format!("… {left} lines left out (summary shows them all)"));
    out.extend(lines[lines.len() - tail..].iter().map(|l| (*l).to_string()));
    out.join("\n")
}

/// A code fence longer than any run of backticks in `text`.
fn fence_for(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

#[cfg(test)]
mod tests {
    use super::{fence_for, fit};

    #[test]
    fn a_long_summary_keeps_its_head_and_its_last_lines() {
        let text: Vec<String> = (1..=100).map(|n| format!("line {n:03}")).collect();
        let text = text.join("\n");
        assert_eq!(fit(&text, 10_000), text);
        let cut = fit(&text, 100);
        assert!(cut.len() <= 100 + 60, "{cut}");
        assert!(cut.starts_with("line 001\n"), "{cut}");
        assert!(cut.ends_with("\nline 100"), "{cut}");
        let left: usize = cut
            .lines()
            .find_map(|l| l.strip_prefix("… ")?.split(' ').next()?.parse().ok())
            .unwrap();
        assert_eq!(left + cut.lines().count() - 1, 100, "{cut}");
    }

    #[test]
    fn the_fence_outlasts_any_backticks_inside() {
        assert_eq!(fence_for("plain"), "```");
        assert_eq!(fence_for("a ```` b ` c"), "`````");
    }
}
