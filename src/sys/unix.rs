//! File I/O through libc, for every unix we build for (Linux, macOS, FreeBSD): the
//! calls libuv itself makes, so errors come out exactly as node:fs reports them.

use std::ffi::CStr;
use std::mem::MaybeUninit;

use super::{Fd, FileStat};
use crate::error::{FsError, Syscall};

/// Runs `f` until it does not fail with `EINTR`.
fn retry<T>(syscall: Syscall, mut f: impl FnMut() -> T, failed: impl Fn(&T) -> bool) -> Result<T, FsError> {
    loop {
        let r = f();
        if !failed(&r) {
            return Ok(r);
        }
        let e = FsError::last(syscall);
        if e.os != libc::EINTR {
            return Err(e);
        }
    }
}

/// `open(2)` with `O_CLOEXEC` added, as libuv does.
pub fn open(path: &CStr, flags: i32, mode: u32) -> Result<Fd, FsError> {
    // SAFETY: `path` is a valid NUL-terminated string for the duration of the call.
    retry(
        Syscall::Open,
        || unsafe { libc::open(path.as_ptr(), flags | libc::O_CLOEXEC, mode as libc::c_uint) },
        |fd| *fd < 0,
    )
}

pub fn fstat(fd: Fd) -> Result<FileStat, FsError> {
    let mut st = MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `st` is writable memory of the right size; fstat only writes into it.
    retry(Syscall::Fstat, || unsafe { libc::fstat(fd, st.as_mut_ptr()) }, |r| *r < 0)?;
    // SAFETY: fstat returned 0, so it filled `st`.
    let st = unsafe { st.assume_init() };
    let kind = st.st_mode & libc::S_IFMT;
    Ok(FileStat { is_regular: kind == libc::S_IFREG, is_fifo: kind == libc::S_IFIFO, size: st.st_size as u64 })
}

/// Clears `O_NONBLOCK`; `fcntl` is where an error would show, as `read` in node:fs.
pub fn set_blocking(fd: Fd) -> Result<(), FsError> {
    // SAFETY: fcntl on an fd we own, with integer arguments only.
    let flags = retry(Syscall::Read, || unsafe { libc::fcntl(fd, libc::F_GETFL) }, |r| *r < 0)?;
    if flags & libc::O_NONBLOCK != 0 {
        // SAFETY: as above.
        retry(Syscall::Read, || unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) }, |r| *r < 0)?;
    }
    Ok(())
}

/// `poll` for `POLLIN` (data, hang-up or error all end it) for up to `timeout_ms`.
/// On a FIFO read end opened before any writer, Linux reports neither data nor
/// hang-up until a writer has come, so this waits as a blocking `open` would have.
pub fn wait_readable(fd: Fd, timeout_ms: i32) -> Result<bool, FsError> {
    let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: `pfd` is one valid pollfd that poll reads and writes during the call.
    let ready = retry(Syscall::Read, || unsafe { libc::poll(&mut pfd, 1, timeout_ms) }, |r| *r < 0)?;
    Ok(ready > 0)
}

pub fn close(fd: Fd) -> Result<(), FsError> {
    // SAFETY: closing an fd we own; no Rust object refers to it afterwards.
    // EINTR is not retried: on Linux the fd is released even when close reports it.
    let r = unsafe { libc::close(fd) };
    if r < 0 {
        let e = FsError::last(Syscall::Close);
        if e.os != libc::EINTR {
            return Err(e);
        }
    }
    Ok(())
}

pub fn read_uninit(fd: Fd, dst: &mut [MaybeUninit<u8>], offset: Option<u64>) -> Result<usize, FsError> {
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
