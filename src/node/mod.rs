//! The N-API binding: a thin layer between the JS wrapper (`index.js`) and the core.
//!
//! * `init(onComplete, maxLength)` sets up one [`EnvState`] per Node environment
//!   (the main thread and each worker_thread), holding one threadsafe function.
//! * `readPath` / `readFd` submit a whole-file read to the process-wide pool, and
//!   `openPath` / `readChunk` / `closeFd` the single operations of a read stream;
//!   each returns a request id.
//! * Pool threads push finished reads onto the environment's completion queue and
//!   wake the JS thread once per batch; the JS thread hands the whole batch to
//!   `onComplete` as `[id, result, id, result, ...]`.
//! * The threadsafe function is referenced only while reads are pending, so a
//!   pending read keeps the process alive exactly as long as node:fs's would.
//! * Read results reach JS without a copy: a big file read alone goes into a Buffer
//!   V8 allocates and lends it ([`lend_buffer`]); other results are external Buffers
//!   over pooled memory that goes back to the buffer pool from the Buffer's
//!   finalizer, after V8 has collected it. Small results are copied and their buffer
//!   reused at once.

mod views;

use std::collections::{HashMap, HashSet};
use std::ffi::CString;
use std::rc::Rc;
use std::sync::{Arc, Condvar, Mutex};

use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeCallContext, ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;

use crate::buffer_pool::{self, PooledBytes, MIN_CLASS};
use crate::chunk::{self, BlockJob, OpenJob, OpenedFd};
use crate::error::ReadError;
use crate::external_memory::Ledger;
use crate::lent::{Filled, Lent};
use crate::pack::{Packed, Packer};
use crate::pool::{global, Job, Ticket};
use crate::read::pooled_only;
use crate::read::{ReadLimits, Source};
use crate::request::{FilledOutcome, MemoryAsker, OnceJob, ReadFileJob};
use views::{ViewedBytes, Views};

/// What a finished request hands back to JS.
pub enum Delivered {
    /// A whole file.
    Bytes(std::result::Result<PooledBytes, ReadError>),
    /// A whole file read into the Buffer this environment lent it: how many bytes.
    LentFile(usize),
    /// A whole file that becomes a JS string as it is: latin1 text, or utf-8 / ascii
    /// text that is all ASCII (checked on the pool thread).
    Text(PooledBytes),
    /// A stream block, and the most bytes each of its chunks holds.
    Chunk(std::result::Result<PooledBytes, ReadError>, usize),
    Opened(std::result::Result<OpenedFd, ReadError>),
    Closed(std::result::Result<(), ReadError>),
    /// The outcomes of a `readPaths` batch, in order, and the slabs they point into.
    Batch(Vec<PooledBytes>, Vec<std::result::Result<Packed, ReadError>>),
    /// Cancelled before it ran.
    Cancelled,
    /// Not an outcome: the read waits for a Buffer of this many bytes to read into
    /// ([`lend_buffer`]).
    WantsMemory(u64),
}

/// Hands a finished request to its environment's completion queue.
type Deliver = Box<dyn FnOnce(Delivered) + Send>;

/// Finished requests waiting for the JS thread, in completion order.
type DoneQueue = Arc<Mutex<Vec<(u64, Delivered)>>>;

/// A batch of finished requests on its way to `onComplete`.
pub struct Batch(Vec<(u64, Delivered)>);

type Waker = ThreadsafeFunction<(), (), Batch, Status, false, true>;

/// Per-environment state, kept in N-API instance data and used only on its JS thread.
struct EnvState {
    /// Reads submitted from this environment and not yet delivered, for `cancel`.
    pending: HashMap<u64, Vec<Ticket>>,
    /// Request ids count up from 0 and reach JS as numbers, exact up to 2^53: at a
    /// million requests a second, 285 years without a repeat.
    next_id: u64,
    sink: Arc<Sink>,
    /// Largest result allowed: `buffer.constants.MAX_LENGTH` of this Node.
    max_length: u64,
    /// Largest result from a source of unknown size ([`ReadLimits::max_unsized_length`]).
    max_unsized_length: u64,
    /// Whether the threadsafe function currently keeps the event loop alive.
    referenced: bool,
    /// Reads still writing into Buffers this environment lent ([`lend_buffer`]);
    /// teardown waits for them.
    lent_writes: Arc<LentWrites>,
    /// The Buffers lent to whole-file reads, by request id, until their outcome.
    lent_files: HashMap<u64, LentBuffer>,
    /// The external Buffers this environment holds, and whether their memory may be
    /// used again once they are finalized.
    views: Rc<Views>,
    /// Stream flows this environment started and has not ended, ended at teardown.
    flows: HashSet<u64>,
    /// Fds this environment's streams opened and have not closed: closed at teardown,
    /// as node:fs's are when a worker exits mid-stream.
    fds: HashSet<crate::Fd>,
    /// The requests that close an fd: teardown lets them run.
    closing: HashSet<u64>,
}

/// A Buffer V8 allocated for a whole-file read, held by a strong reference until the
/// read's outcome is delivered (JS never sees it before).
struct LentBuffer {
    reference: napi::sys::napi_ref,
    data: *const u8,
    len: usize,
}

/// Counts the reads that may still write into an environment's memory, so that its
/// teardown waits for them: V8 frees the Buffers after it, whatever JS held.
#[derive(Default)]
struct LentWrites {
    count: Mutex<usize>,
    none: Condvar,
}

impl LentWrites {
    fn lock(&self) -> std::sync::MutexGuard<'_, usize> {
        self.count.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts one more read; dropping the guard uncounts it.
    fn enter(self: &Arc<Self>) -> LentGuard {
        *self.lock() += 1;
        LentGuard(self.clone())
    }

    fn wait_for_none(&self) {
        let mut count = self.lock();
        while *count > 0 {
            count = self.none.wait(count).unwrap_or_else(|p| p.into_inner());
        }
    }
}

struct LentGuard(Arc<LentWrites>);

impl Drop for LentGuard {
    fn drop(&mut self) {
        let mut count = self.0.lock();
        *count -= 1;
        if *count == 0 {
            self.0.none.notify_all();
        }
    }
}

/// Where pool threads deliver finished reads.
struct Sink {
    done: DoneQueue,
    waker: Waker,
}

