//! `studio-agents sandbox-exec --policy JSON -- CMD…` (hidden): the leader of every agent run.
//! In this fresh, single-threaded process it sets the resource limits and the confinement of
//! the policy — on Linux Landlock, read-only mounts, no capabilities and seccomp applied to
//! itself; on macOS the Seatbelt profile `sandbox-exec` applies — then executes the command,
//! which, and every process it starts, inherits them. `--probe` applies the policy and prints
//! what was enforced, as JSON, instead.
//!
//! The same helper is also a small executable of its own, `studio-agents-sandbox` (installed
//! beside `studio-agents`; `src/bin/`): it links only this, so a run's leader starts in about
//! half the time our whole executable takes to (docs/performance.md). Runs use it when it is
//! there, beside the executable that runs the loop, and `studio-agents sandbox-exec` otherwise
//! (a single-file install).

use std::os::unix::process::CommandExt;
use std::path::Path;

use clap::Args;

use crate::agent::sandbox::{Enforcement, Policy};
use crate::config::SandboxMode;
use crate::error::{Error, Result};

/// The exit code of a run the harness refused (as a shell's "cannot execute").
pub const REFUSED: i32 = 126;

/// Flags of `sandbox-exec`.
#[derive(Debug, Args)]
pub struct SandboxArgs {
    /// The policy, as JSON.
    #[arg(long)]
    pub policy: String,
    /// Apply the policy and print what was enforced.
    #[arg(long)]
    pub probe: bool,
    /// The command to execute.
    #[arg(last = true)]
    pub command: Vec<String>,
}

/// The small executable's name.
pub const SMALL: &str = crate::agent::process::SMALL_HELPER;

/// The small executable's arguments (`--policy JSON [--probe] -- CMD…`, as `sandbox-exec`'s),
/// read without clap, which it does not link. `Err`: what is wrong, in a line.
pub fn parse(mut args: impl Iterator<Item = String>) -> std::result::Result<SandboxArgs, String> {
    let mut policy = None;
    let mut probe = false;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--policy" => policy = Some(args.next().ok_or("--policy needs a value")?),
            "--probe" => probe = true,
            "--" => break,
            other => return Err(format!("unexpected argument {other:?}")),
        }
    }
    Ok(SandboxArgs {
        policy: policy.ok_or("--policy is required")?,
        probe,
        command: args.collect(),
    })
}

/// The small executable's `main`: its exit code. Its first two arguments are `--build
/// VERSION`, the version of the `studio-agents` that started it: a helper left from another
/// version (one binary replaced, not both) hands the run to `studio-agents sandbox-exec`
/// beside it, whose policy it is, rather than read a policy it may not know.
#[must_use]
pub fn small_main() -> i32 {
    let mut args = std::env::args().skip(1).peekable();
    let build = (args.next_if(|a| a == "--build").is_some())
        .then(|| args.next())
        .flatten();
    if build.as_deref() != Some(env!("CARGO_PKG_VERSION")) {
        return hand_over(args);
    }
    match parse(args) {
        Err(why) => {
            eprintln!(
                "{SMALL}: {why} (usage: {SMALL} --build VERSION --policy JSON [--probe] -- CMD…)"
            );
            2
        }
        Ok(a) => run(&a).unwrap_or_else(|e| {
            eprintln!("{SMALL}: {e}");
            e.exit_code()
        }),
    }
}

/// Execute `studio-agents sandbox-exec` beside this executable with `args` (see [`small_main`]).
fn hand_over(args: impl Iterator<Item = String>) -> i32 {
    let whole = std::env::current_exe()
        .ok()
        .and_then(|e| Some(e.parent()?.join("studio-agents")));
    let Some(whole) = whole else {
        eprintln!("{SMALL}: cannot find studio-agents beside it");
        return REFUSED;
    };
    let err = std::process::Command::new(&whole)
        .arg("sandbox-exec")
        .args(args)
        .exec();
    eprintln!("{SMALL}: cannot execute {}: {err}", whole.display());
    REFUSED
}

