//! The fd primitives of writing as pool jobs: `fs.write`, `fs.writev`, `fs.fsync`,
//! `fs.fdatasync` and `fs.close`, one request each, as libuv runs them.
//!
//! Requests on one fd form one keyed flow of the fair queue ([`fd_flow`]), served one
//! at a time in the order they were made (never started early): a WriteStream's
//! writes, then its `fsync` and `close`, reach the fd in that order, as node:fs's one
//! write in flight ensures, and so do a logger's `fs.write` calls that do not wait.
//! A write is one step, charged all its bytes: one call's bytes are never cut, so an
//! append lands whole.

use std::sync::Arc;

use crate::at_exit::MustFinish;
use crate::error::ReadError;
use crate::job::{Data, Job, Step};
pub use crate::jobs::write_chain::WriteChain;
use crate::memory::borrowed::Borrowed;
use crate::sys::{self, Fd};

/// What to do with the fd.
#[derive(Debug)]
pub enum FdOp {
    /// Write every byte of `bufs` in order, at `position` (then on from there) or at
    /// the fd's position: libuv's `uv__fs_write_all`, which writes again after a short
    /// write, and after an error that follows some bytes reports the bytes (the next
    /// call meets the error). A write of a `chain` (a WriteStream's) runs only while
    /// the chain is whole ([`WriteChain`]).
    Write { bufs: Vec<Borrowed>, position: Option<u64>, chain: Option<Arc<WriteChain>> },
    /// `fsync`, or `fdatasync` with `data_only`.
    Sync { data_only: bool },
    /// `close`.
    Close,
}

/// The keyed flow of an fd's requests. Stream flows count up from 1; an fd's key has
/// the top bit set, so the two never meet.
pub fn fd_flow(fd: Fd) -> u64 {
    (1 << 63) | fd as u32 as u64
}

/// One request on an fd, handing its outcome (bytes written; 0 for the others) to
/// `on_done` exactly once.
pub struct FdJob<F> {
    fd: Fd,
    op: Option<FdOp>,
    outcome: Option<Result<usize, ReadError>>,
    on_done: F,
    /// Exit waits for it ([`crate::at_exit`]).
    _finish: MustFinish,
}

impl<F: FnOnce(Result<usize, ReadError>) + Send + 'static> FdJob<F> {
    pub fn new(fd: Fd, op: FdOp, on_done: F) -> Self {
        FdJob { fd, op: Some(op), outcome: None, on_done, _finish: MustFinish::new() }
    }
}

/// Writes all of `bufs`, as libuv's `uv__fs_write_all`.
fn write_all(fd: Fd, bufs: &[Borrowed], mut position: Option<u64>) -> Result<usize, ReadError> {
    let mut slices: Vec<&[u8]> = bufs.iter().map(Borrowed::as_slice).filter(|s| !s.is_empty()).collect();
    let total: usize = slices.iter().map(|s| s.len()).sum();
    if slices.is_empty() {
        // A write of nothing still reaches the kernel, which may refuse the fd.
        return Ok(sys::write::write_vectored(fd, &[&[]], position)?);
    }
    let mut written = 0;
    while written < total {
        let n = match sys::write::write_vectored(fd, &slices, position) {
            Ok(0) => break,
            Ok(n) => n,
            Err(_) if written > 0 => break,
            Err(e) => return Err(e.into()),
        };
        written += n;
        position = position.map(|p| p + n as u64);
        // Drop what was written from the front.
        let mut left = n;
        while left > 0 {
            if slices[0].len() <= left {
                left -= slices[0].len();
                slices.remove(0);
            } else {
                slices[0] = &slices[0][left..];
                left = 0;
            }
        }
    }
    Ok(written)
}

/// A write of `chain`: cancelled, unwritten, once the chain is broken ([`WriteChain`]).
fn write_in_chain(fd: Fd, chain: &WriteChain, bufs: Vec<Borrowed>, position: Option<u64>) -> Result<usize, ReadError> {
    let total: usize = bufs.iter().map(|b| b.as_slice().len()).sum();
    chain.run(total, || write_all(fd, &bufs, position)).unwrap_or(Err(ReadError::Cancelled))
}

impl<F: FnOnce(Result<usize, ReadError>) + Send + 'static> Job for FdJob<F> {
    fn step(&mut self) -> Step {
        let outcome = match self.op.take().expect("an FdJob runs once") {
            FdOp::Write { bufs, position, chain: Some(chain) } => write_in_chain(self.fd, &chain, bufs, position),
            FdOp::Write { bufs, position, chain: None } => write_all(self.fd, &bufs, position),
            FdOp::Sync { data_only: false } => sys::write::fsync(self.fd).map(|()| 0).map_err(Into::into),
            FdOp::Sync { data_only: true } => sys::write::fdatasync(self.fd).map(|()| 0).map_err(Into::into),
            FdOp::Close => sys::close(self.fd).map(|()| 0).map_err(Into::into),
        };
        let bytes = *outcome.as_ref().unwrap_or(&0);
        self.outcome = Some(outcome);
        Step { bytes, done: true }
    }

    fn data(&self) -> Data {
        Data::Written
    }

    fn flow(&self) -> Option<u64> {
        Some(fd_flow(self.fd))
    }

    /// An fd's requests run in the order they were made.
    fn in_order(&self) -> bool {
        true
    }

    fn complete(self: Box<Self>) {
        let this = *self;
        (this.on_done)(this.outcome.unwrap_or(Err(ReadError::Panicked)));
    }

    fn cancel(self: Box<Self>) {
        let this = *self;
        drop(this.op); // lets the caller's bytes go before anyone hears of it
        (this.on_done)(Err(ReadError::Cancelled));
    }
}

