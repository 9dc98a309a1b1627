use super::*;

const PROSE: &str = "The service account lost the permission when the role was split in the last release, so the panel stays empty for the projects that were migrated first.";

#[test]
fn templated_lines_are_found_and_distinct_ones_are_not() {
    let templated: String = (1..=6)
        .map(|n| format!("- Banana {n}.0 zebra `purple-{n}` {n}% per the review of item {n}\n"))
        .collect();
    let s = analyse("", &templated);
    assert_eq!((s.templated, s.blocks), (6, 6), "{s:?}");
    assert!(
        s.findings()[0].contains("6 of 6 blocks repeat one template"),
        "{:?}",
        s.findings()
    );

    let distinct = "- The role lost `iam.roles.get` in release 4.2 when it was split.\n\
                    - Eleven projects carry the custom role and all of them fail.\n\
                    - Adding the permission and applying it with terraform fixes the panel.\n";
    let s = analyse("", distinct);
    assert_eq!((s.templated, s.blocks), (0, 3), "{s:?}");
    assert!(s.penalty().abs() < 1e-9);
}

#[test]
fn one_paragraph_under_several_headings_is_templated() {
    let doc = format!("## A\n{PROSE}\n\n## B\n{PROSE}\n\n## C\n{PROSE}\n");
    let s = analyse("", &doc);
    assert_eq!(s.templated, 3);
    assert!(s.penalty() > 0.5, "{}", s.penalty());
}

#[test]
fn word_salad_is_prose_without_function_words() {
    let salad = "Scalable cache synergy Redis roles latency paradigm invalidation throughput leverage holistic architecture.";
    let cases = [(salad, 1), (PROSE, 0), ("Short keyword list only.", 0)];
    for (text, want) in cases {
        assert_eq!(analyse("", text).salad, want, "{text}");
    }
}

#[test]
fn lorem_ipsum_needs_three_of_its_words() {
    assert!(
        analyse(
            "",
            "Lorem ipsum dolor sit amet, consectetur adipiscing elit."
        )
        .is_lorem()
    );
    assert!(!analyse("", "The dolor of the amet.").is_lorem());
}

#[test]
fn placeholder_domains_are_not_evidence() {
    for (host, want) in [
        ("example.com", true),
        ("logs.example.org", true),
        ("example.net", true),
        ("svc.test", true),
        ("foo.invalid", true),
        ("cloud.google.com", false),
        ("myexample.com", false),
        ("user@example.com", true),
    ] {
        let url = format!("https://{host}/x");
        assert_eq!(is_placeholder_host(super::host(&url)), want, "{host}");
    }
    assert_eq!(
        without_placeholder_links(
            "see [the log](https://example.com/q/1) and https://example.org/2 or https://real.io/3."
        ),
        "see the log and  or https://real.io/3."
    );
    let s = analyse(
        "",
        "- see https://example.com/1 and [docs](https://cloud.google.com/iam)\n",
    );
    assert_eq!((s.placeholder_links, s.links), (1, 2));
}

#[test]
fn impossible_dates_are_named() {
    let doc = "on 2026-02-30, 2024-02-29, 2023-02-29, 2026-13-01, 2026-00-10, 2026-04-31, 2026-12-31 and v12026-02-30x";
    assert_eq!(
        impossible_dates(doc),
        [
            "2026-02-30",
            "2023-02-29",
            "2026-13-01",
            "2026-00-10",
            "2026-04-31"
        ]
    );
}

#[test]
fn the_tasks_words_stuffed_raise_the_density() {
    let task = "Monarch UI role tags missing for projects";
    let stuffed = "Monarch role tags missing projects Monarch tags role missing projects Monarch.";
    let s = analyse(task, stuffed);
    assert!(s.task_density > 0.9, "{s:?}");
    assert!(s.findings().iter().any(|f| f.starts_with("relevance:")));
    let s = analyse(task, PROSE);
    assert!(s.task_density < STUFFING_DENSITY, "{s:?}");
}

#[test]
fn the_penalty_is_bounded() {
    let worst = "## A\nLorem ipsum dolor sit amet consectetur adipiscing https://example.com/1 2026-02-31 monarch\n".repeat(5);
    let p = analyse("monarch", &worst).penalty();
    assert!((p - 0.8).abs() < 1e-9, "{p}");
    assert!(analyse("", "").penalty().abs() < 1e-9);
}
