//! loom models of the pool's concurrency (built with `--cfg fairfs_loom`).

use super::*;
use crate::job::{Piece, Step, Wait, Waits};
use crate::loom::thread;

/// Counts how a job ended: bit 0 = completed, bit 1 = cancelled.
struct Probe {
    steps: usize,
    ended: Arc<AtomicUsize>,
}

impl Job for Probe {
    fn step(&mut self) -> Step {
        self.steps -= 1;
        Step { bytes: 1, done: self.steps == 0 }
    }
    fn complete(self: Box<Self>) {
        self.ended.fetch_add(1, Ordering::SeqCst);
    }
    fn cancel(self: Box<Self>) {
        self.ended.fetch_add(2, Ordering::SeqCst);
    }
}

/// A job cancelled while a worker may be running it ends exactly once, by
/// completion or by cancellation, and shutdown joins the worker.
#[test]
fn loom_cancel_races_with_worker() {
    loom::model(|| {
        let pool = Pool::new(1, 1);
        let ended = Arc::new(AtomicUsize::new(0));
        let ticket = pool.submit(Box::new(Probe { steps: 2, ended: ended.clone() }));
        pool.cancel(&ticket);
        drop(pool);
        let e = ended.load(Ordering::SeqCst);
        assert!(e == 1 || e == 2, "ended {e}");
    });
}

/// A one-step block of keyed flow 1.
struct KeyedProbe(Probe);

impl Job for KeyedProbe {
    fn step(&mut self) -> Step {
        self.0.step()
    }
    fn flow(&self) -> Option<u64> {
        Some(1)
    }
    fn complete(self: Box<Self>) {
        Box::new(self.0).complete()
    }
    fn cancel(self: Box<Self>) {
        Box::new(self.0).cancel()
    }
}

/// Two blocks of one stream on two workers, the first cancelled while a worker
/// may be reading it: each ends exactly once, the second is read (it never waits
/// forever behind a block whose turn was lost), and the flow is forgotten.
#[test]
fn loom_keyed_flow_with_cancel() {
    loom::model(|| {
        let pool = Pool::new(2, 1);
        let first = Arc::new(AtomicUsize::new(0));
        let second = Arc::new(AtomicUsize::new(0));
        let ticket = pool.submit(Box::new(KeyedProbe(Probe { steps: 1, ended: first.clone() })));
        pool.submit(Box::new(KeyedProbe(Probe { steps: 1, ended: second.clone() })));
        pool.cancel(&ticket);
        pool.end_flow(1);
        while second.load(Ordering::SeqCst) == 0 {
            loom::thread::yield_now();
        }
        assert_eq!(second.load(Ordering::SeqCst), 1, "the second block completes");
        while pool.stats().stream_flows > 0 {
            loom::thread::yield_now();
        }
        drop(pool);
        let e = first.load(Ordering::SeqCst);
        assert!(e == 1 || e == 2, "ended {e}");
    });
}

/// Two two-step blocks of one stream on two workers: the second may start early
/// while the first is read, go back to its flow's line after one step, and be
/// cancelled meanwhile. Each ends exactly once, the first completes, and the flow is
/// forgotten once both have ended.
#[test]
fn loom_early_block_with_cancel() {
    early_blocks(true);
}

/// The same without the cancel: both blocks complete, whichever ends first.
#[test]
fn loom_early_block() {
    early_blocks(false);
}

fn early_blocks(cancel: bool) {
    loom::model(move || {
        let pool = Pool::new(2, 1);
        let first = Arc::new(AtomicUsize::new(0));
        let second = Arc::new(AtomicUsize::new(0));
        pool.submit(Box::new(KeyedProbe(Probe { steps: 2, ended: first.clone() })));
        let ticket = pool.submit(Box::new(KeyedProbe(Probe { steps: 2, ended: second.clone() })));
        if cancel {
            pool.cancel(&ticket);
        }
        pool.end_flow(1);
        while first.load(Ordering::SeqCst) == 0 || second.load(Ordering::SeqCst) == 0 {
            loom::thread::yield_now();
        }
        while pool.stats().stream_flows > 0 {
            loom::thread::yield_now();
        }
        drop(pool);
        assert_eq!(first.load(Ordering::SeqCst), 1, "the first block completes");
        let e = second.load(Ordering::SeqCst);
        assert!(e == 1 || (cancel && e == 2), "ended {e}");
    });
}

