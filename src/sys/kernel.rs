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
//! - [`bounded_git_cache`]: libgit2's object cache on, with a small ceiling, set before any
//!   thread is spawned as libgit2's global options must be.
//! - [`born`] (Linux): an agent's run started straight into its cgroup (`clone3`), not moved
//!   into it after it started, which costs the kernel an RCU grace period per run.
//! - `darwin` (macOS only): the process table's calls (`proc_listallpids`, `proc_pidinfo`,
//!   `sysctl(KERN_PROCARGS2)`), each into a buffer of the size it is told.
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

/// libgit2's object cache, on and bounded. An iteration's commit reads the trees above every
/// path it commits again and again (is it a tree? is its parent? what does HEAD hold there?):
/// without the cache each read is a loose object opened and inflated, ~60 an iteration. Off,
/// the cache cost nothing in memory but that; on with libgit2's ceiling (256 MB) a night of
/// iterations would keep every tree read. On with a ceiling of `max_bytes`, libgit2 evicts when
/// it is reached; trees up to `tree_bytes` are kept (a directory of the loop's iterations
/// outgrows libgit2's 4 KiB after ~80). Call before any thread is spawned.
pub fn bounded_git_cache(max_bytes: usize, tree_bytes: usize) {
    git2::opts::enable_caching(true);
    let max = isize::try_from(max_bytes).unwrap_or(isize::MAX);
    // SAFETY: libgit2's global options are plain integers written without a lock; this runs
    // at the supervisor's start, before any thread exists that could read them meanwhile.
    let set = unsafe {
        git2::opts::set_cache_max_size(max)
            .and_then(|()| git2::opts::set_cache_object_limit(git2::ObjectType::Tree, tree_bytes))
    };
    if let Err(e) = set {
        // Only the defaults (a larger ceiling) remain: slower or larger, never wrong.
        tracing::debug!("libgit2's cache limits not set: {e}");
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

/// The macOS process-info calls the process table needs (`sys/procs/macos.rs`): libproc's
/// `proc_listallpids` and `proc_pidinfo`, and `sysctl(KERN_PROCARGS2)`. Each fills a buffer of
/// the size it is given and says how much it wrote; nothing is read past that.
#[cfg(target_os = "macos")]
pub mod darwin {
    use std::mem::size_of;

    use nix::libc;

    /// What `PROC_PIDTBSDINFO` says of a process.
    #[derive(Debug, Clone, Copy)]
    pub struct Bsd {
        /// The process.
        pub pid: i32,
        /// Its parent.
        pub ppid: i32,
        /// Its process group.
        pub pgid: i32,
        /// `SIDL` 1 … `SZOMB` 5.
        pub status: u32,
        /// Its start, in microseconds since the epoch.
        pub start_us: u64,
    }

    /// What `PROC_PIDTASKINFO` says of a process.
    #[derive(Debug, Clone, Copy)]
    pub struct Task {
        /// Resident memory, bytes.
        pub resident_bytes: u64,
        /// User and system time, nanoseconds.
        pub cpu_nanos: u64,
    }

    /// Every pid.
    #[must_use]
    pub fn all_pids() -> Vec<i32> {
        // SAFETY: a null buffer of size 0 asks only for the count.
        let n = unsafe { libc::proc_listallpids(std::ptr::null_mut(), 0) };
        let Ok(n) = usize::try_from(n) else {
            return Vec::new();
        };
        // Room for processes started since the count.
        let mut buf = vec![0i32; n + 64];
        let bytes = i32::try_from(buf.len() * size_of::<i32>()).unwrap_or(i32::MAX);
        // SAFETY: the buffer holds `bytes` bytes; the call writes at most that many.
        let got = unsafe { libc::proc_listallpids(buf.as_mut_ptr().cast(), bytes) };
        let got = usize::try_from(got).unwrap_or(0).min(buf.len());
        buf.truncate(got);
        buf.retain(|p| *p > 0);
        buf
    }

    /// `proc_pidinfo(pid, flavor)` into a zeroed `T`; `None` unless it filled all of it.
    fn pidinfo<T: Copy>(pid: i32, flavor: i32) -> Option<T> {
        let size = i32::try_from(size_of::<T>()).ok()?;
        // SAFETY: `T` is one of libc's plain C structs (integers and arrays), for which all
        // zero bytes are a valid value.
        let mut info: T = unsafe { std::mem::zeroed() };
        // SAFETY: the buffer is `size` bytes of `info`; the call writes at most that many.
        let n = unsafe { libc::proc_pidinfo(pid, flavor, 0, (&raw mut info).cast(), size) };
        (n == size).then_some(info)
    }

    /// The BSD info of `pid`.
    #[must_use]
    pub fn bsd_info(pid: i32) -> Option<Bsd> {
        let i: libc::proc_bsdinfo = pidinfo(pid, libc::PROC_PIDTBSDINFO)?;
        Some(Bsd {
            pid: i32::try_from(i.pbi_pid).ok()?,
            ppid: i32::try_from(i.pbi_ppid).ok()?,
            pgid: i32::try_from(i.pbi_pgid).ok()?,
            status: i.pbi_status,
            start_us: i.pbi_start_tvsec * 1_000_000 + i.pbi_start_tvusec,
        })
    }

    /// The task info of `pid`.
    #[must_use]
    #[allow(
        deprecated,
        reason = "libc's Mach timebase, as the standard library reads it"
    )]
    pub fn task_info(pid: i32) -> Option<Task> {
        let t: libc::proc_taskinfo = pidinfo(pid, libc::PROC_PIDTASKINFO)?;
        // The times are in Mach absolute time units: nanoseconds on Intel, scaled on Apple
        // silicon.
        let mut tb = libc::mach_timebase_info { numer: 1, denom: 1 };
        // SAFETY: writes the two integers of `tb`.
        let _ok = unsafe { libc::mach_timebase_info(&raw mut tb) };
        let ticks = u128::from(t.pti_total_user) + u128::from(t.pti_total_system);
        let nanos = ticks * u128::from(tb.numer) / u128::from(tb.denom.max(1));
        Some(Task {
            resident_bytes: t.pti_resident_size,
            cpu_nanos: u64::try_from(nanos).unwrap_or(u64::MAX),
        })
    }

    /// The `KERN_PROCARGS2` buffer of `pid` (arguments and environment; `sys::procargs` reads
    /// it).
    #[must_use]
    pub fn procargs(pid: i32) -> Option<Vec<u8>> {
        let mut mib = [libc::CTL_KERN, libc::KERN_PROCARGS2, pid];
        let mut size: libc::size_t = 0;
        // SAFETY: a null buffer asks only for the size, written to `size`.
        let rc = unsafe {
            libc::sysctl(
                mib.as_mut_ptr(),
                3,
                std::ptr::null_mut(),
                &raw mut size,
                std::ptr::null_mut(),
                0,
            )
        };
        if rc != 0 || size == 0 {
            return None;
        }
        let mut buf = vec![0u8; size];
        // SAFETY: the buffer holds `size` bytes; the call writes at most that many and sets
        // `size` to what it wrote.
        let rc = unsafe {
            libc::sysctl(
                mib.as_mut_ptr(),
                3,
                buf.as_mut_ptr().cast(),
                &raw mut size,
                std::ptr::null_mut(),
                0,
            )
        };
        (rc == 0).then(|| {
            buf.truncate(size);
            buf
        })
    }
}

