//! The pool's unit tests, with fake jobs: round robin, cancellation, resizing,
//! shutdown, split jobs, the big-file limit and admission waits.

use super::*;
use crate::job::{Piece, Step, Wait, Waits};
use crate::loom::thread;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A job that takes `steps` steps of `bytes` each and reports what happened to it.
struct FakeJob {
    name: &'static str,
    steps: usize,
    bytes: usize,
    /// Blocks each step until a message arrives, when set.
    gate: Option<mpsc::Receiver<()>>,
    log: mpsc::Sender<(&'static str, &'static str)>,
}

impl Job for FakeJob {
    fn step(&mut self) -> Step {
        if let Some(gate) = &self.gate {
            let _ = gate.recv();
        }
        self.log.send((self.name, "step")).unwrap();
        self.steps -= 1;
        Step { bytes: self.bytes, done: self.steps == 0 }
    }
    fn complete(self: Box<Self>) {
        self.log.send((self.name, "complete")).unwrap();
    }
    fn cancel(self: Box<Self>) {
        self.log.send((self.name, "cancel")).unwrap();
    }
}

fn job(name: &'static str, steps: usize, log: &mpsc::Sender<(&'static str, &'static str)>) -> Box<FakeJob> {
    Box::new(FakeJob { name, steps, bytes: 100, gate: None, log: log.clone() })
}

fn recv(rx: &mpsc::Receiver<(&'static str, &'static str)>) -> (&'static str, &'static str) {
    rx.recv_timeout(Duration::from_secs(10)).expect("pool made no progress")
}

#[test]
fn one_worker_serves_requests_round_robin() {
    let pool = Pool::new(1, 100);
    let (tx, rx) = mpsc::channel();
    // Hold the only worker on a gated job while the others queue up.
    let (open, gate) = mpsc::channel();
    pool.submit(Box::new(FakeJob { name: "gate", steps: 1, bytes: 1, gate: Some(gate), log: tx.clone() }));
    for name in ["a", "b", "c"] {
        pool.submit(job(name, 2, &tx));
    }
    open.send(()).unwrap();
    let events: Vec<_> = (0..11).map(|_| recv(&rx)).collect();
    let steps: Vec<_> = events.iter().filter(|e| e.1 == "step").map(|e| e.0).collect();
    assert_eq!(steps, ["gate", "a", "b", "c", "a", "b", "c"]);
    assert_eq!(events.iter().filter(|e| e.1 == "complete").count(), 4);
    let stats = pool.stats();
    assert_eq!((stats.completed, stats.chunks_read, stats.bytes_read), (4, 7, 601));
}

/// A one-step job of a keyed flow, like a stream's block.
struct Block {
    name: &'static str,
    key: u64,
    log: mpsc::Sender<(&'static str, &'static str)>,
}

impl Job for Block {
    fn step(&mut self) -> Step {
        self.log.send((self.name, "step")).unwrap();
        Step { bytes: 100, done: true }
    }
    fn flow(&self) -> Option<u64> {
        Some(self.key)
    }
    fn complete(self: Box<Self>) {}
    fn cancel(self: Box<Self>) {
        self.log.send((self.name, "cancel")).unwrap();
    }
}

