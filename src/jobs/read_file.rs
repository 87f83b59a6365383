//! A `readFile` request as a pool [`Job`]: the read algorithm plus the code that
//! receives its outcome.

use crate::error::ReadError;
pub use crate::job::MemoryAsker;
use crate::job::{Job, Piece, Step, Waits};
use crate::memory::buffer_pool::PooledBytes;
use crate::memory::lent::Filled;
use crate::pool::{Pool, Ticket};
use crate::read::{pooled_only, FileRead, Progress, ReadLimits, Source};

/// What a read delivers: the bytes (returned to their pool when dropped), or why
/// there are none.
pub type Outcome = Result<PooledBytes, ReadError>;

/// What a read that may fill lent memory delivers ([`ReadFileJob::lending`]).
pub type FilledOutcome = Result<Filled, ReadError>;

/// A [`FileRead`] run by the pool, handing its [`FilledOutcome`] to `on_done` exactly once.
pub struct ReadFileJob<F> {
    read: FileRead,
    /// The error that ended the read early, if any.
    error: Option<ReadError>,
    on_done: F,
}

impl<F: FnOnce(FilledOutcome) + Send + 'static> ReadFileJob<F> {
    pub fn new(source: Source, limits: ReadLimits, on_done: F) -> Self {
        let read = FileRead::new(source, limits);
        ReadFileJob { read, error: None, on_done }
    }

    /// Under admission control, a file we open whose size is in `sizes` and that
    /// spans several chunks is read into memory the caller lends: `ask(size)` asks for
    /// it, and the answer comes through [`Pool::lend`] ([`FileRead::lend_for`]).
    pub fn lending(mut self, sizes: std::ops::Range<usize>, ask: MemoryAsker) -> Self {
        self.read.lend_for(sizes, ask);
        self
    }
}

impl<F: FnOnce(FilledOutcome) + Send + 'static> Job for ReadFileJob<F> {
    fn step(&mut self) -> Step {
        match self.read.step() {
            Ok(p) => Step { bytes: p.bytes(), done: matches!(p, Progress::Done { .. }) },
            Err(e) => {
                self.error = Some(e);
                Step { bytes: 0, done: true }
            }
        }
    }

    fn split(&mut self) -> Option<Piece> {
        self.read.split().map(crate::parts::Part::into_piece)
    }

    fn is_large(&self) -> bool {
        self.read.is_large()
    }

    fn complete(self: Box<Self>) {
        let this = *self;
        let outcome = match this.error {
            Some(e) => Err(e),
            None => this.read.finish(),
        };
        (this.on_done)(outcome);
    }

    fn cancel(self: Box<Self>) {
        let this = *self;
        // Closes the fd and frees the buffer before anyone hears of the cancellation.
        drop(this.read);
        (this.on_done)(Err(ReadError::Cancelled));
    }

    fn fail(self: Box<Self>) {
        let ReadFileJob { read, on_done, .. } = *self;
        // The read may be half-updated by the panic: free it if it lets us, and tell
        // the caller either way.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(read)));
        on_done(Err(ReadError::Panicked));
    }

    /// The read itself waits: for its slot, its bytes, lent memory, a thread of its own.
    fn waits(&mut self) -> Option<&mut dyn Waits> {
        Some(&mut self.read)
    }
}

/// Submits a read of `source` to `pool`; `on_done` runs on a pool thread (or on the
/// cancelling thread) with the outcome.
pub fn submit_read<F>(pool: &Pool, source: Source, limits: ReadLimits, on_done: F) -> Ticket
where
    F: FnOnce(Outcome) + Send + 'static,
{
    pool.submit(Box::new(ReadFileJob::new(source, limits, move |outcome: FilledOutcome| {
        on_done(outcome.map(pooled_only))
    })))
}

/// Reads a file through `pool` and waits for the result.
pub fn read_blocking(pool: &Pool, source: Source, limits: ReadLimits) -> Outcome {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    submit_read(pool, source, limits, move |outcome| {
        let _ = tx.send(outcome);
    });
    rx.recv().unwrap_or(Err(ReadError::Cancelled))
}

#[cfg(all(test, not(fairfs_loom)))]
mod tests {
    use super::*;
    use crate::memory::lent::Lent;