/// A process started straight into a cgroup: Linux `clone3(CLONE_INTO_CGROUP | CLONE_PIDFD)`.
/// Moving a running process into a group (writing `cgroup.procs`) makes the kernel wait out an
/// RCU grace period — 5 to 15 ms on a busy machine, for every run; a process born in its group
/// costs what a fork does. The child is a copy of this (threaded) process with one thread, as
/// after `fork(2)`: everything it needs is prepared before the clone, and it makes only
/// async-signal-safe calls — its own session, the parent-death signal, its standard streams,
/// its directory — then executes the program, or reports why it could not through a pipe.
#[cfg(target_os = "linux")]
pub mod born {
    use std::ffi::{CString, c_char};
    use std::io;
    use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;

    use nix::libc;

    /// `struct clone_args` of the kernel's ABI (version 2, with `cgroup`).
    #[repr(C)]
    #[derive(Default)]
    struct CloneArgs {
        flags: u64,
        pidfd: u64,
        child_tid: u64,
        parent_tid: u64,
        exit_signal: u64,
        stack: u64,
        stack_size: u64,
        tls: u64,
        set_tid: u64,
        set_tid_size: u64,
        cgroup: u64,
    }

    const CLONE_PIDFD: u64 = 0x1000;
    const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

    /// What to start.
    pub struct Spawn<'a> {
        /// The program, by its path (not looked up on `PATH`).
        pub program: &'a Path,
        /// Its arguments (after the program's own name).
        pub args: &'a [String],
        /// Its whole environment.
        pub env: &'a [(String, String)],
        /// Its working directory.
        pub cwd: &'a Path,
        /// Its standard input, output and error.
        pub stdio: [BorrowedFd<'a>; 3],
        /// The cgroup it is born in.
        pub group: &'a Path,
    }

