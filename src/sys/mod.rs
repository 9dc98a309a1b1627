//! Small helpers every part may use and that use no other part (only `error`): atomic and bounded
//! file IO (`fsutil`), a file saved often through a spare beside it (`spare`), reading text line by line (`lines`), the `/proc` reader (`procs`), a child's exit by its pidfd (`pidfd`), the
//! async runtime (`runtime`), the file watch that tells which paths changed (`watch`), test
//! failpoints (`failpoint`), step timings for the benchmark (`timing`), text for a person's terminal without control sequences (`term`), and
//! the one module with `unsafe` code (`kernel`).

pub mod awake;
pub mod beneath;
pub mod cgroup;
pub mod failpoint;
pub mod fsutil;
pub mod kernel;
pub mod lines;
#[cfg(target_os = "linux")]
pub mod pidfd;
#[cfg(any(target_os = "macos", test))]
pub mod procargs;
pub mod procs;
pub mod resumed;
pub mod runtime;
#[cfg(target_os = "linux")]
pub mod shm;
pub mod spare;
pub mod term;
pub mod timing;
pub mod watch;
