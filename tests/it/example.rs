//! The bundled example (`examples/`): the stand-in agent runs a loop that ends passing its gate,
//! and delegation works with it too.

use std::path::PathBuf;

use crate::support::{TestHome, git};

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples")
}

#[test]
fn the_example_loop_improves_the_artifact_until_its_gate_passes() {
    let t = TestHome::new();
    let art = t.root().join("research");
    std::fs::create_dir_all(&art).unwrap();
    std::fs::copy(
        examples().join("research/artifact.md"),
        art.join("artifact.md"),
    )
    .unwrap();
    let agent = examples().join("example-agent.sh").display().to_string();
    let r = t.run(&[
        "wiggum",
        "start",
        "demo",
        "--artifact-path",
        &art.display().to_string(),
        "--agent-cmd",
        &agent,
        "--foreground",
    ]);
    r.code(0);
    let out = r.stdout();
    let last = out
        .lines()
        .find(|l| l.starts_with("Iteration 3/10"))
        .expect("a third iteration");
    assert!(
        last.contains("✓ accepted · gate 8.") && !last.contains("FAIL"),
        "{out}"
    );
    let log = git(&art, &["log", "--format=%s"]);
    assert!(log.contains("Wiggum iteration 3: Add References"), "{log}");
    let final_text = std::fs::read_to_string(art.join("wiggum/final/artifact.md")).unwrap();
    assert!(final_text.contains("## Recommendations"), "{final_text}");
}

#[test]
fn the_example_agent_delegates_a_first_artifact() {
    let t = TestHome::new();
    let task = t.root().join("task.md");
    std::fs::write(&task, "Why is the Monarch tags panel empty?\n").unwrap();
    let agent = examples().join("example-agent.sh").display().to_string();
    t.run(&[
        "delegate",
        "start",
        "monarch",
        &task.display().to_string(),
        "--agent-cmd",
        &agent,
    ])
    .code(0);
    let path = t.run(&["delegate", "artifact-path", "monarch"]).stdout();
    let text = std::fs::read_to_string(path.trim()).unwrap();
    assert!(text.starts_with("# monarch\n\n## Summary"), "{text}");
}
