//! The single operations a read stream is made of: open, read one block, close.
//!
//! A stream is a sequence of these, each one job on the fair pool, so streams and
//! `readFile` requests share the pool by the same deficit round robin. A stream's
//! blocks form one keyed flow ([`crate::scheduler`]), and a block is read in steps of
//! at most the chunk size ([`BlockJob`]), so a stream gets what one `readFile` gets.

use std::ffi::CStr;

use crate::buffer_pool::{BufferPool, PooledBytes};
use crate::error::{FsError, ReadError, Syscall};

use crate::job::{CancelFlag, Job, Step, Wait, Waits};
use crate::read::{wait_readable, MAX_READ_SYSCALL};
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

/// What a stream operation on a source that may block (a FIFO, a device) asks of the
/// pool: a thread of its own once it `blocks`, and its cancellation flag to watch there.
#[derive(Default)]
struct MayBlock {
    blocks: bool,
    cancelled: Option<CancelFlag>,
}

impl Waits for MayBlock {
    fn wait(&self) -> Wait {
        if self.blocks {
            Wait::OwnThread
        } else {
            Wait::No
        }
    }

    fn watch_cancel(&mut self, cancelled: CancelFlag) {
        self.cancelled = Some(cancelled);
    }
}

/// A stream's open as a pool job. Opening a FIFO with no writer would wait in
/// `open(2)` on a pool worker; so a read-only open does not wait
/// (`sys::nonblocking_open_flags`), and a FIFO then waits for its writer's first
/// data or close on a thread of its own ([`Wait::OwnThread`]), where an abort ends
/// the wait within [`crate::read`]'s cancel check. Other fds go back to blocking.
pub struct OpenJob<D> {
    path: std::ffi::CString,
    flags: i32,
    mode: u32,
    fd: Option<OpenedFd>,
    error: Option<ReadError>,
    /// `blocks` once a FIFO was opened without waiting: it waits for a writer
    /// before it is handed over.
    blocking: MayBlock,
    on_done: D,
}

impl<D: FnOnce(Option<Result<OpenedFd, ReadError>>) + Send + 'static> OpenJob<D> {
    pub fn new(path: std::ffi::CString, flags: i32, mode: u32, on_done: D) -> Self {
        OpenJob { path, flags, mode, fd: None, error: None, blocking: MayBlock::default(), on_done }
    }

    /// One step; `Ok(true)` when the fd is ready to hand over.
    fn try_step(&mut self) -> Result<bool, ReadError> {
        if let Some(fd) = &self.fd {
            wait_readable(fd.0, self.blocking.cancelled.as_ref())?;
            self.blocking.blocks = false;
            sys::set_blocking(fd.0)?;
            return Ok(true);
        }
        let Some(nonblocking) = sys::nonblocking_open_flags(self.flags) else {
            self.fd = Some(open(&self.path, self.flags, self.mode)?);
            return Ok(true);
        };
        let fd = open(&self.path, nonblocking, self.mode)?;
        let st = sys::fstat(fd.0)?;
        if st.is_fifo {
            self.fd = Some(fd);
            self.blocking.blocks = true;
            return Ok(false);
        }
        if !st.is_regular {
            sys::set_blocking(fd.0)?;
        }
        self.fd = Some(fd);
        Ok(true)
    }
}

impl<D: FnOnce(Option<Result<OpenedFd, ReadError>>) + Send + 'static> Job for OpenJob<D> {
    fn step(&mut self) -> Step {
        match self.try_step() {
            Ok(done) => Step { bytes: 0, done },
            Err(e) => {
                self.error = Some(e);
                Step { bytes: 0, done: true }
            }
        }
    }

    fn complete(self: Box<Self>) {
        let this = *self;
        let outcome = match (this.error, this.fd) {
            (Some(e), _) => Err(e),
            (None, Some(fd)) => Ok(fd),
            (None, None) => unreachable!("an open that is done has an fd or an error"),
        };
        (this.on_done)(Some(outcome));
    }

    fn cancel(self: Box<Self>) {
        (self.on_done)(None);
    }

    fn waits(&mut self) -> Option<&mut dyn Waits> {
        Some(&mut self.blocking)
    }
}

