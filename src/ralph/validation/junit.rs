//! JUnit XML, the report most test runners can write (jest, vitest, pytest `--junitxml`, go's
//! `gotestsum`, Maven Surefire): each `<testcase>` passed, failed (`<failure>`, `<error>`) or was
//! skipped. Read by scanning its elements, not by a full XML parser: the report is a runner's
//! output and only these elements count. Pure.

use super::parse::Tests;

/// The value of attribute `name` in the start tag `tag` (`name="…"` or `name='…'`), unescaped.
fn attr(tag: &str, name: &str) -> Option<String> {
    let mut rest = tag;
    while let Some(i) = rest.find(name) {
        let before = rest[..i].chars().next_back();
        let after = &rest[i + name.len()..];
        rest = after;
        if before.is_some_and(|c| !c.is_whitespace()) {
            continue;
        }
        let Some(after) = after.trim_start().strip_prefix('=') else {
            continue;
        };
        let after = after.trim_start();
        let quote = after.chars().next()?;
        if quote != '"' && quote != '\'' {
            return None;
        }
        let body = &after[1..];
        let end = body.find(quote)?;
        return Some(unescape(&body[..end]));
    }
    None
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// The tests of a JUnit XML report; `None` when it holds no `<testcase>`.
#[must_use]
pub fn read(xml: &str) -> Option<Tests> {
    let mut t = Tests::default();
    let mut ran = 0;
    let mut rest = xml;
    while let Some(i) = rest.find("<testcase") {
        rest = &rest[i + "<testcase".len()..];
        let Some(close) = rest.find('>') else { break };
        let tag = &rest[..close];
        let name = attr(tag, "name").unwrap_or_default();
        let class = attr(tag, "classname").unwrap_or_default();
        let full = match (class.is_empty(), name.is_empty()) {
            (false, false) => format!("{class}.{name}"),
            (true, _) => name,
            (_, true) => class,
        };
        // Its body runs to `</testcase>` unless the tag closes itself.
        let body = if tag.ends_with('/') {
            ""
        } else {
            let b = &rest[close..];
            &b[..b.find("</testcase>").unwrap_or(b.len())]
        };
        if body.contains("<skipped") {
            continue;
        }
        ran += 1;
        if body.contains("<failure") || body.contains("<error") {
            t.failed.insert(full);
        } else {
            t.passed.insert(full);
        }
    }
    (ran > 0 || xml.contains("<testsuite")).then(|| {
        t.failures = Some(t.failed.len());
        t.ran = Some(ran);
        t
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_s_cases_pass_fail_or_are_skipped() {
        let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="vitest tests" tests="4" failures="1" errors="0">
  <testsuite name="calc.test.ts" tests="4">
    <testcase classname="calc.test.ts" name="adds &amp; carries" time="0.001"/>
    <testcase classname='calc.test.ts' name='multiplies' time="0.002">
      <failure message="expected 12, got 7" type="AssertionError">AssertionError: expected 12</failure>
    </testcase>
    <testcase classname="calc.test.ts" name="divides" time="0"><skipped/></testcase>
    <testcase name="bare" time="0"></testcase>
  </testsuite>
</testsuites>"#;
        let t = read(xml).unwrap();
        assert_eq!(
            t.failed.iter().collect::<Vec<_>>(),
            ["calc.test.ts.multiplies"]
        );
        assert_eq!(
            t.passed.iter().collect::<Vec<_>>(),
            ["bare", "calc.test.ts.adds & carries"]
        );
        assert_eq!((t.failures, t.ran), (Some(1), Some(3)));
        assert_eq!(read("not xml at all"), None);
        // An empty suite ran nothing: a report, with no test.
        assert_eq!(
            read("<testsuite tests=\"0\"></testsuite>").unwrap().ran,
            Some(0)
        );
    }
}
