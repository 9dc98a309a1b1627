//! A loopback forge: GitHub's, GitLab's or Gitea's pull-request API over one repository, with
//! its pull requests kept in memory (so a second `pr` finds the first's), every request
//! recorded, and any request without the expected token answered 401.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// Which API it speaks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    Github,
    Gitlab,
    Gitea,
}

/// A request as it arrived.
#[derive(Clone, Debug)]
pub struct Seen {
    /// `GET /repos/…?…`.
    pub line: String,
    /// The header carrying the token, as sent.
    pub auth: Option<String>,
}

/// One pull request: number, head branch, title, body.
#[derive(Clone, Debug)]
pub struct Pull {
    pub number: u64,
    pub head: String,
    pub base: String,
    pub title: String,
    pub body: String,
}

#[derive(Default)]
struct Books {
    seen: Vec<Seen>,
    pulls: Vec<Pull>,
}

/// A running forge.
pub struct Forge {
    /// Where `[finish] api` points.
    pub api: String,
    books: Arc<Mutex<Books>>,
}

impl Forge {
    /// Serve `kind`'s API, accepting the token `token`.
    pub fn start(kind: Kind, token: &str) -> Forge {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let prefix = match kind {
            Kind::Github => "",
            Kind::Gitlab => "/api/v4",
            Kind::Gitea => "/api/v1",
        };
        let api = format!("http://{}{prefix}", listener.local_addr().unwrap());
        let books: Arc<Mutex<Books>> = Arc::default();
        let shared = Arc::clone(&books);
        let want = match kind {
            Kind::Github => ("authorization", format!("Bearer {token}")),
            Kind::Gitlab => ("private-token", token.to_string()),
            Kind::Gitea => ("authorization", format!("token {token}")),
        };
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(s) = conn else { continue };
                serve(s, kind, &want, &shared);
            }
        });
        Forge { api, books }
    }

    /// The requests so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.books.lock().unwrap().seen.clone()
    }

    /// Hold `n` open pull requests of other branches before any request.
    pub fn seed(&self, n: u64) {
        let mut b = self.books.lock().unwrap();
        for i in 0..n {
            let number = b.pulls.len() as u64 + 1;
            b.pulls.push(Pull {
                number,
                head: format!("other-{i}"),
                base: "main".into(),
                title: "other".into(),
                body: String::new(),
            });
        }
    }

    /// The pull requests it holds.
    pub fn pulls(&self) -> Vec<Pull> {
        self.books.lock().unwrap().pulls.clone()
    }
}

fn serve(mut s: std::net::TcpStream, kind: Kind, want: &(&str, String), books: &Mutex<Books>) {
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut line = String::new();
    r.read_line(&mut line).ok();
    let (mut len, mut auth) = (0, None);
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            let k = k.trim().to_ascii_lowercase();
            if k == "content-length" {
                len = v.trim().parse().unwrap_or(0);
            }
            if k == want.0 {
                auth = Some(v.trim().to_string());
            }
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok();
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let line = line.trim().trim_end_matches(" HTTP/1.1").to_string();
    let mut b = books.lock().unwrap();
    b.seen.push(Seen {
        line: line.clone(),
        auth: auth.clone(),
    });
    let (status, answer) = if auth.as_deref() != Some(want.1.as_str()) {
        (401, serde_json::json!({"message": "Bad credentials"}))
    } else {
        answer(kind, &line, &body, &mut b.pulls)
    };
    drop(b);
    let text = answer.to_string();
    let resp = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
        text.len()
    );
    s.write_all(resp.as_bytes()).ok();
}

fn shown(kind: Kind, p: &Pull) -> serde_json::Value {
    match kind {
        Kind::Gitlab => serde_json::json!({"iid": p.number,
            "web_url": format!("https://forge.test/team/notes/-/merge_requests/{}", p.number)}),
        _ => serde_json::json!({"number": p.number,
            "html_url": format!("https://forge.test/team/notes/pull/{}", p.number),
            "head": {"ref": p.head}}),
    }
}

fn answer(
    kind: Kind,
    line: &str,
    body: &serde_json::Value,
    pulls: &mut Vec<Pull>,
) -> (u16, serde_json::Value) {
    let (method, path) = line.split_once(' ').unwrap_or_default();
    let text = |k: &str| body[k].as_str().unwrap_or_default().to_string();
    let (head_key, base_key, body_key) = match kind {
        Kind::Gitlab => ("source_branch", "target_branch", "description"),
        _ => ("head", "base", "body"),
    };
    match method {
        "GET" => {
            // Gitea pages its listing (`limit`, `page` from 1); the others filter by branch.
            let query = |k: &str| {
                path.split(['?', '&'])
                    .find_map(|kv| kv.strip_prefix(k)?.strip_prefix('=')?.parse::<usize>().ok())
            };
            let (limit, page) = (
                query("limit").unwrap_or(usize::MAX),
                query("page").unwrap_or(1),
            );
            let list: Vec<_> = pulls
                .iter()
                .skip(limit.saturating_mul(page.saturating_sub(1)))
                .take(limit)
                .map(|p| shown(kind, p))
                .collect();
            (200, serde_json::Value::Array(list))
        }
        "POST" => {
            let p = Pull {
                number: pulls.len() as u64 + 1,
                head: text(head_key),
                base: text(base_key),
                title: text("title"),
                body: text(body_key),
            };
            pulls.push(p.clone());
            (201, shown(kind, &p))
        }
        "PATCH" | "PUT" => {
            let n: u64 = path.rsplit('/').next().unwrap_or("").parse().unwrap_or(0);
            match pulls.iter_mut().find(|p| p.number == n) {
                Some(p) => {
                    p.title = text("title");
                    p.body = text(body_key);
                    (200, shown(kind, p))
                }
                None => (404, serde_json::json!({"message": "Not Found"})),
            }
        }
        _ => (405, serde_json::json!({"message": "no"})),
    }
}
