//! Admission control: which reads may start now, so that a burst never runs the
//! process out of file descriptors or memory.
//!
//! node:fs starts every read of a burst at once: it opens every file and allocates
//! every result buffer before it finishes any. A thousand reads of big files then
//! hold a thousand descriptors (`EMFILE` past `ulimit -n`) and a thousand buffers. The
//! pool only reads with a few threads anyway, so starting more reads than it can
//! serve buys nothing. A read is *admitted* under two limits:
//!
//! * **open files**: an admitted read holds one slot, from before its `open` until
//!   after its `close`. Reads that would open a file beyond [`Limits::max_open`] wait
//!   holding nothing, oldest first.
//! * **bytes**: a big read (more than one chunk) learns its size from `fstat`, then
//!   asks for that many bytes before it allocates its buffer. If the bytes granted to
//!   reads in flight would pass [`Limits::max_bytes`], it closes its file and waits,
//!   holding nothing, oldest first among the big reads. A read bigger than the limit
//!   still goes, alone. Small reads need no bytes: their buffers are at most a chunk
//!   each, bounded by the open-file limit, and they go ahead of waiting big reads,
//!   as deficit round robin would put them anyway.
//!
//! A third queue serves `EMFILE`/`ENFILE` caused by the rest of the process: a read
//! whose `open` failed so waits for one of fairfs's own files to close, then tries
//! again first. With none of fairfs's files open there is nothing to wait for, and
//! the pool retries it on a timer instead (see `pool/`).
//!
//! Everything here runs under the pool's lock; it is plain bookkeeping, checked
//! against a simple model by property tests and, inside the pool, by loom.

use std::collections::VecDeque;

/// The two limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most files admitted reads hold open at once.
    pub max_open: usize,
    /// Most bytes granted at once to big reads' result buffers.
    pub max_bytes: u64,
}

/// Default bytes of result buffers in flight: about 10 ms of copying from the page
/// cache, enough to keep every worker busy while a burst of big files holds no more
/// than that (docs/tuning.md has the bursts it was chosen by). A smaller limit only
/// serialises more: waiting big files are served oldest first, which finishes each
/// sooner than sharing.
pub const DEFAULT_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// The most files fairfs opens at once by default, whatever the descriptor limit.
pub const MAX_DEFAULT_OPEN: usize = 1024;

/// Default open-file limit for a process allowed `nofile` descriptors: a quarter of
/// them, leaving most to the rest of the process (sockets, node:fs, libraries),
/// between 4 and [`MAX_DEFAULT_OPEN`]. With `ulimit -n 256` that is 64; the pool's
/// few workers read at most one file each at a time, so a few dozen open files keep
/// them busy and let deficit round robin interleave that many reads.
pub fn default_max_open(nofile: u64) -> usize {
    (nofile / 4).clamp(4, MAX_DEFAULT_OPEN as u64) as usize
}

/// What [`Admission::admit`] lets start.
#[derive(Debug, PartialEq, Eq)]
pub struct Admitted<T> {
    pub item: T,
    /// Whether it took an open-file slot.
    pub slot: bool,
    /// Bytes granted to it before it starts (a big read that waited for memory).
    pub granted: u64,
}

/// A big read waiting for memory.
#[derive(Debug)]
struct ForBytes<T> {
    item: T,
    size: u64,
    /// It opens a file of its own once admitted (a path, not a caller's fd).
    slot: bool,
}

/// The admission state of the pool's reads.
#[derive(Debug)]
pub struct Admission<T> {
    limits: Limits,
    /// Open-file slots held by admitted reads.
    open: usize,
    /// Bytes granted to admitted big reads.
    bytes: u64,
    /// Files held by reads that left for a thread of their own ([`Admission::leave`]):
    /// no slot, but still files of ours that will close, for EMFILE's sake.
    outside: usize,
    /// Reads waiting for an open-file slot, oldest first.
    for_open: VecDeque<T>,
    /// Big reads waiting for their bytes, oldest first. They hold no slot.
    for_bytes: VecDeque<ForBytes<T>>,
    /// Reads whose open failed with EMFILE/ENFILE, waiting for one of ours to close.
    for_close: VecDeque<T>,
}

