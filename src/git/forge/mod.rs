//! Where a loop's pull request goes: the forge (GitHub, GitLab, Gitea/Forgejo) and the
//! repository on it, read from the remote's URL and `[finish]`. Pure; `api.rs` speaks to it.

pub mod api;

use crate::config::{Finish, ForgeKind};
use crate::error::{Error, Result};

/// A repository on a forge, and how to reach its API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Which API it speaks.
    pub kind: ForgeKind,
    /// The API's base URL, without a trailing slash.
    pub api: String,
    /// `owner/name` (GitLab: the project's full path, groups included).
    pub repository: String,
    /// The environment variable holding the token.
    pub token_env: String,
}

/// The forge's name as people write it.
#[must_use]
pub fn name(kind: ForgeKind) -> &'static str {
    match kind {
        ForgeKind::Github => "GitHub",
        ForgeKind::Gitlab => "GitLab",
        ForgeKind::Gitea => "Gitea",
    }
}

/// The host and path of a remote URL: `git@host:o/r.git`, `ssh://git@host:22/o/r.git`,
/// `https://host/o/r`. None for a local path.
#[must_use]
pub fn host_and_path(url: &str) -> Option<(String, String)> {
    let (host, path) = if let Some((_, rest)) = url.split_once("://") {
        let (authority, path) = rest.split_once('/')?;
        let host = authority.rsplit('@').next()?;
        (host.split(':').next()?.to_string(), path.to_string())
    } else {
        // scp-like: `[user@]host:path`, never a path with a slash before the colon.
        let (left, path) = url.split_once(':')?;
        if left.contains('/') || left.is_empty() {
            return None;
        }
        (left.rsplit('@').next()?.to_string(), path.to_string())
    };
    let path = path.trim_matches('/').trim_end_matches(".git").to_string();
    (!host.is_empty() && path.contains('/')).then_some((host.to_ascii_lowercase(), path))
}

/// The forge a host names: github…, gitlab…, gitea…, forgejo…, codeberg.org.
#[must_use]
pub fn detect(host: &str) -> Option<ForgeKind> {
    if host.contains("github") {
        Some(ForgeKind::Github)
    } else if host.contains("gitlab") {
        Some(ForgeKind::Gitlab)
    } else if ["gitea", "forgejo", "codeberg"]
        .iter()
        .any(|n| host.contains(n))
    {
        Some(ForgeKind::Gitea)
    } else {
        None
    }
}

/// The API base a forge on `host` answers at.
#[must_use]
pub fn default_api(kind: ForgeKind, host: &str) -> String {
    match kind {
        ForgeKind::Github if host == "github.com" => "https://api.github.com".into(),
        ForgeKind::Github => format!("https://{host}/api/v3"),
        ForgeKind::Gitlab => format!("https://{host}/api/v4"),
        ForgeKind::Gitea => format!("https://{host}/api/v1"),
    }
}

/// The variable a forge's token is read from unless `[finish] token_env` names one.
#[must_use]
pub fn default_token_env(kind: ForgeKind) -> &'static str {
    match kind {
        ForgeKind::Github => "GITHUB_TOKEN",
        ForgeKind::Gitlab => "GITLAB_TOKEN",
        ForgeKind::Gitea => "GITEA_TOKEN",
    }
}

