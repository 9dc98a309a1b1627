//! Usage and rate limits in an agent's output: an answer that says "come back at 3 pm" is waited
//! out (the loop goes `waiting` and resumes by itself, the run not counted as a failure), one
//! that says the account cannot be used ("access disabled", an invalid key) ends the loop with
//! the line quoted. Recognised from the presets' real messages plus `[safety] limit_patterns`
//! and `fatal_patterns`. Pure: the clock is passed in.

use chrono::{DateTime, Duration, Local, NaiveTime, TimeZone, Utc};
use regex::Regex;

/// What a run's output says about the provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Limit {
    /// Wait: until this time when the answer says, else back off.
    Wait {
        /// When to try again, if the answer said.
        until: Option<DateTime<Utc>>,
        /// What it was, for `status` ("usage limit", "rate limit").
        what: String,
        /// The line.
        line: String,
    },
    /// Not something waiting fixes: the line.
    Fatal(String),
}

const FATAL: [&str; 9] = [
    r"(?i)access (has been |was )?disabled",
    // A CLI whose login lapsed overnight (claude: "OAuth token has expired", "Please run /login").
    r"(?i)oauth token (has )?expired",
    r"(?i)please run /login",
    r"(?i)account (has been |was )?(disabled|suspended|deactivated)",
    r"(?i)invalid[ _-]?(x-)?api[ _-]?key",
    r"(?i)incorrect api key",
    r"(?i)authentication_error",
    r"(?i)insufficient_quota",
    r"(?i)billing (hard )?limit",
];

const RATE: [&str; 8] = [
    r"(?i)(http|status|error|code)[ :=]*429\b",
    // In JSON, as gemini's error document and claude's result carry it.
    r#"(?i)"(code|status|api_error_status)":\s*429\b"#,
    r"(?i)resource_exhausted",
    r"(?i)\b429 too many",
    r"(?i)rate[ _-]?limit",
    r"(?i)too many requests",
    r"(?i)overloaded",
    r"(?i)try again in \d",
];

/// Read the output's last lines for a limit. `extra_wait` and `extra_fatal` are the user's
/// patterns (regular expressions).
#[must_use]
pub fn recognise(
    tail: &str,
    extra_wait: &[String],
    extra_fatal: &[String],
    now: DateTime<Utc>,
) -> Option<Limit> {
    let compile =
        |v: &[String]| -> Vec<Regex> { v.iter().filter_map(|p| Regex::new(p).ok()).collect() };
    let fatal: Vec<Regex> = FATAL
        .iter()
        .filter_map(|p| Regex::new(p).ok())
        .chain(compile(extra_fatal))
        .collect();
    let rate: Vec<Regex> = RATE
        .iter()
        .filter_map(|p| Regex::new(p).ok())
        .chain(compile(extra_wait))
        .collect();
    let lines: Vec<&str> = tail
        .lines()
        .rev()
        .take(40)
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    // The gravest reading of the last lines wins: an account error, then a usage limit (with its
    // reset), then a rate limit.
    if let Some(line) = lines.iter().find(|l| fatal.iter().any(|r| r.is_match(l))) {
        return Some(Limit::Fatal((*line).to_string()));
    }
    for line in &lines {
        if let Some(until) = claude_reset(line, now) {
            return Some(Limit::Wait {
                until,
                what: "usage limit".into(),
                line: (*line).to_string(),
            });
        }
    }
    let line = lines.iter().find(|l| rate.iter().any(|r| r.is_match(l)))?;
    Some(Limit::Wait {
        until: retry_after(line).map(|d| now + d),
        what: "rate limit".into(),
        line: (*line).to_string(),
    })
}

