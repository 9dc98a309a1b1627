//! The dashboard as a person uses it, in a real browser: headless Chromium (Debian's `chromium`
//! and `chromium-driver`; `.ci/run` installs them) driven over WebDriver loads a running loop's
//! page, sees its iteration appear live as the terminal's lines in local time, presses pause and
//! sees the loop pause, and reads it at a phone's width. A screenshot is
//! kept as a test artifact (`target/test-artifacts/dashboard.png`). Without Chromium on the
//! machine the test says so loudly and skips.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{TestHome, wait_for};

struct Driver {
    child: Child,
    addr: String,
    session: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _gone = call(
            &self.addr,
            "DELETE",
            &format!("/session/{}", self.session),
            None,
        );
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// One WebDriver call: the answer's `value`.
fn call(addr: &str, method: &str, path: &str, body: Option<Value>) -> Value {
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    // The answer's headers, then exactly its body (the driver may keep the connection open).
    let mut r = BufReader::new(s);
    let mut len = 0usize;
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
            break;
        }
        if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).unwrap();
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    v["value"].clone()
}

fn start_driver() -> Option<Driver> {
    let (Ok(_), Ok(_)) = (
        std::fs::metadata("/usr/bin/chromium"),
        std::fs::metadata("/usr/bin/chromedriver"),
    ) else {
        eprintln!(
            "\n!!!!! SKIPPED: no /usr/bin/chromium or /usr/bin/chromedriver (apt-get install chromium chromium-driver); the browser test did not run\n"
        );
        return None;
    };
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // The browser's local time is India's (UTC+05:30, no daylight saving): the page's times are
    // seen converted from the events' UTC.
    let child = Command::new("/usr/bin/chromedriver")
        .arg(format!("--port={port}"))
        .env("TZ", "Asia/Kolkata")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let addr = format!("127.0.0.1:{port}");
    wait_for("chromedriver to listen", Duration::from_secs(20), || {
        TcpStream::connect(&addr).map(|_| ())
    });
    let profile = tempfile::tempdir().unwrap().keep();
    let caps = json!({"capabilities": {"alwaysMatch": {"browserName": "chrome",
        "goog:chromeOptions": {"binary": "/usr/bin/chromium", "args": [
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--window-size=1000,900",
            format!("--user-data-dir={}", profile.display())]}}}});
    let v = call(&addr, "POST", "/session", Some(caps));
    let session = v["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("no WebDriver session: {v}"))
        .to_string();
    Some(Driver {
        child,
        addr,
        session,
    })
}

impl Driver {
    fn go(&self, url: &str) {
        call(
            &self.addr,
            "POST",
            &format!("/session/{}/url", self.session),
            Some(json!({ "url": url })),
        );
    }

    fn js(&self, script: &str) -> Value {
        call(
            &self.addr,
            "POST",
            &format!("/session/{}/execute/sync", self.session),
            Some(json!({ "script": script, "args": [] })),
        )
    }

    fn click(&self, css: &str) {
        let el = call(
            &self.addr,
            "POST",
            &format!("/session/{}/element", self.session),
            Some(json!({ "using": "css selector", "value": css })),
        );
        let id = el
            .as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("no element {css}: {el}"))
            .to_string();
        call(
            &self.addr,
            "POST",
            &format!("/session/{}/element/{id}/click", self.session),
            Some(json!({})),
        );
    }

    fn window(&self, width: u32, height: u32) {
        call(
            &self.addr,
            "POST",
            &format!("/session/{}/window/rect", self.session),
            Some(json!({ "width": width, "height": height })),
        );
    }

    fn screenshot(&self) -> Vec<u8> {
        let v = call(
            &self.addr,
            "GET",
            &format!("/session/{}/screenshot", self.session),
            None,
        );
        base64(v.as_str().unwrap_or_default())
    }
}

fn base64(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let bits: Vec<u8> = s.bytes().filter_map(val).collect();
    bits.chunks(4)
        .flat_map(|c| {
            let n = c.iter().fold(0u32, |n, b| (n << 6) | u32::from(*b)) << (6 * (4 - c.len()));
            let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
            bytes[..c.len().saturating_sub(1)].to_vec()
        })
        .collect()
}

#[test]
fn in_a_browser_a_running_loop_shows_live_and_pauses_at_a_click() {
    let Some(d) = start_driver() else { return };
    let t = TestHome::new();
    t.blocked_at_first("night", "");
    let mut serve = t
        .cmd(&["wiggum", "serve", "--bind", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(serve.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    // The URL `serve` printed, on the loop's page: it keeps the token in a cookie, and the
    // page's stream and buttons work with it.
    let printed = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("{line}"));
    let page = printed.replacen("/?token=", "/loop/night?token=", 1);
    d.go(&page);
    // The running iteration shows live, from the feed: the terminal's lines, not raw events.
    let live_text = || {
        d.js("return document.getElementById('live').innerText")
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    wait_for(
        "iteration 1's start in the page",
        Duration::from_secs(30),
        || {
            let text = live_text();
            if text.contains("Iteration 1/10 running") {
                Ok(())
            } else {
                Err(text)
            }
        },
    );
    assert!(!live_text().contains("{\""), "{}", live_text());
    // Each line's time is the event's UTC time in the reader's local time.
    let first = d
        .js("const t=document.querySelector('#live .line time');return [t.dateTime,t.textContent]");
    let utc = chrono::DateTime::parse_from_rfc3339(first[0].as_str().unwrap()).unwrap();
    let india = chrono::FixedOffset::east_opt(5 * 3600 + 1800).unwrap();
    assert_eq!(
        first[1].as_str().unwrap(),
        utc.with_timezone(&india).format("%H:%M:%S").to_string(),
        "{first}"
    );
    assert!(
        live_text().contains("Planning ✓ planned"),
        "{}",
        live_text()
    );
    // Pressed until the page says so (pressing pause twice is harmless).
    wait_for("the page to say it paused", Duration::from_secs(20), || {
        d.click("button[data-act=pause]");
        let said = d.js("return document.getElementById('said').textContent");
        let said = said.as_str().unwrap_or_default().to_string();
        if said.contains("paused at the next iteration boundary") {
            Ok(())
        } else {
            Err(said)
        }
    });
    std::fs::write(t.release_file(), "").unwrap();
    t.wait_state("the loop to pause", |st| st["status"] == "paused");
    // The page reloads after the run's end: the iteration's row is there.
    wait_for("iteration 1's row", Duration::from_secs(30), || {
        let rows = d.js("return document.querySelectorAll('tr.iteration').length");
        if rows.as_u64().unwrap_or(0) >= 1 {
            Ok(())
        } else {
            Err(rows)
        }
    });
    wait_for(
        "iteration 1's line in the feed",
        Duration::from_secs(30),
        || {
            let text = live_text();
            if text.contains("Iteration 1/10 ✓") {
                Ok(())
            } else {
                Err(text)
            }
        },
    );
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/test-artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    let keep = |name: &str| {
        let png = d.screenshot();
        assert!(png.starts_with(b"\x89PNG"), "not a PNG");
        std::fs::write(dir.join(name), &png).unwrap();
    };
    keep("dashboard.png");
    // On a phone's width the page reads without sideways scrolling.
    d.window(390, 844);
    let fits =
        d.js("return [document.documentElement.scrollWidth, document.documentElement.clientWidth]");
    assert!(
        fits[0].as_u64().unwrap() <= fits[1].as_u64().unwrap(),
        "{fits}"
    );
    keep("dashboard-phone.png");
    serve.kill().ok();
    serve.wait().ok();
    t.run(&["wiggum", "stop", "night"]).code(0);
}
