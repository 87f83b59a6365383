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
//!
//! This file is the handle (submit, cancel, lend, configure, shut down). The rest:
//!
//! * `state`: what lives under the lock, and admitting, queueing, releasing;
//! * `worker`: the loop that picks the next chunk and runs it;
//! * `step`: one step of a job run and counted, by a worker or a thread of its own;
//! * `waits`: where a request waits for bytes, a closed file, lent memory or a thread;
//! * `finish`: delivering, failing and cancelling, giving back slot and bytes first;
//! * `big_reads`: the governor's sampling and the buffer pool's stock;
//! * `stats`: the counters; `tests` and `loom_tests`: unit tests and loom models.

mod big_reads;
pub mod budget;
mod finish;
mod spin;
mod state;
mod stats;
mod step;
mod waits;
mod worker;

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use crate::job::Job;
use crate::loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use crate::loom::sync::{Arc, Condvar, Mutex, MutexGuard};
use crate::memory::lent::Lent;
use crate::policy::admission::{Admission, Limits};
use crate::policy::contention::{BusyClock, Governor};
use crate::scheduler::FairQueue;

use big_reads::contention_signal;
use state::{lock, Entry, Shared, State};
pub use stats::Stats;
use waits::lend_to;
pub use waits::{EMFILE_GIVE_UP_AFTER, EMFILE_RETRY_EVERY};
use worker::start_workers;

/// Default number of worker threads, the same as libuv's pool.
pub const DEFAULT_THREADS: usize = 4;
/// Default chunk size and DRR quantum: node:fs's `readFile` chunk.
pub use crate::read::DEFAULT_CHUNK_SIZE;
/// Default nice value of worker threads: below the event loop and libuv's threads,
/// so that JS, zlib and crypto win when they compete with reads for CPU. Not lower:
/// once the big-read limit ([`crate::policy::contention`]) leaves a core free, the
/// one worker copying big files is what a lower priority slows (docs/tuning.md).
pub const DEFAULT_NICE: i32 = 5;
/// How long the pool waits without work before it runs its idle hook.
pub const IDLE_AFTER: Duration = Duration::from_secs(10);
/// How long a lane's workers wait without work before the lane shrinks back.
pub const LANE_IDLE_AFTER: Duration = Duration::from_secs(1);
/// Nice value of a lane's workers: the process's own. They spend their time waiting on
/// a server and copy little; below the process, each reply's wake-up would wait for
/// the busy threads around it (the daemon's or the server's replies come one by one).
pub const LANE_NICE: i32 = 0;

/// A handle for cancelling a submitted job.
#[derive(Clone, Debug)]
pub struct Ticket {
    id: u64,
    cancelled: Arc<AtomicBool>,
    /// The lane of the pool that holds the job ([`crate::lanes`]); `None`: the
    /// process-wide pool's.
    lane: Option<u64>,
}

impl Ticket {
    /// The lane of the pool that holds the job; `None` for the process-wide pool.
    pub fn lane(&self) -> Option<u64> {
        self.lane
    }
}

/// The open-file limit the pool starts with: a share of this process's descriptors.
pub fn default_limits() -> Limits {
    Limits {
        max_open: crate::policy::admission::default_max_open(crate::sys::max_open_files()),
        max_bytes: crate::policy::admission::DEFAULT_MAX_BYTES,
    }
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
    /// Told the number of worker threads whenever it changes, so that the buffer pool
    /// lets all but one of them wait for stock. Called under the pool's lock.
    pub threads: Option<fn(usize)>,
}

/// A bounded pool of worker threads with fair chunk scheduling.
pub struct Pool {
    shared: Arc<Shared>,
    /// The lane this pool serves ([`crate::lanes`]), written into its tickets.
    lane: Option<u64>,
}

impl Pool {
    pub fn new(threads: usize, chunk_size: usize) -> Pool {
        Pool::with_hooks(threads, chunk_size, Hooks::default())
    }

    /// A pool that tells the rest of the process what `hooks` ask for.
    pub fn with_hooks(threads: usize, chunk_size: usize, hooks: Hooks) -> Pool {
        let pool = Pool::unstarted(chunk_size, hooks);
        pool.lock().spin = spin::spin_for();
        pool.configure(Some(threads), None);
        pool
    }

