//! What the pool keeps under its lock, and the bookkeeping every path shares:
//! entries and what they hold, admitting, queueing, releasing and the EMFILE retry.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use crate::job::Job;
use crate::loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use crate::loom::sync::{Arc, Condvar, Mutex, MutexGuard};
use crate::loom::thread::JoinHandle;
use crate::policy::admission::Admission;
use crate::policy::contention::{BusyClock, Governor};
use crate::scheduler::{FairQueue, Flow};
use crate::sys::CpuSnapshot;

use super::Hooks;

pub(super) struct Entry {
    pub(super) id: u64,
    pub(super) cancelled: Arc<AtomicBool>,
    pub(super) job: Box<dyn Job>,
    /// It holds an open-file slot ([`crate::policy::admission`]).
    pub(super) slot: bool,
    /// Bytes granted to it.
    pub(super) granted: u64,
    /// When its open first met EMFILE/ENFILE with none of the pool's files open.
    pub(super) emfile_since: Option<Instant>,
    /// It left for a thread of its own holding a file of ours ([`Admission::leave`]).
    pub(super) outside: bool,
}

/// What an entry held, given back when it ends.
#[derive(Clone, Copy, Debug)]
pub(super) struct Held {
    pub(super) slot: bool,
    pub(super) granted: u64,
    /// A file of ours held outside admission (on a thread of its own).
    pub(super) outside: bool,
}

impl Entry {
    pub(super) fn held(&self) -> Held {
        Held { slot: self.slot, granted: self.granted, outside: self.outside }
    }

    /// What it holds, to be given back (and so cleared) when it leaves admission.
    pub(super) fn take_held(&mut self) -> Held {
        let held = self.held();
        (self.slot, self.granted) = (false, 0);
        held
    }
}

/// State under the pool's lock.
pub(super) struct State {
    /// Requests waiting for their next chunk, in DRR order.
    pub(super) queue: FairQueue<Entry>,
    /// The number of workers the pool should have.
    pub(super) target_threads: usize,
    /// Workers that have started and not yet exited.
    pub(super) live_threads: usize,
    /// How long a worker waits without work before the pool counts it idle.
    pub(super) idle_after: Duration,
    /// A lane's pool: the workers it goes back to once idle ([`Pool::for_lane`]).
    pub(super) shrink_idle_to: Option<usize>,
    /// A lane's pool: how many workers it may grow to by itself, one at a time, when
    /// a big read's next part finds no free worker (0: never). A lone big read from a
    /// slow mount then has as many parts in flight as it has chunks, up to this.
    pub(super) grow_for_parts_to: usize,
    /// A lane's pool: the threads it shares with the other lanes ([`super::budget`]).
    pub(super) budget: Option<&'static super::budget::ThreadBudget>,
    /// Workers running a step or piece right now.
    pub(super) busy: usize,
    /// Workers waiting for work on `work_ready`. Wake-ups are only sent while some
    /// are: with std's futex condvar every `notify_one` is a system call, and a batch
    /// of 10,000 small files would otherwise pay one per file.
    pub(super) idle: usize,
    /// Workers watching for new work outside the lock before they sleep (at most one,
    /// [`super::spin`]): a submit that finds one sends no wake-up.
    pub(super) spinning: usize,
    /// How long an idle worker spins ([`super::spin::spin_for`]; zero: never).
    pub(super) spin: Duration,
    /// Workers running a step or piece of a large job right now.
    pub(super) large_busy: usize,
    /// How many may ([`crate::policy::contention`]).
    pub(super) governor: Governor,
    /// The limit set by [`Pool::set_large_limit`], if any: the governor's most.
    pub(super) large_limit_set: Option<usize>,
    /// The governor's last CPU snapshot, when it was taken and how long big reads had
    /// run by then; a worker is taking one.
    pub(super) looked_at: Option<(Instant, CpuSnapshot, Duration)>,
    pub(super) looking: bool,
    /// How long big reads have run, for the governor's windows.
    pub(super) large_clock: BusyClock,
    /// The request last put back was split, so more workers may help with it.
    pub(super) split_waiting: bool,
    /// The nice value workers should run at; each worker applies changes itself.
    pub(super) nice: i32,
    /// Reads that are not admitted yet, and what admitted ones hold.
    pub(super) admission: Admission<Entry>,
    /// Admitted reads waiting for memory their caller lends ([`Wait::Memory`]), by id;
    /// they keep their slot and bytes, and [`Pool::lend`] puts them back in the queue.
    pub(super) awaiting_memory: HashMap<u64, Entry>,
    /// Whole-file writes waiting for their file's turn ([`Wait::Turn`]), by id; they
    /// keep their slot, and the turn's end puts them back in the queue.
    pub(super) awaiting_turn: HashMap<u64, Entry>,
    /// Reads whose open met EMFILE/ENFILE while the pool held no file: retried at
    /// `retry_at`, since no close of ours will come to wake them.
    pub(super) retry: VecDeque<Entry>,
    pub(super) retry_at: Option<Instant>,
    /// Cancelled big reads whose release may wait for pieces other workers are
    /// reading: a worker releases them, so that cancelling never waits on the
    /// caller's (the JS) thread.
    pub(super) cancel_later: Vec<Entry>,
    pub(super) next_id: u64,
    /// Set by `Drop`: workers exit and queued jobs are cancelled.
    pub(super) shutdown: bool,
    /// What this pool tells the rest of the process.
    pub(super) hooks: Hooks,
}

