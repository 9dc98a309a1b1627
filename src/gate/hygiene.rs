//! The built-in judge of a code change: its diff's hygiene, since the tests already judged its
//! correctness (validation runs before the gate). Three dimensions — `correctness` (no
//! placeholder or conflict marker added), `tests` (tests changed with the code; none deleted or
//! skipped), `scope` (the size of one plan item) — from the patch alone (the loop leaves its own
//! files out of it). Offline and pure.

use super::Evaluation;
use super::rubric::Dims;
use crate::git::patch::{FilePatch, files};

/// The task type the `code` artifact type tells the gate.
pub const CODE_TASK: &str = "code change";

/// A test file by the usual names (`test_x.py`, `x_test.go`, `x.test.ts`, `tests/…`, `spec/…`).
fn is_test(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    path.split('/')
        .any(|c| matches!(c, "tests" | "test" | "spec" | "__tests__"))
        || name.starts_with("test_")
        || name.contains("_test.")
        || name.contains(".test.")
        || name.contains(".spec.")
}

/// A line that declares a test (in the usual languages).
fn declares_test(l: &str) -> bool {
    let t = l.trim_start();
    t.starts_with("def test")
        || t.starts_with("async def test")
        || t.starts_with("#[test]")
        || t.starts_with("#[tokio::test")
        || t.starts_with("func Test")
        || t.starts_with("it(")
        || t.starts_with("test(")
}

/// A line that skips a test (a marker at the start of a word: `os._exit(` skips nothing).
fn skips_test(l: &str) -> bool {
    [
        "@unittest.skip",
        "@pytest.mark.skip",
        "#[ignore",
        "t.Skip(",
        "it.skip(",
        "test.skip(",
        "describe.skip(",
        "xit(",
        "xdescribe(",
        "self.skipTest(",
    ]
    .iter()
    .any(|m| {
        l.match_indices(m).any(|(i, _)| {
            l[..i]
                .chars()
                .next_back()
                .is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == '.'))
                || m.starts_with(['@', '#', '.'])
        })
    })
}

/// A placeholder left where code should be.
fn placeholder(l: &str) -> bool {
    [
        "TODO",
        "FIXME",
        "todo!(",
        "unimplemented!(",
        "NotImplementedError",
    ]
    .iter()
    .any(|m| l.contains(m))
}

