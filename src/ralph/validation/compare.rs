//! An iteration judged against the tree before it: red at the start is normal, so what counts
//! is that nothing that passed now fails and the result is no worse. Pure, with a table test.

use serde::{Deserialize, Serialize};

use super::parse::Tests;

/// One validation command's result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandResult {
    /// The command.
    pub command: String,
    /// It exited 0.
    pub ok: bool,
    /// How it ended, in words (`exited with code 1`, `timed out after 600 s`).
    pub ending: String,
    /// Its tests, when its output was in a format the loop reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tests: Option<Tests>,
    /// The failing output, bounded: the first failing test's message, then the last lines.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub excerpt: String,
}

/// One run of every validation command.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Results {
    /// Each command's result, in the settings' order.
    pub commands: Vec<CommandResult>,
}

impl Results {
    /// Every command passed.
    #[must_use]
    pub fn green(&self) -> bool {
        self.commands.iter().all(|c| c.ok)
    }

    /// Failing tests by name across the commands (the first few are what people read).
    #[must_use]
    pub fn failing_names(&self) -> Vec<String> {
        self.commands
            .iter()
            .filter(|c| !c.ok)
            .flat_map(|c| c.tests.iter().flat_map(|t| t.failed.iter().cloned()))
            .collect()
    }

    /// One line: `2 failing: test_calc.TestCalc.test_add, …` or the failing command.
    #[must_use]
    pub fn summary(&self) -> String {
        if self.green() {
            return "green".into();
        }
        let names = self.failing_names();
        let count: usize = self
            .commands
            .iter()
            .filter(|c| !c.ok)
            .map(|c| c.tests.as_ref().map_or(0, Tests::failing))
            .sum();
        if names.is_empty() {
            let failed: Vec<String> = self
                .commands
                .iter()
                .filter(|c| !c.ok)
                .map(|c| format!("`{}` {}", c.command, c.ending))
                .collect();
            return failed.join("; ");
        }
        format!("{} failing: {}", count.max(names.len()), shorten(&names))
    }

    /// The failing commands' excerpts, each under its command: what the next agent reads.
    #[must_use]
    pub fn failing_output(&self) -> String {
        self.commands
            .iter()
            .filter(|c| !c.ok)
            .map(|c| format!("$ {}   ({})\n{}", c.command, c.ending, c.excerpt))
            .collect::<Vec<_>>()
            .join("\n\n")
    }
}

/// What says a command did not run at all, whatever it printed before: the shell's word for a
/// missing program, Python's for a missing module, cargo's, npm's and make's for a missing
/// command, script or target.
const CANNOT_RUN: [&str; 7] = [
    "No module named ",
    "error: no such command",
    "Missing script",
    "No rule to make target",
    ": not found",
    "command not found",
    "Permission denied",
];

/// Why a validation command cannot run at all (not a red test: a missing program, module,
/// script or target), from its result: the line that says so. `None` for a command that ran.
#[must_use]
pub fn cannot_run(c: &CommandResult) -> Option<String> {
    if c.ok {
        return None;
    }
    let shell = c.ending == "exited with code 127" || c.ending == "exited with code 126";
    let line = c
        .excerpt
        .lines()
        .map(str::trim)
        .find(|l| CANNOT_RUN.iter().any(|m| l.contains(m)))
        .filter(|l| shell || !l.contains("Permission denied") && !l.ends_with(": not found"));
    match (shell, line) {
        (_, Some(line)) => Some(format!("`{}` cannot run: {line}", c.command)),
        (true, None) => Some(format!("`{}` cannot run ({})", c.command, c.ending)),
        (false, None) => None,
    }
}

/// At most three names, then how many more.
#[must_use]
pub fn shorten(names: &[String]) -> String {
    let mut out = names.iter().take(3).cloned().collect::<Vec<_>>().join(", ");
    if names.len() > 3 {
        out.push_str(&format!(" and {} more", names.len() - 3));
    }
    out
}