#[test]
fn blocks_of_one_keyed_flow_share_one_turn() {
    let pool = Pool::new(1, 100);
    let (tx, rx) = mpsc::channel();
    let (open, gate) = mpsc::channel();
    pool.submit(Box::new(FakeJob { name: "gate", steps: 1, bytes: 1, gate: Some(gate), log: tx.clone() }));
    let started = Instant::now();
    while pool.stats().active == 0 {
        assert!(started.elapsed() < Duration::from_secs(10), "the gate job never started");
        thread::yield_now();
    }
    pool.submit(job("big", 6, &tx));
    // A stream's six blocks in flight at once: as six requests they would all
    // go before big's second chunk; as one flow they take turns with it.
    let tickets: Vec<_> =
        (0..6).map(|_| pool.submit(Box::new(Block { name: "s", key: 42, log: tx.clone() }))).collect();
    assert_eq!(pool.stats().queued, 7);
    open.send(()).unwrap();
    let steps: Vec<_> = (0..15).map(|_| recv(&rx)).filter(|e| e.1 == "step" && e.0 != "gate").map(|e| e.0).collect();
    assert_eq!(steps, ["big", "s", "big", "s", "big", "s", "big", "s", "big", "s", "big", "s"]);
    assert!(!pool.cancel(&tickets[0]), "done already");
    assert_eq!(pool.stats().stream_flows, 1, "remembered until the stream ends");
    pool.end_flow(42);
    // Forgotten once its last block's turn has ended (the worker may still be
    // on its way back from that block).
    let ended = Instant::now();
    while pool.stats().stream_flows > 0 {
        assert!(ended.elapsed() < Duration::from_secs(10), "the flow is never forgotten");
        thread::yield_now();
    }
}

/// A [`FakeJob`] in keyed flow `.1`, like a stream's block.
struct KeyedFake(FakeJob, u64);

impl Job for KeyedFake {
    fn step(&mut self) -> Step {
        self.0.step()
    }
    fn flow(&self) -> Option<u64> {
        Some(self.1)
    }
    fn complete(self: Box<Self>) {
        Box::new(self.0).complete()
    }
    fn cancel(self: Box<Self>) {
        Box::new(self.0).cancel()
    }
}

#[test]
fn a_free_worker_starts_a_streams_next_block_while_its_first_is_read() {
    let pool = Pool::new(2, 100);
    let (tx, rx) = mpsc::channel();
    let (open, gate) = mpsc::channel();
    let first = FakeJob { name: "first", steps: 1, bytes: 100, gate: Some(gate), log: tx.clone() };
    pool.submit(Box::new(KeyedFake(first, 5)));
    let second = FakeJob { name: "second", steps: 2, bytes: 100, gate: None, log: tx.clone() };
    pool.submit(Box::new(KeyedFake(second, 5)));
    // The first block holds one worker; the other, with nothing else to read, reads
    // the second to its end meanwhile (put back after its first step, it is started
    // early again). The two submits may both find a worker spinning, and send no
    // wake-up: the one that takes the first block must wake the other for the second.
    assert_eq!(recv(&rx), ("second", "step"));
    assert_eq!(recv(&rx), ("second", "step"));
    assert_eq!(recv(&rx), ("second", "complete"));
    open.send(()).unwrap();
    assert_eq!(recv(&rx), ("first", "step"));
    assert_eq!(recv(&rx), ("first", "complete"));
    pool.end_flow(5);
    let ended = Instant::now();
    while pool.stats().stream_flows > 0 {
        assert!(ended.elapsed() < Duration::from_secs(10), "the flow is never forgotten");
        thread::yield_now();
    }
}

#[test]
fn cancelling_a_waiting_job_releases_it_at_once() {
    let pool = Pool::new(1, 100);
    let (tx, rx) = mpsc::channel();
    let (open, gate) = mpsc::channel();
    pool.submit(Box::new(FakeJob { name: "busy", steps: 1, bytes: 1, gate: Some(gate), log: tx.clone() }));
    let ticket = pool.submit(job("victim", 5, &tx));
    assert!(pool.cancel(&ticket));
    // Released before the worker is free again (on a closer thread, not the caller's).
    assert_eq!(recv(&rx), ("victim", "cancel"));
    open.send(()).unwrap();
    assert_eq!(recv(&rx), ("busy", "step"));
    assert_eq!(recv(&rx), ("busy", "complete"));
    assert!(!pool.cancel(&ticket));
    assert_eq!(pool.stats().cancelled, 1);
}

