//! `wiggum doctor`: what this machine enforces around an agent run and what it cannot, in one
//! place — the sandbox the kernel applies (probed by running our own helper, as `start` does),
//! cgroups, user namespaces, root, the agent CLIs on `PATH` against the versions the presets were
//! checked with, git, and the settings layers in effect. Exit 0 when `[safety] sandbox =
//! "required"` would be satisfied, 1 when not: peers fall back to no sandbox without a word;
//! this one says so.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use serde::Serialize;

use crate::agent::sandbox::{self, Enforcement, policy};
use crate::agent::spec;
use crate::config::{self, Sources};
use crate::error::Result;

/// Flags of `doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Machine-readable output (documented in docs/json.md).
    #[arg(long)]
    pub json: bool,
    /// A settings file to read as `start --config` would.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// One agent CLI.
#[derive(Debug, Serialize)]
pub struct AgentCli {
    /// The preset's name.
    pub preset: String,
    /// The program it runs.
    pub program: String,
    /// Where it was found on `PATH`.
    pub path: Option<PathBuf>,
    /// What `--version` printed (its first line).
    pub version: Option<String>,
    /// The version the preset's flags were checked against.
    pub checked: Option<&'static str>,
}

/// What `doctor` found.
#[derive(Debug, Default, Serialize)]
pub struct Findings {
    /// What the kernel enforces of the effective `[safety]` (probed).
    pub sandbox: Enforcement,
    /// The line `start` prints.
    pub sandbox_line: String,
    /// Filesystem writes confined (Landlock).
    pub filesystem: bool,
    /// TCP connections confinable (Landlock ABI ≥ 4).
    pub tcp_rules: bool,
    /// Device ioctls confined (Landlock ABI ≥ 5).
    pub ioctl_rules: bool,
    /// Signals and abstract sockets scoped (Landlock ABI ≥ 6).
    pub scopes: bool,
    /// The seccomp filter installs.
    pub seccomp: bool,
    /// A cgroup v2 hierarchy where this user can make a group (per-run containment).
    pub cgroup_v2: Option<PathBuf>,
    /// Unprivileged user namespaces are available.
    pub user_namespaces: bool,
    /// Running as root.
    pub root: bool,
    /// The agent CLIs of the presets.
    pub agents: Vec<AgentCli>,
    /// `git --version`, when the command is there (needed only for filter drivers).
    pub git: Option<String>,
    /// The settings files in effect, lowest first.
    pub settings: Vec<PathBuf>,
    /// Whether idle sleep can be held off while agents run (asked now; `[defaults] keep_awake`).
    pub keep_awake: bool,
    /// The line `start` prints about it.
    pub awake_line: String,
    /// Whether `[safety] sandbox = "required"` would let a loop run here.
    pub required_satisfied: bool,
}

/// The versions the presets' flags were checked against (`tests/fixtures/cli-help/`).
const CHECKED: [(&str, &str); 7] = [
    ("claude", "2.1.197"),
    ("codex", "0.169.0"),
    ("gemini", "0.61.0"),
    ("aider", "0.86.2"),
    ("opencode", "1.18.33"),
    ("amp", "0.0.1790142911"),
    ("kiro-cli", ""),
];

fn checked(program: &str) -> Option<&'static str> {
    CHECKED
        .iter()
        .find(|(p, v)| *p == program && !v.is_empty())
        .map(|(_, v)| *v)
}

fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file()))
}

/// The first line a program prints for `--version`, within a few seconds (a CLI that waits for
/// input or the network is given up on).
fn version_of(program: &Path) -> Option<String> {
    let mut child = std::process::Command::new(program)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            _ => {
                child.kill().ok();
                child.wait().ok();
                return None;
            }
        }
    }
    let out = child.wait_with_output().ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| l.chars().take(120).collect())
}

fn user_namespaces() -> bool {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
    };
    let max = read("/proc/sys/user/max_user_namespaces").is_some_and(|v| v != "0");
    let debian_switch = read("/proc/sys/kernel/unprivileged_userns_clone").is_none_or(|v| v != "0");
    max && debian_switch
}