/// How one command compares with its result before the iteration.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Change {
    /// Fewer failures, or green where it failed.
    Better,
    /// As before.
    Same,
    /// Something that passed fails now (the names, or the command's words).
    Worse(String),
}

fn compare_one(before: &CommandResult, now: &CommandResult) -> Change {
    // Fewer tests ran than before: one was deleted, skipped or made to vanish, whatever the
    // rest says.
    if let (Some(b), Some(n)) = (
        before.tests.as_ref().and_then(|t| t.ran),
        now.tests.as_ref().and_then(|t| t.ran),
    ) && n < b
    {
        return Change::Worse(format!(
            "`{}`: {n} tests ran, {b} before (a test deleted or skipped)",
            now.command
        ));
    }
    match (before.ok, now.ok) {
        (true, true) => Change::Same,
        (false, true) => Change::Better,
        (true, false) => Change::Worse(match now.tests.as_ref().map(|t| &t.failed) {
            Some(f) if !f.is_empty() => {
                let names: Vec<String> = f.iter().cloned().collect();
                format!("it broke {}", shorten(&names))
            }
            _ => format!("`{}` {}; it passed before", now.command, now.ending),
        }),
        (false, false) => match (&before.tests, &now.tests) {
            (Some(b), Some(n)) => {
                let broken: Vec<String> = n.failed.difference(&b.failed).cloned().collect();
                if !broken.is_empty() {
                    Change::Worse(format!("it broke {}", shorten(&broken)))
                } else if n.failing() < b.failing() {
                    Change::Better
                } else if n.failing() > b.failing() {
                    Change::Worse(format!(
                        "`{}`: {} failing, {} before",
                        now.command,
                        n.failing(),
                        b.failing()
                    ))
                } else {
                    Change::Same
                }
            }
            (Some(_), None) => Change::Worse(format!(
                "`{}` {} before any test ran (the tests ran before)",
                now.command, now.ending
            )),
            _ => Change::Same,
        },
    }
}

/// What validation says of an iteration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judgement {
    /// Accept it: nothing that passed fails, and the result is no worse.
    Accept,
    /// Reject it, saying why (the broken tests named).
    Reject(String),
}

