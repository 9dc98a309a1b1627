//! What a start settles for the kind of work: a code loop's spec (checked to exist), its
//! validation commands (`--validate`, else the settings', else the project's own test command,
//! proposed and said), its gate (the diff, with the code rubric). Writes nothing.

use std::path::{Path, PathBuf};

use super::Kind;
use crate::config::{self, GateTarget, Settings};
use crate::error::{Error, Result};
use crate::ralph::validation::detect;

/// The flags of `start` that settle a code loop.
#[derive(Debug, Clone, Default)]
pub struct CodeFlags {
    /// `--validate CMD` (repeatable): the validation commands, over the settings'.
    pub validate: Vec<String>,
    /// `--no-validate`: run without validation, proposing none.
    pub no_validate: bool,
    /// `--spec PATH` (repeatable): the spec's files.
    pub spec: Vec<PathBuf>,
}

/// Apply the flags and the kind's defaults to `settings`. `root`: the artifact directory;
/// `repo`: the top of its work tree (where validation runs and the project's files are).
/// Returns the lines `start` says (the proposed command, a code loop left without one).
pub fn apply(
    settings: &mut Settings,
    flags: &CodeFlags,
    kind: Kind,
    root: &Path,
    repo: &Path,
) -> Result<Vec<String>> {
    if let Some(empty) = flags.validate.iter().find(|c| c.trim().is_empty()) {
        return Err(Error::input(format!(
            "--validate {empty:?}: an empty command (it would judge every iteration green)"
        )));
    }
    if settings
        .validation
        .commands
        .iter()
        .any(|c| c.trim().is_empty())
    {
        return Err(Error::input(
            "[validation] commands: an empty command (it would judge every iteration green)",
        ));
    }
    if flags.no_validate {
        settings.validation.commands.clear();
        settings.validation.detect = false;
    } else if !flags.validate.is_empty() {
        settings.validation.commands.clone_from(&flags.validate);
    }
    if !flags.spec.is_empty() {
        settings.defaults.spec.clone_from(&flags.spec);
    }
    check_spec(&settings.defaults.spec, root)?;
    if kind == Kind::Document {
        return Ok(Vec::new());
    }
    // The spec is never modified, so a code loop's gate reads the change itself.
    if settings.gate.target == GateTarget::Artifact {
        settings.gate.target = GateTarget::Diff;
    }
    // The code rubric, unless the settings weigh its dimensions themselves (then only those).
    let code = config::code_weights();
    if settings.gate.weights.keys().any(|k| code.contains_key(k)) {
        settings.gate.weights.retain(|k, _| code.contains_key(k));
    } else {
        settings.gate.weights = code;
    }
    Ok(validation(settings, repo).into_iter().collect())
}

/// Every spec file exists (relative to the artifact directory), inside it.
fn check_spec(spec: &[PathBuf], root: &Path) -> Result<()> {
    for s in spec {
        let p = root.join(s);
        if s.is_absolute() || s.components().any(|c| c == std::path::Component::ParentDir) {
            return Err(Error::input(format!(
                "--spec {}: give a path inside the artifact directory {}",
                s.display(),
                root.display()
            )));
        }
        if !p.is_file() {
            return Err(Error::input(format!(
                "--spec {}: no such file in {}",
                s.display(),
                root.display()
            )));
        }
    }
    Ok(())
}

/// Propose the project's test command when a code loop has none; the line `start` says.
fn validation(settings: &mut Settings, repo: &Path) -> Option<String> {
    if !settings.validation.commands.is_empty() {
        return None;
    }
    if !settings.validation.detect {
        return Some(
            "validation is off (--no-validate): nothing checks the agents' changes, and the loop cannot tell a red tree from a green one".into(),
        );
    }
    let entries = top_entries(repo);
    let read = |name: &str| crate::sys::fsutil::read_capped(&repo.join(name), 256 << 10).ok();
    match detect::propose(&entries, read) {
        Some(p) => {
            let line = format!(
                "validation: `{}` (proposed from {}); `--validate CMD` names another, `--no-validate` runs without",
                p.command, p.because
            );
            settings.validation.commands = vec![p.command];
            Some(line)
        }
        None => Some(
            "no test command found for this code loop: name one with `--validate CMD` (or `[validation] commands`), or run without with `--no-validate`".into(),
        ),
    }
}

