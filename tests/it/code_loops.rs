//! Code loops as Ralph runs them: the repository is the work, the project's tests judge each
//! iteration against the tree before it, their failures feed the next agent, and the loop ends
//! done only when the tests are green. Real `python3 -m unittest` on a tiny project.

use std::path::Path;

use crate::support::{TestHome, git};

const CALC: &str = "def add(a, b):\n    return a + b\n";
const TESTS: &str = "import unittest\nimport calc\n\n\nclass TestCalc(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(calc.add(2, 2), 4)\n\n    def test_mul(self):\n        self.assertEqual(calc.mul(3, 4), 12)\n\n\nif __name__ == \"__main__\":\n    unittest.main()\n";

/// A tiny Python project in the artifact directory: `calc.py` without the `mul` its tests need
/// (red at the start), the spec as `artifact.md`, no `.gitignore`.
fn project(t: &TestHome) {
    std::fs::write(
        t.art().join("artifact.md"),
        "# Calculator\n\n`calc.py` adds and multiplies.\n",
    )
    .unwrap();
    std::fs::write(t.art().join("calc.py"), CALC).unwrap();
    std::fs::write(t.art().join("test_calc.py"), TESTS).unwrap();
}

/// A scripted coding agent: planning writes two items; iteration N runs `step-N.sh` from the
/// test's root when it exists (else changes nothing), and keeps a copy of its prompt there.
fn coder(t: &TestHome, steps: &[(u32, &str)]) -> String {
    for (n, body) in steps {
        std::fs::write(t.root().join(format!("step-{n}.sh")), body).unwrap();
    }
    let script = t.root().join("coder.sh");
    std::fs::write(
        &script,
        format!(
            "r={root}\ncat > \"$r/prompt-$ITERATION.md\"\ncase \"$WIGGUM_PHASE\" in\nplanning) printf '# Plan\\n- [ ] add mul to calc.py\\n- [ ] document calc\\n' > wiggum/fix_plan.md ;;\niteration) [ -f \"$r/step-$ITERATION.sh\" ] && . \"$r/step-$ITERATION.sh\" ;;\nesac\nexit 0\n",
            root = t.root().display()
        ),
    )
    .unwrap();
    format!("sh {}", script.display())
}

const ADD_MUL: &str = "printf 'def add(a, b):\\n    return a + b\\n\\n\\ndef mul(a, b):\\n    return a * b\\n' > calc.py\n";
const BREAK_ADD: &str = "sed -i 's/return a + b/return a - b/' calc.py\n";
// The whole file again, of another size: Python's bytecode cache trusts a source of the same
// size and second.
const FIX_ADD: &str = "printf 'def add(a, b):\\n    return b + a  # fixed\\n\\n\\ndef mul(a, b):\\n    return a * b\\n' > calc.py\n";
const TICK_ALL: &str = "sed -i 's/- \\[ \\]/- [x]/' wiggum/fix_plan.md\n";
const TICK_ONE: &str = "sed -i '0,/- \\[ \\]/s//- [x]/' wiggum/fix_plan.md\n";

fn review(line: &str) -> String {
    format!("printf '{line}\\n' > \"$ITERATION_DIR/review.md\"\n")
}

fn start(t: &TestHome, cmd: &str, extra: &[&str]) -> crate::support::home::Run {
    let art = t.art().display().to_string();
    let mut args = vec![
        "wiggum",
        "start",
        "calc",
        "--type",
        "code",
        "--artifact-path",
        &art,
        "--agent-cmd",
        cmd,
        "--foreground",
    ];
    args.extend_from_slice(extra);
    t.run(&args)
}

fn tracked(dir: &Path) -> String {
    git(dir, &["ls-files"])
}

