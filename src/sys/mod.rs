//! The system calls a read needs, as safe functions: the only module of the core
//! that talks to the OS (through libc or std).
//!
//! Which implementation is compiled:
//!
//! | build | file I/O | accelerators |
//! |---|---|---|
//! | Linux | [`unix`]: libc `open`/`fstat`/`pread`/`read`/`close` | [`linux`]: `openat2(RESOLVE_CACHED)`, `preadv2(RWF_NOWAIT)`, `MADV_HUGEPAGE`, per-thread nice |
//! | macOS, FreeBSD | [`unix`] | none |
//! | Windows | [`std_io`]: `std::fs::File` behind CRT fds | none |
//! | any unix with `--cfg fairfs_portable` | [`std_io`] | none |
//!
//! Metadata (`stat`, `lstat`, `fstat`, `access`) is [`metadata`] on every unix:
//! `statx` on Linux, `fstatat` elsewhere; Windows has none yet.
//!
//! `--cfg fairfs_portable` exists so that `cargo test` on Linux runs the code that
//! Windows gets: the std-based file I/O and every "no accelerator" fallback.
//!
//! A failure becomes an [`FsError`] holding the raw OS error (errno on unix, a Win32
//! error code on Windows) and the syscall node:fs would name.

use std::ffi::CStr;
use std::mem::MaybeUninit;

use crate::error::FsError;

#[cfg(all(target_os = "linux", not(fairfs_portable)))]
mod linux;
#[cfg(unix)]
mod metadata;
#[cfg(any(windows, fairfs_portable))]
mod std_io;
#[cfg(all(unix, not(fairfs_portable)))]
mod unix;
#[cfg(unix)]
pub mod write;

#[cfg(any(windows, fairfs_portable))]
use std_io as imp;
#[cfg(all(unix, not(fairfs_portable)))]
use unix as imp;

#[cfg(target_os = "linux")]
pub use metadata::stat_fd_and_mount;
#[cfg(unix)]
pub use metadata::{access, realpath, scandir, stat, Listing, StatSlots, Target};

/// A file descriptor as Node hands them out: a POSIX fd on unix, a C runtime fd on
/// Windows (what libuv's `uv_fs_open` returns there).
pub type Fd = std::ffi::c_int;

/// The part of `fstat` a read needs.
#[derive(Clone, Copy, Debug)]
pub struct FileStat {
    pub is_regular: bool,
    /// A FIFO (named pipe): see [`nonblocking_open_flags`].
    pub is_fifo: bool,
    pub size: u64,
}

/// Opens `path` with Node's numeric `flags` (`fs.constants.O_*` of this platform) and
/// `mode`, close-on-exec / not inherited, as libuv does.
pub fn open(path: &CStr, flags: i32, mode: u32) -> Result<Fd, FsError> {
    imp::open(path, flags, mode)
}

pub fn fstat(fd: Fd) -> Result<FileStat, FsError> {
    imp::fstat(fd)
}

pub fn close(fd: Fd) -> Result<(), FsError> {
    imp::close(fd)
}

/// One `read` (or `pread` at `offset`; `None` reads at the fd's current position,
/// which also works for pipes and user-supplied fds) into `dst`, which may be
/// uninitialised. Returns how many of its first bytes were filled; 0 means end of
/// file. `EINTR` is retried.
pub fn read_uninit(fd: Fd, dst: &mut [MaybeUninit<u8>], offset: Option<u64>) -> Result<usize, FsError> {
    let n = imp::read_uninit(fd, dst, offset)?;
    debug_assert!(n <= dst.len());
    Ok(n)
}

/// Reads up to `len` bytes into the spare capacity of `buf` and extends it by what
/// was read, as [`read_uninit`] does. Returns the number of bytes read.
pub fn read_into(fd: Fd, buf: &mut Vec<u8>, len: usize, offset: Option<u64>) -> Result<usize, FsError> {
    let spare = buf.spare_capacity_mut();
    let len = len.min(spare.len());
    let n = read_uninit(fd, &mut spare[..len], offset)?;
    // SAFETY: `read_uninit` initialised the first `n <= len` bytes of the spare capacity.
    unsafe { buf.set_len(buf.len() + n) };
    Ok(n)
}

