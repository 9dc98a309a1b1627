//! What a notification says and how each sink wants it: one message per event (the topic, the
//! machine, the reason, iterations, quality, gate, cost, the commands to look further), shaped as
//! a JSON event (webhook), ntfy's text with title and tags in headers, Slack's `{"text"}`,
//! Discord's `{"content"}`, or `notify-send`'s title and body. Pure.

use serde_json::{Value, json};

use crate::config::{NotifyEvent, SinkKind};

/// The sink event a loop event is, if any (`waiting` on a limit and a `breaker` are `stalled`).
#[must_use]
pub fn event_of(loop_event: &str) -> Option<NotifyEvent> {
    Some(match loop_event {
        "stop" => NotifyEvent::Stop,
        "needs_human" => NotifyEvent::NeedsHuman,
        "waiting" | "breaker" => NotifyEvent::Stalled,
        "budget" => NotifyEvent::Budget,
        "iteration_end" => NotifyEvent::IterationEnd,
        _ => return None,
    })
}

/// One notification.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// One line.
    pub title: String,
    /// A few lines: the figures, then where to look.
    pub body: String,
    /// The event as the webhook sends it (the hooks' payload, with `title`, `body`, `host`).
    pub event: Value,
}

/// What a loop is at the event, for its message.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures {
    /// The loop's topic.
    pub topic: String,
    /// The machine it runs on.
    pub host: String,
    /// Iterations done, and the limit.
    pub iterations: (u32, u32),
    /// Built-in quality before → now.
    pub quality: (Option<f64>, Option<f64>),
    /// The gate: the first gated iteration's first-round score → the last kept score.
    pub gate: (Option<f64>, Option<f64>),
    /// Spend as shown (`$1.2300`, `unknown`).
    pub cost: String,
}

/// The message of `loop_event` (`stop`, `waiting`, …) with its reason; `payload` is the hook's
/// JSON for it.
#[must_use]
pub fn message(loop_event: &str, reason: &str, f: &Figures, payload: &Value) -> Message {
    let t = &f.topic;
    let title = match loop_event {
        "stop" => format!("loop `{t}` ended: {reason}"),
        "needs_human" => format!("loop `{t}` waits for you: {reason}"),
        "waiting" => format!("loop `{t}` waits: {reason}"),
        "breaker" => format!("loop `{t}` stalled: {reason}"),
        "budget" => format!("loop `{t}` spent its budget: {reason}"),
        "iteration_end" => format!("loop `{t}` finished iteration {}", f.iterations.0),
        other => format!("loop `{t}`: {other}"),
    };
    let q = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.2}"));
    let g = |v: Option<f64>| v.map_or("-".to_string(), |g| format!("{g:.1}"));
    let gate = format!("{} → {}", g(f.gate.0), g(f.gate.1));
    let detail = payload
        .get("detail")
        .and_then(Value::as_str)
        .filter(|d| !d.is_empty())
        .map(|d| format!("{d}\n"))
        .unwrap_or_default();
    let body = format!(
        "{detail}on {host}: iterations {done}/{max} · quality {before} → {after} · gate {gate} · cost {cost}\n\
         studio-agents wiggum status {t} · wiggum summary {t} · wiggum logs {t}",
        host = f.host,
        done = f.iterations.0,
        max = f.iterations.1,
        before = q(f.quality.0),
        after = q(f.quality.1),
        cost = f.cost,
    );
    let mut event = payload.clone();
    if let Value::Object(m) = &mut event {
        m.insert("title".into(), title.clone().into());
        m.insert("body".into(), body.clone().into());
        m.insert("host".into(), f.host.clone().into());
    }
    Message { title, body, event }
}

/// An HTTP request for a sink: the content type, extra headers, the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// `Content-Type`.
    pub content_type: &'static str,
    /// Extra headers.
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: String,
}

