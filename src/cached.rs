//! The cache-hit fast paths: small reads, stats and a stream's open, first read and
//! close on the calling thread, done only where nothing can wait.
//!
//! A small read through the pool costs two thread hand-offs, far more than its four
//! syscalls when the file is in the page cache. Here the caller does them itself:
//! `openat2(O_PATH, RESOLVE_CACHED)` to look without opening, then, for a regular
//! file on a local mount, `open`, `fstat`, `preadv2(RWF_NOWAIT)`, `close`. The lookup
//! and the read fail with `EAGAIN` instead of waiting for the disk, so a cold file
//! never stalls the caller; any failure, short read or regular file that is not
//! small is a [`Cached::Miss`], and the caller goes through the pool, which gives the
//! real result or error.
//!
//! **Only on local mounts.** FUSE, NFS, CIFS and 9p answer an open, a stat, even a
//! `statfs`, through a daemon or a server, which the calling thread must never wait
//! for. `locality` says whether a file's mount is local without asking its
//! file system, and times the calls made here, pausing a mount whose calls are slow
//! anyway. FIFOs, devices and sockets are never opened here: the look says what the
//! file is before anything is opened.
//!
//! Only Linux has such calls. Elsewhere, and with `--cfg fairfs_portable`, every
//! call is a miss and every read goes through the pool. `configure({ fastPath })`
//! and `FAIRFS_FAST_PATH=0` turn them all off for the whole process ([`set_enabled`]).

use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};

#[cfg(all(target_os = "linux", not(fairfs_portable)))]
use crate::{locality::Use, sys};

/// Set once `openat2(RESOLVE_CACHED)` has answered `ENOSYS` (no openat2, before Linux
/// 5.6) or `EINVAL` (no `RESOLVE_CACHED`, before 5.12): the kernel will never serve the
/// fast path, so it is not asked again on every read.
#[cfg(all(target_os = "linux", not(fairfs_portable)))]
static KERNEL_LACKS_OPENAT2: AtomicBool = AtomicBool::new(false);

/// Opens through `open_cached` unless the kernel has shown it lacks the call
/// (`lacks`), which an `ENOSYS` or `EINVAL` answer records.
#[cfg_attr(not(all(target_os = "linux", not(fairfs_portable))), allow(dead_code))]
fn open_unless_lacking(
    lacks: &AtomicBool,
    open_cached: impl FnOnce() -> Result<crate::sys::Fd, crate::error::FsError>,
) -> Option<crate::sys::Fd> {
    if lacks.load(Ordering::Relaxed) {
        return None;
    }
    match open_cached() {
        Ok(fd) => Some(fd),
        Err(e) => {
            #[cfg(unix)]
            if e.os == libc::ENOSYS || e.os == libc::EINVAL {
                lacks.store(true, Ordering::Relaxed);
            }
            let _ = e;
            None
        }
    }
}

/// The fast path for `stat` (`follow`) and `lstat`: the `fs.Stats` fields of `path`
/// if they can be had without blocking, else `None` and the caller asks the pool. The
/// lookup is `openat2(O_PATH, RESOLVE_CACHED)`, which fails rather than wait for a
/// disk or a revalidation; `statx` of that fd then reads the inode in memory, on a
/// local mount (`locality`). A miss the dentry cache knows is answered here too
/// (`look_or_miss`); other errors go to the pool, which reports them as node:fs does.
#[cfg(unix)]
pub fn stat_cached(path: &CStr, follow: bool) -> Option<Result<crate::sys::StatSlots, crate::error::FsError>> {
    #[cfg(all(target_os = "linux", not(fairfs_portable)))]
    let answer = (|| {
        if !enabled() {
            return None;
        }
        let syscall = if follow { crate::Syscall::Stat } else { crate::Syscall::Lstat };
        let probe = match look_or_miss(path, libc::O_PATH | if follow { 0 } else { libc::O_NOFOLLOW }, syscall)? {
            Ok(fd) => fd,
            Err(miss) => return Some(Err(miss)),
        };
        let slots = crate::locality::stat_if_local(probe);
        // An O_PATH fd has no file operations: closing it never reaches the file system.
        let _ = sys::close(probe);
        slots.map(Ok)
    })();
    #[cfg(not(all(target_os = "linux", not(fairfs_portable))))]
    let answer = {
        let _ = (path, follow);
        None
    };
    count(answer.is_some());
    answer
}

