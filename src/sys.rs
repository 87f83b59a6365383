//! The system calls a read needs, as safe functions.
//!
//! This is the only module of the core that calls libc. Each call retries on
//! `EINTR` and turns a failure into an [`FsError`] naming the syscall as node:fs does.

use std::ffi::CStr;
use std::mem::MaybeUninit;
use std::os::fd::RawFd;

use crate::error::{FsError, Syscall};

/// The part of `fstat` a read needs.
#[derive(Clone, Copy, Debug)]
pub struct FileStat {
    pub is_regular: bool,
    pub size: u64,
}

/// Retries `f` while it fails with `EINTR`.
fn retry<T>(syscall: Syscall, mut f: impl FnMut() -> T, failed: impl Fn(&T) -> bool) -> Result<T, FsError> {
    loop {
        let r = f();
        if !failed(&r) {
            return Ok(r);
        }
        let e = FsError::last(syscall);
        if e.errno != libc::EINTR {
            return Err(e);
        }
    }
}

/// `open(2)` with `O_CLOEXEC` added, as libuv does.
pub fn open(path: &CStr, flags: i32, mode: u32) -> Result<RawFd, FsError> {
    // SAFETY: `path` is a valid NUL-terminated string for the duration of the call.
    retry(
        Syscall::Open,
        || unsafe { libc::open(path.as_ptr(), flags | libc::O_CLOEXEC, mode as libc::c_uint) },
        |fd| *fd < 0,
    )
}

pub fn fstat(fd: RawFd) -> Result<FileStat, FsError> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `st` is writable memory of the right size; fstat only writes into it.
    retry(Syscall::Fstat, || unsafe { libc::fstat(fd, st.as_mut_ptr()) }, |r| *r < 0)?;
    // SAFETY: fstat returned 0, so it filled `st`.
    let st = unsafe { st.assume_init() };
    Ok(FileStat { is_regular: st.st_mode & libc::S_IFMT == libc::S_IFREG, size: st.st_size as u64 })
}

pub fn close(fd: RawFd) -> Result<(), FsError> {
    // SAFETY: closing an fd we own; no Rust object refers to it afterwards.
    // EINTR is not retried: on Linux the fd is released even when close reports it.
    let r = unsafe { libc::close(fd) };
    if r < 0 {
        let e = FsError::last(Syscall::Close);
        if e.errno != libc::EINTR {
            return Err(e);
        }
    }
    Ok(())
}

/// Reads up to `len` bytes into the spare capacity of `buf` and extends it by what
/// was read. `offset` selects `pread` at that offset; `None` reads at the fd's
/// current position, which also works for pipes and user-supplied fds.
///
/// Returns the number of bytes read; 0 means end of file.
pub fn read_into(fd: RawFd, buf: &mut Vec<u8>, len: usize, offset: Option<u64>) -> Result<usize, FsError> {
    let spare = buf.spare_capacity_mut();
    let len = len.min(spare.len());
    let n = read_uninit(fd, &mut spare[..len], offset)?;
    // SAFETY: the kernel initialised the first `n <= len` bytes of the spare capacity.
    unsafe { buf.set_len(buf.len() + n) };
    Ok(n)
}

/// One `read` (or `pread` at `offset`) into `dst`, which may be uninitialised.
/// Returns how many of its first bytes the kernel filled; 0 means end of file.
pub fn read_uninit(fd: RawFd, dst: &mut [MaybeUninit<u8>], offset: Option<u64>) -> Result<usize, FsError> {
    let (ptr, len) = (dst.as_mut_ptr().cast::<libc::c_void>(), dst.len());
    // SAFETY: `ptr` points at `len` writable bytes that nothing else aliases while
    // `dst` is mutably borrowed here; the kernel writes at most `len` of them.
    let n = retry(
        Syscall::Read,
        || unsafe {
            match offset {
                Some(off) => libc::pread(fd, ptr, len, off as libc::off_t),
                None => libc::read(fd, ptr, len),
            }
        },
        |n| *n < 0,
    )?;
    Ok(n as usize)
}

/// Sets the calling thread's nice value (Linux applies `setpriority` on a thread id
/// to that thread alone). Pool threads run a little below the event loop and
/// libuv's threads so that, when they compete for CPU, JS and zlib/crypto win.
#[cfg(target_os = "linux")]
pub fn set_thread_nice(nice: i32) -> Result<(), FsError> {
    // SAFETY: gettid has no preconditions; setpriority only changes scheduling.
    let r = unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, nice) };
    if r < 0 {
        return Err(FsError::last(Syscall::Open));
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
pub fn set_thread_nice(_nice: i32) -> Result<(), FsError> {
    Ok(())
}

/// `openat2` with `RESOLVE_CACHED`: opens only if the whole path lookup can be done
/// from the dentry cache, failing with `EAGAIN` where it would need I/O (Linux 5.12+;
/// older kernels answer `ENOSYS` or `EINVAL`).
#[cfg(target_os = "linux")]
pub fn open_cached(path: &CStr, flags: i32) -> Result<RawFd, FsError> {
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
    let fd = unsafe {
        libc::syscall(libc::SYS_openat2, libc::AT_FDCWD, path.as_ptr(), &how as *const OpenHow, size_of::<OpenHow>())
    };
    if fd < 0 {
        return Err(FsError::last(Syscall::Open));
    }
    Ok(fd as RawFd)
}

/// `preadv2` with `RWF_NOWAIT` at offset 0: reads only what is in the page cache,
/// failing with `EAGAIN` (or returning short) instead of waiting for the disk.
#[cfg(target_os = "linux")]
pub fn read_nowait(fd: RawFd, buf: &mut Vec<u8>, len: usize) -> Result<usize, FsError> {
    let spare = buf.spare_capacity_mut();
    let len = len.min(spare.len());
    let iov = libc::iovec { iov_base: spare.as_mut_ptr().cast(), iov_len: len };
    // SAFETY: `iov` describes `len` writable bytes of `buf`'s spare capacity, which
    // nothing else aliases while `buf` is mutably borrowed.
    let n = unsafe { libc::preadv2(fd, &iov, 1, 0, libc::RWF_NOWAIT) };
    if n < 0 {
        return Err(FsError::last(Syscall::Read));
    }
    // SAFETY: the kernel initialised the first `n <= len` bytes of the spare capacity.
    unsafe { buf.set_len(buf.len() + n as usize) };
    Ok(n as usize)
}

/// Asks the kernel to back the 2 MiB-aligned part of `mem` with transparent huge
/// pages (where THP is set to `madvise`): 512× fewer page faults on first touch and
/// fewer TLB misses while the kernel copies file data into it. Advice only.
#[cfg(target_os = "linux")]
pub fn advise_huge_pages(mem: &mut [MaybeUninit<u8>]) {
    const HUGE: usize = 2 << 20;
    let start = (mem.as_ptr() as usize).next_multiple_of(HUGE);
    let end = (mem.as_ptr() as usize + mem.len()) & !(HUGE - 1);
    if end > start {
        // SAFETY: [start, end) lies inside `mem`; MADV_HUGEPAGE changes no contents.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
    }
}

#[cfg(not(target_os = "linux"))]
pub fn advise_huge_pages(_mem: &mut [MaybeUninit<u8>]) {}
