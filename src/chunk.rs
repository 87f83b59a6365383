//! The single operations a read stream is made of: open, read one chunk, close.
//!
//! A stream is a sequence of these, each one job on the fair pool, so streams and
//! `readFile` requests share the pool by the same deficit round robin.

use std::ffi::CStr;

use crate::buffer_pool::{BufferPool, PooledBytes};
use crate::error::{FsError, ReadError, Syscall};
use crate::read::MAX_READ_SYSCALL;
use crate::sys::{self, Fd};

/// An fd we opened and nobody has taken yet: closed on drop, so an open whose
/// requester has gone away (a terminated worker) does not leak it.
#[derive(Debug)]
pub struct OpenedFd(Fd);

impl OpenedFd {
    /// Hands the fd over; closing it is now the caller's job.
    pub fn into_raw(self) -> Fd {
        let fd = self.0;
        std::mem::forget(self);
        fd
    }
}

impl Drop for OpenedFd {
    fn drop(&mut self) {
        let _ = sys::close(self.0);
    }
}

/// Opens `path` with node-style numeric `flags` (plus `O_CLOEXEC`) and `mode`.
pub fn open(path: &CStr, flags: i32, mode: u32) -> Result<OpenedFd, ReadError> {
    Ok(OpenedFd(sys::open(path, flags, mode)?))
}

/// One read syscall of up to `len` bytes into a buffer from `buffers`: at `position`,
/// or at the fd's current position when `None` (fd streams, FIFOs). An empty result
/// means end of file.
pub fn read(
    fd: Fd,
    position: Option<u64>,
    len: usize,
    buffers: Option<&'static BufferPool>,
) -> Result<PooledBytes, ReadError> {
    let len = len.clamp(1, MAX_READ_SYSCALL);
    let mut buf = PooledBytes::with_capacity(len, buffers);
    if buf.vec_mut().capacity() < len {
        return Err(ReadError::Io(FsError::out_of_memory(Syscall::Read)));
    }
    sys::read_into(fd, buf.vec_mut(), len, position)?;
    Ok(buf)
}

pub fn close(fd: Fd) -> Result<(), ReadError> {
    Ok(sys::close(fd)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;

    #[test]
    fn open_read_at_positions_and_close() {
        let p = std::env::temp_dir().join(format!("fairfs-chunk-{}", std::process::id()));
        std::fs::write(&p, b"0123456789").unwrap();
        let path = CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        let fd = open(&path, libc::O_RDONLY, 0).unwrap().into_raw();
        assert_eq!(read(fd, Some(3), 4, None).unwrap(), b"3456");
        assert_eq!(read(fd, None, 4, None).unwrap(), b"0123", "current position is still 0");
        assert_eq!(read(fd, None, 100, None).unwrap(), b"456789");
        assert!(read(fd, None, 100, None).unwrap().is_empty());
        close(fd).unwrap();
        assert_eq!(read(fd, None, 1, None), Err(ReadError::Io(FsError::new(libc::EBADF, Syscall::Read))));
        // Dropping an OpenedFd closes it (checked by path: fd numbers get reused).
        let dropped = open(&path, libc::O_RDONLY, 0).unwrap();
        assert_eq!(crate::read::tests::fds_open_on(&p), 1);
        drop(dropped);
        assert_eq!(crate::read::tests::fds_open_on(&p), 0);
        std::fs::remove_file(p).unwrap();
    }
}
