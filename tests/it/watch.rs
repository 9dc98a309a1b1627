//! The live view: line mode through a pipe, and the full-screen view driven through tmux.

use std::process::Command;
use std::time::Duration;

use crate::support::{TestHome, wait_for};

#[test]
fn watch_through_a_pipe_prints_changes_and_ends_with_the_loop() {
    let t = TestHome::new();
    let env = format!(
        "FAKE_RELEASE={} FAKE_BLOCK_AT=1",
        t.release_file().display()
    );
    t.start_bg("wl", "block", &env, &[]).code(0);
    t.wait_state("iteration 1", |s| {
        s["current_iteration"] == 1 && s["agent_pid"].is_number()
    });
    let mut watcher = t.spawn(&["wiggum", "watch", "wl"]);
    // The agent is released only once the watcher has shown the running iteration.
    let mut stdout = std::io::BufReader::new(watcher.stdout.take().unwrap());
    let mut first_line = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut first_line).unwrap();
    std::fs::write(t.release_file(), "").unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    assert!(watcher.wait().unwrap().success());
    let text = format!("{first_line}{rest}");
    let first: Vec<&str> = first_line.split_whitespace().collect();
    assert_eq!(
        &first[..4],
        ["wl", "running", "iteration", "1/10"],
        "{text}"
    );
    assert!(
        text.lines()
            .last()
            .unwrap()
            .contains("stop reason plan_empty"),
        "{text}"
    );
}

/// A tmux session on a private socket, killed on drop.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(t: &TestHome, cmd: &str) -> Tmux {
        let socket = format!("sa-{}", t.token);
        let env = format!(
            "env STUDIO_AGENTS_HOME={} STUDIO_AGENTS_TEST_TOKEN={} TERM=xterm-256color",
            t.home().display(),
            t.token
        );
        let ok = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "new-session",
                "-d",
                "-x",
                "110",
                "-y",
                "40",
                &format!("{env} {cmd}"),
            ])
            .status()
            .expect("tmux is installed (.ci/run installs it)")
            .success();
        assert!(ok);
        Tmux { socket }
    }
    fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).to_string()
    }
    fn keys(&self, keys: &[&str]) {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket, "send-keys"]).args(keys);
        assert!(c.status().unwrap().success());
    }
    #[track_caller]
    fn wait_screen(&self, what: &str) -> String {
        wait_for(what, Duration::from_secs(15), || {
            let s = self.screen();
            if s.contains(what) { Ok(s) } else { Err(s) }
        })
    }
    fn alive(&self) -> bool {
        Command::new("tmux")
            .args(["-L", &self.socket, "has-session"])
            .output()
            .is_ok_and(|o| o.status.success())
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _gone = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

#[test]
fn the_full_screen_view_pauses_adds_a_sign_and_stops_the_loop() {
    let t = TestHome::new();
    t.write_home_config("[safety]\nkill_grace_secs = 1\n");
    let env = format!(
        "FAKE_RELEASE={} FAKE_BLOCK_AT=1",
        t.release_file().display()
    );
    t.start_bg("tv", "block", &env, &[]).code(0);
    t.wait_state("iteration 1", |s| {
        s["current_iteration"] == 1 && s["agent_pid"].is_number()
    });
    let tv = Tmux::start(
        &t,
        &format!("{} wiggum watch tv", env!("CARGO_BIN_EXE_studio-agents")),
    );
    // The first frame may come before the loop's state is read: wait for the figures.
    let screen = tv.wait_screen("Iteration: 1 / 10");
    assert!(
        screen.contains("Wiggum loop: tv") && screen.contains("[s] stop"),
        "{screen}"
    );

    tv.keys(&["p"]);
    tv.wait_screen("pausing at the next iteration boundary");
    assert!(
        std::fs::read_to_string(t.wiggum("control.json"))
            .unwrap()
            .contains("\"pause\": true")
    );

    tv.keys(&["a"]);
    tv.wait_screen("what went wrong?");
    tv.keys(&["-l", "the summary was vague"]);
    tv.keys(&["Enter"]);
    tv.wait_screen("What should the agent do differently?");
    tv.keys(&["-l", "name the failing API"]);
    tv.keys(&["Enter"]);
    tv.wait_screen("sign added to AGENT.md");
    let agent_md = std::fs::read_to_string(t.wiggum("AGENT.md")).unwrap();
    assert!(
        agent_md.contains("### Sign 1: the summary was vague")
            && agent_md.contains("**Fix**: name the failing API"),
        "{agent_md}"
    );

    tv.keys(&["s"]);
    tv.wait_screen("Stop the loop? [y/N]");
    tv.keys(&["y"]);
    tv.wait_screen("Stopped: user_stop");
    assert_eq!(t.state()["stop_reason"], "user_stop");
    tv.keys(&["q"]);
    wait_for("the view to close", Duration::from_secs(10), || {
        if tv.alive() { Err(tv.screen()) } else { Ok(()) }
    });
}
