//! Opening and reading files on the calling thread is earned, mount by mount.
//!
//! An open or a read can wait where no table shows it: an on-access scanner answers a
//! fanotify permission event for every open and read on the mounts it watches, after
//! as long as its scan takes. The guard ([`super::guard`]) pauses a mount after one such wait, but that one
//! wait would already be the event loop's. So the calling thread opens and reads
//! nothing on a mount until the pool's own opens there have been answered quickly
//! [`EARNED`] times in a row ([`observe`]); a slow one starts the count again. A mount once trusted
//! stays so, and the guard watches it from then on. Stats, which no scanner intercepts,
//! need no trust.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use super::guard::SLOW;

/// Quick opens in a row on the pool before the calling thread may open files there.
pub const EARNED: u32 = 4;

/// Each local mount's quick opens in a row, until trusted.
static QUICK_OPENS: Mutex<Option<HashMap<u64, u32>>> = Mutex::new(None);
/// Some mount still has to earn trust: pool opens are worth observing.
static PENDING: AtomicBool = AtomicBool::new(true);

/// Whether the calling thread may open files on `mount`.
pub fn trusted(mount: u64) -> bool {
    let quick = QUICK_OPENS.lock().unwrap_or_else(|e| e.into_inner());
    let trusted = quick.as_ref().and_then(|q| q.get(&mount)).is_some_and(|&n| n >= EARNED);
    if !trusted {
        PENDING.store(true, Ordering::Relaxed);
    }
    trusted
}

/// Whether pool opens should be timed and reported ([`observe`]).
pub fn pending() -> bool {
    PENDING.load(Ordering::Relaxed)
}

/// A pool thread's open on `mount` took `took`.
pub fn observe(mount: u64, took: Duration) {
    let mut guard = QUICK_OPENS.lock().unwrap_or_else(|e| e.into_inner());
    let quick = guard.get_or_insert_with(HashMap::new);
    let count = quick.entry(mount).or_insert(0);
    if *count < EARNED {
        *count = if took > SLOW { 0 } else { *count + 1 };
    }
    if quick.values().all(|&n| n >= EARNED) {
        PENDING.store(false, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mount_is_trusted_after_enough_quick_opens_in_a_row() {
        let (m, other) = (u64::MAX - 17, u64::MAX - 18);
        assert!(!trusted(m));
        assert!(pending());
        for _ in 0..EARNED - 1 {
            observe(m, Duration::from_micros(20));
        }
        observe(m, Duration::from_millis(300)); // a scanner's answer: start again
        for _ in 0..EARNED - 1 {
            observe(m, Duration::from_micros(20));
        }
        assert!(!trusted(m), "not yet: a slow open reset the count");
        observe(m, Duration::from_micros(20));
        assert!(trusted(m));
        observe(m, Duration::from_millis(300));
        assert!(trusted(m), "once trusted, the guard watches it");
        assert!(!trusted(other));
    }
}
