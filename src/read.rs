//! The read algorithm: node:fs's `readFile` semantics as one small state machine.
//!
//! ```text
//!   Unopened --open+fstat--> Reading --read chunk--> Reading ... --EOF or size reached--> done
//! ```
//!
//! * A path is opened with the caller's flags; an fd is used as it is, read from its
//!   current position, and never closed.
//! * A regular file with a non-zero `fstat` size is read into one buffer of exactly
//!   that size. Reading stops at that size (a file that grew is cut there) or at the
//!   first 0-byte read (a file that shrank gives a shorter result).
//! * Anything else (size 0, pipes, FIFOs, `/proc`, character devices) is read until EOF.
//! * No single read asks for more than `chunk_size` bytes, and never 2^31 or more.
//!
//! Each [`FileRead::step`] reads at most one chunk, so the scheduler can interleave
//! requests chunk by chunk. The first step also opens and stats, so a small file
//! completes in one step: open, fstat, read, close on one pool thread.
//!
//! A file we opened whose size is known and spans several chunks is read in
//! [`Parts`]: [`FileRead::split`] hands the next chunk to another worker while the
//! read stays queued, so several workers can read one big file at once, each with
//! `pread` at its own offset.

use std::ffi::CString;

use crate::error::{FsError, ReadError, Syscall};
use crate::job::Wait;
use crate::job::{CancelFlag, MemoryAsker, Waits};
use crate::memory::buffer_pool::{BufferPool, PooledBytes};
use crate::memory::lent::{Filled, Lent};
use crate::parts::{Part, Parts};
use crate::sys::{self, Fd};

/// The largest read we ever ask the kernel for: Linux caps reads just below 2 GiB
/// and Node aborts on lengths of 2^31 or more.
pub const MAX_READ_SYSCALL: usize = (1 << 31) - 4096;

/// Bytes per read of a file of known size: node:fs's `readFile` chunk
/// (`kReadFileBufferLength`). The pool's default chunk and DRR quantum too.
pub const DEFAULT_CHUNK_SIZE: usize = 512 * 1024;

/// Bytes per read of a source of unknown size: node:fs's
/// (`kReadFileUnknownBufferLength`).
pub const UNSIZED_CHUNK_SIZE: usize = 64 * 1024;

/// Default bound on a source of unknown size: node:fs's own limit on a result
/// (`kIoMaxLength`, 2 GiB - 1), the same on every Node line, where
/// `buffer.constants.MAX_LENGTH` is 4 GiB on Node 20 and 2^53 - 1 from Node 22 (an
/// endless source then ran until the process was out of memory).
pub const DEFAULT_MAX_UNSIZED_LENGTH: u64 = (1 << 31) - 1;

/// What to read.
#[derive(Debug)]
pub enum Source {
    /// Open this path with `flags` and `mode`, and close it when done.
    Path { path: CString, flags: i32, mode: u32 },
    /// Read this caller-owned fd from its current position; never close it.
    Fd(Fd),
    /// An fd opened for us with `O_NONBLOCK` (by the fast path, which found it is not
    /// a regular file): read it as if we had opened the path, and close it.
    Opened(Fd),
}

/// Limits of one read.
#[derive(Clone, Copy, Debug)]
pub struct ReadLimits {
    /// Bytes per read syscall for files of known size.
    pub chunk_size: usize,
    /// Bytes per read syscall when the size is unknown ([`UNSIZED_CHUNK_SIZE`]).
    pub unknown_chunk_size: usize,
    /// Largest result allowed; bigger files fail with [`ReadError::TooLarge`].
    pub max_length: u64,
    /// Largest result from a source whose size fstat does not give (a pipe, FIFO,
    /// device, `/proc` file), which may never end; also at most `max_length`.
    pub max_unsized_length: u64,
    /// Where buffers for files of known size come from; `None` allocates each one.
    pub buffers: Option<&'static BufferPool>,
    /// The read runs under the pool's admission control ([`crate::policy::admission`]): a
    /// file of more than one chunk asks for its buffer's bytes ([`FileRead::wait`])
    /// before it allocates them, and an open that fails with EMFILE/ENFILE waits
    /// for a file to close instead of failing.
    pub admitted: bool,
}