/// Judge a change by its patch.
#[must_use]
pub fn evaluate(patch: &str) -> Evaluation {
    let files = files(patch);
    let mut issues = Vec::new();
    let correctness = correctness(&files, &mut issues);
    let tests = tests(&files, &mut issues);
    let scope = scope(&files, &mut issues);
    let dims: Dims = [
        ("correctness", correctness),
        ("tests", tests),
        ("scope", scope),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    Evaluation { dims, issues }
}

fn correctness(files: &[FilePatch], issues: &mut Vec<String>) -> f64 {
    let added = || files.iter().flat_map(|f| f.added.iter());
    if added().any(|l| l.starts_with("<<<<<<<") || l.starts_with(">>>>>>>")) {
        issues.push("correctness: the change adds merge conflict markers".into());
        return 0.0;
    }
    let placeholders = added().filter(|l| placeholder(l)).count();
    if placeholders > 0 {
        issues.push(format!(
            "correctness: the change adds {placeholders} placeholder(s) (TODO, FIXME, unimplemented) where code should be"
        ));
        return 6.0;
    }
    10.0
}

fn tests(files: &[FilePatch], issues: &mut Vec<String>) -> f64 {
    let deleted: Vec<&str> = files
        .iter()
        .filter(|f| f.deleted && is_test(&f.path))
        .map(|f| f.path.as_str())
        .collect();
    if !deleted.is_empty() {
        issues.push(format!("tests: the change deletes {}", deleted.join(", ")));
        return 2.0;
    }
    let count = |pick: fn(&FilePatch) -> &Vec<String>, f: fn(&str) -> bool| {
        files.iter().flat_map(pick).filter(|l| f(l)).count()
    };
    let removed = count(|f| &f.removed, declares_test);
    let added = count(|f| &f.added, declares_test);
    if removed > added {
        issues.push(format!(
            "tests: the change removes {} test(s)",
            removed - added
        ));
        return 3.0;
    }
    if count(|f| &f.added, skips_test) > 0 {
        issues.push("tests: the change skips tests".into());
        return 3.0;
    }
    let code = files.iter().any(|f| !is_test(&f.path));
    let tested = files.iter().any(|f| is_test(&f.path));
    if code && !tested {
        issues.push("tests: no test changed with the code (add one for the change)".into());
        return 8.0;
    }
    10.0
}

fn scope(files: &[FilePatch], issues: &mut Vec<String>) -> f64 {
    let lines: usize = files.iter().map(|f| f.added.len() + f.removed.len()).sum();
    let (score, note) = match (lines, files.len()) {
        (0..=300, 0..=10) => (10.0, None),
        (0..=1000, 0..=20) => (8.0, Some("a large change")),
        _ => (6.0, Some("a very large change: more than one plan item?")),
    };
    if let Some(n) = note {
        issues.push(format!(
            "scope: {n} ({lines} lines in {} files)",
            files.len()
        ));
    }
    score
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patch(files: &[(&str, &str, bool)]) -> String {
        files
            .iter()
            .map(|(path, body, deleted)| {
                let del = if *deleted { "deleted file mode 100644\n" } else { "" };
                format!("diff --git a/{path} b/{path}\n{del}--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n{body}")
            })
            .collect()
    }

    #[test]
    fn a_change_is_judged_by_its_hygiene() {
        let code = ("calc.py", "-    return a - b\n+    return a + b\n", false);
        let test = (
            "test_calc.py",
            "+    def test_add(self):\n+        self.assertEqual(add(2, 2), 4)\n",
            false,
        );
        let planted = (
            "lib/wiggum/__init__.py",
            "+unittest.TestCase.__str__ = name\n",
            false,
        );
        // (what, files, correctness, tests, scope, issue)
        type Case<'a> = (
            &'a str,
            Vec<(&'a str, &'a str, bool)>,
            [f64; 3],
            Option<&'a str>,
        );
        let cases: [Case<'_>; 8] = [
            (
                "code with its test",
                vec![code, test],
                [10.0, 10.0, 10.0],
                None,
            ),
            (
                "code alone",
                vec![code],
                [10.0, 8.0, 10.0],
                Some("no test changed"),
            ),
            (
                "a test deleted",
                vec![code, ("tests/test_x.py", "-def test_x():\n", true)],
                [10.0, 2.0, 10.0],
                Some("deletes tests/test_x.py"),
            ),
            (
                "a test removed",
                vec![code, ("test_calc.py", "-    def test_sub(self):\n", false)],
                [10.0, 3.0, 10.0],
                Some("removes 1 test"),
            ),
            (
                "a test skipped",
                vec![
                    code,
                    ("test_calc.py", "+    @unittest.skip('flaky')\n", false),
                ],
                [10.0, 3.0, 10.0],
                Some("skips tests"),
            ),
            (
                "exit is no skip",
                vec![
                    ("calc.py", "+import atexit\n+    os._exit(0)\n", false),
                    test,
                ],
                [10.0, 10.0, 10.0],
                None,
            ),
            (
                "a placeholder",
                vec![("calc.py", "+    raise NotImplementedError\n", false), test],
                [6.0, 10.0, 10.0],
                Some("placeholder"),
            ),
            (
                "code in a folder of any name is code",
                vec![planted],
                [10.0, 8.0, 10.0],
                Some("no test changed"),
            ),
        ];
        for (what, fs, want, issue) in cases {
            let e = evaluate(&patch(&fs));
            let got = [e.dims["correctness"], e.dims["tests"], e.dims["scope"]];
            assert_eq!(got, want, "{what}: {:?}", e.issues);
            match issue {
                Some(i) => assert!(
                    e.issues.iter().any(|x| x.contains(i)),
                    "{what}: {:?}",
                    e.issues
                ),
                None => assert!(e.issues.is_empty(), "{what}: {:?}", e.issues),
            }
        }
    }

    #[test]
    fn a_large_change_is_out_of_scope() {
        let body: String = (0..1200).map(|i| format!("+line {i}\n")).collect();
        let e = evaluate(&patch(&[("big.py", &body, false)]));
        assert_eq!(e.dims["scope"], 6.0);
    }
}
