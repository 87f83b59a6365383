//! One Node environment's side of the binding (the main thread, or a worker_thread):
//! its requests, the completion queue pool threads deliver into, the one wake-up per
//! batch, keeping the event loop alive while reads are pending, and what its
//! teardown stops, ends and closes.

use super::*;

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
    /// A call with no result: a close, an `access` that found what it asked for.
    Done(std::result::Result<(), ReadError>),
    /// The bytes an `fs.write` or `fs.writev` wrote.
    #[cfg(unix)]
    Written(std::result::Result<usize, ReadError>),
    /// The fields of an `fs.Stats` (`stat`, `lstat`, `fstat`), for a `BigIntStats` if
    /// the flag is set. A failed stat is [`Delivered::Done`]'s error.
    #[cfg(unix)]
    Stats(crate::sys::StatSlots, bool),
    /// The outcomes of a `readPaths` batch, in order, and the slabs they point into.
    Batch(Vec<PooledBytes>, Vec<std::result::Result<Packed, ReadError>>),
    /// Cancelled before it ran.
    Cancelled,
    /// Not an outcome: the read waits for a Buffer of this many bytes to read into
    /// ([`lend_buffer`]).
    WantsMemory(u64),
}

/// Hands a finished request to its environment's completion queue.
pub(super) type Deliver = Box<dyn FnOnce(Delivered) + Send>;

/// Finished requests waiting for the JS thread, in completion order.
pub(super) type DoneQueue = Arc<Mutex<Vec<(u64, Delivered)>>>;

/// A batch of finished requests on its way to `onComplete`.
pub struct Batch(pub(super) Vec<(u64, Delivered)>);

pub(super) type Waker = ThreadsafeFunction<(), (), Batch, Status, false, true>;

/// Per-environment state, kept in N-API instance data and used only on its JS thread.
pub(super) struct EnvState {
    /// Reads submitted from this environment and not yet delivered, for `cancel`.
    pub(super) pending: HashMap<u64, Vec<Ticket>>,
    /// Request ids count up from 0 and reach JS as numbers, exact up to 2^53: at a
    /// million requests a second, 285 years without a repeat.
    pub(super) next_id: u64,
    pub(super) sink: Arc<Sink>,
    /// Largest result allowed: `buffer.constants.MAX_LENGTH` of this Node.
    pub(super) max_length: u64,
    /// Largest result from a source of unknown size ([`ReadLimits::max_unsized_length`]).
    pub(super) max_unsized_length: u64,
    /// Whether the threadsafe function currently keeps the event loop alive.
    pub(super) referenced: bool,
    /// Reads still writing into Buffers this environment lent ([`lend_buffer`]);
    /// teardown waits for them.
    pub(super) lent_writes: Arc<LentWrites>,
    /// The Buffers lent to whole-file reads, by request id, until their outcome.
    pub(super) lent_files: HashMap<u64, LentBuffer>,
    /// The Buffers whole-file writes take their bytes from, by request id, held by a
    /// reference until their outcome ([`super::writes`]).
    pub(super) written_from: HashMap<u64, Vec<napi::sys::napi_ref>>,
    /// The external Buffers this environment holds, and whether their memory may be
    /// used again once they are finalized.
    pub(super) views: Rc<Views>,
    /// Stream flows this environment started and has not ended, ended at teardown.
    pub(super) flows: HashSet<u64>,
    /// Fds this environment's streams opened and have not closed: closed at teardown,
    /// as node:fs's are when a worker exits mid-stream.
    pub(super) fds: HashSet<crate::Fd>,
    /// The requests that close an fd: teardown lets them run.
    pub(super) closing: HashSet<u64>,
}

/// Where pool threads deliver finished reads.
pub(super) struct Sink {
    pub(super) done: DoneQueue,
    pub(super) waker: Waker,
}

