//! Errors in node:fs's vocabulary.
//!
//! node:fs reports an OS error as `errno` (libuv's negative error number), `code`,
//! `syscall` and, for calls that take a path, `path`, with the message
//! `"<CODE>: <libuv description>, <syscall>[ '<path>']"`. The core keeps the raw OS
//! error and the syscall; [`FsError::uv_errno`] gives libuv's number, from which the
//! JS side names the error with `util.getSystemErrorMap()`, the table node:fs itself
//! uses, so no list of names is kept here.

use std::fmt;

/// Raw OS error codes the core reports without a failed call (a failed allocation, a
/// cancelled part), in the OS's own numbering so that [`FsError::uv_errno`]
/// translates them like any other.
#[cfg(unix)]
pub mod code {
    pub const NO_MEMORY: i32 = libc::ENOMEM;
    pub const CANCELLED: i32 = libc::ECANCELED;
    /// For failures std reports without an OS error (not expected from file calls).
    pub const IO: i32 = libc::EIO;
}

/// Win32 error codes, see above; each is one libuv translates (`uv_translate_sys_error`).
#[cfg(windows)]
pub mod code {
    pub const NO_MEMORY: i32 = 8; // ERROR_NOT_ENOUGH_MEMORY -> ENOMEM
    pub const CANCELLED: i32 = 995; // ERROR_OPERATION_ABORTED -> ECANCELED
    pub const IO: i32 = 31; // ERROR_GEN_FAILURE -> EIO
    pub const BAD_FD: i32 = 6; // ERROR_INVALID_HANDLE -> EBADF
    pub const TOO_MANY_FILES: i32 = 4; // ERROR_TOO_MANY_OPEN_FILES -> EMFILE
    pub const INVALID_NAME: i32 = 123; // ERROR_INVALID_NAME -> ENOENT
    pub const BROKEN_PIPE: i32 = 109; // ERROR_BROKEN_PIPE: end of file
    pub const SEEK_ON_DEVICE: i32 = 132; // ERROR_SEEK_ON_DEVICE -> ESPIPE (ours, see uv_from_win32)
}

/// The system call that failed, named as node:fs names it in `err.syscall`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syscall {
    Open,
    Fstat,
    Read,
    Close,
    Stat,
    Lstat,
    Access,
    Realpath,
    Scandir,
    Write,
    Fsync,
    Fdatasync,
    Unlink,
    Rename,
    Mkdir,
    Copyfile,
}

impl Syscall {
    pub fn as_str(self) -> &'static str {
        match self {
            Syscall::Open => "open",
            Syscall::Fstat => "fstat",
            Syscall::Read => "read",
            Syscall::Close => "close",
            Syscall::Stat => "stat",
            Syscall::Lstat => "lstat",
            Syscall::Access => "access",
            Syscall::Realpath => "realpath",
            Syscall::Scandir => "scandir",
            Syscall::Write => "write",
            Syscall::Fsync => "fsync",
            Syscall::Fdatasync => "fdatasync",
            Syscall::Unlink => "unlink",
            Syscall::Rename => "rename",
            Syscall::Mkdir => "mkdir",
            Syscall::Copyfile => "copyfile",
        }
    }

    /// node:fs attaches `path` only to errors of calls that take a path.
    pub fn takes_path(self) -> bool {
        matches!(
            self,
            Syscall::Open
                | Syscall::Stat
                | Syscall::Lstat
                | Syscall::Access
                | Syscall::Realpath
                | Syscall::Scandir
                | Syscall::Unlink
                | Syscall::Rename
                | Syscall::Mkdir
                | Syscall::Copyfile
        )
    }
}

/// A failed system call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FsError {
    /// The raw OS error: an errno (`libc::ENOENT`, ...) on unix, a Win32 error code
    /// (`GetLastError`) on Windows.
    pub os: i32,
    pub syscall: Syscall,
}

