//! The loop's memory files, rendered from `templates/` (embedded in the binary). Start-time
//! placeholders are filled when the files are first written; per-iteration ones when a prompt is
//! fed to an agent, so a user's own edits to PROMPT.md keep working.

use std::path::Path;

use super::work::Kind;
use crate::disk::layout::Layout;
use crate::error::Result;
use crate::sys::fsutil;

/// The memory files and their templates.
pub const FILES: [(&str, &str); 5] = [
    ("PROMPT.md", include_str!("../../templates/PROMPT.md")),
    (
        "PLANNING_PROMPT.md",
        include_str!("../../templates/PLANNING_PROMPT.md"),
    ),
    ("AGENT.md", include_str!("../../templates/AGENT.md")),
    ("fix_plan.md", include_str!("../../templates/fix_plan.md")),
    (".gitignore", include_str!("../../templates/gitignore")),
];

/// The memory files of a code loop: its own prompt, planning prompt and conventions (the
/// repository is the work, the spec is read), the plan and ignore file as for documents.
pub const CODE_FILES: [(&str, &str); 5] = [
    ("PROMPT.md", include_str!("../../templates/code/PROMPT.md")),
    (
        "PLANNING_PROMPT.md",
        include_str!("../../templates/code/PLANNING_PROMPT.md"),
    ),
    ("AGENT.md", include_str!("../../templates/code/AGENT.md")),
    FILES[3],
    FILES[4],
];

/// Fill placeholders.
#[must_use]
pub fn render(template: &str, vars: &[(&str, String)]) -> String {
    vars.iter().fold(template.to_string(), |t, (k, v)| {
        t.replace(&format!("{{{{{k}}}}}"), v)
    })
}

/// The start-time variables.
#[must_use]
pub fn start_vars(topic: &str, layout: &Layout, promise: &str) -> Vec<(&'static str, String)> {
    vec![
        ("topic", topic.to_string()),
        ("artifact_path", layout.root().display().to_string()),
        ("wiggum_dir", layout.wiggum().display().to_string()),
        ("promise", promise.to_string()),
    ]
}

/// Per-iteration variables.
#[must_use]
pub fn iteration_vars(n: u32, dir: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("iteration", n.to_string()),
        ("prev_iteration", n.saturating_sub(1).to_string()),
        ("iteration_dir", dir.display().to_string()),
    ]
}

/// Write every memory file that does not exist yet; existing ones are the loop's memory and are
/// kept. A file of the same name in `own` (an artifact type's template directory) replaces the
/// built-in template. Returns the names written.
pub fn write_missing(
    layout: &Layout,
    vars: &[(&str, String)],
    own: Option<&Path>,
    kind: Kind,
) -> Result<Vec<&'static str>> {
    let mut written = Vec::new();
    for (name, _) in FILES {
        let text = render(&template(name, own, kind)?, vars);
        if fsutil::write_new(&layout.memory(name), text.as_bytes())? {
            written.push(name);
        }
    }
    Ok(written)
}

/// The template of a memory file: the one in `own` (an artifact type's directory) when it has
/// it, else the built-in one of the loop's kind (empty for a name that is not a memory file).
pub fn template(name: &str, own: Option<&Path>, kind: Kind) -> Result<String> {
    if let Some(p) = own.map(|d| d.join(name)).filter(|p| p.is_file()) {
        return fsutil::read(&p);
    }
    let set: &[(&str, &str)] = match kind {
        Kind::Document => &FILES,
        Kind::Code => &CODE_FILES,
    };
    Ok(set
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| (*t).to_string())
        .unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_known_placeholders_and_keeps_others() {
        let out = render(
            "{{topic}} at {{iteration}} {{unknown}}",
            &[("topic", "t".into())],
        );
        assert_eq!(out, "t at {{iteration}} {{unknown}}");
    }

    #[test]
    fn templates_carry_the_promise_and_plan_has_no_items() {
        let l = Layout::new("/a");
        let vars = start_vars("t", &l, "<promise>COMPLETE</promise>");
        let prompt = render(FILES[0].1, &vars);
        // Named inline, never as a line of its own: an agent echoing its prompt must not match.
        assert!(prompt.contains("`<promise>COMPLETE</promise>`"));
        assert!(
            !prompt
                .lines()
                .any(|l| l.trim() == "<promise>COMPLETE</promise>")
        );
        assert!(!crate::ralph::fix_plan::has_items(FILES[3].1));
    }
}
