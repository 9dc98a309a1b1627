//! One supervisor per loop, whatever the agent does to `wiggum/.lock`; `stop` and `status` find
//! the supervisor from the kernel's locks; a second `start` names the topic that holds the lock.

use std::time::Duration;

use crate::support::{TestHome, assert_no_survivors, wait_for};

fn second_start_is_refused(t: &TestHome, topic: &str, daemon: i64) {
    let again = t.start_fg(topic, "", &[]);
    again.code(3);
    assert!(
        again
            .stderr()
            .contains(&format!("loop `{topic}` is already running (pid {daemon}")),
        "{}",
        again.stderr()
    );
    assert_eq!(t.status_json(topic)["pid"], daemon);
}

#[test]
fn an_agent_that_deletes_the_lock_file_lets_no_second_supervisor_in() {
    let t = TestHome::new();
    let daemon = t.blocked_at_first("del", "lock-delete");
    second_start_is_refused(&t, "del", daemon);
    // The supervisor puts the file back.
    wait_for("the lock file to be back", Duration::from_secs(10), || {
        if t.wiggum(".lock").exists() {
            Ok(())
        } else {
            Err(())
        }
    });
    t.run(&["wiggum", "stop", "del"]).code(0);
    assert_eq!(t.state()["stop_reason"], "user_stop");
    assert_no_survivors(&t.token);
    // Exactly one iteration-1 agent ever ran.
    let pids = std::fs::read_to_string(t.pids_file()).unwrap();
    assert_eq!(pids.matches("iteration 1\n").count(), 1, "{pids}");
}

#[test]
fn a_garbled_lock_file_still_lets_stop_and_status_find_the_supervisor() {
    let t = TestHome::new();
    let daemon = t.blocked_at_first("garble", "lock-garble");
    second_start_is_refused(&t, "garble", daemon);
    let r = t.run(&["wiggum", "status", "garble"]);
    r.code(0);
    assert!(
        r.stdout().contains(&format!("pid {daemon}")),
        "{}",
        r.stdout()
    );
    t.run(&["wiggum", "stop", "garble"]).code(0);
    t.wait_stopped("garble");
    assert_no_survivors(&t.token);
}

#[test]
fn already_running_names_the_topic_that_holds_the_artifact_dir() {
    let t = TestHome::new();
    let daemon = t.blocked_at_first("first", "");
    let other = t.start_fg("second", "", &[]);
    other.code(3);
    assert!(
        other.stderr().contains(
            "loop `first` is already running on this artifact directory (asked for `second`)"
        ),
        "{}",
        other.stderr()
    );
    assert!(other.stderr().contains(&format!("pid {daemon}")));
    t.run(&["wiggum", "stop", "first"]).code(0);
}

#[test]
fn stopping_a_topic_whose_directory_another_topic_now_runs_stops_nothing() {
    let t = TestHome::new();
    let daemon = t.blocked_at_first("later", "");
    // `earlier` was registered on the same directory by a start long ago.
    std::fs::write(
        t.home().join("loops/earlier.toml"),
        format!("artifact_path = {:?}\n", t.art().canonicalize().unwrap()),
    )
    .unwrap();
    let r = t.run(&["wiggum", "stop", "earlier"]);
    r.code(3);
    assert!(
        r.stderr().contains(&format!(
            "loop `earlier` is not running; loop `later` runs on its artifact directory (pid {daemon})"
        )),
        "{}",
        r.stderr()
    );
    let status = t.run(&["wiggum", "status", "later"]);
    assert!(status.stdout().contains("running"), "{}", status.stdout());
    // status and list never show `later`'s loop as `earlier`'s, running or not.
    let shown = |t: &TestHome| {
        let one = t.run(&["wiggum", "status", "earlier"]);
        one.code(0);
        assert!(
            one.stdout().contains("replaced")
                && one
                    .stdout()
                    .contains("loop `later` has been started on its artifact directory")
                && !one.stdout().contains("pid"),
            "{}",
            one.stdout()
        );
        let list = t.run(&["wiggum", "list"]);
        let row = list
            .stdout()
            .lines()
            .find(|l| l.starts_with("earlier"))
            .unwrap_or_default()
            .to_string();
        assert!(
            row.contains("replaced") && row.contains("by `later`") && !row.contains("pid"),
            "{}",
            list.stdout()
        );
        let json = t.run(&["wiggum", "status", "earlier", "--json"]);
        let v: serde_json::Value = serde_json::from_str(&json.stdout()).unwrap();
        assert_eq!(
            (&v["status"], &v["replaced_by"], &v["pid"], &v["state"]),
            (
                &serde_json::json!("replaced"),
                &serde_json::json!("later"),
                &serde_json::Value::Null,
                &serde_json::Value::Null
            )
        );
    };
    shown(&t);
    t.run(&["wiggum", "stop", "later"]).code(0);
    t.wait_stopped("later");
    shown(&t);
}

#[test]
fn printing_into_a_closed_pipe_ends_quietly() {
    let t = TestHome::new();
    t.start_fg("pipe", "", &["--max-iterations", "1"]).code(0);
    for args in [
        &["wiggum", "status", "pipe"][..],
        &["wiggum", "list"],
        &["wiggum", "summary", "pipe"],
        &["wiggum", "report"],
        &["wiggum", "logs", "pipe", "--iteration", "1"],
        &["wiggum", "status", "pipe", "--json"],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = t
            .cmd(args)
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        use std::os::unix::process::ExitStatusExt;
        assert!(
            out.status.code() == Some(0) || out.status.signal() == Some(13),
            "{args:?}: {:?} {err}",
            out.status
        );
    }
}
