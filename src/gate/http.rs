//! The HTTP evaluator backends: an OpenAI-compatible `/v1/chat/completions` (with
//! `response_format: json_schema` built from the rubric, so a supporting server must answer
//! parseable JSON) and Ollama's `/api/chat` (`format: json`). Timeouts and bounded
//! retries; every error names the URL.

use std::time::Duration;

use serde_json::{Value, json};

use crate::config::{EvaluatorEntry, EvaluatorKind};
use crate::error::{Error, Result};

/// An evaluator's answer is a few scores and issues: a cap keeps a rambling model from filling
/// its whole context (the seed uses 600).
pub const MAX_ANSWER_TOKENS: u32 = 800;

/// The JSON schema of an answer: one number per dimension and a list of issues.
#[must_use]
pub fn rubric_schema(dims: &[String]) -> Value {
    let mut props = serde_json::Map::new();
    for d in dims {
        props.insert(
            d.clone(),
            json!({"type": "number", "minimum": 0, "maximum": 10}),
        );
    }
    props.insert(
        "issues".into(),
        json!({"type": "array", "items": {"type": "string"}, "maxItems": 8}),
    );
    let mut required: Vec<String> = dims.to_vec();
    required.push("issues".into());
    json!({"type": "object", "properties": props, "required": required, "additionalProperties": false})
}

pub(crate) fn client(timeout: Duration) -> Result<reqwest::Client> {
    // Installing twice is harmless: the first provider stays.
    let _already = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(Duration::from_secs(5).min(timeout))
        .build()
        .map_err(|e| Error::runtime(format!("cannot build an HTTP client: {e}")))
}

/// The endpoint and request body for a backend.
#[must_use]
pub fn request(
    entry: &EvaluatorEntry,
    prompt: &str,
    temperature: f64,
    schema: Option<&Value>,
) -> (String, Value) {
    let model = entry.model.clone().unwrap_or_default();
    let messages = json!([{"role": "user", "content": prompt}]);
    match entry.kind {
        EvaluatorKind::Anthropic => {
            // No response schema in this protocol: the extractor reads the answer.
            let base = entry.url.as_deref().unwrap_or("https://api.anthropic.com");
            (
                format!(
                    "{}/v1/messages",
                    base.trim_end_matches('/').trim_end_matches("/v1")
                ),
                json!({"model": model, "messages": messages, "temperature": temperature,
                       "max_tokens": MAX_ANSWER_TOKENS}),
            )
        }
        EvaluatorKind::Ollama => {
            let base = entry.url.as_deref().unwrap_or("http://127.0.0.1:11434");
            // Ollama's JSON mode; the extractor copes with whatever shape comes back.
            let format = json!("json");
            (
                format!("{}/api/chat", base.trim_end_matches('/')),
                json!({"model": model, "messages": messages, "stream": false, "format": format,
                       "options": {"temperature": temperature, "num_predict": MAX_ANSWER_TOKENS}}),
            )
        }
        _ => {
            let base = entry.url.as_deref().unwrap_or("http://127.0.0.1:8080/v1");
            let mut body = json!({"model": model, "messages": messages, "temperature": temperature, "stream": false, "max_tokens": MAX_ANSWER_TOKENS});
            if let Some(s) = schema {
                body["response_format"] = json!({"type": "json_schema", "json_schema":
                    {"name": "answer", "strict": true, "schema": s}});
            }
            (
                format!("{}/chat/completions", base.trim_end_matches('/')),
                body,
            )
        }
    }
}

/// The answer text out of a response body.
pub fn answer_text(kind: EvaluatorKind, body: &Value) -> Option<String> {
    if kind == EvaluatorKind::Anthropic {
        let parts: Vec<&str> = body
            .get("content")?
            .as_array()?
            .iter()
            .filter(|c| c.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|c| c.get("text").and_then(Value::as_str))
            .collect();
        return (!parts.is_empty()).then(|| parts.join(""));
    }
    let v = match kind {
        EvaluatorKind::Ollama => body.pointer("/message/content"),
        _ => body.pointer("/choices/0/message/content"),
    };
    v.and_then(Value::as_str).map(str::to_string)
}

/// Tokens one call used, as the server reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Prompt tokens.
    pub tokens_in: u64,
    /// Answer tokens.
    pub tokens_out: u64,
}