/// One block of a read stream as a pool job: up to `len` bytes at `position`, read
/// in steps of at most `step_max` (the chunk size, also the DRR quantum), so that no
/// step of a stream is bigger than a `readFile`'s. A read at the fd's current
/// position (`position` `None`: an fd stream, a FIFO, a device) is one read syscall,
/// whatever it returns, as node:fs's; if the fd is not a regular file it runs on a
/// thread of its own ([`Wait::OwnThread`]), where waiting for data blocks nobody.
pub struct BlockJob<D> {
    fd: Fd,
    position: Option<u64>,
    len: usize,
    step_max: usize,
    buffers: Option<&'static BufferPool>,
    /// The keyed flow of its stream.
    flow: Option<u64>,
    buf: Option<PooledBytes>,
    error: Option<ReadError>,
    /// Whether a current-position read has looked at what the fd is.
    checked: bool,
    /// `blocks` once the fd is known not to be a regular file: reading may wait for
    /// any time.
    blocking: MayBlock,
    on_done: D,
}

impl<D: FnOnce(Option<Result<PooledBytes, ReadError>>) + Send + 'static> BlockJob<D> {
    pub fn new(
        fd: Fd,
        position: Option<u64>,
        len: usize,
        step_max: usize,
        buffers: Option<&'static BufferPool>,
        flow: Option<u64>,
        on_done: D,
    ) -> Self {
        let len = len.clamp(1, MAX_READ_SYSCALL);
        BlockJob {
            fd,
            position,
            len,
            step_max: step_max.max(1),
            buffers,
            flow,
            buf: None,
            error: None,
            checked: position.is_some(),
            blocking: MayBlock::default(),
            on_done,
        }
    }

    /// One step; `Ok(true)` when the block is done.
    fn try_step(&mut self) -> Result<(bool, usize), ReadError> {
        if !self.checked {
            self.checked = true;
            if !sys::fstat(self.fd)?.is_regular {
                self.blocking.blocks = true;
                // Nothing read: the pool sends it to a thread of its own first.
                return Ok((false, 0));
            }
        }
        if self.blocking.blocks {
            wait_readable(self.fd, self.blocking.cancelled.as_ref())?;
        }
        let (len, buffers) = (self.len, self.buffers);
        let buf = self.buf.get_or_insert_with(|| PooledBytes::with_capacity(len, buffers));
        if buf.vec_mut().capacity() < len {
            return Err(ReadError::Io(FsError::out_of_memory(Syscall::Read)));
        }
        let filled = buf.vec_mut().len();
        let want = (len - filled).min(self.step_max);
        let at = self.position.map(|p| p + filled as u64);
        let n = sys::read_into(self.fd, buf.vec_mut(), want, at)?;
        // A positioned read comes back short only at the end of the file.
        let done = self.position.is_none() || n < want || filled + n == len;
        Ok((done, n))
    }
}

impl<D: FnOnce(Option<Result<PooledBytes, ReadError>>) + Send + 'static> Job for BlockJob<D> {
    fn step(&mut self) -> Step {
        match self.try_step() {
            Ok((done, bytes)) => Step { bytes, done },
            Err(e) => {
                self.error = Some(e);
                Step { bytes: 0, done: true }
            }
        }
    }

    /// A block of more than one chunk is a big read's part, and counts against the
    /// big-read limit like one: a stream of a big file gets a big file's share.
    fn is_large(&self) -> bool {
        self.position.is_some() && self.len > self.step_max
    }

    fn flow(&self) -> Option<u64> {
        self.flow
    }

    fn complete(self: Box<Self>) {
        let this = *self;
        let outcome = match (this.error, this.buf) {
            (Some(e), _) => Err(e),
            (None, Some(buf)) => Ok(buf),
            (None, None) => Ok(PooledBytes::unpooled(Vec::new())),
        };
        (this.on_done)(Some(outcome));
    }

    fn cancel(self: Box<Self>) {
        (self.on_done)(None);
    }

    fn waits(&mut self) -> Option<&mut dyn Waits> {
        Some(&mut self.blocking)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_read_at_positions_and_close() {
        let p = std::env::temp_dir().join(format!("fairfs-chunk-{}", std::process::id()));
        std::fs::write(&p, b"0123456789").unwrap();
        let path = crate::read::tests::c_path(&p);
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
