//! The bounded blocking pool: a fixed number of worker threads that take turns on
//! requests from one [`FairQueue`].
//!
//! A worker checks a request out of the queue, runs one step of it (one chunk)
//! without holding the lock, and puts it back with the bytes it read, so every
//! request in flight shares the pool by deficit round robin. A request finishes on
//! the worker that read its last chunk, which delivers the result once.
//!
//! Cancellation is a flag checked between chunks. A waiting request is taken out of
//! the queue and released by the cancelling thread at once; a request being read
//! is released by its worker as soon as the chunk in progress returns.
//!
//! There is one pool per process ([`global`]), created on first use and shared by
//! every Node environment (main thread and worker_threads) that loads the addon.

use std::collections::{HashMap, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use crate::admission::{Admission, Limits, Wait};
use crate::contention::{self, BusyClock, Demand, Governor};
use crate::lent::Lent;
use crate::loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use crate::loom::sync::{Arc, Condvar, Mutex, MutexGuard};
use crate::loom::thread;
use crate::scheduler::{FairQueue, Flow, Turn};
use crate::sys::CpuSnapshot;

/// Default number of worker threads, the same as libuv's pool.
pub const DEFAULT_THREADS: usize = 4;
/// Default chunk size and DRR quantum, the same as node:fs's `readFile` chunk.
pub const DEFAULT_CHUNK_SIZE: usize = 512 * 1024;
/// Default nice value of worker threads: below the event loop and libuv's threads,
/// so that JS, zlib and crypto win when they compete with reads for CPU. Not lower:
/// once the big-read limit ([`crate::contention`]) leaves a core free, the one worker copying big files is what
/// a lower priority slows (next to zlib and ten 16 MiB readers, in three A/B runs,
/// nice 10 gave 68–70% of zlib's speed and 268–278 reads/s, nice 5 70–73% and
/// 282–306, nice 0 72–74% and 298–312).
pub const DEFAULT_NICE: i32 = 5;
/// How long the pool waits without work before it runs its idle hook.
pub const IDLE_AFTER: Duration = Duration::from_secs(10);
/// How often a read whose open met EMFILE/ENFILE tries again while none of the pool's
/// own files is open (so no close of ours will tell it when).
pub const EMFILE_RETRY_EVERY: Duration = Duration::from_millis(10);
/// How long such a read keeps trying before it fails with node:fs's error. With some
/// of the pool's files open it waits for them instead, without a bound: they close as
/// their reads end. graceful-fs retries for up to 60 s; a read that fails late is
/// worse than one that fails soon, and descriptors held by other code are usually
/// given back within milliseconds (a burst of node:fs reads, a connection pool).
pub const EMFILE_GIVE_UP_AFTER: Duration = Duration::from_secs(2);

/// What one step of a job did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// Bytes read in this step; charged to the job's deficit.
    pub bytes: usize,
    /// The job has its result and must not be stepped again.
    pub done: bool,
}

/// A part of a job that one worker runs while the job itself is back in the queue,
/// so that several workers can serve one request at once.
pub struct Piece {
    /// Bytes it will read, charged to the job's deficit when it is handed out.
    bytes: usize,
    /// Does the work, once; returns the bytes actually read. The pool counts them
    /// before it drops the piece, so a job that waits for its pieces to be dropped
    /// finds them counted.
    run: Box<dyn FnMut() -> usize + Send>,
}

impl Piece {
    pub fn new(bytes: usize, run: impl FnMut() -> usize + Send + 'static) -> Piece {
        Piece { bytes, run: Box::new(run) }
    }
}

/// Work the pool can run one step at a time.
pub trait Job: Send + 'static {
    /// Runs one step (one chunk). Never called again after it reports `done`.
    fn step(&mut self) -> Step;
    /// Hands out a piece of the job for this worker to run while the job goes back
    /// in the queue for other workers; `None` runs [`Job::step`] instead. Called on a
    /// checked-out job before each step, so it must be quick (no I/O). A job must not
    /// need its pieces to finish before it can be cancelled or completed, other than
    /// by waiting for pieces already running.
    fn split(&mut self) -> Option<Piece> {
        None
    }
    /// Whether this job copies more than one chunk (a big file): at most the
    /// governor's limit of these are read at once ([`crate::contention`]).
    fn is_large(&self) -> bool {
        false
    }
    /// Whether the job opens a file of its own, and so waits for an open-file slot
    /// before it starts ([`crate::admission`]).
    fn opens_file(&self) -> bool {
        false
    }
    /// Why the job cannot take its next step yet; asked (under the pool's lock, so it
    /// must be quick) after each step that was not done.
    fn wait(&self) -> Wait {
        Wait::No
    }
    /// The bytes [`Wait::Bytes`] asked for are granted: the next step may allocate.
    fn grant(&mut self) {}
    /// The job waits for memory its caller lends ([`Wait::Memory`]): what asks the
    /// caller for it, called with the size outside the pool's lock. The answer comes
    /// through [`Pool::lend`]. `None`: nobody to ask, it gets no memory.
    fn memory_asker(&mut self) -> Option<Box<dyn FnOnce(u64) + Send>> {
        None
    }
    /// The memory [`Wait::Memory`] asked for, or `None` where the caller has none (the
    /// job then allocates its own).
    fn lend(&mut self, _memory: Option<Lent>) {}
    /// The bytes were refused: close the job's own file, so that it waits for them
    /// holding nothing. It asks again after its next step.
    fn suspend(&mut self) {}
    /// Opening met EMFILE/ENFILE for [`EMFILE_GIVE_UP_AFTER`] while the pool held no
    /// file: the next step must report whatever its open gives, without waiting again.
    fn give_up(&mut self) {}
    /// Hands the job its cancellation flag when it is submitted, for a step that may
    /// wait for long to check now and then.
    fn watch_cancel(&mut self, _cancelled: CancelFlag) {}
    /// The keyed flow the job belongs to, if it is one of many requests that share
    /// one place in the rotation (a read stream's blocks, [`FairQueue::push_keyed`]).
    fn flow(&self) -> Option<u64> {
        None
    }
    /// Delivers the result. Called once, after a step reported `done`.
    fn complete(self: Box<Self>);
    /// Delivers cancellation and frees everything. Called instead of further steps.
    fn cancel(self: Box<Self>);
    /// A step or piece of the job panicked (a bug): deliver a failure, free what can
    /// be freed. By default it is delivered as a cancellation.
    fn fail(self: Box<Self>) {
        self.cancel()
    }
}