/// The flags to open a path for reading without waiting in `open(2)`: `flags` plus
/// `O_NONBLOCK`, where that applies (unix, read-only, not asked for already), else
/// `None`. Opening a FIFO blocks until a writer comes; opened this way it does not,
/// and does not disturb a writer that is waiting (closing a read end would: SIGPIPE).
/// The read then waits for a writer itself ([`wait_readable`]) and turns the fd back
/// to blocking ([`set_blocking`]). Regular files ignore the flag.
pub fn nonblocking_open_flags(flags: i32) -> Option<i32> {
    #[cfg(all(unix, not(fairfs_portable)))]
    return (flags & libc::O_ACCMODE == libc::O_RDONLY && flags & libc::O_NONBLOCK == 0)
        .then_some(flags | libc::O_NONBLOCK);
    #[cfg(not(all(unix, not(fairfs_portable))))]
    {
        let _ = flags;
        None
    }
}

/// Opens `path` for reading as [`nonblocking_open_flags`] says, without waiting in
/// `open(2)` where that applies: the fd, and whether it is non-blocking. A regular
/// file under another process's write lease (Samba's oplocks, NFSv4 delegations kept
/// by a local server) answers a non-blocking open with `EWOULDBLOCK` while the lease
/// holder is told to give it up; node:fs's open waits for that, and so does this one,
/// opening again without `O_NONBLOCK`. (A FIFO never answers so: its non-blocking
/// read open succeeds at once.)
pub fn open_for_read(path: &CStr, flags: i32, mode: u32) -> Result<(Fd, bool), FsError> {
    let Some(nonblocking) = nonblocking_open_flags(flags) else { return Ok((open(path, flags, mode)?, false)) };
    match open(path, nonblocking, mode) {
        Err(e) if is_would_block(&e) => Ok((open(path, flags, mode)?, false)),
        opened => Ok((opened?, true)),
    }
}

/// Clears `O_NONBLOCK` on an fd we opened with it.
pub fn set_blocking(fd: Fd) -> Result<(), FsError> {
    #[cfg(all(unix, not(fairfs_portable)))]
    return unix::set_blocking(fd);
    #[cfg(not(all(unix, not(fairfs_portable))))]
    {
        let _ = fd;
        Ok(())
    }
}

/// Waits up to `timeout_ms` until `fd` (a FIFO, a device) has data or a hang-up;
/// returns whether it does. Where there is no such wait, says yes at once.
pub fn wait_readable(fd: Fd, timeout_ms: i32) -> Result<bool, FsError> {
    #[cfg(all(unix, not(fairfs_portable)))]
    return unix::wait_readable(fd, timeout_ms);
    #[cfg(not(all(unix, not(fairfs_portable))))]
    {
        let _ = (fd, timeout_ms);
        Ok(true)
    }
}

/// Whether a read on a non-blocking fd found nothing to read yet (`EAGAIN`).
pub fn is_would_block(e: &FsError) -> bool {
    #[cfg(unix)]
    return e.os == libc::EAGAIN || e.os == libc::EWOULDBLOCK;
    #[cfg(windows)]
    {
        let _ = e;
        false
    }
}

/// Moves a descriptor fairfs keeps for the process's life above the numbers an
/// application's files take (to 1024 or more, or half the limit where that is lower),
/// so that `open` returns the numbers it returns under node:fs (tests name things
/// after them). Keeps `fd` where no higher number is free. (Linux: the mount table's
/// watcher holds the only such fd.)
#[cfg(all(target_os = "linux", not(fairfs_portable)))]
pub fn move_fd_high(fd: Fd) -> Fd {
    let floor = (max_open_files() / 2).min(1024) as libc::c_int;
    if fd >= floor {
        return fd;
    }
    // SAFETY: fcntl with an integer argument; the new fd is ours alone.
    let high = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, floor) };
    if high < 0 {
        return fd;
    }
    let _ = close(fd);
    high
}

/// How many descriptors this process may hold: `RLIMIT_NOFILE`'s soft limit on unix
/// (which Node raises to the hard limit at startup), the C runtime's default stream
/// limit on Windows (where libuv's fds are CRT fds).
pub fn max_open_files() -> u64 {
    #[cfg(unix)]
    {
        let mut lim = MaybeUninit::<libc::rlimit>::uninit();
        // SAFETY: getrlimit writes the whole struct on success; we read it only then.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, lim.as_mut_ptr()) } == 0 {
            // SAFETY: initialised by the successful call above.
            let soft = unsafe { lim.assume_init() }.rlim_cur;
            // rlim_t is u64 on Linux and macOS, i64 on FreeBSD (where infinity is i64::MAX).
            #[allow(clippy::unnecessary_cast)]
            return soft as u64;
        }
        1024
    }
    #[cfg(windows)]
    {
        512
    }
}

