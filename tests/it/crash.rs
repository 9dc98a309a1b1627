//! Crashes at the worst moments (failpoints abort the supervisor), then a restart: no commit is
//! lost, the repository is never left mid-commit, the plan matches the committed work.

use crate::support::TestHome;

fn crash_at(t: &TestHome, topic: &str, failpoint: &str) {
    crash_with(t, topic, "", failpoint);
}

/// Run the loop with the fake agent doing `fake` until `failpoint` aborts the supervisor.
fn crash_with(t: &TestHome, topic: &str, fake: &str, failpoint: &str) {
    let args = t.start_args(topic, &t.art(), &t.agent_cmd(fake, ""), &["--foreground"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = t.run_with(&args, &[("STUDIO_AGENTS_FAILPOINT", failpoint)]);
    assert_eq!(
        r.out.status.code(),
        None,
        "aborted by the failpoint: {}",
        r.stderr()
    );
    assert_eq!(t.status_json(topic)["status"], "dead");
}

fn restart_and_check(t: &TestHome, topic: &str) {
    t.start_fg(topic, "", &[]).code(0);
    assert_eq!(t.state()["stop_reason"], "plan_empty");
    let log = t.git_log();
    let subjects: Vec<&str> = log.iter().map(|l| l.split('|').nth(1).unwrap()).collect();
    assert_eq!(
        subjects,
        vec![
            "Wiggum iteration 3: Improve part 3",
            "Wiggum iteration 2: Improve part 2",
            "Wiggum iteration 1: Improve part 1",
            "Wiggum planning: fix_plan.md",
        ]
    );
    // Every item's work is in the final artifact: nothing ticked was lost with a discarded dir.
    let fin = std::fs::read_to_string(t.wiggum("final/artifact.md")).unwrap();
    for part in 1..=3 {
        assert_eq!(
            fin.matches(&format!("## Improve part {part}")).count(),
            1,
            "{fin}"
        );
    }
    let fsck = std::process::Command::new("git")
        .args(["fsck", "--no-progress"])
        .current_dir(t.art())
        .output()
        .unwrap();
    assert!(
        fsck.status.success(),
        "{}",
        String::from_utf8_lossy(&fsck.stderr)
    );
    assert!(!t.art().join(".git/index.lock").exists());
    let dirty = std::process::Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(t.art())
        .output()
        .unwrap();
    let dirty = String::from_utf8_lossy(&dirty.stdout);
    assert!(
        !dirty.contains("fix_plan.md") && !dirty.contains("artifact.md"),
        "{dirty}"
    );
}

#[test]
fn a_crash_between_spawning_the_agent_and_recording_it_runs_none_of_the_agent() {
    let t = TestHome::new();
    // The agent would start a TERM-ignoring child and a setsid'd grandchild at once.
    // The 1st job is planning's agent, the 2nd iteration 1's.
    crash_with(&t, "gap", "spawn", "job-spawned@2");
    // The token was on disk before the spawn.
    assert!(t.state()["agent_token"].is_string(), "{}", t.state());
    // Iteration 1's agent never got past its gate: nothing of it ran, nothing of it is left.
    crate::support::assert_no_survivors(&t.token);
    let pids = std::fs::read_to_string(t.pids_file()).unwrap();
    assert!(!pids.contains("iteration 1"), "{pids}");
    t.start_fg("gap", "", &[]).code(0);
    assert_eq!(t.state()["stop_reason"], "plan_empty");
    // Nor is its private temp dir (recorded only by its token).
    let left: Vec<_> = std::fs::read_dir(t.tmp())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn stray_temp_files_of_an_interrupted_write_are_removed_at_the_next_start() {
    let t = TestHome::new();
    crash_at(&t, "tmp", "state-after-temp-write@5");
    let temps = |t: &TestHome| {
        std::fs::read_dir(t.wiggum(""))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .count()
    };
    assert_eq!(temps(&t), 1);
    t.start_fg("tmp", "", &[]).code(0);
    assert_eq!(temps(&t), 0);
}

#[test]
fn a_crash_just_before_a_commit_redoes_the_iteration_with_the_plan_restored() {
    let t = TestHome::new();
    crash_at(&t, "c1", "before-commit@1");
    // The agent had ticked item 1 before the crash.
    assert!(
        std::fs::read_to_string(t.wiggum("fix_plan.md"))
            .unwrap()
            .contains("- [x] Improve part 1")
    );
    restart_and_check(&t, "c1");
    let iters = t.runs("iteration");
    assert!(
        iters
            .iter()
            .any(|r| r["iteration"] == 1 && r["outcome"] == "interrupted"),
        "{iters:?}"
    );
}

#[test]
fn a_crash_in_the_middle_of_a_commit_leaves_the_repository_whole() {
    let t = TestHome::new();
    // The first commit is planning's; the second is iteration 1's, staged but not written.
    crash_at(&t, "c2", "commit-after-stage@2");
    assert_eq!(t.git_log().len(), 1);
    restart_and_check(&t, "c2");
}

#[test]
fn a_crash_in_the_middle_of_a_state_write_leaves_the_old_state_readable() {
    let t = TestHome::new();
    // The 7th state write is one of iteration 1's (its token, before the agent is spawned).
    crash_at(&t, "c3", "state-after-temp-write@7");
    // Written by temp file + rename: the crash left the new state in a temp file, and the old
    // one intact and readable.
    let temps = std::fs::read_dir(t.wiggum(""))
        .unwrap()
        .flatten()
        .filter(|e| {
            let n = e.file_name().to_string_lossy().to_string();
            n.starts_with('.') && n.ends_with(".tmp")
        })
        .count();
    assert_eq!(temps, 1);
    let st = t.state();
    assert_eq!(st["topic"], "c3");
    restart_and_check(&t, "c3");
}

#[test]
fn a_crash_after_the_commit_but_before_its_record_keeps_the_commit() {
    let t = TestHome::new();
    // The 1st hit of this point is right after iteration 1's commit, before its run record.
    crash_at(&t, "c4", "after-commit@1");
    assert_eq!(t.git_log().len(), 2);
    restart_and_check(&t, "c4");
    let iters = t.runs("iteration");
    assert!(
        iters.iter().any(|r| r["iteration"] == 1
            && r["note"]
                .as_str()
                .is_some_and(|n| n.contains("rebuilt from git"))),
        "{iters:?}"
    );
}

#[test]
fn status_says_why_a_loop_is_dead_or_unreadable_and_list_has_a_header() {
    let t = TestHome::new();
    crash_at(&t, "why", "after-commit");
    let st = t.run(&["wiggum", "status", "why"]).stdout();
    assert!(
        st.contains("  reason:    its state says running but no supervisor holds its lock"),
        "{st}"
    );
    assert!(
        st.contains("studio-agents wiggum start why` resumes it"),
        "{st}"
    );
    let list = t.run(&["wiggum", "list", "--color", "never"]).stdout();
    assert!(list.starts_with("TOPIC  STATUS  ITER"), "{list}");
    assert!(
        list.lines().nth(1).unwrap().starts_with("why    dead    "),
        "{list}"
    );
    let coloured = t.run(&["wiggum", "list", "--color", "always"]).stdout();
    assert!(coloured.contains("\x1b[31mdead\x1b[m"), "{coloured}");
    let detail = t
        .run(&["wiggum", "status", "why", "--color", "always"])
        .stdout();
    assert!(
        detail.starts_with("why                  \x1b[31mdead\x1b[m"),
        "{detail:?}"
    );
    std::fs::write(t.wiggum("state.json"), b"{not json\xff").unwrap();
    let st = t.run(&["wiggum", "status", "why"]).stdout();
    assert!(
        st.contains("  reason:    its state cannot be read ("),
        "{st}"
    );
}

/// The artifact directory moved while the loop ran: the loop ends without recreating anything at
/// the old place, and shows `missing`.
#[test]
fn a_directory_moved_while_the_loop_runs_ends_it_without_recreating_the_old_place() {
    let t = TestHome::new();
    let daemon = t.blocked_at_first("moving", "");
    let moved = t.root().join("moved-art");
    std::fs::rename(t.art(), &moved).unwrap();
    std::fs::write(t.release_file(), "").unwrap();
    crate::support::wait_for(
        "the supervisor to end",
        std::time::Duration::from_secs(30),
        || {
            if std::path::Path::new(&format!("/proc/{daemon}")).exists() {
                Err(daemon)
            } else {
                Ok(())
            }
        },
    );
    assert!(!t.art().exists(), "the old place was recreated");
    assert_eq!(t.status_json("moving")["status"], "missing");
    let log = std::fs::read_to_string(moved.join("wiggum/daemon.log")).unwrap();
    assert!(log.contains("went away while it ran"), "{log}");
    crate::support::assert_no_survivors(&t.token);
}

/// Two processes that keep both cores busy while they live.
struct Busy(Vec<std::process::Child>);

impl Busy {
    fn start() -> Busy {
        Busy(
            (0..2)
                .map(|_| {
                    std::process::Command::new("sh")
                        .args(["-c", "while :; do :; done"])
                        .spawn()
                        .expect("sh")
                })
                .collect(),
        )
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        for c in &mut self.0 {
            c.kill().ok();
            c.wait().ok();
        }
    }
}

#[test]
fn failpoint_trials_end_as_they_should_with_the_machine_busy() {
    // Each point a crash can come at, twice, with both cores taken: every trial aborts where
    // it should (`dead`), and the restart recovers to the same history.
    let points = [
        "job-spawned@2",
        "before-commit@1",
        "before-commit@2",
        "commit-after-stage@2",
        "commit-after-stage@3",
        "state-after-temp-write@7",
        "after-commit@1",
        "after-commit@2",
    ];
    let _busy = Busy::start();
    for round in 0..2 {
        for (i, point) in points.iter().enumerate() {
            let t = TestHome::new();
            let topic = format!("f{round}{i}");
            crash_at(&t, &topic, point);
            restart_and_check(&t, &topic);
        }
    }
}