/// A job's cancellation flag, set by [`Pool::cancel`]; a job that may block for long
/// watches it ([`Job::watch_cancel`]).
pub type CancelFlag = Arc<AtomicBool>;

/// A handle for cancelling a submitted job.
#[derive(Clone, Debug)]
pub struct Ticket {
    id: u64,
    cancelled: Arc<AtomicBool>,
}

/// Counters reported by [`Pool::stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Worker threads the pool is sized to.
    pub threads: usize,
    /// Requests waiting for their next chunk.
    pub queued: usize,
    /// Chunks being read right now.
    pub active: usize,
    /// Requests that delivered a result (success or error).
    pub completed: u64,
    /// Requests that were cancelled.
    pub cancelled: u64,
    /// Bytes read by all requests.
    pub bytes_read: u64,
    /// Steps (chunks) run by all requests.
    pub chunks_read: u64,
    /// The chunk size new requests use.
    pub chunk_size: usize,
    /// The nice value workers are asked to run at.
    pub nice: i32,
    /// Big files read at once now ([`crate::contention`]): every worker while nothing
    /// else wants the CPU, fewer while something does; and the most it may reach (the
    /// threads, or `largeLimit` if set). Without a contention signal it stays at
    /// cores − 1, and a lone big file may still use every worker.
    pub large_limit: usize,
    pub large_limit_max: usize,
    /// Whether the limit adapts ([`crate::contention`]); else it is fixed.
    pub large_limit_adaptive: bool,
    /// Times the limit went down because others wanted the CPU (libuv's threads, other
    /// threads and processes, a waiting event loop: [`crate::contention`]), and up
    /// because they did not.
    pub large_backoffs: u64,
    pub large_probes: u64,
    /// Files held open by admitted reads, and the most allowed ([`crate::admission`]).
    pub open_files: usize,
    pub max_open_files: usize,
    /// Bytes of result buffers granted to big reads in flight, and the most allowed.
    pub bytes_in_flight: u64,
    pub max_bytes_in_flight: u64,
    /// Reads waiting for admission (a slot, their bytes, or a close after EMFILE).
    pub waiting: usize,
    /// Admitted big reads waiting for memory their caller lends ([`Wait::Memory`]).
    pub awaiting_memory: usize,
    /// Reads of sources that may block for long (FIFOs, devices), each on a thread
    /// of its own outside the pool.
    pub own_threads: usize,
    /// Read streams the fair queue keeps as one flow each ([`FairQueue::push_keyed`]).
    pub stream_flows: usize,
}

struct Entry {
    id: u64,
    cancelled: Arc<AtomicBool>,
    job: Box<dyn Job>,
    /// It holds an open-file slot ([`crate::admission`]).
    slot: bool,
    /// Bytes granted to it.
    granted: u64,
    /// When its open first met EMFILE/ENFILE with none of the pool's files open.
    emfile_since: Option<Instant>,
    /// It left for a thread of its own holding a file of ours ([`Admission::leave`]).
    outside: bool,
}

/// What an entry held, given back when it ends.
#[derive(Clone, Copy, Debug)]
struct Held {
    slot: bool,
    granted: u64,
    /// A file of ours held outside admission (on a thread of its own).
    outside: bool,
}

impl Entry {
    fn held(&self) -> Held {
        Held { slot: self.slot, granted: self.granted, outside: self.outside }
    }

    /// What it holds, to be given back (and so cleared) when it leaves admission.
    fn take_held(&mut self) -> Held {
        let held = self.held();
        (self.slot, self.granted) = (false, 0);
        held
    }
}

/// The open-file limit the pool starts with: a share of this process's descriptors.
pub fn default_limits() -> Limits {
    Limits {
        max_open: crate::admission::default_max_open(crate::sys::max_open_files()),
        max_bytes: crate::admission::DEFAULT_MAX_BYTES,
    }
}

/// Whether this machine tells threads' waiting time, so the big-read limit can adapt
/// (not under loom, whose models must not depend on timing).
fn contention_signal() -> bool {
    !cfg!(fairfs_loom) && crate::host_threads::cpu_snapshot().is_some()
}

/// What [`Hooks::bytes_in_flight`] is told: the bytes granted to big reads, at most
/// `max_bytes`, or none while the governor holds big reads back.
fn bytes_to_stock_for(granted: u64, max_bytes: u64, governor: &Governor) -> u64 {
    let held_back = governor.is_adaptive() && governor.limit() < governor.max();
    if held_back {
        0
    } else {
        granted.min(max_bytes)
    }
}