#[test]
fn an_agent_that_breaks_a_test_and_ticks_everything_does_not_end_the_loop_and_the_next_sees_why() {
    let t = TestHome::new();
    project(&t);
    // Iteration 1 adds mul (fixing the red test) but breaks add, and ticks every item;
    // iteration 2 puts add back and ticks everything again.
    let steps = [
        (
            1,
            format!("{ADD_MUL}{BREAK_ADD}{TICK_ALL}{}", review("Add mul")),
        ),
        // As the prompt asks, it runs the tests itself (which writes Python's bytecode cache).
        (
            2,
            format!(
                "{FIX_ADD}python3 -m unittest -q 2>/dev/null\n{TICK_ALL}{}",
                review("Fix add")
            ),
        ),
    ];
    let steps: Vec<(u32, &str)> = steps.iter().map(|(n, s)| (*n, s.as_str())).collect();
    let cmd = coder(&t, &steps);
    let run = start(&t, &cmd, &[]);
    run.code(0);
    let out = run.stdout();
    // The project's own test command was proposed and said.
    assert!(
        out.contains("validation: `python3 -m unittest -q` (proposed from test_calc.py)")
            || run.stderr().contains("proposed from test_calc.py"),
        "{out}\n{}",
        run.stderr()
    );
    let its = t.runs("iteration");
    assert_eq!(its[0]["outcome"], "rejected", "{its:?}");
    let why = its[0]["validation_failed"].as_str().unwrap();
    assert!(
        why.contains("it broke test_calc.TestCalc.test_add"),
        "{why}"
    );
    assert!(
        out.contains("it broke test_calc.TestCalc.test_add"),
        "{out}"
    );
    // The next agent's prompt holds the failing test's message.
    let prompt2 = std::fs::read_to_string(t.root().join("prompt-2.md")).unwrap();
    assert!(
        prompt2.contains("## The last validation failed"),
        "{prompt2}"
    );
    assert!(prompt2.contains("FAIL: test_add"), "{prompt2}");
    assert!(prompt2.contains("AssertionError: 0 != 4"), "{prompt2}");
    // The fix is accepted and the loop ends done, green.
    assert_eq!(its[1]["outcome"], "accepted", "{its:?}");
    assert_eq!(its[1]["validation"]["green"], true);
    let st = t.state();
    assert_eq!(st["stop_reason"], "plan_empty", "{st}");
    assert!(out.contains("  tests       green"), "{out}");
    assert!(out.contains("(tests failing after 1)"), "{out}");
    // `logs` shows the rejected iteration's test output; `summary` the tests.
    let logs = t.run(&["wiggum", "logs", "calc", "--iteration", "1"]);
    assert!(logs.stdout().contains("--- validation of iteration 1 ---"));
    assert!(
        logs.stdout().contains("FAIL: test_add"),
        "{}",
        logs.stdout()
    );
    let summary = t.run(&["wiggum", "summary", "calc"]).stdout();
    assert!(
        summary.contains("tests  green  (failing after 1 of 2 iterations)"),
        "{summary}"
    );
    assert!(
        summary.contains("it broke test_calc.TestCalc.test_add"),
        "{summary}"
    );
    let status = t
        .run(&["wiggum", "status", "calc", "--color", "never"])
        .stdout();
    assert!(
        status.contains("tests:     green (after iteration 2; failing after 1 of 2 iterations)"),
        "{status}"
    );
    let events = t.run(&["wiggum", "events", "calc"]).stdout();
    let rejected = events
        .lines()
        .find(|l| l.contains("\"event\":\"validation\"") && l.contains("\"iteration\":1"))
        .unwrap_or_else(|| panic!("{events}"));
    assert!(
        rejected.contains("\"failing\":[\"test_calc.TestCalc.test_add\"]"),
        "{rejected}"
    );
    // Nothing the tests generated was committed.
    let files = tracked(&t.art());
    assert!(
        files.contains("calc.py") && files.contains("test_calc.py"),
        "{files}"
    );
    assert!(
        !files.contains(".pyc") && !files.contains("__pycache__"),
        "{files}"
    );
    // There was no repository: the project as it was is the first commit, so the iteration's
    // commit holds only what its agent changed.
    let log = t.git_log();
    assert!(
        log.last()
            .unwrap()
            .ends_with("|Wiggum: the project as it was before the loop"),
        "{log:?}"
    );
    let d2 = t
        .run(&[
            "wiggum",
            "diff",
            "calc",
            "--iteration",
            "2",
            "--color",
            "never",
        ])
        .stdout();
    assert!(d2.contains("--- a/calc.py\n"), "{d2}");
    assert!(
        its[1]["left_out"].as_array().is_some_and(|l| l
            .iter()
            .any(|p| p.as_str().unwrap().contains("__pycache__"))),
        "{:?}",
        its[1]
    );
}

