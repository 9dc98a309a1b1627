//! A pull request through each forge's REST API: find the open one for the branch, then update
//! it or open one. The requests are data (`find`, `create`, `update`: pure); `open` sends them.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Target, name};
use crate::config::ForgeKind;
use crate::error::{Error, Result};

/// What the pull request says and joins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pull {
    /// Its title.
    pub title: String,
    /// Its description (Markdown).
    pub body: String,
    /// The branch proposed.
    pub head: String,
    /// The branch it goes into.
    pub base: String,
}

/// The pull request as the forge answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opened {
    /// Its number on the forge (GitLab: the merge request's iid).
    pub number: u64,
    /// Its page.
    pub url: String,
    /// Whether it was there already (and was updated).
    pub updated: bool,
}

/// One request: method, URL and the JSON body, if any.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// `GET`, `POST`, `PATCH`, `PUT`.
    pub method: &'static str,
    /// The full URL.
    pub url: String,
    /// The body.
    pub body: Option<serde_json::Value>,
}

/// GitHub's and Gitea's new pull request.
#[derive(Debug, Serialize)]
struct NewPull<'a> {
    title: &'a str,
    head: &'a str,
    base: &'a str,
    body: &'a str,
}

/// GitHub's and Gitea's edit of one.
#[derive(Debug, Serialize)]
struct EditPull<'a> {
    title: &'a str,
    body: &'a str,
}

/// GitLab's new merge request.
#[derive(Debug, Serialize)]
struct NewMerge<'a> {
    source_branch: &'a str,
    target_branch: &'a str,
    title: &'a str,
    description: &'a str,
}

/// GitLab's edit of one.
#[derive(Debug, Serialize)]
struct EditMerge<'a> {
    title: &'a str,
    description: &'a str,
}

/// A pull request as GitHub and Gitea list it.
#[derive(Debug, Deserialize)]
struct PullAnswer {
    number: u64,
    html_url: String,
    #[serde(default)]
    head: Option<HeadAnswer>,
}

#[derive(Debug, Deserialize)]
struct HeadAnswer {
    #[serde(rename = "ref")]
    branch: String,
}

/// A merge request as GitLab lists it.
#[derive(Debug, Deserialize)]
struct MergeAnswer {
    iid: u64,
    web_url: String,
}

/// `s` with everything but unreserved characters percent-encoded (a path segment or a query
/// value).
#[must_use]
pub fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn repo_url(t: &Target) -> String {
    match t.kind {
        ForgeKind::Gitlab => format!("{}/projects/{}", t.api, encode(&t.repository)),
        _ => format!("{}/repos/{}", t.api, t.repository),
    }
}

/// A page of Gitea's listing of open pull requests.
const PAGE: usize = 50;

/// The most pages of it read for the branch's own.
const PAGES: u32 = 20;

/// The request listing the open pull requests of `head` (Gitea: its `page`, from 1, of all of
/// them).
#[must_use]
pub fn find(t: &Target, head: &str, page: u32) -> Request {
    let url = match t.kind {
        ForgeKind::Github => {
            let owner = t.repository.split('/').next().unwrap_or_default();
            format!(
                "{}/pulls?state=open&head={}",
                repo_url(t),
                encode(&format!("{owner}:{head}"))
            )
        }
        ForgeKind::Gitlab => format!(
            "{}/merge_requests?state=opened&source_branch={}",
            repo_url(t),
            encode(head)
        ),
        // Gitea filters by head only in newer versions: the list is read for the branch.
        ForgeKind::Gitea => format!("{}/pulls?state=open&limit={PAGE}&page={page}", repo_url(t)),
    };
    Request {
        method: "GET",
        url,
        body: None,
    }
}

/// The request opening `p`.
#[must_use]
pub fn create(t: &Target, p: &Pull) -> Request {
    let (url, body) = match t.kind {
        ForgeKind::Gitlab => (
            format!("{}/merge_requests", repo_url(t)),
            serde_json::to_value(NewMerge {
                source_branch: &p.head,
                target_branch: &p.base,
                title: &p.title,
                description: &p.body,
            }),
        ),
        _ => (
            format!("{}/pulls", repo_url(t)),
            serde_json::to_value(NewPull {
                title: &p.title,
                head: &p.head,
                base: &p.base,
                body: &p.body,
            }),
        ),
    };
    Request {
        method: "POST",
        url,
        body: body.ok(),
    }
}

/// The request giving pull request `number` the title and body of `p`.
#[must_use]
pub fn update(t: &Target, number: u64, p: &Pull) -> Request {
    let (method, url, body) = match t.kind {
        ForgeKind::Gitlab => (
            "PUT",
            format!("{}/merge_requests/{number}", repo_url(t)),
            serde_json::to_value(EditMerge {
                title: &p.title,
                description: &p.body,
            }),
        ),
        _ => (
            "PATCH",
            format!("{}/pulls/{number}", repo_url(t)),
            serde_json::to_value(EditPull {
                title: &p.title,
                body: &p.body,
            }),
        ),
    };
    Request {
        method,
        url,
        body: body.ok(),
    }
}

