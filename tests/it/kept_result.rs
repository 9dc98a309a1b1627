//! The loop's result is what a gate judged and a commit kept, and the original artifact is the
//! user's whatever a run (or a supervisor's death) does to it: an earlier iteration's directory
//! edited, the original deleted mid-run, grown past the loop's cap, its mode changed, a result
//! planted before any iteration was kept.

use std::os::unix::fs::PermissionsExt;

use crate::first_week::{git_out, scripted_judge, start_judged, write};
use crate::support::TestHome;
use crate::support::home::Run;

/// `sh <script>`: an agent that plans `items` items and runs `iteration` (shell, with `$plan`
/// and `$item`) for each, ticking its item; a revision answers with the iteration's document.
fn agent(t: &TestHome, items: u32, planning: &str, iteration: &str) -> String {
    revising_agent(
        t,
        items,
        planning,
        iteration,
        r#"cat "$ITERATION_DIR/artifact.md""#,
    )
}

/// [`agent`] whose revision rounds run `revision` (shell).
fn revising_agent(
    t: &TestHome,
    items: u32,
    planning: &str,
    iteration: &str,
    revision: &str,
) -> String {
    let plan: String = (1..=items).map(|i| format!("- [ ] Part {i}\\n")).collect();
    let script = write(
        t,
        "agent.sh",
        &format!(
            r#"cat > /dev/null
plan="$WIGGUM_DIR/fix_plan.md"
case "$WIGGUM_PHASE" in
planning) printf '# Plan\n\n{plan}' > "$plan"; {planning} ;;
iteration)
  item=$(grep -m1 -- '- \[ \] ' "$plan" | sed 's/^- \[ \] //')
  {iteration}
  sed "s/^- \[ \] $item/- [x] $item/" "$plan" > "$plan.tmp" && mv "$plan.tmp" "$plan"
  ;;
revision) {revision} ;;
esac
"#
        ),
    );
    format!("sh {script}")
}

/// `start <topic> --foreground` with `agent` and `extra`; the terminal as a user has it.
fn start(t: &TestHome, topic: &str, agent: &str, extra: &[&str]) -> Run {
    let mut more = vec!["--foreground"];
    more.extend_from_slice(extra);
    let args = t.start_args(topic, &t.art(), agent, &more);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    t.run_with(&args, &[("STUDIO_AGENTS_LOG", "")])
}

/// One iteration of `agent`.
fn start1(t: &TestHome, topic: &str, agent: &str) -> Run {
    start(t, topic, agent, &["--max-iterations", "1"])
}

fn mode(p: &std::path::Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

/// The line of the loop's output that starts with `start`.
fn line<'a>(out: &'a str, start: &str) -> &'a str {
    out.lines()
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no line {start}: {out}"))
}

const GOOD: &str = r#"printf '\n## %s\n\nThe cache in `roles.go` denies the new role.\n' "$item" >> "$ITERATION_DIR/artifact.md""#;

const FIRST: &str = "wiggum/iterations/001-100/iteration-001/artifact.md";

/// Iteration 2's line says `why` of iteration 1's artifact, which is as its commit holds it, on
/// disk and in HEAD (no later commit touched it). What HEAD holds of it.
fn first_as_committed(t: &TestHome, out: &str, why: &str) -> String {
    assert!(
        line(out, "Iteration 2/").contains(&format!("{why} ({FIRST}); they were restored")),
        "{out}"
    );
    let committed = git_out(t, &["show", &format!("HEAD:{FIRST}")]);
    assert!(!committed.contains("Planted"), "{committed}");
    assert_eq!(
        std::fs::read_to_string(t.art().join(FIRST)).unwrap(),
        committed
    );
    assert_eq!(
        git_out(t, &["log", "--format=%s", "--", FIRST])
            .lines()
            .count(),
        1,
        "only the commit of iteration 1 holds its artifact"
    );
    assert_eq!(git_out(t, &["status", "--porcelain", "--", FIRST]), "");
    committed
}

#[test]
fn a_run_that_edits_a_kept_iteration_is_rejected_and_the_result_is_what_its_commit_holds() {
    let t = TestHome::new();
    // Every iteration the gate judges scores 6.7: a tie keeps the earlier result.
    let cfg = scripted_judge(&t, &["6.7"]);
    let iteration = format!(
        r#"case "$ITERATION" in
  1) {GOOD} ;;
  2) echo 'Planted by iteration 2.' >> "$ARTIFACT_PATH/{FIRST}"; printf 'poor\n' > "$ITERATION_DIR/artifact.md" ;;
  *) printf 'poor\n' > "$ITERATION_DIR/artifact.md" ;;
  esac"#
    );
    let agent = agent(&t, 3, ":", &iteration);
    let r = start_judged(
        &t,
        "kept",
        &agent,
        &cfg,
        &["--max-rounds", "1", "--max-iterations", "3"],
    );
    let committed = first_as_committed(&t, &r.stdout(), "the agent changed protected files");
    let out = r.stdout();
    // Iteration 3 ties iteration 1: the result stays iteration 1's, as its commit holds it.
    assert!(line(&out, "  artifact").ends_with("(iteration 1)"), "{out}");
    assert_eq!(
        std::fs::read_to_string(t.wiggum("final/artifact.md")).unwrap(),
        committed
    );
    assert_eq!(
        git_out(&t, &["show", "HEAD:wiggum/final/artifact.md"]),
        committed
    );
    assert_eq!(git_out(&t, &["status", "--porcelain"]), "");
}