#[test]
fn a_loop_whose_tests_stay_red_ends_validation_failed_not_done() {
    let t = TestHome::new();
    project(&t);
    let step = format!("{ADD_MUL}{BREAK_ADD}{TICK_ALL}{}", review("Add mul"));
    let cmd = coder(&t, &[(1, step.as_str())]);
    let run = start(&t, &cmd, &["--max-iterations", "2"]);
    run.code(1);
    let out = run.stdout();
    let st = t.state();
    assert_eq!(st["stop_reason"], "validation_failed", "{st}");
    assert_eq!(st["status"], "failed", "{st}");
    assert!(
        out.contains("Loop `calc` ended: the validation fails on the final tree"),
        "{out}"
    );
    assert!(
        out.contains("  tests       1 failing: test_calc.TestCalc.test_add"),
        "{out}"
    );
    assert!(out.contains("FAIL: test_add"), "{out}");
    // The rejected iteration's ticks were taken back.
    let plan = std::fs::read_to_string(t.wiggum("fix_plan.md")).unwrap();
    assert!(plan.contains("- [ ] add mul to calc.py"), "{plan}");
}

#[test]
fn correct_changes_pass_the_gate_and_diff_shows_each_commit() {
    let t = TestHome::new();
    project(&t);
    let steps = [
        (1, format!("{ADD_MUL}{TICK_ONE}{}", review("Add mul"))),
        (
            2,
            format!(
                "printf '\\n\\ndef sub(a, b):\\n    return a - b\\n' >> calc.py\nprintf '\\n\\nclass TestSub(unittest.TestCase):\\n    def test_sub(self):\\n        self.assertEqual(calc.sub(5, 3), 2)\\n' >> test_calc.py\n{TICK_ONE}{}",
                review("Add sub")
            ),
        ),
    ];
    let steps: Vec<(u32, &str)> = steps.iter().map(|(n, s)| (*n, s.as_str())).collect();
    let cmd = coder(&t, &steps);
    let run = start(&t, &cmd, &["--validate", "python3 -m unittest -q"]);
    run.code(0);
    let out = run.stdout();
    assert!(!out.contains("FAIL"), "{out}");
    for word in ["Recommendations", "completeness", "depth"] {
        assert!(!out.contains(word), "{word}: {out}");
    }
    let its = t.runs("iteration");
    assert_eq!(its.len(), 2, "{its:?}");
    for it in &its {
        assert_eq!(it["outcome"], "accepted", "{it}");
        assert_eq!(it["gate"]["final"], "PASS", "{it}");
    }
    let d1 = t.run(&[
        "wiggum",
        "diff",
        "calc",
        "--iteration",
        "1",
        "--color",
        "never",
    ]);
    assert!(d1.stdout().contains("+def mul(a, b):"), "{}", d1.stdout());
    let d2 = t.run(&[
        "wiggum",
        "diff",
        "calc",
        "--iteration",
        "2",
        "--color",
        "never",
    ]);
    assert!(
        d2.stdout().contains("+    def test_sub(self):"),
        "{}",
        d2.stdout()
    );
    let stat = t
        .run(&["wiggum", "diff", "calc", "--stat", "--color", "never"])
        .stdout();
    assert!(
        stat.contains("# iteration 1") && stat.contains("# iteration 2"),
        "{stat}"
    );
    // git's stat lines: ` calc.py   |  4 ++++`.
    assert!(
        stat.lines().any(|l| l.starts_with(" calc.py ")
            && l.split('|')
                .nth(1)
                .is_some_and(|c| c.trim().ends_with("++++"))),
        "{stat}"
    );
    // The run lines say what each iteration changed and the tests after it.
    assert!(
        out.contains("tests 1 failing") || out.contains("tests green"),
        "{out}"
    );
    assert!(out.contains("1 file +"), "{out}");
}

