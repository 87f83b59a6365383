//! The Linux accelerators: calls that make reads cheaper where the kernel has them.
//! Each has a fallback in [`super`] (or in its caller) that does without.
//!
//! `openat2` and `preadv2` go through `syscall(2)`: glibc's wrappers need glibc 2.26+
//! (and openat2 has none before 2.32), and the release binary must load on glibc 2.17.
//! A kernel without them answers `ENOSYS`, which the fast path treats as a miss.

use std::ffi::CStr;
use std::mem::MaybeUninit;

use super::Fd;
use crate::error::{FsError, Syscall};

/// `openat2` with `RESOLVE_CACHED`: opens only if the whole path lookup can be done
/// from the dentry cache, failing with `EAGAIN` where it would need I/O (Linux 5.12+;
/// older kernels answer `ENOSYS` or `EINVAL`).
pub fn open_cached(path: &CStr, flags: i32) -> Result<Fd, FsError> {
    open_cached_at(libc::AT_FDCWD, path, flags)
}

/// [`open_cached`] of `path` relative to directory `dir` (`AT_FDCWD`: the working
/// directory).
pub fn open_cached_at(dir: Fd, path: &CStr, flags: i32) -> Result<Fd, FsError> {
    /// `struct open_how` (libc's is non-exhaustive, so it cannot be built here).
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    let how = OpenHow { flags: (flags | libc::O_CLOEXEC) as u64, mode: 0, resolve: libc::RESOLVE_CACHED };
    // SAFETY: `path` is NUL-terminated and `how` has open_how's layout and the size
    // we pass; the kernel only reads both.
    let fd =
        unsafe { libc::syscall(libc::SYS_openat2, dir, path.as_ptr(), &how as *const OpenHow, size_of::<OpenHow>()) };
    if fd < 0 {
        return Err(FsError::last(Syscall::Open));
    }
    Ok(fd as Fd)
}

/// `faccessat2(fd, "", mode, AT_EMPTY_PATH)`: `access(2)`'s check (real ids, as
/// libuv's `uv_fs_access` makes it) of the file an `O_PATH` fd names, from the inode in
/// memory (Linux 5.8+; `ENOSYS` before).
pub fn access_fd(fd: Fd, mode: i32) -> Result<(), FsError> {
    // SAFETY: an empty NUL-terminated path; the kernel only reads it.
    let r = unsafe { libc::syscall(libc::SYS_faccessat2, fd, c"".as_ptr(), mode, libc::AT_EMPTY_PATH) };
    if r < 0 {
        return Err(FsError::last(Syscall::Access));
    }
    Ok(())
}

/// The id of the mount `fd` lies on, as `/proc/self/mountinfo` numbers mounts, asked
/// in a way no file system answers by calling out: `statx` for nothing but
/// `STATX_MNT_ID`, with `AT_STATX_DONT_SYNC`. FUSE, NFS, CIFS and Ceph then answer
/// from the inode in memory; a few file systems (9p, OrangeFS, cluster file systems)
/// ask their server in any case, and where such a mount exists the caller uses
/// [`mount_id_from_fdinfo`] instead ([`crate::locality`]). `None` before Linux 5.8.
pub fn mount_id(fd: Fd) -> Option<u64> {
    let mut sx = MaybeUninit::<libc::statx>::zeroed();
    let flags = libc::AT_EMPTY_PATH | libc::AT_STATX_DONT_SYNC;
    // SAFETY: the path is an empty NUL-terminated string and `sx` is writable memory of
    // statx's size; the kernel only reads the path and writes `sx`.
    let r = unsafe { libc::syscall(libc::SYS_statx, fd, c"".as_ptr(), flags, libc::STATX_MNT_ID, sx.as_mut_ptr()) };
    if r < 0 {
        return None;
    }
    // SAFETY: statx returned 0, so it filled `sx` (and it was zeroed before).
    let sx = unsafe { sx.assume_init() };
    (sx.stx_mask & libc::STATX_MNT_ID != 0).then_some(sx.stx_mnt_id)
}

/// [`mount_id`] read from `/proc/self/fdinfo/<fd>`, which the VFS writes without
/// asking the file system anything at all: safe on every mount, about 1.5 µs
/// against 0.2 for `statx`.
pub fn mount_id_from_fdinfo(fd: Fd) -> Option<u64> {
    use std::io::Read;
    let mut text = [0u8; 256];
    let mut file = std::fs::File::open(format!("/proc/self/fdinfo/{fd}")).ok()?;
    let n = file.read(&mut text).ok()?;
    let text = std::str::from_utf8(&text[..n]).ok()?;
    text.lines().find_map(|line| line.strip_prefix("mnt_id:")).and_then(|id| id.trim().parse().ok())
}

/// Whether `fd` was opened for reading only (`O_RDONLY`); `false` if `fcntl` fails.
/// The open file's flags are in memory: no file system is asked.
pub fn opened_read_only(fd: Fd) -> bool {
    // SAFETY: fcntl with an integer command and no pointer arguments.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    flags >= 0 && flags & libc::O_ACCMODE == libc::O_RDONLY
}

