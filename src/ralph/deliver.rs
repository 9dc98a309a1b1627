//! Delivering notifications: each sink's message in a task of its own, retried with backoff
//! within `[notify] deliver_within_secs`, never holding up the loop; what could not be delivered
//! is said in `daemon.log` and the loop's `status` (its last event). The end of the loop waits for
//! the messages still going, within the same bound.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;

use super::sinks::{self, Message};
use crate::config::{NotifySink, SinkKind};

/// Messages on their way, and what failed.
#[derive(Default)]
pub struct Deliveries {
    /// The last message on its way to each sink (by its place in `[notify]`): each waits for
    /// the one before, so a sink gets the events in the order they happened.
    going: std::collections::BTreeMap<usize, JoinHandle<()>>,
    failed: Arc<Mutex<Vec<String>>>,
}

impl Deliveries {
    /// Send `m` to sink number `n`, `sink`, in the background, after what is on its way there.
    pub fn send(&mut self, n: usize, sink: &NotifySink, m: Message, within: Duration) {
        let before = self.going.remove(&n);
        let sink = sink.clone();
        let failed = Arc::clone(&self.failed);
        let next = tokio::spawn(async move {
            if let Some(b) = before {
                let _done = b.await;
            }
            if let Err(e) = deliver(&sink, &m, within).await {
                let what = format!("a notification to {} failed: {e}", label(&sink));
                tracing::warn!("{what}");
                if let Ok(mut f) = failed.lock() {
                    f.push(what);
                }
            }
        });
        self.going.insert(n, next);
    }

    /// What failed since last asked.
    pub fn failures(&mut self) -> Vec<String> {
        self.failed
            .lock()
            .map(|mut f| std::mem::take(&mut *f))
            .unwrap_or_default()
    }

    /// Wait for the messages still going, at most `bound` (each message bounds itself, but a
    /// sink that is down holds the ones queued behind its first).
    pub async fn finish(&mut self, bound: Duration) {
        let all = async {
            for (_, h) in std::mem::take(&mut self.going) {
                let _done = h.await;
            }
        };
        if tokio::time::timeout(bound, all).await.is_err() {
            tracing::warn!(
                "notifications still undelivered after {bound:?}; the loop ends without them"
            );
        }
    }
}

fn label(sink: &NotifySink) -> String {
    let kind = serde_json::to_value(sink.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    match &sink.url_env {
        Some(var) => format!("{kind} (${var})"),
        None => kind,
    }
}

/// Send one message, retrying (0.5 s, then doubling) until it is taken or `within` is spent.
async fn deliver(sink: &NotifySink, m: &Message, within: Duration) -> Result<(), String> {
    let started = Instant::now();
    let mut pause = Duration::from_millis(500);
    loop {
        let left = within.saturating_sub(started.elapsed());
        let err = match attempt(sink, m, left.max(Duration::from_millis(100))).await {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        if started.elapsed() + pause >= within {
            return Err(err);
        }
        tokio::time::sleep(pause).await;
        pause *= 2;
    }
}

async fn attempt(sink: &NotifySink, m: &Message, timeout: Duration) -> Result<(), String> {
    if sink.kind == SinkKind::Desktop {
        return desktop(m, timeout).await;
    }
    let var = sink.url_env.as_deref().unwrap_or_default();
    let url = std::env::var(var)
        .ok()
        .filter(|u| !u.trim().is_empty())
        .ok_or_else(|| format!("${var} is not set"))?;
    let Some(req) = sinks::request(sink.kind, m) else {
        return Ok(());
    };
    let client = crate::gate::http::client(timeout).map_err(|e| e.to_string())?;
    let mut r = client
        .post(url.trim())
        .header("content-type", req.content_type)
        .body(req.body);
    for (k, v) in req.headers {
        r = r.header(k, v);
    }
    let resp = r.send().await.map_err(|e| {
        // The URL holds the token: never in a message.
        e.without_url().to_string()
    })?;
    let status = resp.status();
    if status.is_success() {
        Ok(())
    } else {
        Err(format!("HTTP {}", status.as_u16()))
    }
}

/// `notify-send title body`, where it is installed.
async fn desktop(m: &Message, timeout: Duration) -> Result<(), String> {
    if !crate::agent::spec::on_path("notify-send") {
        return Err("notify-send is not installed".into());
    }
    let run = tokio::process::Command::new("notify-send")
        .args(["--app-name", "studio-agents", &m.title, &m.body])
        .kill_on_drop(true)
        .status();
    match tokio::time::timeout(timeout, run).await {
        Ok(Ok(s)) if s.success() => Ok(()),
        Ok(Ok(s)) => Err(format!("notify-send {s}")),
        Ok(Err(e)) => Err(format!("notify-send: {e}")),
        Err(_) => Err("notify-send did not return".into()),
    }
}