impl Default for ReadLimits {
    fn default() -> Self {
        ReadLimits {
            chunk_size: DEFAULT_CHUNK_SIZE,
            unknown_chunk_size: UNSIZED_CHUNK_SIZE,
            max_length: u32::MAX as u64 + 1,
            max_unsized_length: DEFAULT_MAX_UNSIZED_LENGTH,
            buffers: None,
            admitted: false,
        }
    }
}

/// What one step did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// More to read; `bytes` were read in this step.
    More { bytes: usize },
    /// The result is complete; `bytes` were read in this step.
    Done { bytes: usize },
}

impl Progress {
    pub fn bytes(self) -> usize {
        match self {
            Progress::More { bytes } | Progress::Done { bytes } => bytes,
        }
    }
}

#[derive(Debug)]
enum State {
    Unopened,
    Reading(OpenFile),
    /// Taken by `finish`, or failed.
    Finished,
}

#[derive(Debug)]
struct OpenFile {
    fd: Fd,
    /// We opened it, so we close it (and may use `pread` at our own offsets).
    owned: bool,
    buf: PooledBytes,
    /// The fstat size of a regular file; `None` reads until EOF.
    expected: Option<usize>,
    /// For a file we opened of known size over one chunk: the chunks handed out so
    /// far, which other workers may be reading. The buffer lives in here then.
    parts: Option<Parts>,
    /// Its buffer is not allocated yet: a big file under admission control waits
    /// for its bytes to be granted first.
    unallocated: bool,
    /// A FIFO opened with `O_NONBLOCK`, whose first read must first find out whether
    /// a writer is there ([`sys::nonblocking_open_flags`]).
    fifo_unsettled: bool,
    /// Not a regular file (a FIFO, pipe, device): a read may wait for any time, so it
    /// runs on a thread of its own ([`Wait::OwnThread`]) and waits in `poll`, checking
    /// for cancellation, before each read.
    may_block: bool,
}

impl Drop for OpenFile {
    fn drop(&mut self) {
        // Failed and cancelled reads end here: the fd is closed and the buffer freed
        // as soon as the read is dropped, once parts that other workers are reading
        // are done with them (at most a chunk each). A close error has nobody left
        // to report to.
        drop(self.parts.take());
        if self.owned {
            let _ = sys::close(self.fd);
        }
    }
}

/// One `readFile` request, advanced one chunk at a time by [`FileRead::step`].
#[derive(Debug)]
pub struct FileRead {
    source: Source,
    state: State,
    limits: ReadLimits,
    /// Under admission control: the bytes of its buffer were granted.
    granted: bool,
    /// Under admission control: its last open failed with EMFILE/ENFILE.
    out_of_descriptors: bool,
    /// Under admission control: waiting for descriptors is over, the next open's
    /// error is final.
    gave_up: bool,
    /// Set when the request is cancelled; watched while waiting on a source that may
    /// block for any time.
    cancelled: Option<CancelFlag>,
    /// Memory its caller lends for a big file's result, if it does.
    lending: Lending,
}

/// Under admission control, a file we opened whose size is in `sizes`, read in parts,
/// is read into memory its caller lends ([`Wait::Memory`], [`Waits::lend`]).
#[derive(Default)]
struct Lending {
    sizes: Option<std::ops::Range<usize>>,
    /// Asks the caller for the memory, once.
    ask: Option<MemoryAsker>,
    /// The memory lent, until the buffer is allocated.
    lent: Option<Lent>,
}

impl std::fmt::Debug for Lending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lending").field("sizes", &self.sizes).field("lent", &self.lent).finish_non_exhaustive()
    }
}