/// The open pull request of `head` in a listing, if any: (number, page).
fn found(kind: ForgeKind, head: &str, listing: &[u8]) -> Result<Option<(u64, String)>> {
    let bad = |e: serde_json::Error| {
        Error::runtime(format!(
            "{} answered a listing of pull requests that is not one: {e}",
            name(kind)
        ))
    };
    Ok(match kind {
        ForgeKind::Gitlab => serde_json::from_slice::<Vec<MergeAnswer>>(listing)
            .map_err(bad)?
            .into_iter()
            .next()
            .map(|m| (m.iid, m.web_url)),
        _ => serde_json::from_slice::<Vec<PullAnswer>>(listing)
            .map_err(bad)?
            .into_iter()
            .find(|p| p.head.as_ref().is_none_or(|h| h.branch == head))
            .map(|p| (p.number, p.html_url)),
    })
}

/// How many entries a listing holds.
fn listed(listing: &[u8]) -> usize {
    serde_json::from_slice::<Vec<serde::de::IgnoredAny>>(listing).map_or(0, |v| v.len())
}

/// The pull request in a create or update answer: (number, page).
fn answered(kind: ForgeKind, body: &[u8]) -> Result<(u64, String)> {
    let bad = |e: serde_json::Error| {
        Error::runtime(format!("{} answered with no pull request: {e}", name(kind)))
    };
    match kind {
        ForgeKind::Gitlab => serde_json::from_slice::<MergeAnswer>(body)
            .map(|m| (m.iid, m.web_url))
            .map_err(bad),
        _ => serde_json::from_slice::<PullAnswer>(body)
            .map(|p| (p.number, p.html_url))
            .map_err(bad),
    }
}

/// The header carrying `token` on this forge.
#[must_use]
pub fn auth(kind: ForgeKind, token: &str) -> (&'static str, String) {
    match kind {
        ForgeKind::Github => ("authorization", format!("Bearer {token}")),
        ForgeKind::Gitlab => ("private-token", token.to_string()),
        ForgeKind::Gitea => ("authorization", format!("token {token}")),
    }
}

/// What to do about a refusal, by status.
#[must_use]
pub fn advice(t: &Target, status: u16) -> String {
    match status {
        401 | 403 => format!("check the token in ${}", t.token_env),
        404 => format!(
            "check that {} exists at {} and the token in ${} may write it ([finish] repository, api)",
            t.repository, t.api, t.token_env
        ),
        _ => "see the forge's message".to_string(),
    }
}

/// The forge's own message in an error answer (`message` or `error`), one bounded line.
#[must_use]
pub fn message(body: &[u8]) -> String {
    let v: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let text = ["message", "error"]
        .iter()
        .find_map(|k| match &v[*k] {
            serde_json::Value::Null => None,
            serde_json::Value::String(s) => Some(s.clone()),
            other => Some(other.to_string()),
        })
        .unwrap_or_else(|| String::from_utf8_lossy(body).into_owned());
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    line.chars().take(200).collect()
}

/// Talking to one forge with one token.
pub struct Session<'a> {
    client: reqwest::Client,
    target: &'a Target,
    token: &'a str,
}

impl<'a> Session<'a> {
    /// A session with `target`, sending `token`.
    pub fn new(target: &'a Target, token: &'a str) -> Result<Self> {
        Ok(Self {
            client: client()?,
            target,
            token,
        })
    }

    /// The number of the open pull request of `head`, if there is one (asked before anything
    /// is pushed: a refused token or a wrong repository changes nothing anywhere).
    pub async fn existing(&self, head: &str) -> Result<Option<u64>> {
        let t = self.target;
        for page in 1..=PAGES {
            let listing = send(
                &self.client,
                t,
                self.token,
                &find(t, head, page),
                "find the pull request",
            )
            .await?;
            if let Some((n, _)) = found(t.kind, head, &listing)? {
                return Ok(Some(n));
            }
            // GitHub and GitLab filter by branch; Gitea's listing goes on while pages are full.
            if t.kind != ForgeKind::Gitea || listed(&listing) < PAGE {
                break;
            }
        }
        Ok(None)
    }

    /// Update pull request `existing` to say `p`, or open one.
    pub async fn publish(&self, existing: Option<u64>, p: &Pull) -> Result<Opened> {
        let t = self.target;
        let (request, action) = match existing {
            Some(n) => (update(t, n, p), "update the pull request"),
            None => (create(t, p), "open the pull request"),
        };
        let body = send(&self.client, t, self.token, &request, action).await?;
        let (number, url) = answered(t.kind, &body)?;
        Ok(Opened {
            number,
            url,
            updated: existing.is_some(),
        })
    }
}