/// The fast path for `access` with `fs.constants` `mode` bits, as [`stat_cached`]: the
/// check made on the looked-up inode in memory (`faccessat2` on the `O_PATH` fd, real
/// ids as node:fs's), a miss the dentry cache knows answered as one, else `None`.
#[cfg(unix)]
pub fn access_cached(path: &CStr, mode: i32) -> Option<Result<(), crate::error::FsError>> {
    #[cfg(all(target_os = "linux", not(fairfs_portable)))]
    let answer = (|| {
        if !enabled() || KERNEL_LACKS_FACCESSAT2.load(Ordering::Relaxed) {
            return None;
        }
        let probe = match look_or_miss(path, libc::O_PATH, crate::Syscall::Access)? {
            Ok(fd) => fd,
            Err(miss) => return Some(Err(miss)),
        };
        let answer = on_local(probe, Use::Metadata, || sys::access_fd(probe, mode));
        let _ = sys::close(probe);
        match answer? {
            Err(e) if e.os == libc::ENOSYS || e.os == libc::EINVAL => {
                KERNEL_LACKS_FACCESSAT2.store(true, Ordering::Relaxed);
                None
            }
            answer => Some(answer),
        }
    })();
    #[cfg(not(all(target_os = "linux", not(fairfs_portable))))]
    let answer = {
        let _ = (path, mode);
        None
    };
    count(answer.is_some());
    answer
}

/// Set once `faccessat2` has answered `ENOSYS` (before Linux 5.8): `access` is asked
/// of the pool from then on.
#[cfg(all(target_os = "linux", not(fairfs_portable)))]
static KERNEL_LACKS_FACCESSAT2: AtomicBool = AtomicBool::new(false);

/// Whether the fast paths may run: `configure({ fastPath })` sets it for the whole
/// process (worker_threads included); `FAIRFS_FAST_PATH=0` in the environment turns
/// them off from the start.
pub fn enabled() -> bool {
    match ENABLED.load(Ordering::Relaxed) {
        UNREAD => {
            let on = !matches!(std::env::var("FAIRFS_FAST_PATH").as_deref(), Ok("0" | "false"));
            let _ = ENABLED.compare_exchange(UNREAD, if on { ON } else { OFF }, Ordering::Relaxed, Ordering::Relaxed);
            ENABLED.load(Ordering::Relaxed) == ON
        }
        state => state == ON,
    }
}

/// Turns the fast paths on or off for the whole process.
pub fn set_enabled(on: bool) {
    ENABLED.store(if on { ON } else { OFF }, Ordering::Relaxed);
}

const UNREAD: u8 = 0;
const ON: u8 = 1;
const OFF: u8 = 2;
static ENABLED: AtomicU8 = AtomicU8::new(UNREAD);

/// Reads the mount table and starts its watcher now rather than at the first fast
/// path: the binding's load does it, so that the watcher's one descriptor (on
/// `/proc/self/mountinfo`, held for the life of the process) and thread exist from
/// the start instead of appearing in the middle of a caller's work.
pub fn prepare() {
    #[cfg(all(target_os = "linux", not(fairfs_portable)))]
    crate::locality::prepare();
}

/// Calling-thread calls that took longer than a call answered from memory can, each
/// pausing the fast paths on its mount for a while (`locality`).
pub fn slow_calls() -> u64 {
    #[cfg(all(target_os = "linux", not(fairfs_portable)))]
    return crate::locality::SLOW_CALLS.load(Ordering::Relaxed);
    #[cfg(not(all(target_os = "linux", not(fairfs_portable))))]
    0
}

/// Hits and misses of the `readFile` and `stat` fast paths, process-wide.
pub static HITS: AtomicU64 = AtomicU64::new(0);
pub static MISSES: AtomicU64 = AtomicU64::new(0);

fn count(hit: bool) {
    let counter = if hit { &HITS } else { &MISSES };
    counter.fetch_add(1, Ordering::Relaxed);
}

#[derive(Debug, PartialEq, Eq)]
pub enum Cached {
    /// The whole file, read without blocking.
    Hit(Vec<u8>),
    /// Not served here; read it through the pool.
    Miss,
    /// Opened here (with `O_NONBLOCK`), but no longer a regular file: the path was
    /// replaced by a FIFO or a device between the look and the open. The pool must
    /// read this fd and close it.
    Opened(crate::sys::Fd),
}