impl Lending {
    /// Whether `file`, opened and granted its bytes, still waits for lent memory.
    fn wanted(&self, file: &OpenFile, granted: bool, chunk_size: usize) -> bool {
        let Some(size) = file.expected else { return false };
        let lends = self.sizes.as_ref().is_some_and(|sizes| sizes.contains(&size) && size > chunk_size);
        lends && file.unallocated && file.owned && granted && self.lent.is_none()
    }
}

/// What the pool asks of a read under admission control, and tells it.
impl Waits for FileRead {
    /// It opens a file of its own (a path, not a caller's fd) under admission control.
    fn opens_file(&self) -> bool {
        self.limits.admitted && self.opens_path()
    }

    /// Why it cannot take its next step yet, under admission control.
    fn wait(&self) -> Wait {
        match &self.state {
            State::Unopened if self.out_of_descriptors => Wait::FileClosed,
            State::Reading(OpenFile { unallocated: true, expected: Some(size), .. }) if !self.granted => {
                Wait::Bytes(*size as u64)
            }
            State::Reading(file) if self.lending.wanted(file, self.granted, self.limits.chunk_size) => {
                Wait::Memory(file.expected.unwrap_or(0) as u64)
            }
            State::Reading(OpenFile { may_block: true, .. }) => Wait::OwnThread,
            _ => Wait::No,
        }
    }

    /// The bytes [`Waits::wait`] asked for are granted.
    fn grant(&mut self) {
        self.granted = true;
    }

    fn memory_asker(&mut self) -> Option<MemoryAsker> {
        self.lending.ask.take()
    }

    /// The memory [`Wait::Memory`] asked for, at least the size it asked; `None` if the
    /// caller has none to lend (the read then allocates its own).
    fn lend(&mut self, memory: Option<Lent>) {
        match memory {
            Some(lent) => self.lending.lent = Some(lent),
            None => self.lending.sizes = None,
        }
    }

    /// Its bytes were refused: close our file so that it waits holding nothing. It
    /// opens again (and allocates at once, once granted) on its next step.
    fn suspend(&mut self) {
        // Only a path can be opened again; a caller's fd stays as it is.
        if self.opens_path() && matches!(self.state, State::Reading(OpenFile { owned: true, unallocated: true, .. })) {
            self.state = State::Unopened; // dropping the OpenFile closes it
        }
    }

    /// Waiting for descriptors is over: the next open reports its error.
    fn give_up(&mut self) {
        self.gave_up = true;
    }

    /// Watches `cancelled` while waiting on a source that may block for any time.
    fn watch_cancel(&mut self, cancelled: CancelFlag) {
        self.cancelled = Some(cancelled);
    }
}

impl Drop for FileRead {
    /// An fd handed to us ([`Source::Opened`]) is ours to close even if the read
    /// never started (cancelled while it waited).
    fn drop(&mut self) {
        if let (State::Unopened, Source::Opened(fd)) = (&self.state, &self.source) {
            let _ = sys::close(*fd);
        }
    }
}

impl FileRead {
    pub fn new(source: Source, limits: ReadLimits) -> Self {
        let chunk_size = limits.chunk_size.clamp(1, MAX_READ_SYSCALL);
        let unknown_chunk_size = limits.unknown_chunk_size.clamp(1, MAX_READ_SYSCALL);
        FileRead {
            source,
            state: State::Unopened,
            limits: ReadLimits { chunk_size, unknown_chunk_size, ..limits },
            granted: false,
            out_of_descriptors: false,
            gave_up: false,
            cancelled: None,
            lending: Lending::default(),
        }
    }

    /// Under admission control, reads a file we open whose size is in `sizes` and
    /// that spans several chunks into memory its caller lends: once its bytes are
    /// granted it waits ([`Wait::Memory`]) and `ask(size)` asks for the memory, which
    /// comes back through [`Waits::lend`].
    pub fn lend_for(&mut self, sizes: std::ops::Range<usize>, ask: MemoryAsker) {
        self.lending.sizes = Some(sizes);
        self.lending.ask = Some(ask);
    }

