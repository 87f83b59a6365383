//! A whole-file write (`writeFile`, `appendFile`) as a pool [`Job`]: the write
//! algorithm plus the code that receives its outcome. It shares the pool, the fair
//! queue and admission with the reads: a chunk written is charged its bytes as a
//! chunk read is.

use crate::at_exit::MustFinish;
use crate::error::ReadError;
use crate::job::{Data, Job, Step, Wait, Waits};
use crate::memory::borrowed::Borrowed;
use crate::pool::{Pool, Ticket};
use crate::write::{FileWrite, Target, WriteLimits};

use super::file_turns::{turns, Resume, Turn};
use super::write_flow::{file_flow, spelling_flow};

/// What a write delivers: done, or why not.
pub type Outcome = Result<(), ReadError>;

/// A [`FileWrite`] run by the pool, handing its [`Outcome`] to `on_done` exactly once.
pub struct WriteFileJob<F> {
    write: FileWrite,
    /// The error that ended the write early, if any.
    error: Option<ReadError>,
    on_done: F,
    /// The keyed flow of its path's whole-file writes as spelled
    /// ([`super::write_flow`]), if it is not an append.
    path_flow: Option<u64>,
    /// Its turn at the file its path leads to, or its place in line, once its first
    /// step found which file that is ([`super::file_turns`]).
    turn: Option<Turn>,
    /// It waits for that turn.
    waiting: bool,
    /// Exit waits for it ([`crate::at_exit`]).
    _finish: MustFinish,
}

impl<F: FnOnce(Outcome) + Send + 'static> WriteFileJob<F> {
    pub fn new(target: Target, data: Borrowed, limits: WriteLimits, on_done: F) -> Self {
        let path_flow = match &target {
            Target::Path { path, flags, .. } if flags & libc::O_APPEND == 0 => Some(spelling_flow(path)),
            _ => None,
        };
        WriteFileJob {
            write: FileWrite::new(target, data, limits),
            error: None,
            on_done,
            path_flow,
            turn: None,
            waiting: false,
            _finish: MustFinish::new(),
        }
    }
}

impl<F: FnOnce(Outcome) + Send + 'static> Job for WriteFileJob<F> {
    fn step(&mut self) -> Step {
        if self.path_flow.is_some() && !self.my_turn() {
            return Step { bytes: 0, done: false }; // waits for it (Wait::Turn) holding no fd
        }
        match self.write.step() {
            Ok((bytes, done)) => Step { bytes, done },
            Err(e) => {
                self.error = Some(e);
                Step { bytes: 0, done: true }
            }
        }
    }

    fn data(&self) -> Data {
        Data::Written
    }

    /// Whole-file writes to one path run one at a time, in the order made, so two
    /// racing calls end as one of them, never as a mixture with holes where one's
    /// truncate cut under the other's later chunks. Appends need no order: each lands
    /// whole.
    fn flow(&self) -> Option<u64> {
        self.path_flow
    }

    fn in_order(&self) -> bool {
        self.path_flow.is_some()
    }

    fn flow_outlives_requests(&self) -> bool {
        false
    }

    /// Copies more than one chunk: the governor's limit on big copies applies to it
    /// as to a big read ([`crate::policy::contention`]).
    fn is_large(&self) -> bool {
        self.write.is_large()
    }

    /// The file is closed, then the turn ends, then the caller hears: a write it makes
    /// next to the file finds the turn free.
    fn complete(self: Box<Self>) {
        let WriteFileJob { write, error, on_done, turn, .. } = *self;
        let outcome = match error {
            Some(e) => Err(e),
            None => write.finish(),
        };
        drop(turn);
        on_done(outcome);
    }

    fn cancel(self: Box<Self>) {
        let WriteFileJob { write, on_done, turn, .. } = *self;
        // Closes the fd and lets the caller's bytes go before anyone hears of it.
        drop(write);
        drop(turn);
        on_done(Err(ReadError::Cancelled));
    }

    fn fail(self: Box<Self>) {
        let WriteFileJob { write, on_done, turn, .. } = *self;
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(write)));
        drop(turn);
        on_done(Err(ReadError::Panicked));
    }

    /// It waits for its slot, its turn at its file, its bytes, or a close after EMFILE.
    fn waits(&mut self) -> Option<&mut dyn Waits> {
        Some(self)
    }
}

/// The write's own waits, and one more: for its turn at the file its path leads to.
impl<F: FnOnce(Outcome) + Send + 'static> Waits for WriteFileJob<F> {
    fn opens_file(&self) -> bool {
        self.write.opens_file()
    }
    fn wait(&self) -> Wait {
        if self.waiting {
            return Wait::Turn;
        }
        self.write.wait()
    }
    fn set_aside(&mut self, resume: Resume) -> Option<Resume> {
        match &self.turn {
            Some(turn) => turn.when_mine(resume),
            None => Some(resume),
        }
    }
    fn grant(&mut self) {
        self.write.grant()
    }
    fn give_up(&mut self) {
        self.write.give_up()
    }
}

