//! `wiggum serve`: the local dashboard against real loops — every page, a diff, the event
//! stream, and the controls; all of them need the token `serve` printed (kept in the cookie its
//! URL sets), and answer only at the bound address, to no other site's page.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::support::TestHome;
use crate::support::wait::Lines;

/// A running `serve`: its address, token, and the cookie its printed URL set; killed on drop.
pub(crate) struct Served {
    child: Child,
    pub(crate) addr: String,
    pub(crate) token: String,
    cookie: String,
}

impl Served {
    /// `GET path` as the browser that opened the printed URL.
    pub(crate) fn get(&self, path: &str) -> (u16, String) {
        http(&self.addr, "GET", path, &[("cookie", &self.cookie)])
    }

    /// A stream at `path` as that browser opens it, its lines read beside the test.
    fn stream(&self, path: &str) -> Lines {
        let mut c = TcpStream::connect(&self.addr).unwrap();
        c.write_all(
            format!(
                "GET {path} HTTP/1.1\r\nhost: {}\r\ncookie: {}\r\nconnection: close\r\n\r\n",
                self.addr, self.cookie
            )
            .as_bytes(),
        )
        .unwrap();
        Lines::beside(c)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

pub(crate) fn serve(t: &TestHome) -> Served {
    serve_with(t, &[])
}

fn serve_with(t: &TestHome, extra: &[&str]) -> Served {
    let mut args = vec!["wiggum", "serve", "--bind", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    let mut child = t.cmd(&args).stdout(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    // `dashboard: http://ADDR/?token=TOKEN   (open this address: …)`
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|s| s.split('/').next())
        .unwrap_or_else(|| panic!("{line}"))
        .to_string();
    let token = line
        .split("?token=")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or_else(|| panic!("{line}"))
        .to_string();
    let cookie = open_printed_url(&addr, &token);
    Served {
        child,
        addr,
        token,
        cookie,
    }
}

/// Open the URL `serve` printed: it sends the browser on to the page with the token in a
/// cookie no script can read and no other site's page sends. The cookie, as a browser sends it.
fn open_printed_url(addr: &str, token: &str) -> String {
    let (code, head, _) = http_at(addr, addr, "GET", &format!("/loop/x?token={token}"), &[]);
    assert_eq!(code, 303, "{head}");
    assert!(head.contains("\r\nlocation: /loop/x\r\n"), "{head}");
    let set = head
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .unwrap_or_else(|| panic!("{head}"));
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict"),
        "{set}"
    );
    set.split(';').next().unwrap().to_string()
}

/// One HTTP/1.1 request: the status and the body.
fn http(addr: &str, method: &str, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let (code, _, body) = http_at(addr, addr, method, path, headers);
    (code, body)
}

/// One HTTP/1.1 request to `addr` naming `host`: the status, the head and the body.
fn http_at(
    addr: &str,
    host: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\ncontent-length: 0\r\n"
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (status, head.to_string(), body.to_string())
}

#[test]
fn every_page_of_an_ended_loop_and_its_event_stream() {
    let t = TestHome::new();
    let fg = t.start_fg("dash", "", &["--max-rounds", "1"]);
    fg.code(0);
    let s = serve(&t);
    let (code, index) = s.get("/");
    assert_eq!(code, 200);
    assert!(
        index.contains("<a href=\"/loop/dash\">dash</a>")
            && index.contains("completed")
            && index.contains("<th>time</th>")
            && index.contains("every item in fix_plan.md is done"),
        "{index}"
    );
    // Quality and the gate before → after, as `summary` has them.
    let summary = t.run(&["wiggum", "summary", "dash", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&summary.stdout()).unwrap();
    let q = &v["lift"]["quality"][0];
    let want_q = format!(
        "<td>{:.2} → {:.2}</td>",
        q["before"].as_f64().unwrap(),
        q["after"].as_f64().unwrap()
    );
    let want_g = format!(
        "<td>{:.1} → {:.1}</td>",
        v["lift"]["gate_r1"].as_f64().unwrap(),
        v["lift"]["gate_final"].as_f64().unwrap()
    );
    assert!(
        index.contains(&want_q) && index.contains(&want_g),
        "{want_q} {want_g} in {index}"
    );
    let (code, page) = s.get("/loop/dash");
    assert_eq!(code, 200);
    assert!(
        page.contains("<svg") && page.contains("data-name=\"final\""),
        "{page}"
    );
    assert_eq!(
        page.matches("<tr class=\"iteration\">").count(),
        3,
        "{page}"
    );
    assert!(page.contains("href=\"/loop/dash/diff/2\""), "{page}");
    // The page names the loop's result, as `status` does, and that its gate did not pass.
    let result = format!(
        "<p id=\"result\">result: {}/wiggum/final/artifact.md (iteration 3; its gate 6.8 did not pass 8.0)</p>",
        t.art().display()
    );
    assert!(page.contains(&result), "{result} in {page}");
    // Nothing is fetched from elsewhere.
    assert!(
        !page.contains("src=\"http") && !page.contains("href=\"http"),
        "{page}"
    );
    let (code, diff) = s.get("/loop/dash/diff/2");
    assert_eq!(code, 200);
    assert!(diff.contains("+## Improve part 2"), "{diff}");
    // The ended loop's stream: its events, then the end.
    let (code, stream) = s.get("/loop/dash/events");
    assert_eq!(code, 200);
    let datas: Vec<&str> = stream.lines().filter(|l| l.contains("data: {")).collect();
    assert!(
        datas.last().unwrap().contains("\"event\":\"stop\""),
        "{stream}"
    );
    // The page's feed says what the terminal said, line for line, the completion block last,
    // each with its UTC time (the page shows it in local time); never the raw events.
    let (code, feed) = s.get("/loop/dash/feed");
    assert_eq!(code, 200);
    let items: Vec<serde_json::Value> = feed
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let said: Vec<&str> = items.iter().map(|i| i["line"].as_str().unwrap()).collect();
    assert_eq!(said.join("\n"), fg.stdout().trim_end());
    assert_eq!(items.last().unwrap()["kind"], "end");
    assert!(
        items
            .iter()
            .all(|i| chrono::DateTime::parse_from_rfc3339(i["at"].as_str().unwrap()).is_ok()),
        "{feed}"
    );
    assert!(
        page.contains("new EventSource('/loop/'+topic+'/feed')")
            && page.contains(
                "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            ),
        "{page}"
    );
    // The chart starts at the loop's before: the original's quality, the gate's first score.
    assert!(page.contains(">before</text>"), "{page}");
    // No control without the token.
    let (code, said) = http(&s.addr, "POST", "/loop/dash/pause", &[]);
    assert_eq!(code, 401, "{said}");
    let (code, _) = http(
        &s.addr,
        "POST",
        "/loop/dash/pause",
        &[("x-wiggum-token", "guessed")],
    );
    assert_eq!(code, 401);
    let (code, _) = s.get("/loop/nosuch");
    assert_eq!(code, 404);
}

#[test]
fn a_running_loop_streams_live_and_the_token_pauses_and_stops_it() {
    let t = TestHome::new();
    t.blocked_at_first("live", "");
    let s = serve(&t);
    // The stream, read beside the test.
    let mut lines = s.stream("/loop/live/events");
    lines.wait_for_line(
        "iteration 1's start, live",
        "\"event\":\"run_started\",\"iteration\":1",
        Duration::from_secs(20),
    );
    let token = [("x-wiggum-token", s.token.as_str())];
    let (code, said) = http(&s.addr, "POST", "/loop/live/pause", &token);
    assert_eq!(
        (code, said.as_str()),
        (200, "paused at the next iteration boundary")
    );
    std::fs::write(t.release_file(), "").unwrap();
    t.wait_state("the loop to pause", |st| st["status"] == "paused");
    // Iteration 1's end arrived on the stream while it ran.
    lines.wait_for_line(
        "iteration 1's end on the stream",
        "\"event\":\"run_ended\",\"iteration\":1",
        Duration::from_secs(20),
    );
    let (code, said) = http(&s.addr, "POST", "/loop/live/stop", &token);
    assert_eq!((code, said.as_str()), (200, "stopping"));
    t.wait_state("the loop to stop", |st| st["status"] == "stopped");
}

#[test]
fn a_waiting_loop_s_feed_says_why_and_until_when() {
    let t = TestHome::new();
    t.start_bg("far", "limit", "FAKE_RESET=3600", &[]).code(0);
    let st = t.wait_state("the loop to wait", |s| s["status"] == "waiting");
    let s = serve(&t);
    let mut lines = s.stream("/loop/far/feed");
    lines.wait_for_line(
        "the wait on the feed",
        "\"kind\":\"wait\"",
        Duration::from_secs(20),
    );
    let data = lines
        .seen
        .iter()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str::<serde_json::Value>(d).unwrap())
        .collect::<Vec<_>>();
    // The limited run's line, as the terminal said it, then the wait with its end.
    let said: Vec<&str> = data.iter().map(|d| d["line"].as_str().unwrap()).collect();
    assert!(
        said[0].starts_with("Planning ✓ planned")
            && said[1].starts_with("Iteration 1/10 ✗ limited · "),
        "{said:?}"
    );
    let wait = data.iter().find(|d| d["kind"] == "wait").unwrap();
    assert_eq!(
        wait["line"],
        format!("waiting ({}) until", st["waiting_reason"].as_str().unwrap())
    );
    let until =
        |v: &serde_json::Value| chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap()).unwrap();
    assert_eq!(until(&wait["until"]), until(&st["waiting_until"]));
    t.run(&["wiggum", "stop", "far"]).code(0);
}

#[test]
fn a_remote_loop_has_a_page_of_its_own_read_from_its_records() {
    use crate::support::git;
    let t = TestHome::new();
    // A remote whose `wiggum/notes` records hold a loop's state and runs, as a run pushed them.
    let seed = t.root().join("seed");
    std::fs::create_dir_all(&seed).unwrap();
    git(&seed, &["init", "-q", "-b", "main"]);
    std::fs::write(seed.join("README.md"), "x\n").unwrap();
    git(&seed, &["add", "."]);
    git(&seed, &["commit", "-qm", "base"]);
    t.start_fg("notes", "", &["--max-rounds", "1"]).code(0);
    let state = std::fs::read_to_string(t.wiggum("state.json")).unwrap();
    let runs = std::fs::read_to_string(t.wiggum("runs.jsonl")).unwrap();
    // `git args` in the seed with `input` on stdin; its output, trimmed.
    let piped = |args: &[&str], input: &str| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(&seed)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                c.stdin.take().unwrap().write_all(input.as_bytes())?;
                c.wait_with_output()
            })
            .unwrap();
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    let (s, r) = (
        piped(&["hash-object", "-w", "--stdin"], &state),
        piped(&["hash-object", "-w", "--stdin"], &runs),
    );
    let tree = piped(
        &["mktree"],
        &format!("100644 blob {s}\tstate.json\n100644 blob {r}\truns.jsonl\n"),
    );
    let commit = git(&seed, &["commit-tree", &tree, "-m", "wiggum records"]);
    git(
        &seed,
        &[
            "update-ref",
            "refs/studio-agents/remote-notes",
            commit.trim(),
        ],
    );
    // The local loop is forgotten: what the page shows comes from the remote.
    std::fs::remove_dir_all(t.home().join("loops")).unwrap();
    let url = seed.display().to_string();
    let s = serve_with(&t, &["--remote", &url]);
    let (code, index) = s.get("/");
    assert_eq!(code, 200);
    assert!(
        index.contains("<a href=\"/remote/remote-notes\">remote-notes</a>"),
        "{index}"
    );
    let (code, page) = s.get("/remote/remote-notes");
    assert_eq!(code, 200, "{page}");
    assert!(
        page.contains("read from the records a remote run pushed")
            && page.contains("data-name=\"final\"")
            && !page.contains("data-act=\"pause\""),
        "{page}"
    );
    assert_eq!(
        page.matches("<tr class=\"iteration\">").count(),
        3,
        "{page}"
    );
    let (code, _) = s.get("/remote/nosuch");
    assert_eq!(code, 404);
}