impl<T> Admission<T> {
    pub fn new(limits: Limits) -> Self {
        Admission {
            limits: Limits { max_open: limits.max_open.max(1), max_bytes: limits.max_bytes },
            open: 0,
            bytes: 0,
            outside: 0,
            for_open: VecDeque::new(),
            for_bytes: VecDeque::new(),
            for_close: VecDeque::new(),
        }
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Changes the limits; call [`Admission::admit`] afterwards, as raising them may
    /// let waiting reads start. Lowering them takes effect as reads end.
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = Limits { max_open: limits.max_open.max(1), max_bytes: limits.max_bytes };
    }

    /// Open-file slots held now.
    pub fn open(&self) -> usize {
        self.open
    }

    /// Bytes granted now.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Reads waiting for admission.
    pub fn waiting(&self) -> usize {
        self.for_open.len() + self.for_bytes.len() + self.for_close.len()
    }

    /// A new read that will open a file: `Some` if it may start now (it then holds a
    /// slot), `None` if it waits behind earlier reads or for a slot.
    pub fn submit(&mut self, item: T) -> Option<T> {
        if self.for_open.is_empty() && self.for_close.is_empty() && self.open < self.limits.max_open {
            self.open += 1;
            Some(item)
        } else {
            self.for_open.push_back(item);
            None
        }
    }

    /// Whether `size` more bytes fit: always when nothing is granted, so that a read
    /// bigger than the limit still goes, alone.
    fn fits(&self, size: u64) -> bool {
        self.bytes == 0 || self.bytes.saturating_add(size) <= self.limits.max_bytes
    }

    /// An admitted read asks for `size` bytes for its buffer. Granted if they fit and
    /// no earlier big read waits for memory.
    pub fn grant(&mut self, size: u64) -> bool {
        if self.for_bytes.is_empty() && self.fits(size) {
            self.bytes += size;
            true
        } else {
            false
        }
    }

    /// A read that was refused [`Admission::grant`] waits for `size` bytes. `slot`:
    /// it held a slot, which it gives back now (it closed its file) and will take
    /// again when admitted. Call [`Admission::admit`] next: the slot may start another.
    pub fn wait_for_bytes(&mut self, item: T, size: u64, slot: bool) {
        if slot {
            self.open -= 1;
        }
        self.for_bytes.push_back(ForBytes { item, size, slot });
    }

    /// A read whose open failed with EMFILE/ENFILE gives back its slot and waits for
    /// another of our files to close. `Err(item)` if we hold no other file: nothing
    /// will close, and the caller must retry it some other way.
    pub fn wait_for_close(&mut self, item: T) -> Result<(), T> {
        self.open -= 1;
        if self.open + self.outside == 0 {
            return Err(item);
        }
        self.for_close.push_back(item);
        Ok(())
    }

    /// A read that waited outside (see [`Admission::wait_for_close`]) tries again:
    /// first in line for the next slot.
    pub fn retry(&mut self, item: T) {
        self.for_open.push_front(item);
    }

    /// An admitted read has ended (completed, failed or cancelled): its slot, if it
    /// held one, and its granted bytes are free. Call [`Admission::admit`] next.
    pub fn release(&mut self, slot: bool, granted: u64) {
        if slot {
            self.open -= 1;
            self.file_closed();
        }
        self.bytes -= granted;
    }

    /// An admitted read leaves for a thread of its own (it may wait for any time, and
    /// must hold back nobody): its slot and bytes are free, while its file, if it had
    /// one, still counts as ours until [`Admission::outside_closed`]. Call
    /// [`Admission::admit`] next.
    pub fn leave(&mut self, slot: bool, granted: u64) {
        if slot {
            self.open -= 1;
            self.outside += 1;
        }
        self.bytes -= granted;
    }

    /// A read that left has closed its file. Call [`Admission::admit`] next.
    pub fn outside_closed(&mut self) {
        self.outside -= 1;
        self.file_closed();
    }

    /// A file of ours closed: reads that met EMFILE try again, first.
    fn file_closed(&mut self) {
        while let Some(item) = self.for_close.pop_back() {
            self.for_open.push_front(item);
        }
    }