/// Claude's usage limit: `Claude AI usage limit reached|1735920000` (an epoch), or
/// `… limit reached ∙ resets 3pm` / `… will reset at 3:30 pm` (local time, today or tomorrow).
/// `Some(None)`: a usage limit with no readable time.
fn claude_reset(line: &str, now: DateTime<Utc>) -> Option<Option<DateTime<Utc>>> {
    let low = line.to_lowercase();
    let usage = low.contains("usage limit")
        || low.contains("exhausted your daily quota")
        || low.contains("hour limit")
        || low.contains("weekly limit")
        || (low.contains("limit") && low.contains("reset"));
    if !usage {
        return None;
    }
    if let Some(c) = Regex::new(r"\|(\d{10})\b").ok()?.captures(line) {
        let epoch: i64 = c[1].parse().ok()?;
        return Some(Utc.timestamp_opt(epoch, 0).single());
    }
    let at = Regex::new(r"(?i)resets?\s+(?:at\s+)?(\d{1,2})(?::(\d{2}))?\s*(am|pm)").ok()?;
    let Some(c) = at.captures(line) else {
        return Some(None);
    };
    let mut hour: u32 = c[1].parse().ok()?;
    let minute: u32 = c.get(2).map_or(Some(0), |m| m.as_str().parse().ok())?;
    match (&c[3].to_lowercase()[..], hour) {
        ("pm", h) if h < 12 => hour += 12,
        ("am", 12) => hour = 0,
        _ => {}
    }
    let local_now = now.with_timezone(&Local);
    let time = NaiveTime::from_hms_opt(hour, minute, 0)?;
    let mut when = local_now
        .date_naive()
        .and_time(time)
        .and_local_timezone(Local)
        .single()?;
    if when <= local_now {
        when += Duration::days(1);
    }
    Some(Some(when.with_timezone(&Utc)))
}

/// `Retry-After: 30`, `try again in 20s`, `try again in 1m30s`, `in 2 minutes`.
fn retry_after(line: &str) -> Option<Duration> {
    let low = line.to_lowercase();
    if let Some(c) = Regex::new(r"retry-after:?\s*(\d+)").ok()?.captures(&low) {
        return Some(Duration::seconds(c[1].parse().ok()?));
    }
    let c = Regex::new(r"(?:try again|retry) in\s+(?:(\d+)\s*(?:m|min|minutes?)\s*)?(?:(\d+(?:\.\d+)?)\s*(?:s|sec|seconds?))?")
        .ok()?
        .captures(&low)?;
    let mins: i64 = c.get(1).map_or(Some(0), |m| m.as_str().parse().ok())?;
    let secs: f64 = c.get(2).map_or(Some(0.0), |m| m.as_str().parse().ok())?;
    #[allow(clippy::cast_possible_truncation)]
    let total = mins * 60 + secs.ceil() as i64;
    (total > 0).then(|| Duration::seconds(total))
}