impl Sink {
    fn deliver(&self, id: u64, delivered: Delivered) {
        let mut done = self.done.lock().unwrap_or_else(|p| p.into_inner());
        let first = done.is_empty();
        done.push((id, delivered));
        drop(done);
        // One wake-up per batch: whoever makes the queue non-empty wakes the JS
        // thread, which then takes everything queued by the time it runs. If the
        // environment is gone the call fails and the outcome is simply dropped.
        if first {
            self.waker.call((), ThreadsafeFunctionCallMode::NonBlocking);
        }
    }
}

fn state(env: &Env) -> Result<&'static mut EnvState> {
    env.get_instance_data::<EnvState>()?
        .ok_or_else(|| Error::new(Status::GenericFailure, "fairfs: init() was not called"))
}

/// Keeps the event loop alive while reads are pending, and no longer.
fn set_referenced(env: &Env, st: &mut EnvState, want: bool) -> Result<()> {
    if st.referenced == want {
        return Ok(());
    }
    let raw = st.sink.waker.raw();
    // SAFETY: we are on the JS thread of the environment that owns `raw`, and the
    // function is not released: `st` (instance data) holds it until the environment
    // is torn down, after which no JS code runs to get here.
    let status = unsafe {
        if want {
            napi::sys::napi_ref_threadsafe_function(env.raw(), raw)
        } else {
            napi::sys::napi_unref_threadsafe_function(env.raw(), raw)
        }
    };
    if status != napi::sys::Status::napi_ok {
        return Err(Error::new(Status::GenericFailure, "fairfs: cannot (un)ref the completion callback"));
    }
    st.referenced = want;
    Ok(())
}

/// Sets up this environment: `onComplete(batch)` receives finished reads.
#[napi(
    ts_args_type = "onComplete: (batch: Array<number | Buffer | [number, string] | null>) => void, maxLength: number"
)]
pub fn init(env: Env, on_complete: Function<Batch, ()>, max_length: f64) -> Result<()> {
    if env.get_instance_data::<EnvState>()?.is_some() {
        return Err(Error::new(Status::GenericFailure, "fairfs: init() called twice"));
    }
    let done: DoneQueue = Arc::default();
    let queue = done.clone();
    let waker: Waker =
        on_complete.build_threadsafe_function::<()>().callee_handled::<false>().weak::<true>().build_callback(
            move |ctx: ThreadsafeCallContext<()>| {
                let mut batch = std::mem::take(&mut *queue.lock().unwrap_or_else(|p| p.into_inner()));
                if let Ok(st) = state(&ctx.env) {
                    // Reads asking for memory get it here; they are not done.
                    batch.retain(|(id, delivered)| match delivered {
                        Delivered::WantsMemory(size) => {
                            lend_buffer(&ctx.env, st, *id, *size);
                            false
                        }
                        _ => true,
                    });
                    for (id, _) in &batch {
                        st.pending.remove(id);
                        st.closing.remove(id);
                    }
                    if st.pending.is_empty() {
                        set_referenced(&ctx.env, st, false)?;
                    }
                }
                Ok(Batch(batch))
            },
        )?;
    let st = EnvState {
        pending: HashMap::new(),
        next_id: 0,
        sink: Arc::new(Sink { done, waker }),
        max_length: max_length as u64,
        max_unsized_length: crate::read::DEFAULT_MAX_UNSIZED_LENGTH,
        referenced: false,
        lent_writes: Arc::default(),
        lent_files: HashMap::new(),
        views: Views::new(env.raw()),
        flows: HashSet::new(),
        fds: HashSet::new(),
        closing: HashSet::new(),
    };
    env.set_instance_data(st, (), |ctx| {
        // The environment is going away (worker terminated, process exiting): stop
        // its reads so nothing is read for nobody. Their outcomes are dropped; an fd
        // opened for nobody is closed as its outcome drops. Closes go on.
        let st = &ctx.value;
        let tickets: Vec<Ticket> =
            st.pending.iter().filter(|(id, _)| !st.closing.contains(id)).flat_map(|(_, t)| t).cloned().collect();
        global().cancel_many(&tickets);
        for &flow in &st.flows {
            global().end_flow(flow);
        }
        for &fd in &st.fds {
            let _ = chunk::close(fd);
        }
        // Its Buffers are freed after this: wait for a read still writing into one
        // (one step, at most a chunk: only sized regular files are lent memory).
        ctx.value.lent_writes.wait_for_none();
    })
}

/// Registers a request from this environment and submits the job `make` builds
/// around its delivery callback.
fn submit(env: &Env, make: impl FnOnce(Deliver) -> Box<dyn Job>) -> Result<f64> {
    submit_jobs(env, |deliver, _| vec![make(deliver)])
}

/// Registers one request whose outcome is delivered once, through the callback
/// `make` receives, and submits the jobs `make` builds for it. `make` also gets what
/// asks this environment to lend the request memory ([`lend_buffer`]).
fn submit_jobs(env: &Env, make: impl FnOnce(Deliver, MemoryAsker) -> Vec<Box<dyn Job>>) -> Result<f64> {
    let st = state(env)?;
    let id = st.next_id;
    st.next_id += 1;
    let (sink, asking) = (st.sink.clone(), st.sink.clone());
    let deliver: Deliver = Box::new(move |delivered| sink.deliver(id, delivered));
    let ask: MemoryAsker = Box::new(move |size| asking.deliver(id, Delivered::WantsMemory(size)));
    let tickets = global().submit_many(make(deliver, ask));
    st.pending.insert(id, tickets);
    set_referenced(env, st, true)?;
    Ok(id as f64)
}

fn read_limits(env: &Env) -> Result<ReadLimits> {
    Ok(ReadLimits {
        chunk_size: global().chunk_size(),
        max_length: state(env)?.max_length,
        max_unsized_length: state(env)?.max_unsized_length,
        buffers: Some(buffer_pool::global()),
        admitted: true,
        ..ReadLimits::default()
    })
}

/// How JS wants a whole file: 0 (a Buffer), [`TEXT_LATIN1`] (a latin1 string) or
/// [`TEXT_UTF8`] (a utf-8 or ascii string).
const TEXT_LATIN1: u32 = 1;
const TEXT_UTF8: u32 = 2;

/// V8's longest string (`buffer.constants.MAX_STRING_LENGTH` on 64-bit); longer text
/// goes to JS as bytes, whose decoding then fails with node's ERR_STRING_TOO_LONG.
const MAX_STRING_LENGTH: usize = (1 << 29) - 24;

