//! Errors in node:fs's vocabulary.
//!
//! node:fs reports an OS error as `code`, `errno` (negative on POSIX), `syscall`
//! and, for calls that take a path, `path`, with the message
//! `"<CODE>: <libuv description>, <syscall>[ '<path>']"`. The core keeps the raw
//! errno and the syscall; [`FsError::code`] and [`FsError::description`] give
//! libuv's names so that any front end can build node's exact error.

use std::fmt;

use crate::errno_table::ERRNO_TABLE;

/// The system call that failed, named as node:fs names it in `err.syscall`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syscall {
    Open,
    Fstat,
    Read,
    Close,
}

impl Syscall {
    pub fn as_str(self) -> &'static str {
        match self {
            Syscall::Open => "open",
            Syscall::Fstat => "fstat",
            Syscall::Read => "read",
            Syscall::Close => "close",
        }
    }

    /// node:fs attaches `path` only to errors of calls that take a path.
    pub fn takes_path(self) -> bool {
        matches!(self, Syscall::Open)
    }
}

/// A failed system call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FsError {
    /// The positive OS errno (`libc::ENOENT`, ...).
    pub errno: i32,
    pub syscall: Syscall,
}

impl FsError {
    pub fn new(errno: i32, syscall: Syscall) -> Self {
        FsError { errno, syscall }
    }

    /// The error left in `errno` by the last failed libc call on this thread.
    pub fn last(syscall: Syscall) -> Self {
        let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO);
        FsError { errno, syscall }
    }

    /// libuv's code name, e.g. `"ENOENT"`; `"UNKNOWN"` for errnos libuv does not name.
    pub fn code(&self) -> &'static str {
        lookup(self.errno).map_or("UNKNOWN", |(code, _)| code)
    }

    /// libuv's description, e.g. `"no such file or directory"`.
    pub fn description(&self) -> &'static str {
        lookup(self.errno).map_or("unknown error", |(_, text)| text)
    }

    /// The value node:fs puts in `err.errno`: libuv's negated errno.
    pub fn node_errno(&self) -> i32 {
        -self.errno
    }
}

fn lookup(errno: i32) -> Option<(&'static str, &'static str)> {
    ERRNO_TABLE.iter().find(|(n, _, _)| *n == errno).map(|(_, code, text)| (*code, *text))
}

impl fmt::Display for FsError {
    /// node's message without the path suffix: `ENOENT: no such file or directory, open`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}, {}", self.code(), self.description(), self.syscall.as_str())
    }
}

impl std::error::Error for FsError {}

/// Why a read did not produce a result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadError {
    /// A system call failed.
    Io(FsError),
    /// The file is larger than the caller's limit (`buffer.constants.MAX_LENGTH` in
    /// Node). `size` is the fstat size, or the bytes read so far for files of unknown size.
    TooLarge { size: u64 },
    /// The request was cancelled before it completed.
    Cancelled,
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
            ReadError::TooLarge { size } => {
                write!(f, "file size ({size}) is greater than the limit")
            }
            ReadError::Cancelled => f.write_str("the operation was aborted"),
        }
    }
}

impl std::error::Error for ReadError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_errors_as_libuv_does() {
        let e = FsError::new(libc::ENOENT, Syscall::Open);
        assert_eq!(e.code(), "ENOENT");
        assert_eq!(e.node_errno(), -libc::ENOENT);
        assert_eq!(e.to_string(), "ENOENT: no such file or directory, open");
        let e = FsError::new(libc::EISDIR, Syscall::Read);
        assert_eq!(e.to_string(), "EISDIR: illegal operation on a directory, read");
        assert!(!e.syscall.takes_path());
    }

    #[test]
    fn unknown_errno_is_named_unknown() {
        let e = FsError::new(100_000, Syscall::Read);
        assert_eq!(e.code(), "UNKNOWN");
        assert_eq!(e.description(), "unknown error");
    }
}
