//! The N-API binding: a thin layer between the JS wrapper (`index.js`) and the core.
//!
//! * `init(onComplete, maxLength)` sets up one [`EnvState`] per Node environment
//!   (the main thread and each worker_thread), holding one threadsafe function.
//! * `readPath` / `readFd` submit a read to the process-wide pool and return its id.
//! * Pool threads push finished reads onto the environment's completion queue and
//!   wake the JS thread once per batch; the JS thread hands the whole batch to
//!   `onComplete` as `[id, result, id, result, ...]`.
//! * The threadsafe function is referenced only while reads are pending, so a
//!   pending read keeps the process alive exactly as long as node:fs's would.

use std::collections::HashMap;
use std::ffi::CString;
use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::*;
use napi::threadsafe_function::{
    ThreadsafeCallContext, ThreadsafeFunction, ThreadsafeFunctionCallMode,
};
use napi_derive::napi;

use crate::error::ReadError;
use crate::pool::{global, Ticket};
use crate::read::{ReadLimits, Source};
use crate::request::{submit_read, Outcome};

/// Finished reads waiting for the JS thread, in completion order.
type DoneQueue = Arc<Mutex<Vec<(u32, Outcome)>>>;

/// A batch of finished reads on its way to `onComplete`.
pub struct Batch(Vec<(u32, Outcome)>);

type Waker = ThreadsafeFunction<(), (), Batch, Status, false, true>;

/// Per-environment state, kept in N-API instance data and used only on its JS thread.
struct EnvState {
    /// Reads submitted from this environment and not yet delivered, for `cancel`.
    pending: HashMap<u32, Ticket>,
    next_id: u32,
    sink: Arc<Sink>,
    /// Largest result allowed: `buffer.constants.MAX_LENGTH` of this Node.
    max_length: u64,
    /// Whether the threadsafe function currently keeps the event loop alive.
    referenced: bool,
}

/// Where pool threads deliver finished reads.
struct Sink {
    done: DoneQueue,
    waker: Waker,
}

impl Sink {
    fn deliver(&self, id: u32, outcome: Outcome) {
        let mut done = self.done.lock().unwrap_or_else(|p| p.into_inner());
        let first = done.is_empty();
        done.push((id, outcome));
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
        return Err(Error::new(
            Status::GenericFailure,
            "fairfs: cannot (un)ref the completion callback",
        ));
    }
    st.referenced = want;
    Ok(())
}

/// Sets up this environment: `onComplete(batch)` receives finished reads.
#[napi(
    ts_args_type = "onComplete: (batch: Array<number | Buffer | [number, string, string, string] | null>) => void, maxLength: number"
)]
pub fn init(env: Env, on_complete: Function<Batch, ()>, max_length: f64) -> Result<()> {
    if env.get_instance_data::<EnvState>()?.is_some() {
        return Err(Error::new(
            Status::GenericFailure,
            "fairfs: init() called twice",
        ));
    }
    let done: DoneQueue = Arc::default();
    let queue = done.clone();
    let waker: Waker = on_complete
        .build_threadsafe_function::<()>()
        .callee_handled::<false>()
        .weak::<true>()
        .build_callback(move |ctx: ThreadsafeCallContext<()>| {
            let batch = std::mem::take(&mut *queue.lock().unwrap_or_else(|p| p.into_inner()));
            if let Ok(st) = state(&ctx.env) {
                for (id, _) in &batch {
                    st.pending.remove(id);
                }
                if st.pending.is_empty() {
                    set_referenced(&ctx.env, st, false)?;
                }
            }
            Ok(Batch(batch))
        })?;
    let st = EnvState {
        pending: HashMap::new(),
        next_id: 0,
        sink: Arc::new(Sink { done, waker }),
        max_length: max_length as u64,
        referenced: false,
    };
    env.set_instance_data(st, (), |ctx| {
        // The environment is going away (worker terminated, process exiting): stop
        // its reads so nothing is read for nobody. Their outcomes are dropped.
        for ticket in ctx.value.pending.values() {
            global().cancel(ticket);
        }
    })
}

