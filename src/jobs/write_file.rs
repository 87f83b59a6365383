//! A whole-file write (`writeFile`, `appendFile`) as a pool [`Job`]: the write
//! algorithm plus the code that receives its outcome. It shares the pool, the fair
//! queue and admission with the reads: a chunk written is charged its bytes as a
//! chunk read is.

use crate::at_exit::MustFinish;
use crate::error::ReadError;
use crate::job::{Data, Job, Step, Waits};
use crate::memory::borrowed::Borrowed;
use crate::pool::{Pool, Ticket};
use crate::write::{FileWrite, Target, WriteLimits};

/// What a write delivers: done, or why not.
pub type Outcome = Result<(), ReadError>;

/// A [`FileWrite`] run by the pool, handing its [`Outcome`] to `on_done` exactly once.
pub struct WriteFileJob<F> {
    write: FileWrite,
    /// The error that ended the write early, if any.
    error: Option<ReadError>,
    on_done: F,
    /// The keyed flow of its path's whole-file writes ([`path_flow`]), if it is not an
    /// append.
    path_flow: Option<u64>,
    /// Exit waits for it ([`crate::at_exit`]).
    _finish: MustFinish,
}

impl<F: FnOnce(Outcome) + Send + 'static> WriteFileJob<F> {
    pub fn new(target: Target, data: Borrowed, limits: WriteLimits, on_done: F) -> Self {
        let path_flow = match &target {
            Target::Path { path, flags, .. } if flags & libc::O_APPEND == 0 => Some(path_flow(path)),
            _ => None,
        };
        WriteFileJob {
            write: FileWrite::new(target, data, limits),
            error: None,
            on_done,
            path_flow,
            _finish: MustFinish::new(),
        }
    }
}

impl<F: FnOnce(Outcome) + Send + 'static> Job for WriteFileJob<F> {
    fn step(&mut self) -> Step {
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

    fn complete(self: Box<Self>) {
        let this = *self;
        let outcome = match this.error {
            Some(e) => Err(e),
            None => this.write.finish(),
        };
        (this.on_done)(outcome);
    }

    fn cancel(self: Box<Self>) {
        let this = *self;
        // Closes the fd and lets the caller's bytes go before anyone hears of it.
        drop(this.write);
        (this.on_done)(Err(ReadError::Cancelled));
    }

    fn fail(self: Box<Self>) {
        let WriteFileJob { write, on_done, .. } = *self;
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(write)));
        on_done(Err(ReadError::Panicked));
    }

    /// It waits for its slot, its bytes, or a close after EMFILE.
    fn waits(&mut self) -> Option<&mut dyn Waits> {
        Some(&mut self.write)
    }
}

/// The keyed flow of the whole-file writes to `path`: a hash of its absolute, lexically
/// normalised spelling (`//` and `.` dropped; `..` kept, since a symlink may precede
/// it), with bit 62 set so that it meets neither a stream's flow (counted up from 1)
/// nor an fd's (bit 63). Two spellings through a symlink are two flows; a hash that
/// collides only orders two writes that need not be.
pub fn path_flow(path: &std::ffi::CStr) -> u64 {
    use std::hash::{Hash, Hasher};
    let bytes = path.to_bytes();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    if bytes.first() != Some(&b'/') {
        if let Ok(cwd) = std::env::current_dir() {
            for part in cwd.as_os_str().as_encoded_bytes().split(|&b| b == b'/').filter(|p| !p.is_empty() && *p != b".")
            {
                part.hash(&mut hasher);
            }
        }
    }
    for part in bytes.split(|&b| b == b'/').filter(|p| !p.is_empty() && *p != b".") {
        part.hash(&mut hasher);
    }
    (1 << 62) | (hasher.finish() & ((1 << 62) - 1))
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
        assert_eq!(path_flow(&c_path(&p)), path_flow(&c_path(&dir.path().join("./f"))));
        assert_ne!(path_flow(&c_path(&p)), path_flow(&c_path(&dir.path().join("g"))));
    }
}
