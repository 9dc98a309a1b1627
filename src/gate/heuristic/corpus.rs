//! The labelled corpus (`tests/fixtures/judge/`): per artifact type good documents (one with its
//! commands inline), a mediocre draft and gamed ones (one another text with the task's common
//! words swapped in). The built-in judge must score good at or above the default pass
//! threshold, mediocre below it, and every gamed document below the mediocre draft of its type.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use crate::config::default_weights;
use crate::gate::rubric::weighted;

#[derive(Deserialize)]
struct Corpus {
    tasks: BTreeMap<String, String>,
    doc: Vec<Doc>,
}

#[derive(Deserialize)]
struct Doc {
    file: String,
    #[serde(rename = "type")]
    kind: String,
    label: String,
    #[serde(default)]
    tactic: String,
}

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/judge")
}

/// Each document of the corpus with its task, label and weighted score.
fn scored() -> Vec<(Doc, f64, super::Evaluation)> {
    let text = std::fs::read_to_string(dir().join("corpus.toml")).unwrap();
    let corpus: Corpus = toml::from_str(&text).unwrap();
    let w = default_weights();
    corpus
        .doc
        .into_iter()
        .map(|d| {
            let body = std::fs::read_to_string(dir().join(&d.file)).unwrap();
            let e = super::evaluate(&corpus.tasks[&d.kind], &body);
            let s = weighted(&e.dims, &w);
            (d, s, e)
        })
        .collect()
}

const PASS: f64 = 8.0;

#[test]
fn substance_passes_and_form_without_it_does_not() {
    let all = scored();
    let mut report = String::new();
    for (d, s, e) in &all {
        report += &format!(
            "{:>5.2} {:8} {:30} {:?} {:?}\n",
            s, d.label, d.file, e.dims, e.issues
        );
    }
    eprintln!("{report}");
    let score = |kind: &str, label: &str| -> Vec<f64> {
        all.iter()
            .filter(|(d, ..)| d.kind == kind && d.label == label)
            .map(|(_, s, _)| *s)
            .collect()
    };
    for kind in crate::quality::types::BUILT_IN {
        let good = score(kind, "good");
        let mediocre = score(kind, "mediocre");
        let gamed = score(kind, "gamed");
        assert!(
            !good.is_empty() && !mediocre.is_empty() && !gamed.is_empty(),
            "{kind}"
        );
        for g in &good {
            assert!(
                *g >= PASS,
                "{kind}: a good document scores {g} < {PASS}\n{report}"
            );
            for m in &mediocre {
                assert!(m < g, "{kind}: mediocre {m} >= good {g}\n{report}");
            }
        }
        for m in &mediocre {
            assert!(
                *m < PASS,
                "{kind}: a mediocre draft passes with {m}\n{report}"
            );
            for x in &gamed {
                assert!(
                    x < m,
                    "{kind}: a gamed document {x} >= mediocre {m}\n{report}"
                );
            }
        }
    }
    for (d, s, e) in &all {
        if d.label != "gamed" {
            assert!(
                !e.issues.iter().any(|i| i.starts_with("substance:")),
                "{} is not gamed but {:?}\n{report}",
                d.file,
                e.issues
            );
        }
        if d.label == "gamed" {
            assert!(
                !e.issues.is_empty(),
                "{} ({}) scores {s} with no issue named\n{report}",
                d.file,
                d.tactic
            );
        }
        if d.file.contains("-swapped") {
            assert!(
                e.issues
                    .iter()
                    .any(|i| i.starts_with("relevance") && i.contains("names none of")),
                "{} does not say which of the task's terms it misses: {:?}",
                d.file,
                e.issues
            );
        }
    }
}
