//! Checks made at `start`, before any agent runs: a repository the loop could not commit in is
//! refused with a one-line error (exit 2) and nothing is written. Also what `start` tells the
//! user once: hooks the loop skips, and uncommitted work it will leave out of its commits.

use std::path::{Path, PathBuf};

use git2::{Repository, RepositoryState};

use crate::error::{Error, Result};

/// What the checks found that is worth saying (nothing here stops the loop).
#[derive(Debug, Default)]
pub struct Findings {
    /// Executable hooks the loop would run with `[git] hooks = "run"` (`pre-commit`, `commit-msg`).
    pub hooks: Vec<String>,
    /// `commit.gpgsign` is on: the loop's commits will not be signed (libgit2 has no signing).
    pub signing: bool,
    /// No repository holds the directory: the loop makes one there.
    pub none: bool,
}

/// How long `start` waits for another process's `index.lock` before refusing.
const INDEX_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// Refuse a repository the loop cannot commit in: a merge, rebase or cherry-pick in progress, a
/// `index.lock` held longer than [`INDEX_LOCK_WAIT`], an index the git library cannot write, an artifact dir git ignores.
/// A directory outside any repository passes (the loop creates one there).
pub fn check(artifact: &Path) -> Result<Findings> {
    let repo = match Repository::discover(artifact) {
        Ok(r) => r,
        Err(e) => {
            return refused_discovery(artifact, &e).map(|()| Findings {
                none: true,
                ..Findings::default()
            });
        }
    };
    let Some(workdir) = repo.workdir().map(Path::to_path_buf) else {
        return Ok(Findings::default());
    };
    if let Some(what) = in_progress(repo.state()) {
        return Err(Error::input(format!(
            "{}: {what} is in progress; finish or abort it before starting a loop",
            workdir.display()
        )));
    }
    check_index(&repo)?;
    let workdir = workdir.canonicalize().unwrap_or(workdir);
    check_place(&repo, &workdir, artifact)?;
    Ok(Findings {
        none: false,
        hooks: ["pre-commit", "commit-msg"]
            .into_iter()
            .filter(|h| hook_path(&repo, &workdir, h).is_some())
            .map(str::to_string)
            .collect(),
        signing: repo
            .config()
            .and_then(|c| c.get_bool("commit.gpgsign"))
            .unwrap_or(false),
    })
}

/// The index is free and writable: another loop's commit, or a git command, holds its lock for
/// milliseconds — waited out, as git's `core.lockTimeout` does; one that stays is a running or
/// crashed command.
fn check_index(repo: &Repository) -> Result<()> {
    let lock = repo.path().join("index.lock");
    let until = std::time::Instant::now() + INDEX_LOCK_WAIT;
    while lock.exists() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(10)); // allow: waiting for another process
    }
    if lock.exists() {
        return Err(Error::input(format!(
            "{}: exists: a git command is running in this repository, or one crashed (remove the file if no git process is running)",
            lock.display()
        )));
    }
    match repo.index() {
        Ok(_) => Ok(()),
        Err(e) => Err(Error::input(format!(
            "{}: {}: the loop cannot write this index ({})",
            repo.path().join("index").display(),
            e.message(),
            index_fix(e.message())
        ))),
    }
}

/// The artifact directory is where git commits: not inside the repository's own `.git` (git's
/// store, never its work tree), and neither it nor the loop's files ignored.
fn check_place(repo: &Repository, workdir: &Path, artifact: &Path) -> Result<()> {
    let canon = artifact
        .canonicalize()
        .unwrap_or_else(|_| artifact.to_path_buf());
    let scope = canon
        .strip_prefix(workdir)
        .unwrap_or(Path::new(""))
        .to_path_buf();
    let git_dir = repo
        .path()
        .canonicalize()
        .unwrap_or_else(|_| repo.path().to_path_buf());
    if canon.starts_with(&git_dir) {
        return Err(Error::input(format!(
            "--artifact-path {}: is inside the repository's git directory {}, where git keeps its own data and commits nothing; choose a directory of the work tree",
            artifact.display(),
            git_dir.display()
        )));
    }
    for probe in [
        scope.clone(),
        scope.join("wiggum/fix_plan.md"),
        scope
            .join("wiggum")
            .join(crate::disk::layout::iteration_rel(1))
            .join("artifact.md"),
    ] {
        if probe.as_os_str().is_empty() || !repo.is_path_ignored(&probe).unwrap_or(false) {
            continue;
        }
        let rule = ignore_rule(repo, workdir, &probe).map_or_else(
            || "by a rule git applies (see `git check-ignore -v`)".to_string(),
            |r| format!("by {r}"),
        );
        return Err(Error::input(format!(
            "--artifact-path {}: git ignores {} {rule}; the loop could never commit its work (remove the rule or choose another directory)",
            artifact.display(),
            probe.display()
        )));
    }
    Ok(())
}