/// What a finished read delivers for the wanted `text`: bytes that are already a
/// latin1 string (every byte of latin1; ASCII for utf-8, which decodes ASCII as it is)
/// skip the Buffer and JS's decoding.
fn delivered(outcome: FilledOutcome, text: u32) -> Delivered {
    let outcome = match outcome {
        Ok(Filled::Lent(len)) => return Delivered::LentFile(len),
        Ok(Filled::Pooled(bytes)) => Ok(bytes),
        Err(e) => Err(e),
    };
    match outcome {
        Ok(bytes)
            if bytes.len() <= MAX_STRING_LENGTH && (text == TEXT_LATIN1 || (text == TEXT_UTF8 && bytes.is_ascii())) =>
        {
            Delivered::Text(bytes)
        }
        outcome => Delivered::Bytes(outcome),
    }
}

fn submit_read(env: &Env, source: Source, text: u32) -> Result<f64> {
    let limits = read_limits(env)?;
    // A big file wanted as a Buffer is read into a Buffer of V8's own, which dies
    // young like any other; a lent pooled buffer would cost a mark-compact.
    let lend = text == 0 && !copy_results();
    submit_jobs(env, |deliver, ask| {
        let job = ReadFileJob::new(source, limits, move |outcome| deliver(delivered(outcome, text)));
        vec![Box::new(if lend { job.lending(LEND_FILES_FROM..LEND_V8_MEMORY_BELOW, ask) } else { job })]
    })
}

/// Lends request `id`, waiting for memory ([`crate::admission::Wait::Memory`]), a new
/// Buffer of `size` uninitialised bytes that V8 allocates, as `Buffer.allocUnsafeSlow`
/// does. A reference holds it until the outcome is delivered. If V8 cannot allocate
/// it, the read allocates its own memory instead.
fn lend_buffer(env: &Env, st: &mut EnvState, id: u64, size: u64) {
    let Some(ticket) = st.pending.get(&id).and_then(|t| t.first()).cloned() else { return };
    let (mut data, mut value, mut reference) = (std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: we are on this environment's JS thread; the out-pointers are valid.
    let created = unsafe {
        napi::sys::napi_create_buffer(env.raw(), size as usize, &mut data, &mut value) == napi::sys::Status::napi_ok
            && napi::sys::napi_create_reference(env.raw(), value, 1, &mut reference) == napi::sys::Status::napi_ok
    };
    if !created || data.is_null() {
        // Out of memory: node throws, and the error must not surface in onComplete.
        let mut error = std::ptr::null_mut();
        // SAFETY: as above.
        unsafe { napi::sys::napi_get_and_clear_last_exception(env.raw(), &mut error) };
        delete_reference(env, reference);
        global().lend(&ticket, None);
        return;
    }
    let len = size as usize;
    // SAFETY: `data..data + len` is the new Buffer's memory, which stays valid while
    // `reference` holds the Buffer (until the outcome is delivered, after the read
    // let the memory go) and until the environment's teardown, which waits for the
    // guard (`LentWrites`). Nobody else sees the Buffer before the outcome.
    let lent = unsafe { Lent::new(data.cast(), len, Box::new(st.lent_writes.enter())) };
    if global().lend(&ticket, Some(lent)) {
        st.lent_files.insert(id, LentBuffer { reference, data: data.cast_const().cast(), len });
    } else {
        delete_reference(env, reference);
    }
}

fn delete_reference(env: &Env, reference: napi::sys::napi_ref) {
    if !reference.is_null() {
        // SAFETY: a reference this environment created and nobody deleted yet.
        unsafe { napi::sys::napi_delete_reference(env.raw(), reference) };
    }
}

fn c_path(path: &Either<String, &[u8]>) -> Result<CString> {
    let bytes = match path {
        Either::A(s) => s.as_bytes(),
        Either::B(b) => b,
    };
    CString::new(bytes).map_err(|_| Error::new(Status::InvalidArg, "path contains a NUL byte"))
}

/// Reads the file at `path` (a string or the bytes of a Buffer path), opened with
/// numeric `flags` and `mode`; `text` (0 Buffer, 1 latin1, 2 utf-8/ascii) lets text
/// that needs no decoding arrive as a string. Returns the request id.
#[napi]
pub fn read_path(env: Env, path: Either<String, &[u8]>, flags: i32, mode: u32, text: u32) -> Result<f64> {
    let path = c_path(&path)?;
    submit_read(&env, Source::Path { path, flags, mode }, text)
}

/// What a batch has so far.
struct BatchSoFar {
    /// Outcome of each file, once it is read.
    slots: Vec<Option<std::result::Result<Packed, ReadError>>>,
    /// The slabs small results are packed into.
    packer: Packer,
}

/// Outcomes of a batch, filled in by pool threads in any order: small results are
/// packed into slabs as they arrive ([`crate::pack`]).
struct BatchSlots {
    slots: Mutex<BatchSoFar>,
    left: std::sync::atomic::AtomicUsize,
    deliver: Mutex<Option<Deliver>>,
}

impl BatchSlots {
    fn fill(&self, i: usize, outcome: std::result::Result<PooledBytes, ReadError>) {
        let mut guard = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        let BatchSoFar { slots, packer } = &mut *guard;
        slots[i] = Some(outcome.map(|bytes| packer.pack(bytes)));
        drop(guard);
        if self.left.fetch_sub(1, std::sync::atomic::Ordering::AcqRel) == 1 {
            let empty = BatchSoFar { slots: Vec::new(), packer: Packer::new(None) };
            let BatchSoFar { slots, packer } =
                std::mem::replace(&mut *self.slots.lock().unwrap_or_else(|p| p.into_inner()), empty);
            let results = slots.into_iter().map(|s| s.unwrap_or(Err(ReadError::Cancelled))).collect();
            if let Some(deliver) = self.deliver.lock().unwrap_or_else(|p| p.into_inner()).take() {
                deliver(Delivered::Batch(packer.into_slabs(), results));
            }
        }
    }
}

/// Reads every file in `paths` (all opened with `flags` and `mode`) as one request:
/// the files are separate jobs on the fair pool, and JS hears back once, with all
/// outcomes in order. Returns the request id.
#[napi]
pub fn read_paths(env: Env, paths: Vec<String>, flags: i32, mode: u32) -> Result<f64> {
    let limits = read_limits(&env)?;
    let sources = paths
        .into_iter()
        .map(|p| CString::new(p).map(|path| Source::Path { path, flags, mode }))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|_| Error::new(Status::InvalidArg, "path contains a NUL byte"))?;
    submit_jobs(&env, |deliver, _| {
        if sources.is_empty() {
            deliver(Delivered::Batch(Vec::new(), Vec::new()));
            return Vec::new();
        }
        let batch = Arc::new(BatchSlots {
            slots: Mutex::new(BatchSoFar {
                slots: (0..sources.len()).map(|_| None).collect(),
                packer: Packer::new(Some(buffer_pool::global())),
            }),
            left: std::sync::atomic::AtomicUsize::new(sources.len()),
            deliver: Mutex::new(Some(deliver)),
        });
        sources
            .into_iter()
            .enumerate()
            .map(|(i, source)| {
                let batch = batch.clone();
                Box::new(ReadFileJob::new(source, limits, move |outcome: FilledOutcome| {
                    batch.fill(i, outcome.map(pooled_only))
                })) as Box<dyn Job>
            })
            .collect()
    })
}