/// Reads `path` (opened with `flags`, which must not create or truncate) if it is a
/// regular file of 1..=`max_size` bytes whose lookup and data are cached.
pub fn try_read(path: &CStr, flags: i32, max_size: usize) -> Cached {
    let result = if enabled() { attempt(path, flags, max_size) } else { Cached::Miss };
    count(matches!(result, Cached::Hit(_)));
    result
}

/// Whether an open with `flags` only reads: it neither creates, truncates nor writes,
/// so doing it on the calling thread changes nothing a failed try would have to undo.
#[cfg(all(target_os = "linux", not(fairfs_portable)))]
fn only_reads(flags: i32) -> bool {
    flags & (libc::O_CREAT | libc::O_TRUNC | libc::O_WRONLY | libc::O_RDWR) == 0
}

#[cfg(all(target_os = "linux", not(fairfs_portable)))]
fn attempt(path: &CStr, flags: i32, max_size: usize) -> Cached {
    if !only_reads(flags) {
        return Cached::Miss;
    }
    let Some(probe) = look(path, libc::O_PATH) else { return Cached::Miss };
    let result = on_local(probe, Use::Content, || {
        // What the file is, before anything is opened: a FIFO, device or socket is the
        // pool's to open, and a big file would miss anyway.
        let st = sys::fstat(probe).ok()?;
        if !st.is_regular || st.size == 0 || st.size > max_size as u64 {
            return None;
        }
        // O_NONBLOCK: should the path have become a FIFO since the look, the open must
        // not wait for a writer; a leased file answers EAGAIN, a miss (the pool waits
        // for the lease as node:fs does). O_NOCTTY: a tty never becomes the
        // controlling terminal.
        let fd = sys::open_cached(path, flags | libc::O_NONBLOCK | libc::O_NOCTTY).ok()?;
        Some(read_whole(fd, max_size))
    })
    .flatten();
    let _ = sys::close(probe);
    result.unwrap_or(Cached::Miss)
}

/// The rest of [`attempt`], on the fd it opened: the whole file, or a miss.
#[cfg(all(target_os = "linux", not(fairfs_portable)))]
fn read_whole(fd: crate::sys::Fd, max_size: usize) -> Cached {
    let st = match sys::fstat(fd) {
        Ok(st) if !st.is_regular => return Cached::Opened(fd),
        Ok(st) => st,
        Err(_) => {
            let _ = sys::close(fd);
            return Cached::Miss;
        }
    };
    let result = (|| {
        let size = usize::try_from(st.size).ok()?;
        if size == 0 || size > max_size {
            return None;
        }
        let mut buf = Vec::with_capacity(size);
        // A short read means the data is not all cached (or the file changed): let
        // the pool read it properly.
        (sys::read_nowait(fd, &mut buf, size).ok()? == size).then_some(buf)
    })();
    let _ = sys::close(fd);
    result.map_or(Cached::Miss, Cached::Hit)
}

/// [`look`], for a metadata call made as `syscall`: the fd, or a miss the dentry cache
/// knows (the directory where the lookup stopped is local and allowed: `locality::local_miss`)
/// as that call's error, answered where a hit is, so that hits and misses of one call
/// take one route and complete in node:fs's order; `None`: ask the pool.
#[cfg(all(target_os = "linux", not(fairfs_portable)))]
fn look_or_miss(
    path: &CStr,
    flags: i32,
    syscall: crate::Syscall,
) -> Option<Result<crate::sys::Fd, crate::error::FsError>> {
    let mut miss = None;
    let fd =
        open_unless_lacking(&KERNEL_LACKS_OPENAT2, || sys::open_cached(path, flags).inspect_err(|e| miss = Some(e.os)));
    match (fd, miss) {
        (Some(fd), _) => Some(Ok(fd)),
        (None, Some(os)) if crate::locality::local_miss(path, os) => Some(Err(crate::error::FsError::new(os, syscall))),
        _ => None,
    }
}

/// Looks `path` up with `O_PATH` (plus `flags`), which opens nothing, if the lookup
/// is cached: the fd to ask what the file is and where it lies.
#[cfg(all(target_os = "linux", not(fairfs_portable)))]
fn look(path: &CStr, flags: i32) -> Option<crate::sys::Fd> {
    open_unless_lacking(&KERNEL_LACKS_OPENAT2, || sys::open_cached(path, flags))
}