/// A repository that is there but cannot be opened is refused, never taken for "no repository"
/// (the loop would then create one inside it): one owned by another user, which git refuses too
/// ("dubious ownership"), or one libgit2 cannot read. `Ok` when there is simply none.
pub fn refused_discovery(artifact: &Path, e: &git2::Error) -> Result<()> {
    match e.code() {
        git2::ErrorCode::NotFound => Ok(()),
        git2::ErrorCode::Owner => Err(Error::input(format!(
            "--artifact-path {}: the repository holding it belongs to another user, and git refuses such a repository ({}); if you trust it: git config --global --add safe.directory <its work tree>",
            artifact.display(),
            e.message()
        ))),
        _ => Err(Error::input(format!(
            "--artifact-path {}: the repository holding it cannot be opened: {}",
            artifact.display(),
            e.message()
        ))),
    }
}

/// The operation a repository is in the middle of, if any.
fn in_progress(state: RepositoryState) -> Option<&'static str> {
    use RepositoryState as S;
    match state {
        S::Clean => None,
        S::Merge => Some("a merge"),
        S::Revert | S::RevertSequence => Some("a revert"),
        S::CherryPick | S::CherryPickSequence => Some("a cherry-pick"),
        S::Bisect => Some("a bisect"),
        S::Rebase | S::RebaseInteractive | S::RebaseMerge => Some("a rebase"),
        S::ApplyMailbox | S::ApplyMailboxOrRebase => Some("`git am`"),
    }
}

fn index_fix(message: &str) -> &'static str {
    if message.contains("'link'") {
        "a split index: run `git update-index --no-split-index`"
    } else if message.contains("'sdir'") {
        "a sparse index: run `git sparse-checkout set --no-sparse-index`"
    } else {
        "run `git status` to see whether git itself can read it"
    }
}

/// The repository's hooks directory (`core.hooksPath` honoured).
#[must_use]
pub fn hooks_dir(repo: &Repository, workdir: &Path) -> PathBuf {
    repo.config()
        .ok()
        .and_then(|c| c.get_path("core.hooksPath").ok())
        .map_or_else(
            || repo.commondir().join("hooks"),
            |p| if p.is_absolute() { p } else { workdir.join(p) },
        )
}

/// The config files git reads for this repository that an agent in the work tree could write,
/// each with the name people know it by: `.git/config`, the worktree's `config.worktree` (read
/// when `extensions.worktreeConfig` is on, as sparse checkouts of worktrees set it), and files
/// `include.path` / `includeIf.<cond>.path` pull in from inside the repository. Any of them can
/// name a command git runs (`core.hooksPath`, `core.fsmonitor`, a filter driver).
#[must_use]
pub fn config_files(repo: &Repository, workdir: &Path) -> Vec<(String, PathBuf)> {
    let common = repo.commondir().join("config");
    let mut out = vec![
        (".git/config".to_string(), common.clone()),
        (
            ".git/config.worktree".to_string(),
            repo.path().join("config.worktree"),
        ),
    ];
    let Ok(cfg) = git2::Config::open(&common) else {
        return out;
    };
    let git_dir = repo.commondir().to_path_buf();
    let mut includes = Vec::new();
    if let Ok(mut entries) = cfg.entries(Some(r"^(include|includeif\..*)\.path$")) {
        while let Some(Ok(e)) = entries.next() {
            if let Ok(v) = e.value() {
                includes.push(v.to_string());
            }
        }
    }
    for value in includes {
        let path = match value.strip_prefix("~/") {
            Some(rest) => match std::env::var_os("HOME") {
                Some(h) => PathBuf::from(h).join(rest),
                None => continue,
            },
            None => git_dir.join(&value),
        };
        let path = lexical(&path);
        let inside = path.starts_with(workdir) || path.starts_with(&git_dir);
        if inside && !out.iter().any(|(_, p)| *p == path) {
            out.push((path.display().to_string(), path));
        }
    }
    out
}

/// The files that say where the repository's git dir, common dir and objects are: the work
/// tree's `.git` (a directory, or a gitfile naming the git dir), the git dir's `commondir` (a
/// linked worktree's), and `objects/info/alternates`. An agent that rewrote one could point the
/// supervisor's git at a config of its own; the loop's guard checks them after every run.
#[must_use]
pub fn layout_files(repo: &Repository, workdir: &Path, artifact: &Path) -> Vec<(String, PathBuf)> {
    let commondir = repo.path().join("commondir");
    let name = commondir
        .strip_prefix(workdir)
        .unwrap_or(&commondir)
        .display()
        .to_string();
    let mut files = vec![
        (".git".to_string(), workdir.join(".git")),
        (name, commondir),
        (
            ".git/objects/info/alternates".to_string(),
            repo.commondir().join("objects/info/alternates"),
        ),
    ];
    files.extend(nested_git(workdir, artifact));
    files
}