/// Judge `now` against `before` (the tree before the iteration); `item_done`: the iteration
/// ticked a plan item (the same failures with an item done is progress; without, it is not).
#[must_use]
pub fn judge(before: &Results, now: &Results, item_done: bool) -> Judgement {
    let mut better = false;
    for (i, n) in now.commands.iter().enumerate() {
        let change = match before.commands.get(i).filter(|b| b.command == n.command) {
            Some(b) => compare_one(b, n),
            // A command without a baseline (the settings changed): judged on its own.
            None if n.ok => Change::Same,
            None => Change::Worse(format!("`{}` {}", n.command, n.ending)),
        };
        match change {
            Change::Worse(why) => return Judgement::Reject(why),
            Change::Better => better = true,
            Change::Same => {}
        }
    }
    if better || now.green() || item_done {
        Judgement::Accept
    } else {
        Judgement::Reject(format!(
            "validation still fails as before ({}) and no plan item was done",
            now.summary()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(cmd: &str, ok: bool, failed: Option<&[&str]>) -> CommandResult {
        CommandResult {
            command: cmd.into(),
            ok,
            ending: if ok {
                "exited with code 0".into()
            } else {
                "exited with code 1".into()
            },
            tests: failed.map(|f| Tests {
                failed: f.iter().map(|s| (*s).to_string()).collect(),
                ..Tests::default()
            }),
            excerpt: String::new(),
        }
    }

    fn one(c: CommandResult) -> Results {
        Results { commands: vec![c] }
    }

    #[test]
    fn an_iteration_is_judged_against_the_tree_before_it() {
        let green = || run("t", true, Some(&[]));
        let red = |f: &[&str]| run("t", false, Some(f));
        let exit = |ok| run("t", ok, None);
        // (before, now, item done, accepted?, why contains)
        let cases: [(&str, CommandResult, CommandResult, bool, Option<&str>); 12] = [
            ("green stays green", green(), green(), false, None),
            (
                "green breaks",
                green(),
                red(&["a"]),
                true,
                Some("it broke a"),
            ),
            (
                "green breaks, no names",
                exit(true),
                exit(false),
                true,
                Some("it passed before"),
            ),
            ("red made green", red(&["a", "b"]), green(), false, None),
            (
                "one of two fixed",
                red(&["a", "b"]),
                red(&["b"]),
                false,
                None,
            ),
            (
                "fixed one, broke another",
                red(&["a", "b"]),
                red(&["b", "c"]),
                true,
                Some("it broke c"),
            ),
            ("the same, item done", red(&["a"]), red(&["a"]), true, None),
            (
                "the same, nothing done",
                red(&["a"]),
                red(&["a"]),
                false,
                Some("still fails as before"),
            ),
            (
                "tests no longer run",
                red(&["a"]),
                exit(false),
                true,
                Some("before any test ran"),
            ),
            (
                "exit code only, still red, item done",
                exit(false),
                exit(false),
                true,
                None,
            ),
            (
                "exit code only, made green",
                exit(false),
                exit(true),
                false,
                None,
            ),
            (
                "exit code only, still red, nothing done",
                exit(false),
                exit(false),
                false,
                Some("no plan item"),
            ),
        ];
        for (what, before, now, done, why) in cases {
            let got = judge(&one(before), &one(now), done);
            match (why, got) {
                (None, Judgement::Accept) => {}
                (Some(w), Judgement::Reject(r)) => assert!(r.contains(w), "{what}: {r}"),
                (w, g) => panic!("{what}: expected {w:?}, got {g:?}"),
            }
        }
    }

    #[test]
    fn a_command_that_cannot_run_is_told_from_red_tests() {
        let with = |ending: &str, excerpt: &str| CommandResult {
            command: "c".into(),
            ok: false,
            ending: ending.into(),
            tests: None,
            excerpt: excerpt.into(),
        };
        let code1 = "exited with code 1";
        for (r, want) in [
            (
                with("exited with code 127", "/bin/sh: 3: pytset: not found"),
                Some("`c` cannot run: /bin/sh: 3: pytset: not found"),
            ),
            (
                with(code1, "/usr/bin/python3: No module named pytest"),
                Some("`c` cannot run: /usr/bin/python3: No module named pytest"),
            ),
            (
                with("exited with code 101", "error: no such command: `tset`"),
                Some("`c` cannot run: error: no such command: `tset`"),
            ),
            (
                with(
                    "exited with code 2",
                    "make: *** No rule to make target 'test'.  Stop.",
                ),
                Some("`c` cannot run: make: *** No rule to make target 'test'.  Stop."),
            ),
            (
                with("exited with code 126", ""),
                Some("`c` cannot run (exited with code 126)"),
            ),
            (
                with(
                    code1,
                    "FAIL: test_add (t.T.test_add)\nAssertionError: 5 != 4",
                ),
                None,
            ),
            // A test's own "not found" is a red test, not a missing program.
            (with(code1, "AssertionError: user not found"), None),
        ] {
            assert_eq!(cannot_run(&r).as_deref(), want, "{r:?}");
        }
    }

    #[test]
    fn summaries_name_the_failing_tests() {
        let r = Results {
            commands: vec![
                run("a", true, Some(&[])),
                run("b", false, Some(&["t1", "t2", "t3", "t4"])),
            ],
        };
        assert_eq!(r.summary(), "4 failing: t1, t2, t3 and 1 more");
        assert_eq!(
            one(run("make", false, None)).summary(),
            "`make` exited with code 1"
        );
        assert_eq!(one(run("make", true, None)).summary(), "green");
    }
}