/// What confinement made of the run.
enum Confined {
    /// The policy cannot be honoured as asked (`required`): refuse to run.
    Refused,
    /// What was enforced, the program and arguments to execute, and variables to set for it.
    Run(Enforcement, Vec<String>, Vec<(String, String)>),
}

/// How long each step of the helper took, when the policy asks (`timings`): written as one
/// line, `start=<unix µs> <step>=<µs> …`, just before the command is executed.
struct Marks {
    file: Option<std::fs::File>,
    line: String,
    last: std::time::Instant,
}

impl Marks {
    /// Started now; `path` opened before any confinement (the file is closed on exec).
    fn new(path: Option<&std::path::Path>, started: std::time::SystemTime) -> Marks {
        let file = path.and_then(|p| std::fs::File::create(p).ok());
        let unix = started
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros());
        Marks {
            line: if file.is_some() {
                format!("start={unix}")
            } else {
                String::new()
            },
            file,
            last: std::time::Instant::now(),
        }
    }

    /// The step that ends now.
    fn mark(&mut self, step: &str) {
        if self.file.is_some() {
            let now = std::time::Instant::now();
            self.line += &format!(" {step}={}", (now - self.last).as_micros());
            self.last = now;
        }
    }

    /// Write the line (a failure only loses the timings).
    fn write(&mut self) {
        if let Some(f) = self.file.as_mut() {
            let _lost = std::io::Write::write_all(f, self.line.as_bytes());
        }
    }
}

/// Apply, then execute (never returns on success).
pub fn run(a: &SandboxArgs) -> Result<i32> {
    let started = std::time::SystemTime::now();
    let policy: Policy =
        serde_json::from_str(&a.policy).map_err(|e| Error::input(format!("--policy: {e}")))?;
    let mut marks = Marks::new(policy.timings.as_deref(), started);
    marks.mark("policy");
    // First: everything this run starts lives in its cgroup, whatever it does to escape.
    // (A run the supervisor started straight into it is there already.)
    if let Some(group) = &policy.cgroup
        && !crate::sys::cgroup::is_member(group)
        && let Err(e) = crate::sys::cgroup::join(group)
    {
        eprintln!(
            "studio-agents sandbox: cannot join {}: {e}; the run is stopped by process group and token",
            group.display()
        );
    }
    marks.mark("cgroup_join");
    if let Err(e) = crate::agent::sandbox::limits::apply(&policy) {
        eprintln!("studio-agents sandbox: {e}");
        return Ok(REFUSED);
    }
    marks.mark("limits");
    let (enforced, argv, env) = match confine(&policy, &a.command, a.probe, &mut marks) {
        Confined::Refused => return Ok(REFUSED),
        Confined::Run(e, argv, env) => (e, argv, env),
    };
    if a.probe {
        println!("{}", serde_json::to_string(&enforced).unwrap_or_default());
        return Ok(0);
    }
    if policy.mode == SandboxMode::Required && !enforced.filesystem {
        eprintln!(
            "studio-agents sandbox: {}; [safety] sandbox = \"required\" refuses to run unconfined",
            enforced.note
        );
        return Ok(REFUSED);
    }
    let Some((program, args)) = argv.split_first() else {
        return Err(Error::input("sandbox-exec: no command"));
    };
    let mut command = std::process::Command::new(program);
    command.args(args);
    command.envs(env);
    if enforced.filesystem {
        for (k, v) in &policy.when_enforced {
            if std::env::var_os(k).is_none() {
                command.env(k, v);
            }
        }
    }
    marks.write();
    let err = command.exec();
    eprintln!("studio-agents sandbox: cannot execute {program}: {err}");
    Ok(REFUSED)
}