/// Whether `e` says the process (EMFILE) or the system (ENFILE) has no descriptor
/// left: a condition that passes as other files close.
pub fn is_out_of_descriptors(e: &FsError) -> bool {
    #[cfg(unix)]
    return e.os == libc::EMFILE || e.os == libc::ENFILE;
    #[cfg(windows)]
    return e.os == crate::error::code::TOO_MANY_FILES;
}

// The accelerators: Linux-only calls that make reads cheaper, each with a fallback
// that does without. None is needed for a correct result.

/// `open_cached` and `read_nowait`: the cache-hit fast path ([`crate::cached`]),
/// which exists only where they do.
#[cfg(all(target_os = "linux", not(fairfs_portable)))]
pub use linux::{
    access_fd, link_count, mount_id, mount_id_from_fdinfo, open_cached, open_cached_at, opened_read_only, read_nowait,
    read_nowait_at, voluntary_switches,
};

/// Asks the kernel to back `mem` with transparent huge pages where it can (advice
/// only; a no-op where there is no such advice).
pub fn advise_huge_pages(mem: &mut [MaybeUninit<u8>]) {
    #[cfg(all(target_os = "linux", not(fairfs_portable)))]
    linux::advise_huge_pages(mem);
    #[cfg(not(all(target_os = "linux", not(fairfs_portable))))]
    let _ = mem;
}

/// Sets the calling thread's nice value, so pool threads run a little below the
/// event loop and libuv's threads. Advice: the error says why it was not applied
/// (`Unsupported` where threads have no nice value of their own).
pub fn set_thread_nice(nice: i32) -> std::io::Result<()> {
    #[cfg(all(target_os = "linux", not(fairfs_portable)))]
    return linux::set_thread_nice(nice);
    // macOS and FreeBSD apply setpriority(PRIO_PROCESS) to the whole process, and
    // Windows thread priorities are classes, not nice values: leave them alone.
    #[cfg(not(all(target_os = "linux", not(fairfs_portable))))]
    {
        let _ = nice;
        Err(std::io::ErrorKind::Unsupported.into())
    }
}

/// The CPU the calling thread runs on, where the OS tells.
pub fn current_cpu() -> Option<usize> {
    #[cfg(all(target_os = "linux", not(fairfs_portable)))]
    return linux::current_cpu();
    #[cfg(not(all(target_os = "linux", not(fairfs_portable))))]
    None
}

/// Keeps the calling thread off `cpu` (`off`), or lets it back on; whether the thread's
/// CPU mask now says so (never where threads have no mask of their own to set).
pub fn set_thread_off_cpu(cpu: usize, off: bool) -> bool {
    #[cfg(all(target_os = "linux", not(fairfs_portable)))]
    return linux::set_thread_off_cpu(cpu, off);
    #[cfg(not(all(target_os = "linux", not(fairfs_portable))))]
    {
        let _ = (cpu, off);
        false
    }
}

/// The calling thread's id as the kernel knows it (Linux's `gettid`), read from
/// `/proc/thread-self` (the `gettid` wrapper needs glibc 2.30); `None` elsewhere.
pub fn thread_id() -> Option<i32> {
    #[cfg(all(target_os = "linux", not(fairfs_portable)))]
    return std::fs::read_link("/proc/thread-self").ok()?.file_name()?.to_str()?.parse().ok();
    #[cfg(not(all(target_os = "linux", not(fairfs_portable))))]
    None
}

/// How many of this process's threads `is(tid, name)` picks (0 where the OS does not
/// list them).
pub fn count_threads(is: impl Fn(i32, &[u8]) -> bool) -> usize {
    #[cfg(all(target_os = "linux", not(fairfs_portable)))]
    return linux::threads()
        .filter(|(tid, dir)| is(*tid, &std::fs::read(dir.join("comm")).unwrap_or_default()))
        .count();
    #[cfg(not(all(target_os = "linux", not(fairfs_portable))))]
    {
        let _ = is;
        0
    }
}

/// What one of this process's threads is to [`crate::policy::contention`] (besides the
/// main thread and the pool's own, which [`cpu_snapshot`] tells apart itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadKind {
    /// The host's thread pool (libuv's: zlib, crypto, `dns.lookup`, node:fs).
    HostPool,
    /// The JS runtime's own helpers (V8's platform workers, busy with our results'
    /// garbage): not a neighbour.
    Runtime,
    /// Anything else: a worker_thread, a library's thread, a neighbour.
    Other,
}

