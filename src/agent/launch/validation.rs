//! The job of a validation command: the project's tests run as the agent of a code loop is
//! confined, since what they run is the agent's code.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{hidden_store, tmp_dir, work_root};
use crate::agent::liveness::Liveness;
use crate::agent::process::Job;
use crate::agent::sandbox;
use crate::config::Safety;
use crate::error::Result;
use crate::sys::fsutil;

/// Where the toolchains a project's tests run with keep their homes and settings: passed to
/// validation commands, which run the project's build (no keys or tokens among them).
const TOOLCHAIN_KEYS: [&str; 16] = [
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "GOPATH",
    "GOROOT",
    "GOCACHE",
    "GOMODCACHE",
    "GOFLAGS",
    "JAVA_HOME",
    "VIRTUAL_ENV",
    "PYTHONPATH",
    "NODE_PATH",
    "NVM_DIR",
    "PYENV_ROOT",
    "CC",
    "CXX",
];

/// A validation command and the private temp dir it runs with (remove it after the run).
pub type ValidationJob = (Job, PathBuf);

/// A validation command. It runs what the agent wrote (its tests), so it is confined as the
/// agent of a code loop is — writes in the work tree and a private temp dir, the store out of
/// sight, its environment from the allow-list — with its own wall limit; with the sandbox off it
/// runs as the user configured it.
///
/// # Errors
/// When the private temp dir cannot be made.
pub fn validation_job(
    safety: &Safety,
    artifact_root: &Path,
    workdir: &Path,
    command: &str,
    log: PathBuf,
    limit: Duration,
) -> Result<ValidationJob> {
    let grace = Duration::from_secs(safety.kill_grace_secs);
    let mut job = Job::trusted(
        command,
        workdir.to_path_buf(),
        Vec::new(),
        log,
        limit,
        grace,
        "validation",
    );
    let tmp = tmp_dir(&job.token);
    fsutil::create_dir_all(&tmp)?;
    job.env = vec![
        ("WIGGUM_PHASE".to_string(), "validation".to_string()),
        // Python's bytecode cache of this run only: a cache an agent left (or shaped to look
        // fresh) is never what the tests run.
        (
            "PYTHONPYCACHEPREFIX".to_string(),
            tmp.join("pycache").display().to_string(),
        ),
    ];
    // The output and memory ceilings of an agent's run (no idle watch: a build may be quiet).
    job.liveness = Some(Liveness {
        idle: Duration::ZERO,
        watch: workdir.to_path_buf(),
        activity: None,
        max_memory: safety.max_memory_mb.saturating_mul(1 << 20),
        max_log: safety.max_log_mb.saturating_mul(1 << 20),
        promise: None,
        #[cfg(target_os = "linux")]
        shm: None,
    });
    if safety.sandbox == crate::config::SandboxMode::Off {
        return Ok((job, tmp));
    }
    let root = work_root(artifact_root);
    let program = sandbox::env::program_of(command);
    let mut allow: Vec<String> = TOOLCHAIN_KEYS.iter().map(|k| (*k).to_string()).collect();
    allow.extend(safety.env_allow.iter().cloned());
    let mut env = sandbox::env::allowed(std::env::vars(), &program, &allow);
    env.push(("TMPDIR".into(), tmp.display().to_string()));
    env.append(&mut job.env);
    let mut policy = sandbox::policy::build(safety, &root, &tmp, &[]);
    // What the tests run is the agent's code: the same reach as the agent's — the repository's
    // git files and the loop's own read-only (and checked after the run), the store and the
    // secret places out of sight, no dashboard, the home through the loop's layer (so a build's
    // caches work and the user's own are never written).
    policy.read_only = sandbox::policy::protected(&root, Some(&artifact_root.join("wiggum")));
    policy.hidden = hidden_store(&root);
    let home = std::env::var_os("HOME").map_or_else(PathBuf::new, PathBuf::from);
    policy.hidden.extend(
        sandbox::policy::secret_places(&home, &program, &safety.readable)
            .into_iter()
            .filter(|p| p.symlink_metadata().is_ok() && !root.starts_with(p)),
    );
    if let Ok(store) = crate::config::home_dir() {
        policy.close_ports(&sandbox::dashboard::ports(&store));
    }
    policy.home_layer = crate::agent::home::home_layer(&home, &root, artifact_root, &tmp, safety);
    job.env = env;
    job.env_clear = true;
    job.sandbox = Some(policy);
    Ok((job, tmp))
}