#[test]
fn a_code_loop_s_prompt_names_the_spec_the_plan_and_the_validation() {
    let t = TestHome::new();
    project(&t);
    let cmd = coder(&t, &[]);
    let run = start(
        &t,
        &cmd,
        &[
            "--max-iterations",
            "1",
            "--validate",
            "python3 -m unittest -q",
        ],
    );
    run.code(1);
    let prompt = std::fs::read_to_string(t.root().join("prompt-1.md")).unwrap();
    assert!(prompt.contains("The work is the repository"), "{prompt}");
    assert!(prompt.contains("artifact.md`"), "{prompt}");
    assert!(prompt.contains("`python3 -m unittest -q`"), "{prompt}");
    assert!(!prompt.contains("Improve the current artifact"), "{prompt}");
    // Red from the start: its output is in the first prompt already.
    assert!(prompt.contains("AttributeError"), "{prompt}");
}

#[test]
fn a_spec_that_is_missing_is_refused_before_anything_is_written() {
    let t = TestHome::new();
    project(&t);
    let cmd = coder(&t, &[]);
    let run = start(&t, &cmd, &["--spec", "specs/none.md"]);
    run.code(2);
    assert!(
        run.stderr().contains("--spec specs/none.md: no such file"),
        "{}",
        run.stderr()
    );
    assert!(!t.art().join("wiggum").exists());
}

#[test]
fn a_rust_project_is_validated_with_cargo_test_and_its_build_output_is_not_committed() {
    let t = TestHome::new();
    std::fs::write(t.art().join("artifact.md"), "# Adder\n\n`add` adds.\n").unwrap();
    std::fs::write(
        t.art().join("Cargo.toml"),
        "[package]\nname = \"adder\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
    )
    .unwrap();
    std::fs::create_dir_all(t.art().join("src")).unwrap();
    std::fs::write(
        t.art().join("src/lib.rs"),
        "pub fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n        assert_eq!(super::add(2, 2), 4);\n    }\n}\n",
    )
    .unwrap();
    let fix = format!(
        "sed -i 's/    a - b/    a + b \\/\\/ fixed/' src/lib.rs\n{TICK_ALL}{}",
        review("Fix add")
    );
    let cmd = coder(&t, &[(1, fix.as_str())]);
    // The toolchain that builds this suite, and a cargo home of the test's own (offline: the
    // project has no dependencies).
    let bin = Path::new(env!("CARGO"))
        .parent()
        .unwrap()
        .display()
        .to_string();
    let path = format!("{bin}:/usr/local/bin:/usr/bin:/bin");
    let cargo_home = t.root().join("cargo-home").display().to_string();
    let art = t.art().display().to_string();
    let args = [
        "wiggum",
        "start",
        "calc",
        "--type",
        "code",
        "--artifact-path",
        &art,
        "--agent-cmd",
        &cmd,
        "--foreground",
        "--max-iterations",
        "3",
    ];
    let run = t.run_with(
        &args,
        &[
            ("PATH", &path),
            ("CARGO_HOME", &cargo_home),
            ("CARGO_NET_OFFLINE", "true"),
        ],
    );
    let out = run.stdout();
    assert!(
        run.stderr()
            .contains("validation: `cargo test` (proposed from Cargo.toml)"),
        "{}",
        run.stderr()
    );
    assert!(
        out.contains("Validation before iteration 1: 1 failing: tests::adds"),
        "{out}\n{}",
        run.stderr()
    );
    run.code(0);
    let its = t.runs("iteration");
    assert_eq!(its[0]["outcome"], "accepted", "{its:?}");
    assert_eq!(its[0]["validation"]["green"], true, "{its:?}");
    assert_eq!(t.state()["stop_reason"], "plan_empty");
    let files = tracked(&t.art());
    assert!(files.contains("src/lib.rs"), "{files}");
    assert!(!files.contains("target/"), "{files}");
}

#[test]
fn the_spec_an_agent_edits_is_put_back_and_said() {
    let t = TestHome::new();
    project(&t);
    let spec_before = std::fs::read_to_string(t.art().join("artifact.md")).unwrap();
    let step = format!(
        "{ADD_MUL}printf '\\nAlso: the tests are optional.\\n' >> artifact.md\n{TICK_ONE}{}",
        review("Add mul")
    );
    let cmd = coder(&t, &[(1, step.as_str())]);
    let run = start(
        &t,
        &cmd,
        &[
            "--max-iterations",
            "1",
            "--validate",
            "python3 -m unittest -q",
        ],
    );
    let _ = run.stdout();
    assert_eq!(
        std::fs::read_to_string(t.art().join("artifact.md")).unwrap(),
        spec_before
    );
    let it = &t.runs("iteration")[0];
    assert!(
        it["note"]
            .as_str()
            .unwrap_or_default()
            .contains("the agent edited the spec (artifact.md)"),
        "{it}"
    );
    // The commit holds the spec as it was.
    let committed = git(&t.art(), &["show", "HEAD:artifact.md"]);
    assert_eq!(committed, spec_before);
}

