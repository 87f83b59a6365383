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

/// `fsync(2)`, as libuv's `uv_fs_fsync`: on macOS `F_FULLFSYNC` (what reaches the disk
/// there), then plain `fsync` where the file system refuses it.
pub fn fsync(fd: Fd) -> Result<(), FsError> {
    #[cfg(target_os = "macos")]
    // SAFETY: fcntl with an integer command and no pointer arguments.
    if unsafe { libc::fcntl(fd, libc::F_FULLFSYNC) } == 0 {
        return Ok(());
    }
    // SAFETY: fsync takes an fd only.
    retry(Syscall::Fsync, || unsafe { libc::fsync(fd) })
}

/// `fdatasync(2)` (`fsync` where there is none, as libuv does on macOS).
pub fn fdatasync(fd: Fd) -> Result<(), FsError> {
    #[cfg(any(target_os = "linux", target_os = "freebsd"))]
    // SAFETY: fdatasync takes an fd only.
    return retry(Syscall::Fdatasync, || unsafe { libc::fdatasync(fd) });
    #[cfg(not(any(target_os = "linux", target_os = "freebsd")))]
    return fsync(fd).map_err(|e| FsError::new(e.os, Syscall::Fdatasync));
}

/// Runs `call` until it does not fail with `EINTR`.
fn retry(syscall: Syscall, mut call: impl FnMut() -> libc::c_int) -> Result<(), FsError> {
    loop {
        if call() == 0 {
            return Ok(());
        }
        let e = FsError::last(syscall);
        if e.os != libc::EINTR {
            return Err(e);
        }
    }
}

/// The most buffers one `writev(2)` takes (`IOV_MAX`; libuv sends at most this many).
const MAX_BUFFERS: usize = 1024;

/// One `writev(2)` (`pwritev(2)` at `offset`) of `bufs`, at most [`MAX_BUFFERS`] of
/// them, `EINTR` retried: the bytes the kernel took.
pub fn write_vectored(fd: Fd, bufs: &[&[u8]], offset: Option<u64>) -> Result<usize, FsError> {
    let iov: Vec<libc::iovec> = bufs
        .iter()
        .take(MAX_BUFFERS)
        .map(|b| libc::iovec { iov_base: b.as_ptr().cast_mut().cast(), iov_len: b.len() })
        .collect();
    // macOS has pwritev only from 11, and the binary loads on 10.13: there, a positional
    // write of several buffers is one pwrite per buffer (libuv emulates it so too).
    #[cfg(target_os = "macos")]
    if let Some(at) = offset {
        let mut done = 0usize;
        for b in bufs.iter().take(MAX_BUFFERS) {
            let n = loop {
                // SAFETY: `b` stays borrowed for the call; the kernel only reads it.
                let n = unsafe { libc::pwrite(fd, b.as_ptr().cast(), b.len(), (at + done as u64) as libc::off_t) };
                if n >= 0 {
                    break n as usize;
                }
                let e = FsError::last(Syscall::Write);
                if e.os == libc::EINTR {
                    continue;
                }
                if done > 0 {
                    return Ok(done);
                }
                return Err(e);
            };
            done += n;
            if n < b.len() {
                break;
            }
        }
        return Ok(done);
    }
    loop {
        // SAFETY: every iovec points at a slice that stays borrowed for the call, and
        // the kernel only reads from them.
        let n = unsafe {
            match offset {
                #[cfg(not(target_os = "macos"))]
                Some(at) => libc::pwritev(fd, iov.as_ptr(), iov.len() as libc::c_int, at as libc::off_t),
                _ => libc::writev(fd, iov.as_ptr(), iov.len() as libc::c_int),
            }
        };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = FsError::last(Syscall::Write);
        if e.os != libc::EINTR {
            return Err(e);
        }
    }
}

/// `ftruncate(2)`, as libuv's copyfile cuts its destination (opened without
/// `O_TRUNC`, so that copying a file onto itself destroys nothing). Its error is
/// reported as the write's.
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

/// Runs a path call that answers 0 or -1 with errno, `EINTR` retried.
fn path_call(syscall: Syscall, call: impl FnMut() -> libc::c_int) -> Result<(), FsError> {
    retry(syscall, call)
}

/// `unlink(2)`.
pub fn unlink(path: &std::ffi::CStr) -> Result<(), FsError> {
    // SAFETY: `path` is NUL-terminated for the duration of the call.
    path_call(Syscall::Unlink, || unsafe { libc::unlink(path.as_ptr()) })
}

/// `rename(2)`.
pub fn rename(from: &std::ffi::CStr, to: &std::ffi::CStr) -> Result<(), FsError> {
    // SAFETY: both paths are NUL-terminated for the duration of the call.
    path_call(Syscall::Rename, || unsafe { libc::rename(from.as_ptr(), to.as_ptr()) })
}