/// The names at the top of the repository, and those one level into `tests/` and `test/`.
fn top_entries(repo: &Path) -> Vec<String> {
    let names = |dir: &Path, prefix: &str| -> Vec<String> {
        std::fs::read_dir(dir)
            .map(|rd| {
                rd.flatten()
                    .take(10_000)
                    .filter_map(|e| e.file_name().to_str().map(|n| format!("{prefix}{n}")))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut out = names(repo, "");
    for sub in ["tests", "test"] {
        out.extend(names(&repo.join(sub), &format!("{sub}/")));
    }
    out
}

/// The spec's files: `[defaults] spec` (relative to the artifact directory), else its
/// `artifact.md` when there is one.
#[must_use]
pub fn spec_files(settings: &Settings, root: &Path) -> Vec<PathBuf> {
    if settings.defaults.spec.is_empty() {
        let a = root.join("artifact.md");
        if a.is_file() { vec![a] } else { Vec::new() }
    } else {
        settings
            .defaults
            .spec
            .iter()
            .map(|s| root.join(s))
            .collect()
    }
}

/// The spec as the prompts name it: the files, or the artifact directory's `artifact.md`.
#[must_use]
pub fn spec_words(settings: &Settings, root: &Path) -> String {
    let files = spec_files(settings, root);
    if files.is_empty() {
        return "none was given: the plan and the topic are the task".into();
    }
    files
        .iter()
        .map(|f| format!("`{}`", f.display()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The validation as the prompts name it.
#[must_use]
pub fn validation_words(settings: &Settings) -> String {
    if settings.validation.commands.is_empty() {
        return "none is set; check your change by hand".into();
    }
    let cmds: Vec<String> = settings
        .validation
        .commands
        .iter()
        .map(|c| format!("`{c}`"))
        .collect();
    format!(
        "{} (run from the top of the repository; each must pass)",
        cmds.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_loop_takes_its_validation_from_the_flags_else_the_project() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("test_calc.py"), "").unwrap();
        let run = |flags: CodeFlags, kind: Kind, preset: &[&str]| {
            let mut s = Settings::default();
            s.validation.commands = preset.iter().map(|c| (*c).to_string()).collect();
            let notes = apply(&mut s, &flags, kind, d.path(), d.path()).unwrap();
            (s, notes)
        };
        let (s, notes) = run(CodeFlags::default(), Kind::Code, &[]);
        assert_eq!(s.validation.commands, ["python3 -m unittest -q"]);
        assert!(notes[0].contains("proposed from test_calc.py"), "{notes:?}");
        assert_eq!(s.gate.target, GateTarget::Diff);
        assert_eq!(s.gate.weights, config::code_weights());
        let (s, notes) = run(CodeFlags::default(), Kind::Code, &["make check"]);
        assert_eq!(s.validation.commands, ["make check"]);
        assert!(notes.is_empty());
        let flags = CodeFlags {
            validate: vec!["pytest -x".into()],
            ..CodeFlags::default()
        };
        assert_eq!(
            run(flags, Kind::Code, &["make check"])
                .0
                .validation
                .commands,
            ["pytest -x"]
        );
        let off = CodeFlags {
            no_validate: true,
            ..CodeFlags::default()
        };
        let (s, notes) = run(off, Kind::Code, &["make check"]);
        assert!(s.validation.commands.is_empty());
        assert!(notes[0].contains("validation is off"));
        // A document keeps its gate and proposes nothing.
        let (s, notes) = run(CodeFlags::default(), Kind::Document, &[]);
        assert!(s.validation.commands.is_empty() && notes.is_empty());
        assert_eq!(s.gate.target, GateTarget::Artifact);
    }

    #[test]
    fn a_spec_outside_the_artifact_directory_or_missing_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let mut s = Settings::default();
        for (spec, want) in [
            ("../x.md", "inside the artifact directory"),
            ("none.md", "no such file"),
        ] {
            let flags = CodeFlags {
                spec: vec![spec.into()],
                ..CodeFlags::default()
            };
            let e = apply(&mut s, &flags, Kind::Code, d.path(), d.path()).unwrap_err();
            assert!(e.to_string().contains(want), "{e}");
        }
    }
}