/// State under the pool's lock.
struct State {
    /// Requests waiting for their next chunk, in DRR order.
    queue: FairQueue<Entry>,
    /// The number of workers the pool should have.
    target_threads: usize,
    /// Workers that have started and not yet exited.
    live_threads: usize,
    /// Workers running a step or piece right now.
    busy: usize,
    /// Workers waiting for work on `work_ready`. Wake-ups are only sent while some
    /// are: with std's futex condvar every `notify_one` is a system call, and a batch
    /// of 10,000 small files would otherwise pay one per file.
    idle: usize,
    /// Workers running a step or piece of a large job right now.
    large_busy: usize,
    /// How many may ([`crate::contention`]).
    governor: Governor,
    /// The limit set by [`Pool::set_large_limit`], if any: the governor's most.
    large_limit_set: Option<usize>,
    /// The governor's last CPU snapshot, when it was taken and how long big reads had
    /// run by then; a worker is taking one.
    looked_at: Option<(Instant, CpuSnapshot, Duration)>,
    looking: bool,
    /// How long big reads have run, for the governor's windows.
    large_clock: BusyClock,
    /// The request last put back was split, so more workers may help with it.
    split_waiting: bool,
    /// The nice value workers should run at; each worker applies changes itself.
    nice: i32,
    /// Reads that are not admitted yet, and what admitted ones hold.
    admission: Admission<Entry>,
    /// Admitted reads waiting for memory their caller lends ([`Wait::Memory`]), by id;
    /// they keep their slot and bytes, and [`Pool::lend`] puts them back in the queue.
    awaiting_memory: HashMap<u64, Entry>,
    /// Reads whose open met EMFILE/ENFILE while the pool held no file: retried at
    /// `retry_at`, since no close of ours will come to wake them.
    retry: VecDeque<Entry>,
    retry_at: Option<Instant>,
    /// Cancelled big reads whose release may wait for pieces other workers are
    /// reading: a worker releases them, so that cancelling never waits on the
    /// caller's (the JS) thread.
    cancel_later: Vec<Entry>,
    next_id: u64,
    /// Set by `Drop`: workers exit and queued jobs are cancelled.
    shutdown: bool,
    /// What this pool tells the rest of the process.
    hooks: Hooks,
}

impl State {
    /// Tells the hook, if any, the bytes granted to big reads now ([`Hooks`]). Called
    /// after every change to them or to the governor's limit.
    ///
    /// While the governor holds big reads back, it reports none: stock then would make
    /// the big reads cheaper for the workers, but each result still costs the event
    /// loop, which is what a neighbour such as zlib waits for. With the extra stock
    /// regardless, the clogging benchmark's zlib loop kept 39-48% of its speed next to
    /// ten 16 MiB readers, against 57-61% without it.
    fn report_bytes_in_flight(&self) {
        if let Some(report) = self.hooks.bytes_in_flight {
            report(bytes_to_stock_for(self.admission.bytes(), self.admission.limits().max_bytes, &self.governor));
        }
    }

    fn update_large_limit(&mut self) {
        let threads = self.target_threads.max(1);
        let max = self.large_limit_set.unwrap_or(threads).clamp(1, threads);
        let fixed = self.large_limit_set.unwrap_or_else(|| contention::fixed_limit(threads));
        self.governor.set_max(max, fixed);
        self.report_bytes_in_flight();
    }

    /// Whether a free worker may check out a large job: within the governor's limit;
    /// without a signal, also to help with a lone request that is being split (the
    /// adaptive limit covers that case itself).
    fn large_ok(&self) -> bool {
        self.large_busy < self.governor.limit()
            || (!self.governor.is_adaptive() && self.split_waiting && self.queue.len() == 1)
    }

    /// Moves the reads admission now lets start into the queue; returns how many.
    fn admit(&mut self) -> usize {
        let admitted = self.admission.admit();
        let n = admitted.len();
        for a in admitted {
            let mut entry = a.item;
            entry.slot = a.slot;
            if a.granted > 0 {
                entry.granted += a.granted;
                entry.job.grant();
            }
            self.enqueue(entry);
        }
        if n > 0 {
            self.split_waiting = false;
            self.report_bytes_in_flight();
        }
        n
    }

    /// Puts an admitted request in the fair queue, in its keyed flow if it has one.
    fn enqueue(&mut self, entry: Entry) {
        match entry.job.flow() {
            Some(key) => self.queue.push_keyed(entry, key),
            None => self.queue.push(entry),
        }
    }

    /// Gives back what an ended read held and admits what that lets start.
    fn release(&mut self, held: Held) -> usize {
        if !held.slot && held.granted == 0 && !held.outside {
            return 0;
        }
        self.admission.release(held.slot, held.granted);
        self.report_bytes_in_flight();
        if held.outside {
            self.admission.outside_closed();
        }
        self.admit()
    }

    /// Reads that met EMFILE with none of our files open try again once it is time.
    fn retry_due(&mut self, now: Instant) -> usize {
        if !matches!(self.retry_at, Some(at) if now >= at) {
            return 0;
        }
        self.retry_at = None;
        while let Some(entry) = self.retry.pop_back() {
            self.admission.retry(entry);
        }
        self.admit()
    }

    /// Checks out the next request a free worker may read now.
    fn take(&mut self) -> Option<Flow<Entry>> {
        if self.large_ok() {
            self.queue.pop()
        } else {
            self.queue.pop_where(|e| !e.job.is_large())
        }
    }
}

struct Shared {
    state: Mutex<State>,
    /// Signalled when work is queued, the pool shrinks, or it shuts down.
    work_ready: Condvar,
    /// Chunks being read right now. Outside the lock so that it drops before the
    /// result is delivered: whoever sees a result never sees its chunk as active.
    active: AtomicUsize,
    completed: AtomicU64,
    cancelled: AtomicU64,
    bytes_read: AtomicU64,
    chunks_read: AtomicU64,
    /// Threads of their own running jobs that may block for long ([`Wait::OwnThread`]).
    own_threads: AtomicUsize,
    /// The chunk size new requests use (the queue's DRR quantum follows it). Outside
    /// the lock: the JS thread reads it for each request.
    chunk_size: AtomicUsize,
}

