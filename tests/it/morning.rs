//! The unattended night and the morning after: the machine kept from idle sleep while an agent
//! runs (a logind stand-in on a private bus), and `wiggum pr` pushing the loop's branch to a
//! bare repository and opening its pull request on a loopback GitHub, GitLab and Gitea.

use std::path::Path;

use crate::support::forge::{Forge, Kind};
use crate::support::{TestHome, git};
use crate::worktrees::{repo_with, start};

const TOKEN: &str = "s3cret";

/// Every ref of the repository at `dir`, with its commit: what "nothing local changed" means.
fn refs(dir: &Path) -> String {
    git(dir, &["for-each-ref", "--format=%(refname) %(objectname)"])
}

/// A repository with the artifact directory `notes`, and a bare repository as its `origin`
/// holding main.
fn with_remote(t: &TestHome) -> (std::path::PathBuf, std::path::PathBuf) {
    let root = repo_with(t, &["notes"]);
    let bare = t.root().join("remote.git");
    git(
        &t.root(),
        &["init", "-q", "--bare", "-b", "main", "remote.git"],
    );
    git(
        &root,
        &["remote", "add", "origin", &bare.display().to_string()],
    );
    git(&root, &["push", "-q", "origin", "main"]);
    (root, bare)
}

/// [`with_remote`], and a worktree loop `notes` that ran to its end.
fn morning(t: &TestHome) -> (std::path::PathBuf, std::path::PathBuf) {
    let (root, bare) = with_remote(t);
    start(t, "notes", "", "", &["--foreground"]).code(0);
    (root, bare)
}

fn settings(t: &TestHome, kind: &str, api: &str) {
    t.write_home_config(&format!(
        "[finish]\nforge = \"{kind}\"\napi = \"{api}\"\nrepository = \"team/notes\"\ntoken_env = \"FORGE_TOKEN\"\n"
    ));
}

#[test]
fn a_morning_opens_one_pull_request_on_each_forge_and_a_second_run_updates_it() {
    let t = TestHome::new();
    let (root, bare) = morning(&t);
    let tip = git(&root, &["rev-parse", "wiggum/notes"]);
    // What the loop's agents could write says nothing about where the token goes.
    let own = root.join(".git/wiggum-worktrees/notes/notes/wiggum/wiggum.toml");
    assert!(own.is_file(), "{}", own.display());
    std::fs::write(
        &own,
        "[finish]\napi = \"http://127.0.0.1:9\"\ntoken_env = \"HOME\"\n",
    )
    .unwrap();
    let cases = [
        (
            Kind::Github,
            "github",
            "https://forge.test/team/notes/pull/1",
            "GET /repos/team/notes/pulls?state=open&head=team%3Awiggum%2Fnotes",
            "Bearer s3cret",
        ),
        (
            Kind::Gitlab,
            "gitlab",
            "https://forge.test/team/notes/-/merge_requests/1",
            "GET /api/v4/projects/team%2Fnotes/merge_requests?state=opened&source_branch=wiggum%2Fnotes",
            "s3cret",
        ),
        (
            Kind::Gitea,
            "forgejo",
            "https://forge.test/team/notes/pull/1",
            "GET /api/v1/repos/team/notes/pulls?state=open&limit=50&page=1",
            "token s3cret",
        ),
    ];
    for case in cases {
        one_forge(&t, &root, &bare, &tip, case);
    }
}

/// A forge, what it is called in `[finish] forge`, the pull request's page, the request that
/// finds it, and the header carrying the token.
type Case = (Kind, &'static str, &'static str, &'static str, &'static str);

/// `pr` opens the pull request on `case`'s forge, then updates it; nothing local moves.
fn one_forge(t: &TestHome, root: &Path, bare: &Path, tip: &str, case: Case) {
    let (kind, name, url, find, auth) = case;
    let forge = Forge::start(kind, TOKEN);
    settings(t, name, &forge.api);
    let before = refs(root);
    let r = t.run_with(&["wiggum", "pr", "notes"], &[("FORGE_TOKEN", TOKEN)]);
    r.code(0);
    assert_eq!(
        r.stdout(),
        format!("opened pull request #1 (wiggum/notes → main): {url}\n"),
        "{name}"
    );
    // The branch is on the remote, and nothing here moved (no remote-tracking ref either).
    assert_eq!(git(bare, &["rev-parse", "wiggum/notes"]), tip);
    assert_eq!(refs(root), before);
    let pulls = forge.pulls();
    assert_eq!(pulls.len(), 1, "{name}: {pulls:?}");
    let p = &pulls[0];
    assert_eq!(
        (p.head.as_str(), p.base.as_str(), p.title.as_str()),
        ("wiggum/notes", "main", "notes")
    );
    for says in [
        "studio-agents wiggum summary notes",
        "quality           before   after   change",
        "Iteration 1/2 ✓ kept",
        "status completed",
        "\nTime: ",
        " for 2 iterations, cost unknown\n",
        "Final artifact: `notes/wiggum/final/artifact.md`",
    ] {
        assert!(p.body.contains(says), "{name}: {says:?} in\n{}", p.body);
    }
    let seen = forge.seen();
    assert_eq!(seen[0].line, find, "{name}");
    assert!(
        seen.iter().all(|s| s.auth.as_deref() == Some(auth)),
        "{name}: {seen:?}"
    );
    // Again: the same pull request, updated.
    let again = t.run_with(&["wiggum", "pr", "notes"], &[("FORGE_TOKEN", TOKEN)]);
    again.code(0);
    assert_eq!(
        again.stdout(),
        format!("updated pull request #1 (wiggum/notes → main): {url}\n")
    );
    assert_eq!(forge.pulls().len(), 1, "{name}");
    let last = forge.seen().pop().unwrap();
    let verb = if kind == Kind::Gitlab { "PUT" } else { "PATCH" };
    assert!(
        last.line.starts_with(&format!("{verb} ")),
        "{name}: {}",
        last.line
    );
    assert!(last.line.ends_with("/1"), "{name}: {}", last.line);
    assert_eq!(refs(root), before);
}

