//! How a request ends: delivered, failed or cancelled, always having given back its
//! open-file slot and bytes first, so that whoever sees the outcome sees them free.

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::loom::sync::atomic::Ordering;

use super::state::{lock, Entry, Held, Shared};

/// Delivers a finished job's outcome: its result, or its failure if `panicked`. What
/// it held is given back first, so that whoever sees a result sees its slot and bytes
/// free (its fd closes in `complete`, just after).
pub(super) fn deliver(shared: &Shared, entry: Entry, panicked: bool) {
    shared.completed.fetch_add(1, Ordering::Relaxed);
    give_back(shared, entry.held());
    let job = entry.job;
    let _ = catch_unwind(AssertUnwindSafe(|| if panicked { job.fail() } else { job.complete() }));
}

/// Gives back what an ending request held (before its outcome is delivered, so that
/// whoever sees the outcome sees them free) and wakes a worker for what that admits.
/// Called without the lock.
pub(super) fn give_back(shared: &Shared, held: Held) {
    if held.slot || held.granted > 0 || held.outside {
        let mut state = lock(shared);
        if state.release(held) > 0 && state.idle > 0 {
            shared.work_ready.notify_one();
        }
    }
}

/// Delivers a cancellation, having given back what the request held.
pub(super) fn finish_cancelled(shared: &Shared, entry: Entry) {
    give_back(shared, entry.held());
    shared.cancelled.fetch_add(1, Ordering::Relaxed);
    let _ = catch_unwind(AssertUnwindSafe(|| entry.job.cancel()));
}