/// The request `kind` wants for `m` (`None` for the desktop, which is no HTTP sink).
#[must_use]
pub fn request(kind: SinkKind, m: &Message) -> Option<Request> {
    let text = format!("{}\n{}", m.title, m.body);
    Some(match kind {
        SinkKind::Webhook => Request {
            content_type: "application/json",
            headers: Vec::new(),
            body: m.event.to_string(),
        },
        SinkKind::Ntfy => {
            let urgent = matches!(
                m.event.get("event").and_then(Value::as_str),
                Some("needs_human" | "breaker" | "waiting" | "budget")
            );
            Request {
                content_type: "text/plain; charset=utf-8",
                headers: vec![
                    // Header values are ASCII: the title's backticks and arrows stay in the body.
                    ("Title", ascii(&m.title)),
                    ("Tags", if urgent { "warning" } else { "robot" }.into()),
                    ("Priority", if urgent { "high" } else { "default" }.into()),
                ],
                body: m.body.clone(),
            }
        }
        SinkKind::Slack => Request {
            content_type: "application/json",
            headers: Vec::new(),
            body: json!({ "text": text }).to_string(),
        },
        SinkKind::Discord => Request {
            content_type: "application/json",
            headers: Vec::new(),
            // Discord refuses content over 2,000 characters.
            body: json!({ "content": text.chars().take(2000).collect::<String>() }).to_string(),
        },
        SinkKind::Desktop => return None,
    })
}

fn ascii(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii() && !c.is_ascii_control() {
                c
            } else {
                '?'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures() -> Figures {
        Figures {
            topic: "research".into(),
            host: "box".into(),
            iterations: (3, 10),
            quality: (Some(0.22), Some(0.6)),
            gate: (Some(5.1), Some(6.42)),
            cost: "$1.2000".into(),
        }
    }

    #[test]
    fn a_message_names_the_loop_the_machine_the_figures_and_where_to_look() {
        let m = message(
            "stop",
            "every item in fix_plan.md is done",
            &figures(),
            &json!({"event": "stop", "topic": "research"}),
        );
        assert_eq!(
            m.title,
            "loop `research` ended: every item in fix_plan.md is done"
        );
        assert_eq!(
            m.body,
            "on box: iterations 3/10 · quality 0.22 → 0.60 · gate 5.1 → 6.4 · cost $1.2000\nstudio-agents wiggum status research · wiggum summary research · wiggum logs research"
        );
        assert_eq!(m.event["host"], "box");
        assert_eq!(m.event["topic"], "research");
    }

    #[test]
    fn each_sink_gets_its_own_format() {
        let m = message(
            "waiting",
            "usage limit until 03:40",
            &figures(),
            &json!({"event": "waiting"}),
        );
        let hook = request(SinkKind::Webhook, &m).unwrap();
        let v: Value = serde_json::from_str(&hook.body).unwrap();
        assert_eq!(
            (v["event"].as_str(), hook.content_type),
            (Some("waiting"), "application/json")
        );
        let ntfy = request(SinkKind::Ntfy, &m).unwrap();
        assert_eq!(ntfy.body, m.body);
        assert_eq!(
            ntfy.headers,
            [
                (
                    "Title",
                    "loop `research` waits: usage limit until 03:40".to_string()
                ),
                ("Tags", "warning".into()),
                ("Priority", "high".into())
            ]
        );
        let slack: Value =
            serde_json::from_str(&request(SinkKind::Slack, &m).unwrap().body).unwrap();
        assert!(
            slack["text"]
                .as_str()
                .unwrap()
                .starts_with("loop `research` waits")
        );
        let discord: Value =
            serde_json::from_str(&request(SinkKind::Discord, &m).unwrap().body).unwrap();
        assert!(
            discord["content"]
                .as_str()
                .unwrap()
                .ends_with("wiggum logs research")
        );
        assert!(request(SinkKind::Desktop, &m).is_none());
        assert_eq!(ascii("a → b `c`"), "a ? b `c`");
    }

    #[test]
    fn loop_events_map_to_sink_events() {
        for (e, want) in [
            ("stop", Some(NotifyEvent::Stop)),
            ("waiting", Some(NotifyEvent::Stalled)),
            ("breaker", Some(NotifyEvent::Stalled)),
            ("budget", Some(NotifyEvent::Budget)),
            ("needs_human", Some(NotifyEvent::NeedsHuman)),
            ("iteration_end", Some(NotifyEvent::IterationEnd)),
            ("other", None),
        ] {
            assert_eq!(event_of(e), want, "{e}");
        }
    }
}