/// How long to back off the `failures`-th time in a row when no reset time was given:
/// exponential from `base`, at most an hour.
#[must_use]
pub fn backoff(base_secs: u64, failures: u32) -> std::time::Duration {
    let secs = base_secs.max(1).saturating_mul(1 << failures.min(12));
    std::time::Duration::from_secs(secs.min(3600))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 23, 10, 0, 0).unwrap()
    }

    fn wait(tail: &str) -> (Option<DateTime<Utc>>, String) {
        match recognise(tail, &[], &[], now()) {
            Some(Limit::Wait { until, what, .. }) => (until, what),
            other => panic!("{tail:?}: {other:?}"),
        }
    }

    #[test]
    fn usage_limits_with_reset_times() {
        let (until, what) = wait("working...\nClaude AI usage limit reached|1795430400\n");
        assert_eq!(until.unwrap().timestamp(), 1_795_430_400);
        assert_eq!(what, "usage limit");
        let (until, _) = wait("5-hour limit reached ∙ resets 3pm\n");
        let local = until.unwrap().with_timezone(&Local);
        assert_eq!(local.format("%H:%M").to_string(), "15:00");
        assert!(until.unwrap() > now());
        let (until, _) = wait("Your usage limit will reset at 9:30 am");
        assert_eq!(
            until
                .unwrap()
                .with_timezone(&Local)
                .format("%H:%M")
                .to_string(),
            "09:30"
        );
        assert_eq!(wait("Claude usage limit reached.").0, None);
    }

    #[test]
    fn what_the_real_clis_print_at_their_limits() {
        // Claude Code 2.1.197 on a 429 (its JSON result, exit 1), codex 0.169.0 after its
        // retries, gemini-cli 0.61.0 on the free tier's daily quota.
        let claude = r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"API Error: Request rejected (429) · This request would exceed your account's rate limit. Please try again later."}"#;
        assert_eq!(wait(claude).1, "rate limit");
        assert_eq!(
            wait("ERROR: exceeded retry limit, last status: 429 Too Many Requests\n").1,
            "rate limit"
        );
        let gemini = "Error when talking to Gemini API Full report available at: /tmp/x.json TerminalQuotaError: You have exhausted your daily quota on this model.\n    at classifyGoogleError (file:///x.js:1:2)\n{\n  \"error\": {\n    \"message\": \"You have exhausted your daily quota on this model.\",\n    \"code\": 429\n  }\n}\n";
        assert_eq!(wait(gemini).1, "usage limit");
    }

    #[test]
    fn rate_limits_with_and_without_a_retry_time() {
        assert_eq!(
            wait("HTTP 429 Too Many Requests; Retry-After: 30").0,
            Some(now() + Duration::seconds(30))
        );
        assert_eq!(
            wait("stream error: rate_limit_exceeded. Please try again in 20s.").0,
            Some(now() + Duration::seconds(20))
        );
        assert_eq!(
            wait("Rate limit reached. Please try again in 1m30s").0,
            Some(now() + Duration::seconds(90))
        );
        assert_eq!(wait("error: 429 Too Many Requests").0, None);
        assert_eq!(
            wait("API Error: 529 {\"type\":\"overloaded_error\"}").1,
            "rate limit"
        );
    }

    #[test]
    fn account_errors_are_fatal_and_ordinary_output_is_nothing() {
        for line in [
            "Your access has been disabled. Contact support.",
            "API Error: 401 {\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key\"}}",
            "Incorrect API key provided: sk-...",
            "You exceeded your current quota (insufficient_quota)",
            "API Error: 401 OAuth token has expired. Please obtain a new token or refresh your existing token.",
            "Invalid API key · Please run /login",
            "Not logged in · Please run /login",
        ] {
            assert_eq!(
                recognise(line, &[], &[], now()),
                Some(Limit::Fatal(line.into())),
                "{line}"
            );
        }
        assert_eq!(recognise("All tests passed\nDone.", &[], &[], now()), None);
        assert!(matches!(
            recognise(
                "upstream says: slow down please",
                &["slow down".into()],
                &[],
                now()
            ),
            Some(Limit::Wait { until: None, .. })
        ));
        assert!(matches!(
            recognise("license expired", &[], &["license expired".into()], now()),
            Some(Limit::Fatal(_))
        ));
    }

    #[test]
    fn what_real_agents_print_on_a_normal_run_is_no_limit() {
        for out in [
            include_str!("../../tests/fixtures/agent-output/claude-p-output-format-json.1.json"),
            include_str!("../../tests/fixtures/agent-output/claude-p-output-format-json.2.json"),
            include_str!("../../tests/fixtures/agent-output/codex-exec-plain.1.txt"),
            include_str!("../../tests/fixtures/agent-output/codex-exec-plain.2.txt"),
            include_str!("../../tests/fixtures/agent-output/aider-message.1.txt"),
            "test result: FAILED. expected status 200, got 404 (429 tests ran)",
        ] {
            assert_eq!(recognise(out, &[], &[], now()), None, "{out}");
        }
    }

    #[test]
    fn backoff_doubles_up_to_an_hour() {
        assert_eq!(backoff(30, 0).as_secs(), 30);
        assert_eq!(backoff(30, 2).as_secs(), 120);
        assert_eq!(backoff(30, 20).as_secs(), 3600);
    }
}