    /// Whether it opens a file of its own (a path, not a caller's fd).
    fn opens_path(&self) -> bool {
        matches!(self.source, Source::Path { .. })
    }

    /// Does the next piece of work: opening and stating on the first call, then one
    /// read syscall. After an error the read is finished and its fd closed.
    pub fn step(&mut self) -> Result<Progress, ReadError> {
        let result = self.try_step();
        if result.is_err() {
            self.state = State::Finished;
        }
        result
    }

    fn try_step(&mut self) -> Result<Progress, ReadError> {
        if let State::Unopened = self.state {
            // Under admission control a big file waits here for its bytes, first
            // unallocated, unless they were granted already (it waited and reopens),
            // and then, if its caller lends memory, for that.
            let defer = self.limits.admitted && (!self.granted || self.lending.sizes.is_some());
            self.out_of_descriptors = false;
            match open(&self.source, &self.limits, defer) {
                // A source that may block: stop here, so that the pool can move it to
                // a thread of its own before anything waits.
                Ok(file) if file.may_block => {
                    self.state = State::Reading(file);
                    return Ok(Progress::More { bytes: 0 });
                }
                Ok(file) => self.state = State::Reading(file),
                Err(ReadError::Io(e)) if self.limits.admitted && !self.gave_up && sys::is_out_of_descriptors(&e) => {
                    self.out_of_descriptors = true;
                    return Ok(Progress::More { bytes: 0 });
                }
                Err(e) => return Err(e),
            }
        }
        let State::Reading(file) = &mut self.state else {
            return Ok(Progress::Done { bytes: 0 });
        };
        if file.unallocated {
            if !self.granted || self.lending.wanted(file, self.granted, self.limits.chunk_size) {
                return Ok(Progress::More { bytes: 0 });
            }
            allocate(file, &self.limits, self.lending.lent.take())?;
        }
        if let Some(parts) = &mut file.parts {
            // The next chunk, read here. Once none is left to hand out, `finish`
            // waits for those other workers are reading and reports their errors.
            let bytes = parts.claim(self.limits.chunk_size).map_or(0, |mut p| p.read());
            return Ok(if parts.has_more() { Progress::More { bytes } } else { Progress::Done { bytes } });
        }
        let filled = file.buf.len();
        let (want, offset) = match file.expected {
            Some(size) => (self.limits.chunk_size.min(size - filled), file.owned.then_some(filled as u64)),
            None => {
                let limit = self.limits.max_unsized_length.min(self.limits.max_length);
                if filled as u64 >= limit {
                    // One byte past the limit proves the file is too large.
                    file.buf.vec_mut().try_reserve(1).map_err(|_| out_of_memory())?;
                    if sys::read_into(file.fd, file.buf.vec_mut(), 1, None)? > 0 {
                        return Err(ReadError::TooLarge { size: file.buf.len() as u64, limit });
                    }
                    return Ok(Progress::Done { bytes: 0 });
                }
                let room = (limit - filled as u64).min(self.limits.unknown_chunk_size as u64);
                file.buf.vec_mut().try_reserve(room as usize).map_err(|_| out_of_memory())?;
                (room as usize, None)
            }
        };
        if want == 0 {
            return Ok(Progress::Done { bytes: 0 });
        }
        if file.fifo_unsettled {
            return settle_fifo(file, want, self.cancelled.as_ref());
        }
        if file.may_block {
            wait_readable(file.fd, self.cancelled.as_ref())?;
        }
        let n = sys::read_into(file.fd, file.buf.vec_mut(), want, offset)?;
        let complete = n == 0 || file.expected == Some(file.buf.len());
        Ok(if complete { Progress::Done { bytes: n } } else { Progress::More { bytes: n } })
    }

    /// Whether this is a big file, read in parts.
    pub fn is_large(&self) -> bool {
        matches!(self.state, State::Reading(OpenFile { parts: Some(_), .. }))
    }