/// A job that reads three one-byte parts of /dev/zero, handing out all but the
/// last to other workers ([`crate::parts`]).
struct PartsProbe {
    parts: Option<crate::parts::Parts>,
    _file: std::fs::File,
    ended: Arc<AtomicUsize>,
}

impl PartsProbe {
    fn new(ended: &Arc<AtomicUsize>) -> Box<PartsProbe> {
        use std::os::fd::AsRawFd;
        let file = std::fs::File::open("/dev/zero").unwrap();
        let buf = crate::memory::buffer_pool::PooledBytes::unpooled(Vec::with_capacity(3));
        let parts = crate::parts::Parts::new(file.as_raw_fd(), buf, 3);
        Box::new(PartsProbe { parts: Some(parts), _file: file, ended: ended.clone() })
    }
}

impl Job for PartsProbe {
    fn split(&mut self) -> Option<Piece> {
        let parts = self.parts.as_mut().filter(|p| p.unclaimed() > 1)?;
        let mut part = parts.claim(1)?;
        Some(Piece::new(1, move || part.read()))
    }
    fn step(&mut self) -> Step {
        let parts = self.parts.as_mut().unwrap();
        let bytes = parts.claim(1).map_or(0, |mut p| p.read());
        Step { bytes, done: !parts.has_more() }
    }
    fn complete(mut self: Box<Self>) {
        assert_eq!(self.parts.take().unwrap().finish().unwrap().into_pooled().unwrap(), vec![0u8; 3]);
        self.ended.fetch_add(1, Ordering::SeqCst);
    }
    fn cancel(mut self: Box<Self>) {
        drop(self.parts.take()); // waits for parts in flight
        self.ended.fetch_add(2, Ordering::SeqCst);
    }
}

/// Two workers share one job's parts while it is cancelled: it ends exactly
/// once, nothing deadlocks, and a completed result has every byte.
#[test]
fn loom_parts_of_one_job_on_two_workers_with_cancel() {
    loom::model(|| {
        let pool = Pool::new(2, 1);
        let ended = Arc::new(AtomicUsize::new(0));
        let ticket = pool.submit(PartsProbe::new(&ended));
        pool.cancel(&ticket);
        drop(pool);
        assert!(matches!(ended.load(Ordering::SeqCst), 1 | 2));
    });
}

/// A lane of one worker that may start a second for a big read's parts: the second
/// starts, the job completes with every byte; dropped while it may be growing, the
/// job ends exactly once and every worker, the started one too, is joined.
#[test]
fn loom_lane_grows_for_parts() {
    for wait in [true, false] {
        loom::model(move || {
            let pool = Pool::for_lane(1, 1, 1, Box::leak(Box::new(super::budget::ThreadBudget::new(usize::MAX))));
            pool.set_grow_for_parts_to(2);
            let ended = Arc::new(AtomicUsize::new(0));
            pool.submit(PartsProbe::new(&ended));
            if wait {
                while ended.load(Ordering::SeqCst) == 0 {
                    thread::yield_now();
                }
                assert_eq!(pool.target_threads(), 2, "no free worker for the next part: one more");
            }
            drop(pool);
            let e = ended.load(Ordering::SeqCst);
            assert!(e == 1 || (!wait && e == 2), "ended {e}");
        });
    }
}

/// A job under admission: it holds an open-file slot and asks for one byte after
/// its first step.
struct AdmittedProbe {
    probe: Probe,
    stepped: bool,
    granted: bool,
}

