//! A small YAML writer for the manifests: block mappings and sequences, plain scalars where
//! they cannot be misread, JSON-quoted ones (valid YAML) otherwise, and literal blocks for
//! multi-line text (the files a ConfigMap carries). Keys keep the order they were built in.

use serde_json::Value;

/// One YAML document (no `---`).
#[must_use]
pub fn document(v: &Value) -> String {
    let mut out = String::new();
    match v {
        Value::Object(_) | Value::Array(_) => block(v, 0, &mut out),
        _ => {
            out.push_str(&scalar(v, 0));
            out.push('\n');
        }
    }
    out
}

fn pad(n: usize) -> String {
    " ".repeat(n)
}

fn empty(v: &Value) -> bool {
    matches!(v, Value::Object(m) if m.is_empty()) || matches!(v, Value::Array(a) if a.is_empty())
}

fn block(v: &Value, indent: usize, out: &mut String) {
    match v {
        Value::Object(m) => {
            for (k, val) in m {
                out.push_str(&pad(indent));
                out.push_str(&key(k));
                out.push(':');
                entry(val, indent, out);
            }
        }
        Value::Array(a) => {
            for val in a {
                out.push_str(&pad(indent));
                out.push('-');
                match val {
                    Value::Object(m) if !m.is_empty() => {
                        // The first key on the dash's line, the rest below it.
                        let mut first = true;
                        for (k, inner) in m {
                            if first {
                                out.push(' ');
                                first = false;
                            } else {
                                out.push_str(&pad(indent + 2));
                            }
                            out.push_str(&key(k));
                            out.push(':');
                            entry(inner, indent + 2, out);
                        }
                    }
                    _ => entry(val, indent, out),
                }
            }
        }
        _ => {}
    }
}

/// What follows `key:` or `-`: a nested block on the next lines, or a scalar on this one.
fn entry(v: &Value, indent: usize, out: &mut String) {
    if !empty(v) && matches!(v, Value::Object(_) | Value::Array(_)) {
        out.push('\n');
        block(v, indent + 2, out);
    } else {
        out.push(' ');
        out.push_str(&scalar(v, indent + 2));
        out.push('\n');
    }
}

fn key(k: &str) -> String {
    if plain(k) { k.to_string() } else { quoted(k) }
}

fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// A string that reads back as the same string when written bare.
fn plain(s: &str) -> bool {
    let reserved = [
        "true", "false", "yes", "no", "on", "off", "null", "y", "n", "~",
    ];
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
        && !s.starts_with(['-', '.', '/'])
        && !reserved.contains(&s.to_ascii_lowercase().as_str())
        && s.parse::<f64>().is_err()
}

fn scalar(v: &Value, indent: usize) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) if literal_ok(s) => {
            let mut b = String::from("|");
            for l in s.lines() {
                b.push('\n');
                if !l.is_empty() {
                    b.push_str(&pad(indent));
                    b.push_str(l);
                }
            }
            b
        }
        Value::String(s) if plain(s) => s.clone(),
        Value::String(s) => quoted(s),
        Value::Object(_) => "{}".into(),
        Value::Array(_) => "[]".into(),
    }
}

/// Text a literal block (`|`) carries exactly: several lines, one final newline, a first line
/// that sets the indentation (not empty, no leading space), no carriage return or other control
/// character but tabs.
fn literal_ok(s: &str) -> bool {
    s.contains('\n')
        && s.ends_with('\n')
        && !s.ends_with("\n\n")
        && !s.starts_with(['\n', ' '])
        && s.chars().all(|c| c == '\n' || c == '\t' || !c.is_control())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn writes_blocks_plain_and_quoted_scalars_and_literal_text() {
        let v = json!({
            "apiVersion": "batch/v1",
            "n": 3,
            "on": true,
            "labels": {"app.kubernetes.io/name": "studio-agents"},
            "args": ["wiggum", "run-remote", "--branch", "true", "a b"],
            "containers": [{"name": "loop", "env": [{"name": "A", "value": "1"}]}],
            "empty": {},
            "data": {"PROMPT.md": "# Task\n\nDo one thing.\n"}
        });
        insta::assert_snapshot!(document(&v), @r#"
        apiVersion: batch/v1
        "n": 3
        "on": true
        labels:
          app.kubernetes.io/name: studio-agents
        args:
          - wiggum
          - run-remote
          - "--branch"
          - "true"
          - "a b"
        containers:
          - name: loop
            env:
              - name: A
                value: "1"
        empty: {}
        data:
          PROMPT.md: |
            # Task

            Do one thing.
        "#);
    }
}