/// How many names `fd`'s file has (0 once it is unlinked), or `None` if `fstat` fails.
pub fn link_count(fd: Fd) -> Option<libc::nlink_t> {
    let mut st = MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `st` is writable memory of stat's size; fstat only writes into it.
    if unsafe { libc::fstat(fd, st.as_mut_ptr()) } < 0 {
        return None;
    }
    // SAFETY: fstat returned 0, so it filled `st`.
    Some(unsafe { st.assume_init() }.st_nlink)
}

/// `preadv2` with `RWF_NOWAIT` at offset 0: reads only what is in the page cache,
/// failing with `EAGAIN` (or returning short) instead of waiting for the disk
/// (Linux 4.14+).
pub fn read_nowait(fd: Fd, buf: &mut Vec<u8>, len: usize) -> Result<usize, FsError> {
    let spare = buf.spare_capacity_mut();
    let len = len.min(spare.len());
    let n = preadv2_nowait(fd, &mut spare[..len], 0)?;
    // SAFETY: the kernel initialised the first `n <= len` bytes of the spare capacity.
    unsafe { buf.set_len(buf.len() + n) };
    Ok(n)
}

/// [`read_nowait`] into `buf` at file offset `pos`.
pub fn read_nowait_at(fd: Fd, buf: &mut [u8], pos: u64) -> Result<usize, FsError> {
    // SAFETY: initialised bytes are valid `MaybeUninit` bytes, and nothing in
    // `preadv2_nowait` writes uninitialised ones over them.
    let buf = unsafe { &mut *(buf as *mut [u8] as *mut [MaybeUninit<u8>]) };
    preadv2_nowait(fd, buf, pos)
}

/// `preadv2(fd, [buf], pos, RWF_NOWAIT)`: the bytes it read into the start of `buf`.
fn preadv2_nowait(fd: Fd, buf: &mut [MaybeUninit<u8>], pos: u64) -> Result<usize, FsError> {
    let iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    // The raw syscall takes the offset as two longs, low half first (the high half is
    // unused on 64-bit, where the low one holds it all).
    let (pos_lo, pos_hi) = if cfg!(target_pointer_width = "64") {
        (pos as libc::c_long, 0)
    } else {
        (pos as u32 as libc::c_long, (pos >> 32) as libc::c_long)
    };
    // SAFETY: `iov` describes `buf`, which nothing else aliases while it is mutably
    // borrowed; the kernel writes at most `buf.len()` bytes there and only reads `iov`.
    let n = unsafe {
        libc::syscall(
            libc::SYS_preadv2,
            fd as libc::c_long,
            &iov as *const libc::iovec,
            1 as libc::c_long,
            pos_lo,
            pos_hi,
            libc::RWF_NOWAIT as libc::c_long,
        )
    };
    if n < 0 {
        return Err(FsError::last(Syscall::Read));
    }
    Ok(n as usize)
}

/// Asks the kernel to back the 2 MiB-aligned part of `mem` with transparent huge
/// pages (where THP is set to `madvise`): 512× fewer page faults on first touch and
/// fewer TLB misses while the kernel copies file data into it. Advice only.
pub fn advise_huge_pages(mem: &mut [MaybeUninit<u8>]) {
    const HUGE: usize = 2 << 20;
    let start = (mem.as_ptr() as usize).next_multiple_of(HUGE);
    let end = (mem.as_ptr() as usize + mem.len()) & !(HUGE - 1);
    if end > start {
        // SAFETY: [start, end) lies inside `mem`; MADV_HUGEPAGE changes no contents.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
    }
}