/// What a response says it used: OpenAI's `usage.prompt_tokens`/`completion_tokens`,
/// Anthropic's `usage.input_tokens`/`output_tokens`, Ollama's `prompt_eval_count`/`eval_count`.
#[must_use]
pub fn usage_of(kind: EvaluatorKind, body: &Value) -> Option<Usage> {
    let n = |v: &Value, k: &str| v.get(k).and_then(Value::as_u64);
    let (i, o) = match kind {
        EvaluatorKind::Ollama => (n(body, "prompt_eval_count"), n(body, "eval_count")),
        EvaluatorKind::Anthropic => {
            let u = body.get("usage")?;
            (n(u, "input_tokens"), n(u, "output_tokens"))
        }
        _ => {
            let u = body.get("usage")?;
            (n(u, "prompt_tokens"), n(u, "completion_tokens"))
        }
    };
    (i.is_some() || o.is_some()).then(|| Usage {
        tokens_in: i.unwrap_or(0),
        tokens_out: o.unwrap_or(0),
    })
}

enum Attempt {
    Done(String, Option<Usage>),
    Retry(String),
    Fatal(String),
}

async fn attempt(
    c: &reqwest::Client,
    url: &str,
    body: &Value,
    kind: EvaluatorKind,
    key: Option<&str>,
) -> Attempt {
    let mut req = c.post(url).json(body);
    if kind == EvaluatorKind::Anthropic {
        req = req
            .header("anthropic-version", "2023-06-01")
            .header("x-api-key", key.unwrap_or("none"));
    } else if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    let resp = match req.send().await {
        Ok(r) => r,
        Err(e) if e.is_timeout() => return Attempt::Retry("timed out".into()),
        Err(e) => {
            return Attempt::Retry(format!("cannot connect ({})", crate::error::root_cause(&e)));
        }
    };
    let status = resp.status();
    let text = match body_capped(resp, crate::sys::fsutil::ANSWER_CAP).await {
        Ok(t) => t,
        Err(why) => return Attempt::Fatal(why),
    };
    if status.is_server_error() || status.as_u16() == 429 {
        return Attempt::Retry(format!("HTTP {status}: {}", short(&text)));
    }
    if !status.is_success() {
        return Attempt::Fatal(format!("HTTP {status}: {}", short(&text)));
    }
    let Ok(v) = serde_json::from_str::<Value>(&text) else {
        return Attempt::Fatal(format!("the response is not JSON: {}", short(&text)));
    };
    match answer_text(kind, &v) {
        Some(t) => Attempt::Done(t, usage_of(kind, &v)),
        None => Attempt::Fatal(format!(
            "no message content in the response: {}",
            short(&text)
        )),
    }
}

