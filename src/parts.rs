//! Several workers on one file: a read of known size (a whole file, or a stretch of
//! one: a stream's block) split into parts that different pool threads fill at the
//! same time, each with `pread` at its own offset into its own stretch of the one
//! result buffer.
//!
//! ```text
//!   result buffer   [ part 0 | part 1 | part 2 | ... | part n-1 ]
//!   read by           step     worker B   worker C      step, which then waits
//! ```
//!
//! * Parts are handed out in order, so the stretches handed out are always a prefix
//!   of the buffer and no two overlap.
//! * A part that meets end of file early (the file shrank) lowers the result's end,
//!   and nothing past it is handed out. The result is the prefix up to the lowest end
//!   seen: what a sequential read would give.
//! * The buffer is pooled, or memory the caller lent ([`crate::memory::lent`]).
//! * [`Parts`] owns the buffer. It waits for every part handed out before it gives
//!   the buffer away ([`Parts::finish`]) or frees it (drop), so a part never writes
//!   into memory that anyone else can see.

use std::mem::MaybeUninit;

use crate::error::{FsError, Syscall};
use crate::job::Piece;
use crate::loom::sync::{Arc, Condvar, Mutex, MutexGuard};
use crate::memory::buffer_pool::PooledBytes;
use crate::memory::lent::{Filled, Lent};
use crate::sys::{self, Fd};

/// What the parts handed out so far have done.
#[derive(Debug)]
struct Tally {
    /// Parts handed out and not yet finished (read, or dropped unread).
    in_flight: usize,
    /// Where the result ends: the file size, or lower where a part met end of file.
    end: usize,
    /// The first error a part met.
    error: Option<FsError>,
}

#[derive(Debug)]
struct Shared {
    tally: Mutex<Tally>,
    /// Signalled when the last part in flight finishes.
    idle: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Tally> {
        self.tally.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The memory parts are read into.
#[derive(Debug)]
enum Memory {
    Pooled(PooledBytes),
    Lent(Lent),
}

/// The owner's side: the result buffer and the parts of it handed out so far.
#[derive(Debug)]
pub struct Parts {
    shared: Arc<Shared>,
    fd: Fd,
    memory: Memory,
    /// The start of the memory (a pooled buffer's spare capacity), taken once so that
    /// parts never need a reference to it while others write into it.
    base: *mut MaybeUninit<u8>,
    /// Where in the file the buffer's first byte comes from.
    start: u64,
    size: usize,
    /// Bytes handed out so far, from the start.
    claimed: usize,
}

// SAFETY: `base` points into `memory`, which `Parts` owns and moves with it; a pooled
// buffer's heap block does not move, and lent memory never moves. Parts are only
// handed out through `&mut self`.
unsafe impl Send for Parts {}

/// One stretch of the result buffer, read by whichever thread holds it. The owner
/// counts it as in flight until it is dropped.
#[derive(Debug)]
pub struct Part {
    shared: Arc<Shared>,
    fd: Fd,
    ptr: *mut MaybeUninit<u8>,
    /// Where in the file the buffer starts; the part reads at `start + offset`.
    start: u64,
    offset: usize,
    len: usize,
    read: bool,
}

// SAFETY: `ptr..ptr + len` belongs to this part alone (see `Part::read`), and the
// buffer outlives it because `Parts` waits for every part before freeing it.
unsafe impl Send for Part {}

impl Parts {
    /// Parts of a `size`-byte read of `fd` into `buf` (empty, capacity >= `size`).
    /// `fd` must stay open until the parts are done: drop or finish `Parts` first.
    pub fn new(fd: Fd, buf: PooledBytes, size: usize) -> Parts {
        Parts::at(fd, buf, 0, size)
    }

    /// Parts of a `size`-byte read of `fd` from `start` into `buf` (a stretch of a
    /// file, as a stream's block is); as [`Parts::new`].
    pub fn at(fd: Fd, mut buf: PooledBytes, start: u64, size: usize) -> Parts {
        let spare = buf.vec_mut().spare_capacity_mut();
        assert!(spare.len() >= size, "the buffer must hold the whole stretch");
        let base = spare.as_mut_ptr();
        Parts::over(fd, Memory::Pooled(buf), base, start, size)
    }

    /// Parts of a `size`-byte read of `fd` into the memory `lent` (of `size` bytes
    /// or more); as [`Parts::new`].
    pub fn into_lent(fd: Fd, mut lent: Lent, size: usize) -> Parts {
        assert!(lent.len() >= size, "the memory must hold the whole file");
        let base = lent.base();
        Parts::over(fd, Memory::Lent(lent), base, 0, size)
    }

    fn over(fd: Fd, memory: Memory, base: *mut MaybeUninit<u8>, start: u64, size: usize) -> Parts {
        let shared = Arc::new(Shared {
            tally: Mutex::new(Tally { in_flight: 0, end: size, error: None }),
            idle: Condvar::new(),
        });
        Parts { shared, fd, memory, base, start, size, claimed: 0 }
    }

    /// Bytes not handed out yet.
    pub fn unclaimed(&self) -> usize {
        self.size - self.claimed
    }

    /// Whether `claim` would hand out another part.
    pub fn has_more(&self) -> bool {
        self.more(&self.shared.lock())
    }

    fn more(&self, tally: &Tally) -> bool {
        self.claimed < self.size && tally.error.is_none() && tally.end == self.size
    }

    /// Hands out the next part, of up to `len` bytes; `None` once everything has
    /// been handed out or a part met an error or end of file.
    pub fn claim(&mut self, len: usize) -> Option<Part> {
        let mut tally = self.shared.lock();
        if !self.more(&tally) {
            return None;
        }
        tally.in_flight += 1;
        drop(tally);
        let offset = self.claimed;
        let len = len.max(1).min(self.size - offset);
        self.claimed += len;
        Some(Part {
            shared: self.shared.clone(),
            fd: self.fd,
            ptr: self.base,
            start: self.start,
            offset,
            len,
            read: false,
        })
    }

    /// Hands out the next part, of `len` bytes, for another worker, unless it would be
    /// the last: that one is left to the owner's own step, which then waits for the
    /// others ([`Parts::finish`]).
    pub fn claim_spare(&mut self, len: usize) -> Option<Part> {
        if self.unclaimed() <= len {
            return None;
        }
        self.claim(len)
    }

    /// Waits until no part is in flight.
    fn wait(&self) -> MutexGuard<'_, Tally> {
        let mut tally = self.shared.lock();
        while tally.in_flight > 0 {
            tally = self.shared.idle.wait(tally).unwrap_or_else(|p| p.into_inner());
        }
        tally
    }

    /// Waits for the parts in flight, then gives the result: the bytes up to the
    /// lowest end of file seen, or the first error. Lent memory is let go first.
    pub fn finish(mut self) -> Result<Filled, FsError> {
        let tally = self.wait();
        if let Some(e) = tally.error {
            return Err(e);
        }
        let len = tally.end.min(self.claimed);
        drop(tally);
        match std::mem::replace(&mut self.memory, Memory::Pooled(PooledBytes::unpooled(Vec::new()))) {
            Memory::Pooled(mut buf) => {
                // SAFETY: no part is in flight, and parts covering [0, claimed) each
                // either filled their stretch or lowered `end` to where their data
                // stops, so the first `len` bytes are initialised.
                unsafe { buf.vec_mut().set_len(len) };
                Ok(Filled::Pooled(buf))
            }
            Memory::Lent(lent) => {
                drop(lent);
                Ok(Filled::Lent(len))
            }
        }
    }
}

impl Drop for Parts {
    /// A cancelled or failed read frees its buffer only after the parts still being
    /// read are done with it (at most one chunk each).
    fn drop(&mut self) {
        drop(self.wait());
    }
}

impl Part {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The part as a pool [`Piece`], for the worker that takes it to read.
    pub fn into_piece(mut self) -> Piece {
        Piece::new(self.len, move || self.read())
    }

