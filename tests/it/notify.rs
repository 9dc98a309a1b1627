//! `[notify]`: the loop's events reach a phone or a channel without a script — a webhook, ntfy,
//! Slack and Discord, each in its own format, against loopback servers; the URLs come from the
//! environment; a sink that fails is said in `status` and never holds up the loop.

use std::time::Duration;

use crate::support::TestHome;
use crate::support::http::{Reply, Server};

fn ok() -> Reply {
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
    assert!(
        discord[0].1["content"]
            .as_str()
            .unwrap()
            .starts_with("loop `night` ended"),
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
