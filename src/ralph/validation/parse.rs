//! Reading a test runner's output, line by line: which tests failed and passed (cargo test,
//! pytest, Python's unittest, go test), the failure count its summary gives, and a bounded
//! excerpt — the first failing test's message, then the last lines. Pure and incremental: the
//! caller streams the log through [`Reader::line`], so output of any size costs bounded memory
//! (the names of the tests aside).

use std::collections::{BTreeSet, VecDeque};
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

/// Lines of the first failure's message kept.
const FIRST_LINES: usize = 25;
/// Lines of the end of the output kept.
const LAST_LINES: usize = 30;
/// Characters of one excerpt line kept.
const LINE_CHARS: usize = 300;

/// What one command's output said of its tests.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tests {
    /// Tests that failed (or errored), by name.
    pub failed: BTreeSet<String>,
    /// Tests that passed, where the runner names them.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub passed: BTreeSet<String>,
    /// The failure count its summary line gave, when it printed one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failures: Option<usize>,
    /// How many tests ran (passed or failed; not skipped), when its summary says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ran: Option<usize>,
}

impl Tests {
    /// How many tests failed: the summary's count, else the names seen.
    #[must_use]
    pub fn failing(&self) -> usize {
        self.failures.unwrap_or(0).max(self.failed.len())
    }
}

static CARGO: LazyLock<Regex> = LazyLock::new(|| re(r"^test (\S+) \.\.\. (ok|FAILED|ignored)\b"));
static CARGO_SUMMARY: LazyLock<Regex> =
    LazyLock::new(|| re(r"^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed"));
static GO: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*--- (PASS|FAIL): (\S+)"));
static PYTEST_VERBOSE: LazyLock<Regex> =
    LazyLock::new(|| re(r"^(\S+::\S+) (PASSED|FAILED|ERROR)\b"));
static PYTEST_SHORT: LazyLock<Regex> = LazyLock::new(|| re(r"^(FAILED|ERROR) (\S+::\S+)"));
static UNITTEST_HEAD: LazyLock<Regex> = LazyLock::new(|| re(r"^(FAIL|ERROR): (\S+) \(([^)]+)\)"));
static UNITTEST_VERBOSE: LazyLock<Regex> =
    LazyLock::new(|| re(r"^(\S+) \(([^)]+)\)(?: \.\.\.)? (ok|FAIL|ERROR)$"));
static UNITTEST_RAN: LazyLock<Regex> = LazyLock::new(|| re(r"^Ran (\d+) tests? in "));
static UNITTEST_SUMMARY: LazyLock<Regex> =
    LazyLock::new(|| re(r"^FAILED \((?:failures=(\d+))?(?:, )?(?:errors=(\d+))?"));
/// Where a failing test's message starts, in any of the runners.
static FIRST_FAILURE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^(?:(?:FAIL|ERROR): \S|_{3,} \S.* _{3,}$|---- \S+ stdout ----$|\s*--- FAIL: |thread '.*' panicked at|Traceback \(most recent call last\)|E\s{2,}\S|error(?:\[E\d+\])?: )",
    )
});

#[allow(clippy::expect_used)]
fn re(s: &str) -> Regex {
    Regex::new(s).expect("a valid pattern")
}

/// The unittest name of `method (where)`: `where` when it already ends with the method
/// (Python ≥ 3.11 prints `test_add (test_calc.TestCalc.test_add)`), else `where.method`.
fn unittest_name(method: &str, place: &str) -> String {
    if place.ends_with(&format!(".{method}")) || place == method {
        place.to_string()
    } else {
        format!("{place}.{method}")
    }
}

/// The failures and errors of pytest's last line (`=== 1 failed, 2 passed in 0.12s ===`), and
/// how many ran.
fn pytest_summary(line: &str) -> Option<(usize, usize)> {
    let t = line.trim().trim_matches('=').trim();
    let (counts, took) = t.rsplit_once(" in ")?;
    let secs = took.split_whitespace().next()?.strip_suffix('s')?;
    secs.parse::<f64>().ok()?;
    let (mut failing, mut ran) = (0, 0);
    for part in counts.split(", ") {
        let (n, word) = part.split_once(' ')?;
        let n: usize = n.parse().ok()?;
        match word {
            "failed" | "error" | "errors" => {
                failing += n;
                ran += n;
            }
            "passed" => ran += n,
            "skipped" | "xfailed" | "xpassed" | "warning" | "warnings" | "deselected" | "rerun" => {
            }
            _ => return None,
        }
    }
    Some((failing, ran))
}

/// Reads one command's output a line at a time.
#[derive(Debug, Default)]
pub struct Reader {
    tests: Tests,
    recognised: bool,
    first: Vec<String>,
    first_done: bool,
    last: VecDeque<String>,
    lines: usize,
    first_at: Option<usize>,
}

