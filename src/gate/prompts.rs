//! Prompt templates for the gate. The evaluator template is its own file and receives only the
//! task, the task type and the output (seed 002); templates carrying contamination signals are
//! refused before anything runs.

use std::fmt::Write;

use super::rubric::Dims;
use crate::error::{Error, Result};

/// The built-in evaluator template.
pub const DEFAULT_EVALUATOR: &str = include_str!("../../templates/evaluator.prompt.md");
/// The built-in evaluator prompt of a code change: its diff, with the code rubric.
pub const CODE_EVALUATOR: &str = include_str!("../../templates/code/evaluator.prompt.md");
/// The built-in revision template.
pub const DEFAULT_REVISION: &str = include_str!("../../templates/revision.prompt.md");

/// Signals that a template leaks the producer's context into the evaluator.
pub const CONTAMINATION_SIGNALS: [&str; 5] = [
    "{{steps}}",
    "{{chain_of_thought}}",
    "{{intermediate}}",
    "generator_context",
    "system_prompt",
];

/// Refuse a template with a contamination signal, naming the file and the signal.
pub fn check_contamination(origin: &str, template: &str) -> Result<()> {
    if let Some(sig) = CONTAMINATION_SIGNALS
        .iter()
        .find(|s| template.contains(**s))
    {
        let line = template
            .lines()
            .position(|l| l.contains(sig))
            .map_or(0, |i| i + 1);
        return Err(Error::input(format!(
            "{origin}:{line}: evaluator template contains `{sig}`: the evaluator must see only the task, task type and output"
        )));
    }
    Ok(())
}

/// Load a template file (or the built-in when `path` is `None`), checking contamination.
pub fn load(path: Option<&str>, builtin: &str) -> Result<String> {
    let Some(p) = path else {
        return Ok(builtin.to_string());
    };
    let text = std::fs::read_to_string(p)
        .map_err(|e| Error::input(format!("{p}: cannot read template: {e}")))?;
    check_contamination(p, &text)?;
    Ok(text)
}

/// The evaluator prompt: only `{{task}}`, `{{task_type}}`, `{{output}}` and `{{dimensions}}`.
#[must_use]
pub fn evaluator(
    template: &str,
    task: &str,
    task_type: &str,
    output: &str,
    dims: &[String],
) -> String {
    template
        .replace("{{task}}", task)
        .replace("{{task_type}}", task_type)
        .replace("{{dimensions}}", &dims.join(", "))
        .replace("{{output}}", output)
}

/// The revision prompt: the task, the current output and only the issues, with the
/// dimensions below the focus threshold named.
#[must_use]
pub fn revision(
    template: &str,
    task: &str,
    output: &str,
    issues: &[String],
    focus: &[String],
    dims: &Dims,
) -> String {
    let mut issue_list = String::new();
    for i in issues {
        let _infallible = writeln!(issue_list, "- {i}");
    }
    if issue_list.is_empty() {
        issue_list.push_str("- (no specific issues given; raise the weakest dimensions)\n");
    }
    let mut focus_list = String::new();
    for f in focus {
        let _infallible = writeln!(
            focus_list,
            "- {f} ({:.1}/10)",
            dims.get(f).copied().unwrap_or(0.0)
        );
    }
    if focus_list.is_empty() {
        focus_list.push_str("- (none below the focus threshold)\n");
    }
    template
        .replace("{{task}}", task)
        .replace("{{issues}}", issue_list.trim_end())
        .replace("{{focus}}", focus_list.trim_end())
        .replace("{{output}}", output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_templates_are_clean_and_isolated() {
        check_contamination("builtin", DEFAULT_EVALUATOR).unwrap();
        check_contamination("builtin", CODE_EVALUATOR).unwrap();
        let code = evaluator(CODE_EVALUATOR, "SPEC", "code change", "DIFF", &[]);
        for dim in ["correctness", "tests", "scope"] {
            assert!(code.contains(&format!("\"{dim}\": N")), "{dim}");
        }
        assert!(code.contains("SPEC") && code.contains("DIFF"));
        let p = evaluator(
            DEFAULT_EVALUATOR,
            "TASK",
            "research",
            "OUTPUT",
            &["depth".into()],
        );
        assert!(p.contains("TASK") && p.contains("OUTPUT") && p.contains("depth"));
        assert!(!p.contains("{{"), "{p}");
    }

    #[test]
    fn the_evaluator_asks_what_the_task_names_and_what_a_reader_can_run() {
        let p = evaluator(DEFAULT_EVALUATOR, "T", "research", "O", &["depth".into()]);
        for question in [
            "Which of the task's specific terms does the output address",
            "What can a reader run or check?",
            "whether\n  in code blocks or inline",
        ] {
            assert!(p.contains(question), "{question}: {p}");
        }
    }

    #[test]
    fn contaminated_templates_are_refused_with_line() {
        for sig in CONTAMINATION_SIGNALS {
            let t = format!("Score this.\nContext: {sig}\n{{{{output}}}}");
            let e = check_contamination("e.md", &t).unwrap_err();
            assert_eq!(e.exit_code(), 2);
            assert!(e.to_string().starts_with("e.md:2:"), "{e}");
        }
    }

    #[test]
    fn revision_names_focus_dims_and_issues_only() {
        let dims: Dims = [("depth".to_string(), 5.0), ("structure".to_string(), 9.0)].into();
        let p = revision(
            DEFAULT_REVISION,
            "T",
            "OUT",
            &["fix x".into()],
            &["depth".into()],
            &dims,
        );
        assert!(p.contains("- fix x") && p.contains("- depth (5.0/10)") && p.contains("OUT"));
        assert!(!p.contains("structure"), "{p}");
    }
}