/// Everything `doctor` looks at.
pub fn examine(explicit: Option<PathBuf>) -> Result<Findings> {
    let home = config::home_dir()?;
    let home_file = home.join("wiggum.toml");
    let settings = config::load(&Sources {
        home: Some(home_file.clone()),
        loop_file: None,
        explicit: explicit.clone(),
    })?;
    let layers: Vec<PathBuf> = [Some(home_file).filter(|p| p.is_file()), explicit]
        .into_iter()
        .flatten()
        .collect();
    let scratch = std::env::temp_dir();
    let mut safety = settings.safety.clone();
    // What the kernel offers is asked with the sandbox on, whatever the settings say.
    if safety.sandbox == config::SandboxMode::Off {
        safety.sandbox = config::SandboxMode::Landlock;
    }
    let mut p = policy::build(&safety, &scratch, &scratch, &[]);
    // A protected path, so the probe binds one read-only as a run's would, and the home through
    // a layer (a throwaway one).
    p.read_only = vec![scratch.clone()];
    let user_home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .and_then(|h| h.canonicalize().ok());
    p.home_layer = user_home.map(|home| policy::HomeLayer {
        layer: policy::layer_dir(
            &home,
            &scratch,
            &format!("doctor-{}", std::process::id()),
            nix::unistd::geteuid().as_raw(),
        ),
        home,
        pass_through: Vec::new(),
    });
    let enforced = sandbox::probe(&p);
    if let Some(h) = &p.home_layer {
        let _gone = std::fs::remove_dir_all(&h.layer);
    }
    let agents = spec::PRESETS
        .iter()
        .filter_map(|name| {
            let table = spec::preset(name)?;
            let program = sandbox::env::program_of(&table.command);
            let path = on_path(&program);
            let version = path.as_deref().and_then(version_of);
            Some(AgentCli {
                preset: (*name).to_string(),
                checked: checked(&program),
                program,
                path,
                version,
            })
        })
        .collect();
    let git = on_path("git").as_deref().and_then(version_of);
    let awake = crate::sys::awake::probe();
    Ok(Findings {
        keep_awake: awake.is_ok(),
        awake_line: crate::sys::awake::line(settings.defaults.keep_awake, &awake),
        sandbox_line: enforced.line(),
        filesystem: enforced.filesystem,
        tcp_rules: enforced.filesystem && enforced.abi >= 4,
        ioctl_rules: enforced.filesystem && enforced.abi >= 5,
        scopes: enforced.scoped,
        seccomp: enforced.seccomp,
        required_satisfied: enforced.filesystem,
        sandbox: enforced,
        cgroup_v2: crate::sys::cgroup::writable_base(),
        user_namespaces: user_namespaces(),
        root: nix::unistd::geteuid().is_root(),
        agents,
        git,
        settings: layers,
    })
}

fn mark(ok: bool) -> &'static str {
    if ok { "ok  " } else { "NO  " }
}

/// What Linux enforces: Landlock's rules by ABI, seccomp, cgroups, user namespaces.
fn linux_lines(r: &Findings) -> Vec<String> {
    vec![
        format!(
            "{}filesystem writes confined (Landlock ABI {})",
            mark(r.filesystem),
            r.sandbox.abi
        ),
        format!("{}TCP connection rules (ABI 4)", mark(r.tcp_rules)),
        format!("{}device ioctl rules (ABI 5)", mark(r.ioctl_rules)),
        format!(
            "{}signals and abstract sockets scoped to the run (ABI 6)",
            mark(r.scopes)
        ),
        format!(
            "{}seccomp filter (Unix sockets, terminal injection, datagrams)",
            mark(r.seccomp)
        ),
        match &r.cgroup_v2 {
            Some(_) => format!("ok  {}", crate::sys::cgroup::describe()),
            None => "NO  cgroup v2 groups cannot be made here (runs are stopped by process group and token)".into(),
        },
        format!("{}unprivileged user namespaces", mark(r.user_namespaces)),
        namespace_line(r),
    ]
}

/// Whether each run gets a mount namespace of its own, and what that holds.
fn namespace_line(r: &Findings) -> String {
    let e = &r.sandbox;
    let home = if e.home_layer {
        "the home through a layer of the loop's own (only the CLI's refreshed credentials written back)"
    } else if e.home_seeded {
        "a home of the loop's own seeded from yours (yours read-only; only the CLI's refreshed credentials written back)"
    } else {
        "NOT the home: a run's CLI state and caches are written in the user's home"
    };
    if e.read_only && e.private_shm && e.private_ptys {
        let how = if r.root {
            "as root"
        } else {
            "in a user namespace"
        };
        return format!(
            "ok  a mount namespace per run ({how}): .git and the loop's control files read-only, a private /dev/shm (at most max_memory_mb, gone with the run), terminals of its own; {home}"
        );
    }
    let mut missing = Vec::new();
    if !e.read_only {
        missing.push(".git and the control files are checked after each run, not read-only");
    }
    if !e.private_shm {
        missing.push("/dev/shm is the machine's (what a run adds there counts towards max_memory_mb and is removed when it ends)");
    }
    if !e.private_ptys {
        missing.push("no terminals of its own (Landlock hides the machine's)");
    }
    if e.home_seeded {
        missing.push("the home is a home of the loop's own seeded from yours (yours read-only)");
    } else if !e.home_layer {
        missing.push("the CLI's state and caches are written in the user's home");
    }
    format!("NO  no mount namespace per run: {}", missing.join("; "))
}