/// Runs `calls` on this thread if `fd` lies on a local mount where it may `to` (the
/// guard allows it, and for contents the pool's opens there have earned trust), timing them
/// (`locality`); `None` otherwise.
#[cfg(all(target_os = "linux", not(fairfs_portable)))]
fn on_local<T>(fd: crate::sys::Fd, to: Use, calls: impl FnOnce() -> T) -> Option<T> {
    let mount = crate::locality::local_mount(fd, to)?;
    Some(crate::locality::timed(mount, calls))
}

/// A pool thread opened `fd` by path, in `took`: how the calling thread learns which
/// mounts answer opens quickly (`crate::locality`'s probation).
pub fn observe_pool_open(fd: crate::sys::Fd, took: std::time::Duration) {
    #[cfg(all(target_os = "linux", not(fairfs_portable)))]
    crate::locality::observe_open(fd, took);
    #[cfg(not(all(target_os = "linux", not(fairfs_portable))))]
    let _ = (fd, took);
}

#[cfg(not(all(target_os = "linux", not(fairfs_portable))))]
fn attempt(_path: &CStr, _flags: i32, _max_size: usize) -> Cached {
    Cached::Miss
}

/// A stream's open on the calling thread: the fd of `path` (opened with `flags`, as the
/// pool's open would, without waiting) if it is a regular file whose lookup is cached;
/// `None`, with nothing opened, for anything else.
///
/// It looks with `O_PATH` first, which opens nothing: a FIFO or a device is left to
/// the pool's open ([`crate::jobs::stream::OpenJob`]), which knows how to wait for them, and no FIFO's
/// writer is ever woken by an open we then close. Should the path change between the
/// look and the open into something not regular, that fd is handed over as the pool's
/// open would hand it (blocking again), and reads find out what it is.
pub fn open_regular(path: &CStr, flags: i32) -> Option<crate::sys::Fd> {
    #[cfg(all(target_os = "linux", not(fairfs_portable)))]
    {
        if !enabled() || !only_reads(flags) {
            return None;
        }
        let nonblocking = sys::nonblocking_open_flags(flags)?;
        let probe = look(path, libc::O_PATH)?;
        let fd = on_local(probe, Use::Content, || {
            if !sys::fstat(probe).is_ok_and(|st| st.is_regular) {
                return None;
            }
            let fd = sys::open_cached(path, nonblocking | libc::O_NOCTTY).ok()?;
            match sys::fstat(fd) {
                Ok(st) if !st.is_regular => {
                    let _ = sys::set_blocking(fd);
                }
                Ok(_) => {}
                Err(_) => {
                    let _ = sys::close(fd);
                    return None;
                }
            }
            Some(fd)
        })
        .flatten();
        let _ = sys::close(probe);
        fd
    }
    #[cfg(not(all(target_os = "linux", not(fairfs_portable))))]
    {
        let _ = (path, flags);
        None
    }
}

/// Reads into `buf` at `position` of `fd` on the calling thread if the data is in the
/// page cache (`preadv2(RWF_NOWAIT)`) and `fd` is on a local mount (FUSE asks its
/// daemon for the size first): the bytes read, which may be fewer than asked (the end
/// of the file, or only part cached); `None` where it would wait, fails, or the OS has
/// no such read. Then the pool reads it and reports any error.
pub fn read_at(fd: crate::sys::Fd, buf: &mut [u8], position: u64) -> Option<usize> {
    #[cfg(all(target_os = "linux", not(fairfs_portable)))]
    return on_local(fd, Use::Content, || sys::read_nowait_at(fd, buf, position).ok()).flatten();
    #[cfg(not(all(target_os = "linux", not(fairfs_portable))))]
    {
        let _ = (fd, buf, position);
        None
    }
}

/// Closes `fd`, which [`open_regular`] opened, on the calling thread if that cannot
/// wait: a file on a local file system that still has a name. The last close of an
/// unlinked file frees its blocks, which may take long; those, and anything else, are
/// left to the pool (`None`, with `fd` still open).
pub fn close_regular(fd: crate::sys::Fd) -> Option<Result<(), crate::error::FsError>> {
    #[cfg(all(target_os = "linux", not(fairfs_portable)))]
    {
        on_local(fd, Use::Metadata, || sys::link_count(fd).is_some_and(|links| links > 0).then(|| sys::close(fd)))
            .flatten()
    }
    #[cfg(not(all(target_os = "linux", not(fairfs_portable))))]
    {
        let _ = fd;
        None
    }
}

