//! File I/O through `std::fs::File`: what Windows gets, and what unix gets with
//! `--cfg fairfs_portable`, so that `cargo test` on Linux exercises it.
//!
//! The core passes integer fds around, as Node does: POSIX fds on unix, C runtime
//! fds on Windows (`_open_osfhandle` / `_get_osfhandle`). Only the small [`os`]
//! module below converts between an fd and a `File`; everything else is std and
//! runs the same on both.

use std::ffi::CStr;
use std::fs::OpenOptions;
use std::io::{self, Read};
use std::mem::MaybeUninit;

use super::{Fd, FileStat};
use crate::error::{FsError, Syscall};

/// Runs `f` until it does not fail with `EINTR` (std retries it only in `open`).
fn retry<T>(syscall: Syscall, mut f: impl FnMut() -> io::Result<T>) -> Result<T, FsError> {
    loop {
        match f() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r.map_err(|e| FsError::from_io(&e, syscall)),
        }
    }
}

/// `OpenOptions` for Node's numeric flags. Node passes its platform's
/// `fs.constants`: on Windows libuv's `UV_FS_O_*`, which are the C runtime's
/// `_O_*` values the libc crate has (`O_RDONLY` 0, `O_WRONLY` 1, `O_RDWR` 2,
/// `O_APPEND` 8, `O_CREAT` 0x100, `O_TRUNC` 0x200, `O_EXCL` 0x400).
///
/// std refuses combinations that open(2) and libuv accept (create or truncate
/// without write access: `EINVAL` / `ERROR_INVALID_PARAMETER`); node:fs's flag
/// strings never ask for them.
fn options(flags: i32, mode: u32) -> OpenOptions {
    let access = flags & (libc::O_WRONLY | libc::O_RDWR);
    let create = flags & libc::O_CREAT != 0;
    let mut opts = OpenOptions::new();
    opts.read(access != libc::O_WRONLY)
        .write(access != libc::O_RDONLY)
        .append(flags & libc::O_APPEND != 0)
        .truncate(flags & libc::O_TRUNC != 0)
        .create(create)
        .create_new(create && flags & libc::O_EXCL != 0);
    os::more_options(&mut opts, flags, mode);
    opts
}

pub fn open(path: &CStr, flags: i32, mode: u32) -> Result<Fd, FsError> {
    let path = os::path(path).map_err(|e| FsError::from_io(&e, Syscall::Open))?;
    let opts = options(flags, mode);
    let file = retry(Syscall::Open, || opts.open(&path))?;
    os::into_fd(file).map_err(|e| FsError::from_io(&e, Syscall::Open))
}

pub fn fstat(fd: Fd) -> Result<FileStat, FsError> {
    retry(Syscall::Fstat, || os::with_file(fd, os::stat))
}

pub fn close(fd: Fd) -> Result<(), FsError> {
    os::close(fd).map_err(|e| FsError::from_io(&e, Syscall::Close))
}

pub fn read_uninit(fd: Fd, dst: &mut [MaybeUninit<u8>], offset: Option<u64>) -> Result<usize, FsError> {
    // std reads only into initialised memory (reading into uninitialised bytes,
    // `Read::read_buf`, is unstable), so zero them first: one memset per chunk is
    // what this path costs over the libc one.
    dst.fill(MaybeUninit::new(0));
    // SAFETY: every byte of `dst` was just initialised, and `u8` has the layout of
    // `MaybeUninit<u8>`; the new slice borrows `dst` mutably, so nothing aliases it.
    let dst = unsafe { std::slice::from_raw_parts_mut(dst.as_mut_ptr().cast::<u8>(), dst.len()) };
    retry(Syscall::Read, || {
        os::with_file(fd, |file| match offset {
            Some(off) => os::read_at(file, dst, off),
            None => (&*file).read(dst),
        })
    })
}

#[cfg(unix)]
mod os {
    use std::ffi::{CStr, OsStr};
    use std::fs::{File, OpenOptions};
    use std::io;
    use std::mem::ManuallyDrop;
    use std::os::fd::{FromRawFd, IntoRawFd};
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    use std::path::PathBuf;

    use super::{Fd, FileStat};

    pub fn path(path: &CStr) -> io::Result<PathBuf> {
        Ok(OsStr::from_bytes(path.to_bytes()).into())
    }

    /// The mode, and the flags `OpenOptions` has no setter for (`O_NOFOLLOW`,
    /// `O_SYNC`, `O_DIRECT`, ...), passed to open(2) as they are. std adds `O_CLOEXEC`.
    pub fn more_options(opts: &mut OpenOptions, flags: i32, mode: u32) {
        let mut handled = libc::O_WRONLY | libc::O_RDWR | libc::O_APPEND | libc::O_CREAT | libc::O_TRUNC;
        if flags & libc::O_CREAT != 0 {
            handled |= libc::O_EXCL;
        }
        opts.mode(mode).custom_flags(flags & !handled);
    }

    pub fn into_fd(file: File) -> io::Result<Fd> {
        Ok(file.into_raw_fd())
    }

    /// Runs `f` on the open fd `fd`, which stays open: `EBADF` if it is not open.
    pub fn with_file<T>(fd: Fd, f: impl FnOnce(&File) -> io::Result<T>) -> io::Result<T> {
        // A `File` may only wrap an open fd, so check first, as Windows'
        // `_get_osfhandle` does. SAFETY: F_GETFD only reads the fd's flags.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is open (checked above) and the core closes an fd only after
        // its last read; ManuallyDrop leaves it open for its owner.
        let file = ManuallyDrop::new(unsafe { File::from_raw_fd(fd) });
        f(&file)
    }