impl State {
    /// Moves the reads admission now lets start into the queue; returns how many.
    pub(super) fn admit(&mut self) -> usize {
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

    /// Sets the number of workers the pool should have, tells whoever listens and the
    /// big-read limit, and counts as live the workers that must start: returns how
    /// many (surplus workers end by themselves at the top of their loop).
    pub(super) fn set_target_threads(&mut self, threads: usize) -> usize {
        // A lane's pool grows within what every lane holds together.
        let threads = match self.budget {
            Some(budget) => budget.resize(self.target_threads, threads),
            None => threads,
        };
        self.target_threads = threads;
        if let Some(tell) = self.hooks.threads {
            tell(threads);
        }
        self.update_large_limit();
        let missing = threads.saturating_sub(self.live_threads);
        self.live_threads += missing;
        missing
    }

    /// Puts an admitted request in the fair queue, in its keyed flow if it has one.
    pub(super) fn enqueue(&mut self, entry: Entry) {
        match entry.job.flow() {
            Some(key) if entry.job.flow_outlives_requests() => self.queue.push_keyed(entry, key),
            Some(key) => {
                self.queue.push_keyed(entry, key);
                self.queue.end_key(key);
            }
            None => self.queue.push(entry),
        }
    }

    /// Gives back what an ended read held and admits what that lets start.
    pub(super) fn release(&mut self, held: Held) -> usize {
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
    pub(super) fn retry_due(&mut self, now: Instant) -> usize {
        if !matches!(self.retry_at, Some(at) if now >= at) {
            return 0;
        }
        self.retry_at = None;
        while let Some(entry) = self.retry.pop_back() {
            self.admission.retry(entry);
        }
        self.admit()
    }

    /// Checks out the next request a free worker may read now: the next in the
    /// rotation, or else a keyed flow's next request, started early.
    pub(super) fn take(&mut self) -> Option<Flow<Entry>> {
        let large_ok = self.large_ok();
        let next = if large_ok { self.queue.pop() } else { self.queue.pop_where(|e| !e.job.is_large()) };
        next.or_else(|| self.queue.pop_early(|e| (large_ok || !e.job.is_large()) && !e.job.in_order()))
    }

    /// Whether a free worker would find something to take ([`Self::take`]).
    pub(super) fn takeable(&self) -> bool {
        let large_ok = self.large_ok();
        !self.queue.is_empty() || self.queue.has_early(|e| (large_ok || !e.job.is_large()) && !e.job.in_order())
    }
}

/// What the pool's handle and its workers share.
pub(super) struct Shared {
    /// Everything that changes together, under one lock.
    pub(super) state: Mutex<State>,
    /// Signalled when work is queued, the pool shrinks, or it shuts down.
    pub(super) work_ready: Condvar,
    /// Chunks being read right now. Outside the lock so that it drops before the
    /// result is delivered: whoever sees a result never sees its chunk as active.
    pub(super) active: AtomicUsize,
    /// Counters for [`super::Stats`], bumped outside the lock as requests end and
    /// chunks are read.
    pub(super) completed: AtomicU64,
    pub(super) cancelled: AtomicU64,
    pub(super) bytes_read: AtomicU64,
    pub(super) chunks_read: AtomicU64,
    pub(super) bytes_written: AtomicU64,
    pub(super) chunks_written: AtomicU64,
    /// Threads of their own running jobs that may block for long ([`Wait::OwnThread`]).
    pub(super) own_threads: AtomicUsize,
    /// The chunk size new requests use (the queue's DRR quantum follows it). Outside
    /// the lock: the JS thread reads it for each request.
    pub(super) chunk_size: AtomicUsize,
    /// Handles of every worker started and not yet seen finished, joined on drop.
    /// Here rather than in the pool's handle: a lane's worker starts another for a
    /// big read's parts.
    pub(super) handles: Mutex<Vec<JoinHandle<()>>>,
    /// Bumped by every submit that queues work, for a spinning worker to watch.
    pub(super) submitted: AtomicUsize,
}

pub(super) fn lock(shared: &Shared) -> MutexGuard<'_, State> {
    // Jobs run outside the lock, so a panic cannot leave `State` half-updated.
    shared.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