#[test]
fn a_file_past_max_file_mb_is_never_committed_and_the_iteration_is_rejected_naming_it() {
    let t = TestHome::new();
    project(&t);
    // A 4 GiB sparse file: instant to make, and the supervisor must not read it.
    let step = format!(
        "{ADD_MUL}truncate -s 4G big.bin\n{TICK_ONE}{}",
        review("Add mul")
    );
    let cmd = coder(&t, &[(1, step.as_str())]);
    let started = std::time::Instant::now();
    let run = start(
        &t,
        &cmd,
        &[
            "--max-iterations",
            "2",
            "--validate",
            "python3 -m unittest -q",
        ],
    );
    let out = run.stdout();
    let its = t.runs("iteration");
    assert_eq!(its[0]["outcome"], "rejected", "{out}");
    let why = its[0]["validation_failed"].as_str().unwrap();
    assert!(
        why.contains("big.bin is 4096 MiB, over [safety] max_file_mb (50); it is not committed"),
        "{why}"
    );
    assert!(out.contains("big.bin is 4096 MiB"), "{out}");
    // No object of the repository is anywhere near it.
    let sizes = git(
        &t.art(),
        &[
            "cat-file",
            "--batch-all-objects",
            "--batch-check=%(objectsize)",
        ],
    );
    let largest = sizes
        .lines()
        .filter_map(|l| l.trim().parse::<u64>().ok())
        .max()
        .unwrap_or(0);
    assert!(largest < 1 << 20, "an object of {largest} bytes");
    assert!(!tracked(&t.art()).contains("big.bin"));
    // Hashing 4 GiB would take tens of seconds; the loop never read it.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
}

/// Attacks of an agent whose tests reach for more than their result: each must leave the loop
/// red (never done), and nothing of the user's git or the loop's own files changed.
#[test]
fn tests_that_plant_a_git_fsmonitor_or_rewrite_the_loops_files_are_rejected_and_undone() {
    let t = TestHome::new();
    project(&t);
    let evil = "import os\\nif os.environ.get(\\\"WIGGUM_PHASE\\\") == \\\"validation\\\":\\n    for f, text in [(\\\".git/config\\\", \\\"[core]\\\\\\\\n\\\\\\\\tfsmonitor = \\\\\\\\\\\"touch PWNED; true\\\\\\\\\\\"\\\\\\\\n\\\"), (\\\"wiggum/wiggum.toml\\\", \\\"\\\"), (\\\"wiggum/fix_plan.md\\\", \\\"\\\")]:\\n        try:\\n            open(f, \\\"a\\\" if f.endswith(\\\"config\\\") else \\\"w\\\").write(text)\\n        except OSError:\\n            pass\\n";
    let step = format!(
        "{ADD_MUL}printf \"{evil}\" > test_zz_evil.py\n{TICK_ALL}{}",
        review("Add mul")
    );
    let cmd = coder(&t, &[(1, step.as_str())]);
    let run = start(
        &t,
        &cmd,
        &[
            "--max-iterations",
            "2",
            "--validate",
            "python3 -m unittest -q",
        ],
    );
    let out = run.stdout();
    assert_ne!(t.state()["stop_reason"], "plan_empty", "{out}");
    let config = std::fs::read_to_string(t.art().join(".git/config")).unwrap();
    assert!(!config.contains("fsmonitor"), "{config}");
    git(&t.art(), &["status", "--porcelain"]);
    assert!(!t.art().join("PWNED").exists());
    let plan = std::fs::read_to_string(t.wiggum("fix_plan.md")).unwrap();
    assert!(plan.contains("add mul to calc.py"), "{plan}");
    let settings = std::fs::read_to_string(t.wiggum("wiggum.toml")).unwrap();
    assert!(!settings.trim().is_empty());
}

