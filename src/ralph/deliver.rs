//! Delivering notifications: each sink's message in a task of its own, retried with backoff
//! within `[notify] deliver_within_secs`, never holding up the loop; what could not be delivered
//! is said in `daemon.log` and the loop's `status` (its last event). Whether to try again is a
//! pure decision over the failure ([`next`]): what may succeed later (no answer, 5xx, 429) is
//! retried, what will not (a refused connection, a 4xx) is given up at once. The end of the loop
//! waits for the messages still going, within the same bound, and no longer.

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
    going: std::collections::BTreeMap<usize, (String, JoinHandle<()>)>,
    failed: Arc<Mutex<Vec<String>>>,
}

impl Deliveries {
    /// Send `m` to sink number `n`, `sink`, in the background, after what is on its way there.
    pub fn send(&mut self, n: usize, sink: &NotifySink, m: Message, within: Duration) {
        let before = self.going.remove(&n).map(|(_, h)| h);
        let name = label(sink);
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
        self.going.insert(n, (name, next));
    }

    /// What failed since last asked.
    pub fn failures(&mut self) -> Vec<String> {
        self.failed
            .lock()
            .map(|mut f| std::mem::take(&mut *f))
            .unwrap_or_default()
    }

    /// Wait for the messages still going, at most `bound` (each message bounds itself, but a
    /// sink that is slow holds the ones queued behind its first); those still going then are
    /// dropped, and said as failures.
    pub async fn finish(&mut self, bound: Duration) {
        let going = std::mem::take(&mut self.going);
        let deadline = tokio::time::Instant::now() + bound;
        for (_, (name, mut h)) in going {
            if tokio::time::timeout_at(deadline, &mut h).await.is_err() {
                h.abort();
                let what = format!(
                    "a notification to {name} was not delivered within {}s",
                    bound.as_secs()
                );
                tracing::warn!("{what}; the loop ends without it");
                if let Ok(mut f) = self.failed.lock() {
                    f.push(what);
                }
            }
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

/// Why an attempt to deliver failed, as far as trying again goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The variable naming the sink's URL is unset or empty.
    Unset(String),
    /// Nothing listens there: the connection was refused.
    Refused,
    /// The address cannot be used (a name that does not resolve, a URL that is none).
    Unusable(String),
    /// No answer in time (to connect, or to the request).
    Timeout,
    /// The connection failed otherwise or broke mid-answer.
    Broken(String),
    /// The sink answered with this HTTP status.
    Status(u16),
    /// `notify-send` is missing or failed.
    Desktop(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Unset(var) => write!(f, "${var} is not set"),
            Failure::Refused => f.write_str("connection refused"),
            Failure::Unusable(e) | Failure::Broken(e) | Failure::Desktop(e) => f.write_str(e),
            Failure::Timeout => f.write_str("no answer in time"),
            Failure::Status(code) => write!(f, "HTTP {code}"),
        }
    }
}

/// What to do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Try again after this pause.
    RetryAfter(Duration),
    /// Stop: trying again would not help, or the time is spent.
    GiveUp,
}

/// The first pause between attempts; each next one doubles, up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(500);
const MAX_PAUSE: Duration = Duration::from_secs(8);

/// After attempt number `attempt` (from 1) failed with `f`, `elapsed` into a message that may
/// take `within`: retry what may succeed later (no answer in time, a broken connection, 5xx,
/// 408, 425, 429) with a doubling pause that still ends within the bound; give up at once on
/// what will not (a refused connection, an unusable address, an unset URL, other 4xx, the
/// desktop).
#[must_use]
pub fn next(f: &Failure, attempt: u32, elapsed: Duration, within: Duration) -> Next {
    let may_succeed = match f {
        Failure::Timeout | Failure::Broken(_) => true,
        Failure::Status(code) => *code >= 500 || matches!(code, 408 | 425 | 429),
        Failure::Unset(_) | Failure::Refused | Failure::Unusable(_) | Failure::Desktop(_) => false,
    };
    let doublings = attempt.saturating_sub(1).min(5);
    let pause = (FIRST_PAUSE * 2u32.pow(doublings)).min(MAX_PAUSE);
    if may_succeed && elapsed + pause < within {
        Next::RetryAfter(pause)
    } else {
        Next::GiveUp
    }
}

/// Send one message, retrying as [`next`] says until it is taken or `within` is spent.
async fn deliver(sink: &NotifySink, m: &Message, within: Duration) -> Result<(), Failure> {
    let started = Instant::now();
    let mut attempt = 1;
    loop {
        let left = within.saturating_sub(started.elapsed());
        let failure = match self::attempt(sink, m, left.max(Duration::from_millis(100))).await {
            Ok(()) => return Ok(()),
            Err(f) => f,
        };
        match next(&failure, attempt, started.elapsed(), within) {
            Next::RetryAfter(pause) => tokio::time::sleep(pause).await,
            Next::GiveUp => return Err(failure),
        }
        attempt += 1;
    }
}