#[test]
fn on_gitea_the_pull_request_is_found_past_the_first_page_of_the_listing() {
    let t = TestHome::new();
    let (root, _bare) = morning(&t);
    let forge = Forge::start(Kind::Gitea, TOKEN);
    forge.seed(60);
    settings(&t, "gitea", &forge.api);
    let before = refs(&root);
    let r = t.run_with(&["wiggum", "pr", "notes"], &[("FORGE_TOKEN", TOKEN)]);
    r.code(0);
    assert_eq!(
        r.stdout(),
        "opened pull request #61 (wiggum/notes → main): https://forge.test/team/notes/pull/61\n"
    );
    let again = t.run_with(&["wiggum", "pr", "notes"], &[("FORGE_TOKEN", TOKEN)]);
    again.code(0);
    assert_eq!(
        again.stdout(),
        "updated pull request #61 (wiggum/notes → main): https://forge.test/team/notes/pull/61\n"
    );
    let lines: Vec<String> = forge.seen().into_iter().map(|s| s.line).collect();
    assert!(
        lines.iter().any(|l| l.ends_with("&page=2")) && forge.pulls().len() == 61,
        "{lines:?}"
    );
    assert_eq!(refs(&root), before);
}

#[test]
fn a_missing_token_a_refused_token_and_a_refused_push_each_say_what_to_do() {
    let t = TestHome::new();
    let (root, bare) = morning(&t);
    let forge = Forge::start(Kind::Github, TOKEN);
    settings(&t, "github", &forge.api);
    let before = refs(&root);
    // No token: refused before anything is pushed or asked.
    let r = t.run(&["wiggum", "pr", "notes"]);
    r.code(2);
    assert_eq!(
        r.stderr(),
        "error: no GitHub token: set $FORGE_TOKEN (or name the variable that holds it in [finish] token_env)\n"
    );
    assert!(forge.seen().is_empty());
    let remote_before = refs(&bare);
    assert_eq!(
        remote_before,
        format!("refs/heads/main {}", git(&root, &["rev-parse", "main"]))
    );
    // A token the forge refuses.
    let r = t.run_with(&["wiggum", "pr", "notes"], &[("FORGE_TOKEN", "wrong")]);
    r.code(1);
    assert_eq!(
        r.stderr(),
        "error: GitHub answered 401 Unauthorized to find the pull request: Bad credentials; check the token in $FORGE_TOKEN\n"
    );
    assert!(forge.pulls().is_empty());
    // Asked before the push: the remote has not changed either.
    assert_eq!(refs(&bare), remote_before);
    // A remote that refuses the push: the forge is asked for the pull request, never told to
    // open one.
    let hook = bare.join("hooks/pre-receive");
    std::fs::write(&hook, "#!/bin/sh\necho 'pushes are closed' >&2\nexit 1\n").unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let asked = forge.seen().len();
    let r = t.run_with(&["wiggum", "pr", "notes"], &[("FORGE_TOKEN", TOKEN)]);
    r.code(1);
    let err = r.stderr();
    assert!(
        err.starts_with("error: the push of wiggum/notes to origin was refused (")
            && err.ends_with(&format!(
                "): bring the branch up to date with origin's, or check your access to {}\n",
                bare.display()
            ))
            && err.lines().count() == 1,
        "{err}"
    );
    assert_eq!(forge.seen().len(), asked + 1);
    assert!(forge.pulls().is_empty());
    assert_eq!(refs(&bare), remote_before);
    // A forge the settings cannot name: the file and key are named, nothing is asked.
    t.write_home_config_raw("[finish]\nforge = \"bitbucket\"\n");
    let r = t.run_with(&["wiggum", "pr", "notes"], &[("FORGE_TOKEN", TOKEN)]);
    r.code(2);
    let err = r.stderr();
    assert!(
        err.starts_with(&format!(
            "error: {}:2:",
            t.home().join("wiggum.toml").display()
        )) && err.contains("bitbucket")
            && err.lines().count() == 1,
        "{err}"
    );
    assert_eq!(forge.seen().len(), asked + 1);
    assert_eq!(refs(&root), before);
}

