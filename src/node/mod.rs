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
//!
//! Here: the `#[napi]` functions that submit work. An environment's state and its
//! completions are in `env`, memory V8 lends a read in `lending`, how results become
//! JS values in `results`, what JS may still see of pooled memory in `views`,
//! `stats()` in `stats`, and the census of libuv's threads in `census`.

mod census;
mod env;
mod lending;
mod results;
mod stats;
mod views;
#[cfg(unix)]
mod writes;

use std::collections::{HashMap, HashSet};
use std::ffi::CString;
use std::rc::Rc;
use std::sync::{Arc, Condvar, Mutex};

use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeCallContext, ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;

use crate::error::ReadError;
use crate::job::Job;
use crate::jobs::batch::{BatchDone, BatchSlots};
#[cfg(unix)]
use crate::jobs::metadata::{Answer, Query};
use crate::jobs::once::OnceJob;
use crate::jobs::pack::Packed;
use crate::jobs::read_file::{FilledOutcome, MemoryAsker, ReadFileJob};
use crate::jobs::stream::{self, BlockJob, OpenJob, OpenedFd};
use crate::memory::buffer_pool::{self, PooledBytes, MIN_CLASS};
use crate::memory::external_memory::Ledger;
use crate::memory::lent::{Filled, Lent};
use crate::pool::{global, Ticket};
use crate::read::pooled_only;
use crate::read::{ReadLimits, Source};
use env::*;
use lending::*;
use results::*;
use views::{ViewedBytes, Views};

