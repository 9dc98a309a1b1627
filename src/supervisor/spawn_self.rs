//! The one way this binary starts itself: the daemon (`wiggum start`), a detached delegation,
//! the cgroup watcher and a remote run's loop all begin at [`own_exe`]; the detached ones at
//! [`detached`] (a session of their own, no terminal, stdin from `/dev/null`, the working
//! directory `/`, output appended to their log).

use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::error::{Error, IoContext, Result};

/// This executable.
pub fn own_exe() -> Result<PathBuf> {
    std::env::current_exe().map_err(|e| Error::runtime(format!("cannot find own executable: {e}")))
}

/// Start this executable with `args` (and `env` added) detached, its output appended to `log`;
/// `what` names it in the error ("the daemon").
pub fn detached(
    args: &[String],
    env: &[(&str, &std::ffi::OsStr)],
    log: &Path,
    what: &str,
) -> Result<Box<dyn process_wrap::std::ChildWrapper>> {
    let exe = own_exe()?;
    let out = crate::sys::fsutil::open_append(log)?;
    let err = out.try_clone().at(log, "clone handle")?;
    let mut cmd = process_wrap::std::CommandWrap::with_new(&exe, |c| {
        c.args(args)
            .envs(env.iter().copied())
            .current_dir("/")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
    });
    cmd.wrap(process_wrap::std::ProcessSession);
    cmd.spawn()
        .map_err(|e| Error::runtime(format!("cannot start {what}: {e}")))
}
