//! The project's own test command, proposed from the files at the top of its repository when a
//! code loop names none (`cargo test`, `go test ./...`, `npm test`, pytest or unittest,
//! `make test`). Pure: the caller lists the entries and reads the few small files asked for.

/// A proposed command and what it was read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposal {
    /// The command.
    pub command: String,
    /// Why: the file that names the project's kind.
    pub because: String,
}

fn proposal(command: &str, because: &str) -> Proposal {
    Proposal {
        command: command.into(),
        because: because.into(),
    }
}

/// npm's placeholder for a package without tests.
const NPM_NO_TEST: &str = "no test specified";

/// Propose a test command. `entries`: names at the top of the repository (and `tests/...` one
/// level down); `read`: the text of a small top-level file, if it exists.
#[must_use]
pub fn propose(entries: &[String], read: impl Fn(&str) -> Option<String>) -> Option<Proposal> {
    let has = |name: &str| entries.iter().any(|e| e == name);
    if has("Cargo.toml") {
        return Some(proposal("cargo test", "Cargo.toml"));
    }
    if has("go.mod") {
        return Some(proposal("go test ./...", "go.mod"));
    }
    if has("package.json")
        && let Some(pkg) = read("package.json")
        && let Ok(v) = serde_json::from_str::<serde_json::Value>(&pkg)
        && let Some(test) = v.pointer("/scripts/test").and_then(|t| t.as_str())
        && !test.contains(NPM_NO_TEST)
    {
        return Some(proposal("npm test", "package.json's scripts.test"));
    }
    if let Some(p) = python(entries, &read) {
        return Some(p);
    }
    let make_test = ["Makefile", "makefile", "GNUmakefile"]
        .into_iter()
        .find(|m| {
            has(m)
                && read(m).is_some_and(|t| {
                    t.lines()
                        .any(|l| l.starts_with("test:") || l.starts_with("test :"))
                })
        });
    make_test.map(|m| proposal("make test", &format!("{m}'s test target")))
}

/// pytest when the project says so (its configuration or a `conftest.py`), else unittest when
/// there are Python test files.
fn python(entries: &[String], read: &impl Fn(&str) -> Option<String>) -> Option<Proposal> {
    let has = |name: &str| entries.iter().any(|e| e == name);
    for f in ["pytest.ini", "conftest.py"] {
        if has(f) {
            return Some(proposal("python3 -m pytest -q", f));
        }
    }
    for f in ["pyproject.toml", "setup.cfg", "tox.ini"] {
        if has(f) && read(f).is_some_and(|t| t.contains("pytest")) {
            return Some(proposal("python3 -m pytest -q", f));
        }
    }
    let test_file = entries.iter().find(|e| {
        let name = e.rsplit('/').next().unwrap_or(e);
        std::path::Path::new(name)
            .extension()
            .is_some_and(|x| x.eq_ignore_ascii_case("py"))
            && (name.starts_with("test_") || name.ends_with("_test.py"))
    })?;
    Some(proposal("python3 -m unittest -q", test_file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_project_s_own_test_command_is_proposed_from_its_files() {
        let pkg_with = r#"{"scripts":{"test":"vitest run"}}"#;
        let pkg_without = r#"{"scripts":{"test":"echo \"Error: no test specified\" && exit 1"}}"#;
        type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], Option<&'a str>);
        let cases: [Case<'_>; 10] = [
            (&["Cargo.toml", "src"], &[], Some("cargo test")),
            (&["go.mod", "calc.go"], &[], Some("go test ./...")),
            (
                &["package.json"],
                &[("package.json", pkg_with)],
                Some("npm test"),
            ),
            (&["package.json"], &[("package.json", pkg_without)], None),
            (
                &["calc.py", "test_calc.py"],
                &[],
                Some("python3 -m unittest -q"),
            ),
            (
                &["calc.py", "tests/test_calc.py"],
                &[],
                Some("python3 -m unittest -q"),
            ),
            (
                &["conftest.py", "test_x.py"],
                &[],
                Some("python3 -m pytest -q"),
            ),
            (
                &["pyproject.toml", "test_x.py"],
                &[("pyproject.toml", "[tool.pytest.ini_options]\n")],
                Some("python3 -m pytest -q"),
            ),
            (
                &["Makefile"],
                &[("Makefile", "all:\n\tcc x.c\ntest: all\n\t./t\n")],
                Some("make test"),
            ),
            (&["README.md", "notes.txt"], &[], None),
        ];
        for (entries, files, want) in cases {
            let entries: Vec<String> = entries.iter().map(|e| (*e).to_string()).collect();
            let read = |name: &str| {
                files
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, t)| (*t).to_string())
            };
            let got = propose(&entries, read).map(|p| p.command);
            assert_eq!(got.as_deref(), want, "{entries:?}");
        }
    }
}