/// Sets up this environment: `onComplete(batch)` receives finished reads.
#[napi(
    ts_args_type = "onComplete: (batch: Array<number | Buffer | [number, string] | null>) => void, maxLength: number"
)]
pub fn init(env: Env, on_complete: Function<Batch, ()>, max_length: f64) -> Result<()> {
    // The first environment's load, before any thread of ours: what runs now besides
    // this thread is the runtime's (policy::host_threads).
    crate::policy::host_threads::note_runtime_threads();
    crate::cached::prepare();
    // Accepted writes finish before the process exits, as libuv's queued work does.
    crate::at_exit::finish_at_exit();
    env::init_env(env, on_complete, max_length)
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
    let lane = match &source {
        Source::Path { path, .. } => crate::lanes::of_path(path),
        Source::Fd(fd) => crate::lanes::of_fd(*fd),
        Source::Opened(_) => None,
    };
    submit_jobs_on(env, lane, |deliver, ask| {
        let job = ReadFileJob::new(source, limits, move |outcome| deliver(delivered(outcome, text)));
        vec![Box::new(if lend { job.lending(LEND_FILES_FROM..LEND_V8_MEMORY_BELOW, ask) } else { job })]
    })
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
        let done: BatchDone = Box::new(move |slabs, outcomes| deliver(Delivered::Batch(slabs, outcomes)));
        let batch = Arc::new(BatchSlots::new(sources.len(), Some(buffer_pool::global()), done));
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
    submit_on(&env, crate::lanes::of_path(&path), |deliver| {
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
    crate::lanes::end_flow(flow as u64);
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
    submit_on(&env, crate::lanes::of_fd(fd), |deliver| {
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

/// Closes `fd`, which `openCached` opened, on the JS thread where that cannot wait
/// (`cached::close_regular`): true, or the error as `[errno, syscall]`, once closed;
/// false with `fd` still open (`closeFd` then closes it on the pool).
#[napi]
pub fn close_cached(env: &Env, fd: i32) -> Result<Either<bool, Unknown<'_>>> {
    let Some(closed) = crate::cached::close_regular(fd) else { return Ok(Either::A(false)) };
    state(env)?.fds.remove(&fd);
    match closed {
        Ok(()) => Ok(Either::A(true)),
        Err(e) => Ok(Either::B(results::error_to_js(env, e.into())?)),
    }
}

/// `fs.open` for reading on the JS thread, of a regular file whose lookup is cached
/// (`cached::open_for_caller`): the caller's fd, or null (node:fs's open opens it).
#[napi]
pub fn open_for_caller_cached(path: Either<String, &[u8]>, flags: i32) -> Result<Option<i32>> {
    Ok(crate::cached::open_for_caller(&c_path(&path)?, flags))
}

/// node:fs opened `fd` for reading for a caller, answering in `took_ms`: how a mount
/// earns the calling thread's opens when its files are opened through node:fs
/// (`cached::observe_pool_open`; the time includes libuv's queue, so it can only
/// make a mount look slower than it is).
#[napi]
pub fn observe_open(fd: i32, took_ms: f64) {
    crate::cached::observe_pool_open(fd, std::time::Duration::from_secs_f64(took_ms.max(0.0) / 1000.0));
}

/// `fs.close` on the JS thread of a caller's fd opened for reading only, with none of
/// fairfs's requests on it in flight (the JS side knows): true, or the error as
/// `[errno, syscall]`, once closed, with what `closeInOrder` forgets forgotten; false
/// with `fd` still open (`closeInOrder` then closes it on the pool).
#[napi]
pub fn close_read_only_cached(env: &Env, fd: i32) -> Result<Either<bool, Unknown<'_>>> {
    let Some(closed) = crate::cached::close_read_only(fd) else { return Ok(Either::A(false)) };
    state(env)?.fds.remove(&fd);
    #[cfg(unix)]
    crate::lanes::end_flow(crate::jobs::write::fd_flow(fd));
    crate::lanes::forget_fd(fd);
    match closed {
        Ok(()) => Ok(Either::A(true)),
        Err(e) => Ok(Either::B(results::error_to_js(env, e.into())?)),
    }
}

/// Closes `fd`. Returns the request id.
#[napi]
pub fn close_fd(env: Env, fd: i32) -> Result<f64> {
    state(&env)?.fds.remove(&fd);
    let id = submit_on(&env, crate::lanes::of_fd(fd), |deliver| {
        let work = move || (stream::close(fd), 0);
        Box::new(OnceJob::new(work, move |r| deliver(r.map_or(Delivered::Cancelled, Delivered::Done))))
    })?;
    state(&env)?.closing.insert(id as u64);
    Ok(id)
}

/// Writes all of `data` to the file at `path` (a string or the bytes of a Buffer
/// path), opened with numeric `flags` and `mode`, a chunk per step on the pool (an
/// append in one step); with `flush`, `fsync` before the close; with `writeEmpty`, an
/// empty `data` is still one `write(2)` (node:fs's callback form). The pool writes from
/// `data` itself, which JS must not change until the outcome. Returns the request id.
#[cfg(unix)]
#[napi]
pub fn write_path(
    env: Env,
    path: Either<String, &[u8]>,
    flags: i32,
    mode: u32,
    data: BufferSlice,
    flush: bool,
    write_empty: bool,
) -> Result<f64> {
    let path = c_path(&path)?;
    writes::submit_write(&env, crate::write::Target::Path { path, flags, mode }, data, flush, write_empty)
}

/// Writes all of `data` to the caller's `fd` at its current position, leaving it
/// open, as [`write_path`] writes. Returns the request id.
#[cfg(unix)]
#[napi]
pub fn write_fd(env: Env, fd: i32, data: BufferSlice, flush: bool, write_empty: bool) -> Result<f64> {
    writes::submit_write(&env, crate::write::Target::Fd(fd), data, flush, write_empty)
}

/// `fs.write` and `fs.writev` on the pool: every byte of `buffers` (which JS must not
/// change until the outcome) at `position` (negative: the fd's position), after the
/// fd's earlier requests. The result is the bytes written. Returns the request id.
#[cfg(unix)]
#[napi]
pub fn write_buffers(env: Env, fd: i32, buffers: Vec<BufferSlice>, position: f64) -> Result<f64> {
    let position = (position >= 0.0).then_some(position as u64);
    writes::submit_fd_write(&env, fd, &buffers, position, None)
}

/// A new chain for a WriteStream's writes (`WriteChain`): once one of its writes falls
/// short or fails, its later writes come back cancelled, unwritten.
#[cfg(unix)]
#[napi]
pub fn write_chain() -> External<std::sync::Arc<crate::jobs::write::WriteChain>> {
    External::new(Default::default())
}

/// [`write_buffers`] as a write of `chain`.
#[cfg(unix)]
#[napi]
pub fn write_chained(
    env: Env,
    chain: &External<std::sync::Arc<crate::jobs::write::WriteChain>>,
    fd: i32,
    buffers: Vec<BufferSlice>,
    position: f64,
) -> Result<f64> {
    let position = (position >= 0.0).then_some(position as u64);
    writes::submit_fd_write(&env, fd, &buffers, position, Some((**chain).clone()))
}

/// `fs.fsync`, or `fs.fdatasync` with `dataOnly`, after the fd's earlier requests.
/// Returns the request id.
#[cfg(unix)]
#[napi]
pub fn sync_fd(env: Env, fd: i32, data_only: bool) -> Result<f64> {
    writes::submit_fd_call(&env, fd, crate::jobs::write::FdOp::Sync { data_only })
}

/// `fs.close` after the fd's earlier requests (a stream's `closeFd` does not wait for
/// them). Returns the request id.
#[cfg(unix)]
#[napi]
pub fn close_in_order(env: Env, fd: i32) -> Result<f64> {
    state(&env)?.fds.remove(&fd);
    let id = writes::submit_fd_call(&env, fd, crate::jobs::write::FdOp::Close)?;
    state(&env)?.closing.insert(id as u64);
    crate::lanes::end_flow(crate::jobs::write::fd_flow(fd));
    crate::lanes::forget_fd(fd);
    Ok(id)
}

/// `unlink` (`kind` 0) of `path`, `rename` (1) of `path` to `dest`, or `mkdir` (2) of
/// `path` with `mode`, on the pool: `undefined` or the error. Returns the request id.
#[cfg(unix)]
#[napi]
pub fn mutate_path(
    env: Env,
    kind: u32,
    path: Either<String, &[u8]>,
    dest: Option<Either<String, &[u8]>>,
    mode: u32,
) -> Result<f64> {
    use crate::jobs::mutate::Mutation;
    let path = c_path(&path)?;
    let mutation = match (kind, dest) {
        (0, _) => Mutation::Unlink(path),
        (1, Some(dest)) => Mutation::Rename { from: path, to: c_path(&dest)? },
        (2, _) => Mutation::Mkdir { path, mode },
        _ => return Err(Error::new(Status::InvalidArg, "fairfs: unknown change")),
    };
    let lane = match &mutation {
        Mutation::Rename { from, to } => crate::lanes::of_paths(from, to),
        other => crate::lanes::of_path(other.path()),
    };
    submit_on(&env, lane, |deliver| {
        mutation.into_job(move |r| deliver(r.map_or(Delivered::Cancelled, Delivered::Done)))
    })
}

/// `copyFile` of `src` to `dest` with `fs.constants.COPYFILE_*` `mode` bits, a chunk per
/// step on the pool: `undefined` or the error. Returns the request id.
#[cfg(unix)]
#[napi]
pub fn copy_file(env: Env, src: Either<String, &[u8]>, dest: Either<String, &[u8]>, mode: u32) -> Result<f64> {
    let (src, dest) = (c_path(&src)?, c_path(&dest)?);
    let chunk_size = global().chunk_size();
    submit_on(&env, crate::lanes::of_paths(&src, &dest), |deliver| {
        Box::new(crate::jobs::copy_file::CopyFileJob::new(src, dest, mode, chunk_size, move |outcome| {
            deliver(match outcome {
                Err(ReadError::Cancelled) => Delivered::Cancelled,
                outcome => Delivered::Done(outcome),
            })
        }))
    })
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
    crate::lanes::cancel_many(&tickets);
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
/// open files and bytes in flight, and the most workers a slow mount's lane grows to
/// (`laneThreads`). The JS layer validates them.
#[napi]
#[allow(clippy::too_many_arguments)] // one per option: JS passes them positionally
pub fn configure(
    threads: Option<u32>,
    chunk_size: Option<u32>,
    max_pooled_bytes: Option<f64>,
    nice: Option<i32>,
    large_limit: Option<u32>,
    max_open_files: Option<u32>,
    max_bytes_in_flight: Option<f64>,
    lane_threads: Option<u32>,
) {
    if let Some(n) = lane_threads {
        crate::lanes::set_max_threads(n as usize);
    }
    if let Some(size) = chunk_size {
        crate::lanes::set_chunk_size(size as usize);
    }
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

/// Turns the calling-thread fast paths on or off for the whole process, worker_threads
/// included (`configure({ fastPath })`; [`crate::cached::set_enabled`]).
#[napi]
pub fn set_fast_path(on: bool) {
    crate::cached::set_enabled(on);
}

/// Whether the fast paths are on (`FAIRFS_FAST_PATH=0` turns them off at start).
#[napi]
pub fn fast_path_enabled() -> bool {
    crate::cached::enabled()
}

/// `stat` (`follow`) or `lstat` of a path on the pool: a Float64Array of the
/// `fs.Stats` fields, or a BigInt64Array if `bigint`.
#[cfg(unix)]
#[napi]
pub fn stat_path(env: Env, path: Either<String, &[u8]>, follow: bool, bigint: bool) -> Result<f64> {
    let path = c_path(&path)?;
    submit_query(&env, Query::Stat { path, follow }, bigint)
}

/// `stat` (`follow`) or `lstat` on the calling thread where it cannot block
/// ([`crate::cached::stat_cached`]). The fields go into `into`, an array JS keeps for
/// every call (a Float64Array, device and inode numbers unsigned, or a BigInt64Array
/// for a `BigIntStats`), rather than into a typed array made per call, whose
/// ArrayBuffer costs V8 an allocation, a registration and a sweep. Answers `true` once
/// `into` holds them, the error as [`stat_path`] delivers one (`[errno, syscall]`: a
/// miss the dentry cache knows), or `null`, and the caller asks the pool.
#[cfg(unix)]
#[napi(ts_return_type = "true | [number, string] | null")]
pub fn stat_cached(
    path: Either<String, &[u8]>,
    follow: bool,
    into: Either<&mut [f64], &mut [i64]>,
) -> Result<Option<Either<bool, (i32, &'static str)>>> {
    let path = c_path(&path)?;
    let too_short = || Error::new(Status::InvalidArg, "fairfs: statCached needs 18 slots");
    Ok(match crate::cached::stat_cached(&path, follow) {
        None => None,
        Some(Err(e)) => Some(Either::B((e.uv_errno(), e.syscall.as_str()))),
        Some(Ok(slots)) => {
            match into {
                Either::A(numbers) => numbers
                    .get_mut(..18)
                    .ok_or_else(too_short)?
                    .copy_from_slice(&crate::jobs::metadata::stat_numbers(&slots)),
                Either::B(bigints) => bigints.get_mut(..18).ok_or_else(too_short)?.copy_from_slice(&slots),
            }
            Some(Either::A(true))
        }
    })
}

/// Wakes the process-wide pool for the queries this turn of the event loop submitted
/// ([`submit_query_on`]): the JS side calls it once a turn that made any.
#[napi]
pub fn nudge_pool() {
    crate::lanes::nudge();
}

/// `fstat` of an fd on the pool, as [`stat_path`] answers (a FileHandle's `stat()`).
#[cfg(unix)]
#[napi]
pub fn fstat_fd(env: Env, fd: i32, bigint: bool) -> Result<f64> {
    submit_query(&env, Query::Fstat(fd), bigint)
}

/// `realpath` of a path on the pool: a Buffer of the canonical path, or the error.
#[cfg(unix)]
#[napi]
pub fn realpath_path(env: Env, path: Either<String, &[u8]>) -> Result<f64> {
    let path = c_path(&path)?;
    submit_query(&env, Query::Realpath(path), false)
}

/// A directory's entries on the pool (`readdir`): a Buffer of them in byte order,
/// packed by [`crate::jobs::metadata::pack_entries`]; or the error.
#[cfg(unix)]
#[napi]
pub fn scandir_path(env: Env, path: Either<String, &[u8]>) -> Result<f64> {
    let path = c_path(&path)?;
    submit_query(&env, Query::Scandir(path), false)
}

/// `access` of a path on the pool with `fs.constants` mode bits: `undefined`, or the
/// error.
#[cfg(unix)]
#[napi]
pub fn access_path(env: Env, path: Either<String, &[u8]>, mode: i32) -> Result<f64> {
    let path = c_path(&path)?;
    submit_query(&env, Query::Access { path, mode }, false)
}

/// `access` on the calling thread where it cannot block
/// ([`crate::cached::access_cached`]): `true`, the error as [`access_path`] delivers
/// one (`[errno, syscall]`), or `null`, and the caller asks the pool.
#[cfg(unix)]
#[napi(ts_return_type = "true | [number, string] | null")]
pub fn access_cached(path: Either<String, &[u8]>, mode: i32) -> Result<Option<Either<bool, (i32, &'static str)>>> {
    let path = c_path(&path)?;
    Ok(crate::cached::access_cached(&path, mode).map(|answer| match answer {
        Ok(()) => Either::A(true),
        Err(e) => Either::B((e.uv_errno(), e.syscall.as_str())),
    }))
}

#[cfg(unix)]
fn submit_query(env: &Env, query: Query, bigint: bool) -> Result<f64> {
    let lane = match &query {
        Query::Stat { path, .. } | Query::Access { path, .. } | Query::Realpath(path) | Query::Scandir(path) => {
            crate::lanes::of_path(path)
        }
        Query::Fstat(fd) => crate::lanes::of_fd(*fd),
    };
    submit_query_on(env, lane, |deliver| {
        query.into_job(move |answer| {
            deliver(match answer {
                None => Delivered::Cancelled,
                Some(Ok(Answer::Stats(slots))) => Delivered::Stats(slots, bigint),
                Some(Ok(Answer::Allowed)) => Delivered::Done(Ok(())),
                Some(Ok(Answer::Path(bytes) | Answer::Entries(bytes))) => {
                    Delivered::Bytes(Ok(PooledBytes::unpooled(bytes)))
                }
                Some(Err(e)) => Delivered::Done(Err(e)),
            })
        })
    })
}
