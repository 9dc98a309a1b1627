//! Artifact types: what "good" means for each kind of artifact the loop refines — its required
//! sections (the completeness metric counts them; the planning prompt names them), the weights
//! of the built-in metrics and what each looks for, the task type the gate's rubric is told, the
//! templates it renders and its default agent. Built in: `research`, `design`, `code`,
//! `generic`; users add or replace types in `[types.<name>]`. Pure.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::config::{QualityWeights, Settings, TypeDef};

/// One artifact type, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct ArtifactType {
    /// Its name.
    pub name: String,
    /// Required sections (empty: any structure, measured by the generic rules).
    pub sections: Vec<String>,
    /// Weights of the built-in metrics.
    pub weights: QualityWeights,
    /// What the metrics look for, in words.
    pub looks_for: String,
    /// The task type the gate's rubric is told.
    pub task_type: String,
    /// A directory of templates replacing the built-in ones.
    pub templates: Option<PathBuf>,
    /// Its default agent.
    pub agent: Option<String>,
}

/// The built-in types, by name.
pub const BUILT_IN: [&str; 4] = ["code", "design", "generic", "research"];

fn weights(
    completeness: f64,
    verification: f64,
    clarity: f64,
    actionability: f64,
) -> QualityWeights {
    QualityWeights {
        completeness_weight: completeness,
        verification_weight: verification,
        clarity_weight: clarity,
        actionability_weight: actionability,
    }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_string()).collect()
}

/// A built-in type; `generic` takes `generic_weights` (`[quality_metrics]`).
#[must_use]
pub fn built_in(name: &str, generic_weights: QualityWeights) -> Option<ArtifactType> {
    let t = |sections: &[&str], w, looks_for: &str, task_type: &str| ArtifactType {
        name: name.to_string(),
        sections: strings(sections),
        weights: w,
        looks_for: looks_for.to_string(),
        task_type: task_type.to_string(),
        templates: None,
        agent: None,
    };
    Some(match name {
        "research" => t(
            &[
                "Executive Summary",
                "Context",
                "Findings",
                "Root Cause",
                "Recommendations",
                "References",
            ],
            weights(0.30, 0.40, 0.15, 0.15),
            "every finding backed by evidence (a link, a citation, a quoted command or log); \
             a root cause, not only symptoms; recommendations a reader can act on",
            "research report",
        ),
        "design" => t(
            &[
                "Summary",
                "Context",
                "Goals",
                "Alternatives",
                "Trade-offs",
                "Decision",
                "Risks",
            ],
            weights(0.35, 0.15, 0.20, 0.30),
            "at least two alternatives, each with its trade-offs; a decision that says why; \
             risks with what would be done about them",
            "design document",
        ),
        "code" => t(
            &["Summary", "Changes", "Validation", "Risks"],
            weights(0.25, 0.40, 0.15, 0.20),
            "the commands that validate the change, in code blocks, and that they pass \
             ([validation] commands run them after every iteration)",
            "code change",
        ),
        "generic" => generic(generic_weights),
        _ => return None,
    })
}

/// The type named `name`: a `[types]` entry (over a built-in of the same name), a built-in, or
/// `generic` with the refusal `start` gives (naming the known ones); readers of an old loop's
/// settings measure it as `generic`.
#[must_use]
pub fn resolve(
    name: &str,
    user: &BTreeMap<String, TypeDef>,
    generic_weights: QualityWeights,
) -> (ArtifactType, Option<String>) {
    if let Some(def) = user.get(name) {
        let base = built_in(name, generic_weights).unwrap_or_else(|| generic(generic_weights));
        return (
            ArtifactType {
                name: name.to_string(),
                sections: if def.sections.is_empty() {
                    base.sections
                } else {
                    def.sections.clone()
                },
                weights: def.weights.unwrap_or(base.weights),
                looks_for: def.looks_for.clone().unwrap_or(base.looks_for),
                task_type: def.task_type.clone().unwrap_or_else(|| name.to_string()),
                templates: def.templates.clone(),
                agent: def.agent.clone(),
            },
            None,
        );
    }
    if let Some(t) = built_in(name, generic_weights) {
        return (t, None);
    }
    let mut known: Vec<&str> = BUILT_IN.to_vec();
    known.extend(user.keys().map(String::as_str));
    known.sort_unstable();
    known.dedup();
    let warning = format!(
        "unknown artifact type `{name}` (known: {}); define it in [types.{name}] or choose a known one",
        known.join(", ")
    );
    (generic(generic_weights), Some(warning))
}