#[test]
fn a_revision_round_that_edits_a_kept_iteration_rejects_its_own_and_the_edit_is_put_back() {
    let t = TestHome::new();
    // Iteration 1 passes; iteration 2 fails, and its revision round edits iteration 1.
    let cfg = scripted_judge(&t, &["9.0", "5.0"]);
    let revision = format!(
        r#"echo 'Planted by a revision.' >> "$ARTIFACT_PATH/{FIRST}"; cat "$ITERATION_DIR/artifact.md""#
    );
    let agent = revising_agent(&t, 2, ":", GOOD, &revision);
    let r = start_judged(
        &t,
        "revised",
        &agent,
        &cfg,
        &["--max-rounds", "2", "--max-iterations", "2"],
    );
    first_as_committed(
        &t,
        &r.stdout(),
        "in a revision round, the agent changed protected files",
    );
}

#[test]
fn an_original_a_dead_supervisor_left_deleted_is_put_back_with_its_mode_before_the_start_checks() {
    let t = TestHome::new();
    let original = std::fs::read_to_string(t.art().join("artifact.md")).unwrap();
    let path = t.art().join("artifact.md");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    let iteration = r#"rm "$ARTIFACT_PATH/artifact.md"; mkdir "$ARTIFACT_PATH/artifact.md""#;
    let agent = agent(&t, 1, ":", iteration);
    let args = t.start_args(
        "gone",
        &t.art(),
        &agent,
        &["--foreground", "--max-iterations", "1"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = t.run_with(&args, &[("STUDIO_AGENTS_FAILPOINT", "after-run")]);
    assert_eq!(r.out.status.code(), None, "aborted: {}", r.stderr());
    assert!(
        path.is_dir(),
        "the run put a directory where the original was"
    );
    let again = t.start_fg("gone", "", &["--max-iterations", "1"]);
    again.code(0);
    assert!(
        again.stderr().contains(&format!(
            "{}: changed by a run whose supervisor died; put back as it was before that run",
            path.display()
        )),
        "{}",
        again.stderr()
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
    assert_eq!(mode(&path), 0o640);
}

#[test]
fn an_edit_of_the_original_past_the_loop_s_cap_is_not_taken_and_the_loop_goes_on() {
    let t = TestHome::new();
    let original = std::fs::read_to_string(t.art().join("artifact.md")).unwrap();
    let iteration = r#"head -c 20971520 /dev/zero | tr '\0' 'a' >> "$ARTIFACT_PATH/artifact.md""#;
    let agent = agent(&t, 1, ":", iteration);
    let r = start1(&t, "big", &agent);
    let out = r.stdout();
    let size = original.len() + 20_971_520;
    assert!(
        line(&out, "Iteration 1/").contains(&format!(
            " · wrote to the original, leaving it {size} bytes, more than the loop takes of a file; not taken, the original restored · "
        )),
        "{out}"
    );
    assert!(!r.stderr().contains("larger than"), "{}", r.stderr());
    assert_ne!(t.state()["status"], "failed", "{}", r.stderr());
    assert_ne!(t.state()["status"], "error", "{}", r.stderr());
    assert_eq!(
        std::fs::read_to_string(t.art().join("artifact.md")).unwrap(),
        original
    );
}

#[test]
fn a_mode_change_of_the_original_is_put_back_and_never_committed() {
    let t = TestHome::new();
    let path = t.art().join("artifact.md");
    let before = mode(&path);
    let iteration = format!(r#"chmod 4777 "$ARTIFACT_PATH/artifact.md"; {GOOD}"#);
    let agent = agent(&t, 1, ":", &iteration);
    let r = start1(&t, "mode", &agent);
    r.code(0);
    let out = r.stdout();
    assert!(
        line(&out, "Iteration 1/")
            .contains(" · changed the original's mode to 4777; the original restored · "),
        "{out}"
    );
    assert_eq!(mode(&path), before);
    assert_eq!(
        git_out(&t, &["log", "--format=%s", "--", "artifact.md"])
            .lines()
            .count(),
        1,
        "only the commit that made the repository holds it"
    );
    assert_eq!(git_out(&t, &["status", "--porcelain"]), "");
}

#[test]
fn a_result_planted_during_planning_is_removed_and_no_iteration_kept_says_so() {
    let t = TestHome::new();
    let planting = r#"mkdir -p "$WIGGUM_DIR/final"; printf '# Planted\n\nDone, all of it.\n' > "$WIGGUM_DIR/final/artifact.md""#;
    let agent = agent(&t, 1, planting, "exit 0");
    let r = start1(&t, "planted", &agent);
    let out = r.stdout();
    assert_eq!(
        line(&out, "  artifact"),
        "  artifact    none: no iteration was kept",
        "{out}"
    );
    assert!(line(&out, "  quality").ends_with(" → -"), "{out}");
    assert!(!t.wiggum("final/artifact.md").exists());
    assert_eq!(
        git_out(
            &t,
            &["log", "--format=%s", "--", "wiggum/final/artifact.md"]
        ),
        "",
        "no commit holds a result"
    );
}
