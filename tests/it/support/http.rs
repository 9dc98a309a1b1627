//! A loopback HTTP server for evaluator tests: answers each request with a scripted response
//! (status, body, delay) and keeps what it was sent. Bounded: it serves at most `max` requests.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One scripted response.
#[derive(Clone)]
pub struct Reply {
    /// HTTP status code.
    pub status: u16,
    /// Body (JSON).
    pub body: String,
    /// Wait before answering.
    pub delay: Duration,
}

/// A running server.
pub struct Server {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// Request (path, JSON body) pairs received.
    pub requests: Arc<Mutex<Vec<(String, serde_json::Value)>>>,
    /// The same requests as sent: headers (lower-cased names) and the body as text.
    pub raw: Arc<Mutex<Vec<Raw>>>,
}

/// A request as it arrived.
#[derive(Clone, Debug)]
pub struct Raw {
    /// Header names (lower-cased) and values.
    pub headers: Vec<(String, String)>,
    /// The body, as text.
    pub body: String,
}

impl Raw {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

impl Server {
    /// Serve `replies` in order (the last repeats), at most `max` requests.
    pub fn start(replies: Vec<Reply>, max: usize) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let base = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let raw = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        let seen_raw = Arc::clone(&raw);
        std::thread::spawn(move || {
            for (i, conn) in listener.incoming().take(max).enumerate() {
                let Ok(s) = conn else { continue };
                let seen = Arc::clone(&seen);
                let seen_raw = Arc::clone(&seen_raw);
                let reply = replies.get(i).or(replies.last()).cloned().unwrap();
                std::thread::spawn(move || serve_one(s, &seen, &seen_raw, &reply));
            }
        });
        Server {
            base,
            requests,
            raw,
        }
    }

    /// How many requests arrived.
    pub fn count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }

    /// The JSON bodies received so far, in order.
    pub fn bodies(&self) -> Vec<serde_json::Value> {
        let seen = self.requests.lock().unwrap();
        seen.iter().map(|(_, v)| v.clone()).collect()
    }
}

fn serve_one(
    mut s: std::net::TcpStream,
    seen: &Mutex<Vec<(String, serde_json::Value)>>,
    seen_raw: &Mutex<Vec<Raw>>,
    reply: &Reply,
) {
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut line = String::new();
    r.read_line(&mut line).ok();
    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
    let mut len = 0;
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
        if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok();
    seen_raw.lock().unwrap().push(Raw {
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    });
    let json = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
    seen.lock().unwrap().push((path, json));
    std::thread::sleep(reply.delay);
    let resp = format!(
        "HTTP/1.1 {} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{}",
        reply.status,
        reply.body.len(),
        reply.body
    );
    s.write_all(resp.as_bytes()).ok();
}

/// An OpenAI chat-completions response carrying `content`.
pub fn openai(content: &str) -> Reply {
    let body = serde_json::json!({"id": "x", "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]});
    Reply {
        status: 200,
        body: body.to_string(),
        delay: Duration::ZERO,
    }
}

/// An Ollama /api/chat response carrying `content`.
pub fn ollama(content: &str) -> Reply {
    let body = serde_json::json!({"model": "m", "message": {"role": "assistant", "content": content}, "done": true});
    Reply {
        status: 200,
        body: body.to_string(),
        delay: Duration::ZERO,
    }
}