/// The `.git` of each directory from the artifact directory up to the work tree (not the work
/// tree's own): absent, as `start` finds them, they must stay so — a repository an agent makes
/// there would be the one git, `wiggum pr` and the user's next command find from the loop's
/// directory (its hooks, its config, its remote).
fn nested_git(workdir: &Path, artifact: &Path) -> Vec<(String, PathBuf)> {
    let artifact = artifact
        .canonicalize()
        .unwrap_or_else(|_| artifact.to_path_buf());
    artifact
        .ancestors()
        .take_while(|d| d.starts_with(workdir) && *d != workdir)
        .map(|d| {
            let git = d.join(".git");
            let name = git
                .strip_prefix(workdir)
                .unwrap_or(&git)
                .display()
                .to_string();
            (name, git)
        })
        .collect()
}

/// `path` with `.` and `..` resolved by name (the file need not exist).
fn lexical(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// An executable hook of the repository (`core.hooksPath` honoured), if there is one.
#[must_use]
pub fn hook_path(repo: &Repository, workdir: &Path, name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = hooks_dir(repo, workdir).join(name);
    let meta = std::fs::metadata(&path).ok()?;
    (meta.is_file() && meta.permissions().mode() & 0o111 != 0).then_some(path)
}

/// The ignore file, line and rule that make git ignore `repo_rel`, in git's order of precedence
/// (the last matching rule of the most specific file wins). Each rule is tried alone in a
/// scratch repository, so the matching is libgit2's own.
fn ignore_rule(repo: &Repository, workdir: &Path, repo_rel: &Path) -> Option<String> {
    let scratch_dir = tempfile::tempdir().ok()?;
    let scratch = Repository::init(scratch_dir.path()).ok()?;
    let mut found = None;
    for (file, base) in ignore_files(repo, workdir, repo_rel) {
        let Ok(text) = std::fs::read(&file) else {
            continue;
        };
        let Ok(rel) = repo_rel.strip_prefix(&base) else {
            continue;
        };
        // A trailing slash tells libgit2 a directory is meant (for rules such as `out/`).
        let mut rel = rel.as_os_str().to_os_string();
        if workdir.join(repo_rel).is_dir() {
            rel.push("/");
        }
        let rel = Path::new(&rel);
        for (i, line) in String::from_utf8_lossy(&text).lines().enumerate() {
            let rule = line.trim_end();
            if rule.is_empty() || rule.starts_with('#') {
                continue;
            }
            let (negated, pattern) = rule.strip_prefix('!').map_or((false, rule), |p| (true, p));
            let _cleared = scratch.clear_ignore_rules();
            if scratch.add_ignore_rule(pattern).is_err() {
                continue;
            }
            if scratch.is_path_ignored(rel).unwrap_or(false) {
                found = (!negated).then(|| format!("{}:{}: `{rule}`", file.display(), i + 1));
            }
        }
    }
    found
}

/// Candidate ignore files with the directory their patterns are relative to, lowest precedence
/// first: the user's global excludes, `info/exclude`, then `.gitignore` from the root down.
fn ignore_files(repo: &Repository, workdir: &Path, repo_rel: &Path) -> Vec<(PathBuf, PathBuf)> {
    let mut out = Vec::new();
    let global = repo
        .config()
        .ok()
        .and_then(|c| c.get_path("core.excludesFile").ok())
        .or_else(|| {
            std::env::var_os("XDG_CONFIG_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
                .map(|c| c.join("git/ignore"))
        });
    if let Some(g) = global {
        out.push((g, PathBuf::new()));
    }
    out.push((repo.path().join("info/exclude"), PathBuf::new()));
    let mut dir = PathBuf::new();
    out.push((workdir.join(".gitignore"), dir.clone()));
    let parts: Vec<_> = repo_rel.iter().collect();
    for part in parts.iter().take(parts.len().saturating_sub(1)) {
        dir.push(part);
        out.push((workdir.join(&dir).join(".gitignore"), dir.clone()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::tests::git;

    #[test]
    fn an_ignored_artifact_dir_is_refused_naming_the_rule() {
        let d = tempfile::tempdir().unwrap();
        git(d.path(), &["init", "-q"]);
        std::fs::write(
            d.path().join(".gitignore"),
            "# build output\n*.log\nloops/\n",
        )
        .unwrap();
        let art = d.path().join("loops/a");
        std::fs::create_dir_all(&art).unwrap();
        let e = check(&art).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let msg = e.to_string();
        assert!(msg.contains(".gitignore:3: `loops/`"), "{msg}");
    }

    #[test]
    fn a_negated_rule_lets_the_dir_through() {
        let d = tempfile::tempdir().unwrap();
        git(d.path(), &["init", "-q"]);
        std::fs::write(d.path().join(".gitignore"), "notes*\n!notes-loop\n").unwrap();
        let art = d.path().join("notes-loop");
        std::fs::create_dir_all(&art).unwrap();
        assert!(check(&art).is_ok());
    }

    #[test]
    fn operations_in_progress_have_names() {
        assert_eq!(in_progress(RepositoryState::Clean), None);
        assert_eq!(in_progress(RepositoryState::RebaseMerge), Some("a rebase"));
        assert_eq!(in_progress(RepositoryState::Merge), Some("a merge"));
        assert_eq!(
            in_progress(RepositoryState::CherryPick),
            Some("a cherry-pick")
        );
    }
}