/// Linux: confine this process itself — read-only mounts, Landlock, no capabilities, seccomp —
/// and execute the command as it is.
#[cfg(target_os = "linux")]
fn confine(policy: &Policy, command: &[String], _probe: bool, marks: &mut Marks) -> Confined {
    use crate::agent::sandbox::apply;
    // Before Landlock (which forbids mount changes once enforced).
    let Some(mounts) = namespace(policy) else {
        return Confined::Refused;
    };
    marks.mark("mounts");
    // No layer on the home: a home of the loop's own, seeded from the user's, instead.
    let Ok(seeded) = seeded_home(policy, mounts.home) else {
        return Confined::Refused;
    };
    let policy = &seeded
        .as_ref()
        .map_or_else(|| policy.clone(), |(p, _)| p.clone());
    let mut enforced = match apply::landlock(policy, mounts) {
        Ok(e) => e,
        Err(e) if policy.mode == SandboxMode::Required => {
            eprintln!("studio-agents sandbox: {e}; refusing to run unconfined");
            return Confined::Refused;
        }
        Err(e) => Enforcement {
            mode: policy.mode.as_str().into(),
            note: e,
            ..Default::default()
        },
    };
    enforced.read_only = mounts.read_only;
    enforced.private_shm = mounts.shm;
    enforced.private_ptys = mounts.ptys;
    enforced.private_dev = mounts.dev;
    enforced.home_layer = mounts.home;
    enforced.home_seeded = seeded.is_some();
    marks.mark("landlock");
    if policy.mode != SandboxMode::Off && !no_privileges(policy, &mut enforced, marks) {
        return Confined::Refused;
    }
    let env = seeded.map(|(_, s)| s.env).unwrap_or_default();
    Confined::Run(enforced, command.to_vec(), env)
}

/// The run's mount namespace, or what there is without one (said); `None` refuses the run: a
/// hidden place beneath a grant that only a mount could hide.
#[cfg(target_os = "linux")]
fn namespace(policy: &Policy) -> Option<crate::agent::sandbox::mounts::Mounts> {
    use crate::agent::sandbox::mounts;
    match mounts::private_mounts(policy) {
        Ok(done) => Some(done),
        Err(e) if policy.mode != SandboxMode::Off && !mounts::beneath_grants(policy).is_empty() => {
            let hidden = mounts::beneath_grants(policy);
            eprintln!(
                "studio-agents sandbox: {e}; {} lies beneath a directory the run may write or read and only a mount could hide it: refusing to run",
                hidden[0].display()
            );
            None
        }
        Err(e) => {
            eprintln!(
                "studio-agents sandbox: {e}; protected files are checked after the run, /dev/shm and other terminals' devices are shared"
            );
            Some(mounts::Mounts::default())
        }
    }
}

/// After the mounts (they need the capabilities), before the filter (it needs none): every
/// capability dropped, then the seccomp filter; false when `required` cannot have them.
#[cfg(target_os = "linux")]
fn no_privileges(policy: &Policy, enforced: &mut Enforcement, marks: &mut Marks) -> bool {
    use crate::agent::sandbox::apply;
    match apply::drop_capabilities() {
        Ok(dropped) => enforced.no_capabilities = dropped,
        Err(e) if policy.mode == SandboxMode::Required => {
            eprintln!("studio-agents sandbox: {e}; refusing to run with privileges");
            return false;
        }
        Err(e) => eprintln!("studio-agents sandbox: {e}"),
    }
    marks.mark("capabilities");
    match crate::agent::sandbox::seccomp::apply(policy) {
        Ok(()) => enforced.seccomp = true,
        Err(e) if policy.mode == SandboxMode::Required => {
            eprintln!("studio-agents sandbox: {e}; refusing to run unconfined");
            return false;
        }
        Err(e) => eprintln!("studio-agents sandbox: {e}"),
    }
    marks.mark("seccomp");
    true
}

/// The seeded home for a run whose home is not `layered` (none when the sandbox is off or the
/// run has no home's layer): the policy that grants it and the variables that point the run at
/// it. `Err` refuses the run (said): never the user's home to write instead.
fn seeded_home(
    policy: &Policy,
    layered: bool,
) -> Result<Option<(Policy, crate::agent::sandbox::seeded::Seeded)>, ()> {
    use crate::agent::sandbox::seeded;
    let Some(h) = policy
        .home_layer
        .as_ref()
        .filter(|_| policy.mode != SandboxMode::Off && !layered)
    else {
        return Ok(None);
    };
    let plan = seeded::plan(policy, h, Path::exists);
    match seeded::seed(h, &plan) {
        Ok(()) => Ok(Some((seeded::confine(policy, &plan), plan))),
        Err(e) => {
            eprintln!("studio-agents sandbox: {e}; refusing to run with the user's home writable");
            Err(())
        }
    }
}