impl Job for AdmittedProbe {
    fn step(&mut self) -> Step {
        self.stepped = true;
        self.probe.step()
    }
    fn complete(self: Box<Self>) {
        Box::new(self.probe).complete()
    }
    fn cancel(self: Box<Self>) {
        Box::new(self.probe).cancel()
    }
    fn waits(&mut self) -> Option<&mut dyn Waits> {
        Some(self)
    }
}

impl Waits for AdmittedProbe {
    fn opens_file(&self) -> bool {
        true
    }
    fn wait(&self) -> Wait {
        if self.stepped && !self.granted {
            Wait::Bytes(1)
        } else {
            Wait::No
        }
    }
    fn grant(&mut self) {
        self.granted = true;
    }
}

/// Two reads under one open-file slot and one byte, on two workers, one of them
/// cancelled: each ends exactly once, nothing deadlocks, and once both have ended
/// the slot and the byte are free again.
#[test]
fn loom_admission_with_cancel() {
    loom::model(|| {
        let pool = Pool::new(2, 1);
        pool.set_admission_limits(Some(1), Some(1));
        let a = Arc::new(AtomicUsize::new(0));
        let b = Arc::new(AtomicUsize::new(0));
        let probe = |ended: &Arc<AtomicUsize>| {
            Box::new(AdmittedProbe { probe: Probe { steps: 2, ended: ended.clone() }, stepped: false, granted: false })
        };
        pool.submit(probe(&a));
        let tb = pool.submit(probe(&b));
        pool.cancel(&tb);
        while a.load(Ordering::SeqCst) == 0 || b.load(Ordering::SeqCst) == 0 {
            thread::yield_now();
        }
        let s = pool.stats();
        assert_eq!((s.open_files, s.bytes_in_flight, s.waiting), (0, 0, 0));
        drop(pool);
        assert_eq!(a.load(Ordering::SeqCst), 1, "a is not cancelled, so it completes");
        assert!(matches!(b.load(Ordering::SeqCst), 1 | 2));
    });
}

/// A read that, granted its byte, waits for lent memory ([`Wait::Memory`]).
struct LendingProbe {
    admitted: AdmittedProbe,
    lent: bool,
    asked: Arc<AtomicBool>,
}

impl Job for LendingProbe {
    fn step(&mut self) -> Step {
        self.admitted.step()
    }
    fn complete(self: Box<Self>) {
        Box::new(self.admitted).complete()
    }
    fn cancel(self: Box<Self>) {
        Box::new(self.admitted).cancel()
    }
    fn waits(&mut self) -> Option<&mut dyn Waits> {
        Some(self)
    }
}

impl Waits for LendingProbe {
    fn opens_file(&self) -> bool {
        true
    }
    fn wait(&self) -> Wait {
        match self.admitted.wait() {
            Wait::No if self.admitted.granted && !self.lent => Wait::Memory(1),
            wait => wait,
        }
    }
    fn grant(&mut self) {
        self.admitted.grant()
    }
    fn memory_asker(&mut self) -> Option<Box<dyn FnOnce(u64) + Send>> {
        let asked = self.asked.clone();
        Some(Box::new(move |_| asked.store(true, Ordering::SeqCst)))
    }
    fn lend(&mut self, _memory: Option<Lent>) {
        self.lent = true;
    }
}

/// A read waiting for memory is answered on one thread while another cancels it:
/// it ends exactly once, and its slot and byte are free afterwards.
#[test]
fn loom_lend_races_with_cancel() {
    loom::model(|| {
        let pool = Arc::new(Pool::new(1, 1));
        let (ended, asked) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicBool::new(false)));
        let probe = Probe { steps: 2, ended: ended.clone() };
        let admitted = AdmittedProbe { probe, stepped: false, granted: false };
        let job = LendingProbe { admitted, lent: false, asked: asked.clone() };
        let ticket = pool.submit(Box::new(job));
        while !asked.load(Ordering::SeqCst) {
            thread::yield_now();
        }
        let lender = {
            let (pool, ticket) = (pool.clone(), ticket.clone());
            thread::spawn(move || pool.lend(&ticket, None))
        };
        pool.cancel(&ticket);
        lender.join().unwrap();
        while ended.load(Ordering::SeqCst) == 0 {
            thread::yield_now();
        }
        let s = pool.stats();
        assert_eq!((s.open_files, s.bytes_in_flight, s.awaiting_memory), (0, 0, 0));
        drop(pool);
        assert!(matches!(ended.load(Ordering::SeqCst), 1 | 2));
    });
}

