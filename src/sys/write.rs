//! The system calls of a write, as libuv makes them on every unix: `write(2)` at the
//! fd's position (node:fs passes `position: null` for every whole-file write), the
//! fd's flags (is it an append?), and `fsync(2)` for `flush`.

use super::Fd;
use crate::error::{FsError, Syscall};

/// One `write(2)` of `data` at the fd's current position, `EINTR` retried: the bytes
/// the kernel took, which may be fewer (a full disk, a file size limit, a pipe).
pub fn write(fd: Fd, data: &[u8]) -> Result<usize, FsError> {
    loop {
        // SAFETY: `data` is valid for reads of `data.len()` bytes for the whole call.
        let n = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = FsError::last(Syscall::Write);
        if e.os != libc::EINTR {
            return Err(e);
        }
    }
}

/// Whether `fd` was opened with `O_APPEND`: each `write(2)` on it lands whole at the
/// end of the file, so one caller's bytes must go in one call. An fd `fcntl` cannot
/// read fails here with node:fs's error for a write to it (`EBADF`, syscall `write`).
pub fn is_append(fd: Fd) -> Result<bool, FsError> {
    // SAFETY: fcntl with an integer command and no pointer arguments.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(FsError::last(Syscall::Write));
    }
    Ok(flags & libc::O_APPEND != 0)
}

/// `fsync(2)`, as libuv's `uv_fs_fsync` on Linux and FreeBSD. (macOS's libuv asks for
/// `F_FULLFSYNC` first; the write job is built for unix, and macOS takes it too.)
pub fn fsync(fd: Fd) -> Result<(), FsError> {
    loop {
        #[cfg(target_os = "macos")]
        // SAFETY: fcntl with an integer command and no pointer arguments.
        let r = unsafe { libc::fcntl(fd, libc::F_FULLFSYNC) };
        #[cfg(not(target_os = "macos"))]
        // SAFETY: fsync takes an fd only.
        let r = unsafe { libc::fsync(fd) };
        if r == 0 {
            return Ok(());
        }
        let e = FsError::last(Syscall::Fsync);
        if e.os != libc::EINTR {
            return Err(e);
        }
    }
}

/// `ftruncate(2)`: cuts a file rewritten in place to the bytes written. Its error is
/// reported as the write's (node:fs makes no such call; its `O_TRUNC` open cut first).
pub fn truncate(fd: Fd, len: u64) -> Result<(), FsError> {
    loop {
        // SAFETY: ftruncate takes an fd and a length only.
        let r = unsafe { libc::ftruncate(fd, len as libc::off_t) };
        if r == 0 {
            return Ok(());
        }
        let e = FsError::last(Syscall::Write);
        if e.os != libc::EINTR {
            return Err(e);
        }
    }
}