fn client() -> Result<reqwest::Client> {
    // Installing twice is harmless: the first provider stays.
    let _already = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .connect_timeout(Duration::from_secs(10))
        .user_agent(concat!("studio-agents/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| Error::runtime(format!("cannot build an HTTP client: {e}")))
}

/// Send `r`; the answer's body, or one line naming the status, the forge's word and what to do.
async fn send(
    client: &reqwest::Client,
    t: &Target,
    token: &str,
    r: &Request,
    action: &str,
) -> Result<Vec<u8>> {
    let method = reqwest::Method::from_bytes(r.method.as_bytes())
        .map_err(|e| Error::runtime(format!("{}: {e}", r.method)))?;
    let (header, value) = auth(t.kind, token);
    let mut req = client
        .request(method, &r.url)
        .header(header, value)
        .header("accept", "application/json");
    if let Some(body) = &r.body {
        req = req
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    let forge = name(t.kind);
    let resp = req.send().await.map_err(|e| {
        Error::runtime(format!(
            "cannot reach {forge} at {} to {action}: {e} ({})",
            t.api,
            crate::error::root_cause(&e)
        ))
    })?;
    let status = resp.status();
    let body = resp
        .bytes()
        .await
        .map_err(|e| Error::runtime(format!("{forge} to {action}: {e}")))?;
    if !status.is_success() {
        let why = message(&body);
        let hint = advice(t, status.as_u16());
        // Exit 1: the branch may be pushed by now, so not "nothing was done".
        return Err(Error::runtime(format!(
            "{forge} answered {status} to {action}: {why}; {hint}"
        )));
    }
    Ok(body.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(kind: ForgeKind) -> Target {
        Target {
            kind,
            api: "http://f/api".into(),
            repository: "team/notes".into(),
            token_env: "T".into(),
        }
    }

    fn pull() -> Pull {
        Pull {
            title: "notes".into(),
            body: "b".into(),
            head: "wiggum/notes".into(),
            base: "main".into(),
        }
    }

    #[test]
    fn each_forge_has_its_own_requests() {
        let gh = target(ForgeKind::Github);
        assert_eq!(
            find(&gh, "wiggum/notes", 1).url,
            "http://f/api/repos/team/notes/pulls?state=open&head=team%3Awiggum%2Fnotes"
        );
        let c = create(&gh, &pull());
        assert_eq!(
            (c.method, c.url.as_str()),
            ("POST", "http://f/api/repos/team/notes/pulls")
        );
        assert_eq!(
            c.body.unwrap().to_string(),
            r#"{"title":"notes","head":"wiggum/notes","base":"main","body":"b"}"#
        );
        let u = update(&gh, 7, &pull());
        assert_eq!(
            (u.method, u.url.as_str()),
            ("PATCH", "http://f/api/repos/team/notes/pulls/7")
        );
        let gl = Target {
            repository: "group/sub/notes".into(),
            ..target(ForgeKind::Gitlab)
        };
        assert_eq!(
            find(&gl, "wiggum/notes", 1).url,
            "http://f/api/projects/group%2Fsub%2Fnotes/merge_requests?state=opened&source_branch=wiggum%2Fnotes"
        );
        let c = create(&gl, &pull());
        assert_eq!(
            c.body.unwrap().to_string(),
            r#"{"source_branch":"wiggum/notes","target_branch":"main","title":"notes","description":"b"}"#
        );
        let u = update(&gl, 3, &pull());
        assert_eq!(u.method, "PUT");
        assert_eq!(
            u.body.unwrap().to_string(),
            r#"{"title":"notes","description":"b"}"#
        );
        let gt = target(ForgeKind::Gitea);
        assert_eq!(
            find(&gt, "x", 2).url,
            "http://f/api/repos/team/notes/pulls?state=open&limit=50&page=2"
        );
        assert_eq!(listed(b"[{},{\"a\":1}]"), 2);
        assert_eq!(listed(b"{}"), 0);
    }

    #[test]
    fn a_listing_finds_the_branch_own_pull_request() {
        let gitea = br#"[{"number":1,"html_url":"u1","head":{"ref":"other"}},
                         {"number":2,"html_url":"u2","head":{"ref":"wiggum/notes"}}]"#;
        assert_eq!(
            found(ForgeKind::Gitea, "wiggum/notes", gitea).unwrap(),
            Some((2, "u2".into()))
        );
        assert_eq!(
            found(ForgeKind::Github, "wiggum/notes", b"[]").unwrap(),
            None
        );
        let gl = br#"[{"iid":4,"web_url":"w"}]"#;
        assert_eq!(
            found(ForgeKind::Gitlab, "b", gl).unwrap(),
            Some((4, "w".into()))
        );
        assert!(found(ForgeKind::Github, "b", b"{\"message\":\"x\"}").is_err());
    }

    #[test]
    fn refusals_say_the_forge_word_and_what_to_do() {
        assert_eq!(
            message(br#"{"message":"Bad\n credentials"}"#),
            "Bad credentials"
        );
        assert_eq!(
            message(br#"{"error":"insufficient_scope"}"#),
            "insufficient_scope"
        );
        assert_eq!(message(b"<html>nope</html>"), "<html>nope</html>");
        let t = target(ForgeKind::Github);
        assert_eq!(advice(&t, 401), "check the token in $T");
        assert!(advice(&t, 404).contains("[finish] repository"));
        assert_eq!(
            auth(ForgeKind::Gitea, "s"),
            ("authorization", "token s".to_string())
        );
        assert_eq!(auth(ForgeKind::Gitlab, "s").0, "private-token");
    }
}
