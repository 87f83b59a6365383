//! Lanes: a pool of its own for each mount whose calls wait on a server or a daemon
//! (NFS, SMB, FUSE, 9p, Ceph: `crate::locality`'s remote mounts), beside the
//! process-wide pool, whose CPU-sized thread count is right for copying from the page
//! cache and wrong for waiting on a network.
//!
//! * **Which lane.** Where a request's path leads is found on the calling thread
//!   without waiting (`locality::remote_of_path`: the cached lookup, else the
//!   directory where it stops; `remote_of_fd`); a file on a remote mount goes to that
//!   mount's lane, made on first use, a path whose lookup stops at a name the kernel
//!   cannot follow from memory (a cached symlink, or a directory on the way not cached
//!   on a local disk, which may be a symlink) to a lane of its own (`locality::UNRESOLVED`),
//!   everything else to the process-wide pool. Where no mount is remote, that is one look at the mount table.
//! * **How many in flight.** A lane starts with [`FIRST_THREADS`] workers and grows,
//!   as its requests queue behind busy workers (blocked on the server), to one worker
//!   per request in it (running or queued). All lanes together hold at most
//!   [`max_threads`] (64 by default, the usual `UV_THREADPOOL_SIZE=64` advice;
//!   `configure({ laneThreads })`; each keeps one past it; one lane takes half of what
//!   the others leave at most: `pool::budget`). So a slow
//!   mount gets many requests in flight, hung ones hold at most those threads, and
//!   local work never waits for a thread behind them. Once none of its workers has had
//!   work for [`crate::pool::LANE_IDLE_AFTER`] (1 s), a lane goes back to its first
//!   workers.
//! * **Within a lane**, the pool's deficit round robin by bytes, admission (the lanes
//!   together hold half of the process-wide limits, split evenly, so hung mounts cannot
//!   take every fd or byte) and parts: a
//!   big file is read with up to a lane's threads in flight: while its next part finds
//!   no free worker, the lane starts one more, so a lone 8 MiB read from a slow mount
//!   has a part in flight per chunk, as a burst of requests has a request per worker.
//! * Lanes live as long as the process; their threads are never joined, so a thread
//!   stuck on a hung mount does not hold up `process.exit()`.
//! * An fd's ordered requests ([`crate::jobs::write`]) stay in the lane of their fd's
//!   first request while the fd is on the same mount, whatever the mount table says
//!   meanwhile: one fd's writes, sync and close are in one pool's queue, in order; a
//!   number closed behind fairfs's back and reused elsewhere is routed anew.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::job::Job;
use crate::memory::lent::Lent;
use crate::pool::budget::ThreadBudget;
use crate::pool::{global, Pool, Ticket};
use crate::sys::Fd;

/// Workers a new lane starts with.
pub const FIRST_THREADS: usize = 4;
/// The most workers a lane grows to unless configured.
pub const DEFAULT_MAX_THREADS: usize = 64;

/// The threads every lane holds together, at most [`max_threads`].
fn lane_threads() -> &'static ThreadBudget {
    static BUDGET: std::sync::OnceLock<ThreadBudget> = std::sync::OnceLock::new();
    BUDGET.get_or_init(|| ThreadBudget::new(DEFAULT_MAX_THREADS))
}

/// A lane's pool.
struct Lane {
    pool: &'static Pool,
    /// Where its mount was when the lane was made: the kernel gives an unmounted id to
    /// the next mount, which must not inherit the old mount's lane (and its workers,
    /// perhaps still busy or stuck).
    point: Option<Vec<u8>>,
}

/// Where mount `mount` is now (`None` where that is not known).
fn mount_point_of(mount: u64) -> Option<Vec<u8>> {
    #[cfg(all(target_os = "linux", not(fairfs_portable)))]
    return crate::locality::mount_point(mount);
    #[cfg(not(all(target_os = "linux", not(fairfs_portable))))]
    {
        let _ = mount;
        None
    }
}