    #[test]
    fn big_files_read_through_the_pool_in_parts_are_whole() {
        let pool = Pool::new(4, 4096);
        let dir = std::env::temp_dir().join(format!("fairfs-request-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for len in [4096usize, 4097, 100_000, 1_048_576 + 3] {
            let data: Vec<u8> = (0..len).map(|i| (i * 13 % 241) as u8).collect();
            let p = dir.join(format!("{len}"));
            std::fs::write(&p, &data).unwrap();
            let source = crate::read::tests::path_source(&p);
            let limits = ReadLimits { chunk_size: 4096, ..Default::default() };
            let before = pool.stats().chunks_read;
            assert_eq!(read_blocking(&pool, source, limits).unwrap(), data, "len {len}");
            assert_eq!(
                pool.stats().chunks_read - before,
                len.div_ceil(4096) as u64,
                "one pool step or piece per chunk"
            );
            assert_eq!(crate::test_files::fds_open_on(&p), 0);
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// Sets a flag when dropped: a lent memory's guard.
    struct Released(std::sync::Arc<std::sync::atomic::AtomicBool>);
    impl Drop for Released {
        fn drop(&mut self) {
            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }

    /// A 50,000-byte file and a lending read of it (4 KiB chunks, under admission).
    struct LendingRead {
        /// The file, removed when the test drops this.
        path: tempfile::TempPath,
        data: Vec<u8>,
        job: Box<dyn Job>,
        /// The outcome, and whether the memory was let go by then.
        done: std::sync::mpsc::Receiver<(FilledOutcome, bool)>,
        /// Its asks for memory.
        asks: std::sync::mpsc::Receiver<u64>,
    }

    fn lending_read(name: &str, released: &std::sync::Arc<std::sync::atomic::AtomicBool>) -> LendingRead {
        lending_read_for(name, released, 1..usize::MAX)
    }

    fn lending_read_for(
        name: &str,
        released: &std::sync::Arc<std::sync::atomic::AtomicBool>,
        sizes: std::ops::Range<usize>,
    ) -> LendingRead {
        let data: Vec<u8> = (0..50_000).map(|i| (i * 11 % 251) as u8).collect();
        let p = crate::test_files::temp_file(&format!("fairfs-lending-{name}"), &data);
        let source = crate::read::tests::path_source(&p);
        let limits = ReadLimits { chunk_size: 4096, admitted: true, ..Default::default() };
        let (tx, rx) = std::sync::mpsc::channel();
        let (ask_tx, ask_rx) = std::sync::mpsc::channel();
        let released = released.clone();
        let job = ReadFileJob::new(source, limits, move |outcome| {
            tx.send((outcome, released.load(std::sync::atomic::Ordering::SeqCst))).unwrap()
        })
        .lending(sizes, Box::new(move |size| ask_tx.send(size).unwrap()));
        LendingRead { path: p, data, job: Box::new(job), done: rx, asks: ask_rx }
    }

    fn lent_memory(memory: &mut [u8], released: &std::sync::Arc<std::sync::atomic::AtomicBool>) -> Lent {
        // SAFETY: the tests keep `memory` alive and untouched until the read's outcome,
        // which comes after the guard is dropped.
        unsafe { Lent::new(memory.as_mut_ptr(), memory.len(), Box::new(Released(released.clone()))) }
    }

    #[test]
    fn a_big_read_waits_for_lent_memory_holding_its_slot_and_bytes_then_fills_it() {
        let pool = Pool::new(2, 4096);
        let released = std::sync::Arc::default();
        let LendingRead { path, data, job, done, asks } = lending_read("fill", &released);
        let ticket = pool.submit(job);
        assert_eq!(asks.recv().unwrap(), 50_000);
        let s = pool.stats();
        assert_eq!((s.awaiting_memory, s.open_files, s.bytes_in_flight), (1, 1, 50_000));
        let mut memory = vec![0u8; 50_000];
        assert!(pool.lend(&ticket, Some(lent_memory(&mut memory, &released))));
        let (outcome, let_go) = done.recv().unwrap();
        assert!(matches!(outcome, Ok(Filled::Lent(50_000))), "{outcome:?}");
        assert!(let_go, "the memory is let go before the outcome is delivered");
        assert!(memory == data, "the file is in the lent memory");
        let s = pool.stats();
        assert_eq!((s.awaiting_memory, s.open_files, s.bytes_in_flight), (0, 0, 0));
        assert_eq!(crate::test_files::fds_open_on(&path), 0);
        assert!(asks.try_recv().is_err(), "asked once");
    }

    #[test]
    fn cancelling_a_read_that_waits_for_memory_frees_what_it_holds() {
        let pool = Pool::new(2, 4096);
        let released = std::sync::Arc::default();
        let LendingRead { path, job, done, asks, .. } = lending_read("cancel", &released);
        let ticket = pool.submit(job);
        asks.recv().unwrap();
        assert!(pool.cancel(&ticket), "it was waiting, so it is released here");
        assert!(matches!(done.recv().unwrap().0, Err(ReadError::Cancelled)));
        let s = pool.stats();
        assert_eq!((s.awaiting_memory, s.open_files, s.bytes_in_flight), (0, 0, 0));
        assert_eq!(crate::test_files::fds_open_on(&path), 0);
        // Memory lent too late is let go at once.
        let mut memory = vec![0u8; 50_000];
        assert!(!pool.lend(&ticket, Some(lent_memory(&mut memory, &released))));
        assert!(released.load(std::sync::atomic::Ordering::SeqCst));
    }

    #[test]
    fn a_read_allocates_its_own_memory_when_none_is_lent_others_are_in_flight_or_its_size_is_not_lent_for() {
        let pool = Pool::new(2, 4096);
        let released = std::sync::Arc::default();
        let first = lending_read("first", &released);
        let (data, first_done) = (first.data, first.done);
        let ticket = pool.submit(first.job);
        first.asks.recv().unwrap();
        // The first holds its bytes while it waits: the second is not alone, so it is
        // not lent memory (it would outlive young collections).
        let second = lending_read("second", &released);
        pool.submit(second.job);
        let (outcome, _) = second.done.recv().unwrap();
        assert_eq!(*pooled_only(outcome.unwrap()), data[..]);
        assert!(second.asks.try_recv().is_err(), "the second never asked");
        // No memory to lend: the first allocates its own.
        assert!(pool.lend(&ticket, None));
        let (outcome, _) = first_done.recv().unwrap();
        assert_eq!(*pooled_only(outcome.unwrap()), data[..]);
        assert_eq!(pool.stats().bytes_in_flight, 0);
        // A file whose size is outside the sizes lent for, alone, is not asked either.
        let outside = lending_read_for("outside", &released, 1..50_000);
        pool.submit(outside.job);
        let (outcome, _) = outside.done.recv().unwrap();
        assert_eq!(*pooled_only(outcome.unwrap()), data[..]);
        assert!(outside.asks.try_recv().is_err(), "a 50,000-byte file is not in 1..50,000");
    }

    /// A burst of big and small reads of real files under tight admission limits:
    /// every result is whole, open files and granted bytes never pass the limits, and
    /// everything is given back at the end, which the pool's hook hears of.
    #[test]
    fn a_burst_stays_within_admission_limits() {
        use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
        static MOST_REPORTED: AtomicU64 = AtomicU64::new(0);
        static LAST_REPORTED: AtomicU64 = AtomicU64::new(u64::MAX);
        let hooks = crate::pool::Hooks {
            bytes_in_flight: Some(|bytes| {
                MOST_REPORTED.fetch_max(bytes, SeqCst);
                LAST_REPORTED.store(bytes, SeqCst);
            }),
            ..Default::default()
        };
        let pool = Pool::with_hooks(4, 4096, hooks);
        let big_len = 50_000usize;
        pool.set_admission_limits(Some(3), Some(2 * big_len as u64 + 1));
        let dir = tempfile::tempdir().unwrap();
        let big: Vec<u8> = (0..big_len).map(|i| (i * 7 % 251) as u8).collect();
        let small: Vec<u8> = (0..1000).map(|i| (i * 3 % 253) as u8).collect();
        let (big_path, small_path) = (dir.path().join("big"), dir.path().join("small"));
        std::fs::write(&big_path, &big).unwrap();
        std::fs::write(&small_path, &small).unwrap();
        let source = crate::read::tests::path_source;
        let limits = ReadLimits { chunk_size: 4096, admitted: true, ..Default::default() };
        let (tx, rx) = std::sync::mpsc::channel();
        let (big, small) = (std::sync::Arc::new(big), std::sync::Arc::new(small));
        let jobs: Vec<Box<dyn crate::job::Job>> = (0..80)
            .map(|i| {
                let (p, want) = if i % 2 == 0 { (&big_path, big.clone()) } else { (&small_path, small.clone()) };
                let tx = tx.clone();
                Box::new(ReadFileJob::new(source(p), limits, move |outcome: FilledOutcome| {
                    tx.send(outcome.map(|b| *pooled_only(b) == **want)).unwrap()
                })) as Box<dyn crate::job::Job>
            })
            .collect();
        // All at once, as a burst. (That the others wait is timing-free in the pool's
        // own tests; here a descheduled test thread may find them all done.)
        pool.submit_many(jobs);
        let (mut most_open, mut most_bytes, mut done) = (0, 0, 0);
        while done < 80 {
            let s = pool.stats();
            most_open = most_open.max(s.open_files);
            most_bytes = most_bytes.max(s.bytes_in_flight);
            while let Ok(outcome) = rx.try_recv() {
                assert_eq!(outcome, Ok(true), "a whole, correct result");
                done += 1;
            }
        }
        assert!(most_open <= 3, "open files {most_open}");
        assert!(most_bytes <= 2 * big_len as u64 + 1, "bytes in flight {most_bytes}");
        let s = pool.stats();
        assert_eq!((s.open_files, s.bytes_in_flight, s.waiting), (0, 0, 0));
        let most_reported = MOST_REPORTED.load(SeqCst);
        assert!((big_len as u64..=2 * big_len as u64 + 1).contains(&most_reported), "reported {most_reported}");
        assert_eq!(LAST_REPORTED.load(SeqCst), 0, "the bytes given back were reported before the outcomes");
        assert_eq!(crate::test_files::fds_open_on(&big_path) + crate::test_files::fds_open_on(&small_path), 0);
        dir.close().unwrap();
    }
}