    /// Hands out the next chunk of a file read in parts, for another worker to read
    /// while this read goes on; `None` when there is none to spare. The last chunk
    /// is always left to [`FileRead::step`].
    pub fn split(&mut self) -> Option<Part> {
        let State::Reading(OpenFile { parts: Some(parts), .. }) = &mut self.state else { return None };
        parts.claim_spare(self.limits.chunk_size)
    }

    /// Closes the fd if we opened it and returns what was read: pooled bytes, or
    /// how many bytes went into the lent memory ([`FileRead::lend`]).
    /// Call after [`FileRead::step`] returned [`Progress::Done`].
    pub fn finish(mut self) -> Result<Filled, ReadError> {
        match std::mem::replace(&mut self.state, State::Finished) {
            State::Reading(mut file) => {
                let filled = match file.parts.take() {
                    Some(parts) => parts.finish()?,
                    None => Filled::Pooled(std::mem::replace(&mut file.buf, PooledBytes::unpooled(Vec::new()))),
                };
                if file.owned {
                    file.owned = false; // closed here, so its Drop must not close again
                    sys::close(file.fd)?;
                }
                Ok(filled)
            }
            State::Unopened | State::Finished => Ok(Filled::Pooled(PooledBytes::unpooled(Vec::new()))),
        }
    }
}

/// Opens and stats the source, and allocates the buffer of a regular file, unless
/// `defer` and it is bigger than a chunk (then admission control grants it first).
fn open(source: &Source, limits: &ReadLimits, defer: bool) -> Result<OpenFile, ReadError> {
    let (fd, owned, nonblocking) = match source {
        Source::Path { path, flags, mode } => {
            #[cfg(feature = "test-hooks")]
            panic_for_test(path);
            // Never wait in open(2) for a FIFO's writer, but wait for a lease as
            // node:fs does: see sys::open_for_read.
            let started = std::time::Instant::now();
            let (fd, nonblocking) = sys::open_for_read(path, *flags, *mode)?;
            crate::cached::observe_pool_open(fd, started.elapsed());
            (fd, true, nonblocking)
        }
        Source::Fd(fd) => (*fd, false, false),
        Source::Opened(fd) => (*fd, true, true),
    };
    // From here on the fd is in `file`, whose Drop closes it on any error.
    let mut file = OpenFile {
        fd,
        owned,
        buf: PooledBytes::unpooled(Vec::new()),
        expected: None,
        parts: None,
        unallocated: false,
        fifo_unsettled: false,
        may_block: false,
    };
    let st = sys::fstat(fd)?;
    file.may_block = !st.is_regular;
    if nonblocking && !st.is_regular {
        // A FIFO learns on its first read whether a writer is there; anything else
        // (a device) is read as a blocking open would have left it.
        if st.is_fifo {
            file.fifo_unsettled = true;
        } else {
            sys::set_blocking(fd)?;
        }
    }
    if st.is_regular && st.size > 0 {
        if st.size > limits.max_length {
            return Err(ReadError::TooLarge { size: st.size, limit: limits.max_length });
        }
        let size = st.size as usize;
        file.expected = Some(size);
        file.unallocated = true;
        if !(defer && size > limits.chunk_size) {
            allocate(&mut file, limits, None)?;
        }
    }
    Ok(file)
}

/// The first read of a FIFO opened with `O_NONBLOCK`, as node:fs's blocking open and
/// read would see it: data (a writer came first and wrote) is kept; `EAGAIN` means a
/// writer is there but has not written; 0 means no writer yet, so it waits for one
/// ([`sys::wait_readable`]). Either way the fd is blocking afterwards, so later reads
/// wait for data and end at the writer's close.
fn settle_fifo(file: &mut OpenFile, want: usize, cancelled: Option<&CancelFlag>) -> Result<Progress, ReadError> {
    file.fifo_unsettled = false;
    let n = match sys::read_into(file.fd, file.buf.vec_mut(), want, None) {
        Ok(0) => {
            wait_readable(file.fd, cancelled)?;
            0
        }
        Ok(n) => n,
        Err(e) if sys::is_would_block(&e) => 0,
        Err(e) => return Err(e.into()),
    };
    sys::set_blocking(file.fd)?;
    Ok(Progress::More { bytes: n })
}