/// macOS: the command runs under `sandbox-exec` with the policy's Seatbelt profile (the
/// profile covers writes, reads, the network and Unix sockets; the protected files are
/// read-only by its rules). The probe runs `/usr/bin/true` under the profile to see it applied.
#[cfg(target_os = "macos")]
fn confine(policy: &Policy, command: &[String], probe: bool, _marks: &mut Marks) -> Confined {
    use crate::agent::sandbox::seatbelt;
    let mut enforced = Enforcement {
        mode: policy.mode.as_str().into(),
        ..Default::default()
    };
    if policy.mode == SandboxMode::Off {
        return Confined::Run(enforced, command.to_vec(), Vec::new());
    }
    // No mount namespace here: a home of the loop's own, seeded from the user's, always.
    let Ok(seeded) = seeded_home(policy, false) else {
        return Confined::Refused;
    };
    let policy = &seeded
        .as_ref()
        .map_or_else(|| policy.clone(), |(p, _)| p.clone());
    enforced.home_seeded = seeded.is_some();
    let env = seeded.map(|(_, s)| s.env).unwrap_or_default();
    let profile = seatbelt::profile(policy, |p| {
        std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
    });
    let tried = std::process::Command::new(seatbelt::SANDBOX_EXEC)
        .args(profile.args(&["/usr/bin/true".to_string()]))
        .stdin(std::process::Stdio::null())
        .status();
    match tried {
        Ok(s) if s.success() => {
            enforced.filesystem = true;
            enforced.network = policy.ports.is_some();
            enforced.read_only = !policy.read_only.is_empty();
            enforced.note = "Seatbelt (sandbox-exec)".into();
        }
        Ok(s) => enforced.note = format!("{} refused the profile ({s})", seatbelt::SANDBOX_EXEC),
        Err(e) => enforced.note = format!("cannot run {}: {e}", seatbelt::SANDBOX_EXEC),
    }
    if !enforced.filesystem {
        if policy.mode == SandboxMode::Required {
            eprintln!(
                "studio-agents sandbox: {}; refusing to run unconfined",
                enforced.note
            );
            return Confined::Refused;
        }
        return Confined::Run(enforced, command.to_vec(), env);
    }
    if probe {
        return Confined::Run(enforced, Vec::new(), Vec::new());
    }
    let mut argv = vec![seatbelt::SANDBOX_EXEC.to_string()];
    argv.extend(profile.args(command));
    Confined::Run(enforced, argv, env)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> impl Iterator<Item = String> {
        v.iter()
            .map(|s| (*s).to_string())
            .collect::<Vec<_>>()
            .into_iter()
    }

    #[test]
    fn the_small_helper_reads_what_sandbox_exec_is_given() {
        let a = parse(args(&[
            "--policy",
            "{}",
            "--",
            "/bin/sh",
            "-c",
            "echo --probe",
        ]))
        .unwrap();
        assert_eq!(
            (a.policy.as_str(), a.probe, a.command),
            (
                "{}",
                false,
                vec!["/bin/sh".into(), "-c".into(), "echo --probe".into()]
            )
        );
        let p = parse(args(&["--probe", "--policy", "{\"x\":1}"])).unwrap();
        assert_eq!(
            (p.policy.as_str(), p.probe, p.command.len()),
            ("{\"x\":1}", true, 0)
        );
        for (bad, why) in [
            (&["--", "sh"][..], "--policy is required"),
            (&["--policy"][..], "--policy needs a value"),
            (&["--policy", "{}", "sh"][..], "unexpected argument \"sh\""),
        ] {
            assert_eq!(parse(args(bad)).unwrap_err(), why, "{bad:?}");
        }
    }
}