/// `mkdir(2)` with `mode` (before the umask).
pub fn mkdir(path: &std::ffi::CStr, mode: u32) -> Result<(), FsError> {
    // SAFETY: `path` is NUL-terminated for the duration of the call.
    path_call(Syscall::Mkdir, || unsafe { libc::mkdir(path.as_ptr(), mode as libc::mode_t) })
}

/// `fchmod(2)`, as libuv's copyfile sets the copy's mode: an `EPERM` on a CIFS share
/// (which refuses every `fchmod` unless mounted `noperm`) is no error.
pub fn fchmod_copy(fd: Fd, mode: u32) -> Result<(), FsError> {
    // SAFETY: fchmod takes an fd and a mode only.
    match retry(Syscall::Write, || unsafe { libc::fchmod(fd, mode as libc::mode_t) }) {
        #[cfg(target_os = "linux")]
        Err(e) if e.os == libc::EPERM && is_cifs(fd) => Ok(()),
        done => done,
    }
}

#[cfg(target_os = "linux")]
fn is_cifs(fd: Fd) -> bool {
    const CIFS_MAGIC: u32 = 0xFF53_4D42;
    let mut s = std::mem::MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: `s` is writable memory of the right size; fstatfs only writes into it.
    if unsafe { libc::fstatfs(fd, s.as_mut_ptr()) } != 0 {
        return false;
    }
    // SAFETY: fstatfs returned 0, so it filled `s`.
    unsafe { s.assume_init() }.f_type as u32 == CIFS_MAGIC
}

/// Clones `src` into `dst` (`FICLONE`: copy-on-write, no bytes copied) where the file
/// system can; `ENOSYS` where there is no such call.
pub fn clone_file(dst: Fd, src: Fd) -> Result<(), FsError> {
    #[cfg(target_os = "linux")]
    // SAFETY: FICLONE takes the source fd as its argument; no memory is passed.
    return retry(Syscall::Write, || unsafe { libc::ioctl(dst, libc::FICLONE as _, src) });
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (dst, src);
        Err(FsError::new(libc::ENOSYS, Syscall::Write))
    }
}

/// Copies up to `len` bytes of `src` at `offset` to `dst` at its position, in the
/// kernel where it can (`copy_file_range`, then `sendfile`, as libuv's sendfile does),
/// else through a buffer: the bytes copied, 0 at the end of `src`.
pub fn copy_range(src: Fd, dst: Fd, offset: u64, len: usize) -> Result<usize, FsError> {
    #[cfg(target_os = "linux")]
    {
        let mut off = offset as libc::loff_t;
        // Through syscall(2): glibc's wrapper needs 2.27, the release binary loads on 2.17.
        // SAFETY: `off` is a valid loff_t the kernel reads and updates; no other memory.
        let n = unsafe {
            libc::syscall(
                libc::SYS_copy_file_range,
                src,
                &mut off as *mut libc::loff_t,
                dst,
                std::ptr::null_mut::<libc::loff_t>(),
                len,
                0u32,
            )
        };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = FsError::last(Syscall::Write);
        // Not at all, not across these mounts, not on this file system (CIFS refuses
        // spuriously): sendfile, as libuv falls back (uv__fs_try_copy_file_range).
        let fall_back = match e.os {
            libc::ENOSYS | libc::EXDEV | libc::EOPNOTSUPP => true,
            libc::EPERM | libc::EACCES => is_cifs(dst),
            _ => false,
        };
        if !fall_back {
            return Err(e);
        }
        let mut off = offset as libc::off_t;
        // SAFETY: `off` is a valid off_t the kernel reads and updates; no other memory.
        let n = unsafe { libc::sendfile(dst, src, &mut off, len) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = FsError::last(Syscall::Write);
        // Where sendfile cannot, libuv copies through a buffer (uv__fs_sendfile_emul).
        if !matches!(e.os, libc::EINVAL | libc::EIO | libc::ENOTSOCK | libc::EXDEV) {
            return Err(e);
        }
    }
    let mut buf = vec![0u8; len.min(64 * 1024)];
    // SAFETY: `buf` is writable for its length; pread writes at most that much.
    let n = unsafe { libc::pread(src, buf.as_mut_ptr().cast(), buf.len(), offset as libc::off_t) };
    if n < 0 {
        return Err(FsError::last(Syscall::Write));
    }
    let n = n as usize;
    let mut done = 0;
    while done < n {
        done += match write(dst, &buf[done..n])? {
            0 => return Err(FsError::new(libc::EIO, Syscall::Write)),
            w => w,
        };
    }
    Ok(n)
}