#[test]
fn without_the_token_at_another_host_or_from_another_sites_page_nothing_is_answered() {
    let t = TestHome::new();
    t.start_fg("private", "", &["--max-rounds", "1"]).code(0);
    let s = serve(&t);
    // Nothing without the token: the index, a page, a diff, the event stream, a control.
    for path in [
        "/",
        "/loop/private",
        "/loop/private/diff/2",
        "/loop/private/events",
    ] {
        let (code, body) = http(&s.addr, "GET", path, &[]);
        assert_eq!(code, 401, "{path}: {body}");
        assert!(!body.contains("Improve part"), "{path}: {body}");
    }
    let wrong = format!("{}=guessed", s.cookie.split('=').next().unwrap());
    let (code, _) = http(
        &s.addr,
        "GET",
        "/loop/private/diff/2",
        &[("cookie", &wrong)],
    );
    assert_eq!(code, 401);
    let (code, _) = http(&s.addr, "POST", "/loop/private/stop", &[]);
    assert_eq!(code, 401);
    // A page whose name was rebound to this address sends its own name as the host: even with
    // the token, it is answered 421.
    let port = s.addr.rsplit(':').next().unwrap();
    let rebound = format!("rebind.evil.example:{port}");
    let cookie = [("cookie", s.cookie.as_str())];
    for path in ["/", "/loop/private/diff/2", "/loop/private/events"] {
        let (code, _, body) = http_at(&s.addr, &rebound, "GET", path, &cookie);
        assert_eq!(code, 421, "{path}: {body}");
    }
    // Another site's page: 403, and the loop is not stopped.
    let foreign = [
        ("cookie", s.cookie.as_str()),
        ("origin", "http://evil.example"),
    ];
    let (code, _) = http(&s.addr, "GET", "/loop/private/diff/2", &foreign);
    assert_eq!(code, 403);
    let (code, _) = http(&s.addr, "POST", "/loop/private/stop", &foreign);
    assert_eq!(code, 403);
    // The same requests as the user's browser makes them are answered.
    let own = format!("http://{}", s.addr);
    let (code, diff) = http(
        &s.addr,
        "GET",
        "/loop/private/diff/2",
        &[("cookie", &s.cookie), ("origin", &own)],
    );
    assert_eq!(code, 200);
    assert!(diff.contains("+## Improve part 2"), "{diff}");
    let (code, _) = http(&s.addr, "GET", "/", &[("x-wiggum-token", s.token.as_str())]);
    assert_eq!(code, 200);
}