impl<F> WriteFileJob<F> {
    /// Whether it holds its file's turn; on its first step (on a worker: finding where
    /// the path leads may wait on the file system), asks for it. Before anything is
    /// opened, so that two writes to one file never truncate under each other.
    fn my_turn(&mut self) -> bool {
        let (write, spelling) = (&self.write, self.path_flow.unwrap_or_default());
        // Where the file cannot be told, its spelling: the open fails, or meets only
        // writes through that spelling.
        let mine =
            Turn::ask(&mut self.turn, turns(), || file_flow(write.path().expect("a path's write")).unwrap_or(spelling));
        // Later asks: put back by the turn's end, or handed back by set_aside.
        self.waiting = !mine;
        mine
    }
}

/// Writes `data` to `target` through `pool` and waits for the outcome.
pub fn write_blocking(pool: &Pool, target: Target, data: Borrowed, limits: WriteLimits) -> Outcome {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    submit_write(pool, target, data, limits, move |outcome| {
        let _ = tx.send(outcome);
    });
    rx.recv().unwrap_or(Err(ReadError::Cancelled))
}

/// Submits a write of `data` to `target`; `on_done` runs on a pool thread (or on the
/// cancelling thread) with the outcome.
pub fn submit_write<F>(pool: &Pool, target: Target, data: Borrowed, limits: WriteLimits, on_done: F) -> Ticket
where
    F: FnOnce(Outcome) + Send + 'static,
{
    pool.submit(Box::new(WriteFileJob::new(target, data, limits, on_done)))
}

#[cfg(all(test, not(fairfs_loom)))]
mod tests {
    use super::*;
    use crate::test_files::{c_path, fds_open_on, pattern};

    #[test]
    fn big_writes_through_the_pool_are_whole_and_counted_as_written() {
        let pool = Pool::new(4, 4096);
        let dir = tempfile::tempdir().unwrap();
        for len in [0usize, 4096, 4097, 1_048_576 + 3] {
            let p = dir.path().join(format!("{len}"));
            let data = pattern(len);
            let target =
                Target::Path { path: c_path(&p), flags: libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC, mode: 0o666 };
            let limits = WriteLimits { chunk_size: 4096, admitted: true, ..Default::default() };
            let before = pool.stats();
            write_blocking(&pool, target, Borrowed::owned(data.clone()), limits).unwrap();
            assert!(std::fs::read(&p).unwrap() == data, "len {len}");
            let after = pool.stats();
            assert_eq!(after.bytes_written - before.bytes_written, len as u64);
            assert_eq!(after.chunks_written - before.chunks_written, len.div_ceil(4096) as u64);
            assert_eq!((after.bytes_read, after.chunks_read), (before.bytes_read, before.chunks_read));
            assert_eq!((after.open_files, after.bytes_in_flight), (0, 0), "admission got everything back");
            assert_eq!(fds_open_on(&p), 0);
        }
    }

    /// Appends from many writers to one file, each bigger than a chunk, all at once:
    /// every record lands whole.
    #[test]
    fn concurrent_appends_land_whole() {
        let pool = Pool::new(4, 512);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log");
        let (tx, rx) = std::sync::mpsc::channel();
        // A byte of its own per record, so that a torn one shows.
        let records: Vec<Vec<u8>> = (1..=64u8).map(|i| vec![i; 3000 + i as usize]).collect();
        for r in &records {
            let target =
                Target::Path { path: c_path(&p), flags: libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND, mode: 0o666 };
            let limits = WriteLimits { chunk_size: 512, admitted: true, ..Default::default() };
            let tx = tx.clone();
            submit_write(&pool, target, Borrowed::owned(r.clone()), limits, move |o| tx.send(o).unwrap());
        }
        for _ in &records {
            rx.recv().unwrap().unwrap();
        }
        let mut log = &std::fs::read(&p).unwrap()[..];
        let mut seen = vec![false; records.len()];
        while !log.is_empty() {
            let i = records.iter().position(|r| log.starts_with(r) && log.get(r.len()) != Some(&r[0]));
            let i = i.expect("the log is whole records one after another");
            assert!(!seen[i], "each record once");
            seen[i] = true;
            log = &log[records[i].len()..];
        }
        assert!(seen.iter().all(|&s| s));
    }