    /// A pool with no workers yet: [`Pool::configure`] starts them.
    fn unstarted(chunk_size: usize, hooks: Hooks) -> Pool {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                queue: FairQueue::new(chunk_size),
                target_threads: 0,
                live_threads: 0,
                idle_after: IDLE_AFTER,
                shrink_idle_to: None,
                grow_for_parts_to: 0,
                budget: None,
                busy: 0,
                idle: 0,
                spinning: 0,
                spin: Duration::ZERO,
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
                awaiting_turn: HashMap::new(),
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
            bytes_written: AtomicU64::new(0),
            chunks_written: AtomicU64::new(0),
            own_threads: AtomicUsize::new(0),
            chunk_size: AtomicUsize::new(chunk_size),
            handles: Mutex::new(Vec::new()),
            submitted: AtomicUsize::new(0),
        });
        Pool { shared, lane: None }
    }

    /// The pool of lane `lane` ([`crate::lanes`]): its tickets say so. It grows by
    /// [`Pool::configure`] and goes back to `threads` workers once none has had work
    /// for [`LANE_IDLE_AFTER`].
    /// Its workers run at [`LANE_NICE`], set before they start (a thread may lower its
    /// priority but not raise it back).
    pub fn for_lane(lane: u64, threads: usize, chunk_size: usize, budget: &'static budget::ThreadBudget) -> Pool {
        let mut pool = Pool::unstarted(chunk_size, Hooks::default());
        pool.lane = Some(lane);
        let mut state = pool.lock();
        state.budget = Some(budget);
        state.idle_after = LANE_IDLE_AFTER;
        state.shrink_idle_to = Some(threads.max(1));
        state.nice = LANE_NICE;
        drop(state);
        pool.configure(Some(threads), None);
        pool
    }

    /// A lane no new request will reach (its mount id now names another mount,
    /// [`crate::lanes`]): once idle it goes down to one worker, not its first ones,
    /// giving the rest back to the lanes' budget. One stays for whatever it still holds
    /// or gets back (a write whose turn comes, a read its caller lends memory).
    pub fn retire(&self) {
        let mut state = self.lock();
        state.shrink_idle_to = Some(1);
        drop(state);
        self.shared.work_ready.notify_all();
    }

    /// The number of workers the pool has, or is about to have.
    pub fn target_threads(&self) -> usize {
        self.lock().target_threads
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
        self.queue_many(jobs, true)
    }

    /// [`Pool::submit_many`] without waking a worker: the caller owes the pool a
    /// [`Pool::nudge`] soon. An event loop making many calls in one turn wakes the pool
    /// once for them all, not once a call (a futex wake-up each, on its own thread).
    pub fn submit_many_quietly(&self, jobs: Vec<Box<dyn Job>>) -> Vec<Ticket> {
        self.queue_many(jobs, false)
    }

    /// Wakes a worker if work waits that no worker is awake to take: what quiet
    /// submits left owed. Workers pass the baton on from there.
    pub fn nudge(&self) {
        let state = self.lock();
        let wake = state.idle > 0 && state.spinning == 0 && state.takeable();
        drop(state);
        if wake {
            self.shared.work_ready.notify_one();
        }
    }

    fn queue_many(&self, jobs: Vec<Box<dyn Job>>, wake_now: bool) -> Vec<Ticket> {
        let mut tickets = Vec::with_capacity(jobs.len());
        let mut state = self.lock();
        if state.shutdown {
            drop(state);
            for job in jobs {
                self.shared.cancelled.fetch_add(1, Ordering::Relaxed);
                job.cancel();
                tickets.push(Ticket { id: u64::MAX, cancelled: Arc::new(AtomicBool::new(true)), lane: self.lane });
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
            tickets.push(Ticket { id, cancelled, lane: self.lane });
        }
        if queued {
            state.split_waiting = false;
        }
        if queued {
            self.shared.submitted.fetch_add(1, Ordering::Release);
        }
        // A spinning worker takes it without one.
        let wake = wake_now && queued && state.idle > 0 && state.spinning == 0;
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
        removed.extend(tickets.iter().filter_map(|t| state.awaiting_turn.remove(&t.id)));
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
        // Cancelling frees the job's file, and a close may wait on storage (a FUSE
        // daemon's FLUSH): never on the caller's thread, which is the event loop.
        if !now.is_empty() {
            crate::closer::later(move || {
                for entry in now {
                    entry.job.cancel();
                }
            });
        }
        n
    }

    /// Hands a read waiting for memory ([`crate::job::Wait::Memory`]) the memory its caller lends,
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

    /// The open-file and byte limits of admission now.
    pub fn admission_limits(&self) -> Limits {
        self.lock().admission.limits()
    }

    /// Sets the open-file and byte limits of admission ([`crate::policy::admission`]); `None`
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
        let missing = state.set_target_threads(threads.max(1));
        drop(state);
        self.shared.work_ready.notify_all();
        start_workers(&self.shared, missing);
    }

    /// Lets a lane's pool grow by itself, one worker at a time up to `threads`, while
    /// a big read's next part finds no free worker (0: never).
    pub fn set_grow_for_parts_to(&self, threads: usize) {
        self.lock().grow_for_parts_to = threads;
    }

    /// Sets how many big files may be read at once (within the pool's size), or goes
    /// back to the default (adaptive up to every thread, [`crate::policy::contention`]) with `None`.
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
            all.extend(state.awaiting_turn.drain().map(|(_, entry)| entry));
            all.append(&mut state.cancel_later);
            all
        };
        self.shared.work_ready.notify_all();
        for entry in waiting {
            self.shared.cancelled.fetch_add(1, Ordering::Relaxed);
            entry.job.cancel();
        }
        // A lane's worker may have started another just before the shutdown: it adds
        // the handle before it ends, so joining it first brings the new one to light.
        loop {
            let handles = std::mem::take(&mut *self.shared.handles.lock().unwrap());
            if handles.is_empty() {
                break;
            }
            for h in handles {
                let _ = h.join();
            }
        }
    }
}

/// The process-wide pool, created with the defaults on first use.
#[cfg(not(fairfs_loom))]
pub fn global() -> &'static Pool {
    static GLOBAL: std::sync::OnceLock<Pool> = std::sync::OnceLock::new();
    GLOBAL.get_or_init(|| {
        let hooks = Hooks {
            idle: Some(|| crate::memory::buffer_pool::global().trim()),
            bytes_in_flight: Some(|bytes| crate::memory::buffer_pool::global().set_bytes_in_flight(bytes)),
            threads: Some(|n| crate::memory::buffer_pool::global().set_max_waiters(n.saturating_sub(1))),
        };
        Pool::with_hooks(DEFAULT_THREADS, DEFAULT_CHUNK_SIZE, hooks)
    })
}

#[cfg(all(test, not(fairfs_loom)))]
mod tests;

#[cfg(all(test, fairfs_loom))]
mod loom_tests;
