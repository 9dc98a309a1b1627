//! What the judge reads for the task: a document about something else with the task's common
//! words swapped in, and a substantive one whose commands are inline, against the HTTP caching
//! task and the research task of the corpus.

use crate::config::default_weights;
use crate::gate::rubric::weighted;

const HTTP_TASK: &str =
    "Write a research report on HTTP caching headers (Cache-Control, ETag) for our CDN team";
const RESEARCH_TASK: &str = "Find why the Monarch UI fails to list role tags for some projects (its logs show `PERMISSION_DENIED`) and recommend a fix";

fn fixture(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/judge")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn score(task: &str, doc: &str) -> (f64, super::Evaluation) {
    let e = super::evaluate(task, doc);
    (weighted(&e.dims, &default_weights()), e)
}

#[test]
fn a_word_swapped_document_names_none_of_the_tasks_terms_and_fails() {
    for file in [
        "http-caching/swapped-architecture.md",
        "http-caching/swapped-performance.md",
    ] {
        let (s, e) = score(HTTP_TASK, &fixture(file));
        eprintln!("{file}: {s:.2} {e:?}");
        // It passed at 8.55 (relevance 10): the task's common words were all it named.
        assert!(s < 4.0, "{file}: {s} {e:?}");
        assert!(e.dims["relevance"] < 3.0, "{file}: {e:?}");
        assert!(
            e.issues.iter().any(|i| i.starts_with("relevance")
                && i.contains("Cache-Control")
                && i.contains("ETag")),
            "{file}: {:?}",
            e.issues
        );
    }
}

#[test]
fn a_report_that_names_the_tasks_terms_passes_where_the_swapped_ones_fail() {
    let (s, e) = score(HTTP_TASK, &fixture("http-caching/good.md"));
    assert!(s >= 8.0, "{s} {e:?}");
    assert!(e.dims["relevance"] >= 9.0, "{e:?}");
}

#[test]
fn commands_inline_in_numbered_steps_are_depth() {
    let (s, e) = score(RESEARCH_TASK, &fixture("research-good-inline.md"));
    assert!(e.dims["depth"] >= 8.0, "{e:?}");
    assert!(s >= 8.0, "{s} {e:?}");
}