static LANES: Mutex<Option<HashMap<u64, Lane>>> = Mutex::new(None);
/// The lane of each fd with ordered requests, from its first until its close, with the
/// mount the fd was on then: an fd closed where fairfs did not see it (`closeSync`, a
/// FileHandle's close, a library's own) and its number reused shows another mount.
static FD_LANES: Mutex<Option<HashMap<Fd, FdLane>>> = Mutex::new(None);

#[derive(Clone, Copy)]
struct FdLane {
    mount: Option<u64>,
    lane: Option<u64>,
}

fn lanes() -> std::sync::MutexGuard<'static, Option<HashMap<u64, Lane>>> {
    LANES.lock().unwrap_or_else(|p| p.into_inner())
}

/// Every lane's pool made so far, taken out of the lock (a pool takes its own).
fn every_lane() -> Vec<&'static Pool> {
    lanes().iter().flat_map(|l| l.values().map(|lane| lane.pool)).collect()
}

/// The most workers every lane holds together (each keeps one past it).
pub fn max_threads() -> usize {
    lane_threads().cap()
}

/// Threads the lanes hold now, together.
pub fn threads_in_use() -> usize {
    lane_threads().in_use()
}

/// Sets the most workers the lanes hold together (1..=1024); lanes already bigger keep
/// theirs until they shrink.
pub fn set_max_threads(n: usize) {
    lane_threads().set_cap(n.clamp(1, 1024));
    for pool in every_lane() {
        pool.set_grow_for_parts_to(max_threads());
    }
}

/// The lane of the remote mount `path` is on; `None`: the process-wide pool.
pub fn of_path(path: &std::ffi::CStr) -> Option<u64> {
    #[cfg(all(target_os = "linux", not(fairfs_portable)))]
    return crate::locality::remote_of_path(path);
    #[cfg(not(all(target_os = "linux", not(fairfs_portable))))]
    {
        let _ = path;
        None
    }
}

/// The lane of a call on two paths (`copyFile`, `rename`): the first's if it has one,
/// else the second's, so that a call that may wait on either never waits in the
/// process-wide pool. (Two remote ends: the first's lane holds it.)
pub fn of_paths(first: &std::ffi::CStr, second: &std::ffi::CStr) -> Option<u64> {
    of_path(first).or_else(|| of_path(second))
}

/// The lane of the remote mount `fd`'s file is on; `None`: the process-wide pool.
pub fn of_fd(fd: Fd) -> Option<u64> {
    #[cfg(all(target_os = "linux", not(fairfs_portable)))]
    return crate::locality::remote_of_fd(fd);
    #[cfg(not(all(target_os = "linux", not(fairfs_portable))))]
    {
        let _ = fd;
        None
    }
}

/// The lane for `fd`'s ordered requests: the one its first such request took, until
/// [`forget_fd`] or until the fd is seen on another mount (closed behind fairfs's back
/// and its number reused).
pub fn of_ordered_fd(fd: Fd) -> Option<u64> {
    #[cfg(all(target_os = "linux", not(fairfs_portable)))]
    let (mount, lane) = match crate::locality::fd_mount(fd) {
        Some((mount, remote)) => (Some(mount), remote.then_some(mount)),
        None => (None, None),
    };
    #[cfg(not(all(target_os = "linux", not(fairfs_portable))))]
    let (mount, lane) = (None, of_fd(fd));
    let mut map = FD_LANES.lock().unwrap_or_else(|p| p.into_inner());
    let entry = map.get_or_insert_with(HashMap::new).entry(fd).or_insert(FdLane { mount, lane });
    if entry.mount != mount {
        *entry = FdLane { mount, lane };
    }
    entry.lane
}

/// `fd` is closed: its next life takes the lane its mount says.
pub fn forget_fd(fd: Fd) {
    if let Some(map) = FD_LANES.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
        map.remove(&fd);
    }
}

