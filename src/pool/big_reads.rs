//! How many big reads run at once, as seen from the pool: the governor's sampling
//! after each big-read step ([`crate::policy::contention`] judges), and what the buffer pool
//! is told to keep in stock for them.

use std::time::Instant;

use crate::loom::sync::MutexGuard;
use crate::policy::contention::{self, Demand};

use super::state::{lock, Shared, State};

/// Whether this machine tells threads' waiting time, so the big-read limit can adapt
/// (not under loom, whose models must not depend on timing).
pub(super) fn contention_signal() -> bool {
    !cfg!(fairfs_loom) && crate::policy::host_threads::cpu_snapshot().is_some()
}

impl State {
    /// Tells the hook, if any, what the buffer pool should stock for big reads now
    /// ([`super::Hooks`], [`contention::Governor::bytes_to_stock`]). Called after every change to
    /// the bytes granted or to the governor's limit.
    pub(super) fn report_bytes_in_flight(&self) {
        if let Some(report) = self.hooks.bytes_in_flight {
            report(self.governor.bytes_to_stock(self.admission.bytes(), self.admission.limits().max_bytes));
        }
    }

    pub(super) fn update_large_limit(&mut self) {
        let threads = self.target_threads.max(1);
        let max = self.large_limit_set.unwrap_or(threads).clamp(1, threads);
        let fixed = self.large_limit_set.unwrap_or_else(|| contention::fixed_limit(threads));
        self.governor.set_max(max, fixed);
        self.report_bytes_in_flight();
    }

    /// Whether a free worker may check out a large job: within the governor's limit;
    /// without a signal, also to help with a lone request that is being split (the
    /// adaptive limit covers that case itself).
    pub(super) fn large_ok(&self) -> bool {
        self.large_busy < self.governor.limit()
            || (!self.governor.is_adaptive() && self.split_waiting && self.queue.len() == 1)
    }
}

/// After a big-read step: once per [`contention::WINDOW`], this worker takes a CPU
/// snapshot (outside the lock) and lets the governor judge the window: in full if big
/// reads ran for most of it ([`contention::MIN_BUSY_SHARE`]), else only to raise the
/// limit.
pub(super) fn look_around<'a>(shared: &'a Shared, mut state: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
    let now = Instant::now();
    let due = state.looked_at.map_or(true, |(at, _, _)| now.duration_since(at) >= contention::WINDOW);
    if !due || state.looking {
        return state;
    }
    state.looking = true;
    drop(state);
    let snapshot = crate::policy::host_threads::cpu_snapshot();
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