/// Two jobs on two workers: each ends exactly once.
#[test]
fn loom_two_workers_two_jobs() {
    loom::model(|| {
        let pool = Pool::new(2, 1);
        let a = Arc::new(AtomicUsize::new(0));
        let b = Arc::new(AtomicUsize::new(0));
        pool.submit(Box::new(Probe { steps: 1, ended: a.clone() }));
        pool.submit(Box::new(Probe { steps: 2, ended: b.clone() }));
        drop(pool);
        assert!(matches!(a.load(Ordering::SeqCst), 1 | 2));
        assert!(matches!(b.load(Ordering::SeqCst), 1 | 2));
    });
}

/// A write of a [`WriteChain`] in keyed, in-order flow 7, ending one way or the other.
struct ChainedProbe {
    chain: Arc<crate::jobs::write_chain::WriteChain>,
    fails: bool,
    ran: Arc<AtomicUsize>,
    ended: Arc<AtomicUsize>,
}

impl Job for ChainedProbe {
    fn step(&mut self) -> Step {
        let (fails, ran) = (self.fails, &self.ran);
        self.chain.run(1, || {
            ran.fetch_add(1, Ordering::SeqCst);
            if fails {
                Err(())
            } else {
                Ok(1)
            }
        });
        Step { bytes: 1, done: true }
    }
    fn flow(&self) -> Option<u64> {
        Some(7)
    }
    fn in_order(&self) -> bool {
        true
    }
    fn complete(self: Box<Self>) {
        self.ended.fetch_add(1, Ordering::SeqCst);
    }
    fn cancel(self: Box<Self>) {
        self.ended.fetch_add(1, Ordering::SeqCst);
    }
}

/// A WriteStream's queued write behind one that fails, on two workers: whichever worker
/// takes it, it never runs (nothing lands after the failed write), and both end.
#[test]
fn loom_chain_stops_after_a_failed_write() {
    loom::model(|| {
        let pool = Pool::new(2, 1);
        let chain = Arc::new(crate::jobs::write_chain::WriteChain::default());
        let ran = Arc::new(AtomicUsize::new(0));
        let ended = Arc::new(AtomicUsize::new(0));
        for fails in [true, false] {
            let (chain, ran, ended) = (chain.clone(), ran.clone(), ended.clone());
            pool.submit(Box::new(ChainedProbe { chain, fails, ran, ended }));
        }
        while ended.load(Ordering::SeqCst) < 2 {
            loom::thread::yield_now();
        }
        assert_eq!(ran.load(Ordering::SeqCst), 1, "only the failing write ran");
        drop(pool);
    });
}

/// One request run, then a second submitted by `submit_second` while the only worker
/// may be spinning for work, giving its spin up, or asleep: both run.
fn second_request_runs_beside_a_spinning_worker(submit_second: fn(&Pool, Box<dyn Job>)) {
    loom::model(move || {
        let pool = Pool::new(1, 1);
        assert!(!pool.lock().spin.is_zero(), "the pool spins");
        let first = Arc::new(AtomicUsize::new(0));
        let second = Arc::new(AtomicUsize::new(0));
        pool.submit(Box::new(Probe { steps: 1, ended: first.clone() }));
        while first.load(Ordering::SeqCst) == 0 {
            thread::yield_now();
        }
        submit_second(&pool, Box::new(Probe { steps: 1, ended: second.clone() }));
        while second.load(Ordering::SeqCst) == 0 {
            thread::yield_now();
        }
        drop(pool);
        assert_eq!((first.load(Ordering::SeqCst), second.load(Ordering::SeqCst)), (1, 1));
    });
}