/// The pool of `lane` (made on first use), or the process-wide pool for `None`.
pub fn pool(lane: Option<u64>) -> &'static Pool {
    let Some(mount) = lane else { return global() };
    let point = mount_point_of(mount);
    let mut lanes = lanes();
    let lanes = lanes.get_or_insert_with(HashMap::new);
    // A lane made for an earlier mount with this id: the new mount gets a lane of its
    // own; the old one's workers finish what they hold, and all but one end.
    if lanes.get(&mount).is_some_and(|lane| point.is_some() && lane.point.is_some() && lane.point != point) {
        if let Some(old) = lanes.remove(&mount) {
            old.pool.retire();
        }
    }
    lanes.entry(mount).or_insert_with(|| {
        let pool = Pool::for_lane(mount, FIRST_THREADS, global().chunk_size(), lane_threads());
        pool.set_large_limit(Some(DEFAULT_MAX_THREADS.max(max_threads())));
        // A lone big read grows the lane by its parts, as a burst grows it by requests.
        pool.set_grow_for_parts_to(max_threads());
        // Lanes live as long as the process, and their threads are never joined.
        Lane { pool: Box::leak(Box::new(pool)), point: point.clone() }
    });
    let made = lanes.get(&mount).expect("just made").pool;
    share_admission(lanes);
    made
}

/// Lanes hold half of the process's descriptors and bytes at most, together: a hung
/// mount, or five, cannot take them all. Split evenly (at least one file and byte
/// each), again whenever a lane is made.
fn share_admission(lanes: &HashMap<u64, Lane>) {
    let limits = global().admission_limits();
    let n = lanes.len().max(1);
    let (open, bytes) = ((limits.max_open / 2 / n).max(1), (limits.max_bytes / 2 / n as u64).max(1));
    for lane in lanes.values() {
        if lane.pool.admission_limits().max_open != open || lane.pool.admission_limits().max_bytes != bytes {
            lane.pool.set_admission_limits(Some(open), Some(bytes));
        }
    }
}

/// Submits `jobs` to `lane`'s pool; a lane whose requests queue behind busy workers
/// grows by the number queued, up to [`max_threads`].
pub fn submit_many(lane: Option<u64>, jobs: Vec<Box<dyn Job>>) -> Vec<Ticket> {
    let pool = pool(lane);
    let tickets = pool.submit_many(jobs);
    if lane.is_some() {
        // Under the lanes' lock, so that two submits do not both grow from one count.
        let _lanes = lanes();
        let stats = pool.stats();
        // A worker per request in the lane (running or queued), no more: the workers
        // it has and those starting already count.
        let threads = pool.target_threads();
        let want = (stats.active + stats.queued).min(max_threads());
        if stats.queued > 0 && want > threads {
            pool.configure(Some(want), None);
        }
    }
    tickets
}

/// [`submit_many`] owing the wake-up to [`nudge`] where that is the process-wide
/// pool's; a lane wakes its workers at once (its requests wait on a server anyway).
pub fn submit_many_quietly(lane: Option<u64>, jobs: Vec<Box<dyn Job>>) -> Vec<Ticket> {
    match lane {
        None => global().submit_many_quietly(jobs),
        Some(_) => submit_many(lane, jobs),
    }
}

/// Wakes the process-wide pool for what quiet submits queued.
pub fn nudge() {
    global().nudge();
}

/// Cancels `tickets`, each in its own lane's pool.
pub fn cancel_many(tickets: &[Ticket]) {
    let mut by_lane: HashMap<Option<u64>, Vec<Ticket>> = HashMap::new();
    for ticket in tickets {
        by_lane.entry(ticket.lane()).or_default().push(ticket.clone());
    }
    for (lane, tickets) in by_lane {
        pool(lane).cancel_many(&tickets);
    }
}

/// [`Pool::lend`] in the ticket's lane.
pub fn lend(ticket: &Ticket, memory: Option<Lent>) -> bool {
    pool(ticket.lane()).lend(ticket, memory)
}

/// Forgets keyed flow `key` in every pool.
pub fn end_flow(key: u64) {
    global().end_flow(key);
    for pool in every_lane() {
        pool.end_flow(key);
    }
}

