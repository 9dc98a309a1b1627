//! Scores out of messy model answers, pure: JSON in code fences or amid prose, trailing commas,
//! single quotes, `NaN`, Python literals, numbers as strings ("7", "7/10"); the seed-002 schema
//! (`score`, `pass`, `feedback`, `rubric_scores`, ...); then a `depth: 7` regex fallback.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::Evaluation;
use super::rubric::Dims;
use super::text::strip_thinking;

/// Extract an evaluation for `dims` from a model's answer, or say why nothing parsed.
pub fn extract(answer: &str, dims: &[String]) -> Result<Evaluation, String> {
    let answer = strip_thinking(answer);
    for candidate in candidates(&answer) {
        if let Some(v) = parse_lenient(&candidate)
            && let Some(ev) = from_value(&v, dims)
        {
            return Ok(ev);
        }
    }
    if let Some(ev) = regex_fallback(&answer, dims) {
        return Ok(ev);
    }
    let head: String = answer.chars().take(80).collect();
    Err(format!(
        "no scores in the evaluator's answer (it began: {head:?})"
    ))
}

/// The first JSON object (leniently repaired) found in an answer.
#[must_use]
pub fn first_object(answer: &str) -> Option<Value> {
    let answer = strip_thinking(answer);
    candidates(&answer)
        .iter()
        .filter_map(|c| parse_lenient(c))
        .find(Value::is_object)
}

/// Fenced blocks first, then every balanced `{...}` span, outermost first.
fn candidates(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        let body_start = after.find('\n').map_or(0, |i| i + 1);
        let Some(end) = after[body_start..].find("```") else {
            break;
        };
        out.push(after[body_start..body_start + end].to_string());
        rest = &after[body_start + end + 3..];
    }
    let bytes: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == '{'
            && let Some(end) = matching_brace(&bytes, i)
        {
            out.push(bytes[i..=end].iter().collect());
            i = end + 1;
            continue;
        }
        i += 1;
    }
    out
}

fn matching_brace(chars: &[char], open: usize) -> Option<usize> {
    let (mut depth, mut quote): (i32, Option<char>) = (0, None);
    let mut escaped = false;
    for (j, c) in chars.iter().enumerate().skip(open) {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if *c == '\\' {
                escaped = true;
            } else if *c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(*c),
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
}

fn parse_lenient(s: &str) -> Option<Value> {
    let s = s.trim();
    if let Ok(v) = serde_json::from_str::<Value>(s) {
        return Some(v);
    }
    let repaired = repair(s);
    serde_json::from_str::<Value>(&repaired).ok()
}

/// Rewrite common non-JSON: single-quoted strings, trailing commas, NaN/Infinity, Python
/// literals, unquoted keys.
fn repair(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match quote {
            Some(q) => {
                if c == '\\' {
                    match chars.next() {
                        Some('\'') => out.push('\''),
                        Some(n) => {
                            out.push(c);
                            out.push(n);
                        }
                        None => {}
                    }
                } else if c == q {
                    out.push('"');
                    quote = None;
                } else if c == '"' {
                    out.push_str("\\\"");
                } else {
                    out.push(c);
                }
            }
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                out.push('"');
            }
            None => out.push(c),
        }
    }
    let mut s = out;
    for (re, to) in REPAIRS.iter() {
        s = re.replace_all(&s, *to).to_string();
    }
    s
}

static REPAIRS: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    [
        (r",\s*([}\]])", "$1"),
        (r"\b(NaN|-?Infinity|None|null)\b", "null"),
        (r"\bTrue\b", "true"),
        (r"\bFalse\b", "false"),
        (r#"([{,]\s*)([A-Za-z_][A-Za-z0-9_]*)\s*:"#, "$1\"$2\":"),
    ]
    .into_iter()
    .filter_map(|(re, to)| Regex::new(re).ok().map(|r| (r, to)))
    .collect()
});

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => {
            let s = s.trim();
            let head = s.split('/').next().unwrap_or(s).trim();
            head.parse().ok()
        }
        _ => None,
    }
    .filter(|f: &f64| f.is_finite())
}

