//! Where a request waits when it cannot take its next step: for bytes, for a file
//! of ours to close after EMFILE (or a retry timer), for memory its caller lends, or
//! on a thread of its own. Admission ([`crate::policy::admission`]) decides; this is its wiring.

use std::time::{Duration, Instant};

use crate::job::Wait;
use crate::loom::sync::atomic::Ordering;
use crate::loom::sync::{Arc, Mutex, MutexGuard};
use crate::loom::thread;
use crate::memory::lent::Lent;
use crate::scheduler::Flow;

use super::finish::{deliver, finish_cancelled};
use super::state::{lock, Entry, Shared, State};
use super::step::{step, Stepped};

/// How often a read whose open met EMFILE/ENFILE tries again while none of the pool's
/// own files is open (so no close of ours will tell it when).
pub const EMFILE_RETRY_EVERY: Duration = Duration::from_millis(10);
/// How long such a read keeps trying before it fails with node:fs's error. With some
/// of the pool's files open it waits for them instead, without a bound: they close as
/// their reads end. graceful-fs retries for up to 60 s; a read that fails late is
/// worse than one that fails soon, and descriptors held by other code are usually
/// given back within milliseconds (a burst of node:fs reads, a connection pool).
pub const EMFILE_GIVE_UP_AFTER: Duration = Duration::from_secs(2);

/// Puts a request that has more to do back in the queue, or where it must wait.
/// Returns the lock and how many reads admission let start meanwhile.
pub(super) fn requeue<'a>(
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
        Wait::Turn => {
            let mut entry = flow.item;
            let id = entry.id;
            match entry.job.set_aside(resumer(shared, id)) {
                None => _ = state.awaiting_turn.insert(id, entry),
                // The turn came meanwhile.
                Some(_) => state.enqueue(entry),
            }
            return (state, 0);
        }
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
pub(super) fn await_memory<'a>(
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
pub(super) fn lend_to(shared: &Shared, id: u64, memory: Option<Lent>) -> bool {
    let mut state = lock(shared);
    let Some(mut entry) = state.awaiting_memory.remove(&id) else { return false };
    entry.job.lend(memory);
    put_back(shared, state, entry);
    true
}

/// Returns a request that was set aside to the queue, waking an idle worker for it.
fn put_back(shared: &Shared, mut state: MutexGuard<'_, State>, entry: Entry) {
    state.enqueue(entry);
    state.split_waiting = false;
    let wake = state.idle > 0;
    drop(state);
    if wake {
        shared.work_ready.notify_one();
    }
}

/// What puts request `id`, set aside for its turn ([`Wait::Turn`]), back in the queue:
/// at once, unless it was cancelled meanwhile (the cancel delivered it).
fn resumer(shared: &Arc<Shared>, id: u64) -> crate::job::Resume {
    let shared = shared.clone();
    Box::new(move || {
        let mut state = lock(&shared);
        let Some(entry) = state.awaiting_turn.remove(&id) else { return };
        if entry.cancelled.load(Ordering::Acquire) || state.shutdown {
            drop(state);
            return finish_cancelled(&shared, entry);
        }
        put_back(&shared, state, entry);
    })
}

/// Runs the rest of a job that may block for any time (a FIFO waiting for a writer) on
/// a thread of its own, so that pool workers go on with everything else; the job
/// watches its cancellation flag while it waits. Such threads are counted in
/// `Stats::own_threads`, and end with their job.
pub(super) fn run_on_own_thread(shared: &Arc<Shared>, entry: Entry) {
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