/// `fs.open` for reading on the calling thread: [`open_regular`]'s fd, made blocking
/// again, as node:fs's open leaves it (the caller's `F_GETFL` shows its own flags);
/// `None`, with nothing opened, where the pool or node:fs must open it.
pub fn open_for_caller(path: &CStr, flags: i32) -> Option<crate::sys::Fd> {
    let fd = open_regular(path, flags)?;
    match crate::sys::set_blocking(fd) {
        Ok(()) => Some(fd),
        Err(_) => {
            let _ = crate::sys::close(fd);
            None
        }
    }
}

/// `fs.close` of a caller's fd on the calling thread, as [`close_regular`] closes a
/// stream's, and only for an fd opened for reading alone: the last close of a file
/// opened for writing may start its write-out (ext4's `auto_da_alloc`) or flush it
/// (NFS), which the pool waits for. `None`, with `fd` still open, for anything else.
pub fn close_read_only(fd: crate::sys::Fd) -> Option<Result<(), crate::error::FsError>> {
    #[cfg(all(target_os = "linux", not(fairfs_portable)))]
    {
        if !enabled() || !sys::opened_read_only(fd) {
            return None;
        }
        close_regular(fd)
    }
    #[cfg(not(all(target_os = "linux", not(fairfs_portable))))]
    {
        let _ = fd;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::test_files::c_path as c;

    /// Opens `file` as a pool thread would until its mount has earned the calling
    /// thread's trust (`locality`'s probation: quick opens in a row).
    #[cfg(all(target_os = "linux", not(fairfs_portable)))]
    fn earn_trust(file: &std::path::Path) {
        for _ in 0..100 {
            let started = std::time::Instant::now();
            let fd = sys::open(&c(file), libc::O_RDONLY, 0).unwrap();
            observe_pool_open(fd, started.elapsed());
            sys::close(fd).unwrap();
        }
    }

    #[cfg(all(target_os = "linux", not(fairfs_portable)))]
    #[test]
    fn cached_small_files_hit_and_everything_else_misses() {
        let dir = std::env::temp_dir().join(format!("fairfs-cached-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let small = dir.join("small");
        std::fs::write(&small, b"hello").unwrap();
        let _ = std::fs::read(&small); // in the page cache now
        earn_trust(&small);
        match try_read(&c(&small), libc::O_RDONLY, 1024) {
            Cached::Hit(data) => assert_eq!(data, b"hello"),
            // Kernels before 5.12 (or seccomp filters) refuse openat2: the fast path
            // is then off by nature, and every call must miss cleanly.
            Cached::Miss => assert!(sys::open_cached(&c(&small), libc::O_RDONLY).is_err()),
            Cached::Opened(_) => panic!("a regular file is never handed over"),
        }
        assert_eq!(try_read(&c(&small), libc::O_RDONLY, 4), Cached::Miss, "over max_size");
        assert_eq!(try_read(&c(&dir), libc::O_RDONLY, 1024), Cached::Miss, "a directory: the pool reports EISDIR");
        assert_eq!(try_read(&c(&dir.join("missing")), libc::O_RDONLY, 1024), Cached::Miss);
        assert_eq!(try_read(c"/proc/self/status", libc::O_RDONLY, 1 << 20), Cached::Miss, "size 0");
        assert_eq!(try_read(&c(&small), libc::O_RDWR, 1024), Cached::Miss, "writable flags");
        let empty = dir.join("empty");
        std::fs::write(&empty, b"").unwrap();
        assert_eq!(try_read(&c(&empty), libc::O_RDONLY, 1024), Cached::Miss);
        // A FIFO or a device is never opened here: the pool opens it.
        let fifo = dir.join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        assert_eq!(try_read(&c(&fifo), libc::O_RDONLY, 1024), Cached::Miss, "a FIFO");
        assert_eq!(try_read(c"/dev/null", libc::O_RDONLY, 1024), Cached::Miss, "a device");
        assert_eq!(try_read(c"/proc/self/status", libc::O_RDONLY, 1 << 20), Cached::Miss, "procfs is not local");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(all(target_os = "linux", not(fairfs_portable)))]
    #[test]
    fn a_stream_opens_and_reads_a_cached_regular_file_here_and_nothing_else() {
        let dir = std::env::temp_dir().join(format!("fairfs-cached-stream-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("small");
        std::fs::write(&file, b"hello, world").unwrap();
        let _ = std::fs::read(&file);
        earn_trust(&file);
        let Some(fd) = open_regular(&c(&file), libc::O_RDONLY) else {
            // No openat2 (before Linux 5.12, or a seccomp filter): always a clean miss.
            assert!(sys::open_cached(&c(&file), libc::O_RDONLY).is_err());
            return std::fs::remove_dir_all(&dir).unwrap();
        };
        let mut buf = [0u8; 5];
        assert_eq!(read_at(fd, &mut buf, 7), Some(5));
        assert_eq!(&buf, b"world");
        assert_eq!(read_at(fd, &mut buf, 10), Some(2), "short at the end of the file");
        assert_eq!(read_at(fd, &mut buf, 12), Some(0), "the end");
        assert!(matches!(close_regular(fd), Some(Ok(()))), "a named file on a local file system closes here");
        assert!(sys::fstat(fd).is_err(), "closed");
        // Unlinked, its last close frees its blocks: that is the pool's to do.
        let fd = open_regular(&c(&file), libc::O_RDONLY).unwrap();
        std::fs::remove_file(&file).unwrap();
        assert!(close_regular(fd).is_none());
        assert!(sys::fstat(fd).is_ok(), "left open for the pool");
        sys::close(fd).unwrap();
        std::fs::write(&file, b"hello, world").unwrap();
        assert_eq!(open_regular(&c(&file), libc::O_RDWR), None, "writable flags");
        assert_eq!(open_regular(&c(&dir), libc::O_RDONLY), None, "a directory: the pool's open reports it");
        assert_eq!(open_regular(&c(&dir.join("missing")), libc::O_RDONLY), None);
        // A FIFO is not opened at all (O_PATH looks without opening): a writer waiting
        // for a reader stays waiting, and the pool's open handles it.
        let fifo = dir.join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let (tx, rx) = std::sync::mpsc::channel();
        let writer_path = fifo.clone();
        let writer = std::thread::spawn(move || {
            let opened = std::fs::OpenOptions::new().write(true).open(&writer_path);
            tx.send(()).unwrap();
            drop(opened);
        });
        assert_eq!(open_regular(&c(&fifo), libc::O_RDONLY), None);
        assert!(rx.recv_timeout(std::time::Duration::from_millis(100)).is_err(), "the writer still waits");
        // Let the writer go: a reader that opens and closes.
        drop(std::fs::File::open(&fifo).unwrap());
        rx.recv().unwrap();
        writer.join().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_kernel_without_openat2_is_asked_once() {
        use crate::error::{FsError, Syscall};
        let lacks = AtomicBool::new(false);
        let calls = std::cell::Cell::new(0);
        let answer = |errno| {
            calls.set(calls.get() + 1);
            Err(FsError::new(errno, Syscall::Open))
        };
        // A cold lookup or a missing file says nothing about the kernel.
        for errno in [libc::EAGAIN, libc::ENOENT, libc::EACCES] {
            assert_eq!(open_unless_lacking(&lacks, || answer(errno)), None);
        }
        assert_eq!(calls.get(), 3);
        assert!(!lacks.load(Ordering::Relaxed));
        assert_eq!(open_unless_lacking(&lacks, || Ok(7)), Some(7));
        for errno in [libc::ENOSYS, libc::EINVAL] {
            let lacks = AtomicBool::new(false);
            calls.set(0);
            assert_eq!(open_unless_lacking(&lacks, || answer(errno)), None);
            assert_eq!(open_unless_lacking(&lacks, || answer(errno)), None);
            assert_eq!(calls.get(), 1, "errno {errno}: asked once, then remembered");
        }
    }

    #[cfg(not(all(target_os = "linux", not(fairfs_portable))))]
    #[test]
    fn without_the_linux_calls_every_read_misses() {
        let p = std::env::temp_dir().join(format!("fairfs-cached-portable-{}", std::process::id()));
        std::fs::write(&p, b"hello").unwrap();
        let _ = std::fs::read(&p);
        let misses = MISSES.load(Ordering::Relaxed);
        assert_eq!(try_read(&c(&p), 0, 1024), Cached::Miss);
        assert_eq!(MISSES.load(Ordering::Relaxed), misses + 1, "counted as a miss");
        assert_eq!(HITS.load(Ordering::Relaxed), 0);
        std::fs::remove_file(p).unwrap();
    }
}
