//! Big writes give way to small truncating ones at the disk queue.
//!
//! A small `writeFile` over an existing file spends its time in the kernel, not here:
//! its `open(O_TRUNC)` waits for the writeback of the file's last contents (ext4
//! starts it at the close after a truncate, its `auto_da_alloc` safeguard) and for
//! the discard of the freed blocks, and both sit in the device queue behind whatever
//! the big writers' opens, chunks and closes put there meanwhile. mq-deadline sorts
//! writes by sector, so a lone small write can wait seconds there. Measured on CI's
//! ext4 (a probe of ten Python writers rewriting 64 MiB files, ARCHITECTURE.md): a
//! 1 KiB rewrite's p99 330–443 ms plain, 92–97 ms when the big writers paused while
//! it was in the kernel.
//!
//! So while a small truncating open or its close is in the kernel, a big write holds
//! its next open, chunk or close for a short while ([`MAX_HOLD`] at most per step, so
//! a stream of small writes slows big ones but never stops them). Nothing here
//! changes what reaches the file, only when: the file states are node:fs's.
//!
//! Lanes' workers take no part, either way: their mounts' queues are not the local
//! disk's, and a small write hung on a stopped FUSE daemon must not hold every big
//! local write for as long as it hangs.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Small truncating opens and closes in the kernel now.
static SMALL_IN_KERNEL: AtomicUsize = AtomicUsize::new(0);

/// The longest one step of a big write gives way.
pub const MAX_HOLD: Duration = Duration::from_millis(25);

/// How often a held step looks again.
const LOOK_EVERY: Duration = Duration::from_micros(200);

thread_local! {
    /// This thread is a lane's worker ([`crate::lanes`]).
    static ON_LANE: Cell<bool> = const { Cell::new(false) };
}

/// Called by each worker as it starts: whether it serves a lane.
pub fn set_on_lane(on_lane: bool) {
    ON_LANE.with(|l| l.set(on_lane));
}

fn on_lane() -> bool {
    ON_LANE.with(Cell::get)
}

/// Held while a small truncating open or close is in the kernel (counted off lanes only).
#[must_use]
pub struct SmallInKernel(bool);

impl SmallInKernel {
    pub fn enter() -> Self {
        let counted = !on_lane();
        if counted {
            SMALL_IN_KERNEL.fetch_add(1, Ordering::Relaxed);
        }
        SmallInKernel(counted)
    }
}

impl Drop for SmallInKernel {
    fn drop(&mut self) {
        if self.0 {
            SMALL_IN_KERNEL.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// Before a write's open or close: a small truncating one is counted while it is in
/// the kernel (the guard), a big one gives way first.
pub fn at_open_or_close(small_truncating: bool, large: bool) -> Option<SmallInKernel> {
    if small_truncating {
        return Some(SmallInKernel::enter());
    }
    if large {
        give_way();
    }
    None
}

/// Before a big write's open, chunk or close: waits while a small one is in the
/// kernel, for [`MAX_HOLD`] at most. Returns how long it waited.
pub fn give_way() -> Duration {
    give_way_for(MAX_HOLD)
}

fn give_way_for(limit: Duration) -> Duration {
    if SMALL_IN_KERNEL.load(Ordering::Relaxed) == 0 || on_lane() {
        return Duration::ZERO;
    }
    let started = Instant::now();
    while SMALL_IN_KERNEL.load(Ordering::Relaxed) > 0 && started.elapsed() < limit {
        std::thread::sleep(LOOK_EVERY);
    }
    started.elapsed()
}

#[cfg(all(test, not(fairfs_loom)))]
mod tests {
    use super::*;

    // One test, as the counter is process-wide: the cases run in order.
    #[test]
    fn a_big_step_waits_while_a_small_one_is_in_the_kernel_and_never_past_the_limit() {
        assert_eq!(give_way(), Duration::ZERO, "nothing small in the kernel: no wait");

        let small = SmallInKernel::enter();
        let waited = give_way();
        assert!(waited >= MAX_HOLD, "held for the limit while the small one stays: {waited:?}");
        assert!(waited < Duration::from_secs(5), "and not far past it: {waited:?}");

        let leaving = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            drop(small);
        });
        // A limit no machine reaches: the hold ends because the small one left.
        let waited = give_way_for(Duration::from_secs(60));
        leaving.join().unwrap();
        assert!(waited < Duration::from_secs(30), "the hold ended when the small one left: {waited:?}");
        assert_eq!(SMALL_IN_KERNEL.load(Ordering::Relaxed), 0, "the guard gave its count back");
        assert_eq!(give_way(), Duration::ZERO);

        // A lane's worker: its small writes are not counted, and it never waits.
        std::thread::spawn(|| {
            set_on_lane(true);
            let _hung = SmallInKernel::enter();
            assert_eq!(SMALL_IN_KERNEL.load(Ordering::Relaxed), 0, "a lane's small write is not counted");
            drop(_hung);
            let _local = std::thread::spawn(SmallInKernel::enter).join().unwrap();
            assert_eq!(give_way(), Duration::ZERO, "a lane's big write does not wait for a local small one");
        })
        .join()
        .unwrap();
    }
}