/// The fast path: reads `path` right here if it is a small regular file whose lookup
/// and data are in the kernel's caches, so nothing can block. A FIFO or device it
/// opened goes on in the pool, and the request id comes back instead (`text` as for
/// `readPath`); `null` otherwise (then read it through the pool with `readPath`).
#[napi]
pub fn read_cached(
    env: &Env,
    path: String,
    flags: i32,
    max_size: u32,
    text: u32,
) -> Result<Option<Either<BufferSlice<'_>, f64>>> {
    let path = CString::new(path).map_err(|_| Error::new(Status::InvalidArg, "path contains a NUL byte"))?;
    match crate::cached::try_read(&path, flags, max_size as usize) {
        crate::cached::Cached::Hit(data) => Ok(Some(Either::A(BufferSlice::copy_from(env, data)?))),
        crate::cached::Cached::Miss => Ok(None),
        // A FIFO or device, opened: the pool reads it from here (a request id).
        crate::cached::Cached::Opened(fd) => Ok(Some(Either::B(submit_read(env, Source::Opened(fd), text)?))),
    }
}

/// Reads the caller's `fd` from its current position, leaving it open; `text` as for
/// `readPath`. Returns the request id.
#[napi]
pub fn read_fd(env: Env, fd: i32, text: u32) -> Result<f64> {
    submit_read(&env, Source::Fd(fd), text)
}

/// Opens `path`; the result is the fd. Returns the request id.
#[napi]
pub fn open_path(env: Env, path: Either<String, &[u8]>, flags: i32, mode: u32) -> Result<f64> {
    let path = c_path(&path)?;
    submit(&env, |deliver| {
        Box::new(OpenJob::new(path, flags, mode, move |r| deliver(r.map_or(Delivered::Cancelled, Delivered::Opened))))
    })
}

/// A new key for a read stream's blocks, which then share one place in the pool's
/// fair queue ([`crate::scheduler`]); `endFlow` forgets it when the stream closes, and
/// the environment's teardown if it never does.
#[napi]
pub fn new_flow(env: Env) -> Result<f64> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let flow = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    state(&env)?.flows.insert(flow);
    Ok(flow as f64)
}

/// Forgets flow `flow` once none of its blocks is left.
#[napi]
pub fn end_flow(env: Env, flow: f64) -> Result<()> {
    state(&env)?.flows.remove(&(flow as u64));
    global().end_flow(flow as u64);
    Ok(())
}

/// Reads up to `length` bytes of `fd` at `position` (negative: the current
/// position) as a block of stream `flow` (0: none). The result is an array of
/// Buffers of `piece` bytes (the last may be shorter), each over memory of its own,
/// and empty at end of file. Returns the request id.
#[napi]
pub fn read_chunk(env: Env, fd: i32, position: f64, length: u32, flow: f64, piece: u32) -> Result<f64> {
    let position = (position >= 0.0).then_some(position as u64);
    let flow = (flow > 0.0).then_some(flow as u64);
    let step_max = global().chunk_size();
    let piece = (piece as usize).max(1);
    submit(&env, |deliver| {
        let on_done = move |r: Option<_>| deliver(r.map_or(Delivered::Cancelled, |r| Delivered::Chunk(r, piece)));
        Box::new(BlockJob::new(fd, position, length as usize, step_max, Some(buffer_pool::global()), flow, on_done))
    })
}

/// A stream's open on the JS thread, for a regular file whose lookup is cached: its
/// fd, or null (nothing opened; `openPath` then opens it on the pool).
#[napi]
pub fn open_cached(env: Env, path: Either<String, &[u8]>, flags: i32) -> Result<Option<i32>> {
    let fd = crate::cached::open_regular(&c_path(&path)?, flags);
    if let Some(fd) = fd {
        state(&env)?.fds.insert(fd);
    }
    Ok(fd)
}

/// `fd`, which a stream of this environment opened, is no longer the stream's to
/// close (`autoClose: false`, or a caller's `fs.close`): teardown leaves it alone.
#[napi]
pub fn forget_fd(env: Env, fd: i32) -> Result<()> {
    state(&env)?.fds.remove(&fd);
    Ok(())
}

/// A stream's read on the JS thread, into `buffer` at `position`, of data already in
/// the page cache: the bytes read (fewer at the end of the file or where only part is
/// cached), or null where it would wait or fails (`readChunk` then reads it).
#[napi]
pub fn read_cached_into(fd: i32, position: f64, mut buffer: BufferSlice) -> Option<u32> {
    if position < 0.0 {
        return None;
    }
    crate::cached::read_at(fd, &mut buffer, position as u64).map(|n| n as u32)
}

/// Closes `fd`. Returns the request id.
#[napi]
pub fn close_fd(env: Env, fd: i32) -> Result<f64> {
    state(&env)?.fds.remove(&fd);
    let id = submit(&env, |deliver| {
        let work = move || (chunk::close(fd), 0);
        Box::new(OnceJob::new(work, move |r| deliver(r.map_or(Delivered::Cancelled, Delivered::Closed))))
    })?;
    state(&env)?.closing.insert(id as u64);
    Ok(id)
}

/// Cancels request `id`. Its outcome (cancelled, or the result if it was already
/// finishing) still arrives through `onComplete`.
#[napi]
pub fn cancel(env: Env, id: f64) -> Result<()> {
    cancel_many(env, vec![id])
}

