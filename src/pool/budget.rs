//! Threads several pools share: the lanes of every slow mount together hold at most
//! the threads users would give libuv for all mounts at once (`UV_THREADPOOL_SIZE=64`),
//! so five hung mounts cost what one does, not five times it.
//!
//! Each pool that shares a budget asks it before it grows ([`ThreadBudget::resize`])
//! and gives threads back as it shrinks. A pool always keeps one worker, even past the
//! cap: a lane with none could never finish what it was given.
//!
//! A pool grows to at most half of what the others leave under the cap. Threads stuck
//! on a hung mount never come back, so without that the first hung mount would take
//! the whole cap and every later slow mount would have one worker; with it, the first
//! holds at most 32 of 64, the next 16, and so on.

use crate::loom::sync::atomic::{AtomicUsize, Ordering};

#[derive(Debug)]
pub struct ThreadBudget {
    in_use: AtomicUsize,
    cap: AtomicUsize,
}

impl ThreadBudget {
    pub fn new(cap: usize) -> Self {
        ThreadBudget { in_use: AtomicUsize::new(0), cap: AtomicUsize::new(cap) }
    }

    /// Sets the most threads the pools may hold together; pools already over it keep
    /// what they have until they shrink.
    pub fn set_cap(&self, cap: usize) {
        self.cap.store(cap, Ordering::Relaxed);
    }

    pub fn cap(&self) -> usize {
        self.cap.load(Ordering::Relaxed)
    }

    /// Threads the pools hold now.
    pub fn in_use(&self) -> usize {
        self.in_use.load(Ordering::Acquire)
    }

    /// A pool holding `from` threads wants `to`: what it may have. Shrinking gives the
    /// difference back; growing takes what is left under the cap, up to half of what
    /// the other pools leave, at least enough for one worker.
    pub fn resize(&self, from: usize, to: usize) -> usize {
        if to <= from {
            self.in_use.fetch_sub(from - to, Ordering::AcqRel);
            return to;
        }
        let mut used = self.in_use.load(Ordering::Acquire);
        loop {
            let cap = self.cap();
            let free = cap.saturating_sub(used);
            let others = used.saturating_sub(from);
            let share = (cap.saturating_sub(others) / 2).saturating_sub(from);
            let granted = (to - from).min(free).min(share).max(1usize.saturating_sub(from));
            if granted == 0 {
                return from;
            }
            match self.in_use.compare_exchange_weak(used, used + granted, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return from + granted,
                Err(now) => used = now,
            }
        }
    }
}

#[cfg(all(test, not(fairfs_loom)))]
mod tests {
    use super::*;

    #[test]
    fn pools_grow_within_the_cap_together_and_give_back_as_they_shrink() {
        let b = ThreadBudget::new(16);
        let first = b.resize(0, 4);
        let mut second = b.resize(0, 4);
        assert_eq!((first, second), (4, 4));
        second = b.resize(second, 64);
        assert_eq!(second, 6, "half of what the first leaves under the cap");
        let mut third = b.resize(0, 4);
        assert_eq!(third, 3, "half of what the other two leave");
        third = b.resize(third, 8);
        assert_eq!(third, 3, "no more than that");
        let fourth = b.resize(0, 4);
        assert_eq!(fourth, 1, "half of the one left");
        assert_eq!(b.in_use(), 14);
        assert_eq!(b.resize(second, 4), 4);
        assert_eq!(b.in_use(), 12, "a pool that shrinks gives its threads back");
        assert_eq!(b.resize(fourth, 64), 2, "which another may take, up to its half");
        let full = ThreadBudget::new(2);
        assert_eq!(full.resize(0, 4), 1);
        assert_eq!(full.resize(0, 4), 1);
        assert_eq!(full.resize(0, 4), 1, "a new pool gets one worker past the cap");
        assert_eq!(full.in_use(), 3);
    }

    #[test]
    fn a_lone_pool_takes_half_the_cap_and_a_later_one_half_of_the_rest() {
        let b = ThreadBudget::new(64);
        let hung = b.resize(0, 4);
        let hung = b.resize(hung, 100);
        assert_eq!(hung, 32);
        let next = b.resize(0, 4);
        assert_eq!(b.resize(next, 100), 16, "a mount hung first leaves the next one a quarter of the cap");
    }
}

#[cfg(all(test, fairfs_loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    /// Two pools growing at once never hold more than the cap between them (beyond
    /// the one worker each always keeps).
    #[test]
    fn loom_two_pools_growing_at_once_stay_within_the_cap() {
        loom::model(|| {
            let budget = Arc::new(ThreadBudget::new(5));
            let other = {
                let budget = budget.clone();
                loom::thread::spawn(move || budget.resize(1, 4))
            };
            let mine = budget.resize(1, 4);
            let theirs = other.join().unwrap();
            // Each started with one (not taken from this budget in the model).
            assert!(mine - 1 + theirs - 1 <= 5, "{mine} + {theirs}");
            assert_eq!(budget.in_use(), mine - 1 + theirs - 1);
        });
    }
}