/// Who else uses the CPU, for [`crate::policy::contention`]: the host's thread pool
/// (libuv's, [`crate::policy::host_threads`]), the runtime's helpers (V8's), this
/// process's other threads but the pool's and the main thread, the main thread (the
/// event loop), and the rest of the machine.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuSnapshot {
    /// Nanoseconds on the CPU of this process's threads that are neither the main
    /// thread, nor the host pool's, nor the runtime's helpers, nor named `fairfs-*`.
    pub neighbours_cpu_ns: u64,
    /// Nanoseconds on the CPU of the runtime's helpers (V8's GC and compiler threads).
    pub runtime_cpu_ns: u64,
    /// Nanoseconds on the CPU of the pool's own threads (named `fairfs-*`).
    pub pool_cpu_ns: u64,
    /// Nanoseconds the host pool's threads were on the CPU or runnable and waiting
    /// for one: what they wanted of it.
    pub host_pool_wanted_ns: u64,
    /// The main thread's nanoseconds on the CPU and runnable but waiting for one.
    pub main_cpu_ns: u64,
    pub main_waiting_ns: u64,
    /// Clock ticks (`USER_HZ`, 100 a second) the whole machine was busy, and this
    /// process was.
    pub machine_busy_ticks: u64,
    pub process_ticks: u64,
}

/// Takes a [`CpuSnapshot`] where the OS tells (Linux's `/proc`), with each thread of
/// this process sorted by `classify(tid, name)`; `None` elsewhere.
pub fn cpu_snapshot(classify: impl Fn(i32, &[u8]) -> ThreadKind) -> Option<CpuSnapshot> {
    #[cfg(all(target_os = "linux", not(fairfs_portable)))]
    return linux::cpu_snapshot(classify);
    #[cfg(not(all(target_os = "linux", not(fairfs_portable))))]
    {
        let _ = classify;
        None
    }
}