/// Cancels the requests `ids` (one AbortSignal's, say) in one pass over the pool's
/// queues, so that aborting N reads costs O(N), not N searches of the queue.
#[napi]
pub fn cancel_many(env: Env, ids: Vec<f64>) -> Result<()> {
    let st = state(&env)?;
    let tickets: Vec<Ticket> = ids.iter().filter_map(|id| st.pending.get(&(*id as u64))).flatten().cloned().collect();
    global().cancel_many(&tickets);
    Ok(())
}

/// Sets the largest result this environment's reads may produce (the JS layer
/// keeps it at or below `buffer.constants.MAX_LENGTH`).
#[napi]
pub fn set_max_length(env: Env, max_length: f64) -> Result<()> {
    state(&env)?.max_length = max_length as u64;
    Ok(())
}

/// Sets the largest result this environment's reads of sources of unknown size may
/// produce (default 2 GiB - 1; the JS layer validates it).
#[napi]
pub fn set_max_unsized_length(env: Env, max_unsized_length: f64) -> Result<()> {
    state(&env)?.max_unsized_length = max_unsized_length as u64;
    Ok(())
}

/// Resizes the pool, sets the chunk size, the buffer pool's cap, the nice value,
/// how many big files are read at once (0: the default), and/or admission's limits on
/// open files and bytes in flight. The JS layer validates them.
#[napi]
pub fn configure(
    threads: Option<u32>,
    chunk_size: Option<u32>,
    max_pooled_bytes: Option<f64>,
    nice: Option<i32>,
    large_limit: Option<u32>,
    max_open_files: Option<u32>,
    max_bytes_in_flight: Option<f64>,
) {
    if max_open_files.is_some() || max_bytes_in_flight.is_some() {
        global().set_admission_limits(max_open_files.map(|n| n as usize), max_bytes_in_flight.map(|n| n as u64));
    }
    global().configure_with(threads.map(|t| t as usize), chunk_size.map(|c| c as usize), nice);
    if let Some(limit) = large_limit {
        // 0 goes back to the default: the machine's cores minus one.
        global().set_large_limit((limit > 0).then_some(limit as usize));
    }
    if let Some(max) = max_pooled_bytes {
        buffer_pool::global().set_max_pooled_bytes(max as usize);
    }
}

#[napi(object)]
pub struct PoolStats {
    pub threads: u32,
    pub queued: u32,
    pub active: u32,
    pub completed: f64,
    pub cancelled: f64,
    pub bytes_read: f64,
    pub chunks_read: f64,
    pub chunk_size: u32,
    pub nice: i32,
    /// Big files read at once now: every thread while no thread waits for a CPU, fewer
    /// while some do (Linux; elsewhere cores - 1); and the most it may reach.
    pub large_limit: u32,
    pub large_limit_max: u32,
    /// Whether the limit adapts; else it is fixed at cores - 1.
    pub large_limit_adaptive: bool,
    /// Times the big-read limit went down (threads waited for a CPU) and up.
    pub large_backoffs: f64,
    pub large_probes: f64,
    /// libuv's threads the governor tells apart (named by libuv 1.50+, or found by the
    /// census at load), whose demand for the CPU makes it back off.
    pub libuv_threads: u32,
    /// Files held open by admitted reads, and the most allowed.
    pub open_files: u32,
    pub max_open_files: u32,
    /// Bytes of result buffers granted to big reads in flight, and the most allowed.
    pub bytes_in_flight: f64,
    pub max_bytes_in_flight: f64,
    /// Reads waiting for admission.
    pub waiting: u32,
    /// Reads of FIFOs and devices, each on a thread of its own outside the pool.
    pub own_threads: u32,
    /// Read streams whose blocks the fair queue keeps as one flow (each is forgotten
    /// when its stream ends or is destroyed).
    pub stream_flows: u32,
    /// Reads served by the fast path, and tries that fell back to the pool.
    pub fast_path_hits: f64,
    pub fast_path_misses: f64,
    pub pool: BufferStats,
}

#[napi(object)]
pub struct BufferStats {
    pub hits: f64,
    pub misses: f64,
    pub pooled_bytes: f64,
    pub outstanding: f64,
    pub max_pooled_bytes: f64,
    /// Pooled bytes lent to this thread's Buffers that V8 does not count now
    /// ([`crate::external_memory`]).
    pub untold_bytes: f64,
    /// Pooled bytes given up because another thread might still see them: Buffers
    /// whose memory was transferred away, alive when their worker exited ([`views`]).
    pub abandoned_bytes: f64,
}

#[napi]
pub fn stats() -> PoolStats {
    let s = global().stats();
    PoolStats {
        threads: s.threads as u32,
        queued: s.queued as u32,
        active: s.active as u32,
        completed: s.completed as f64,
        cancelled: s.cancelled as f64,
        bytes_read: s.bytes_read as f64,
        chunks_read: s.chunks_read as f64,
        chunk_size: s.chunk_size as u32,
        nice: s.nice,
        large_limit: s.large_limit as u32,
        large_limit_max: s.large_limit_max as u32,
        large_limit_adaptive: s.large_limit_adaptive,
        large_backoffs: s.large_backoffs as f64,
        large_probes: s.large_probes as f64,
        libuv_threads: crate::host_threads::count() as u32,
        open_files: s.open_files as u32,
        max_open_files: s.max_open_files as u32,
        bytes_in_flight: s.bytes_in_flight as f64,
        max_bytes_in_flight: s.max_bytes_in_flight as f64,
        waiting: s.waiting as u32,
        own_threads: s.own_threads as u32,
        stream_flows: s.stream_flows as u32,
        fast_path_hits: crate::cached::HITS.load(std::sync::atomic::Ordering::Relaxed) as f64,
        fast_path_misses: crate::cached::MISSES.load(std::sync::atomic::Ordering::Relaxed) as f64,
        pool: {
            let buffers = buffer_pool::global();
            let b = buffers.stats();
            BufferStats {
                hits: b.hits as f64,
                misses: b.misses as f64,
                pooled_bytes: b.pooled_bytes as f64,
                outstanding: b.outstanding as f64,
                max_pooled_bytes: buffers.max_pooled_bytes() as f64,
                untold_bytes: LEDGER.try_with(|ledger| ledger.borrow().untold()).unwrap_or(0) as f64,
                abandoned_bytes: views::abandoned_bytes() as f64,
            }
        },
    }
}

/// Whether results must be copied into V8's heap: set `FAIRFS_NO_EXTERNAL_BUFFERS=1`
/// to test the path Electron and other V8-sandbox builds take.
fn copy_results() -> bool {
    static COPY: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *COPY.get_or_init(|| std::env::var_os("FAIRFS_NO_EXTERNAL_BUFFERS").is_some_and(|v| v == "1"))
}