    /// Takes every waiting read that may start now, oldest first: big reads whose
    /// bytes now fit, then reads waiting for a slot.
    pub fn admit(&mut self) -> Vec<Admitted<T>> {
        let mut out = Vec::new();
        while let Some(head) = self.for_bytes.front() {
            if !self.fits(head.size) || (head.slot && self.open >= self.limits.max_open) {
                break;
            }
            let ForBytes { item, size, slot } = self.for_bytes.pop_front().expect("a head");
            self.bytes += size;
            self.open += slot as usize;
            out.push(Admitted { item, slot, granted: size });
        }
        while self.open < self.limits.max_open {
            let Some(item) = self.for_open.pop_front() else { break };
            self.open += 1;
            out.push(Admitted { item, slot: true, granted: 0 });
        }
        out
    }

    /// Takes out a waiting read (it was cancelled); it held nothing.
    pub fn remove(&mut self, mut pred: impl FnMut(&T) -> bool) -> Option<T> {
        if let Some(i) = self.for_open.iter().position(&mut pred) {
            return self.for_open.remove(i);
        }
        if let Some(i) = self.for_close.iter().position(&mut pred) {
            return self.for_close.remove(i);
        }
        let i = self.for_bytes.iter().position(|w| pred(&w.item))?;
        self.for_bytes.remove(i).map(|w| w.item)
    }

    /// Takes out every waiting read that matches `pred` (cancelled together), in one
    /// pass; the others keep their order.
    pub fn remove_all(&mut self, mut pred: impl FnMut(&T) -> bool) -> Vec<T> {
        let mut removed = Vec::new();
        for queue in [&mut self.for_open, &mut self.for_close] {
            let (out, kept): (VecDeque<T>, VecDeque<T>) = queue.drain(..).partition(&mut pred);
            removed.extend(out);
            *queue = kept;
        }
        let (out, kept): (VecDeque<ForBytes<T>>, VecDeque<ForBytes<T>>) =
            self.for_bytes.drain(..).partition(|w| pred(&w.item));
        removed.extend(out.into_iter().map(|w| w.item));
        self.for_bytes = kept;
        removed
    }

    /// Takes out every waiting read (the pool is shutting down).
    pub fn drain(&mut self) -> Vec<T> {
        let mut all: Vec<T> = self.for_open.drain(..).collect();
        all.extend(self.for_close.drain(..));
        all.extend(self.for_bytes.drain(..).map(|w| w.item));
        all
    }
}

