//! A worker's loop: take the next request the fair queue offers, run one step or
//! piece of it outside the lock, count it, and put it back or let it end.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

use crate::job::{Data, Piece};
use crate::loom::sync::atomic::Ordering;
use crate::loom::sync::Arc;
use crate::loom::thread;
use crate::policy::loop_cpu::Placement;
use crate::scheduler::{Flow, Turn};

use super::big_reads::look_around;
use super::finish::{deliver, finish_cancelled};
use super::state::{lock, Entry, Shared};
use super::step::{count_chunk, step, Stepped};
use super::waits::requeue;

/// Starts `n` workers whose places `live_threads` already counts; a thread that cannot
/// start gives its place back (the pool runs with the ones it has).
pub(super) fn start_workers(shared: &Arc<Shared>, n: usize) {
    if n == 0 {
        return;
    }
    let mut handles = shared.handles.lock().unwrap();
    // Workers a lane shrank away have ended: their handles go (dropped, detached).
    // Loom's handles cannot tell; its models never shrink a pool.
    #[cfg(not(fairfs_loom))]
    handles.retain(|h| !h.is_finished());
    for _ in 0..n {
        let for_worker = shared.clone();
        match thread::Builder::new().name("fairfs-worker".into()).spawn(move || worker(for_worker)) {
            Ok(h) => handles.push(h),
            Err(_) => lock(shared).live_threads -= 1,
        }
    }
}

/// A worker's life: take the next request, run one chunk, put it back.
fn worker(shared: Arc<Shared>) {
    let mut state = lock(&shared);
    // Only lanes have a thread budget of their own.
    #[cfg(not(fairfs_loom))]
    crate::policy::give_way::set_on_lane(state.budget.is_some());
    let mut nice = 0;
    let mut placement = Placement::default();
    // Whether this worker has spun for work since it last found none.
    let mut spun = false;
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
            // Spin once per lull, then look at everything again (work, cancels, a
            // shutdown, a shrink: the lock was let go) before sleeping.
            if !spun {
                spun = true;
                state = super::spin::for_work(&shared, state);
                continue;
            }
            spun = false;
            state.idle += 1;
            let timeout = state.retry_at.map_or(state.idle_after, |at| at.saturating_duration_since(Instant::now()));
            let (guard, wait) = shared.work_ready.wait_timeout(state, timeout).unwrap_or_else(|p| p.into_inner());
            state = guard;
            state.idle -= 1;
            let idle = wait.timed_out() && state.queue.is_empty() && state.retry_at.is_none();
            // A lane grown for a burst goes back to its first workers once none is
            // busy: the extra ones end at the top of their loop.
            if let Some(floor) = state.shrink_idle_to.filter(|&f| idle && state.busy == 0 && state.target_threads > f) {
                state.set_target_threads(floor);
                shared.work_ready.notify_all();
            }
            if let Some(hook) = state.hooks.idle.filter(|_| idle) {
                drop(state);
                hook();
                state = lock(&shared);
            }
            continue;
        };
        spun = false;
        shared.active.fetch_add(1, Ordering::Relaxed);
        state.busy += 1;
        let large = flow.item.job.is_large();
        if large && state.large_busy == 0 && state.governor.is_adaptive() {
            state.large_clock.start(Instant::now());
        }
        state.large_busy += large as usize;
        // More waiting than this worker takes: wake one more, which does the same. A
        // stream's next block counts: the submit that queued it may have found this
        // worker spinning, and sent no wake-up.
        if state.idle > 0 && state.takeable() {
            shared.work_ready.notify_one();
        }
        // Split a request only for workers that would otherwise have nothing to do:
        // with other requests waiting, each worker serving its own is as fast, and no
        // request waits at its end for a piece another (preempted) worker is slow to
        // finish. A lane that may grow for parts splits for the worker it will start.
        let may_split = state.queue.is_empty()
            && (state.busy < state.target_threads || state.target_threads < state.grow_for_parts_to);
        drop(state);
        // A big job that writes (`writeFile`, `copyFile` over one chunk) fills the page cache.
        placement.before_step(large && flow.item.job.data() == Data::Written);
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

/// What became of a request after one step.
pub(super) enum After {
    /// It has more to do and was not put back yet.
    Requeue(Flow<Entry>, usize),
    /// It was delivered or cancelled (having given back what it held): its turn
    /// ends, having read this many bytes.
    Ended(Turn, usize),
    /// It was put back in the queue already.
    PutBack,
}

/// Runs one step (or, if `may_split`, a piece) of a checked-out request outside the
/// lock.
pub(super) fn run_one_step(shared: &Arc<Shared>, mut flow: Flow<Entry>, may_split: bool) -> After {
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

/// Puts the job back in the queue, charged the piece's bytes, so that the next
/// worker can take the next piece, then runs the piece.
/// A lane's pool with no free worker for the next piece starts one more, up to
/// `grow_for_parts_to`: a lone big read from a slow mount keeps a piece in flight per
/// chunk instead of per first worker.
pub(super) fn run_piece(shared: &Arc<Shared>, flow: Flow<Entry>, mut piece: Piece) -> After {
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
    let grow = !wake && state.target_threads < state.grow_for_parts_to;
    let one_more = state.target_threads + 1;
    let missing = if grow { state.set_target_threads(one_more) } else { 0 };
    drop(state);
    if wake {
        shared.work_ready.notify_one();
    }
    start_workers(shared, missing);
    // A panicking piece counts as unread: dropping it unfinished fails its job.
    let bytes = catch_unwind(AssertUnwindSafe(|| (piece.run)())).unwrap_or(0);
    count_chunk(shared, bytes, Data::Read, true);
    let _ = catch_unwind(AssertUnwindSafe(|| drop(piece)));
    After::PutBack
}