/// The ids of this process's threads (none where the OS does not list them).
pub fn thread_ids() -> Vec<i32> {
    #[cfg(all(target_os = "linux", not(fairfs_portable)))]
    return linux::threads().map(|(tid, _)| tid).collect();
    #[cfg(not(all(target_os = "linux", not(fairfs_portable))))]
    Vec::new()
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::error::Syscall;
    use std::os::unix::fs::PermissionsExt;

    use crate::test_files::c_path as c;

    fn read_all(fd: Fd) -> Vec<u8> {
        let mut buf = Vec::with_capacity(100);
        loop {
            let at = buf.len() as u64;
            if read_into(fd, &mut buf, 100, Some(at)).unwrap() == 0 {
                return buf;
            }
        }
    }

    /// node:fs's flag strings (lib/args.js) open as open(2) would, in both builds.
    #[test]
    fn opens_with_node_flags() {
        let dir = std::env::temp_dir().join(format!("fairfs-sys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("f");
        let (r, wx, w_plus, a_plus) = (
            libc::O_RDONLY,
            libc::O_TRUNC | libc::O_CREAT | libc::O_WRONLY | libc::O_EXCL,
            libc::O_TRUNC | libc::O_CREAT | libc::O_RDWR,
            libc::O_APPEND | libc::O_CREAT | libc::O_RDWR,
        );
        assert_eq!(open(&c(&p), r, 0o666), Err(FsError::new(libc::ENOENT, Syscall::Open)));
        close(open(&c(&p), wx, 0o640).unwrap()).unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode & !0o640, 0, "created with the mode (less the umask): {mode:o}");
        assert_eq!(open(&c(&p), wx, 0o666), Err(FsError::new(libc::EEXIST, Syscall::Open)));
        std::fs::write(&p, b"hello").unwrap();
        let fd = open(&c(&p), a_plus, 0o666).unwrap();
        assert_eq!(read_all(fd), b"hello", "a+ keeps the contents");
        close(fd).unwrap();
        let fd = open(&c(&p), w_plus, 0o666).unwrap();
        assert_eq!(read_all(fd), b"", "w+ truncates");
        close(fd).unwrap();
        // Flags OpenOptions has no setter for still reach open(2).
        let link = dir.join("link");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        assert_eq!(open(&c(&link), r | libc::O_NOFOLLOW, 0), Err(FsError::new(libc::ELOOP, Syscall::Open)));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn stats_reads_and_closes() {
        let p = std::env::temp_dir().join(format!("fairfs-sys-read-{}", std::process::id()));
        std::fs::write(&p, b"0123456789").unwrap();
        let fd = open(&c(&p), libc::O_RDONLY, 0).unwrap();
        let st = fstat(fd).unwrap();
        assert!(st.is_regular);
        assert_eq!(st.size, 10);
        let mut buf = Vec::with_capacity(4);
        assert_eq!(read_into(fd, &mut buf, 4, Some(6)).unwrap(), 4);
        assert_eq!(buf, b"6789");
        let mut dst = [MaybeUninit::new(0xff); 3];
        assert_eq!(read_uninit(fd, &mut dst, None).unwrap(), 3, "at the position, which pread left at 0");
        // SAFETY: every byte of `dst` was initialised (0xff) before the read.
        assert_eq!(dst.map(|b| unsafe { b.assume_init() }), *b"012");
        close(fd).unwrap();
        assert_eq!(fstat(fd).unwrap_err(), FsError::new(libc::EBADF, Syscall::Fstat));
        assert_eq!(read_uninit(fd, &mut dst, None).unwrap_err(), FsError::new(libc::EBADF, Syscall::Read));
        assert_eq!(close(fd), Err(FsError::new(libc::EBADF, Syscall::Close)));
        let dir = open(&c(&std::env::temp_dir()), libc::O_RDONLY, 0).unwrap();
        assert!(!fstat(dir).unwrap().is_regular);
        assert_eq!(read_uninit(dir, &mut dst, None).unwrap_err(), FsError::new(libc::EISDIR, Syscall::Read));
        close(dir).unwrap();
        std::fs::remove_file(p).unwrap();
    }

    /// Linux keeps a nice value and a policy per thread: setting them on one leaves the
    /// others alone (on musl too, whose `sched_setscheduler` never does anything).
    #[cfg(all(target_os = "linux", not(fairfs_portable)))]
    #[test]
    fn nice_and_batch_policy_apply_to_the_calling_thread_only() {
        /// Field `n` (1-based, as in proc(5)) of this thread's stat line.
        fn field(n: usize) -> i64 {
            let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
            // Fields after the parenthesised command, which is field 2.
            let rest = &stat[stat.rfind(')').unwrap() + 2..];
            rest.split(' ').nth(n - 3).unwrap().parse().unwrap()
        }
        let nice = || field(19);
        let policy = || field(41);
        let before = nice();
        let inside = std::thread::spawn(move || {
            set_thread_nice(before as i32 + 3).unwrap();
            (nice(), policy())
        })
        .join()
        .unwrap();
        assert_eq!(inside, ((before + 3).min(19), libc::SCHED_BATCH as i64));
        assert_eq!((nice(), policy()), (before, libc::SCHED_OTHER as i64));
    }

    #[cfg(not(all(target_os = "linux", not(fairfs_portable))))]
    #[test]
    fn nice_is_not_applied_without_per_thread_nice() {
        assert_eq!(set_thread_nice(5).unwrap_err().kind(), std::io::ErrorKind::Unsupported);
    }

    /// The advice reaches the kernel: the mapping is flagged `hg` in smaps (needs
    /// a kernel with transparent huge pages, which Linux CI machines have).
    #[cfg(all(target_os = "linux", not(fairfs_portable)))]
    #[test]
    fn huge_page_advice_marks_the_mapping() {
        assert!(std::path::Path::new("/sys/kernel/mm/transparent_hugepage").exists(), "no THP in this kernel");
        let mut v: Vec<u8> = Vec::with_capacity(8 << 20);
        advise_huge_pages(v.spare_capacity_mut());
        let addr = v.as_ptr() as usize + (4 << 20);
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut inside = false;
        let flags = smaps.lines().find_map(|line| {
            if let Some((range, _)) = line.split_once(' ').filter(|(r, _)| r.contains('-') && !r.ends_with(':')) {
                let (lo, hi) = range.split_once('-').unwrap();
                let (lo, hi) = (usize::from_str_radix(lo, 16).ok()?, usize::from_str_radix(hi, 16).ok()?);
                inside = (lo..hi).contains(&addr);
            }
            line.strip_prefix("VmFlags:").filter(|_| inside).map(str::to_owned)
        });
        assert!(flags.expect("the buffer's mapping").split_whitespace().any(|f| f == "hg"));
    }
}