    /// Two whole-file writes to one path at once, one long and one short, cut into
    /// small chunks: they run in the order made, so the file ends as the second, never
    /// with the first's later chunks past a hole the second's truncate left.
    #[test]
    fn racing_writes_to_one_path_run_in_call_order() {
        let pool = Pool::new(4, 4096);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let (long, short) = (vec![b'a'; 64 * 4096], vec![b'b'; 4096 * 3 + 5]);
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC;
        let limits = WriteLimits { chunk_size: 4096, ..Default::default() };
        for round in 0..20 {
            let (tx, rx) = std::sync::mpsc::channel();
            let spellings = [c_path(&p), c_path(&dir.path().join(".//f"))];
            for (data, path) in [(&long, spellings[0].clone()), (&short, spellings[1].clone())] {
                let tx = tx.clone();
                let target = Target::Path { path, flags, mode: 0o666 };
                submit_write(&pool, target, Borrowed::owned(data.clone()), limits, move |o| tx.send(o).unwrap());
            }
            rx.recv().unwrap().unwrap();
            rx.recv().unwrap().unwrap();
            assert!(std::fs::read(&p).unwrap() == short, "round {round}: the second write, whole");
        }
        // The worker ends the flow's turn just after it delivers the outcome.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while pool.stats().stream_flows > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(pool.stats().stream_flows, 0, "each path's flow forgotten once its writes are done");
    }

    /// The same race with the second write through other names of the file: each asks
    /// for its file's turn before it opens, so the file ends as one of them, whole,
    /// whichever asked first.
    #[test]
    fn racing_writes_through_other_names_of_one_file_take_turns() {
        let pool = Pool::new(4, 4096);
        race_through_other_names(&pool, &pool);
    }

    /// The same with each name's write in a pool of its own, as when a symlinked path
    /// goes to a lane ([`crate::lanes`]): the turn is the process's, not a pool's.
    #[test]
    fn racing_writes_through_other_names_in_two_pools_take_turns() {
        let (first, second) = (Pool::new(2, 4096), Pool::new(2, 4096));
        race_through_other_names(&first, &second);
        assert_eq!(second.stats().awaiting_turn, 0);
    }

    fn race_through_other_names(pool: &Pool, other_pool: &Pool) {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(real.join("d")).unwrap();
        let p = real.join("d/f");
        std::os::unix::fs::symlink(&p, real.join("link")).unwrap();
        std::os::unix::fs::symlink(real.join("d"), real.join("dirlink")).unwrap();
        let (long, short) = (vec![b'a'; 64 * 4096], vec![b'b'; 4096 * 3 + 5]);
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC;
        let limits = WriteLimits { chunk_size: 4096, admitted: true, ..Default::default() };
        let mut seen = [0, 0];
        for other in ["link", "dirlink//f", "d/../link"] {
            for round in 0..10 {
                let (tx, rx) = std::sync::mpsc::channel();
                for (data, path, pool) in [(&long, c_path(&p), pool), (&short, c_path(&real.join(other)), other_pool)] {
                    let tx = tx.clone();
                    let target = Target::Path { path, flags, mode: 0o666 };
                    submit_write(pool, target, Borrowed::owned(data.clone()), limits, move |o| tx.send(o).unwrap());
                }
                rx.recv().unwrap().unwrap();
                rx.recv().unwrap().unwrap();
                let got = std::fs::read(&p).unwrap();
                assert!(got == short || got == long, "{other}, round {round}: one write, whole ({} bytes)", got.len());
                seen[(got == long) as usize] += 1;
            }
        }
        let s = pool.stats();
        assert_eq!((s.open_files, s.bytes_in_flight, s.awaiting_turn), (0, 0, 0), "admission got everything back");
        eprintln!("ended as the short write {} times, the long one {}", seen[0], seen[1]);
    }

    /// Many writes through two names at once on a pool of one worker: those that wait
    /// for the turn leave the queue and hold no worker, or the writer ahead could never
    /// finish.
    #[test]
    fn writes_waiting_for_the_turn_hold_no_worker() {
        let pool = Pool::new(1, 4096);
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        let p = real.join("f");
        std::os::unix::fs::symlink(&p, real.join("link")).unwrap();
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC;
        let limits = WriteLimits { chunk_size: 4096, admitted: true, ..Default::default() };
        let (tx, rx) = std::sync::mpsc::channel();
        let datas: Vec<Vec<u8>> = (0..8u8).map(|i| vec![b'0' + i; 4096 * 4 + i as usize]).collect();
        for (i, data) in datas.iter().enumerate() {
            let path = c_path(&if i % 2 == 0 { p.clone() } else { real.join("link") });
            let tx = tx.clone();
            let target = Target::Path { path, flags, mode: 0o666 };
            submit_write(&pool, target, Borrowed::owned(data.clone()), limits, move |o| tx.send(o).unwrap());
        }
        for _ in &datas {
            rx.recv_timeout(std::time::Duration::from_secs(10)).expect("a write waited forever").unwrap();
        }
        let got = std::fs::read(&p).unwrap();
        assert!(datas.contains(&got), "one write, whole");
        assert_eq!(pool.stats().awaiting_turn, 0);
    }
}