/// Whole files below this are copied into V8's heap and their buffer reused at once.
/// Lent memory comes back only after a GC, and between GCs a busy reader would drain
/// the pool and churn the allocator; copying costs little next to the read below this.
const LEND_FILES_FROM: usize = 1024 * 1024;

/// Files this big and bigger are not read into memory V8 lends ([`lend_buffer`]): the
/// allocator behind V8 (glibc's malloc) maps every block from 32 MiB up afresh, so each
/// read would fault in and zero all its pages, where pooled memory is warm. A loop of
/// 64 MiB reads ran at 26-29 reads/s into V8's memory against 54-58 pooled.
const LEND_V8_MEMORY_BELOW: usize = 32 * 1024 * 1024;

/// A Buffer of `bytes`. Results under `lend_from` bytes are copied and their buffer
/// reused at once; larger ones are lent to JS as an external Buffer, whose memory
/// comes back when it is finalized ([`views`]).
fn to_buffer<'e>(env: &'e Env, views: &Rc<Views>, mut bytes: PooledBytes, lend_from: usize) -> Result<BufferSlice<'e>> {
    if bytes.len() < lend_from.max(MIN_CLASS) || copy_results() {
        return BufferSlice::copy_from(env, &*bytes);
    }
    let (ptr, len) = (bytes.as_mut_ptr(), bytes.len());
    external_view(env, views, &ViewedBytes::new(bytes), ptr, len, len)
}

/// Stream chunks smaller than this are copies. Each external Buffer costs Node a
/// tracked ArrayBuffer and a finalizer of its own, which for small chunks costs more
/// than the copy; from here up, lent pieces (kept from V8's count while the pool has
/// stock) spare V8 the mark-compacts that copies held by slow readers start
/// (BENCHMARKS.md, "Stream chunks of their own").
const COPY_PIECES_BELOW: usize = 16 * 1024;

/// A stream block as an array of Buffers of `piece` bytes each (the last may be
/// shorter), each over an ArrayBuffer of its own, as node:fs's chunks are: a consumer
/// that transfers one chunk's memory takes nothing from the others. Pieces under
/// [`COPY_PIECES_BELOW`] are copied and the block goes back to the pool at once;
/// otherwise it goes back after its last external piece is finalized.
fn to_pieces<'e>(env: &'e Env, views: &Rc<Views>, mut bytes: PooledBytes, piece: usize) -> Result<Array<'e>> {
    let len = bytes.len();
    let count = len.div_ceil(piece);
    let mut out = env.create_array(count as u32)?;
    if count == 1 {
        out.set(0, to_buffer(env, views, bytes, MIN_CLASS)?)?;
        return Ok(out);
    }
    if piece < COPY_PIECES_BELOW || copy_results() {
        for (i, part) in bytes.chunks(piece).enumerate() {
            out.set(i as u32, BufferSlice::copy_from(env, part)?)?;
        }
        return Ok(out);
    }
    let base = bytes.as_mut_ptr();
    let block = ViewedBytes::new(bytes);
    for i in 0..count {
        let start = i * piece;
        // SAFETY: `start < len`, so the pointer stays inside the block's bytes.
        let ptr = unsafe { base.add(start) };
        out.set(i as u32, external_view(env, views, &block, ptr, piece.min(len - start), len)?)?;
    }
    Ok(out)
}

/// An external Buffer over `ptr..ptr + len`, a range of `block`'s bytes that no
/// other Buffer views; `block_len` is the block's length, whose stock in the pool
/// decides what V8 is told ([`crate::external_memory`]).
fn external_view<'e>(
    env: &'e Env,
    views: &Rc<Views>,
    block: &Rc<ViewedBytes>,
    ptr: *mut u8,
    len: usize,
    block_len: usize,
) -> Result<BufferSlice<'e>> {
    // Whether the ledger counts this Buffer as lent: not if N-API copied it instead,
    // or made none (then the finalizer has run before `external_buffer` returns).
    let lent = Rc::new(std::cell::Cell::new(Lending::Creating));
    // The view's id in `views`, once it is watched (never, if N-API copied).
    let view = Rc::new(std::cell::Cell::new(None));
    let hint = (block.clone(), views.clone(), lent.clone(), view.clone());
    // SAFETY: `ptr..ptr + len` are initialised bytes of `block`'s heap buffer, which
    // does not move, and which the hint keeps (a count of `block`) until V8 calls the
    // finalizer. No other Buffer views this range. When the finalizer runs, `views`
    // says whether anything else may still see it; if so `block` is abandoned, never
    // used again, else it goes back to the pool with its last view. If N-API refuses
    // external buffers, or makes no Buffer, the finalizer runs at once.
    let buffer = unsafe {
        views::external_buffer(env, ptr, len, hint, move |env, (block, views, lent, view)| {
            if lent.replace(Lending::Finalized) == Lending::Lent {
                // At thread exit the ledger may be gone, and V8 with it.
                if let Ok(change) = LEDGER.try_with(|ledger| ledger.borrow_mut().collected(len as u64)) {
                    adjust_external_memory(&env, change);
                }
            }
            if let Some(id) = view.get() {
                if !views.finalized(env.raw(), id) {
                    block.abandon();
                }
            }
            drop(block)
        })
    }?;
    // Had the finalizer run already, it was a copy and will not run again.
    if lent.replace(Lending::Lent) == Lending::Creating {
        view.set(Some(views.watch(buffer.raw())));
        let short = !buffer_pool::global().has_stock(block_len);
        if let Ok(change) = LEDGER.try_with(|ledger| ledger.borrow_mut().lent(len as u64, short)) {
            adjust_external_memory(env, change);
        }
    }
    Ok(buffer)
}

/// Where an external Buffer stands with the [`LEDGER`].
#[derive(Clone, Copy, PartialEq)]
enum Lending {
    /// Being created: not yet in the ledger.
    Creating,
    /// In the ledger, until its finalizer takes it out.
    Lent,
    /// Finalized: taken out, or (a copy) never in.
    Finalized,
}

thread_local! {
    /// What V8 on this thread is told of the pooled memory lent to its Buffers.
    static LEDGER: std::cell::RefCell<Ledger> = std::cell::RefCell::new(Ledger::default());
}

/// Changes V8's count of external memory by `change` bytes. Best effort: failing
/// only means V8 collects sooner or later than it would.
fn adjust_external_memory(env: &Env, change: i64) {
    if change != 0 {
        let _ = env.adjust_external_memory(change);
    }
}