/// What a pool tells the rest of the process. The process-wide pool tells the buffer
/// pool; pools made in tests tell nobody.
#[derive(Clone, Copy, Default)]
pub struct Hooks {
    /// Run by a worker that found no work for [`IDLE_AFTER`] (e.g. to trim buffers).
    pub idle: Option<fn()>,
    /// Told the bytes granted to big reads in flight, at most `maxBytesInFlight`,
    /// whenever they change, so that the buffer pool keeps stock for their successors;
    /// told 0 while the contention governor holds big reads back for a neighbour.
    /// Called under the pool's lock.
    pub bytes_in_flight: Option<fn(u64)>,
}

/// A bounded pool of worker threads with fair chunk scheduling.
pub struct Pool {
    shared: Arc<Shared>,
    /// Handles of every worker ever started, joined on drop.
    handles: Mutex<Vec<thread::JoinHandle<()>>>,
}

impl Pool {
    pub fn new(threads: usize, chunk_size: usize) -> Pool {
        Pool::with_hooks(threads, chunk_size, Hooks::default())
    }

    /// A pool that tells the rest of the process what `hooks` ask for.
    pub fn with_hooks(threads: usize, chunk_size: usize, hooks: Hooks) -> Pool {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                queue: FairQueue::new(chunk_size),
                target_threads: 0,
                live_threads: 0,
                busy: 0,
                idle: 0,
                large_busy: 0,
                governor: Governor::new(1, 1, contention_signal()),
                large_limit_set: None,
                looked_at: None,
                looking: false,
                large_clock: BusyClock::default(),
                split_waiting: false,
                nice: DEFAULT_NICE,
                admission: Admission::new(default_limits()),
                awaiting_memory: HashMap::new(),
                retry: VecDeque::new(),
                retry_at: None,
                cancel_later: Vec::new(),
                next_id: 0,
                shutdown: false,
                hooks,
            }),
            work_ready: Condvar::new(),
            active: AtomicUsize::new(0),
            completed: AtomicU64::new(0),
            cancelled: AtomicU64::new(0),
            bytes_read: AtomicU64::new(0),
            chunks_read: AtomicU64::new(0),
            own_threads: AtomicUsize::new(0),
            chunk_size: AtomicUsize::new(chunk_size),
        });
        let pool = Pool { shared, handles: Mutex::new(Vec::new()) };
        pool.configure(Some(threads), None);
        pool
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.shared)
    }

    /// Queues a job. It starts on the next free worker, ahead of requests that have
    /// already had their first quantum.
    pub fn submit(&self, job: Box<dyn Job>) -> Ticket {
        self.submit_many(vec![job]).pop().expect("one ticket per job")
    }

    /// Queues several jobs under one lock acquisition, in order.
    pub fn submit_many(&self, jobs: Vec<Box<dyn Job>>) -> Vec<Ticket> {
        let mut tickets = Vec::with_capacity(jobs.len());
        let mut state = self.lock();
        if state.shutdown {
            drop(state);
            for job in jobs {
                self.shared.cancelled.fetch_add(1, Ordering::Relaxed);
                job.cancel();
                tickets.push(Ticket { id: u64::MAX, cancelled: Arc::new(AtomicBool::new(true)) });
            }
            return tickets;
        }
        let mut queued = false;
        for mut job in jobs {
            let id = state.next_id;
            state.next_id += 1;
            let cancelled = Arc::new(AtomicBool::new(false));
            job.watch_cancel(cancelled.clone());
            let opens_file = job.opens_file();
            let entry = Entry {
                id,
                cancelled: cancelled.clone(),
                job,
                slot: false,
                granted: 0,
                emfile_since: None,
                outside: false,
            };
            let entry =
                if opens_file { state.admission.submit(entry).map(|e| Entry { slot: true, ..e }) } else { Some(entry) };
            if let Some(entry) = entry {
                state.enqueue(entry);
                queued = true;
            }
            tickets.push(Ticket { id, cancelled });
        }
        if queued {
            state.split_waiting = false;
        }
        let wake = queued && state.idle > 0;
        drop(state);
        // Workers pass the baton on while work remains, so one wake-up is enough.
        if wake {
            self.shared.work_ready.notify_one();
        }
        tickets
    }

    /// Cancels a job. A waiting job is released on this thread before returning (a big
    /// one being split, whose release waits for pieces on other workers, by a worker
    /// soon after); a job being read is released by its worker after the current
    /// chunk. Returns whether the job was still waiting.
    pub fn cancel(&self, ticket: &Ticket) -> bool {
        self.cancel_many(std::slice::from_ref(ticket)) == 1
    }

    /// Cancels several jobs in one pass over the queues (an abort of a whole batch
    /// costs O(queue + jobs), not a search per job). Returns how many were waiting
    /// and so were released here.
    pub fn cancel_many(&self, tickets: &[Ticket]) -> usize {
        // Set before taking the lock: a worker putting a job back checks the flag
        // under the lock, so either it sees the flag or we find the job queued.
        for ticket in tickets {
            ticket.cancelled.store(true, Ordering::Release);
        }
        let ids: std::collections::HashSet<u64> = tickets.iter().map(|t| t.id).collect();
        let mut state = self.lock();
        let is_one = |e: &Entry| ids.contains(&e.id);
        let mut removed = state.queue.remove_all(is_one);
        removed.extend(state.admission.remove_all(is_one));
        removed.extend(tickets.iter().filter_map(|t| state.awaiting_memory.remove(&t.id)));
        let (retry, kept): (VecDeque<Entry>, VecDeque<Entry>) = state.retry.drain(..).partition(is_one);
        state.retry = kept;
        removed.extend(retry);
        let n = removed.len();
        // A big read being split may have pieces on other workers, and releasing it
        // waits for them: a worker does that (`finish_cancelled`), not this thread.
        let (later, now): (Vec<Entry>, Vec<Entry>) = removed.into_iter().partition(|e| e.job.is_large());
        // Given back before the cancellations are delivered, as in `finish_cancelled`.
        let mut admitted = 0;
        for entry in &now {
            admitted += state.release(entry.held());
        }
        let wake = (admitted > 0 || !later.is_empty()) && state.idle > 0;
        state.cancel_later.extend(later);
        drop(state);
        if wake {
            self.shared.work_ready.notify_all();
        }
        self.shared.cancelled.fetch_add(now.len() as u64, Ordering::Relaxed);
        for entry in now {
            entry.job.cancel();
        }
        n
    }

    /// Hands a read waiting for memory ([`Wait::Memory`]) the memory its caller lends,
    /// or `None` if the caller has none; the read goes back in the queue. Returns
    /// whether it was waiting: if not (it was cancelled), `memory` is let go.
    pub fn lend(&self, ticket: &Ticket, memory: Option<Lent>) -> bool {
        lend_to(&self.shared, ticket.id, memory)
    }

    /// Forgets keyed flow `key` (its stream has closed) once none of its requests is
    /// left ([`FairQueue::end_key`]).
    pub fn end_flow(&self, key: u64) {
        self.lock().queue.end_key(key);
    }

    /// Sets the open-file and byte limits of admission ([`crate::admission`]); `None`
    /// leaves one as it is. Raising them lets waiting reads start at once.
    pub fn set_admission_limits(&self, max_open: Option<usize>, max_bytes: Option<u64>) {
        let mut state = self.lock();
        let old = state.admission.limits();
        state.admission.set_limits(Limits {
            max_open: max_open.unwrap_or(old.max_open),
            max_bytes: max_bytes.unwrap_or(old.max_bytes),
        });
        let wake = state.admit() > 0;
        drop(state);
        if wake {
            self.shared.work_ready.notify_all();
        }
    }

    /// Changes the number of threads and/or the chunk size. Growing starts threads
    /// now; shrinking lets surplus workers exit after their current chunk.
    /// The chunk size applies to requests submitted afterwards.
    pub fn configure(&self, threads: Option<usize>, chunk_size: Option<usize>) {
        self.configure_with(threads, chunk_size, None)
    }

    /// [`Pool::configure`], and also the workers' nice value (-20..=19). Raising a
    /// thread's priority back may need privileges; workers keep what they can get.
    pub fn configure_with(&self, threads: Option<usize>, chunk_size: Option<usize>, nice: Option<i32>) {
        let mut state = self.lock();
        if let Some(nice) = nice {
            state.nice = nice.clamp(-20, 19);
            self.shared.work_ready.notify_all();
        }
        if let Some(size) = chunk_size {
            self.shared.chunk_size.store(size.max(1), Ordering::Relaxed);
            state.queue.set_quantum(size);
        }
        let Some(threads) = threads else { return };
        let threads = threads.max(1);
        state.target_threads = threads;
        state.update_large_limit();
        let missing = threads.saturating_sub(state.live_threads);
        state.live_threads += missing;
        drop(state);
        self.shared.work_ready.notify_all();
        let mut handles = self.handles.lock().unwrap();
        for _ in 0..missing {
            let shared = self.shared.clone();
            let spawn = thread::Builder::new().name("fairfs-worker".into()).spawn(move || worker(shared));
            match spawn {
                Ok(h) => handles.push(h),
                // Could not start a thread: run with the ones we have.
                Err(_) => lock(&self.shared).live_threads -= 1,
            }
        }
    }

    /// Sets how many big files may be read at once (within the pool's size), or goes
    /// back to the default (adaptive up to every thread, [`crate::contention`]) with `None`.
    pub fn set_large_limit(&self, limit: Option<usize>) {
        let mut state = self.lock();
        state.large_limit_set = limit;
        state.update_large_limit();
        drop(state);
        self.shared.work_ready.notify_all();
    }

    /// The chunk size for new requests.
    pub fn chunk_size(&self) -> usize {
        self.shared.chunk_size.load(Ordering::Relaxed)
    }

    pub fn stats(&self) -> Stats {
        let state = self.lock();
        Stats {
            threads: state.target_threads,
            queued: state.queue.len(),
            active: self.shared.active.load(Ordering::Relaxed),
            completed: self.shared.completed.load(Ordering::Relaxed),
            cancelled: self.shared.cancelled.load(Ordering::Relaxed),
            bytes_read: self.shared.bytes_read.load(Ordering::Relaxed),
            chunks_read: self.shared.chunks_read.load(Ordering::Relaxed),
            chunk_size: self.shared.chunk_size.load(Ordering::Relaxed),
            nice: state.nice,
            large_limit: state.governor.limit(),
            large_limit_max: state.governor.max(),
            large_limit_adaptive: state.governor.is_adaptive(),
            large_backoffs: state.governor.backed_off,
            large_probes: state.governor.probed,
            open_files: state.admission.open(),
            max_open_files: state.admission.limits().max_open,
            bytes_in_flight: state.admission.bytes(),
            max_bytes_in_flight: state.admission.limits().max_bytes,
            waiting: state.admission.waiting() + state.retry.len(),
            awaiting_memory: state.awaiting_memory.len(),
            own_threads: self.shared.own_threads.load(Ordering::Relaxed),
            stream_flows: state.queue.keyed_flows(),
        }
    }
}