/// The forge and repository of `remote_url` with `[finish]` over what the URL says; an input
/// error naming the key to set when neither tells.
pub fn target(remote_url: &str, f: &Finish) -> Result<Target> {
    let parsed = host_and_path(remote_url);
    let host = parsed.as_ref().map(|(h, _)| h.as_str());
    let kind = f.forge.or_else(|| host.and_then(detect)).ok_or_else(|| {
        Error::input(format!(
            "cannot tell the forge of the remote {remote_url}: set [finish] forge (github, gitlab, gitea or forgejo)"
        ))
    })?;
    let api = match (&f.api, host) {
        (Some(api), _) => api.trim_end_matches('/').to_string(),
        (None, Some(host)) => default_api(kind, host),
        (None, None) => {
            return Err(Error::input(format!(
                "the remote {remote_url} names no host: set [finish] api to the forge's API base"
            )));
        }
    };
    let repository = match (&f.repository, &parsed) {
        (Some(r), _) => r.trim_matches('/').to_string(),
        (None, Some((_, path))) => path.clone(),
        (None, None) => {
            return Err(Error::input(format!(
                "the remote {remote_url} names no repository: set [finish] repository (owner/name)"
            )));
        }
    };
    if !repository.contains('/') || repository.split('/').any(str::is_empty) {
        return Err(Error::input(format!(
            "[finish] repository: `{repository}` is not owner/name"
        )));
    }
    let token_env = f
        .token_env
        .clone()
        .unwrap_or_else(|| default_token_env(kind).to_string());
    Ok(Target {
        kind,
        api,
        repository,
        token_env,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_urls_name_their_host_and_repository() {
        let cases: [(&str, Option<(&str, &str)>); 8] = [
            (
                "git@github.com:team/notes.git",
                Some(("github.com", "team/notes")),
            ),
            (
                "https://github.com/team/notes",
                Some(("github.com", "team/notes")),
            ),
            (
                "https://tok@GitLab.com/a/b/c.git",
                Some(("gitlab.com", "a/b/c")),
            ),
            (
                "ssh://git@codeberg.org:2222/me/r.git",
                Some(("codeberg.org", "me/r")),
            ),
            (
                "http://127.0.0.1:3000/me/r.git/",
                Some(("127.0.0.1", "me/r")),
            ),
            ("/srv/git/notes.git", None),
            ("../notes.git", None),
            ("file:///srv/git/notes.git", None),
        ];
        for (url, want) in cases {
            let got = host_and_path(url);
            let got = got.as_ref().map(|(h, p)| (h.as_str(), p.as_str()));
            assert_eq!(got, want, "{url}");
        }
    }

    #[test]
    fn the_forge_comes_from_the_host_and_settings_win() {
        let f = Finish::default();
        let t = target("git@github.com:team/notes.git", &f).unwrap();
        assert_eq!(
            (
                t.kind,
                t.api.as_str(),
                t.repository.as_str(),
                t.token_env.as_str()
            ),
            (
                ForgeKind::Github,
                "https://api.github.com",
                "team/notes",
                "GITHUB_TOKEN"
            )
        );
        let t = target("https://gitlab.example.org/g/sub/p.git", &f).unwrap();
        assert_eq!(t.api, "https://gitlab.example.org/api/v4");
        assert_eq!(t.repository, "g/sub/p");
        let t = target("https://codeberg.org/me/r", &f).unwrap();
        assert_eq!(
            (t.kind, t.token_env.as_str()),
            (ForgeKind::Gitea, "GITEA_TOKEN")
        );
        let ghe = target("git@github.corp.example:o/r.git", &f).unwrap();
        assert_eq!(ghe.api, "https://github.corp.example/api/v3");
        // A local remote says nothing: every key is needed, and the error names the first.
        let e = target("/srv/git/notes.git", &f).unwrap_err().to_string();
        assert!(e.contains("[finish] forge"), "{e}");
        let e = target("https://git.example.org/o/r", &f)
            .unwrap_err()
            .to_string();
        assert!(e.contains("[finish] forge"), "{e}");
        let set = Finish {
            forge: Some(ForgeKind::Gitea),
            api: Some("http://127.0.0.1:9/api/v1/".into()),
            repository: Some("team/notes".into()),
            token_env: Some("FORGE_TOKEN".into()),
            ..Finish::default()
        };
        let t = target("/srv/git/notes.git", &set).unwrap();
        assert_eq!(t.api, "http://127.0.0.1:9/api/v1");
        assert_eq!(t.token_env, "FORGE_TOKEN");
        let bad = Finish {
            repository: Some("notes".into()),
            ..set
        };
        let e = target("/srv/git/notes.git", &bad).unwrap_err().to_string();
        assert_eq!(e, "[finish] repository: `notes` is not owner/name");
    }
}
