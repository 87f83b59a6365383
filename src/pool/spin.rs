//! A worker with nothing to do spins a little before it sleeps.
//!
//! A caller making one small call after another (a log line written with `fs.write`,
//! a `readdir` per request) hands the pool its next request a few microseconds after
//! it hears of the last. A worker that went to sleep at once would be woken for it
//! (a futex wake-up on the caller's side, a context switch on the worker's), and by
//! then the event loop has gone to sleep too: on this 2-core machine a 16-byte
//! `fs.write` took 36 µs a round trip, 20 µs of it the loop's own CPU. A worker that
//! watches for work for [`SPIN`] first takes the next request as it comes, and its
//! outcome is back before the loop has slept: 10 µs a round trip, 7 µs of the loop's
//! CPU (BENCHMARKS.md, "calls").
//!
//! One worker spins at a time, only in the process-wide pool (a lane's requests wait on
//! a slow mount, so its next one is rarely microseconds away), and a submit that finds
//! one spinning sends no wake-up. The spinner gives up its CPU when its spin ends: at
//! most [`SPIN`] of a core after each lull.

use std::time::Duration;

use crate::loom::sync::atomic::Ordering;
use crate::loom::sync::MutexGuard;

use super::state::{lock, Shared, State};

/// How long an idle worker watches for new work before it sleeps.
/// `FAIRFS_SPIN_US` sets it (0: never spin), read once.
pub(super) fn spin_for() -> Duration {
    static SPIN_FOR: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *SPIN_FOR.get_or_init(|| {
        let us = std::env::var("FAIRFS_SPIN_US").ok().and_then(|v| v.trim().parse::<u64>().ok());
        us.map_or(SPIN, Duration::from_micros)
    })
}

/// The default spin: long enough for a caller's next request (a JS callback's turn
/// and the call it makes, 5–20 µs here), short against a sleep's cost.
pub const SPIN: Duration = Duration::from_micros(50);

/// Spins outside the lock for new work if the pool spins and no other worker does,
/// until a submit comes or the spin is over; gives the lock back, held again. The
/// caller looks at everything again before it sleeps: while the lock was let go,
/// anything may have changed (a cancel, a shutdown) without a wake-up, since no
/// worker was waiting for one.
pub(super) fn for_work<'a>(shared: &'a Shared, mut state: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
    if state.spin.is_zero() || state.spinning > 0 || state.retry_at.is_some() {
        return state;
    }
    let spin = state.spin;
    state.spinning += 1;
    let seen = shared.submitted.load(Ordering::Acquire);
    drop(state);
    watch(shared, seen, spin);
    let mut state = lock(shared);
    state.spinning -= 1;
    state
}

/// Watches `shared.submitted` move from `seen`, for `spin` at most.
#[cfg(not(fairfs_loom))]
fn watch(shared: &Shared, seen: usize, spin: Duration) {
    let start = std::time::Instant::now();
    while shared.submitted.load(Ordering::Acquire) == seen && start.elapsed() < spin {
        std::hint::spin_loop();
    }
}

/// Under loom, time does not pass: a few looks, each after giving way.
#[cfg(fairfs_loom)]
fn watch(shared: &Shared, seen: usize, _spin: Duration) {
    for _ in 0..2 {
        if shared.submitted.load(Ordering::Acquire) != seen {
            return;
        }
        crate::loom::thread::yield_now();
    }
}