impl Drop for Pool {
    /// Cancels waiting jobs, lets running chunks finish, and joins every worker.
    fn drop(&mut self) {
        let waiting = {
            let mut state = self.lock();
            state.shutdown = true;
            let mut all = state.queue.drain();
            all.extend(state.admission.drain());
            all.extend(state.retry.drain(..));
            all.extend(state.awaiting_memory.drain().map(|(_, entry)| entry));
            all.append(&mut state.cancel_later);
            all
        };
        self.shared.work_ready.notify_all();
        for entry in waiting {
            self.shared.cancelled.fetch_add(1, Ordering::Relaxed);
            entry.job.cancel();
        }
        for h in self.handles.lock().unwrap().drain(..) {
            let _ = h.join();
        }
    }
}

fn lock(shared: &Shared) -> MutexGuard<'_, State> {
    // Jobs run outside the lock, so a panic cannot leave `State` half-updated.
    shared.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A worker's life: take the next request, run one chunk, put it back.
fn worker(shared: Arc<Shared>) {
    let mut state = lock(&shared);
    let mut nice = 0;
    loop {
        if state.nice != nice {
            nice = state.nice;
            let _ = crate::sys::set_thread_nice(nice);
        }
        if let Some(entry) = state.cancel_later.pop() {
            drop(state);
            finish_cancelled(&shared, entry);
            state = lock(&shared);
            continue;
        }
        if state.shutdown || state.live_threads > state.target_threads {
            state.live_threads -= 1;
            return;
        }
        if state.retry_at.is_some() {
            state.retry_due(Instant::now());
        }
        let Some(flow) = state.take() else {
            state.idle += 1;
            let timeout = state.retry_at.map_or(IDLE_AFTER, |at| at.saturating_duration_since(Instant::now()));
            let (guard, wait) = shared.work_ready.wait_timeout(state, timeout).unwrap_or_else(|p| p.into_inner());
            state = guard;
            state.idle -= 1;
            let idle = wait.timed_out() && state.queue.is_empty() && state.retry_at.is_none();
            if let Some(hook) = state.hooks.idle.filter(|_| idle) {
                drop(state);
                hook();
                state = lock(&shared);
            }
            continue;
        };
        shared.active.fetch_add(1, Ordering::Relaxed);
        state.busy += 1;
        let large = flow.item.job.is_large();
        if large && state.large_busy == 0 && state.governor.is_adaptive() {
            state.large_clock.start(Instant::now());
        }
        state.large_busy += large as usize;
        // More waiting than this worker takes: wake one more, which does the same.
        if !state.queue.is_empty() && state.idle > 0 {
            shared.work_ready.notify_one();
        }
        // Split a request only for workers that would otherwise have nothing to do:
        // with other requests waiting, each worker serving its own is as fast, and no
        // request waits at its end for a piece another (preempted) worker is slow to
        // finish.
        let may_split = state.queue.is_empty() && state.busy < state.target_threads;
        drop(state);
        let after = run_one_step(&shared, flow, may_split);
        state = lock(&shared);
        state.busy -= 1;
        state.large_busy -= large as usize;
        if large && state.governor.is_adaptive() {
            if state.large_busy == 0 {
                state.large_clock.stop(Instant::now());
            }
            state = look_around(&shared, state);
        }
        if large && !state.queue.is_empty() && state.idle > 0 {
            // A worker may be waiting for a large job's turn.
            shared.work_ready.notify_one();
        }
        let admitted = match after {
            After::Ended(turn, bytes) => {
                state.queue.end(turn, bytes);
                0
            }
            After::PutBack => 0,
            After::Requeue(flow, bytes) => {
                let (next, admitted) = requeue(&shared, state, flow, bytes);
                state = next;
                admitted
            }
        };
        // Reads that a release let start: this worker takes one itself, and the
        // others need waking.
        if admitted > 1 && state.idle > 0 {
            shared.work_ready.notify_all();
        }
    }
}