/// How often a read waiting on a source that may block checks for cancellation.
const CANCEL_CHECK_MS: i32 = 20;

/// Waits until `fd` has data or a hang-up, failing with [`ReadError::Cancelled`] within
/// [`CANCEL_CHECK_MS`] of a cancellation, so an abort settles a read that waits for a
/// writer that never comes.
pub(crate) fn wait_readable(fd: Fd, cancelled: Option<&CancelFlag>) -> Result<(), ReadError> {
    loop {
        if cancelled.is_some_and(|c| c.load(crate::loom::sync::atomic::Ordering::Acquire)) {
            return Err(ReadError::Cancelled);
        }
        if sys::wait_readable(fd, CANCEL_CHECK_MS)? {
            return Ok(());
        }
    }
}

/// The test-only fault hook, in builds with the `test-hooks` feature only: with
/// `FAIRFS_TEST_PANIC_PATH=<suffix>` in the environment, opening a path that ends with
/// it panics, so that tests can show a panic fails its own request and nothing else.
#[cfg(feature = "test-hooks")]
fn panic_for_test(path: &std::ffi::CStr) {
    static SUFFIX: std::sync::OnceLock<Option<Vec<u8>>> = std::sync::OnceLock::new();
    let suffix = SUFFIX.get_or_init(|| std::env::var_os("FAIRFS_TEST_PANIC_PATH").map(|v| v.into_encoded_bytes()));
    if suffix.as_ref().is_some_and(|s| !s.is_empty() && path.to_bytes().ends_with(s)) {
        panic!("fairfs test fault: FAIRFS_TEST_PANIC_PATH matched {path:?}");
    }
}

/// Allocates the buffer of a file of known size, in parts if we opened it and it
/// spans several chunks; those parts fill `lent` memory if there is some.
fn allocate(file: &mut OpenFile, limits: &ReadLimits, lent: Option<Lent>) -> Result<(), ReadError> {
    let size = file.expected.expect("a file of known size");
    if let Some(lent) = lent.filter(|l| file.owned && size > limits.chunk_size && l.len() >= size) {
        file.parts = Some(Parts::into_lent(file.fd, lent, size));
        file.unallocated = false;
        return Ok(());
    }
    // Pooled buffers come back already faulted in; bigger files get their own.
    match limits.buffers {
        Some(_) if size <= crate::memory::buffer_pool::MAX_CLASS => {
            file.buf = PooledBytes::for_read(size, limits.buffers)
        }
        _ => file.buf.vec_mut().try_reserve_exact(size).map_err(|_| out_of_memory())?,
    }
    if file.owned && size > limits.chunk_size {
        let buf = std::mem::replace(&mut file.buf, PooledBytes::unpooled(Vec::new()));
        file.parts = Some(Parts::new(file.fd, buf, size));
    }
    file.unallocated = false;
    Ok(())
}

fn out_of_memory() -> ReadError {
    ReadError::Io(FsError::out_of_memory(Syscall::Read))
}

/// Reads a whole file on the calling thread, step by step (for tests and benches).
pub fn read_to_end(source: Source, limits: ReadLimits) -> Result<PooledBytes, ReadError> {
    let mut read = FileRead::new(source, limits);
    while let Progress::More { .. } = read.step()? {}
    read.finish().map(pooled_only)
}