async fn attempt(sink: &NotifySink, m: &Message, timeout: Duration) -> Result<(), Failure> {
    if sink.kind == SinkKind::Desktop {
        return desktop(m, timeout).await.map_err(Failure::Desktop);
    }
    let var = sink.url_env.as_deref().unwrap_or_default();
    let url = std::env::var(var)
        .ok()
        .filter(|u| !u.trim().is_empty())
        .ok_or_else(|| Failure::Unset(var.to_string()))?;
    let Some(req) = sinks::request(sink.kind, m) else {
        return Ok(());
    };
    let client = crate::gate::http::client(timeout).map_err(|e| Failure::Broken(e.to_string()))?;
    let mut r = client
        .post(url.trim())
        .header("content-type", req.content_type)
        .body(req.body);
    for (k, v) in req.headers {
        r = r.header(k, v);
    }
    let resp = r.send().await.map_err(failure_of)?;
    let status = resp.status();
    if status.is_success() {
        Ok(())
    } else {
        Err(Failure::Status(status.as_u16()))
    }
}

/// What a transport error is, for [`next`]; its words never hold the URL (which holds the
/// token).
fn failure_of(e: reqwest::Error) -> Failure {
    let (timeout, builder, connect) = (e.is_timeout(), e.is_builder(), e.is_connect());
    let refused = io_kind(&e) == Some(std::io::ErrorKind::ConnectionRefused);
    let said = e.without_url().to_string();
    if timeout {
        Failure::Timeout
    } else if builder || (connect && said.contains("dns error")) {
        Failure::Unusable(said)
    } else if connect && refused {
        Failure::Refused
    } else {
        Failure::Broken(said)
    }
}

/// The kind of the I/O error under `e`, if one is.
fn io_kind(e: &(dyn std::error::Error + 'static)) -> Option<std::io::ErrorKind> {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            return Some(io.kind());
        }
        cur = err.source();
    }
    None
}

/// `notify-send title body`, where it is installed.
async fn desktop(m: &Message, timeout: Duration) -> Result<(), String> {
    if !crate::agent::spec::on_path("notify-send") {
        return Err("notify-send is not installed".into());
    }
    let run = tokio::process::Command::new("notify-send")
        .args([
            "--app-name",
            "studio-agents",
            &m.title,
            &sinks::desktop_body(m),
        ])
        .kill_on_drop(true)
        .status();
    match tokio::time::timeout(timeout, run).await {
        Ok(Ok(s)) if s.success() => Ok(()),
        Ok(Ok(s)) => Err(format!("notify-send {s}")),
        Ok(Err(e)) => Err(format!("notify-send: {e}")),
        Err(_) => Err("notify-send did not return".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_may_succeed_is_retried_within_the_bound_and_what_will_not_is_given_up() {
        let s = Duration::from_secs;
        let ms = Duration::from_millis;
        let retry = Next::RetryAfter;
        let cases = [
            // (failure, attempt, elapsed, within) → next
            (Failure::Refused, 1, s(0), s(30), Next::GiveUp),
            (Failure::Unset("T".into()), 1, s(0), s(30), Next::GiveUp),
            (
                Failure::Unusable("dns error".into()),
                1,
                s(0),
                s(30),
                Next::GiveUp,
            ),
            (
                Failure::Desktop("notify-send".into()),
                1,
                s(0),
                s(30),
                Next::GiveUp,
            ),
            (Failure::Status(404), 1, s(0), s(30), Next::GiveUp),
            (Failure::Status(400), 1, s(0), s(30), Next::GiveUp),
            (Failure::Status(401), 2, s(0), s(30), Next::GiveUp),
            (Failure::Status(503), 1, s(0), s(30), retry(ms(500))),
            (Failure::Status(500), 2, s(1), s(30), retry(s(1))),
            (Failure::Status(429), 3, s(2), s(30), retry(s(2))),
            (Failure::Status(408), 1, s(0), s(30), retry(ms(500))),
            (Failure::Timeout, 4, s(4), s(30), retry(s(4))),
            (Failure::Broken("reset".into()), 5, s(8), s(30), retry(s(8))),
            // The pause stops doubling at 8 s.
            (Failure::Status(502), 9, s(0), s(60), retry(s(8))),
            // The pause would end past the bound: give up now.
            (Failure::Status(503), 2, ms(1500), s(2), Next::GiveUp),
            (Failure::Timeout, 1, s(2), s(2), Next::GiveUp),
        ];
        for (f, attempt, elapsed, within, want) in cases {
            assert_eq!(
                next(&f, attempt, elapsed, within),
                want,
                "{f:?} attempt {attempt} at {elapsed:?} of {within:?}"
            );
        }
    }

    #[test]
    fn a_failure_reads_as_a_few_words() {
        assert_eq!(Failure::Status(503).to_string(), "HTTP 503");
        assert_eq!(Failure::Refused.to_string(), "connection refused");
        assert_eq!(
            Failure::Unset("T_HOOK".into()).to_string(),
            "$T_HOOK is not set"
        );
    }
}