#[test]
fn cancelling_a_running_job_stops_it_after_the_chunk() {
    let pool = Pool::new(1, 100);
    let (tx, rx) = mpsc::channel();
    let (open, gate) = mpsc::channel();
    let ticket = pool.submit(Box::new(FakeJob { name: "long", steps: 100, bytes: 1, gate: Some(gate), log: tx }));
    open.send(()).unwrap();
    assert_eq!(recv(&rx), ("long", "step"));
    // The worker is now blocked in step 2, or about to be, or between the steps, where
    // it sees the flag and drops the job (and its gate) without a second step.
    assert!(!pool.cancel(&ticket));
    let _ = open.send(());
    let mut events = vec![];
    loop {
        let e = recv(&rx);
        events.push(e.1);
        if e.1 != "step" {
            break;
        }
    }
    assert_eq!(events.last(), Some(&"cancel"));
    assert!(events.len() <= 2, "ran {events:?} after cancel");
}

/// A job of `pieces` units of work, handed out to other workers by `split` or
/// run by `step` like the parts of a file. Each unit waits (up to 2 s) for `together`
/// units to have run at once, and records how many did.
struct SplitJob {
    pieces: usize,
    together: usize,
    running: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
    /// Pieces handed out and not yet dropped; the job ends only after they are.
    in_flight: Arc<AtomicUsize>,
    log: mpsc::Sender<(&'static str, &'static str)>,
}

/// One unit of a `SplitJob`'s work.
fn unit(running: &AtomicUsize, most: &AtomicUsize, together: usize) -> usize {
    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
    most.fetch_max(now, Ordering::SeqCst);
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while most.load(Ordering::SeqCst) < together && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    running.fetch_sub(1, Ordering::SeqCst);
    10
}