/// Linux keeps a nice value per thread, and `setpriority(PRIO_PROCESS, 0, ..)` sets
/// the calling thread's alone (no `gettid`, which needs glibc 2.30). The thread also
/// becomes `SCHED_BATCH`: the scheduler then never lets it preempt the thread that
/// woke it. Without it, every read the event loop submitted woke a worker that took
/// the CPU from the event loop on the spot: in the server benchmark most of the main
/// thread's context switches came right after such a wake-up (docs/tuning.md). A failure (a policy the OS refuses) is
/// ignored: the nice value still applies.
///
/// The policy is set through `syscall(2)`: musl's `sched_setscheduler` always fails with
/// `ENOSYS` (POSIX says it sets a process's policy, and Linux only has per-thread ones),
/// and musl's `sched_param` has more fields than the kernel reads, so it is zeroed
/// rather than built field by field.
pub fn set_thread_nice(nice: i32) -> std::io::Result<()> {
    // SAFETY: sched_param is plain integers (and, on musl, timespecs of integers), for
    // which all zeroes is a valid value: priority 0, which SCHED_BATCH requires.
    let param: libc::sched_param = unsafe { std::mem::zeroed() };
    // SAFETY: the kernel reads one int (sched_priority, the first field) from `param`,
    // which lives across the call, and changes only this thread's policy (tid 0: the
    // caller).
    unsafe { libc::syscall(libc::SYS_sched_setscheduler, 0, libc::SCHED_BATCH, &param as *const libc::sched_param) };
    // SAFETY: setpriority has no memory effects; it only changes scheduling.
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The CPU the calling thread is running on (`sched_getcpu`, read from the vDSO).
pub fn current_cpu() -> Option<usize> {
    // SAFETY: no arguments and no memory effects.
    usize::try_from(unsafe { libc::sched_getcpu() }).ok()
}

/// Takes `cpu` out of the calling thread's CPU mask (`off`) or puts it back. Returns
/// whether the mask now says so: a mask that would be left empty, or that the kernel
/// refuses (a cpuset without `cpu`, over 1,024 CPUs), is left alone.
pub fn set_thread_off_cpu(cpu: usize, off: bool) -> bool {
    if cpu >= libc::CPU_SETSIZE as usize {
        return false;
    }
    // SAFETY: cpu_set_t is a plain bit array, valid all zeroes; the kernel writes at
    // most its size into it and reads it back (tid 0: the calling thread alone); the
    // CPU_* helpers touch bit `cpu`, checked above to lie inside it.
    unsafe {
        let mut mask: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut mask) < 0 {
            return false;
        }
        if libc::CPU_ISSET(cpu, &mask) != off {
            return true;
        }
        if off {
            if libc::CPU_COUNT(&mask) < 2 {
                return false;
            }
            libc::CPU_CLR(cpu, &mut mask);
        } else {
            libc::CPU_SET(cpu, &mut mask);
        }
        libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &mask) == 0
    }
}

/// Reads a [`CpuSnapshot`]: one directory listing and a few small `/proc` files per
/// thread (the governor takes one every 100 ms at most, while big reads run).
pub fn cpu_snapshot(classify: impl Fn(i32, &[u8]) -> super::ThreadKind) -> Option<super::CpuSnapshot> {
    let pid = std::process::id() as i32;
    let mut snap = super::CpuSnapshot::default();
    for (tid, dir) in threads() {
        let Some((cpu, waiting)) = std::fs::read_to_string(dir.join("schedstat")).ok().and_then(|s| two_numbers(&s))
        else {
            continue; // the thread ended meanwhile
        };
        if tid == pid {
            (snap.main_cpu_ns, snap.main_waiting_ns) = (cpu, waiting);
            continue;
        }
        let name = std::fs::read(dir.join("comm")).unwrap_or_default();
        if name.starts_with(b"fairfs-") {
            snap.pool_cpu_ns += cpu;
            continue;
        }
        match classify(tid, &name) {
            super::ThreadKind::HostPool => snap.host_pool_wanted_ns += cpu + waiting,
            super::ThreadKind::Runtime => snap.runtime_cpu_ns += cpu,
            super::ThreadKind::Other => snap.neighbours_cpu_ns += cpu,
        }
    }
    let machine = std::fs::read_to_string("/proc/stat").ok()?;
    // cpu user nice system idle iowait irq softirq steal ...: busy is all but idle and iowait.
    let ticks: Vec<u64> =
        machine.lines().next()?.split_ascii_whitespace().skip(1).map_while(|f| f.parse().ok()).collect();
    snap.machine_busy_ticks = ticks.iter().enumerate().filter(|(i, _)| *i != 3 && *i != 4).map(|(_, t)| t).sum();
    let process = std::fs::read_to_string("/proc/self/stat").ok()?;
    // After the command name, which may hold spaces: field 14 (utime) and 15 (stime).
    let rest = &process[process.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    snap.process_ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(snap)
}

/// This process's threads: each id and its `/proc` directory.
pub fn threads() -> impl Iterator<Item = (i32, std::path::PathBuf)> {
    std::fs::read_dir("/proc/self/task").into_iter().flatten().filter_map(|entry| {
        let entry = entry.ok()?;
        Some((entry.file_name().to_str()?.parse().ok()?, entry.path()))
    })
}

/// The first two numbers of a schedstat line.
fn two_numbers(s: &str) -> Option<(u64, u64)> {
    let mut fields = s.split_ascii_whitespace().map(|f| f.parse::<u64>().ok());
    Some((fields.next()??, fields.next()??))
}

/// How many times this thread has given up the CPU to wait (`ru_nvcsw` of
/// `getrusage(RUSAGE_THREAD)`, 0.2 µs): a call during which it grew slept, on a disk, a
/// daemon, a lock; one that took long while it stayed put was preempted.
pub fn voluntary_switches() -> Option<libc::c_long> {
    let mut usage = MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` is writable and rusage-sized; the kernel fills it.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr()) } < 0 {
        return None;
    }
    // SAFETY: filled by the successful call above (and zeroed before it).
    Some(unsafe { usage.assume_init() }.ru_nvcsw)
}