impl Reader {
    /// Take one line of output (without its newline).
    pub fn line(&mut self, raw: &str) {
        // What the tests print is the agent's code's: no control sequence is kept, for the
        // names, the excerpt and every terminal or prompt they reach.
        let clean = crate::sys::term::printable(raw);
        let line = clean.trim_end_matches('\r');
        self.lines += 1;
        self.results(line);
        self.excerpt(line);
    }

    fn results(&mut self, line: &str) {
        let t = &mut self.tests;
        let mut hit = true;
        if let Some(c) = CARGO.captures(line) {
            match &c[2] {
                "ok" => t.passed.insert(c[1].to_string()),
                "FAILED" => t.failed.insert(c[1].to_string()),
                _ => false,
            };
        } else if let Some(c) = CARGO_SUMMARY.captures(line) {
            let passed: usize = c[1].parse().unwrap_or(0);
            let failed: usize = c[2].parse().unwrap_or(0);
            t.failures = Some(t.failures.unwrap_or(0) + failed);
            t.ran = Some(t.ran.unwrap_or(0) + passed + failed);
        } else if let Some(c) = GO.captures(line) {
            if &c[1] == "PASS" {
                t.passed.insert(c[2].to_string());
            } else {
                t.failed.insert(c[2].to_string());
            }
        } else if let Some(c) = PYTEST_VERBOSE.captures(line) {
            if &c[2] == "PASSED" {
                t.passed.insert(c[1].to_string());
            } else {
                t.failed.insert(c[1].to_string());
            }
        } else if let Some(c) = PYTEST_SHORT.captures(line) {
            t.failed.insert(c[2].to_string());
        } else if let Some(c) = UNITTEST_HEAD.captures(line) {
            t.failed.insert(unittest_name(&c[2], &c[3]));
        } else if let Some(c) = UNITTEST_VERBOSE.captures(line) {
            let name = unittest_name(&c[1], &c[2]);
            if &c[3] == "ok" {
                t.passed.insert(name);
            } else {
                t.failed.insert(name);
            }
        } else if let Some(c) = UNITTEST_SUMMARY.captures(line) {
            let n = |i: usize| {
                c.get(i)
                    .and_then(|m| m.as_str().parse::<usize>().ok())
                    .unwrap_or(0)
            };
            t.failures = Some(n(1) + n(2));
        } else if let Some(n) = UNITTEST_RAN.captures(line) {
            t.ran = n[1].parse().ok();
        } else if line == "OK" || line.starts_with("OK (") {
            // unittest's own line: the format is known even when nothing failed.
        } else if let Some((failing, ran)) = pytest_summary(line) {
            t.failures = Some(failing);
            t.ran = Some(ran);
        } else {
            hit = false;
        }
        self.recognised |= hit;
    }

    fn excerpt(&mut self, line: &str) {
        let kept: String = line.chars().take(LINE_CHARS).collect();
        if self.first_at.is_none() && FIRST_FAILURE.is_match(line) {
            self.first_at = Some(self.lines);
        }
        if self.first_at.is_some() && !self.first_done {
            self.first.push(kept.clone());
            self.first_done = self.first.len() >= FIRST_LINES;
        }
        self.last.push_back(kept);
        if self.last.len() > LAST_LINES {
            self.last.pop_front();
        }
    }

    /// The tests, when the output was in a format this reads.
    #[must_use]
    pub fn tests(&self) -> Option<Tests> {
        self.recognised.then(|| self.tests.clone())
    }

    /// The excerpt: the first failing test's message (when it does not fall in the last lines),
    /// then the last lines.
    #[must_use]
    pub fn excerpt_text(&self) -> String {
        let last_from = self.lines.saturating_sub(self.last.len()) + 1;
        let mut out: Vec<String> = Vec::new();
        if let Some(at) = self.first_at
            && at < last_from
        {
            out.extend(self.first.iter().take(last_from - at).cloned());
            if at + self.first.len() < last_from {
                out.push("…".into());
            }
        }
        out.extend(self.last.iter().cloned());
        out.join("\n")
    }
}