/// After a big-read step: once per [`contention::WINDOW`], this worker takes a CPU
/// snapshot (outside the lock) and lets the governor judge the window: in full if big
/// reads ran for most of it ([`contention::MIN_BUSY_SHARE`]), else only to raise the
/// limit.
fn look_around<'a>(shared: &'a Shared, mut state: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
    let now = Instant::now();
    let due = state.looked_at.map_or(true, |(at, _, _)| now.duration_since(at) >= contention::WINDOW);
    if !due || state.looking {
        return state;
    }
    state.looking = true;
    drop(state);
    let snapshot = crate::host_threads::cpu_snapshot();
    let mut state = lock(shared);
    state.looking = false;
    let Some(snapshot) = snapshot else { return state };
    let limit = state.governor.limit();
    let busy = state.large_clock.total(now);
    match state.looked_at.filter(|(at, _, _)| now.duration_since(*at) < contention::STALE_AFTER) {
        Some((at, before, busy_before)) => {
            let wall = now.duration_since(at);
            let demand = Demand::between(&before, &snapshot, wall);
            state.governor.observe_window(demand, busy.saturating_sub(busy_before), wall);
        }
        None => state.governor.restart(),
    }
    if state.governor.limit() != limit {
        state.report_bytes_in_flight();
    }
    if state.governor.limit() > limit && state.idle > 0 {
        // Room for more big reads: waiting workers may take them.
        shared.work_ready.notify_all();
    }
    state.looked_at = Some((now, snapshot, busy));
    state
}

/// What became of a request after one step.
enum After {
    /// It has more to do and was not put back yet.
    Requeue(Flow<Entry>, usize),
    /// It was delivered or cancelled (having given back what it held): its turn
    /// ends, having read this many bytes.
    Ended(Turn, usize),
    /// It was put back in the queue already.
    PutBack,
}