/// The bytes of a read given no lender ([`FileRead::lend_for`]): such a read always
/// fills pooled memory.
pub fn pooled_only(filled: Filled) -> PooledBytes {
    match filled {
        Filled::Pooled(bytes) => bytes,
        Filled::Lent(_) => unreachable!("only a read given a lender fills lent memory"),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::test_files::{c_path, fds_open_on, pattern, temp_file};
    use std::io::{Seek, SeekFrom, Write};
    #[cfg(unix)]
    use std::os::fd::AsRawFd;

    /// A read of the file at `p`, opened read-only.
    pub fn path_source(p: &std::path::Path) -> Source {
        Source::Path { path: c_path(p), flags: libc::O_RDONLY, mode: 0o666 }
    }

    #[test]
    fn reads_files_of_many_sizes_in_chunks() {
        for len in [0, 1, 4095, 4096, 65_535, 65_536, 1_048_577] {
            let data = pattern(len);
            let p = temp_file(&format!("sizes-{len}"), &data);
            let limits = ReadLimits { chunk_size: 4096, ..Default::default() };
            let mut read = FileRead::new(path_source(&p), limits);
            let mut steps = 0;
            loop {
                steps += 1;
                match read.step().unwrap() {
                    Progress::More { bytes } => assert!(bytes <= 4096),
                    Progress::Done { bytes } => {
                        assert!(bytes <= 4096);
                        break;
                    }
                }
            }
            // Known size: exactly ceil(len / chunk) reads, and no extra EOF probe.
            assert_eq!(steps, len.div_ceil(4096).max(1), "len {len}");
            assert_eq!(pooled_only(read.finish().unwrap()), data, "len {len}");
        }
    }

    #[test]
    fn pooled_reads_reuse_buffers() {
        static POOL: std::sync::OnceLock<BufferPool> = std::sync::OnceLock::new();
        let pool = POOL.get_or_init(|| BufferPool::new(1 << 20));
        let data = pattern(50_000);
        let p = temp_file("pooled", &data);
        let limits = ReadLimits { buffers: Some(pool), ..Default::default() };
        let first = read_to_end(path_source(&p), limits).unwrap();
        assert_eq!(first, data);
        let ptr = first.as_ptr();
        drop(first); // back to the pool
        let second = read_to_end(path_source(&p), limits).unwrap();
        assert_eq!(second, data);
        assert_eq!(second.as_ptr(), ptr);
        assert_eq!((pool.stats().hits, pool.stats().misses), (1, 1));
    }

    #[test]
    fn missing_file_is_enoent_on_open() {
        let err = read_to_end(path_source(std::path::Path::new("/nonexistent/fairfs")), ReadLimits::default());
        assert_eq!(err, Err(ReadError::Io(FsError::new(libc::ENOENT, Syscall::Open))));
    }

    #[test]
    fn directory_is_eisdir_on_read() {
        let err = read_to_end(path_source(&std::env::temp_dir()), ReadLimits::default());
        assert_eq!(err, Err(ReadError::Io(FsError::new(libc::EISDIR, Syscall::Read))));
    }

    #[test]
    fn too_large_fails_before_reading() {
        let p = temp_file("big", &pattern(10_000));
        let limits = ReadLimits { max_length: 9_999, ..Default::default() };
        assert_eq!(read_to_end(path_source(&p), limits), Err(ReadError::TooLarge { size: 10_000, limit: 9_999 }));
        let limits = ReadLimits { max_length: 10_000, ..Default::default() };
        assert_eq!(read_to_end(path_source(&p), limits).unwrap().len(), 10_000);
    }

    #[test]
    fn unknown_size_stops_at_the_lower_limit() {
        let zero = || path_source(std::path::Path::new("/dev/zero"));
        let limits = ReadLimits { max_length: 100_000, ..Default::default() };
        assert_eq!(read_to_end(zero(), limits), Err(ReadError::TooLarge { size: 100_001, limit: 100_000 }));
        let limits = ReadLimits { max_unsized_length: 70_000, ..Default::default() };
        assert_eq!(read_to_end(zero(), limits), Err(ReadError::TooLarge { size: 70_001, limit: 70_000 }));
        // A regular file is not bound by it.
        let p = temp_file("over-unsized", &pattern(80_000));
        assert_eq!(read_to_end(path_source(&p), limits).unwrap().len(), 80_000);
    }

    #[test]
    fn proc_files_with_size_zero_are_read_to_eof() {
        let got = read_to_end(path_source(std::path::Path::new("/proc/self/status")), ReadLimits::default()).unwrap();
        assert!(String::from_utf8(got.into_vec()).unwrap().contains("Name:"));
    }

    #[test]
    fn fd_is_read_from_its_position_and_left_open() {
        let p = temp_file("fd", b"Hello World");
        let mut f = std::fs::File::open(&p).unwrap();
        f.seek(SeekFrom::Start(5)).unwrap();
        let got = read_to_end(Source::Fd(f.as_raw_fd()), ReadLimits::default()).unwrap();
        assert_eq!(got, b" World");
        // Still open: seeking works.
        assert_eq!(f.stream_position().unwrap(), 11);
    }

    #[test]
    fn file_that_shrinks_gives_a_shorter_result() {
        let p = temp_file("shrink", &pattern(100_000));
        let limits = ReadLimits { chunk_size: 10_000, ..Default::default() };
        let mut read = FileRead::new(path_source(&p), limits);
        assert_eq!(read.step().unwrap(), Progress::More { bytes: 10_000 });
        std::fs::OpenOptions::new().write(true).open(&p).unwrap().set_len(25_000).unwrap();
        while let Progress::More { .. } = read.step().unwrap() {}
        assert_eq!(pooled_only(read.finish().unwrap()), pattern(25_000));
    }

    #[test]
    fn file_that_grows_is_cut_at_the_fstat_size() {
        let p = temp_file("grow", &pattern(30_000));
        let limits = ReadLimits { chunk_size: 10_000, ..Default::default() };
        let mut read = FileRead::new(path_source(&p), limits);
        read.step().unwrap();
        std::fs::OpenOptions::new().append(true).open(&p).unwrap().write_all(&[1; 5000]).unwrap();
        while let Progress::More { .. } = read.step().unwrap() {}
        assert_eq!(pooled_only(read.finish().unwrap()), pattern(30_000));
    }

    /// Under admission control a big file asks for its bytes before allocating them,
    /// closes its fd when told to wait, and reopens and reads in full once granted;
    /// a small file reads in its first step as always.
    #[test]
    fn an_admitted_big_read_waits_for_its_bytes_holding_no_fd() {
        let data = pattern(10_000);
        let p = temp_file("admitted", &data);
        let limits = ReadLimits { chunk_size: 4096, admitted: true, ..Default::default() };
        let mut read = FileRead::new(path_source(&p), limits);
        assert_eq!(read.wait(), Wait::No);
        assert_eq!(read.step().unwrap(), Progress::More { bytes: 0 });
        assert_eq!(read.wait(), Wait::Bytes(10_000));
        assert_eq!(fds_open_on(&p), 1);
        read.suspend();
        assert_eq!(fds_open_on(&p), 0, "waiting for bytes holds no fd");
        read.grant();
        assert_eq!(read.wait(), Wait::No);
        while let Progress::More { .. } = read.step().unwrap() {
            assert_eq!(read.wait(), Wait::No, "granted once is enough");
        }
        assert_eq!(*pooled_only(read.finish().unwrap()), data);
        assert_eq!(fds_open_on(&p), 0);

        let small = temp_file("admitted-small", &data[..4000]);
        let mut read = FileRead::new(path_source(&small), limits);
        assert_eq!(read.step().unwrap(), Progress::Done { bytes: 4000 });
        assert_eq!(*pooled_only(read.finish().unwrap()), data[..4000]);
    }

    #[test]
    fn dropping_a_read_midway_closes_its_fd() {
        let p = temp_file("drop", &pattern(100_000));
        let mut read = FileRead::new(path_source(&p), ReadLimits { chunk_size: 1000, ..Default::default() });
        read.step().unwrap();
        assert_eq!(fds_open_on(&p), 1);
        drop(read);
        assert_eq!(fds_open_on(&p), 0);
    }
}
