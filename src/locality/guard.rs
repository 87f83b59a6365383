//! The guard for what no mount table can see: an on-access scanner answering
//! fanotify permission events, IMA measuring a file on open, a journal stall, a local
//! file system on a network block device. A calling-thread call on a mount that takes
//! longer than [`SLOW`] turns the fast paths off for that mount, for one second after
//! the first such call and twice as long after each further one (up to a minute); a
//! mount quick for [`FORGET_AFTER`] since its last slow call is forgotten. A slow
//! system so costs one slow call per pause, at most one a minute once it has shown it
//! stays slow (a scanner whose verdicts are quick only for files it has seen), not one
//! per request.
//!
//! Only a call that waited counts: one during which the thread gave up the CPU
//! ([`crate::sys::voluntary_switches`]). A call that took long because the thread was
//! preempted (two cores and four workers copying big files) says nothing about the
//! mount, and counting it turned the fast paths off for longer and longer on a busy
//! machine: ten looping 256 MiB reads left more than half of the small reads beside
//! them to the pool.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Longer than any call answered from memory takes, even on a busy machine; far
/// shorter than a round trip to a daemon or a disk under load.
pub const SLOW: Duration = Duration::from_millis(1);
const FIRST_PAUSE: Duration = Duration::from_secs(1);
const LONGEST_PAUSE: Duration = Duration::from_secs(60);
const FORGET_AFTER: Duration = Duration::from_secs(600);

/// Calling-thread calls found slow, process-wide (`stats().fastPathSlowCalls`).
pub static SLOW_CALLS: AtomicU64 = AtomicU64::new(0);

/// The mounts found slow, each with its count of slow calls in a row and the end of
/// its pause. Rarely anything: [`WATCHED`] lets the fast paths skip the lock then.
static PAUSED: Mutex<Option<HashMap<u64, Pause>>> = Mutex::new(None);
static WATCHED: AtomicUsize = AtomicUsize::new(0);

struct Pause {
    strikes: u32,
    until: Instant,
    last_slow: Instant,
}

/// Whether the fast paths may use `mount` now.
pub fn allows(mount: u64) -> bool {
    if WATCHED.load(Ordering::Relaxed) == 0 {
        return true;
    }
    let paused = PAUSED.lock().unwrap_or_else(|e| e.into_inner());
    paused.as_ref().and_then(|p| p.get(&mount)).map_or(true, |p| p.until <= Instant::now())
}

/// Runs `calls` (calling-thread calls on a file of `mount`) and notes how long they took,
/// if they waited (a thread that cannot tell is taken to have waited).
pub fn timed<T>(mount: u64, calls: impl FnOnce() -> T) -> T {
    let watch = Stopwatch::start();
    let result = calls();
    watch.stop(mount);
    result
}

/// [`timed`] for calls made before their mount is known (the `statx` that names it).
pub struct Stopwatch {
    switches: Option<libc::c_long>,
    start: Instant,
}

impl Stopwatch {
    pub fn start() -> Self {
        Stopwatch { switches: crate::sys::voluntary_switches(), start: Instant::now() }
    }

    /// The calls since the start were on `mount`: noted as [`timed`] notes them.
    pub fn stop(self, mount: u64) {
        let mut took = self.start.elapsed();
        if took > SLOW && self.switches.is_some() && crate::sys::voluntary_switches() == self.switches {
            took = SLOW; // preempted, not waiting: quick as far as the mount is concerned
        }
        note(mount, took, Instant::now());
    }
}

fn note(mount: u64, took: Duration, now: Instant) {
    if took <= SLOW && WATCHED.load(Ordering::Relaxed) == 0 {
        return;
    }
    let mut guard = PAUSED.lock().unwrap_or_else(|e| e.into_inner());
    let paused = guard.get_or_insert_with(HashMap::new);
    if took > SLOW {
        SLOW_CALLS.fetch_add(1, Ordering::Relaxed);
        let pause = paused.entry(mount).or_insert(Pause { strikes: 0, until: now, last_slow: now });
        pause.strikes += 1;
        pause.last_slow = now;
        let length = FIRST_PAUSE.saturating_mul(1 << (pause.strikes - 1).min(6)).min(LONGEST_PAUSE);
        pause.until = now + length;
    } else if paused.get(&mount).is_some_and(|p| now.duration_since(p.last_slow) >= FORGET_AFTER) {
        paused.remove(&mount);
    }
    WATCHED.store(paused.len(), Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slow_call_pauses_its_mount_longer_each_time_until_it_has_long_been_quick() {
        // Mount ids far from any real one, as other tests share these statics.
        let (m, other) = (u64::MAX - 7, u64::MAX - 8);
        let now = Instant::now();
        let before = SLOW_CALLS.load(Ordering::Relaxed);
        note(m, Duration::from_micros(50), now);
        assert!(allows(m), "quick calls change nothing");
        note(m, Duration::from_millis(30), now);
        assert!(!allows(m), "paused after a slow call");
        assert!(allows(other), "only that mount");
        assert!(SLOW_CALLS.load(Ordering::Relaxed) > before);
        let until = |m| PAUSED.lock().unwrap().as_ref().unwrap()[&m].until;
        assert_eq!(until(m), now + FIRST_PAUSE);
        note(m, Duration::from_millis(30), now);
        assert_eq!(until(m), now + 2 * FIRST_PAUSE, "twice as long after a second slow call");
        for _ in 0..10 {
            note(m, Duration::from_millis(30), now);
        }
        assert_eq!(until(m), now + LONGEST_PAUSE, "capped");
        // Quick calls keep its record (the next slow one pauses it for a minute again)
        // until it has been quick for FORGET_AFTER.
        note(m, Duration::from_micros(50), now);
        assert!(!allows(m));
        note(m, Duration::from_micros(50), now + LONGEST_PAUSE);
        assert!(PAUSED.lock().unwrap().as_ref().unwrap().get(&m).is_some());
        note(m, Duration::from_micros(50), now + FORGET_AFTER);
        assert!(PAUSED.lock().unwrap().as_ref().unwrap().get(&m).is_none());
        assert!(allows(m));
    }

    #[test]
    fn only_a_call_that_waited_counts() {
        let (busy, asleep) = (u64::MAX - 9, u64::MAX - 10);
        let long = SLOW * 5;
        timed(busy, || {
            let start = Instant::now();
            while start.elapsed() < long {
                std::hint::spin_loop();
            }
        });
        assert!(allows(busy), "a call long on the CPU (or preempted) says nothing of its mount");
        timed(asleep, || std::thread::sleep(long));
        assert!(!allows(asleep), "a call that waited pauses its mount");
    }
}
