//! Which of this process's threads are the host's thread pool (libuv's, in Node):
//! the threads zlib, crypto, `dns.lookup` and node:fs run on. Their demand for the
//! CPU is the neighbour the contention governor ([`crate::policy::contention`]) must see.
//! And which are the JS runtime's own helpers (V8's platform workers), which it must
//! not: they are busy with our own results' garbage, and backing off does not quiet
//! them (on Node 22 under CI load they kept the big-read limit at one for 20–30 s).
//!
//! **The runtime's helpers.** Node 24 names them (`V8Worker`, `DelayedTaskSche`,
//! `SignalInspector`); Node 20 and 22 name them like the process. Node starts them all
//! before any JS runs, so the binding notes every thread alive when it first loads,
//! but the main thread and its own ([`note_runtime_threads`]): a thread started later
//! (a worker_thread, a library's) is a neighbour. One started before fairfs loads is
//! taken for a helper, the price of telling them apart without names.
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

/// Names Node gives its runtime's own threads (Node 24 names all of them; earlier
/// lines only the delayed-task scheduler). `comm` holds at most 15 bytes.
const RUNTIME_THREAD_NAMES: [&[u8]; 3] = [b"V8Worker", b"DelayedTaskSche", b"SignalInspector"];

/// Threads alive when the binding first loaded, but the main thread and the loading
/// one ([`note_runtime_threads`]); `None` until then.
static RUNTIME: Mutex<Option<Vec<i32>>> = Mutex::new(None);

/// Notes this process's threads as the runtime's helpers, once per process: call it
/// when the binding first loads, on the JS thread loading it, before it starts threads
/// of its own. The main thread and the calling one are left out.
pub fn note_runtime_threads() {
    let mut runtime = RUNTIME.lock().unwrap_or_else(|p| p.into_inner());
    if runtime.is_some() {
        return;
    }
    *runtime = Some(threads_but_main_and_mine());
}

/// This process's threads but the main thread and the calling one.
fn threads_but_main_and_mine() -> Vec<i32> {
    let (main, me) = (std::process::id() as i32, crate::sys::thread_id());
    crate::sys::thread_ids().into_iter().filter(|&tid| tid != main && Some(tid) != me).collect()
}

/// What the thread `tid`, named `name`, is to the governor, given the host pool's
/// threads the census found and the runtime's noted at load.
pub fn classify(tid: i32, name: &[u8], host_pool: &[i32], runtime: &[i32]) -> crate::sys::ThreadKind {
    use crate::sys::ThreadKind;
    if is_host_pool_thread(tid, name, host_pool) {
        ThreadKind::HostPool
    } else if runtime.contains(&tid) || RUNTIME_THREAD_NAMES.iter().any(|n| name.starts_with(n)) {
        ThreadKind::Runtime
    } else {
        ThreadKind::Other
    }
}

/// How many of this process's threads are the host pool's, named or found (0 where
/// the OS does not tell).
pub fn count() -> usize {
    let known = known();
    crate::sys::count_threads(|tid, name| is_host_pool_thread(tid, name, &known))
}

/// Who uses the CPU now ([`crate::sys::cpu_snapshot`]), with the host pool's threads
/// told apart by name or by the census, and the runtime's by name or as noted at load;
/// `None` where the OS does not tell.
pub(crate) fn cpu_snapshot() -> Option<crate::sys::CpuSnapshot> {
    let known = known();
    let runtime = RUNTIME.lock().unwrap_or_else(|p| p.into_inner()).clone().unwrap_or_default();
    crate::sys::cpu_snapshot(|tid, name| classify(tid, name, &known, &runtime))
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

    #[test]
    fn the_runtime_s_helpers_are_noted_at_load_or_known_by_name() {
        use crate::sys::ThreadKind;
        // A thread alive at load (this one, parked) is a helper; the loading thread and
        // one started afterwards are not. (The process-wide note is left alone: other
        // tests' threads must stay neighbours.)
        let (parked_tx, parked_rx) = std::sync::mpsc::channel::<()>();
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let parked = std::thread::spawn(move || {
            tid_tx.send(crate::sys::thread_id().unwrap()).unwrap();
            parked_rx.recv().ok();
        });
        let alive_at_load = tid_rx.recv().unwrap();
        let runtime = threads_but_main_and_mine();
        let later = std::thread::spawn(|| crate::sys::thread_id().unwrap()).join().unwrap();
        let me = crate::sys::thread_id().unwrap();
        assert_eq!(classify(alive_at_load, b"node", &[], &runtime), ThreadKind::Runtime);
        assert_eq!(classify(me, b"node", &[], &runtime), ThreadKind::Other, "the loading thread");
        assert_eq!(classify(std::process::id() as i32, b"node", &[], &runtime), ThreadKind::Other, "the main thread");
        assert_eq!(classify(later, b"node", &[], &runtime), ThreadKind::Other, "started after load");
        assert_eq!(classify(later, b"V8Worker", &[], &runtime), ThreadKind::Runtime, "Node 24 names them");
        assert_eq!(classify(alive_at_load, b"node", &[alive_at_load], &runtime), ThreadKind::HostPool);
        assert_eq!(classify(later, b"libuv-worker", &[], &runtime), ThreadKind::HostPool);
        parked_tx.send(()).unwrap();
        parked.join().unwrap();
    }
}