/// `node_api_create_external_string_latin1`, where this Node has it (experimental
/// from 20.4, Node-API 10 from 22.14). Looked up at run time, so that a Node without
/// it still loads the addon and gets copied strings.
type CreateExternalLatin1 = unsafe extern "C" fn(
    napi::sys::napi_env,
    *mut std::ffi::c_char,
    isize,
    napi::sys::napi_finalize,
    *mut std::ffi::c_void,
    *mut napi::sys::napi_value,
    *mut bool,
) -> napi::sys::napi_status;

fn create_external_latin1() -> Option<CreateExternalLatin1> {
    static FOUND: std::sync::OnceLock<Option<CreateExternalLatin1>> = std::sync::OnceLock::new();
    *FOUND.get_or_init(|| {
        let sym = find_node_symbol(c"node_api_create_external_string_latin1");
        // SAFETY: Node exports this symbol with exactly the signature of
        // `CreateExternalLatin1`.
        (!sym.is_null()).then(|| unsafe { std::mem::transmute::<*mut std::ffi::c_void, CreateExternalLatin1>(sym) })
    })
}

/// The address of Node's exported symbol `name`, or null.
#[cfg(unix)]
fn find_node_symbol(name: &std::ffi::CStr) -> *mut std::ffi::c_void {
    // SAFETY: dlsym with a NUL-terminated name only looks the symbol up.
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) }
}

/// The address of Node's exported symbol `name`, or null. On Windows Node-API lives
/// in the executable (node.exe, electron.exe), which is where napi-rs finds it too;
/// a Node embedded as libnode.dll gets copied strings.
#[cfg(windows)]
fn find_node_symbol(name: &std::ffi::CStr) -> *mut std::ffi::c_void {
    #[link(name = "kernel32")]
    extern "system" {
        fn GetModuleHandleW(name: *const u16) -> *mut std::ffi::c_void;
        fn GetProcAddress(module: *mut std::ffi::c_void, name: *const std::ffi::c_char) -> *mut std::ffi::c_void;
    }
    // SAFETY: a null name asks for the executable's module, which is never unloaded;
    // GetProcAddress with a NUL-terminated name only looks the symbol up.
    unsafe {
        let exe = GetModuleHandleW(std::ptr::null());
        if exe.is_null() {
            return std::ptr::null_mut();
        }
        GetProcAddress(exe, name.as_ptr())
    }
}

/// Frees the bytes behind an external string once V8 has collected it.
unsafe extern "C" fn drop_text(env: napi::sys::napi_env, _data: *mut std::ffi::c_void, hint: *mut std::ffi::c_void) {
    // SAFETY: `hint` is the `Box<PooledBytes>` leaked in `to_latin1_string`, and V8
    // calls this finalizer once.
    let bytes = unsafe { Box::from_raw(hint.cast::<PooledBytes>()) };
    if !env.is_null() {
        let mut total = 0;
        // SAFETY: `env` is the live environment the string belonged to (null when it
        // is being torn down); adjusting external memory is allowed in finalizers.
        unsafe { napi::sys::napi_adjust_external_memory(env, -(bytes.len() as i64), &mut total) };
    }
}

/// A JS string of the latin1 `bytes`: external (no copy; the bytes go back to the
/// pool after V8 collects the string) from [`LEND_FILES_FROM`] where Node allows it,
/// else copied into V8's heap.
fn to_latin1_string(env: &Env, bytes: PooledBytes) -> Result<napi::sys::napi_value> {
    if let Some(create) = create_external_latin1().filter(|_| bytes.len() >= LEND_FILES_FROM && !copy_results()) {
        let (ptr, len) = (bytes.as_ptr(), bytes.len());
        // V8 does not count external strings towards its heap: without this a loop of
        // big text reads held gigabytes until a GC happened to come. The finalizer
        // takes it back, whenever it runs (at once if Node copies).
        env.adjust_external_memory(len as i64)?;
        let hint = Box::into_raw(Box::new(bytes));
        let mut value = std::ptr::null_mut();
        let mut copied = false;
        // SAFETY: `ptr..ptr + len` are the bytes owned by `*hint`, which stay put and
        // unchanged until `drop_text` runs: when V8 collects the string, or at once
        // if Node copied them (`copied`). If the call fails no finalizer runs and we
        // take the bytes back.
        let status = unsafe {
            create(env.raw(), ptr as *mut _, len as isize, Some(drop_text), hint.cast(), &mut value, &mut copied)
        };
        if status == napi::sys::Status::napi_ok {
            return Ok(value);
        }
        // SAFETY: the call failed, so no finalizer owns `hint`.
        let bytes = unsafe { Box::from_raw(hint) };
        env.adjust_external_memory(-(len as i64))?;
        return Ok(env.create_string_latin1(&**bytes)?.raw());
    }
    Ok(env.create_string_latin1(&*bytes)?.raw())
}

/// The lent Buffer, its memory and length; its reference is deleted. `None` if N-API
/// cannot give it back (the read is then reported as an internal failure).
fn take_lent(env: &Env, lent: LentBuffer) -> Option<(Unknown<'_>, *const u8, usize)> {
    let mut value = std::ptr::null_mut();
    // SAFETY: on the JS thread, with a reference this environment created; the value
    // stays alive in the current handle scope after the reference is deleted.
    let status = unsafe { napi::sys::napi_get_reference_value(env.raw(), lent.reference, &mut value) };
    delete_reference(env, lent.reference);
    if status != napi::sys::Status::napi_ok || value.is_null() {
        return None;
    }
    // SAFETY: `value` is a live value of this environment.
    Some((unsafe { Unknown::from_raw_unchecked(env.raw(), value) }, lent.data, lent.len))
}

fn error_to_js(env: &Env, err: ReadError) -> Result<Unknown<'_>> {
    match err {
        // libuv's error number and the syscall: JS names the error from Node's own
        // map (`util.getSystemErrorMap()`), exactly as node:fs does.
        ReadError::Io(e) => (e.uv_errno(), e.syscall.as_str()).into_unknown(env),
        ReadError::TooLarge { size, limit } => (size as f64, limit as f64).into_unknown(env),
        ReadError::Cancelled => Null.into_unknown(env),
        ReadError::Panicked => ("panic",).into_unknown(env),
    }
}