/// Read a whole output at once (tests and small outputs).
#[cfg(test)]
#[must_use]
pub fn read(output: &str) -> Reader {
    let mut r = Reader::default();
    for l in output.lines() {
        r.line(l);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(s: &BTreeSet<String>) -> Vec<&str> {
        s.iter().map(String::as_str).collect()
    }

    #[test]
    fn each_runner_s_failures_and_passes_are_read() {
        type Case<'a> = (
            &'a str,
            &'a str,
            &'a [&'a str],
            &'a [&'a str],
            Option<usize>,
        );
        let cases: [Case<'_>; 7] = [
            (
                "cargo test",
                "running 2 tests\ntest calc::adds ... ok\ntest calc::subtracts ... FAILED\n\nfailures:\n\n---- calc::subtracts stdout ----\nthread 'calc::subtracts' panicked at src/lib.rs:9:5:\nassertion `left == right` failed\n\ntest result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out\n",
                &["calc::subtracts"],
                &["calc::adds"],
                Some(1),
            ),
            (
                "unittest -q (3.11)",
                "F.\n======================================================================\nFAIL: test_add (test_calc.TestCalc.test_add)\n----------------------------------------------------------------------\nTraceback (most recent call last):\n  File \"test_calc.py\", line 6, in test_add\n    self.assertEqual(calc.add(2, 2), 4)\nAssertionError: 5 != 4\n\n----------------------------------------------------------------------\nRan 2 tests in 0.001s\n\nFAILED (failures=1)\n",
                &["test_calc.TestCalc.test_add"],
                &[],
                Some(1),
            ),
            (
                "unittest (3.8) error",
                "ERROR: test_sub (test_calc.TestCalc)\nRan 1 test in 0.0s\nFAILED (errors=1)\n",
                &["test_calc.TestCalc.test_sub"],
                &[],
                Some(1),
            ),
            (
                "unittest -v",
                "test_add (test_calc.TestCalc.test_add) ... ok\ntest_mul (test_calc.TestCalc.test_mul) ... FAIL\n",
                &["test_calc.TestCalc.test_mul"],
                &["test_calc.TestCalc.test_add"],
                None,
            ),
            (
                "pytest -q",
                "F.                                                                       [100%]\n=================================== FAILURES ===================================\n___________________________________ test_add ___________________________________\n\n    def test_add():\n>       assert add(2, 2) == 4\nE       assert 5 == 4\n\ntest_calc.py:4: AssertionError\n=========================== short test summary info ============================\nFAILED test_calc.py::test_add - assert 5 == 4\n1 failed, 1 passed in 0.02s\n",
                &["test_calc.py::test_add"],
                &[],
                Some(1),
            ),
            (
                "pytest -v",
                "test_calc.py::test_add PASSED                                            [ 50%]\ntest_calc.py::test_sub FAILED                                            [100%]\n",
                &["test_calc.py::test_sub"],
                &["test_calc.py::test_add"],
                None,
            ),
            (
                "go test -v",
                "=== RUN   TestAdd\n--- PASS: TestAdd (0.00s)\n=== RUN   TestSub\n    calc_test.go:12: got 1, want 0\n--- FAIL: TestSub (0.00s)\nFAIL\nFAIL\texample.com/calc\t0.002s\n",
                &["TestSub"],
                &["TestAdd"],
                None,
            ),
        ];
        for (what, out, failed, passed, count) in cases {
            let t = read(out)
                .tests()
                .unwrap_or_else(|| panic!("{what}: not read"));
            assert_eq!(names(&t.failed), failed, "{what}");
            assert_eq!(names(&t.passed), passed, "{what}");
            assert_eq!(t.failures, count, "{what}");
        }
    }

    #[test]
    fn output_in_no_known_format_gives_no_tests() {
        assert_eq!(read("make: *** [test] Error 1\n").tests(), None);
        assert_eq!(read("").tests(), None);
        // A passing unittest run is read (nothing failed), so a later failure can be compared.
        let ok = read("..\n----\nRan 2 tests in 0.000s\n\nOK\n")
            .tests()
            .unwrap();
        assert_eq!(ok.failing(), 0);
    }

    #[test]
    fn the_excerpt_puts_the_first_failure_first_and_keeps_the_end() {
        let mut out = String::from("FAIL: test_add (t.T.test_add)\nAssertionError: 5 != 4\n");
        for i in 0..200 {
            out.push_str(&format!("noise {i}\n"));
        }
        out.push_str("FAILED (failures=1)\n");
        let x = read(&out).excerpt_text();
        let lines: Vec<&str> = x.lines().collect();
        assert_eq!(lines[0], "FAIL: test_add (t.T.test_add)");
        assert_eq!(lines[1], "AssertionError: 5 != 4");
        assert!(lines.contains(&"…"));
        assert_eq!(*lines.last().unwrap(), "FAILED (failures=1)");
        assert!(lines.len() <= FIRST_LINES + LAST_LINES + 1);
        // A short output is shown once, whole.
        let short = read("FAIL: a (t.a)\nboom\nFAILED (failures=1)\n").excerpt_text();
        assert_eq!(short, "FAIL: a (t.a)\nboom\nFAILED (failures=1)");
        // Long lines are cut.
        let long = read(&"x".repeat(10_000)).excerpt_text();
        assert_eq!(long.chars().count(), LINE_CHARS);
    }
}