/// A submit: no wake-up is lost between the spin and the sleep, and a submit that finds
/// the worker spinning (and so sends none) is seen.
#[test]
fn loom_submit_races_with_a_spinning_worker() {
    second_request_runs_beside_a_spinning_worker(|pool, job| {
        pool.submit(job);
    });
}

/// A quiet submit (no wake-up) and the nudge the event loop owes for it: the worker must
/// not sleep through the nudge, nor the nudge miss a worker about to sleep.
#[test]
fn loom_a_quiet_submit_runs_once_nudged() {
    second_request_runs_beside_a_spinning_worker(|pool, job| {
        pool.submit_many_quietly(vec![job]);
        pool.nudge();
    });
}

/// A whole-file write's turn as `WriteFileJob` takes it: asked for on its first step;
/// while another holds it, the job waits out of the queue ([`Wait::Turn`]).
struct TurnProbe {
    probe: Probe,
    turns: Arc<crate::jobs::file_turns::FileTurns>,
    turn: Option<crate::jobs::file_turns::Turn>,
    waiting: bool,
}

impl Job for TurnProbe {
    fn step(&mut self) -> Step {
        let mine = crate::jobs::file_turns::Turn::ask(&mut self.turn, &self.turns, || 1);
        self.waiting = !mine;
        if !mine {
            return Step { bytes: 0, done: false };
        }
        self.probe.step()
    }
    fn complete(self: Box<Self>) {
        let TurnProbe { probe, turn, .. } = *self;
        drop(turn);
        Box::new(probe).complete()
    }
    fn cancel(self: Box<Self>) {
        let TurnProbe { probe, turn, .. } = *self;
        drop(turn);
        Box::new(probe).cancel()
    }
    fn waits(&mut self) -> Option<&mut dyn Waits> {
        Some(self)
    }
}

impl Waits for TurnProbe {
    fn wait(&self) -> Wait {
        if self.waiting {
            Wait::Turn
        } else {
            Wait::No
        }
    }
    fn set_aside(&mut self, resume: crate::job::Resume) -> Option<crate::job::Resume> {
        self.turn.as_ref().expect("asked on its first step").when_mine(resume)
    }
}

/// Two writes of one file on two workers, the second perhaps cancelled meanwhile: it
/// waits for the first's turn out of the queue and is put back when that ends (or is
/// cancelled there); each ends exactly once and nothing is left waiting.
#[test]
fn loom_a_write_waiting_for_its_turn_is_put_back_once() {
    turn_race(false);
}

#[test]
fn loom_a_write_waiting_for_its_turn_is_cancelled_once() {
    turn_race(true);
}

fn turn_race(cancel: bool) {
    loom::model(move || {
        let pool = Pool::new(2, 1);
        let turns = Arc::new(crate::jobs::file_turns::FileTurns::new());
        let (a, b) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let job = |ended: &Arc<AtomicUsize>| {
            let probe = Probe { steps: 1, ended: ended.clone() };
            Box::new(TurnProbe { probe, turns: turns.clone(), turn: None, waiting: false })
        };
        pool.submit(job(&a));
        let second = pool.submit(job(&b));
        if cancel {
            pool.cancel(&second);
        }
        while a.load(Ordering::SeqCst) == 0 || b.load(Ordering::SeqCst) == 0 {
            thread::yield_now();
        }
        assert_eq!(pool.stats().awaiting_turn, 0);
        drop(pool);
        assert_eq!(a.load(Ordering::SeqCst), 1, "the first completes");
        assert!(matches!(b.load(Ordering::SeqCst), 1 | 2));
        assert!(cancel || b.load(Ordering::SeqCst) == 1, "uncancelled, it completes");
        assert_eq!(turns.files(), 0, "the turn is gone with its writers");
    });
}