    /// Reads the part with `pread` at its own offset, until it is full or the file
    /// ends. Returns the bytes read. Read once; the owner learns that the part is
    /// done when it is dropped.
    pub fn read(&mut self) -> usize {
        assert!(!self.read, "a part is read once");
        // SAFETY: `offset + len <= size <= capacity`, so the stretch lies inside the
        // buffer; `claim` hands each byte out once, so no other part aliases it; and
        // the owner does not touch the buffer until this part is finished.
        let dst = unsafe { std::slice::from_raw_parts_mut(self.ptr.add(self.offset), self.len) };
        let mut done = 0;
        let outcome = loop {
            if done == self.len {
                break Ok(());
            }
            match sys::read_uninit(self.fd, &mut dst[done..], Some(self.start + (self.offset + done) as u64)) {
                Ok(0) => break Ok(()),
                Ok(n) => done += n,
                Err(e) => break Err(e),
            }
        };
        let mut tally = self.shared.lock();
        match outcome {
            Ok(()) if done < self.len => tally.end = tally.end.min(self.offset + done),
            Ok(()) => {}
            Err(e) => {
                tally.error.get_or_insert(e);
            }
        }
        self.read = true;
        done
    }
}

impl Drop for Part {
    fn drop(&mut self) {
        let mut tally = self.shared.lock();
        if !self.read {
            // Only a cancelled read drops a part unread; make sure it never completes.
            tally.error.get_or_insert(FsError::cancelled(Syscall::Read));
        }
        tally.in_flight -= 1;
        if tally.in_flight == 0 {
            self.shared.idle.notify_all();
        }
    }
}

#[cfg(all(test, not(fairfs_loom)))]
mod tests {
    use super::*;
    #[cfg(unix)]
    use std::os::fd::AsRawFd;