impl Sink {
    pub(super) fn deliver(&self, id: u64, delivered: Delivered) {
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

pub(super) fn state(env: &Env) -> Result<&'static mut EnvState> {
    env.get_instance_data::<EnvState>()?
        .ok_or_else(|| Error::new(Status::GenericFailure, "fairfs: init() was not called"))
}

/// Keeps the event loop alive while reads are pending, and no longer.
pub(super) fn set_referenced(env: &Env, st: &mut EnvState, want: bool) -> Result<()> {
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

/// [`super::init`]: sets up this environment's state and completion callback.
pub(super) fn init_env(env: Env, on_complete: Function<Batch, ()>, max_length: f64) -> Result<()> {
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
                        for reference in st.written_from.remove(id).into_iter().flatten() {
                            delete_reference(&ctx.env, reference);
                        }
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
        written_from: HashMap::new(),
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
        crate::lanes::cancel_many(&tickets);
        for &flow in &st.flows {
            crate::lanes::end_flow(flow);
        }
        // A close may wait on storage (a FUSE daemon's FLUSH): not on this thread.
        let fds: Vec<crate::Fd> = st.fds.iter().copied().collect();
        crate::closer::later(move || {
            for fd in fds {
                let _ = stream::close(fd);
            }
        });
        // Its Buffers are freed after this: wait for a read still writing into one
        // (one step, at most a chunk: only sized regular files are lent memory), and
        // for a write still taking bytes from one (one step: a chunk, or an append).
        ctx.value.lent_writes.wait_for_none();
    })
}

/// Registers a request from this environment and submits the job `make` builds
/// around its delivery callback, to `lane`'s pool ([`crate::lanes`]; `None`: the
/// process-wide pool).
pub(super) fn submit_on(env: &Env, lane: Option<u64>, make: impl FnOnce(Deliver) -> Box<dyn Job>) -> Result<f64> {
    register(env, lane, false, |deliver, _| vec![make(deliver)])
}

/// [`submit_on`] for a query (a stat, an access check, a listing), whose wake-up of
/// the process-wide pool waits for the JS side's next `nudgePool()`: called once a
/// turn of the event loop, it wakes the pool once for every call the turn made. A
/// write wakes it at once: it must run even if the process exits in this turn.
/// Returns the request's id, negated where the query went to a lane.
#[cfg(unix)]
pub(super) fn submit_query_on(env: &Env, lane: Option<u64>, make: impl FnOnce(Deliver) -> Box<dyn Job>) -> Result<f64> {
    register(env, lane, true, |deliver, _| vec![make(deliver)])
}

/// Registers one request whose outcome is delivered once, through the callback
/// `make` receives, and submits the jobs `make` builds for it. `make` also gets what
/// asks this environment to lend the request memory ([`lend_buffer`]).
pub(super) fn submit_jobs(env: &Env, make: impl FnOnce(Deliver, MemoryAsker) -> Vec<Box<dyn Job>>) -> Result<f64> {
    submit_jobs_on(env, None, make)
}

/// [`submit_jobs`], to `lane`'s pool.
pub(super) fn submit_jobs_on(
    env: &Env,
    lane: Option<u64>,
    make: impl FnOnce(Deliver, MemoryAsker) -> Vec<Box<dyn Job>>,
) -> Result<f64> {
    register(env, lane, false, make)
}

fn register(
    env: &Env,
    lane: Option<u64>,
    quietly: bool,
    make: impl FnOnce(Deliver, MemoryAsker) -> Vec<Box<dyn Job>>,
) -> Result<f64> {
    let st = state(env)?;
    crate::policy::loop_cpu::note_loop_cpu();
    let id = st.next_id;
    st.next_id += 1;
    let (sink, asking) = (st.sink.clone(), st.sink.clone());
    let deliver: Deliver = Box::new(move |delivered| sink.deliver(id, delivered));
    let ask: MemoryAsker = Box::new(move |size| asking.deliver(id, Delivered::WantsMemory(size)));
    let jobs = make(deliver, ask);
    let tickets =
        if quietly { crate::lanes::submit_many_quietly(lane, jobs) } else { crate::lanes::submit_many(lane, jobs) };
    st.pending.insert(id, tickets);
    set_referenced(env, st, true)?;
    // A query's id is negative where it went to a lane: the JS side does not make
    // calling-thread answers wait for it (lib/native.js, later), as it may never end.
    Ok(if quietly && lane.is_some() { -(id as f64) } else { id as f64 })
}