/// The response body, decoded lossily, read chunk by chunk and refused past `cap` bytes so a
/// runaway server cannot take the supervisor's memory.
async fn body_capped(mut resp: reqwest::Response, cap: u64) -> Result<String, String> {
    let mut buf = Vec::new();
    loop {
        match resp.chunk().await {
            Ok(Some(c)) => {
                if (buf.len() + c.len()) as u64 > cap {
                    return Err(format!("the answer is larger than {cap} bytes; not read"));
                }
                buf.extend_from_slice(&c);
            }
            Ok(None) => break,
            Err(e) => {
                return Err(format!(
                    "the answer broke off ({})",
                    crate::error::root_cause(&e)
                ));
            }
        }
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

fn short(s: &str) -> String {
    let one: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    one.chars().take(160).collect()
}

/// Ask the evaluator model; retries transient failures (connect, timeout, 5xx, 429) with backoff.
/// A 4xx to a schema request is retried once without the schema (servers that lack it).
pub async fn chat(
    entry: &EvaluatorEntry,
    prompt: &str,
    temperature: f64,
    schema: &Value,
) -> Result<(String, Option<Usage>)> {
    let c = client(Duration::from_secs(entry.timeout_secs.max(1)))?;
    let default_key_env = (entry.kind == EvaluatorKind::Anthropic).then_some("ANTHROPIC_API_KEY");
    let key = entry
        .api_key_env
        .as_deref()
        .or(default_key_env)
        .and_then(|k| std::env::var(k).ok());
    let mut schema = (entry.kind != EvaluatorKind::Anthropic).then_some(schema);
    let mut last = String::new();
    let (url, _) = request(entry, prompt, temperature, schema);
    let mut tries = 0;
    while tries <= entry.retries {
        // Only the body changes between attempts (without the schema after a 4xx).
        let (_, body) = request(entry, prompt, temperature, schema);
        match attempt(&c, &url, &body, entry.kind, key.as_deref()).await {
            Attempt::Done(t, u) => return Ok((t, u)),
            Attempt::Fatal(m) if schema.is_some() && m.starts_with("HTTP 4") => {
                tracing::warn!("{url}: {m}; retrying without a response schema");
                schema = None;
                last = m;
            }
            Attempt::Fatal(m) => return Err(Error::runtime(format!("POST {url}: {m}"))),
            Attempt::Retry(m) => {
                tries += 1;
                last = m;
                if tries <= entry.retries {
                    tokio::time::sleep(Duration::from_millis(250 * (1 << tries.min(5)))).await;
                }
            }
        }
    }
    Err(Error::runtime(format!(
        "POST {url}: {last} (after {} attempts)",
        entry.retries + 1
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(kind: EvaluatorKind) -> EvaluatorEntry {
        EvaluatorEntry {
            kind,
            model: Some("m".into()),
            url: Some("http://127.0.0.1:1/v1/".into()),
            ..EvaluatorEntry::heuristic()
        }
    }

    #[test]
    fn usage_is_read_from_each_protocol() {
        let openai = json!({"usage": {"prompt_tokens": 120, "completion_tokens": 30}});
        let anthropic = json!({"usage": {"input_tokens": 7, "output_tokens": 9}});
        let ollama = json!({"prompt_eval_count": 50, "eval_count": 5});
        assert_eq!(
            usage_of(EvaluatorKind::Openai, &openai),
            Some(Usage {
                tokens_in: 120,
                tokens_out: 30
            })
        );
        assert_eq!(
            usage_of(EvaluatorKind::Anthropic, &anthropic),
            Some(Usage {
                tokens_in: 7,
                tokens_out: 9
            })
        );
        assert_eq!(
            usage_of(EvaluatorKind::Ollama, &ollama),
            Some(Usage {
                tokens_in: 50,
                tokens_out: 5
            })
        );
        assert_eq!(
            usage_of(EvaluatorKind::Openai, &json!({"choices": []})),
            None
        );
    }

    #[test]
    fn openai_request_carries_the_rubric_schema() {
        let dims = vec!["depth".to_string(), "structure".to_string()];
        let schema = rubric_schema(&dims);
        let (url, body) = request(&entry(EvaluatorKind::Openai), "P", 0.0, Some(&schema));
        assert_eq!(url, "http://127.0.0.1:1/v1/chat/completions");
        let schema = &body["response_format"]["json_schema"]["schema"];
        assert_eq!(schema["required"], json!(["depth", "structure", "issues"]));
        assert_eq!(body["temperature"], json!(0.0));
        assert_eq!(body["max_tokens"], json!(MAX_ANSWER_TOKENS));
        let (_, plain) = request(&entry(EvaluatorKind::Openai), "P", 0.0, None);
        assert!(plain.get("response_format").is_none());
    }

    #[test]
    fn ollama_request_shape() {
        let schema = rubric_schema(&["depth".into()]);
        let (url, body) = request(&entry(EvaluatorKind::Ollama), "P", 0.3, Some(&schema));
        assert_eq!(url, "http://127.0.0.1:1/v1/api/chat");
        assert_eq!(body["format"], json!("json"));
        assert_eq!(body["options"]["temperature"], json!(0.3));
        assert_eq!(body["stream"], json!(false));
    }

    #[test]
    fn answers_are_read_per_protocol() {
        let o = json!({"choices": [{"message": {"content": "{}"}}]});
        assert_eq!(
            answer_text(EvaluatorKind::Openai, &o).as_deref(),
            Some("{}")
        );
        let l = json!({"message": {"role": "assistant", "content": "hi"}});
        assert_eq!(
            answer_text(EvaluatorKind::Ollama, &l).as_deref(),
            Some("hi")
        );
    }

    #[test]
    fn anthropic_messages_shape_and_answer() {
        let mut e = entry(EvaluatorKind::Anthropic);
        e.url = Some("http://127.0.0.1:1/v1".into());
        let (url, body) = request(&e, "P", 0.0, None);
        assert_eq!(url, "http://127.0.0.1:1/v1/messages");
        assert_eq!(body["max_tokens"], json!(MAX_ANSWER_TOKENS));
        assert!(body.get("response_format").is_none());
        let a = json!({"content": [{"type": "thinking", "thinking": "x"}, {"type": "text", "text": "{}"}]});
        assert_eq!(
            answer_text(EvaluatorKind::Anthropic, &a).as_deref(),
            Some("{}")
        );
    }

    #[tokio::test]
    async fn a_server_that_is_down_names_the_url() {
        // A port nothing listens on: one the kernel just gave out and took back (a fixed one,
        // say 1, may be anyone's on a shared machine).
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut e = entry(EvaluatorKind::Openai);
        e.url = Some(format!("http://127.0.0.1:{port}/v1/"));
        e.retries = 1;
        e.timeout_secs = 2;
        let err = chat(&e, "p", 0.0, &rubric_schema(&["depth".into()]))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(&format!(
                "POST http://127.0.0.1:{port}/v1/chat/completions: cannot connect"
            )),
            "{err}"
        );
        assert!(err.ends_with("(after 2 attempts)"), "{err}");
    }
}