#[cfg(all(test, not(fairfs_loom)))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn limits(max_open: usize, max_bytes: u64) -> Limits {
        Limits { max_open, max_bytes }
    }

    #[test]
    fn reads_past_the_open_file_limit_wait_in_order() {
        let mut a = Admission::new(limits(2, 100));
        assert_eq!(a.submit(1), Some(1));
        assert_eq!(a.submit(2), Some(2));
        assert_eq!(a.submit(3), None);
        assert_eq!(a.submit(4), None);
        assert_eq!((a.open(), a.waiting()), (2, 2));
        assert!(a.admit().is_empty(), "no slot is free");
        a.release(true, 0);
        let admitted: Vec<_> = a.admit().into_iter().map(|x| x.item).collect();
        assert_eq!(admitted, [3]);
        assert_eq!(a.submit(5), None, "a new read queues behind the one still waiting");
    }

    #[test]
    fn big_reads_wait_for_bytes_holding_nothing_and_a_read_past_the_limit_goes_alone() {
        let mut a = Admission::new(limits(10, 100));
        for i in 0..3 {
            assert_eq!(a.submit(i), Some(i));
        }
        assert!(a.grant(60));
        assert!(!a.grant(60), "120 > 100");
        a.wait_for_bytes(1, 60, true);
        assert!(!a.grant(10), "an earlier big read waits for memory: no overtaking");
        a.wait_for_bytes(2, 10, true);
        assert_eq!((a.open(), a.bytes()), (1, 60), "waiting reads hold no slot and no bytes");
        a.release(true, 60);
        let admitted = a.admit();
        assert_eq!(
            admitted,
            [Admitted { item: 1, slot: true, granted: 60 }, Admitted { item: 2, slot: true, granted: 10 }]
        );
        a.release(true, 60);
        a.release(true, 10);
        assert_eq!((a.open(), a.bytes()), (0, 0));
        assert_eq!(a.submit(9), Some(9));
        assert!(a.grant(1000), "bigger than the limit, but alone");
        assert!(!a.grant(1), "and then alone");
    }

    #[test]
    fn emfile_waits_for_one_of_our_files_to_close_then_goes_first() {
        let mut a = Admission::new(limits(10, 100));
        assert_eq!(a.submit(1), Some(1));
        assert_eq!(a.submit(2), Some(2));
        assert_eq!(a.wait_for_close(2), Ok(()));
        assert_eq!(a.submit(3), None, "a new read does not pass one waiting for a close");
        a.release(true, 0);
        let admitted: Vec<_> = a.admit().into_iter().map(|x| x.item).collect();
        assert_eq!(admitted, [2, 3]);
        a.release(true, 0);
        assert_eq!(a.wait_for_close(3), Err(3), "none of ours is open: nothing to wait for");
        a.retry(3);
        assert_eq!(a.admit().into_iter().map(|x| x.item).collect::<Vec<_>>(), [3]);
        // A read that left for a thread of its own frees its slot but still counts
        // as one of our files: EMFILE waits for it to close.
        a.leave(true, 0);
        assert_eq!((a.open(), a.submit(4)), (0, Some(4)));
        assert_eq!(a.wait_for_close(4), Ok(()));
        a.outside_closed();
        assert_eq!(a.admit().into_iter().map(|x| x.item).collect::<Vec<_>>(), [4]);
    }

    #[test]
    fn cancelled_waiting_reads_are_removed_from_any_queue() {
        let mut a = Admission::new(limits(1, 10));
        assert_eq!(a.submit(0), Some(0));
        assert_eq!(a.submit(1), None);
        a.wait_for_bytes(2, 50, false);
        assert_eq!(a.remove(|&x| x == 2), Some(2));
        assert_eq!(a.remove(|&x| x == 1), Some(1));
        assert_eq!(a.remove(|&x| x == 1), None);
        assert_eq!(a.waiting(), 0);
    }

    #[test]
    fn default_open_limit_leaves_most_descriptors_to_the_process() {
        assert_eq!(default_max_open(256), 64);
        assert_eq!(default_max_open(1024), 256);
        assert_eq!(default_max_open(8), 4);
        assert_eq!(default_max_open(1 << 20), MAX_DEFAULT_OPEN);
    }

    /// What a test does next with the admission state.
    #[derive(Clone, Debug)]
    enum Op {
        /// A new read; `size` > 0 makes it a big read that asks for bytes once admitted.
        Submit { size: u64 },
        /// The oldest running read ends.
        EndOldest,
        /// The newest running read ends.
        EndNewest,
        /// The newest running read that has not asked for bytes meets EMFILE.
        Emfile,
        /// A waiting read is cancelled.
        CancelWaiting(usize),
        /// The limits change.
        SetLimits { max_open: usize, max_bytes: u64 },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (prop_oneof![Just(0u64), 1u64..200]).prop_map(|size| Op::Submit { size }),
            2 => Just(Op::EndOldest),
            2 => Just(Op::EndNewest),
            1 => Just(Op::Emfile),
            1 => (0usize..8).prop_map(Op::CancelWaiting),
            1 => (1usize..6, 1u64..300).prop_map(|(max_open, max_bytes)| Op::SetLimits { max_open, max_bytes }),
        ]
    }

    /// A running read, as the model sees it.
    #[derive(Clone, Copy, Debug)]
    struct Running {
        id: u32,
        slot: bool,
        granted: u64,
    }

    proptest! {
        /// Against a model that tracks every read: the counters are the sums of what
        /// running reads hold; neither limit is passed (except by one read alone, or
        /// after a limit was lowered); nothing waits while it could start; waiting
        /// reads start in the order they began to wait, within each queue; and every
        /// read ends exactly once.
        #[test]
        fn admission_matches_a_model(max_open in 1usize..6, max_bytes in 1u64..300, ops in proptest::collection::vec(op(), 1..200)) {
            let mut a = Admission::new(limits(max_open, max_bytes));
            let mut lim = limits(max_open, max_bytes);
            let mut next = 0u32;
            let mut size_of = std::collections::HashMap::new();
            let mut running: Vec<Running> = Vec::new();
            let mut waiting: Vec<u32> = Vec::new();
            let mut started: Vec<u32> = Vec::new();
            let mut emfiles: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
            let mut lowered = false;

            // A read was just admitted with a slot: a big one asks for its bytes.
            fn start(a: &mut Admission<u32>, id: u32, size: u64, granted: u64, slot: bool, running: &mut Vec<Running>, waiting: &mut Vec<u32>) {
                if size > 0 && granted == 0 {
                    if a.grant(size) {
                        running.push(Running { id, slot, granted: size });
                    } else {
                        a.wait_for_bytes(id, size, slot);
                        waiting.push(id);
                    }
                } else {
                    running.push(Running { id, slot, granted });
                }
            }
            fn admit_all(a: &mut Admission<u32>, size_of: &std::collections::HashMap<u32, u64>, running: &mut Vec<Running>, waiting: &mut Vec<u32>, started: &mut Vec<u32>) {
                // Until nothing more starts: a big read refused its bytes frees its slot.
                loop {
                  let admitted = a.admit();
                  if admitted.is_empty() {
                      break;
                  }
                  for x in admitted {
                    waiting.retain(|&w| w != x.item);
                    if x.granted == 0 {
                        started.push(x.item); // not a big read coming back with its bytes
                    }
                    start(a, x.item, size_of[&x.item], x.granted, x.slot, running, waiting);
                  }
                }
            }

            for op in ops {
                match op {
                    Op::Submit { size } => {
                        let id = next;
                        next += 1;
                        size_of.insert(id, size);
                        match a.submit(id) {
                            Some(id) => { started.push(id); start(&mut a, id, size, 0, true, &mut running, &mut waiting) }
                            None => waiting.push(id),
                        }
                    }
                    Op::EndOldest | Op::EndNewest if !running.is_empty() => {
                        let r = if matches!(op, Op::EndOldest) { running.remove(0) } else { running.pop().unwrap() };
                        a.release(r.slot, r.granted);
                    }
                    Op::Emfile => {
                        if let Some(i) = running.iter().rposition(|r| r.slot && r.granted == 0) {
                            let r = running.remove(i);
                            *emfiles.entry(r.id).or_default() += 1;
                            match a.wait_for_close(r.id) {
                                Ok(()) => waiting.push(r.id),
                                Err(id) => { a.retry(id); waiting.push(id) }
                            }
                        }
                    }
                    Op::CancelWaiting(k) if !waiting.is_empty() => {
                        let id = waiting.remove(k % waiting.len());
                        prop_assert_eq!(a.remove(|&x| x == id), Some(id));
                    }
                    Op::SetLimits { max_open, max_bytes } => {
                        lowered |= max_open < lim.max_open || max_bytes < lim.max_bytes;
                        lim = limits(max_open, max_bytes);
                        a.set_limits(lim);
                    }
                    _ => {}
                }
                admit_all(&mut a, &size_of, &mut running, &mut waiting, &mut started);

                let slots = running.iter().filter(|r| r.slot).count();
                let bytes: u64 = running.iter().map(|r| r.granted).sum();
                prop_assert_eq!(a.open(), slots);
                prop_assert_eq!(a.bytes(), bytes);
                prop_assert_eq!(a.waiting(), waiting.len());
                if !lowered {
                    prop_assert!(slots <= lim.max_open);
                    prop_assert!(bytes <= lim.max_bytes || running.iter().filter(|r| r.granted > 0).count() == 1);
                }
                // Nothing waits for a slot while one is free, and nothing waits at all
                // while nothing runs.
                if !a.for_open.is_empty() {
                    prop_assert!(a.open() >= lim.max_open);
                }
                if running.is_empty() {
                    prop_assert!(waiting.is_empty(), "waiting with nothing running: {:?}", waiting);
                }
            }
            // Waiting reads all start once everything running has ended.
            while let Some(r) = running.pop() {
                a.release(r.slot, r.granted);
                admit_all(&mut a, &size_of, &mut running, &mut waiting, &mut started);
            }
            prop_assert!(waiting.is_empty());
            prop_assert_eq!((a.open(), a.bytes()), (0, 0));
            // Each read started once, plus once more after each EMFILE; reads started
            // for the first time in the order they were submitted.
            let mut firsts = Vec::new();
            for &id in &started {
                if !firsts.contains(&id) {
                    firsts.push(id);
                }
                let starts = started.iter().filter(|&&x| x == id).count();
                prop_assert!(starts <= 1 + emfiles.get(&id).copied().unwrap_or(0), "read {} started {} times", id, starts);
            }
            prop_assert!(firsts.windows(2).all(|w| w[0] < w[1]), "first starts out of order: {:?}", firsts);
        }
    }
}
