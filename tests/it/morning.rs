//! The unattended night: the machine kept from idle sleep while an agent runs (a logind
//! stand-in on a private bus).

use crate::support::{TestHome, wait_for};

#[cfg(target_os = "linux")]
#[test]
fn idle_sleep_is_held_off_while_the_agent_runs_and_let_go_when_the_loop_ends() {
    use crate::support::logind::Logind;
    let t = TestHome::new();
    let bus = Logind::start(&t.root().join("bus"), "");
    let env = [("DBUS_SYSTEM_BUS_ADDRESS", bus.address.as_str())];
    let fake = format!(
        "FAKE_RELEASE={} FAKE_BLOCK_AT=1",
        t.release_file().display()
    );
    let args = t.start_args(
        "awake",
        &t.art(),
        &t.agent_cmd("block", &fake),
        &["--max-iterations", "1"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = t.run_with(&args, &env);
    r.code(0);
    assert!(
        r.stderr()
            .contains("\nawake: idle sleep held off by logind while an agent runs\n"),
        "{}",
        r.stderr()
    );
    t.wait_blocked();
    // While the agent runs, one inhibitor is held, as logind is asked for it.
    let held = wait_for(
        "an inhibitor held",
        std::time::Duration::from_secs(10),
        || {
            let open: Vec<_> = bus.calls().into_iter().filter(|c| !c.closed).collect();
            if open.len() == 1 {
                Ok(open)
            } else {
                Err(bus.calls())
            }
        },
    );
    assert_eq!(
        held[0].args,
        [
            "idle:sleep",
            "studio-agents",
            "loop `awake` runs an agent",
            "block"
        ]
        .map(String::from)
    );
    std::fs::write(t.release_file(), "").unwrap();
    t.wait_stopped("awake");
    wait_for(
        "every inhibitor let go",
        std::time::Duration::from_secs(10),
        || {
            let calls = bus.calls();
            if calls.iter().all(|c| c.closed) {
                Ok(())
            } else {
                Err(calls)
            }
        },
    );
}

#[test]
fn where_nothing_can_hold_off_sleep_it_is_said_once() {
    let t = TestHome::new();
    let nowhere = format!("unix:path={}", t.root().join("no-bus").display());
    let args = t.start_args(
        "asleep",
        &t.art(),
        &t.agent_cmd("", ""),
        &["--foreground", "--max-iterations", "3"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = t.run_with(&args, &[("DBUS_SYSTEM_BUS_ADDRESS", &nowhere)]);
    r.code(0);
    let err = r.stderr();
    assert!(
        err.contains("\nawake: nothing holds off idle sleep: no system bus ("),
        "{err}"
    );
    let log = std::fs::read_to_string(t.wiggum("daemon.log")).unwrap();
    let said = log.matches("keep awake: no system bus").count();
    assert_eq!(said, 1, "{log}");
    // Off, nothing is asked and the line says so.
    t.write_home_config("[defaults]\nkeep_awake = false\n");
    let doctor = t.run_with(
        &["wiggum", "doctor"],
        &[("DBUS_SYSTEM_BUS_ADDRESS", &nowhere)],
    );
    assert!(
        doctor
            .stdout()
            .contains("\nawake: off ([defaults] keep_awake = false): the machine may sleep\n"),
        "{}",
        doctor.stdout()
    );
}