    fn file(name: &str, data: &[u8]) -> std::fs::File {
        let p = std::env::temp_dir().join(format!("fairfs-parts-{}-{name}", std::process::id()));
        std::fs::write(&p, data).unwrap();
        let f = std::fs::OpenOptions::new().read(true).write(true).open(&p).unwrap();
        std::fs::remove_file(&p).unwrap();
        f
    }

    /// Parts of a `size`-byte read of `f` into an unpooled buffer.
    fn parts_of(f: &std::fs::File, size: usize) -> Parts {
        Parts::new(f.as_raw_fd(), PooledBytes::unpooled(Vec::with_capacity(size)), size)
    }

    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 % 253) as u8).collect()
    }

    #[test]
    fn parts_read_on_other_threads_in_any_order_make_the_file() {
        let data = pattern(1_000_003);
        let f = file("order", &data);
        let mut parts = parts_of(&f, data.len());
        let mut handed = vec![];
        while let Some(p) = parts.claim(65_536) {
            handed.push(p);
        }
        assert_eq!(handed.len(), 16);
        assert_eq!(parts.unclaimed(), 0);
        // Read in reverse, each on its own thread.
        let threads: Vec<_> = handed.into_iter().rev().map(|mut p| std::thread::spawn(move || p.read())).collect();
        let total: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
        assert_eq!(total, data.len());
        assert_eq!(parts.finish().unwrap().into_pooled().unwrap(), data);
    }

    #[test]
    fn finish_waits_for_parts_in_flight() {
        let data = pattern(200_000);
        let f = file("wait", &data);
        let mut parts = parts_of(&f, data.len());
        let mut first = parts.claim(100_000).unwrap();
        let mut second = parts.claim(100_000).unwrap();
        assert!(parts.claim(1).is_none());
        let reader = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            second.read()
        });
        first.read();
        drop(first);
        assert_eq!(
            parts.finish().unwrap().into_pooled().unwrap(),
            data,
            "finish returned before the second part was read"
        );
        assert_eq!(reader.join().unwrap(), 100_000);
    }

    #[test]
    fn a_file_that_shrank_ends_at_the_lowest_end_of_file() {
        let data = pattern(300_000);
        let f = file("shrink", &data);
        let mut parts = parts_of(&f, data.len());
        let mut a = parts.claim(100_000).unwrap();
        f.set_len(150_000).unwrap();
        let mut b = parts.claim(100_000).unwrap();
        assert_eq!(b.read(), 50_000);
        drop(b);
        assert!(parts.claim(100_000).is_none(), "nothing is handed out past end of file");
        assert_eq!(a.read(), 100_000);
        drop(a);
        assert_eq!(parts.finish().unwrap().into_pooled().unwrap(), &data[..150_000]);
    }

    #[test]
    fn parts_fill_lent_memory_and_let_it_go_when_done() {
        struct Released(std::sync::Arc<std::sync::atomic::AtomicBool>);
        impl Drop for Released {
            fn drop(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let data = pattern(300_000);
        let f = file("lent", &data);
        let mut memory = vec![0u8; data.len()];
        let released = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        // SAFETY: `memory` outlives the parts and is untouched until `finish` returns.
        let lent = unsafe { Lent::new(memory.as_mut_ptr(), memory.len(), Box::new(Released(released.clone()))) };
        let mut parts = Parts::into_lent(f.as_raw_fd(), lent, data.len());
        let mut a = parts.claim(100_000).unwrap();
        f.set_len(150_000).unwrap(); // shrinks while it is read
        let mut b = parts.claim(100_000).unwrap();
        std::thread::spawn(move || b.read()).join().unwrap();
        a.read();
        drop(a);
        assert!(!released.load(std::sync::atomic::Ordering::SeqCst));
        assert!(matches!(parts.finish(), Ok(Filled::Lent(150_000))), "the bytes up to the new end");
        assert!(released.load(std::sync::atomic::Ordering::SeqCst), "let go by finish");
        assert_eq!(memory[..150_000], data[..150_000]);
    }

    #[test]
    fn an_error_in_any_part_fails_the_read() {
        // A directory fd: pread fails with EISDIR.
        let dir = std::fs::File::open(std::env::temp_dir()).unwrap();
        let mut parts = parts_of(&dir, 10);
        parts.claim(5).unwrap().read();
        assert!(parts.claim(5).is_none());
        assert_eq!(parts.finish().map(Filled::into_pooled), Err(FsError::new(libc::EISDIR, Syscall::Read)));
    }

    #[test]
    fn a_part_dropped_unread_fails_the_read_instead_of_cutting_it() {
        let data = pattern(20);
        let f = file("unread", &data);
        let mut parts = parts_of(&f, 20);
        drop(parts.claim(10).unwrap());
        assert!(parts.claim(10).is_none());
        assert_eq!(parts.finish().map(Filled::into_pooled), Err(FsError::cancelled(Syscall::Read)));
    }
}