    pub fn stat(file: &File) -> io::Result<FileStat> {
        let meta = file.metadata()?;
        Ok(FileStat { is_regular: meta.is_file(), is_fifo: false, size: meta.len() })
    }

    pub fn read_at(file: &File, dst: &mut [u8], offset: u64) -> io::Result<usize> {
        file.read_at(dst, offset)
    }

    pub fn close(fd: Fd) -> io::Result<()> {
        // SAFETY: closing an fd we own; no Rust object refers to it afterwards.
        if unsafe { libc::close(fd) } < 0 {
            let e = io::Error::last_os_error();
            // EINTR: the fd is released anyway (Linux), so do not close it again.
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        Ok(())
    }
}

#[cfg(windows)]
mod os {
    use std::ffi::CStr;
    use std::fs::{File, OpenOptions};
    use std::io;
    use std::mem::ManuallyDrop;
    use std::os::windows::fs::{FileExt, OpenOptionsExt};
    use std::os::windows::io::{FromRawHandle, IntoRawHandle, RawHandle};
    use std::path::PathBuf;

    use super::{Fd, FileStat};
    use crate::error::code;

    /// Node passes paths as UTF-8; std turns them into the wide paths Windows takes.
    pub fn path(path: &CStr) -> io::Result<PathBuf> {
        match path.to_str() {
            Ok(s) => Ok(s.into()),
            Err(_) => Err(io::Error::from_raw_os_error(code::INVALID_NAME)),
        }
    }

    /// What libuv's `fs__open` adds: `FILE_FLAG_BACKUP_SEMANTICS`, so that a
    /// directory opens and reading it fails with EISDIR as in node:fs (without it,
    /// opening fails with EPERM), and a read-only file when `O_CREAT`'s mode has no
    /// write bit. std shares read, write and delete, as libuv does.
    pub fn more_options(opts: &mut OpenOptions, flags: i32, mode: u32) {
        const FILE_FLAG_BACKUP_SEMANTICS: u32 = 0x0200_0000;
        const FILE_ATTRIBUTE_READONLY: u32 = 0x1;
        opts.custom_flags(FILE_FLAG_BACKUP_SEMANTICS);
        if flags & libc::O_CREAT != 0 && mode & 0o200 == 0 {
            opts.attributes(FILE_ATTRIBUTE_READONLY);
        }
    }

    /// A C runtime fd that owns `file`'s handle, as libuv gives Node.
    pub fn into_fd(file: File) -> io::Result<Fd> {
        let handle = file.into_raw_handle();
        // SAFETY: `handle` is an open handle we own; on success the fd owns it.
        let fd = unsafe { libc::open_osfhandle(handle as libc::intptr_t, 0) };
        if fd < 0 {
            // SAFETY: the C runtime did not take the handle, so it is still ours.
            drop(unsafe { File::from_raw_handle(handle) });
            return Err(io::Error::from_raw_os_error(code::TOO_MANY_FILES));
        }
        Ok(fd)
    }

    /// Runs `f` on the handle behind `fd`, which stays open: EBADF if there is none.
    pub fn with_file<T>(fd: Fd, f: impl FnOnce(&File) -> io::Result<T>) -> io::Result<T> {
        // SAFETY: `_get_osfhandle` only looks the fd up: INVALID_HANDLE_VALUE (-1)
        // for a closed fd, -2 for one without a handle (a GUI process's stdin).
        let handle = unsafe { libc::get_osfhandle(fd) };
        if handle == -1 || handle == -2 {
            return Err(io::Error::from_raw_os_error(code::BAD_FD));
        }
        // SAFETY: the handle is open as long as `fd` is, and the core closes an fd
        // only after its last read; ManuallyDrop leaves it open for the fd.
        let file = ManuallyDrop::new(unsafe { File::from_raw_handle(handle as RawHandle) });
        f(&file)
    }

    /// libuv's fstat reports pipes and character devices (`GetFileType`) as
    /// non-regular files of size 0, which node:fs reads to EOF; std's `metadata`
    /// fails on them, so a handle it cannot stat is read that way too. A real
    /// problem with the handle shows up in the read that follows.
    pub fn stat(file: &File) -> io::Result<FileStat> {
        Ok(match file.metadata() {
            Ok(meta) => FileStat { is_regular: meta.is_file(), is_fifo: false, size: meta.len() },
            Err(_) => FileStat { is_regular: false, is_fifo: false, size: 0 },
        })
    }

    /// `ReadFile` at `offset`. Unlike pread it also moves the handle's file pointer;
    /// the core never mixes positional and sequential reads of one fd.
    ///
    /// Only disk files have positions: `ReadFile` on a pipe or a console ignores the
    /// offset, so a stream's read-ahead (positional reads on several workers) could
    /// take a pipe's bytes out of order. Such a handle (one std cannot stat, see
    /// [`stat`]) fails as pread fails on a FIFO (ESPIPE), and the stream then reads at
    /// the current position, as on unix. A pipe whose writer closed is at its end,
    /// as libuv and std's sequential read take it.
    pub fn read_at(file: &File, dst: &mut [u8], offset: u64) -> io::Result<usize> {
        if file.metadata().is_err() {
            return Err(io::Error::from_raw_os_error(code::SEEK_ON_DEVICE));
        }
        match file.seek_read(dst, offset) {
            Err(e) if e.raw_os_error() == Some(code::BROKEN_PIPE) => Ok(0),
            r => r,
        }
    }

    pub fn close(fd: Fd) -> io::Result<()> {
        // SAFETY: closing an fd we own (and its handle); nothing refers to it afterwards.
        if unsafe { libc::close(fd) } < 0 {
            return Err(io::Error::from_raw_os_error(code::BAD_FD));
        }
        Ok(())
    }
}