/// Counts a piece in flight until it is dropped, as a `Part` does.
struct InFlight(Arc<AtomicUsize>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Drop for SplitJob {
    fn drop(&mut self) {
        while self.in_flight.load(Ordering::SeqCst) > 0 {
            std::thread::yield_now();
        }
    }
}

impl Job for SplitJob {
    fn split(&mut self) -> Option<Piece> {
        if self.pieces <= 1 {
            return None; // the last unit is for `step`
        }
        self.pieces -= 1;
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        let held = InFlight(self.in_flight.clone());
        let (running, most, together) = (self.running.clone(), self.most.clone(), self.together);
        Some(Piece::new(10, move || {
            let _ = &held;
            unit(&running, &most, together)
        }))
    }
    fn step(&mut self) -> Step {
        self.pieces -= 1;
        Step { bytes: unit(&self.running, &self.most, self.together), done: self.pieces == 0 }
    }
    fn complete(self: Box<Self>) {
        let log = self.log.clone();
        drop(self);
        log.send(("split", "complete")).unwrap();
    }
    fn cancel(self: Box<Self>) {
        let log = self.log.clone();
        drop(self);
        log.send(("split", "cancel")).unwrap();
    }
}

#[test]
fn pieces_of_one_job_run_on_several_workers_at_once() {
    let pool = Pool::new(2, 10);
    let (tx, rx) = mpsc::channel();
    let most = Arc::new(AtomicUsize::new(0));
    let job = SplitJob {
        pieces: 5,
        together: 2,
        running: Arc::default(),
        most: most.clone(),
        in_flight: Arc::default(),
        log: tx,
    };
    pool.submit(Box::new(job));
    assert_eq!(recv(&rx), ("split", "complete"));
    assert_eq!(most.load(Ordering::SeqCst), 2, "pieces ran one at a time");
    let stats = pool.stats();
    assert_eq!((stats.completed, stats.chunks_read, stats.bytes_read), (1, 5, 50));
}

#[test]
fn a_lane_grows_by_the_parts_of_a_lone_big_read_up_to_its_limit() {
    // Units that wait for 12 at once, as parts wait on a slow server: a lane of 2
    // that may grow to 6 by itself runs 6 (and the pool never grows without a limit).
    for (grow_to, expected) in [(6, 6), (0, 2)] {
        let pool = Pool::for_lane(1, 2, 10, Box::leak(Box::new(super::budget::ThreadBudget::new(usize::MAX))));
        pool.set_grow_for_parts_to(grow_to);
        let (tx, rx) = mpsc::channel();
        let most = Arc::new(AtomicUsize::new(0));
        let job = SplitJob {
            pieces: 12,
            together: 12,
            running: Arc::default(),
            most: most.clone(),
            in_flight: Arc::default(),
            log: tx,
        };
        let started = Instant::now();
        pool.submit(Box::new(job));
        let deadline = started + Duration::from_secs(3);
        while most.load(Ordering::SeqCst) < expected && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(most.load(Ordering::SeqCst), expected, "parts in flight with grow_for_parts_to {grow_to}");
        assert_eq!(pool.target_threads(), expected);
        // The units give up waiting after 2 s; the job then ends whole.
        assert_eq!(rx.recv_timeout(Duration::from_secs(30)).unwrap(), ("split", "complete"));
        assert_eq!(most.load(Ordering::SeqCst), expected);
        assert_eq!(pool.stats().chunks_read, 12);
    }
}

/// A `FakeJob` that counts as a big file.
struct Large(FakeJob);

impl Job for Large {
    fn step(&mut self) -> Step {
        self.0.step()
    }
    fn complete(self: Box<Self>) {
        Box::new(self.0).complete()
    }
    fn cancel(self: Box<Self>) {
        Box::new(self.0).cancel()
    }
    fn is_large(&self) -> bool {
        true
    }
}

#[test]
fn large_jobs_beyond_the_limit_wait_while_small_ones_go_ahead() {
    let pool = Pool::new(3, 100);
    pool.set_large_limit(Some(1));
    let (tx, rx) = mpsc::channel();
    let (open_a, gate_a) = mpsc::channel();
    let (open_b, gate_b) = mpsc::channel();
    let fake = |name, gate| FakeJob { name, steps: 1, bytes: 1, gate: Some(gate), log: tx.clone() };
    pool.submit(Box::new(Large(fake("a", gate_a))));
    while pool.stats().active == 0 {
        std::thread::yield_now(); // until a worker holds "a"
    }
    pool.submit(Box::new(Large(fake("b", gate_b))));
    pool.submit(job("small", 1, &tx));
    open_b.send(()).unwrap();
    // "a" holds the only large slot: "b" waits although its gate is open and a
    // worker is free, while the small job goes ahead.
    assert_eq!(recv(&rx), ("small", "step"));
    assert_eq!(recv(&rx), ("small", "complete"));
    assert!(rx.recv_timeout(Duration::from_millis(200)).is_err(), "a second large job ran");
    assert_eq!(pool.stats().large_limit, 1);
    open_a.send(()).unwrap();
    let events: Vec<_> = (0..4).map(|_| recv(&rx)).collect();
    assert_eq!(events, [("a", "step"), ("a", "complete"), ("b", "step"), ("b", "complete")]);
}

/// A `FakeJob` under admission: it opens a file, and asks for `wants` bytes after
/// its first step; it logs "suspend" when told to wait for them.
struct Admitted {
    fake: FakeJob,
    wants: u64,
    granted: bool,
    stepped: bool,
}

impl Job for Admitted {
    fn step(&mut self) -> Step {
        self.stepped = true;
        self.fake.step()
    }
    fn complete(self: Box<Self>) {
        Box::new(self.fake).complete()
    }
    fn cancel(self: Box<Self>) {
        Box::new(self.fake).cancel()
    }
    fn waits(&mut self) -> Option<&mut dyn Waits> {
        Some(self)
    }
}

impl Waits for Admitted {
    fn opens_file(&self) -> bool {
        true
    }
    fn wait(&self) -> Wait {
        if self.stepped && !self.granted && self.wants > 0 {
            Wait::Bytes(self.wants)
        } else {
            Wait::No
        }
    }
    fn grant(&mut self) {
        self.granted = true;
    }
    fn suspend(&mut self) {
        self.fake.log.send((self.fake.name, "suspend")).unwrap();
    }
}

fn admitted(
    name: &'static str,
    steps: usize,
    wants: u64,
    gate: Option<mpsc::Receiver<()>>,
    log: &mpsc::Sender<(&'static str, &'static str)>,
) -> Box<Admitted> {
    Box::new(Admitted {
        fake: FakeJob { name, steps, bytes: 1, gate, log: log.clone() },
        wants,
        granted: false,
        stepped: false,
    })
}

#[test]
fn reads_past_the_open_file_limit_wait_and_start_in_order() {
    let pool = Pool::new(2, 100);
    pool.set_admission_limits(Some(1), None);
    let (tx, rx) = mpsc::channel();
    let (open, gate) = mpsc::channel();
    pool.submit(admitted("a", 1, 0, Some(gate), &tx));
    pool.submit(admitted("b", 1, 0, None, &tx));
    pool.submit(admitted("c", 1, 0, None, &tx));
    let s = pool.stats();
    assert_eq!((s.open_files, s.max_open_files, s.waiting), (1, 1, 2));
    assert!(rx.recv_timeout(Duration::from_millis(100)).is_err(), "b or c ran beside a");
    open.send(()).unwrap();
    let events: Vec<_> = (0..6).map(|_| recv(&rx)).collect();
    // Each gives its slot back when its step is done, just before its outcome is
    // delivered, so the next may start before it completes: the starts are in
    // order, and the wait above showed one slot at a time.
    let starts: Vec<_> = events.iter().filter(|e| e.1 == "step").map(|e| e.0).collect();
    assert_eq!(starts, ["a", "b", "c"]);
    assert_eq!(events.iter().filter(|e| e.1 == "complete").count(), 3);

    let s = pool.stats();
    assert_eq!((s.open_files, s.waiting), (0, 0));
}

#[test]
fn a_read_refused_its_bytes_waits_holding_nothing_and_cancels_at_once() {
    let pool = Pool::new(2, 100);
    pool.set_admission_limits(None, Some(100));
    let (tx, rx) = mpsc::channel();
    let (open, gate) = mpsc::channel();
    // "a" takes 80 bytes and then blocks in its second step.
    pool.submit(admitted("a", 2, 80, Some(gate), &tx));
    open.send(()).unwrap();
    assert_eq!(recv(&rx), ("a", "step"));
    while pool.stats().bytes_in_flight != 80 {
        std::thread::yield_now();
    }
    let b = pool.submit(admitted("b", 2, 50, None, &tx));
    assert_eq!(recv(&rx), ("b", "step"));
    assert_eq!(recv(&rx), ("b", "suspend"), "80 + 50 > 100: b closes its file");
    while pool.stats().waiting != 1 {
        std::thread::yield_now();
    }
    let s = pool.stats();
    assert_eq!((s.open_files, s.bytes_in_flight), (1, 80), "b holds no slot and no bytes while it waits");
    assert!(pool.cancel(&b), "b was waiting: cancelled here, at once");
    assert_eq!(recv(&rx), ("b", "cancel"));
    assert_eq!(pool.stats().waiting, 0);
    // A third read asks for bytes that fit after a: it runs once a completes.
    pool.submit(admitted("c", 2, 50, None, &tx));
    assert_eq!(recv(&rx), ("c", "step"));
    assert_eq!(recv(&rx), ("c", "suspend"));
    open.send(()).unwrap();
    let events: Vec<_> = (0..4).map(|_| recv(&rx)).collect();
    // c gets a's bytes just before a's outcome is delivered: a's step comes first.
    assert_eq!(events[0], ("a", "step"));
    let mut rest = events[1..].to_vec();
    rest.sort_unstable();
    assert_eq!(rest, [("a", "complete"), ("c", "complete"), ("c", "step")]);
    let s = pool.stats();
    assert_eq!((s.open_files, s.bytes_in_flight, s.waiting), (0, 0, 0));
}

#[test]
fn cancel_many_takes_out_the_waiting_jobs_at_once_and_leaves_the_rest_in_order() {
    let pool = Pool::new(1, 100);
    let (tx, rx) = mpsc::channel();
    let (open, gate) = mpsc::channel();
    pool.submit(Box::new(FakeJob { name: "busy", steps: 1, bytes: 1, gate: Some(gate), log: tx.clone() }));
    while pool.stats().active == 0 {
        std::thread::yield_now(); // until the worker holds "busy"
    }
    let names = ["a", "b", "c", "d", "e"];
    let tickets: Vec<_> = names.iter().map(|n| pool.submit(job(n, 1, &tx))).collect();
    let cancelled = [&tickets[0], &tickets[2], &tickets[4]].map(|t| t.clone());
    assert_eq!(pool.cancel_many(&cancelled), 3, "all three were waiting");
    let mut events: Vec<_> = (0..3).map(|_| recv(&rx)).collect();
    events.sort_unstable();
    assert_eq!(events, [("a", "cancel"), ("c", "cancel"), ("e", "cancel")]);
    assert_eq!(pool.stats().cancelled, 3);
    open.send(()).unwrap();
    let rest: Vec<_> = (0..6).map(|_| recv(&rx)).collect();
    assert_eq!(
        rest,
        [("busy", "step"), ("busy", "complete"), ("b", "step"), ("b", "complete"), ("d", "step"), ("d", "complete")]
    );
}

/// A job whose step panics.
struct Panics(mpsc::Sender<(&'static str, &'static str)>);

impl Job for Panics {
    fn step(&mut self) -> Step {
        panic!("a bug in a step");
    }
    fn complete(self: Box<Self>) {
        self.0.send(("panics", "complete")).unwrap();
    }
    fn cancel(self: Box<Self>) {
        self.0.send(("panics", "cancel")).unwrap();
    }
    fn fail(self: Box<Self>) {
        self.0.send(("panics", "fail")).unwrap();
    }
}

#[test]
fn a_panicking_step_fails_its_own_job_and_the_worker_lives_on() {
    let pool = Pool::new(1, 100);
    let (tx, rx) = mpsc::channel();
    pool.submit(Box::new(Panics(tx.clone())));
    assert_eq!(recv(&rx), ("panics", "fail"));
    // The one worker is still there to run the next job.
    pool.submit(job("after", 1, &tx));
    assert_eq!(recv(&rx), ("after", "step"));
    assert_eq!(recv(&rx), ("after", "complete"));
    let s = pool.stats();
    assert_eq!((s.completed, s.active, s.threads), (2, 0, 1));
}

/// A big job whose release waits until its gate opens, as releasing `Parts`
/// waits for pieces other workers are reading.
struct SlowToFree {
    gate: mpsc::Receiver<()>,
    log: mpsc::Sender<(&'static str, &'static str)>,
}

impl Job for SlowToFree {
    fn step(&mut self) -> Step {
        Step { bytes: 1, done: true }
    }
    fn is_large(&self) -> bool {
        true
    }
    fn complete(self: Box<Self>) {
        self.log.send(("slow", "complete")).unwrap();
    }
    fn cancel(self: Box<Self>) {
        let _ = self.gate.recv(); // the pieces in flight
        self.log.send(("slow", "cancel")).unwrap();
    }
}

#[test]
fn cancelling_a_big_job_never_waits_for_its_release_on_the_cancelling_thread() {
    let pool = Arc::new(Pool::new(1, 10));
    let (tx, rx) = mpsc::channel();
    let (open_busy, busy_gate) = mpsc::channel();
    let (open_slow, slow_gate) = mpsc::channel();
    pool.submit(Box::new(FakeJob { name: "busy", steps: 1, bytes: 1, gate: Some(busy_gate), log: tx.clone() }));
    while pool.stats().active == 0 {
        std::thread::yield_now(); // until the worker holds "busy"
    }
    let ticket = pool.submit(Box::new(SlowToFree { gate: slow_gate, log: tx }));
    // Cancel on another thread, so that a cancel that waited would fail, not hang.
    let (done_tx, done) = mpsc::channel();
    let canceller = {
        let pool = pool.clone();
        std::thread::spawn(move || done_tx.send(pool.cancel(&ticket)).unwrap())
    };
    assert_eq!(done.recv_timeout(Duration::from_secs(5)), Ok(true), "cancel returned at once: it was waiting");
    canceller.join().unwrap();
    open_busy.send(()).unwrap();
    assert_eq!(recv(&rx), ("busy", "step"));
    assert_eq!(recv(&rx), ("busy", "complete"));
    // The worker now releases the cancelled job, which waits for its gate.
    open_slow.send(()).unwrap();
    assert_eq!(recv(&rx), ("slow", "cancel"));
    assert_eq!(pool.stats().cancelled, 1);
}

#[test]
fn pool_grows_and_shrinks_while_working() {
    let pool = Pool::new(4, 100);
    let (tx, rx) = mpsc::channel();
    for _ in 0..50 {
        pool.submit(job("j", 3, &tx));
    }
    pool.configure(Some(1), None);
    pool.configure(Some(3), Some(50));
    let completes = (0..200).map(|_| recv(&rx)).filter(|e| e.1 == "complete").count();
    assert_eq!(completes, 50);
    assert_eq!(pool.stats().threads, 3);
    assert_eq!(pool.chunk_size(), 50);
    // Surplus workers exit: eventually exactly three are alive.
    pool.configure(Some(2), None);
    for _ in 0..1000 {
        if lock(&pool.shared).live_threads == 2 {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("surplus workers did not exit");
}

#[test]
fn dropping_the_pool_cancels_waiting_jobs_and_joins_workers() {
    let pool = Pool::new(1, 100);
    let (tx, rx) = mpsc::channel();
    let (open, gate) = mpsc::channel();
    pool.submit(Box::new(FakeJob { name: "busy", steps: 1, bytes: 1, gate: Some(gate), log: tx.clone() }));
    pool.submit(job("waiting", 3, &tx));
    while pool.stats().active == 0 {
        std::thread::yield_now(); // until the worker holds "busy"
    }
    // Drop on another thread: it cancels the waiting job at once, then waits
    // for the busy one, which we let finish only after seeing the cancel.
    let dropper = std::thread::spawn(move || drop(pool));
    assert_eq!(recv(&rx), ("waiting", "cancel"));
    open.send(()).unwrap();
    dropper.join().unwrap();
    let events: Vec<_> = rx.try_iter().collect();
    assert_eq!(events, [("busy", "step"), ("busy", "complete")]);
}

#[test]
fn a_retired_lane_goes_down_to_one_worker_once_idle_and_gives_the_rest_back() {
    let budget: &'static budget::ThreadBudget = Box::leak(Box::new(budget::ThreadBudget::new(64)));
    let pool = Pool::for_lane(7, 4, 100, budget);
    assert_eq!((pool.target_threads(), budget.in_use()), (4, 4));
    let (tx, rx) = mpsc::channel();
    pool.submit(job("before", 1, &tx));
    assert_eq!(recv(&rx), ("before", "step"));
    pool.retire();
    let deadline = Instant::now() + LANE_IDLE_AFTER * 5;
    while pool.target_threads() > 1 && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
    assert_eq!((pool.target_threads(), budget.in_use()), (1, 1), "one worker left, three given back");
    // What it still gets is served by that one.
    pool.submit(job("after", 2, &tx));
    let events: Vec<_> = (0..4).map(|_| recv(&rx)).collect();
    assert!(events.contains(&("after", "complete")), "{events:?}");
}