impl ToNapiValue for Batch {
    /// `[id, result, id, result, ...]`, where result is a Buffer (read), a number
    /// (opened fd), `undefined` (closed), `[uvErrno, syscall]` (OS error: libuv's
    /// negative error number), `[size, limit]` (file over the limit), `['panic']` (a pool
    /// thread panicked), or `null` (cancelled).
    unsafe fn to_napi_value(raw_env: napi::sys::napi_env, batch: Self) -> Result<napi::sys::napi_value> {
        let env = Env::from_raw(raw_env);
        if !views::js_can_run(raw_env) {
            // The environment is being torn down, and Node flushes the queued call:
            // nobody will see these outcomes, so they are dropped (the memory goes back
            // to the pool, an fd opened for nobody is closed) rather than made into
            // Buffers that teardown would have to judge.
            drop(batch);
            return unsafe { <()>::to_napi_value(raw_env, ()) };
        }
        let mut st = state(&env).ok();
        let views =
            st.as_ref().map(|st| st.views.clone()).ok_or_else(|| Error::from_reason("fairfs: no environment state"))?;
        // The Buffers made here must be judged before their finalizers at teardown,
        // even if making the batch fails part way.
        let rearm = Rearm(&env, &views);
        let mut out = env.create_array(batch.0.len() as u32 * 2)?;
        for (i, (id, delivered)) in batch.0.into_iter().enumerate() {
            out.set(2 * i as u32, id as f64)?;
            let slot = 2 * i as u32 + 1;
            // The outcome of a read lent a Buffer has come, whatever it is: the read
            // no longer writes into the Buffer, and the reference goes.
            let lent = st.as_mut().and_then(|st| st.lent_files.remove(&id)).and_then(|b| take_lent(&env, b));
            match delivered {
                Delivered::LentFile(filled) => match lent {
                    Some((buffer, _, len)) if filled == len => out.set(slot, buffer)?,
                    // The file shrank after fstat: a Buffer of what was read.
                    Some((_, data, len)) => {
                        // SAFETY: `data..data + len` is the lent Buffer's memory, alive
                        // in this scope, and the read that wrote `filled <= len` bytes
                        // of it has finished.
                        let bytes = unsafe { std::slice::from_raw_parts(data, filled.min(len)) };
                        out.set(slot, BufferSlice::copy_from(&env, bytes)?)?
                    }
                    None => out.set(slot, error_to_js(&env, ReadError::Panicked)?)?,
                },
                Delivered::WantsMemory(_) => out.set(slot, error_to_js(&env, ReadError::Panicked)?)?,
                Delivered::Bytes(Ok(bytes)) => out.set(slot, to_buffer(&env, &views, bytes, LEND_FILES_FROM)?)?,
                Delivered::Text(bytes) => {
                    let value = to_latin1_string(&env, bytes)?;
                    // SAFETY: `value` was just created in this environment.
                    out.set(slot, unsafe { Unknown::from_raw_unchecked(raw_env, value) })?
                }
                Delivered::Chunk(Ok(bytes), piece) => out.set(slot, to_pieces(&env, &views, bytes, piece)?)?,
                Delivered::Opened(Ok(fd)) => {
                    let fd = fd.into_raw();
                    if let Some(st) = st.as_mut() {
                        st.fds.insert(fd);
                    }
                    out.set(slot, fd)?
                }
                Delivered::Closed(Ok(())) => out.set(slot, ())?,
                Delivered::Bytes(Err(e))
                | Delivered::Chunk(Err(e), _)
                | Delivered::Opened(Err(e))
                | Delivered::Closed(Err(e)) => out.set(slot, error_to_js(&env, e)?)?,
                Delivered::Cancelled => out.set(slot, Null)?,
                Delivered::Batch(slabs, results) => {
                    // [slabs, spans, others]: result j is `len` bytes at `offset` of
                    // slabs[slab], with spans[3j..3j+3] = [slab, offset, len], or, where
                    // slab is -1, others[j] (a Buffer of its own or an error).
                    let mut slab_list = env.create_array(slabs.len() as u32)?;
                    for (k, slab) in slabs.into_iter().enumerate() {
                        slab_list.set(k as u32, to_buffer(&env, &views, slab, MIN_CLASS)?)?;
                    }
                    let mut spans = vec![-1i32; 3 * results.len()];
                    let mut others = env.create_array(results.len() as u32)?;
                    for (j, outcome) in results.into_iter().enumerate() {
                        match outcome {
                            Ok(Packed::Span { slab, offset, len }) => {
                                spans[3 * j..3 * j + 3].copy_from_slice(&[slab as i32, offset as i32, len as i32])
                            }
                            Ok(Packed::Own(bytes)) => {
                                others.set(j as u32, to_buffer(&env, &views, bytes, LEND_FILES_FROM)?)?
                            }
                            Err(e) => others.set(j as u32, error_to_js(&env, e)?)?,
                        }
                    }
                    let mut triple = env.create_array(3)?;
                    triple.set(0, slab_list)?;
                    triple.set(1, Int32Array::new(spans))?;
                    triple.set(2, others)?;
                    out.set(slot, triple)?
                }
            }
        }
        drop(rearm);
        // SAFETY: `out` was created in `raw_env`, the environment we are called in.
        unsafe { Array::to_napi_value(raw_env, out) }
    }
}

/// Makes the teardown sentinel anew when dropped ([`Views::rearm`]).
struct Rearm<'a>(&'a Env, &'a Rc<Views>);

impl Drop for Rearm<'_> {
    fn drop(&mut self) {
        // Failing leaves the last sentinel, older than these Buffers: their finalizers
        // at teardown then find JS stopped and give up what they cannot prove free.
        let _ = self.1.rearm(self.0);
    }
}

/// One job of the census of libuv's threads ([`crate::host_threads`]): queued on
/// libuv's pool (N-API async work runs there), it notes its thread and waits for the
/// other `expected` jobs. Resolves whether the census is complete.
pub struct CensusJob(usize);

impl Task for CensusJob {
    type Output = bool;
    type JsValue = bool;

    fn compute(&mut self) -> Result<bool> {
        Ok(crate::host_threads::census(self.0))
    }

    fn resolve(&mut self, _env: Env, complete: bool) -> Result<bool> {
        Ok(complete)
    }
}

/// Queue `expected` of these at once, one per libuv thread (`UV_THREADPOOL_SIZE`).
#[napi]
pub fn census_host_pool(expected: u32) -> AsyncTask<CensusJob> {
    AsyncTask::new(CensusJob(expected as usize))
}
