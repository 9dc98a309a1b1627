//! The library's error type. Every IO error carries the path and what was being done;
//! every error knows its exit code (DESIGN §2): 2 bad input, 3 already/not running, 1 the rest.

use std::path::{Path, PathBuf};

/// Errors of the library. `main` maps them to exit codes with [`Error::exit_code`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad usage or bad input: a flag, a key, a file the user gave us. Exit code 2.
    #[error("{0}")]
    Input(String),

    /// A loop is already running for this artifact (or topic). Exit code 3.
    #[error("{0}")]
    AlreadyRunning(String),

    /// Nothing is running where the user asked us to act on a running loop. Exit code 3.
    #[error("{0}")]
    NotRunning(String),

    /// A filesystem operation failed.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// What we were doing, as a verb phrase ("read", "create directory", ...).
        action: &'static str,
        /// The underlying error.
        source: std::io::Error,
    },

    /// A file is larger than the supervisor reads of it.
    #[error("{}: larger than {cap} bytes, the most the loop reads of it", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The limit, in bytes.
        cap: u64,
    },

    /// A git operation failed.
    #[error("git: cannot {action} in {}: {source}", path.display())]
    Git {
        /// The repository or path involved.
        path: PathBuf,
        /// What we were doing.
        action: &'static str,
        /// The underlying error.
        source: git2::Error,
    },

    /// Any other runtime failure (an agent that cannot be spawned, an evaluator that fails, ...).
    #[error("{0}")]
    Runtime(String),
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The process exit code this error maps to (DESIGN §2).
    #[must_use]
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Input(_) => 2,
            Error::AlreadyRunning(_) | Error::NotRunning(_) => 3,
            Error::Io { .. } | Error::TooLarge { .. } | Error::Git { .. } | Error::Runtime(_) => 1,
        }
    }

    /// Shorthand for a bad-input error.
    pub fn input(msg: impl Into<String>) -> Self {
        Error::Input(msg.into())
    }

    /// Shorthand for a runtime error.
    pub fn runtime(msg: impl Into<String>) -> Self {
        Error::Runtime(msg.into())
    }
}

/// Attach a path and an action to an `io::Result`.
pub trait IoContext<T> {
    /// Wrap the error with the path and what was being done.
    fn at(self, path: &Path, action: &'static str) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn at(self, path: &Path, action: &'static str) -> Result<T> {
        self.map_err(|source| Error::Io {
            path: path.to_path_buf(),
            action,
            source,
        })
    }
}

/// Attach a path and an action to a git2 result.
pub trait GitContext<T> {
    /// Wrap the error with the repository path and what was being done.
    fn git_at(self, path: &Path, action: &'static str) -> Result<T>;
}

impl<T> GitContext<T> for std::result::Result<T, git2::Error> {
    fn git_at(self, path: &Path, action: &'static str) -> Result<T> {
        self.map_err(|source| Error::Git {
            path: path.to_path_buf(),
            action,
            source,
        })
    }
}

/// What an error says at its root (a refused connection, a name that does not resolve), where
/// its outermost words say only what was tried ("error sending request").
#[must_use]
pub fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_contract() {
        assert_eq!(Error::input("x").exit_code(), 2);
        assert_eq!(Error::AlreadyRunning("x".into()).exit_code(), 3);
        assert_eq!(Error::NotRunning("x".into()).exit_code(), 3);
        assert_eq!(Error::runtime("x").exit_code(), 1);
    }

    #[test]
    fn io_errors_name_path_and_action() {
        let e: Result<()> = Err(std::io::Error::other("boom")).at(Path::new("/a/b"), "read");
        assert_eq!(e.unwrap_err().to_string(), "cannot read /a/b: boom");
    }
}