    /// Why nothing runs.
    #[derive(Debug)]
    pub enum Refused {
        /// The kernel would not clone into the group (older than 5.7, `clone3` filtered, a group
        /// that cannot hold processes): start it another way.
        Clone(io::Error),
        /// The child could not set itself up or execute the program.
        Start(io::Error),
    }

    /// A started process: its pid (its own session and process group) and a pidfd, readable
    /// once it has exited.
    pub struct Born {
        /// The pid.
        pub pid: i32,
        /// Its pidfd.
        pub pidfd: OwnedFd,
    }

    fn c_string(bytes: &[u8]) -> io::Result<CString> {
        CString::new(bytes).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "a NUL byte in a program, argument or variable",
            )
        })
    }

    /// The program, its arguments and environment and its directory as C strings, and the
    /// NULL-terminated arrays of pointers `execve` takes (pointing into the strings kept here).
    struct Prepared {
        program: CString,
        cwd: CString,
        _strings: (Vec<CString>, Vec<CString>),
        argv: Vec<*const c_char>,
        envp: Vec<*const c_char>,
    }

    fn prepare(s: &Spawn<'_>) -> io::Result<Prepared> {
        let program = c_string(s.program.as_os_str().as_bytes())?;
        let mut args = vec![program.clone()];
        for a in s.args {
            args.push(c_string(a.as_bytes())?);
        }
        let env = s
            .env
            .iter()
            .map(|(k, v)| c_string(format!("{k}={v}").as_bytes()))
            .collect::<io::Result<Vec<_>>>()?;
        let pointers = |v: &[CString]| -> Vec<*const c_char> {
            v.iter()
                .map(|c| c.as_ptr())
                .chain(std::iter::once(std::ptr::null()))
                .collect()
        };
        Ok(Prepared {
            cwd: c_string(s.cwd.as_os_str().as_bytes())?,
            argv: pointers(&args),
            envp: pointers(&env),
            program,
            _strings: (args, env),
        })
    }

    /// Start `s` in its group.
    ///
    /// # Errors
    /// [`Refused::Clone`] when the kernel cannot clone into the group, [`Refused::Start`] when
    /// the child could not start the program.
    pub fn spawn(s: Spawn<'_>) -> Result<Born, Refused> {
        let prepared = prepare(&s).map_err(Refused::Start)?;
        let group = std::fs::File::open(s.group).map_err(Refused::Clone)?;
        let (report_r, report_w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
            .map_err(|e| Refused::Clone(e.into()))?;
        let mut pidfd: libc::c_int = -1;
        let args = CloneArgs {
            flags: CLONE_PIDFD | CLONE_INTO_CGROUP,
            pidfd: (&raw mut pidfd) as u64,
            exit_signal: libc::SIGCHLD as u64,
            cgroup: group.as_raw_fd() as u64,
            ..CloneArgs::default()
        };
        let child = Child {
            program: prepared.program.as_ptr(),
            argv: prepared.argv.as_ptr(),
            envp: prepared.envp.as_ptr(),
            cwd: prepared.cwd.as_ptr(),
            stdio: s.stdio.map(|fd| fd.as_raw_fd()),
            report: report_w.as_raw_fd(),
            parent: nix::unistd::getpid().as_raw(),
        };
        // SAFETY: clone3 without CLONE_VM and without a stack: the child is a copy of this
        // process (this thread alone), continuing here with its own copy of the memory, as after
        // fork(2). It runs `Child::start`, which never returns, and reads only what was prepared
        // above.
        let ret = unsafe {
            libc::syscall(
                libc::SYS_clone3,
                &raw const args,
                std::mem::size_of::<CloneArgs>(),
            )
        };
        if ret == 0 {
            child.start();
        }
        if ret < 0 {
            return Err(Refused::Clone(io::Error::last_os_error()));
        }
        drop(report_w);
        // SAFETY: CLONE_PIDFD made the kernel write a new descriptor that nothing else owns
        // (read as memory the kernel wrote, not as the -1 it held before the call).
        let pidfd = unsafe { OwnedFd::from_raw_fd(std::ptr::read_volatile(&raw const pidfd)) };
        #[allow(clippy::cast_possible_truncation, reason = "a pid fits in an i32")]
        let pid = ret as i32;
        match reported(report_r) {
            None => Ok(Born { pid, pidfd }),
            Some(errno) => {
                // Set up it was not: reap it and say why.
                let _reaped = nix::sys::wait::waitid(
                    nix::sys::wait::Id::PIDFd(std::os::fd::AsFd::as_fd(&pidfd)),
                    nix::sys::wait::WaitPidFlag::WEXITED,
                );
                Err(Refused::Start(io::Error::from_raw_os_error(errno)))
            }
        }
    }

    /// The errno the child reported, or `None` when the pipe closed empty (on its exec).
    fn reported(report: OwnedFd) -> Option<i32> {
        let mut errno = [0u8; 4];
        let mut got = 0;
        let report = std::fs::File::from(report);
        while got < errno.len() {
            match io::Read::read(&mut &report, &mut errno[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        (got == errno.len()).then(|| i32::from_ne_bytes(errno))
    }

    /// `pidfd` in the runtime's reactor, readable once its process has exited.
    ///
    /// # Errors
    /// When the reactor refuses it.
    pub fn watch(pidfd: OwnedFd) -> io::Result<tokio::io::unix::AsyncFd<OwnedFd>> {
        // SAFETY: the `AsyncFd` owns the descriptor: it stays open, and the same, until the
        // `AsyncFd` is dropped.
        unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(pidfd, tokio::io::Interest::READABLE)
        }
        .map_err(io::Error::from)
    }

    /// What the child needs, as raw pointers into memory the parent prepared.
    struct Child {
        program: *const c_char,
        argv: *const *const c_char,
        envp: *const *const c_char,
        cwd: *const c_char,
        stdio: [RawFd; 3],
        report: RawFd,
        parent: libc::pid_t,
    }

    impl Child {
        /// In the child: set up and execute; on failure, report errno and exit 127.
        fn start(&self) -> ! {
            // SAFETY: only async-signal-safe calls, on pointers to NUL-terminated strings and
            // NULL-terminated arrays the parent made and keeps alive (the child has its own
            // copy of them); nothing is allocated.
            unsafe {
                let mut none: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&raw mut none);
                libc::sigprocmask(libc::SIG_SETMASK, &raw const none, std::ptr::null_mut());
                // The Rust runtime ignores SIGPIPE; what the run starts gets the default.
                libc::signal(libc::SIGPIPE, libc::SIG_DFL);
                if libc::setsid() < 0
                    || libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0
                    || libc::getppid() != self.parent
                {
                    self.fail();
                }
                for (fd, to) in self.stdio.iter().zip(0..) {
                    if libc::dup2(*fd, to) < 0 {
                        self.fail();
                    }
                }
                if libc::chdir(self.cwd) != 0 {
                    self.fail();
                }
                libc::execve(self.program, self.argv, self.envp);
                self.fail()
            }
        }

        /// Report errno to the parent and exit.
        fn fail(&self) -> ! {
            let errno = io::Error::last_os_error().raw_os_error().unwrap_or(0);
            let bytes = errno.to_ne_bytes();
            // SAFETY: write(2) and _exit(2) are async-signal-safe; `bytes` lives on this stack.
            unsafe {
                libc::write(self.report, bytes.as_ptr().cast(), bytes.len());
                libc::_exit(127)
            }
        }
    }
}
