//! The one module with `unsafe` code: what the kernel interfaces need and safe Rust cannot say.
//!
//! - [`KillWithParent`]: when the supervisor dies abruptly (the OOM killer, `kill -9`), the
//!   kernel sends the agent's leader SIGKILL (Linux `PR_SET_PDEATHSIG`), so an agent CLI does
//!   not keep working — and spending — with nobody watching. The rest of its tree is cleaned up
//!   by the next `start` (the process group and token are recorded in state). The signal is tied
//!   to the thread that forked: the supervisor spawns agents from its current-thread runtime,
//!   whose thread lives as long as the process.
//! - [`default_sigpipe`]: a command whose reader goes away (`status | head -1`) ends quietly, as
//!   Unix tools do, instead of panicking on a failed write.
//! - [`keep_freed_heap`]: the supervisor keeps the heap its last commit freed for the next one,
//!   instead of handing it back to the kernel and faulting it in again every iteration.
#![allow(unsafe_code)]

use std::io;

use process_wrap::tokio::{CommandWrap, CommandWrapper};

/// A process-wrap layer that sets the parent-death signal in the child.
#[derive(Debug, Clone, Copy)]
pub struct KillWithParent;

impl CommandWrapper for KillWithParent {
    fn pre_spawn(
        &mut self,
        command: &mut tokio::process::Command,
        _core: &CommandWrap,
    ) -> io::Result<()> {
        #[cfg(target_os = "linux")]
        {
            let parent = nix::unistd::getpid();
            // SAFETY: runs in the forked child before exec. It calls only prctl(2) and
            // getppid(2), both async-signal-safe, and allocates nothing.
            unsafe {
                command.pre_exec(move || {
                    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                        .map_err(io::Error::from)?;
                    // The parent may have died before the signal was armed.
                    if nix::unistd::getppid() != parent {
                        return Err(io::Error::other("the supervisor died while spawning"));
                    }
                    Ok(())
                });
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = command;
        Ok(())
    }
}

/// Restore the default action of SIGPIPE (the Rust runtime ignores it, which turns a closed pipe
/// into a panic in `println!`). For the commands that print; never for the supervisor, which
/// talks to sockets and pipes it must survive losing.
pub fn default_sigpipe() {
    // SAFETY: called once at the start of `main`, before any thread is spawned; SIG_DFL installs
    // no handler, so there is no handler code that could be unsound.
    let _previous = unsafe {
        nix::sys::signal::signal(
            nix::sys::signal::Signal::SIGPIPE,
            nix::sys::signal::SigHandler::SigDfl,
        )
    };
}

/// Let the allocator (glibc) keep up to 1 MiB of freed heap. Every object the loop's commit
/// writes compresses through a zlib stream of ~260 KB, allocated and freed each time; with
/// glibc's default (128 KB) the freed top of the heap went back to the kernel after each one
/// and was faulted in, zeroed, again for the next: ~90 page faults and ~0.5 ms an iteration.
/// The peak is the same either way (the stream is there while it compresses). For the
/// supervisor only; a no-op on other C libraries.
pub fn keep_freed_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        /// How much freed memory at the top of the heap the allocator keeps.
        const TRIM_THRESHOLD: i32 = 1 << 20;
        // SAFETY: mallopt takes two integers and sets a tunable of the allocator under its
        // lock.
        unsafe {
            nix::libc::mallopt(nix::libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
        }
    }
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    use nix::sys::resource::{UsageWho, getrusage};

    /// Page faults of this thread so far.
    fn faults() -> i64 {
        getrusage(UsageWho::RUSAGE_THREAD)
            .unwrap()
            .minor_page_faults()
    }

    /// What zlib's deflate allocates for one stream: four blocks of 64 KiB, written whole.
    fn one_stream() {
        let blocks: Vec<Vec<u8>> = (0..4).map(|_| vec![1u8; 64 << 10]).collect();
        // Kept from the optimiser, which may drop an allocation nothing reads.
        std::hint::black_box(&blocks);
    }

    #[test]
    fn memory_a_commit_frees_is_reused_by_the_next_without_faulting_it_in_again() {
        super::keep_freed_heap();
        std::thread::spawn(|| {
            one_stream();
            let before = faults();
            for _ in 0..20 {
                one_stream();
            }
            let after = faults();
            // Handing 256 KiB back and taking it again costs 64 faults each time.
            assert!(after - before < 64, "{} page faults", after - before);
        })
        .join()
        .unwrap();
    }
}
