//! What a notification says and how each sink wants it: one message per event (the topic, the
//! machine, the reason, iterations, quality, gate, cost, the commands to look further), shaped as
//! a JSON event (webhook), ntfy's text with title and tags in headers, Slack's `{"text"}`,
//! Discord's `{"content"}`, or `notify-send`'s title and body. What an agent said stays text in
//! each: escaped where the sink reads markup, never a mention or a disguised link. Pure.

use serde::Serialize;
use serde_json::Value;

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
    /// The program as people type it in any shell (`STUDIO_AGENTS_HOME=… studio-agents` for a
    /// store that is not the default; `progress::program`).
    pub program: String,
}

/// The message of `loop_event` (`stop`, `waiting`, …) with its reason; `payload` is the hook's
/// JSON for it.
#[must_use]
pub fn message(loop_event: &str, reason: &str, f: &Figures, payload: &Value) -> Message {
    let t = &f.topic;
    let title = match loop_event {
        "stop" => format!("loop `{t}` ended: {reason}"),
        "needs_human" => format!("loop `{t}` needs you: {reason}"),
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
         {program} wiggum status {t} · wiggum summary {t} · wiggum logs {t}",
        program = f.program,
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

/// The request `kind` wants for `m` (`None` for the desktop, which is no HTTP sink). The
/// agent's words in `m` stay text: escaped for Slack, escaped and unable to mention anyone on
/// Discord, plain text for ntfy (no `Markdown` header), a JSON string for the webhook.
#[must_use]
pub fn request(kind: SinkKind, m: &Message) -> Option<Request> {
    let text = format!("{}\n{}", m.title, m.body);
    Some(match kind {
        SinkKind::Webhook => json_request(m.event.to_string()),
        SinkKind::Ntfy => ntfy(m),
        SinkKind::Slack => json_request(to_json(&SlackBody::of(&text))),
        SinkKind::Discord => json_request(to_json(&DiscordBody::of(&text))),
        SinkKind::Desktop => return None,
    })
}

fn json_request(body: String) -> Request {
    Request {
        content_type: "application/json",
        headers: Vec::new(),
        body,
    }
}

fn to_json(body: &impl Serialize) -> String {
    // Structs of strings: serialising cannot fail.
    serde_json::to_string(body).unwrap_or_default()
}

/// ntfy: the body as plain text, the title and tags in headers (urgent events flagged).
fn ntfy(m: &Message) -> Request {
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

/// Slack's incoming-webhook body: `&`, `<` and `>` escaped as Slack asks, so no text can be a
/// `<!channel>` mention or a `<url|label>` link.
#[derive(Debug, Serialize)]
pub struct SlackBody {
    /// The message.
    pub text: String,
}

impl SlackBody {
    /// `text`, escaped.
    #[must_use]
    pub fn of(text: &str) -> SlackBody {
        SlackBody {
            text: slack_escape(text),
        }
    }
}

/// Discord's webhook body: the content with its markdown escaped (a `[label](url)` shows as
/// written), and no mention parsed (`@everyone` pings nobody).
#[derive(Debug, Serialize)]
pub struct DiscordBody {
    /// The message, at most 2,000 characters (Discord refuses more).
    pub content: String,
    /// Which mentions notify: none.
    pub allowed_mentions: AllowedMentions,
}

/// Discord's `allowed_mentions`.
#[derive(Debug, Default, Serialize)]
pub struct AllowedMentions {
    /// The kinds of mention parsed from the content (`users`, `roles`, `everyone`): none.
    pub parse: Vec<String>,
}

/// The most characters Discord takes in `content`.
const DISCORD_MAX: usize = 2000;

impl DiscordBody {
    /// `text`, escaped and cut to Discord's limit (never inside an escape).
    #[must_use]
    pub fn of(text: &str) -> DiscordBody {
        let mut content = String::new();
        let mut count = 0;
        for c in text.chars() {
            let escaped = discord_escape_char(c);
            count += escaped.chars().count();
            if count > DISCORD_MAX {
                break;
            }
            content.push_str(&escaped);
        }
        DiscordBody {
            content,
            allowed_mentions: AllowedMentions::default(),
        }
    }
}

/// The desktop notification's body: notification servers read it as markup (`<b>`, `<a href>`),
/// so `&`, `<` and `>` are escaped; the title is plain text to them.
#[must_use]
pub fn desktop_body(m: &Message) -> String {
    slack_escape(&m.body)
}

/// Slack's three escapes (<https://api.slack.com/reference/surfaces/formatting#escaping>).
#[must_use]
pub fn slack_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A character of Discord content as text: markdown's characters behind a backslash.
fn discord_escape_char(c: char) -> String {
    if matches!(
        c,
        '\\' | '*' | '_' | '~' | '`' | '|' | '[' | ']' | '<' | '>' | '#' | '@'
    ) {
        format!("\\{c}")
    } else {
        c.to_string()
    }
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
    use serde_json::json;

    fn figures() -> Figures {
        Figures {
            topic: "research".into(),
            host: "box".into(),
            iterations: (3, 10),
            quality: (Some(0.22), Some(0.6)),
            gate: (Some(5.1), Some(6.42)),
            cost: "$1.2000".into(),
            program: "studio-agents".into(),
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
        assert_eq!(slack.as_object().unwrap().len(), 1, "{slack}");
        let discord: Value =
            serde_json::from_str(&request(SinkKind::Discord, &m).unwrap().body).unwrap();
        assert!(
            discord["content"]
                .as_str()
                .unwrap()
                .ends_with("wiggum logs research")
        );
        assert!(
            discord["content"]
                .as_str()
                .unwrap()
                .starts_with("loop \\`research\\` waits")
        );
        assert_eq!(discord["allowed_mentions"], json!({"parse": []}));
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

    #[test]
    fn the_agents_words_mention_nobody_and_link_nowhere() {
        let said = "boom <!channel> @everyone <https://evil.example|https://console.aws.amazon.com> [https://console.aws.amazon.com](https://evil.example) <@123> & done";
        let m = message(
            "stop",
            "agent_failed",
            &figures(),
            &json!({"event": "stop", "detail": said}),
        );
        let slack: Value =
            serde_json::from_str(&request(SinkKind::Slack, &m).unwrap().body).unwrap();
        let text = slack["text"].as_str().unwrap();
        assert!(
            text.contains("boom &lt;!channel&gt; @everyone &lt;https://evil.example|https://console.aws.amazon.com&gt; [https://console.aws.amazon.com](https://evil.example) &lt;@123&gt; &amp; done"),
            "{text}"
        );
        assert!(!text.contains('<') && !text.contains('>'), "{text}");
        let discord: Value =
            serde_json::from_str(&request(SinkKind::Discord, &m).unwrap().body).unwrap();
        let content = discord["content"].as_str().unwrap();
        assert!(
            content.contains("boom \\<!channel\\> \\@everyone \\<https://evil.example\\|https://console.aws.amazon.com\\> \\[https://console.aws.amazon.com\\](https://evil.example) \\<\\@123\\> & done"),
            "{content}"
        );
        assert_eq!(discord["allowed_mentions"]["parse"], json!([]));
        // ntfy: plain text, no markdown asked for; the webhook: a JSON string.
        let ntfy = request(SinkKind::Ntfy, &m).unwrap();
        assert!(ntfy.body.starts_with(said), "{}", ntfy.body);
        assert!(ntfy.headers.iter().all(|(k, _)| *k != "Markdown"));
        let hook: Value =
            serde_json::from_str(&request(SinkKind::Webhook, &m).unwrap().body).unwrap();
        assert_eq!(hook["detail"], said);
        // The desktop: its body is markup to the notification server.
        let desktop = desktop_body(&message(
            "stop",
            "agent_failed",
            &figures(),
            &json!({"event": "stop", "detail": "<a href=\"https://evil.example\">https://console.aws.amazon.com</a>"}),
        ));
        assert!(
            desktop.starts_with(
                "&lt;a href=\"https://evil.example\"&gt;https://console.aws.amazon.com&lt;/a&gt;\n"
            ),
            "{desktop}"
        );
    }

    #[test]
    fn discord_content_is_cut_at_its_limit_never_inside_an_escape() {
        let long = "*".repeat(1500);
        let body = DiscordBody::of(&long);
        assert_eq!(body.content.chars().count(), 2000);
        assert!(body.content.ends_with("\\*"), "{}", &body.content[1990..]);
        let plain = DiscordBody::of(&"a".repeat(2500));
        assert_eq!(plain.content.chars().count(), 2000);
    }
}
