//! The harness around an agent run: what it sees (`env`: an environment built from an
//! allow-list, never inherited) and where it may write and connect (`policy`: filesystem rules,
//! network ports, resource limits), applied by our own binary in a single-threaded helper
//! (`studio-agents sandbox-exec`) that then executes the agent's shell, so the whole tree
//! inherits it: on Linux a mount namespace of its own (`mounts`: read-only `.git` and control
//! files, a `/dev` of its own (`dev`), the hidden places masked (`masks`), the home through the loop's layer — where no layer can be laid, a home of the loop's own seeded from the user's, `seeded`), Landlock, no
//! capabilities and a seccomp filter (`apply`, `seccomp`), on macOS a Seatbelt profile
//! (`seatbelt`); `limits` on both; a running dashboard's port out of reach (`dashboard`), the store out of every run's reach (`store`). Decided in
//! `agent::launch`, once for every agent run.

#[cfg(target_os = "linux")]
pub mod apply;
pub mod dashboard;
#[cfg(target_os = "linux")]
pub mod dev;
pub mod env;
pub mod limits;
#[cfg(target_os = "linux")]
pub mod masks;
#[cfg(target_os = "linux")]
pub mod mounts;
pub mod policy;
#[cfg(any(target_os = "macos", test))]
pub mod seatbelt;
#[cfg(target_os = "linux")]
pub mod seccomp;
pub mod seeded;
pub mod store;

pub use policy::{Enforcement, Policy};

/// What the kernel would enforce of `policy`: our own `sandbox-exec --probe` applies it in a
/// throwaway process and says (a policy with nothing to apply needs no process). A helper that
/// cannot run is reported as not enforced.
#[must_use]
pub fn probe(policy: &Policy) -> Enforcement {
    let not = |note: String| Enforcement {
        mode: policy.mode.as_str().into(),
        note,
        ..Enforcement::default()
    };
    if !policy.needs_helper() {
        // Nothing to apply: the helper would answer "off" after doing nothing.
        return Enforcement {
            mode: policy.mode.as_str().into(),
            ..Enforcement::default()
        };
    }
    let Ok(json) = serde_json::to_string(policy) else {
        return not("the policy does not serialise".into());
    };
    let (exe, args) = match helper_exe() {
        Ok(h) => h,
        Err(e) => return not(e),
    };
    let out = std::process::Command::new(exe)
        .args(args)
        .args(["--probe", "--policy", &json])
        .stdin(std::process::Stdio::null())
        .output();
    match out {
        Ok(o) if o.status.success() => serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| not(format!("unreadable probe answer: {e}"))),
        Ok(o) => not(String::from_utf8_lossy(&o.stderr).trim().to_string()),
        Err(e) => not(format!("cannot run the sandbox helper: {e}")),
    }
}

/// The small helper executable's name (`src/bin/`).
pub const SMALL_HELPER: &str = "studio-agents-sandbox";

/// The helper executable and its first arguments, before `--probe`, `--policy` and `--`: the
/// small executable beside ours when it is there (it starts quicker), told our version, else
/// our own `sandbox-exec`.
pub fn helper_exe() -> Result<(std::path::PathBuf, Vec<String>), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find own executable: {e}"))?;
    Ok(match small_helper(&exe) {
        Some(small) => (
            small,
            vec!["--build".into(), env!("CARGO_PKG_VERSION").into()],
        ),
        None => (exe, vec!["sandbox-exec".into()]),
    })
}

/// `studio-agents-sandbox` beside `exe`, when it is a regular file there that its owner may
/// execute, owned as `exe` is (a file someone else put beside it is not ours).
fn small_helper(exe: &std::path::Path) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let small = exe.parent()?.join(SMALL_HELPER);
    let (ours, it) = (
        std::fs::metadata(exe).ok()?,
        std::fs::metadata(&small).ok()?,
    );
    (it.is_file() && it.permissions().mode() & 0o100 != 0 && it.uid() == ours.uid())
        .then_some(small)
}