/// What macOS enforces: one Seatbelt profile for writes, hidden reads, the network and Unix
/// sockets; what it has no mechanism for, said as such.
fn macos_lines(r: &Findings) -> Vec<String> {
    vec![
        format!(
            "{}filesystem writes confined, protected files read-only, $STUDIO_AGENTS_HOME hidden (Seatbelt: /usr/bin/sandbox-exec)",
            mark(r.filesystem)
        ),
        format!(
            "{}TCP connections only to the allowed ports, Unix sockets refused (Seatbelt)",
            mark(r.filesystem)
        ),
        "NO  no seccomp filter, no scoped signals (macOS has neither); the agent runs as you".into(),
        "NO  no cgroups, no parent-death signal: a watcher beside the supervisor stops an orphaned run by process group and token within a fifth of a second".into(),
        "note a lock's holder is read from the lock file (macOS has no kernel lock table to ask)".into(),
    ]
}

/// The report as people read it.
#[must_use]
pub fn render(r: &Findings) -> String {
    let mut out = String::new();
    let mut line = |s: String| {
        out.push_str(&s);
        out.push('\n');
    };
    line(r.sandbox_line.clone());
    let mechanisms = if cfg!(target_os = "macos") {
        macos_lines(r)
    } else {
        linux_lines(r)
    };
    for l in mechanisms {
        line(l);
    }
    line(
        if r.root {
            "note running as root: agents run with no capability, and some CLIs refuse root (docs/agents.md)"
        } else {
            "ok  not running as root"
        }
        .to_string(),
    );
    for a in &r.agents {
        let found = match (&a.path, &a.version) {
            (None, _) => "not on PATH".to_string(),
            (Some(p), Some(v)) => format!("{} ({v})", p.display()),
            (Some(p), None) => format!("{} (no version answer)", p.display()),
        };
        let checked = a
            .checked
            .map_or_else(String::new, |v| format!("; presets checked with {v}"));
        line(format!("agent {:<9} {}{checked}", a.preset, found));
    }
    line(format!(
        "git       {}",
        r.git
            .as_deref()
            .unwrap_or("not on PATH (needed only for filter drivers, e.g. git-lfs)")
    ));
    line(r.awake_line.clone());
    if r.settings.is_empty() {
        line("settings  built-in defaults".into());
    } else {
        for s in &r.settings {
            line(format!("settings  {}", s.display()));
        }
    }
    line(if r.required_satisfied {
        "sandbox = \"required\" would run here".into()
    } else {
        "sandbox = \"required\" would refuse to run here: the kernel does not confine writes".into()
    });
    out
}

/// `wiggum doctor`.
pub fn doctor(a: &DoctorArgs) -> Result<i32> {
    let r = examine(a.config.clone())?;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&r).unwrap_or_else(|_| "{}".into())
        );
    } else {
        print!("{}", render(&r));
    }
    Ok(if r.required_satisfied { 0 } else { 1 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_macos_the_report_names_seatbelt_and_what_macos_has_no_mechanism_for() {
        let confined = Findings {
            filesystem: true,
            ..Findings::default()
        };
        let lines = macos_lines(&confined);
        assert!(
            lines[0].starts_with("ok  filesystem writes confined") && lines[0].contains("Seatbelt")
        );
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("NO  no cgroups, no parent-death signal"))
        );
        let open = macos_lines(&Findings::default());
        assert!(
            open[0].starts_with("NO  ") && open[1].starts_with("NO  "),
            "{open:?}"
        );
        // Linux's report is about Landlock, never Seatbelt.
        assert!(
            linux_lines(&confined)
                .iter()
                .all(|l| !l.contains("Seatbelt"))
        );
    }
}