/// The type of any artifact: no required sections, the `[quality_metrics]` weights.
fn generic(w: QualityWeights) -> ArtifactType {
    ArtifactType {
        name: "generic".into(),
        sections: Vec::new(),
        weights: w,
        looks_for: "sections that are present and substantive, claims backed by evidence, \
                    short readable paragraphs, concrete recommendations"
            .into(),
        task_type: "document".into(),
        templates: None,
        agent: None,
    }
}

/// The type a loop's effective settings name (`[defaults] type`, generic when none).
#[must_use]
pub fn of(settings: &Settings) -> ArtifactType {
    let name = settings.defaults.kind.as_deref().unwrap_or("generic");
    resolve(name, &settings.types, settings.quality_metrics).0
}

impl ArtifactType {
    /// Whether a loop of this type changes the repository (`code`): its agents may write the
    /// whole work tree. Documents — `research`, `design`, `generic`, a user's own types — are
    /// written in their artifact directory alone (least privilege: one bad `git clean` reaches
    /// nothing else); `[safety] writable` widens either.
    #[must_use]
    pub fn writes_repository(&self) -> bool {
        self.name == "code"
    }

    /// The block the planning prompt and AGENT.md carry: what a good artifact of this type has.
    #[must_use]
    pub fn requirements(&self) -> String {
        let mut out = format!(
            "This is a `{}` artifact ({}).\n\n",
            self.name, self.task_type
        );
        if self.sections.is_empty() {
            out.push_str("It has no required sections: structure it as its content needs.\n");
        } else {
            out.push_str("Required sections, each a heading with substantive content:\n\n");
            for s in &self.sections {
                out.push_str(&format!("- {s}\n"));
            }
        }
        out.push_str(&format!(
            "\nThe quality measure looks for {}.\n",
            self.looks_for
        ));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str, def: TypeDef) -> BTreeMap<String, TypeDef> {
        BTreeMap::from([(name.to_string(), def)])
    }

    #[test]
    fn built_in_types_resolve_and_an_unknown_one_falls_back_naming_the_known() {
        let w = QualityWeights::default();
        let cases: [(&str, &str, usize, bool); 5] = [
            ("research", "research report", 6, false),
            ("design", "design document", 7, false),
            ("code", "code change", 4, false),
            ("generic", "document", 0, false),
            ("poem", "document", 0, true),
        ];
        for (name, task_type, sections, warns) in cases {
            let (t, warning) = resolve(name, &BTreeMap::new(), w);
            assert_eq!(t.task_type, task_type, "{name}");
            assert_eq!(t.sections.len(), sections, "{name}");
            assert_eq!(warning.is_some(), warns, "{name}");
        }
        let (_, warning) = resolve("poem", &user("runbook", TypeDef::default()), w);
        assert_eq!(
            warning.unwrap(),
            "unknown artifact type `poem` (known: code, design, generic, research, runbook); define it in [types.poem] or choose a known one"
        );
    }

    #[test]
    fn a_user_type_takes_what_it_sets_and_the_rest_from_generic() {
        let def = TypeDef {
            sections: vec!["Trigger".into(), "Steps".into(), "Rollback".into()],
            templates: Some("runbook-templates".into()),
            agent: Some("mine".into()),
            ..TypeDef::default()
        };
        let (t, warning) = resolve("runbook", &user("runbook", def), QualityWeights::default());
        assert!(warning.is_none());
        assert_eq!(t.sections, ["Trigger", "Steps", "Rollback"]);
        assert_eq!(t.task_type, "runbook");
        assert_eq!(t.weights, QualityWeights::default());
        assert_eq!(t.agent.as_deref(), Some("mine"));
        assert!(
            t.requirements().contains("- Rollback\n"),
            "{}",
            t.requirements()
        );
    }
}