#[cfg(target_os = "linux")]
#[test]
fn idle_sleep_is_held_off_while_the_agent_runs_and_let_go_when_the_loop_ends() {
    use crate::support::logind::Logind;
    use crate::support::wait_for;
    let t = TestHome::new();
    let bus = Logind::start(&t.root().join("bus"));
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

#[cfg(target_os = "linux")]
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
    // A logind that refuses: said as such, once.
    let t = TestHome::new();
    let bus = crate::support::logind::Logind::refusing(&t.root().join("bus"));
    let args = t.start_args(
        "refused",
        &t.art(),
        &t.agent_cmd("", ""),
        &["--foreground", "--max-iterations", "3"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = t.run_with(&args, &[("DBUS_SYSTEM_BUS_ADDRESS", &bus.address)]);
    r.code(0);
    let refused = "logind refused (org.freedesktop.DBus.Error.AccessDenied: Permission denied)";
    assert!(
        r.stderr().contains(&format!(
            "\nawake: nothing holds off idle sleep: {refused}\n"
        )),
        "{}",
        r.stderr()
    );
    let log = std::fs::read_to_string(t.wiggum("daemon.log")).unwrap();
    assert_eq!(
        log.matches(&format!("keep awake: {refused}")).count(),
        1,
        "{log}"
    );
    assert!(
        bus.calls().len() > 2,
        "asked again at each run: {:?}",
        bus.calls()
    );
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

#[test]
fn a_loop_that_ends_done_opens_its_pull_request_itself() {
    let t = TestHome::new();
    let (root, bare) = with_remote(&t);
    let forge = Forge::start(Kind::Github, TOKEN);
    t.write_home_config(&format!(
        "[finish]\npull_request = true\nforge = \"github\"\napi = \"{}\"\nrepository = \"team/notes\"\ntoken_env = \"FORGE_TOKEN\"\n",
        forge.api
    ));
    let art = t.root().join("notes");
    let args = t.start_args(
        "notes",
        &art,
        &t.agent_cmd("", ""),
        &["--worktree", "--foreground", "--max-iterations", "5"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = t.run_with(&args, &[("FORGE_TOKEN", TOKEN)]);
    r.code(0);
    let out = r.stdout();
    assert!(
        out.contains("Loop `notes` ended: every item in fix_plan.md is done"),
        "{out}"
    );
    assert!(
        out.ends_with(
            "opened pull request #1 (wiggum/notes → main): https://forge.test/team/notes/pull/1\n"
        ),
        "{out}"
    );
    assert_eq!(
        git(&bare, &["rev-parse", "wiggum/notes"]),
        git(&root, &["rev-parse", "wiggum/notes"])
    );
    assert_eq!(forge.pulls().len(), 1);
}

#[test]
fn a_loop_without_a_worktree_proposes_the_branch_it_ran_on() {
    let t = TestHome::new();
    let (root, bare) = with_remote(&t);
    let forge = Forge::start(Kind::Gitea, TOKEN);
    settings(&t, "gitea", &forge.api);
    let art = t.root().join("notes");
    let run = |branch: &str| {
        let args = t.start_args(
            "notes",
            &art,
            &t.agent_cmd("", ""),
            &["--foreground", "--max-iterations", "1"],
        );
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        t.run(&args).code(0);
        assert_eq!(git(&root, &["branch", "--show-current"]).trim(), branch);
    };
    // On the branch the pull request would go into: refused, nothing pushed or asked.
    run("main");
    let before = refs(&bare);
    let r = t.run_with(&["wiggum", "pr", "notes"], &[("FORGE_TOKEN", TOKEN)]);
    r.code(2);
    assert_eq!(
        r.stderr(),
        "error: the loop `notes` ran on main, the branch its pull request would go into: run it with --worktree or on a branch of its own, or name another in [finish] base\n"
    );
    assert!(forge.seen().is_empty());
    assert_eq!(refs(&bare), before);
    // On a branch of its own: that branch, into the remote's default.
    git(&root, &["checkout", "-q", "-b", "night"]);
    run("night");
    let r = t.run_with(&["wiggum", "pr", "notes"], &[("FORGE_TOKEN", TOKEN)]);
    r.code(0);
    assert_eq!(
        r.stdout(),
        "opened pull request #1 (night → main): https://forge.test/team/notes/pull/1\n"
    );
    assert_eq!(
        git(&bare, &["rev-parse", "night"]),
        git(&root, &["rev-parse", "night"])
    );
}
