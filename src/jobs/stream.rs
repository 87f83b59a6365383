//! The single operations a read stream is made of: open, read one block, close.
//!
//! A stream is a sequence of these, each one job on the fair pool, so streams and
//! `readFile` requests share the pool by the same deficit round robin. A stream's
//! blocks form one keyed flow ([`crate::scheduler`]), and a block is read in steps of
//! at most the chunk size ([`BlockJob`]), so a stream gets what one `readFile` gets.

use std::ffi::CStr;

use crate::error::{FsError, ReadError, Syscall};
use crate::memory::buffer_pool::{BufferPool, PooledBytes};

use crate::job::{CancelFlag, Job, Piece, Step, Wait, Waits};
use crate::memory::lent::Filled;
use crate::parts::{Part, Parts};
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
    /// Unclaimed (its stream destroyed, its environment gone), it may be dropped on
    /// the JS thread: the close goes to a closer thread ([`crate::closer`]).
    fn drop(&mut self) {
        let fd = self.0;
        crate::closer::later(move || {
            let _ = sys::close(fd);
        });
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
        // Never waits for a FIFO's writer here; waits for a lease as node:fs does.
        let started = std::time::Instant::now();
        let (fd, nonblocking) = sys::open_for_read(&self.path, self.flags, self.mode)?;
        crate::cached::observe_pool_open(fd, started.elapsed());
        let fd = OpenedFd(fd);
        if !nonblocking {
            self.fd = Some(fd);
            return Ok(true);
        }
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
///
/// A positioned block of more than one step is read in [`Parts`], one step each, so
/// that a worker that would otherwise idle reads the next step while another reads
/// this one ([`Job::split`]): a lone stream is then read by every free worker, as a
/// lone big `readFile` is, instead of by one at a time.
pub struct BlockJob<D> {
    fd: Fd,
    position: Option<u64>,
    len: usize,
    step_max: usize,
    buffers: Option<&'static BufferPool>,
    /// The keyed flow of its stream.
    flow: Option<u64>,
    buf: Option<PooledBytes>,
    /// The block's buffer, handed out in steps, when it is read in parts.
    parts: Option<Parts>,
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
            parts: None,
            error: None,
            checked: position.is_some(),
            blocking: MayBlock::default(),
            on_done,
        }
    }

    /// Whether the block is read in parts: a stretch of a file, longer than a step.
    fn in_parts(&self) -> bool {
        self.position.is_some() && self.len > self.step_max
    }

    /// The block's buffer: pooled, or the out-of-memory error if none that big is had.
    fn buffer(&self) -> Result<PooledBytes, ReadError> {
        let mut buf = PooledBytes::with_capacity(self.len, self.buffers);
        if buf.vec_mut().capacity() < self.len {
            return Err(ReadError::Io(FsError::out_of_memory(Syscall::Read)));
        }
        Ok(buf)
    }

    /// The block's parts, made (with its buffer) on first use.
    fn parts(&mut self) -> Result<&mut Parts, ReadError> {
        if self.parts.is_none() {
            self.parts = Some(Parts::at(self.fd, self.buffer()?, self.position.unwrap_or(0), self.len));
        }
        Ok(self.parts.as_mut().expect("made above"))
    }

    /// One step; `Ok(true)` when the block is done.
    fn try_step(&mut self) -> Result<(bool, usize), ReadError> {
        if self.in_parts() {
            let step_max = self.step_max;
            let parts = self.parts()?;
            let n = parts.claim(step_max).map_or(0, |mut part| part.read());
            // Done once nothing is left to hand out (or a part met an error or the
            // end of the file); `complete` waits for parts other workers still read.
            return Ok((!parts.has_more(), n));
        }
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
        if self.buf.is_none() {
            self.buf = Some(self.buffer()?);
        }
        let len = self.len;
        let buf = self.buf.as_mut().expect("made above");
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

    /// The next step for another worker, while this block goes back in the queue;
    /// the last step is left to [`Job::step`].
    fn split(&mut self) -> Option<Piece> {
        if !self.in_parts() || self.error.is_some() {
            return None;
        }
        let step_max = self.step_max;
        // An allocation that fails is reported by the next step.
        self.parts().ok()?.claim_spare(step_max).map(Part::into_piece)
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
        let BlockJob { error, parts, buf, on_done, .. } = *self;
        // Parts wait for those other workers still read, so the caller hears of the
        // block only once nothing reads into it or from its fd.
        let outcome = match (error, parts, buf) {
            (Some(e), parts, _) => {
                drop(parts);
                Err(e)
            }
            (None, Some(parts), _) => match parts.finish() {
                Ok(Filled::Pooled(buf)) => Ok(buf),
                Ok(Filled::Lent(_)) => unreachable!("a block's parts fill pooled memory"),
                Err(e) => Err(ReadError::Io(e)),
            },
            (None, None, Some(buf)) => Ok(buf),
            (None, None, None) => Ok(PooledBytes::unpooled(Vec::new())),
        };
        on_done(Some(outcome));
    }

    fn cancel(self: Box<Self>) {
        let BlockJob { parts, buf, on_done, .. } = *self;
        // Frees the block (after any part in flight) before the caller may close the fd.
        drop(parts);
        drop(buf);
        on_done(None);
    }

    fn waits(&mut self) -> Option<&mut dyn Waits> {
        Some(&mut self.blocking)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_files::pattern;

    /// What a block job delivers: its bytes or error, or `None` if cancelled.
    type Delivered = Option<Result<PooledBytes, ReadError>>;
    type Outcome = std::sync::Arc<std::sync::Mutex<Option<Delivered>>>;

    /// A block job over `f` whose outcome lands in the returned slot.
    fn block(
        f: &std::fs::File,
        position: u64,
        len: usize,
        step_max: usize,
    ) -> (Box<BlockJob<impl FnOnce(Delivered) + Send + 'static>>, Outcome) {
        use std::os::fd::AsRawFd;
        let slot: Outcome = Default::default();
        let to = slot.clone();
        let on_done = move |o| *to.lock().unwrap() = Some(o);
        (Box::new(BlockJob::new(f.as_raw_fd(), Some(position), len, step_max, None, None, on_done)), slot)
    }

    /// A file holding `data`, open for reading; its name is gone already.
    fn file_of(name: &str, data: &[u8]) -> std::fs::File {
        let path = crate::test_files::temp_file(name, data);
        std::fs::File::open(&path).unwrap()
    }

    #[test]
    fn a_block_read_by_several_threads_at_once_is_the_stretch_of_the_file() {
        let data = pattern(300_000);
        let f = file_of("split", &data);
        let (mut job, outcome) = block(&f, 50_000, 100_000, 16_384);
        // Pieces for other threads until only the last step is left, as idle workers take them.
        let mut pieces = vec![];
        while let Some(piece) = job.split() {
            assert_eq!(piece.bytes, 16_384);
            pieces.push(piece);
        }
        assert_eq!(pieces.len(), 6, "100,000 bytes: six steps handed out, the seventh left to step()");
        let threads: Vec<_> = pieces.into_iter().map(|mut p| std::thread::spawn(move || (p.run)())).collect();
        let step = job.step();
        assert_eq!(step, Step { bytes: 100_000 - 6 * 16_384, done: true });
        let read: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
        assert_eq!(read, 6 * 16_384);
        job.complete();
        let got = outcome.lock().unwrap().take().expect("delivered").expect("not cancelled").unwrap();
        assert_eq!(got, &data[50_000..150_000]);
    }

    #[test]
    fn a_block_in_parts_past_the_end_of_the_file_ends_there() {
        let data = pattern(100_000);
        let f = file_of("end", &data);
        let (mut job, outcome) = block(&f, 60_000, 65_536, 16_384);
        let mut first = job.split().expect("a piece");
        (first.run)();
        drop(first);
        // Stepped alone from here: the file ends inside the second step.
        let mut steps = vec![];
        loop {
            let step = job.step();
            steps.push(step.bytes);
            if step.done {
                break;
            }
        }
        assert_eq!(steps, vec![16_384, 40_000 - 2 * 16_384], "nothing is read past the end");
        job.complete();
        let got = outcome.lock().unwrap().take().unwrap().unwrap().unwrap();
        assert_eq!(got, &data[60_000..]);
    }

    #[test]
    fn a_cancelled_block_tells_its_caller_only_after_its_pieces_are_done() {
        let data = pattern(200_000);
        let f = file_of("cancel", &data);
        let (mut job, outcome) = block(&f, 0, 200_000, 65_536);
        let mut piece = job.split().expect("a piece");
        let seen = outcome.clone();
        let reader = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            let delivered_before = seen.lock().unwrap().is_some();
            (piece.run)();
            drop(piece);
            delivered_before
        });
        job.cancel();
        assert!(matches!(*outcome.lock().unwrap(), Some(None)), "cancelled");
        assert!(!reader.join().unwrap(), "the caller heard of the cancellation while a piece still read");
    }

    #[test]
    fn a_block_of_a_pipe_in_parts_fails_with_espipe() {
        // The stream reads at the current position instead when a positioned read
        // meets ESPIPE (lib/read-stream.js): it must come back as that error.
        let (r, w) = std::io::pipe().unwrap();
        let f = std::fs::File::from(std::os::fd::OwnedFd::from(r));
        let (mut job, outcome) = block(&f, 0, 1 << 20, 65_536);
        let mut piece = job.split().expect("a piece");
        (piece.run)();
        drop(piece);
        while !job.step().done {}
        job.complete();
        drop(w);
        let got = outcome.lock().unwrap().take().unwrap().unwrap();
        assert_eq!(got.err(), Some(ReadError::Io(FsError::new(libc::ESPIPE, Syscall::Read))));
    }

    #[test]
    fn open_read_at_positions_and_close() {
        let p = std::env::temp_dir().join(format!("fairfs-chunk-{}", std::process::id()));
        std::fs::write(&p, b"0123456789").unwrap();
        let path = crate::test_files::c_path(&p);
        let fd = open(&path, libc::O_RDONLY, 0).unwrap().into_raw();
        assert_eq!(read(fd, Some(3), 4, None).unwrap(), b"3456");
        assert_eq!(read(fd, None, 4, None).unwrap(), b"0123", "current position is still 0");
        assert_eq!(read(fd, None, 100, None).unwrap(), b"456789");
        assert!(read(fd, None, 100, None).unwrap().is_empty());
        close(fd).unwrap();
        assert_eq!(read(fd, None, 1, None), Err(ReadError::Io(FsError::new(libc::EBADF, Syscall::Read))));
        // Dropping an OpenedFd closes it, on a closer thread (checked by path: fd
        // numbers get reused).
        let dropped = open(&path, libc::O_RDONLY, 0).unwrap();
        assert_eq!(crate::test_files::fds_open_on(&p), 1);
        drop(dropped);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while crate::test_files::fds_open_on(&p) > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(crate::test_files::fds_open_on(&p), 0);
        std::fs::remove_file(p).unwrap();
    }
}