/// Sets the chunk size of every lane (new lanes take the process-wide pool's).
pub fn set_chunk_size(chunk_size: usize) {
    for pool in every_lane() {
        pool.configure(None, Some(chunk_size));
    }
}

/// A lane as `stats()` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaneStats {
    /// The mount's id, as `/proc/self/mountinfo` numbers it, and where it is mounted
    /// (empty where the table does not have it now).
    pub mount: u64,
    pub mount_point: Vec<u8>,
    pub threads: usize,
    /// Requests waiting, and being run (most likely blocked on the mount).
    pub queued: usize,
    pub active: usize,
    pub completed: u64,
}

/// Every lane made so far.
pub fn stats() -> Vec<LaneStats> {
    let pools: Vec<(u64, &'static Pool)> =
        lanes().iter().flat_map(|l| l.iter().map(|(m, lane)| (*m, lane.pool))).collect();
    let mut out: Vec<LaneStats> = pools
        .into_iter()
        .map(|(mount, pool)| {
            let s = pool.stats();
            #[cfg(all(target_os = "linux", not(fairfs_portable)))]
            let mount_point = crate::locality::mount_point(mount).unwrap_or_default();
            #[cfg(not(all(target_os = "linux", not(fairfs_portable))))]
            let mount_point = Vec::new();
            LaneStats {
                mount,
                mount_point,
                threads: s.threads,
                queued: s.queued,
                active: s.active,
                completed: s.completed,
            }
        })
        .collect();
    out.sort_by_key(|l| l.mount);
    out
}

#[cfg(all(test, not(fairfs_loom)))]
mod tests {
    use super::*;
    use crate::job::Step;

    /// A job that waits until `release` says so, as a request blocked on a server.
    struct Blocked(std::sync::Arc<(Mutex<bool>, std::sync::Condvar)>, std::sync::mpsc::Sender<()>);
    impl Job for Blocked {
        fn step(&mut self) -> Step {
            let (lock, cv) = &*self.0;
            let mut go = lock.lock().unwrap();
            while !*go {
                go = cv.wait(go).unwrap();
            }
            Step { bytes: 0, done: true }
        }
        fn complete(self: Box<Self>) {
            let _ = self.1.send(());
        }
        fn cancel(self: Box<Self>) {
            let _ = self.1.send(());
        }
    }

    /// The lanes share one budget of threads: their tests take turns.
    static TURN: Mutex<()> = Mutex::new(());

    /// A test's turn, once the lanes of the tests before it are back to their first
    /// workers (a lane grown for a burst shrinks a second after it).
    fn turn() -> std::sync::MutexGuard<'static, ()> {
        let turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
        let deadline = std::time::Instant::now() + crate::pool::LANE_IDLE_AFTER * 10;
        while threads_in_use() > FIRST_THREADS * stats().len() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        turn
    }

    /// `n` blocked jobs on each of `mounts`, released once `check` has looked.
    fn blocked_on(mounts: &[u64], n: usize, check: impl FnOnce()) {
        let gate = std::sync::Arc::new((Mutex::new(false), std::sync::Condvar::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        for &mount in mounts {
            let jobs: Vec<Box<dyn Job>> =
                (0..n).map(|_| Box::new(Blocked(gate.clone(), tx.clone())) as Box<dyn Job>).collect();
            submit_many(Some(mount), jobs);
        }
        check();
        *gate.0.lock().unwrap() = true;
        gate.1.notify_all();
        for _ in 0..n * mounts.len() {
            rx.recv().unwrap();
        }
    }

    #[test]
    fn five_hung_lanes_hold_the_cap_together_and_a_lane_grows_by_no_more_than_its_requests() {
        let _turn = turn();
        const MOUNTS: [u64; 5] = [u64::MAX - 20, u64::MAX - 21, u64::MAX - 22, u64::MAX - 23, u64::MAX - 24];
        blocked_on(&MOUNTS, 100, || {
            let ours: usize = stats().iter().filter(|l| MOUNTS.contains(&l.mount)).map(|l| l.threads).sum();
            // Each lane keeps one worker past the cap.
            assert!(threads_in_use() <= max_threads() + stats().len(), "{} threads in lanes", threads_in_use());
            assert!(ours > FIRST_THREADS * MOUNTS.len(), "grown while their requests wait ({ours})");
            // The first hung lane took half the cap at most, so the next still grew.
            let second = stats().into_iter().find(|l| l.mount == MOUNTS[1]).unwrap();
            assert!(second.threads > FIRST_THREADS, "a lane hung after another grows too ({})", second.threads);
        });
        // 16 requests blocked on a fresh lane: 16 workers, not more.
        const ONE: u64 = u64::MAX - 25;
        blocked_on(&[ONE], 16, || {
            let lane = stats().into_iter().find(|l| l.mount == ONE).unwrap();
            assert!(lane.threads <= 16, "{} workers for 16 requests", lane.threads);
        });
    }

    #[test]
    fn a_lane_shrinks_back_to_its_first_workers_once_idle_and_grows_again() {
        let _turn = turn();
        const MOUNT: u64 = u64::MAX - 8;
        let run_blocked = |n: usize| {
            let gate = std::sync::Arc::new((Mutex::new(false), std::sync::Condvar::new()));
            let (tx, rx) = std::sync::mpsc::channel();
            let jobs: Vec<Box<dyn Job>> =
                (0..n).map(|_| Box::new(Blocked(gate.clone(), tx.clone())) as Box<dyn Job>).collect();
            submit_many(Some(MOUNT), jobs);
            let grown = pool(Some(MOUNT)).target_threads();
            *gate.0.lock().unwrap() = true;
            gate.1.notify_all();
            for _ in 0..n {
                rx.recv().unwrap();
            }
            grown
        };
        let grown = run_blocked(20);
        assert!(grown > FIRST_THREADS && grown <= FIRST_THREADS + 20, "20 queued: grown by those waiting ({grown})");
        let lane = pool(Some(MOUNT));
        let deadline = std::time::Instant::now() + crate::pool::LANE_IDLE_AFTER * 5;
        while lane.target_threads() > FIRST_THREADS && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert_eq!(lane.target_threads(), FIRST_THREADS, "idle for a second: back to its first workers");
        let again = run_blocked(20);
        assert!(again > FIRST_THREADS, "grows again from there ({again})");
    }

    #[test]
    fn a_lane_grows_while_its_requests_wait_up_to_its_share_and_tickets_know_their_lane() {
        let _turn = turn();
        const MOUNT: u64 = u64::MAX - 7; // no real mount has this id
        let gate = std::sync::Arc::new((Mutex::new(false), std::sync::Condvar::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let jobs: Vec<Box<dyn Job>> =
            (0..100).map(|_| Box::new(Blocked(gate.clone(), tx.clone())) as Box<dyn Job>).collect();
        let tickets = submit_many(Some(MOUNT), jobs);
        assert!(tickets.iter().all(|t| t.lane() == Some(MOUNT)));
        let lane = stats().into_iter().find(|l| l.mount == MOUNT).unwrap();
        assert!(lane.threads > FIRST_THREADS, "100 queued: grown at once");
        let others = threads_in_use() - lane.threads;
        assert!(
            lane.threads <= (max_threads() - others) / 2,
            "{} threads: half of what the other lanes leave at most",
            lane.threads
        );
        assert!(lane.threads >= max_threads() / 4, "{} threads: grown to its share", lane.threads);
        // The process-wide pool is untouched by the lane's blocked requests.
        assert_eq!(crate::pool::global().stats().threads, crate::pool::DEFAULT_THREADS);
        *gate.0.lock().unwrap() = true;
        gate.1.notify_all();
        for _ in 0..100 {
            rx.recv().unwrap();
        }
        let lane = stats().into_iter().find(|l| l.mount == MOUNT).unwrap();
        assert_eq!((lane.queued, lane.completed), (0, 100));
    }
}