#[cfg(all(test, not(fairfs_loom)))]
mod tests {
    use super::*;
    use crate::pool::Pool;
    use std::os::fd::AsRawFd;

    fn run(pool: &Pool, fd: Fd, op: FdOp) -> std::sync::mpsc::Receiver<Result<usize, ReadError>> {
        let (tx, rx) = std::sync::mpsc::channel();
        pool.submit(Box::new(FdJob::new(fd, op, move |o| tx.send(o).unwrap())));
        rx
    }

    fn write(bufs: &[&[u8]], position: Option<u64>) -> FdOp {
        FdOp::Write { bufs: bufs.iter().map(|b| Borrowed::owned(b.to_vec())).collect(), position, chain: None }
    }

    /// A write of `bufs` at the fd's position, in `chain`.
    fn chained(bufs: &[&[u8]], chain: &Arc<WriteChain>) -> FdOp {
        FdOp::Write {
            bufs: bufs.iter().map(|b| Borrowed::owned(b.to_vec())).collect(),
            position: None,
            chain: Some(chain.clone()),
        }
    }

    #[test]
    fn writes_on_one_fd_land_in_the_order_they_were_made() {
        let pool = Pool::new(4, 4096);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let file = std::fs::File::create(&p).unwrap();
        let fd = file.as_raw_fd();
        let pieces: Vec<Vec<u8>> = (0..200u32).map(|i| format!("{i:05},").into_bytes()).collect();
        let waits: Vec<_> = pieces.iter().map(|piece| run(&pool, fd, write(&[piece], None))).collect();
        let synced = run(&pool, fd, FdOp::Sync { data_only: true });
        for (w, piece) in waits.iter().zip(&pieces) {
            assert_eq!(w.recv().unwrap(), Ok(piece.len()));
        }
        assert_eq!(synced.recv().unwrap(), Ok(0));
        assert_eq!(std::fs::read(&p).unwrap(), pieces.concat());
        assert_eq!(pool.stats().bytes_written, pieces.concat().len() as u64);
    }

    #[test]
    fn a_chain_stops_after_a_write_that_falls_short() {
        let pool = Pool::new(2, 4096);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let file = std::fs::File::create(&p).unwrap();
        let fd = file.as_raw_fd();
        let chain = Arc::new(WriteChain::default());
        let first = run(&pool, fd, chained(&[b"ab", b"cd"], &chain));
        let second = run(&pool, fd, chained(&[b"ef"], &chain));
        assert_eq!(first.recv().unwrap(), Ok(4));
        assert_eq!(second.recv().unwrap(), Ok(2));
        assert!(!chain.is_broken(), "whole writes keep the chain");
        // On a read-only fd a write fails: the chain breaks, and its next write does not
        // run (an unchained one on the same fd still meets EBADF).
        let read_only = std::fs::File::open(&p).unwrap();
        let ro = read_only.as_raw_fd();
        let chain = Arc::new(WriteChain::default());
        let failed = run(&pool, ro, chained(&[b"x"], &chain));
        let skipped = run(&pool, ro, chained(&[b"y"], &chain));
        let plain = run(&pool, ro, write(&[b"z"], None));
        let ebadf = Err(ReadError::Io(crate::FsError::new(libc::EBADF, crate::Syscall::Write)));
        assert_eq!(failed.recv().unwrap(), ebadf);
        assert_eq!(skipped.recv().unwrap(), Err(ReadError::Cancelled));
        assert_eq!(plain.recv().unwrap(), ebadf);
        assert!(chain.is_broken());
        assert_eq!(std::fs::read(&p).unwrap(), b"abcdef");
    }

    #[test]
    fn writev_at_a_position_and_errors_as_libuv() {
        let pool = Pool::new(2, 4096);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"0123456789").unwrap();
        let file = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        let fd = file.as_raw_fd();
        assert_eq!(run(&pool, fd, write(&[b"ab", b"", b"cd"], Some(3))).recv().unwrap(), Ok(4));
        assert_eq!(std::fs::read(&p).unwrap(), b"012abcd789");
        assert_eq!(run(&pool, fd, FdOp::Sync { data_only: false }).recv().unwrap(), Ok(0));
        let read_only = std::fs::File::open(&p).unwrap();
        let e = run(&pool, read_only.as_raw_fd(), write(&[b"x"], None)).recv().unwrap();
        assert_eq!(e, Err(ReadError::Io(crate::FsError::new(libc::EBADF, crate::Syscall::Write))));
        let e = run(&pool, read_only.as_raw_fd(), write(&[], None)).recv().unwrap();
        assert_eq!(
            e,
            Err(ReadError::Io(crate::FsError::new(libc::EBADF, crate::Syscall::Write))),
            "nothing to write still asks"
        );
        let raw = std::os::fd::IntoRawFd::into_raw_fd(file);
        assert_eq!(run(&pool, raw, FdOp::Close).recv().unwrap(), Ok(0));
        let e = run(&pool, raw, FdOp::Close).recv().unwrap();
        assert_eq!(e, Err(ReadError::Io(crate::FsError::new(libc::EBADF, crate::Syscall::Close))));
    }
}