impl FsError {
    pub fn new(os: i32, syscall: Syscall) -> Self {
        FsError { os, syscall }
    }

    /// The error the last failed OS call left on this thread.
    pub fn last(syscall: Syscall) -> Self {
        Self::from_io(&std::io::Error::last_os_error(), syscall)
    }

    /// The OS error behind `e` (`EIO` for the rare std error that has none).
    pub fn from_io(e: &std::io::Error, syscall: Syscall) -> Self {
        FsError { os: e.raw_os_error().unwrap_or(code::IO), syscall }
    }

    /// Memory for a read could not be allocated (`ENOMEM`).
    pub fn out_of_memory(syscall: Syscall) -> Self {
        FsError { os: code::NO_MEMORY, syscall }
    }

    /// The read was cancelled (`ECANCELED`).
    pub fn cancelled(syscall: Syscall) -> Self {
        FsError { os: code::CANCELLED, syscall }
    }

    /// The value node:fs puts in `err.errno`: libuv's error number, `-errno` on unix
    /// and libuv's translation of the Win32 error on Windows.
    pub fn uv_errno(&self) -> i32 {
        #[cfg(unix)]
        return -self.os;
        #[cfg(windows)]
        return uv_from_win32(self.os);
    }
}

/// libuv's Windows error numbers (`include/uv/errno.h`: on Windows every `UV_E*` is
/// one of these fixed values, not `-errno`).
#[cfg(any(windows, test))]
mod uv_win {
    pub const EOF: i32 = -4095;
    pub const UNKNOWN: i32 = -4094;
    pub const EACCES: i32 = -4092;
    pub const EBADF: i32 = -4083;
    pub const EBUSY: i32 = -4082;
    pub const ECANCELED: i32 = -4081;
    pub const ECONNRESET: i32 = -4077;
    pub const EEXIST: i32 = -4075;
    pub const EINVAL: i32 = -4071;
    pub const EIO: i32 = -4070;
    pub const EISDIR: i32 = -4068;
    pub const ELOOP: i32 = -4067;
    pub const EMFILE: i32 = -4066;
    pub const ENAMETOOLONG: i32 = -4064;
    pub const ENOENT: i32 = -4058;
    pub const ENOMEM: i32 = -4057;
    pub const ENOSPC: i32 = -4055;
    pub const ENOTCONN: i32 = -4053;
    pub const ENOTSUP: i32 = -4049;
    pub const EPERM: i32 = -4048;
    pub const EPIPE: i32 = -4047;
    pub const EROFS: i32 = -4043;
    pub const ESPIPE: i32 = -4041;
    pub const ETIMEDOUT: i32 = -4039;
}