fn submit(env: &Env, source: Source) -> Result<u32> {
    let st = state(env)?;
    let id = st.next_id;
    st.next_id = st.next_id.wrapping_add(1);
    let pool = global();
    let limits = ReadLimits {
        chunk_size: pool.chunk_size(),
        max_length: st.max_length,
        ..ReadLimits::default()
    };
    let sink = st.sink.clone();
    let ticket = submit_read(pool, source, limits, move |outcome| {
        sink.deliver(id, outcome)
    });
    st.pending.insert(id, ticket);
    set_referenced(env, st, true)?;
    Ok(id)
}

/// Reads the file at `path` (a string or the bytes of a Buffer path), opened with
/// numeric `flags` and `mode`. Returns the request id.
#[napi]
pub fn read_path(env: Env, path: Either<String, &[u8]>, flags: i32, mode: u32) -> Result<u32> {
    let bytes = match &path {
        Either::A(s) => s.as_bytes(),
        Either::B(b) => b,
    };
    let path = CString::new(bytes)
        .map_err(|_| Error::new(Status::InvalidArg, "path contains a NUL byte"))?;
    submit(&env, Source::Path { path, flags, mode })
}

/// Reads the caller's `fd` from its current position, leaving it open. Returns the request id.
#[napi]
pub fn read_fd(env: Env, fd: i32) -> Result<u32> {
    submit(&env, Source::Fd(fd))
}

/// Cancels request `id`. Its outcome (cancelled, or the result if it was already
/// finishing) still arrives through `onComplete`.
#[napi]
pub fn cancel(env: Env, id: u32) -> Result<()> {
    if let Some(ticket) = state(&env)?.pending.get(&id) {
        global().cancel(ticket);
    }
    Ok(())
}

/// Resizes the pool and/or sets the chunk size. The JS layer validates the values.
#[napi]
pub fn configure(threads: Option<u32>, chunk_size: Option<u32>) {
    global().configure(threads.map(|t| t as usize), chunk_size.map(|c| c as usize));
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
}

#[napi]
pub fn stats() -> PoolStats {
    let pool = global();
    let s = pool.stats();
    PoolStats {
        threads: s.threads as u32,
        queued: s.queued as u32,
        active: s.active as u32,
        completed: s.completed as f64,
        cancelled: s.cancelled as f64,
        bytes_read: s.bytes_read as f64,
        chunks_read: s.chunks_read as f64,
        chunk_size: pool.chunk_size() as u32,
    }
}

impl ToNapiValue for Batch {
    /// `[id, result, id, result, ...]`, where result is a Buffer on success,
    /// `[errno, code, description, syscall]` for an OS error, the size (a number)
    /// for a file over the limit, and `null` for a cancelled read.
    unsafe fn to_napi_value(
        raw_env: napi::sys::napi_env,
        batch: Self,
    ) -> Result<napi::sys::napi_value> {
        let env = Env::from_raw(raw_env);
        let mut out = env.create_array(batch.0.len() as u32 * 2)?;
        for (i, (id, outcome)) in batch.0.into_iter().enumerate() {
            out.set(2 * i as u32, id)?;
            let slot = 2 * i as u32 + 1;
            match outcome {
                Ok(bytes) => out.set(slot, Buffer::from(bytes))?,
                Err(ReadError::Io(e)) => out.set(
                    slot,
                    (
                        e.node_errno(),
                        e.code(),
                        e.description(),
                        e.syscall.as_str(),
                    ),
                )?,
                Err(ReadError::TooLarge { size }) => out.set(slot, size as f64)?,
                Err(ReadError::Cancelled) => out.set(slot, Null)?,
            }
        }
        // SAFETY: `out` was created in `raw_env`, the environment we are called in.
        unsafe { Array::to_napi_value(raw_env, out) }
    }
}