/// Puts a request that has more to do back in the queue, or where it must wait.
/// Returns the lock and how many reads admission let start meanwhile.
fn requeue<'a>(
    shared: &'a Arc<Shared>,
    mut state: MutexGuard<'a, State>,
    mut flow: Flow<Entry>,
    bytes: usize,
) -> (MutexGuard<'a, State>, usize) {
    if flow.item.cancelled.load(Ordering::Acquire) || state.shutdown {
        let (entry, turn) = flow.into_parts();
        state.queue.end(turn, bytes);
        drop(state);
        finish_cancelled(shared, entry);
        return (lock(shared), 0);
    }
    let wait = flow.item.job.wait();
    if !matches!(wait, Wait::No | Wait::Bytes(_)) {
        // It leaves the queue: whatever comes of it, this turn ends.
        state.queue.end(flow.turn(), bytes);
    }
    match wait {
        Wait::No => {}
        Wait::OwnThread => {
            let mut entry = flow.item;
            let held = entry.take_held();
            entry.outside = held.slot;
            state.admission.leave(held.slot, held.granted);
            state.report_bytes_in_flight();
            let admitted = state.admit();
            drop(state);
            run_on_own_thread(shared, entry);
            return (lock(shared), admitted);
        }
        Wait::Memory(size) => return await_memory(shared, state, flow.item, size),
        Wait::Bytes(size) => {
            if state.admission.grant(size) {
                state.report_bytes_in_flight();
                flow.item.granted += size;
                flow.item.job.grant();
                if let Wait::Memory(_) = flow.item.job.wait() {
                    state.queue.end(flow.turn(), bytes);
                    return await_memory(shared, state, flow.item, size);
                }
            } else {
                // Wait for the bytes holding nothing: the file closes outside the lock,
                // then the read joins the queue for memory, oldest first.
                state.queue.end(flow.turn(), bytes);
                drop(state);
                let mut entry = flow.item;
                entry.job.suspend();
                state = lock(shared);
                if entry.cancelled.load(Ordering::Acquire) || state.shutdown {
                    drop(state);
                    finish_cancelled(shared, entry);
                    return (lock(shared), 0);
                }
                let slot = std::mem::take(&mut entry.slot);
                state.admission.wait_for_bytes(entry, size, slot);
                let admitted = state.admit();
                return (state, admitted);
            }
        }
        Wait::FileClosed => {
            let mut entry = flow.item;
            entry.slot = false;
            let admitted = match state.admission.wait_for_close(entry) {
                Ok(()) => state.admit(),
                Err(mut entry) => {
                    // None of our files is open, so none will close: try again on a
                    // timer, and after a while let the open's error through.
                    let now = Instant::now();
                    let since = *entry.emfile_since.get_or_insert(now);
                    if now.duration_since(since) >= EMFILE_GIVE_UP_AFTER {
                        entry.job.give_up();
                        state.admission.retry(entry);
                        state.admit()
                    } else {
                        state.retry.push_back(entry);
                        state.retry_at.get_or_insert(now + EMFILE_RETRY_EVERY);
                        0
                    }
                }
            };
            return (state, admitted);
        }
    }
    // No wake-up here: this worker takes the next request itself and passes the
    // baton on if more are waiting.
    state.queue.put_back(flow, bytes);
    state.split_waiting = false;
    (state, 0)
}

/// Sets aside an admitted read that waits for memory its caller lends, keeping its
/// slot and bytes, and asks the caller (outside the lock) for `size` bytes.
fn await_memory<'a>(
    shared: &'a Arc<Shared>,
    mut state: MutexGuard<'a, State>,
    mut entry: Entry,
    size: u64,
) -> (MutexGuard<'a, State>, usize) {
    if state.admission.bytes() > size {
        // Other big reads are in flight. Their results live long enough to outlast
        // young collections (node:fs's own run a mark-compact per few reads then), so
        // lent memory would no longer die young, and is fresh (page faults) where
        // pooled memory is warm: the read allocates its own.
        entry.job.lend(None);
        state.enqueue(entry);
        return (state, 0);
    }
    let (id, ask) = (entry.id, entry.job.memory_asker());
    state.awaiting_memory.insert(id, entry);
    drop(state);
    match ask {
        Some(ask) => ask(size),
        None => _ = lend_to(shared, id, None),
    }
    (lock(shared), 0)
}

/// [`Pool::lend`].
fn lend_to(shared: &Shared, id: u64, memory: Option<Lent>) -> bool {
    let mut state = lock(shared);
    let Some(mut entry) = state.awaiting_memory.remove(&id) else { return false };
    entry.job.lend(memory);
    state.enqueue(entry);
    state.split_waiting = false;
    let wake = state.idle > 0;
    drop(state);
    if wake {
        shared.work_ready.notify_one();
    }
    true
}

/// Runs one step (or, if `may_split`, a piece) of a checked-out request outside the
/// lock.
fn run_one_step(shared: &Shared, mut flow: Flow<Entry>, may_split: bool) -> After {
    if flow.item.cancelled.load(Ordering::Acquire) {
        shared.active.fetch_sub(1, Ordering::Relaxed);
        let (entry, turn) = flow.into_parts();
        finish_cancelled(shared, entry);
        return After::Ended(turn, 0);
    }
    if let Some(piece) = may_split.then(|| flow.item.job.split()).flatten() {
        return run_piece(shared, flow, piece);
    }
    let stepped = step(shared, &mut flow.item);
    let (entry, turn) = match stepped {
        Stepped::More(bytes) => return After::Requeue(flow, bytes),
        Stepped::Done(_) | Stepped::Panicked => flow.into_parts(),
    };
    let bytes = if let Stepped::Done(bytes) = stepped { bytes } else { 0 };
    deliver(shared, entry, matches!(stepped, Stepped::Panicked));
    After::Ended(turn, bytes)
}

/// How a step ended.
enum Stepped {
    /// More to do; this many bytes were read.
    More(usize),
    /// The job has its outcome; the last step read this many bytes.
    Done(usize),
    /// The step panicked (a bug): the job must fail.
    Panicked,
}