/// libuv's `uv_translate_sys_error` (src/win/error.c) for the Win32 errors that
/// opening, stat-ing, reading and closing files can give, so node:fs and fairfs
/// name them alike. Everything else is `UV_UNKNOWN`, as in libuv, which has no
/// pass-through for positive system codes: node:fs shows `UNKNOWN: unknown error`
/// for those too. Codes whose translation changed between the libuv versions that
/// Node 20 to 24 bundle (`ERROR_NO_DATA`, `ERROR_NOACCESS`, `ERROR_BUFFER_OVERFLOW`)
/// are left out: none comes from file reads. `ERROR_HANDLE_EOF` and
/// `ERROR_BROKEN_PIPE` are end of file, which reads return as 0 (std's, and our
/// positional one of a pipe).
/// Compiled on every platform so that its tests run on Linux.
#[cfg(any(windows, test))]
fn uv_from_win32(code: i32) -> i32 {
    match code {
        1 => uv_win::EISDIR,                    // ERROR_INVALID_FUNCTION (ReadFile on a directory)
        2 | 3 => uv_win::ENOENT,                // ERROR_FILE_NOT_FOUND, ERROR_PATH_NOT_FOUND
        4 => uv_win::EMFILE,                    // ERROR_TOO_MANY_OPEN_FILES
        5 => uv_win::EPERM,                     // ERROR_ACCESS_DENIED (EPERM in libuv releases)
        6 | 1004 => uv_win::EBADF,              // ERROR_INVALID_HANDLE, ERROR_INVALID_FLAGS
        8 | 14 => uv_win::ENOMEM,               // ERROR_NOT_ENOUGH_MEMORY, ERROR_OUTOFMEMORY
        15 | 123 | 161 | 267 => uv_win::ENOENT, // ERROR_INVALID_DRIVE, _INVALID_NAME, _BAD_PATHNAME, _DIRECTORY
        4392 => uv_win::ENOENT,                 // ERROR_INVALID_REPARSE_DATA
        19 => uv_win::EROFS,                    // ERROR_WRITE_PROTECT
        23 | 31 | 1117 => uv_win::EIO,          // ERROR_CRC, ERROR_GEN_FAILURE, ERROR_IO_DEVICE
        32 | 33 | 231 => uv_win::EBUSY,         // ERROR_SHARING_VIOLATION, _LOCK_VIOLATION, _PIPE_BUSY
        50 => uv_win::ENOTSUP,                  // ERROR_NOT_SUPPORTED
        64 => uv_win::ECONNRESET,               // ERROR_NETNAME_DELETED (a network share went away)
        80 | 183 => uv_win::EEXIST,             // ERROR_FILE_EXISTS, ERROR_ALREADY_EXISTS
        87 => uv_win::EINVAL,                   // ERROR_INVALID_PARAMETER
        109 => uv_win::EOF,                     // ERROR_BROKEN_PIPE
        112 => uv_win::ENOSPC,                  // ERROR_DISK_FULL
        121 => uv_win::ETIMEDOUT,               // ERROR_SEM_TIMEOUT
        132 => uv_win::ESPIPE,                  // ERROR_SEEK_ON_DEVICE (ours for a pipe's positional read)
        206 => uv_win::ENAMETOOLONG,            // ERROR_FILENAME_EXCED_RANGE
        230 | 233 => uv_win::EPIPE,             // ERROR_BAD_PIPE, ERROR_PIPE_NOT_CONNECTED
        740 | 1920 => uv_win::EACCES,           // ERROR_ELEVATION_REQUIRED, ERROR_CANT_ACCESS_FILE
        995 => uv_win::ECANCELED,               // ERROR_OPERATION_ABORTED
        1314 => uv_win::EPERM,                  // ERROR_PRIVILEGE_NOT_HELD
        1921 => uv_win::ELOOP,                  // ERROR_CANT_RESOLVE_FILENAME (symlink loop)
        2250 => uv_win::ENOTCONN,               // ERROR_NOT_CONNECTED
        _ => uv_win::UNKNOWN,                   // incl. ERROR_FILE_TOO_LARGE (223): libuv has no mapping
    }
}

impl fmt::Display for FsError {
    /// The syscall and the OS's own text, e.g. `open: No such file or directory (os
    /// error 2)`. Node users get node's message, built in JS from [`FsError::uv_errno`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.syscall.as_str(), std::io::Error::from_raw_os_error(self.os))
    }
}

impl std::error::Error for FsError {}

/// Why a read did not produce a result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadError {
    /// A system call failed.
    Io(FsError),
    /// The file is larger than the caller's limit: `limit` is the one that applied
    /// (for files of known size `buffer.constants.MAX_LENGTH` in Node, for sources of
    /// unknown size 2 GiB - 1 by default). `size` is the fstat size, or the bytes read
    /// so far for sources of unknown size.
    TooLarge { size: u64, limit: u64 },
    /// The request was cancelled before it completed.
    Cancelled,
    /// A pool thread panicked while running the request (a bug in fairfs): the
    /// request fails, and nothing else does. The panic message went to stderr.
    Panicked,
}