fn get_ci<'a>(obj: &'a serde_json::Map<String, Value>, key: &str) -> Option<&'a Value> {
    obj.iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(key))
        .map(|(_, v)| v)
}

fn from_value(v: &Value, dims: &[String]) -> Option<Evaluation> {
    let obj = v.as_object()?;
    let nested = ["rubric_scores", "scores", "dimensions"]
        .iter()
        .find_map(|k| get_ci(obj, k).and_then(Value::as_object));
    let mut found = Dims::new();
    for d in dims {
        let val = get_ci(obj, d).or_else(|| nested.and_then(|n| get_ci(n, d)));
        if let Some(x) = val.and_then(number) {
            found.insert(d.clone(), x);
        }
    }
    // The seed-002 schema scores on 0–1.
    let unit_scale = get_ci(obj, "pass").is_some()
        || get_ci(obj, "score")
            .and_then(number)
            .is_some_and(|s| s <= 1.0);
    if found.is_empty()
        && let Some(score) = get_ci(obj, "score").and_then(number)
    {
        for d in dims {
            found.insert(d.clone(), score);
        }
    }
    if found.is_empty() || found.len() * 2 < dims.len() {
        return None;
    }
    if unit_scale && found.values().all(|x| *x <= 1.0) {
        for x in found.values_mut() {
            *x *= 10.0;
        }
    }
    let mut issues = issues_of(obj);
    let missing: Vec<&String> = dims.iter().filter(|d| !found.contains_key(*d)).collect();
    for d in missing {
        issues.push(format!("the evaluator gave no score for {d}"));
        found.insert(d.clone(), 0.0);
    }
    for x in found.values_mut() {
        *x = x.clamp(0.0, 10.0);
    }
    Some(Evaluation {
        dims: found,
        issues,
    })
}

fn issues_of(obj: &serde_json::Map<String, Value>) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(list) = get_ci(obj, "issues").and_then(Value::as_array) {
        for i in list {
            match i {
                Value::String(s) if !s.trim().is_empty() => out.push(s.trim().to_string()),
                Value::Object(o) => {
                    if let Some(s) = ["issue", "description", "text"]
                        .iter()
                        .find_map(|k| get_ci(o, k).and_then(Value::as_str))
                    {
                        out.push(s.to_string());
                    }
                }
                _ => {}
            }
        }
    } else if let Some(s) = get_ci(obj, "issues").and_then(Value::as_str) {
        out.push(s.to_string());
    }
    for k in ["feedback", "suggested_fix"] {
        if let Some(s) = get_ci(obj, k)
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
        {
            out.push(s.trim().to_string());
        }
    }
    out
}

static PAIR: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r#"(?i)\b([a-z_]+)\b\W{0,4}[:=\-]\s*["']?(\d+(?:\.\d+)?)"#).ok());

fn regex_fallback(text: &str, dims: &[String]) -> Option<Evaluation> {
    let re = PAIR.as_ref()?;
    let mut found = Dims::new();
    for c in re.captures_iter(text) {
        let name = c[1].to_lowercase();
        if let Some(d) = dims.iter().find(|d| d.eq_ignore_ascii_case(&name))
            && !found.contains_key(d)
            && let Ok(x) = c[2].parse::<f64>()
        {
            found.insert(d.clone(), x.clamp(0.0, 10.0));
        }
    }
    if found.is_empty() || found.len() * 2 < dims.len() {
        return None;
    }
    let mut issues: Vec<String> = Vec::new();
    let missing: Vec<&String> = dims.iter().filter(|d| !found.contains_key(*d)).collect();
    for d in missing {
        issues.push(format!("the evaluator gave no score for {d}"));
        found.insert(d.clone(), 0.0);
    }
    Some(Evaluation {
        dims: found,
        issues,
    })
}

#[cfg(test)]
mod tests;
