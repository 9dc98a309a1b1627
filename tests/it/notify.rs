//! `[notify]`: the loop's events reach a phone or a channel without a script — a webhook, ntfy,
//! Slack and Discord, each in its own format, against loopback servers; the URLs come from the
//! environment; a sink that fails is said in `status` and never holds up the loop, nor its
//! end past its bound; what an agent said reaches a channel as text, never as a mention or a
//! disguised link.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::TestHome;
use crate::support::http::{Reply, Server};
use crate::support::wait::Lines;

/// A sink that takes every message.
pub(crate) fn ok() -> Reply {
    Reply {
        status: 200,
        body: "{}".into(),
        delay: Duration::ZERO,
    }
}

#[test]
fn every_sink_gets_the_end_of_the_loop_in_its_own_format() {
    let t = TestHome::new();
    let (hook, ntfy, slack, discord) = (
        Server::start(vec![ok()], 16),
        Server::start(vec![ok()], 16),
        Server::start(vec![ok()], 16),
        Server::start(vec![ok()], 16),
    );
    t.write_home_config(
        "[notify]\ndeliver_within_secs = 10\n\n\
         [[notify.sinks]]\nkind = \"webhook\"\nurl_env = \"T_HOOK\"\nevents = [\"stop\", \"iteration_end\"]\n\n\
         [[notify.sinks]]\nkind = \"ntfy\"\nurl_env = \"T_NTFY\"\n\n\
         [[notify.sinks]]\nkind = \"slack\"\nurl_env = \"T_SLACK\"\n\n\
         [[notify.sinks]]\nkind = \"discord\"\nurl_env = \"T_DISCORD\"\n",
    );
    let urls = [
        ("T_HOOK", format!("{}/hook", hook.base)),
        ("T_NTFY", format!("{}/my-loops", ntfy.base)),
        ("T_SLACK", format!("{}/services/T0/B0/x", slack.base)),
        ("T_DISCORD", format!("{}/api/webhooks/1/x", discord.base)),
    ];
    let env: Vec<(&str, &str)> = urls.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let args = t.start_args(
        "night",
        &t.art(),
        &t.agent_cmd("", "FAKE_ITEMS=2"),
        &["--foreground", "--max-rounds", "1"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    t.run_with(&args, &env).code(0);
    // The webhook: the event as JSON, for each iteration and the end.
    let events: Vec<serde_json::Value> = hook
        .requests
        .lock()
        .unwrap()
        .iter()
        .map(|(_, v)| v.clone())
        .collect();
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
    assert_eq!(
        kinds,
        ["iteration_end", "iteration_end", "stop"],
        "{events:?}"
    );
    let stop = &events[2];
    assert_eq!(stop["topic"], "night");
    assert_eq!(stop["stop_reason"], "plan_empty");
    assert_eq!(
        stop["title"],
        "loop `night` ended: every item in fix_plan.md is done"
    );
    assert!(
        stop["body"]
            .as_str()
            .unwrap()
            .contains("iterations 2/10 · quality 0.22 → 0.55"),
        "{stop}"
    );
    // The gate too, before → after: the first iteration's first round → the last kept score.
    let gate = stop["body"]
        .as_str()
        .unwrap()
        .split(" · gate ")
        .nth(1)
        .unwrap();
    let (first, last) = gate.split(" · ").next().unwrap().split_once(" → ").unwrap();
    assert!(
        first.parse::<f64>().is_ok() && last.parse::<f64>().is_ok(),
        "{stop}"
    );
    // ntfy: the text, its title and tags in headers; only the end (its default events).
    let raw = ntfy.raw.lock().unwrap().clone();
    assert_eq!(raw.len(), 1, "{raw:?}");
    assert_eq!(
        raw[0].header("title"),
        Some("loop `night` ended: every item in fix_plan.md is done")
    );
    assert!(
        raw[0].body.ends_with(
            "studio-agents wiggum status night · wiggum summary night · wiggum logs night"
        ),
        "{raw:?}"
    );
    // Slack and Discord: their own JSON.
    let slack = slack.requests.lock().unwrap().clone();
    assert!(
        slack[0].1["text"]
            .as_str()
            .unwrap()
            .starts_with("loop `night` ended"),
        "{slack:?}"
    );
    let discord = discord.requests.lock().unwrap().clone();
    // Discord's markdown escaped: the backticks show as written.
    assert!(
        discord[0].1["content"]
            .as_str()
            .unwrap()
            .starts_with("loop \\`night\\` ended"),
        "{discord:?}"
    );
    // No URL in the settings the loop keeps.
    let pinned = std::fs::read_to_string(t.art().join("wiggum/wiggum.toml")).unwrap();
    assert!(!pinned.contains("127.0.0.1"), "{pinned}");
}

#[test]
fn a_sink_that_fails_is_retried_then_said_and_the_loop_ends_as_it_would() {
    let t = TestHome::new();
    let down = Server::start(
        vec![Reply {
            status: 503,
            body: "{}".into(),
            delay: Duration::ZERO,
        }],
        16,
    );
    t.write_home_config(
        "[notify]\ndeliver_within_secs = 2\n\n[[notify.sinks]]\nkind = \"webhook\"\nurl_env = \"T_HOOK\"\n",
    );
    let url = format!("{}/hook", down.base);
    let args = t.start_args(
        "down",
        &t.art(),
        &t.agent_cmd("", "FAKE_ITEMS=1"),
        &["--foreground", "--max-rounds", "1"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    t.run_with(&args, &[("T_HOOK", url.as_str())]).code(0);
    assert!(down.count() >= 2, "retried: {}", down.count());
    let st = t.state();
    assert_eq!(st["stop_reason"], "plan_empty");
    assert_eq!(
        st["last_event"],
        "a notification to webhook ($T_HOOK) failed: HTTP 503"
    );
    let status = t.run(&["wiggum", "status", "down"]).stdout();
    assert!(status.contains("failed: HTTP 503"), "{status}");
}

#[test]
fn a_sink_without_the_variable_of_its_url_is_refused_at_start() {
    let t = TestHome::new();
    t.write_home_config("[[notify.sinks]]\nkind = \"ntfy\"\n");
    let r = t.start_fg("nourl", "", &[]);
    r.code(2);
    assert!(
        r.stderr()
            .contains("[notify] sinks entry 1: url_env must name the environment variable"),
        "{}",
        r.stderr()
    );
    assert!(!t.art().join("wiggum").exists());
}

/// What a failing agent says last: a mention of everyone and a link that shows one address and
/// goes to another, in Slack's and in markdown's syntax.
const LAST_WORDS: &str = "error: <!channel> @everyone log in at <https://evil.example/x|https://console.aws.amazon.com> or [https://console.aws.amazon.com](https://evil.example/y)";

#[test]
fn an_agents_last_words_mention_nobody_and_link_nowhere_in_slack_and_discord() {
    let t = TestHome::new();
    let (slack, discord) = (Server::start(vec![ok()], 16), Server::start(vec![ok()], 16));
    t.write_home_config(
        "[[notify.sinks]]\nkind = \"slack\"\nurl_env = \"T_SLACK\"\n\n\
         [[notify.sinks]]\nkind = \"discord\"\nurl_env = \"T_DISCORD\"\n",
    );
    let dying = t.root().join("dying.sh");
    std::fs::write(&dying, format!("echo '{LAST_WORDS}' >&2\nexit 1\n")).unwrap();
    let (s_url, d_url) = (
        format!("{}/services/T0/B0/x", slack.base),
        format!("{}/api/webhooks/1/x", discord.base),
    );
    let args = t.start_args(
        "dying",
        &t.art(),
        &format!("sh {}", dying.display()),
        &["--foreground"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    t.run_with(&args, &[("T_SLACK", &s_url), ("T_DISCORD", &d_url)])
        .code(1);
    // Slack: the words arrived, escaped: no `<!…>` mention, no `<url|label>` link.
    let slack = slack.raw.lock().unwrap().clone();
    let body: serde_json::Value = serde_json::from_str(&slack.last().unwrap().body).unwrap();
    let text = body["text"].as_str().unwrap();
    assert!(
        text.contains("error: &lt;!channel&gt; @everyone log in at &lt;https://evil.example/x|https://console.aws.amazon.com&gt;"),
        "{text}"
    );
    assert!(!text.contains("<!") && !text.contains("<http"), "{text}");
    // Discord: no mention parsed, the markdown link shown as written.
    let discord = discord.raw.lock().unwrap().clone();
    let body: serde_json::Value = serde_json::from_str(&discord.last().unwrap().body).unwrap();
    assert_eq!(body["allowed_mentions"], serde_json::json!({"parse": []}));
    let content = body["content"].as_str().unwrap();
    assert!(
        content.contains("\\@everyone")
            && content.contains("\\[https://console.aws.amazon.com\\](https://evil.example/y)"),
        "{content}"
    );
    assert!(!content.contains(" [https"), "{content}");
}

/// `start --foreground` of a one-item loop with the sink at `url`: how long its end was held,
/// from the completion block it prints to its exit.
fn held_at_the_end(t: &TestHome, topic: &str, url: &str) -> Duration {
    let args = t.start_args(
        topic,
        &t.art(),
        &t.agent_cmd("", "FAKE_ITEMS=1"),
        &["--foreground", "--max-rounds", "1"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut child = t
        .cmd(&args)
        .env("T_HOOK", url)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = Lines::beside(child.stdout.take().unwrap());
    lines.wait_for_line(
        "the completion block",
        &format!("Loop `{topic}` ended"),
        Duration::from_secs(120),
    );
    let ended = Instant::now();
    let status = child.wait().unwrap();
    let held = ended.elapsed();
    assert!(status.success(), "{status}");
    held
}

fn webhook(within: u64) -> String {
    format!(
        "[notify]\ndeliver_within_secs = {within}\n\n[[notify.sinks]]\nkind = \"webhook\"\nurl_env = \"T_HOOK\"\n"
    )
}

/// The margin for a loaded machine over a bound: the end held past it fails the test.
const MARGIN: Duration = Duration::from_secs(4);

#[test]
fn a_sink_that_refuses_the_connection_does_not_hold_the_end() {
    let t = TestHome::new();
    // The default bound (30 s): a refused connection is given up at once, never retried.
    t.write_home_config(&webhook(30));
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", closed.local_addr().unwrap());
    drop(closed);
    let held = held_at_the_end(&t, "refused", &url);
    assert!(held < Duration::from_secs(2) + MARGIN, "held {held:?}");
    assert_eq!(
        t.state()["last_event"],
        "a notification to webhook ($T_HOOK) failed: connection refused"
    );
}

#[test]
fn a_sink_that_answers_503_or_slowly_holds_the_end_at_most_its_bound() {
    let t = TestHome::new();
    t.write_home_config(&webhook(3));
    let down = Server::start(
        vec![Reply {
            status: 503,
            body: "{}".into(),
            delay: Duration::ZERO,
        }],
        16,
    );
    let held = held_at_the_end(&t, "unavailable", &format!("{}/hook", down.base));
    assert!(held < Duration::from_secs(3) + MARGIN, "held {held:?}");
    assert!(down.count() >= 2, "retried: {}", down.count());
    let slow = Server::start(
        vec![Reply {
            status: 200,
            body: "{}".into(),
            delay: Duration::from_secs(60),
        }],
        4,
    );
    let t = TestHome::new();
    t.write_home_config(&webhook(3));
    let held = held_at_the_end(&t, "slow", &format!("{}/hook", slow.base));
    assert!(held < Duration::from_secs(3) + MARGIN, "held {held:?}");
    let said = t.state()["last_event"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        said == "a notification to webhook ($T_HOOK) failed: no answer in time"
            || said == "a notification to webhook ($T_HOOK) was not delivered within 3s",
        "{said}"
    );
}