#[test]
fn tests_that_hide_their_failures_behind_exit_0_or_vanish_are_red() {
    // Failures printed, then the process forced to exit 0: still red, never done.
    let t = TestHome::new();
    project(&t);
    let hide = format!(
        "printf 'import atexit, os\\natexit.register(lambda: os._exit(0))\\n' >> test_calc.py\n{TICK_ALL}{}",
        review("Done")
    );
    let cmd = coder(&t, &[(1, hide.as_str())]);
    let run = start(
        &t,
        &cmd,
        &[
            "--max-iterations",
            "1",
            "--validate",
            "python3 -m unittest -q",
        ],
    );
    run.code(1);
    let it = &t.runs("iteration")[0];
    assert_eq!(it["validation"]["green"], false, "{it}");
    assert_eq!(
        t.state()["stop_reason"],
        "validation_failed",
        "{}",
        run.stdout()
    );
    // The failing test file deleted: no test runs, "OK" — rejected.
    let t = TestHome::new();
    project(&t);
    let delete = format!("rm test_calc.py\n{TICK_ALL}{}", review("Done"));
    let cmd = coder(&t, &[(1, delete.as_str())]);
    let run = start(
        &t,
        &cmd,
        &[
            "--max-iterations",
            "1",
            "--validate",
            "python3 -m unittest -q",
        ],
    );
    let it = &t.runs("iteration")[0];
    assert_eq!(it["outcome"], "rejected", "{}", run.stdout());
    let why = it["validation_failed"].as_str().unwrap_or_default();
    assert!(why.contains("0 tests ran, 2 before"), "{why}");
    assert_ne!(t.state()["stop_reason"], "plan_empty");
}

#[test]
fn a_change_shaped_to_look_unchanged_to_pythons_cache_is_still_tested() {
    let t = TestHome::new();
    project(&t);
    let steps = [
        (1, format!("{ADD_MUL}{TICK_ONE}{}", review("Add mul"))),
        // Same size, same time: Python's cache in the tree would still hold the old add.
        (
            2,
            format!(
                "python3 -m unittest -q 2>/dev/null\ntouch -r calc.py \"$TMPDIR/ref\"\nsed -i 's/return a + b/return a - b/' calc.py\ntouch -r \"$TMPDIR/ref\" calc.py\n{TICK_ONE}{}",
                review("Tidy")
            ),
        ),
    ];
    let steps: Vec<(u32, &str)> = steps.iter().map(|(n, s)| (*n, s.as_str())).collect();
    let cmd = coder(&t, &steps);
    let run = start(
        &t,
        &cmd,
        &[
            "--max-iterations",
            "2",
            "--validate",
            "python3 -m unittest -q",
        ],
    );
    let its = t.runs("iteration");
    assert_eq!(its[1]["outcome"], "rejected", "{}", run.stdout());
    assert!(
        its[1]["validation_failed"]
            .as_str()
            .unwrap()
            .contains("it broke test_calc.TestCalc.test_add"),
        "{}",
        its[1]
    );
}

#[test]
fn escape_sequences_a_test_prints_reach_no_terminal_and_no_prompt() {
    let t = TestHome::new();
    project(&t);
    let step = format!(
        "printf 'import unittest\\nclass T(unittest.TestCase):\\n    def test_x(self):\\n        print(\"FAIL: \\\\x1b]0;PWNED\\\\x07\\\\x1b[2J (x)\")\\n        self.fail(\"\\\\x1b]52;c;ZWNobw==\\\\x07boom\")\\n' > test_esc.py\n{TICK_ONE}{}",
        review("Add a test")
    );
    let cmd = coder(&t, &[(1, step.as_str())]);
    let run = start(
        &t,
        &cmd,
        &[
            "--max-iterations",
            "2",
            "--validate",
            "python3 -m unittest -q",
        ],
    );
    let mut seen = run.stdout();
    for args in [
        vec!["wiggum", "status", "calc", "--color", "never"],
        vec!["wiggum", "summary", "calc"],
        vec!["wiggum", "logs", "calc", "--iteration", "1"],
    ] {
        seen.push_str(&t.run(&args).stdout());
    }
    seen.push_str(&std::fs::read_to_string(t.root().join("prompt-2.md")).unwrap_or_default());
    assert!(
        !seen.contains('\u{1b}') && !seen.contains('\u{7}'),
        "{seen:?}"
    );
    assert!(seen.contains("boom"), "{seen}");
}
