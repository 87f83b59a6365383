//! Which of this process's threads are the host's thread pool (libuv's, in Node):
//! the threads zlib, crypto, `dns.lookup` and node:fs run on. Their demand for the
//! CPU is the neighbour the contention governor ([`crate::policy::contention`]) must see.
//!
//! libuv 1.50+ names its threads `libuv-worker`, so on Node 22 and later the name
//! tells. Older libuv (Node 20) leaves every thread named like the process, and so do
//! V8's helpers, which are busy with our own results' garbage and must not count. For
//! those, the binding holds a **census**: it queues one job per libuv thread, and each
//! job notes the thread it runs on, then waits at a barrier until every job has
//! arrived (or [`CENSUS_TIMEOUT`] passed). A job held at the barrier keeps its thread,
//! so the jobs cannot share one, and `expected` jobs land on `expected` distinct threads
//! when the pool has that many free. libuv never stops its threads, so one census per
//! process lasts.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// The name libuv 1.50+ gives its pool's threads.
pub const LIBUV_THREAD_NAME: &[u8] = b"libuv-worker";

/// The longest a census job waits for the others: a pool busy with work of its own
/// (or smaller than expected) must not be held longer than this.
pub const CENSUS_TIMEOUT: Duration = Duration::from_millis(20);

/// Threads found by the census, and the jobs that arrived at its barrier.
struct Census {
    /// Thread ids (Linux `gettid`) of the host pool's threads found so far.
    threads: Vec<i32>,
    /// Jobs that have arrived at the barrier of the census under way.
    arrived: usize,
    /// The census ended: every expected job arrived once.
    complete: bool,
}

static CENSUS: Mutex<Census> = Mutex::new(Census { threads: Vec::new(), arrived: 0, complete: false });
static ARRIVED: Condvar = Condvar::new();

/// Run by each of `expected` census jobs on the host's pool: notes the calling thread
/// as one of the pool's, then waits until `expected` jobs have arrived or
/// [`CENSUS_TIMEOUT`] passed. Returns whether the census is complete. Returns at once
/// once a census completed (libuv's threads live as long as the process).
pub fn census(expected: usize) -> bool {
    let Some(me) = crate::sys::thread_id() else { return false };
    let mut census = CENSUS.lock().unwrap_or_else(|p| p.into_inner());
    if census.complete {
        return true;
    }
    if !census.threads.contains(&me) {
        census.threads.push(me);
    }
    census.arrived += 1;
    if census.arrived >= expected {
        census.complete = true;
        ARRIVED.notify_all();
        return true;
    }
    let deadline = Instant::now() + CENSUS_TIMEOUT;
    while !census.complete {
        let Some(left) = deadline.checked_duration_since(Instant::now()) else { break };
        census = ARRIVED.wait_timeout(census, left).unwrap_or_else(|p| p.into_inner()).0;
    }
    // Timed out, the census stays open: a job held up behind other work may still
    // arrive and be noted.
    census.complete
}

/// Whether the thread `tid`, named `name`, is one of the host pool's, given the
/// threads the census found ([`known`]).
pub fn is_host_pool_thread(tid: i32, name: &[u8], known: &[i32]) -> bool {
    name.starts_with(LIBUV_THREAD_NAME) || known.contains(&tid)
}

/// How many of this process's threads are the host pool's, named or found (0 where
/// the OS does not tell).
pub fn count() -> usize {
    let known = known();
    crate::sys::count_threads(|tid, name| is_host_pool_thread(tid, name, &known))
}

/// Who uses the CPU now ([`crate::sys::cpu_snapshot`]), with the host pool's threads
/// told apart by name or by the census; `None` where the OS does not tell.
pub(crate) fn cpu_snapshot() -> Option<crate::sys::CpuSnapshot> {
    let known = known();
    crate::sys::cpu_snapshot(|tid, name| is_host_pool_thread(tid, name, &known))
}

/// The host pool's threads the census found.
pub fn known() -> Vec<i32> {
    CENSUS.lock().unwrap_or_else(|p| p.into_inner()).threads.clone()
}

#[cfg(all(test, target_os = "linux", not(fairfs_portable)))]
mod tests {
    use super::*;

    #[test]
    fn a_census_finds_one_thread_per_job_and_lasts() {
        // Four "pool threads" arrive one after another: each waits at the barrier for
        // the rest, so all four are noted, and none returns before the last arrives.
        let threads: Vec<_> = (0..4)
            .map(|i| {
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(2 * i));
                    (census(4), crate::sys::thread_id().unwrap())
                })
            })
            .collect();
        let found: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert!(found.iter().all(|(complete, _)| *complete), "{found:?}");
        let known = known();
        for (_, tid) in &found {
            assert!(is_host_pool_thread(*tid, b"node", &known), "{tid} was noted");
        }
        let me = crate::sys::thread_id().unwrap();
        assert!(!is_host_pool_thread(me, b"node", &known), "the test's own thread ran no job");
        assert!(is_host_pool_thread(me, b"libuv-worker\n", &[]), "libuv 1.50+ names them");
        // A later census (another worker_thread loading the binding) returns at once.
        let t0 = Instant::now();
        assert!(census(64));
        assert!(t0.elapsed() < CENSUS_TIMEOUT);
        assert_eq!(super::known().len(), 4);
    }
}