impl From<FsError> for ReadError {
    fn from(e: FsError) -> Self {
        ReadError::Io(e)
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Io(e) => e.fmt(f),
            ReadError::TooLarge { size, .. } => {
                write!(f, "file size ({size}) is greater than the limit")
            }
            ReadError::Cancelled => f.write_str("the operation was aborted"),
            ReadError::Panicked => f.write_str("a fairfs pool thread panicked while reading"),
        }
    }
}

impl std::error::Error for ReadError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn unix_errors_are_negated_errnos() {
        let e = FsError::new(libc::ENOENT, Syscall::Open);
        assert_eq!(e.uv_errno(), -libc::ENOENT);
        assert_eq!(FsError::new(libc::EISDIR, Syscall::Read).uv_errno(), -libc::EISDIR);
        assert_eq!(FsError::cancelled(Syscall::Read).uv_errno(), -libc::ECANCELED);
        assert_eq!(FsError::out_of_memory(Syscall::Read).uv_errno(), -libc::ENOMEM);
        // What node's map names ENOENT and EISDIR on Linux, macOS and FreeBSD alike.
        assert_eq!(e.uv_errno(), -2);
        assert_eq!(FsError::new(libc::EISDIR, Syscall::Read).uv_errno(), -21);
    }

    #[cfg(unix)]
    #[test]
    fn display_names_the_syscall_and_the_os_error() {
        let e = FsError::new(libc::ENOENT, Syscall::Open);
        assert_eq!(e.to_string(), format!("open: {}", std::io::Error::from_raw_os_error(libc::ENOENT)));
        assert!(e.to_string().contains("(os error 2)"), "{e}");
        assert!(e.syscall.takes_path());
        assert!(!Syscall::Read.takes_path());
    }

    #[test]
    fn io_errors_keep_their_os_error() {
        let io = std::io::Error::from_raw_os_error(code::NO_MEMORY);
        assert_eq!(FsError::from_io(&io, Syscall::Read), FsError::out_of_memory(Syscall::Read));
        // std errors without an OS error (none expected from file calls) become EIO.
        let e = FsError::from_io(&std::io::ErrorKind::InvalidInput.into(), Syscall::Open);
        assert_eq!(e.os, code::IO);
    }

    #[test]
    fn win32_errors_translate_as_libuv_does() {
        // Values from libuv's include/uv/errno.h (Windows) and src/win/error.c.
        assert_eq!(uv_from_win32(2), -4058, "ERROR_FILE_NOT_FOUND is ENOENT");
        assert_eq!(uv_from_win32(3), -4058, "ERROR_PATH_NOT_FOUND is ENOENT");
        assert_eq!(uv_from_win32(1), -4068, "ERROR_INVALID_FUNCTION is EISDIR");
        assert_eq!(uv_from_win32(5), -4048, "ERROR_ACCESS_DENIED is EPERM");
        assert_eq!(uv_from_win32(6), -4083, "ERROR_INVALID_HANDLE is EBADF");
        assert_eq!(uv_from_win32(4), -4066, "ERROR_TOO_MANY_OPEN_FILES is EMFILE");
        assert_eq!(uv_from_win32(32), -4082, "ERROR_SHARING_VIOLATION is EBUSY");
        assert_eq!(uv_from_win32(8), -4057, "ERROR_NOT_ENOUGH_MEMORY is ENOMEM");
        assert_eq!(
            uv_from_win32(132),
            -4041,
            "ERROR_SEEK_ON_DEVICE is ESPIPE, which a stream's read of a pipe turns on"
        );
        assert_eq!(uv_from_win32(995), -4081, "ERROR_OPERATION_ABORTED is ECANCELED");
        assert_eq!(uv_from_win32(223), -4094, "ERROR_FILE_TOO_LARGE is UNKNOWN in libuv");
        assert_eq!(uv_from_win32(0x7fff), -4094, "anything else is UNKNOWN");
    }
}