/// Runs one step of a checked-out job and counts it. A panic (a bug) is caught: it
/// fails this request alone, the thread lives on, and the caller hears of it instead
/// of waiting forever.
fn step(shared: &Shared, entry: &mut Entry) -> Stepped {
    let Ok(step) = catch_unwind(AssertUnwindSafe(|| entry.job.step())) else {
        count_chunk(shared, 0, false);
        return Stepped::Panicked;
    };
    // A step that read nothing and is not the last only opened the file (and waits
    // for admission): it is not a chunk.
    count_chunk(shared, step.bytes, step.bytes > 0 || step.done);
    if step.done {
        Stepped::Done(step.bytes)
    } else {
        Stepped::More(step.bytes)
    }
}

/// Delivers a finished job's outcome: its result, or its failure if `panicked`. What
/// it held is given back first, so that whoever sees a result sees its slot and bytes
/// free (its fd closes in `complete`, just after).
fn deliver(shared: &Shared, entry: Entry, panicked: bool) {
    shared.completed.fetch_add(1, Ordering::Relaxed);
    give_back(shared, entry.held());
    let job = entry.job;
    let _ = catch_unwind(AssertUnwindSafe(|| if panicked { job.fail() } else { job.complete() }));
}

/// Puts the job back in the queue, charged the piece's bytes, so that the next
/// worker can take the next piece, then runs the piece.
fn run_piece(shared: &Shared, flow: Flow<Entry>, mut piece: Piece) -> After {
    let mut state = lock(shared);
    if flow.item.cancelled.load(Ordering::Acquire) || state.shutdown {
        drop(state);
        // The piece goes first: releasing the job waits for its pieces.
        drop(piece);
        shared.active.fetch_sub(1, Ordering::Relaxed);
        let (entry, turn) = flow.into_parts();
        finish_cancelled(shared, entry);
        return After::Ended(turn, 0);
    }
    state.queue.put_back(flow, piece.bytes);
    state.split_waiting = true;
    let wake = state.idle > 0;
    drop(state);
    if wake {
        shared.work_ready.notify_one();
    }
    // A panicking piece counts as unread: dropping it unfinished fails its job.
    let bytes = catch_unwind(AssertUnwindSafe(|| (piece.run)())).unwrap_or(0);
    count_chunk(shared, bytes, true);
    let _ = catch_unwind(AssertUnwindSafe(|| drop(piece)));
    After::PutBack
}

/// Counts a chunk (step or piece) that read `bytes` as done. Called before the
/// result is delivered, so whoever sees a result never sees its chunk as active.
fn count_chunk(shared: &Shared, bytes: usize, chunk: bool) {
    shared.active.fetch_sub(1, Ordering::Relaxed);
    shared.bytes_read.fetch_add(bytes as u64, Ordering::Relaxed);
    shared.chunks_read.fetch_add(chunk as u64, Ordering::Relaxed);
}

/// Gives back what an ending request held (before its outcome is delivered, so that
/// whoever sees the outcome sees them free) and wakes a worker for what that admits.
/// Called without the lock.
fn give_back(shared: &Shared, held: Held) {
    if held.slot || held.granted > 0 || held.outside {
        let mut state = lock(shared);
        if state.release(held) > 0 && state.idle > 0 {
            shared.work_ready.notify_one();
        }
    }
}

/// Runs the rest of a job that may block for any time (a FIFO waiting for a writer) on
/// a thread of its own, so that pool workers go on with everything else; the job
/// watches its cancellation flag while it waits. Such threads are counted in
/// `Stats::own_threads`, and end with their job.
fn run_on_own_thread(shared: &Arc<Shared>, entry: Entry) {
    shared.own_threads.fetch_add(1, Ordering::Relaxed);
    // Kept here too, so that a thread that cannot be started does not lose the job.
    let slot = Arc::new(Mutex::new(Some(entry)));
    let spawned = thread::Builder::new().name("fairfs-blocking".into()).spawn({
        let (shared, slot) = (shared.clone(), slot.clone());
        move || {
            let Some(mut entry) = slot.lock().unwrap_or_else(|p| p.into_inner()).take() else { return };
            loop {
                if entry.cancelled.load(Ordering::Acquire) {
                    finish_cancelled(&shared, entry);
                    break;
                }
                shared.active.fetch_add(1, Ordering::Relaxed);
                match step(&shared, &mut entry) {
                    Stepped::More(_) => {}
                    Stepped::Done(_) => break deliver(&shared, entry, false),
                    Stepped::Panicked => break deliver(&shared, entry, true),
                }
            }
            shared.own_threads.fetch_sub(1, Ordering::Relaxed);
        }
    });
    if spawned.is_err() {
        // No thread to be had: it fails here, on the worker, rather than never ending.
        shared.own_threads.fetch_sub(1, Ordering::Relaxed);
        if let Some(entry) = slot.lock().unwrap_or_else(|p| p.into_inner()).take() {
            deliver(shared, entry, true);
        }
    }
}

/// Delivers a cancellation, having given back what the request held.
fn finish_cancelled(shared: &Shared, entry: Entry) {
    give_back(shared, entry.held());
    shared.cancelled.fetch_add(1, Ordering::Relaxed);
    let _ = catch_unwind(AssertUnwindSafe(|| entry.job.cancel()));
}

/// The process-wide pool, created with the defaults on first use.
#[cfg(not(fairfs_loom))]
pub fn global() -> &'static Pool {
    static GLOBAL: std::sync::OnceLock<Pool> = std::sync::OnceLock::new();
    GLOBAL.get_or_init(|| {
        let hooks = Hooks {
            idle: Some(|| crate::buffer_pool::global().trim()),
            bytes_in_flight: Some(|bytes| crate::buffer_pool::global().set_bytes_in_flight(bytes)),
        };
        Pool::with_hooks(DEFAULT_THREADS, DEFAULT_CHUNK_SIZE, hooks)
    })
}

#[cfg(all(test, not(fairfs_loom)))]
mod tests;

#[cfg(all(test, fairfs_loom))]
mod loom_tests;
