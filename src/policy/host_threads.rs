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
//! job notes the thread it runs on, then waits at a barrier until `expected` distinct
//! threads have been noted (or [`CENSUS_TIMEOUT`] passed). A job held at the barrier
//! keeps its thread, so the jobs cannot share one while the pool has threads free.
//! A thread busy with other work (a long `pbkdf2`, a slow read) or not scheduled within
//! the timeout misses the round: the jobs that timed out take the remaining ones on
//! threads already noted, and the census stays open. The JS side then runs it again,
//! a bounded number of times (lib/native.js), and every round adds the threads it
//! saw, until all `expected` are known. libuv never stops its threads, so once
//! complete the census lasts for the process.
//!
//! A libuv thread the census has not found is not the host pool's to the governor: it
//! counts as a neighbour (CPU only, against a threshold twelve times higher) if it
//! started after the binding loaded, or as one of the runtime's helpers (not at all) if
//! before. Work that lands on it then holds big reads back less than it should.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// The name libuv 1.50+ gives its pool's threads.
pub const LIBUV_THREAD_NAME: &[u8] = b"libuv-worker";

/// The longest a census job waits for the others: a pool busy with work of its own
/// (or smaller than expected) must not be held longer than this.
pub const CENSUS_TIMEOUT: Duration = Duration::from_millis(20);

/// A census of the host pool's threads: the threads noted so far, over every round.
pub struct Census {
    state: Mutex<CensusState>,
    /// Wakes the jobs held at the barrier once the census is complete.
    completed: Condvar,
}

struct CensusState {
    /// Thread ids (Linux `gettid`) of the host pool's threads found so far.
    threads: Vec<i32>,
    /// Every expected thread has been noted.
    complete: bool,
}

impl Census {
    pub const fn new() -> Census {
        Census { state: Mutex::new(CensusState { threads: Vec::new(), complete: false }), completed: Condvar::new() }
    }

    /// One job, on the thread `tid`, of a census expecting `expected` threads: notes
    /// `tid`, then holds its thread until `expected` distinct threads are known or
    /// `timeout` passed, so that the round's other jobs land on other threads. Returns
    /// whether the census is complete; at once if it already was.
    ///
    /// Completion counts threads, not jobs: a job that lands on a thread already noted
    /// (its first job timed out while another thread was busy) adds nothing.
    pub fn arrive(&self, tid: i32, expected: usize, timeout: Duration) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.complete {
            return true;
        }
        if !state.threads.contains(&tid) {
            state.threads.push(tid);
        }
        if state.threads.len() >= expected {
            state.complete = true;
            self.completed.notify_all();
            return true;
        }
        let deadline = Instant::now() + timeout;
        while !state.complete {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else { break };
            state = self.completed.wait_timeout(state, left).unwrap_or_else(|p| p.into_inner()).0;
        }
        // Timed out, the census stays open: a later round may find the threads this
        // one missed.
        state.complete
    }

    /// The threads noted so far.
    pub fn known(&self) -> Vec<i32> {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).threads.clone()
    }
}

impl Default for Census {
    fn default() -> Census {
        Census::new()
    }
}

/// This process's census of the host pool.
static CENSUS: Census = Census::new();

/// Run by each of `expected` census jobs on the host's pool: notes the calling thread
/// as one of the pool's and holds it at most [`CENSUS_TIMEOUT`] for the others
/// ([`Census::arrive`]). Returns whether the census is complete: at once, once every
/// expected thread has been noted.
pub fn census(expected: usize) -> bool {
    let Some(me) = crate::sys::thread_id() else { return false };
    CENSUS.arrive(me, expected, CENSUS_TIMEOUT)
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
    CENSUS.known()
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
    fn a_census_that_misses_busy_threads_stays_open_until_a_later_round_finds_them() {
        // Four jobs on a pool of four whose threads 3 and 4 are busy: the jobs on 1 and 2
        // time out, and the other two jobs then run on 1 and 2 as well. Four jobs
        // arrived, but two threads are known: the census is not complete.
        let census = Census::new();
        let short = Duration::from_millis(1);
        for tid in [1, 2, 1, 2] {
            assert!(!census.arrive(tid, 4, short), "thread {tid}");
        }
        assert_eq!(census.known(), [1, 2]);
        // A later round, with 3 and 4 free: it adds them, and completes at the fourth
        // distinct thread without waiting.
        assert!(!census.arrive(3, 4, short));
        let t0 = Instant::now();
        assert!(census.arrive(4, 4, Duration::from_secs(60)));
        assert!(t0.elapsed() < Duration::from_secs(1));
        assert_eq!(census.known(), [1, 2, 3, 4]);
        // Once complete, a job returns at once and notes nothing.
        assert!(census.arrive(5, 4, Duration::from_secs(60)));
        assert_eq!(census.known().len(), 4);
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
