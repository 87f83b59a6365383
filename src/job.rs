//! The contract between the pool and the work it runs.
//!
//! A [`Job`] is stepped one chunk at a time by whichever worker checks it out, and
//! ends exactly once: completed, cancelled or failed. That is all most jobs need.
//! A job that waits for something the pool hands out (an open-file slot, bytes of
//! result memory, memory its caller lends, a thread of its own) also offers
//! [`Waits`], through [`Job::waits`]: the pool asks it why it cannot go on, and tells
//! it what it was given.

use crate::loom::sync::atomic::AtomicBool;
use crate::loom::sync::Arc;
use crate::memory::lent::Lent;

/// Which way a job moves file data ([`Job::data`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Data {
    Read,
    Written,
    Neither,
}

/// What one step of a job did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// Bytes read or written in this step; charged to the job's deficit.
    pub bytes: usize,
    /// The job has its result and must not be stepped again.
    pub done: bool,
}

/// A part of a job that one worker runs while the job itself is back in the queue,
/// so that several workers can serve one request at once.
pub struct Piece {
    /// Bytes it will read, charged to the job's deficit when it is handed out.
    pub(crate) bytes: usize,
    /// Does the work, once; returns the bytes actually read. The pool counts them
    /// before it drops the piece, so a job that waits for its pieces to be dropped
    /// finds them counted.
    pub(crate) run: Box<dyn FnMut() -> usize + Send>,
}

impl Piece {
    pub fn new(bytes: usize, run: impl FnMut() -> usize + Send + 'static) -> Piece {
        Piece { bytes, run: Box::new(run) }
    }
}

/// Work the pool can run one step at a time.
pub trait Job: Send + 'static {
    /// Runs one step (one chunk). Never called again after it reports `done`.
    fn step(&mut self) -> Step;
    /// Hands out a piece of the job for this worker to run while the job goes back
    /// in the queue for other workers; `None` runs [`Job::step`] instead. Called on a
    /// checked-out job before each step, so it must be quick (no I/O). A job must not
    /// need its pieces to finish before it can be cancelled or completed, other than
    /// by waiting for pieces already running.
    fn split(&mut self) -> Option<Piece> {
        None
    }
    /// Delivers the result. Called once, after a step reported `done`.
    fn complete(self: Box<Self>);
    /// Delivers cancellation and frees everything. Called instead of further steps.
    fn cancel(self: Box<Self>);
    /// A step or piece of the job panicked (a bug): deliver a failure, free what can
    /// be freed. By default it is delivered as a cancellation.
    fn fail(self: Box<Self>) {
        self.cancel()
    }
    /// What file data the job moves, for the pool's counters. A reader's steps and
    /// pieces count as chunks read ([`crate::pool::Stats::chunks_read`]) when they
    /// read bytes, and its last step also when it found none (the read of an empty
    /// file, or the one that finds the end); a writer's as chunks written. A job that
    /// moves no file data (a metadata call, a close) counts no chunk unless it reports
    /// bytes read.
    fn data(&self) -> Data {
        Data::Read
    }
    /// Whether this job copies more than one chunk (a big file): at most the
    /// governor's limit of these are read at once ([`crate::policy::contention`]).
    fn is_large(&self) -> bool {
        false
    }
    /// The keyed flow the job belongs to, if it is one of many requests that share
    /// one place in the rotation (a read stream's blocks,
    /// [`crate::scheduler::FairQueue::push_keyed`]).
    fn flow(&self) -> Option<u64> {
        None
    }
    /// Whether the requests of its keyed flow must run one at a time, in the order they
    /// were made (an fd's writes, syncs and close): none starts early
    /// ([`crate::scheduler::FairQueue::pop_early`]).
    fn in_order(&self) -> bool {
        false
    }
    /// Whether its keyed flow is remembered while idle until
    /// [`crate::scheduler::FairQueue::end_key`] (a stream's, an fd's), or forgotten as
    /// soon as none of its requests is left (one path's whole-file writes).
    fn flow_outlives_requests(&self) -> bool {
        true
    }
    /// The job's side of the waits the pool manages, if it may wait at all.
    fn waits(&mut self) -> Option<&mut dyn Waits> {
        None
    }
}

/// A job that may wait for what the pool hands out. Every method has the answer of
/// a job that never waits, so each job says only what concerns it.
pub trait Waits: Send {
    /// Whether the job opens a file of its own, and so waits for an open-file slot
    /// before it starts ([`crate::policy::admission`]).
    fn opens_file(&self) -> bool {
        false
    }
    /// Why the job cannot take its next step yet; asked (under the pool's lock, so it
    /// must be quick) after each step that was not done.
    fn wait(&self) -> Wait {
        Wait::No
    }
    /// The bytes [`Wait::Bytes`] asked for are granted: the next step may allocate.
    fn grant(&mut self) {}
    /// The job waits for memory its caller lends ([`Wait::Memory`]): what asks the
    /// caller for it, called with the size outside the pool's lock. The answer comes
    /// through [`crate::pool::Pool::lend`]. `None`: nobody to ask, it gets no memory.
    fn memory_asker(&mut self) -> Option<MemoryAsker> {
        None
    }
    /// The memory [`Wait::Memory`] asked for, or `None` where the caller has none (the
    /// job then allocates its own).
    fn lend(&mut self, _memory: Option<Lent>) {}
    /// The bytes were refused: close the job's own file, so that it waits for them
    /// holding nothing. It asks again after its next step.
    fn suspend(&mut self) {}
    /// Opening met EMFILE/ENFILE for [`crate::pool::EMFILE_GIVE_UP_AFTER`] while the
    /// pool held no file: the next step must report whatever its open gives, without
    /// waiting again.
    fn give_up(&mut self) {}
    /// Hands the job its cancellation flag when it is submitted, for a step that may
    /// wait for long to check now and then.
    fn watch_cancel(&mut self, _cancelled: CancelFlag) {}
    /// The job waits for its turn ([`Wait::Turn`]) out of the queue: `resume`, called
    /// once the turn comes (never with the pool's lock held), puts it back. Handed back
    /// if it may go on already. Called under the pool's lock.
    fn set_aside(&mut self, resume: Resume) -> Option<Resume> {
        Some(resume)
    }
}

/// Puts a job set aside for its turn back in its pool's queue ([`Waits::set_aside`]).
pub type Resume = Box<dyn FnOnce() + Send>;

/// Why a read that is not done cannot take its next step yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// It may go on.
    No,
    /// A big read knows its size and needs that many bytes granted before it
    /// allocates its buffer.
    Bytes(u64),
    /// Its open failed with EMFILE/ENFILE: it waits for a file to close, then tries
    /// again.
    FileClosed,
    /// A big read, granted its bytes, waits for memory its caller lends
    /// ([`crate::memory::lent`]): it leaves the queue, keeping its slot and bytes, until the
    /// caller answers ([`crate::pool::Pool::lend`]).
    Memory(u64),
    /// It reads a source that may block for any time (a FIFO waiting for a writer, a
    /// device): it leaves the pool for a thread of its own, so that it stalls nobody,
    /// and gives back what admission granted it.
    OwnThread,
    /// A whole-file write whose file another writes now
    /// ([`crate::jobs::file_turns`]): it leaves the queue, keeping its slot, until the
    /// turn comes to it ([`Waits::set_aside`]).
    Turn,
}

/// A job's cancellation flag, set by [`crate::pool::Pool::cancel`]; a job that may
/// block for long watches it ([`Waits::watch_cancel`]).
pub type CancelFlag = Arc<AtomicBool>;

/// Asks a read's caller for memory to lend it ([`Waits::memory_asker`]).
pub type MemoryAsker = Box<dyn FnOnce(u64) + Send>;

/// The pool's questions to any job, answered as a job that never waits where it
/// offers no [`Waits`].
impl dyn Job {
    pub(crate) fn opens_file(&mut self) -> bool {
        self.waits().is_some_and(|w| w.opens_file())
    }
    pub(crate) fn wait(&mut self) -> Wait {
        self.waits().map_or(Wait::No, |w| w.wait())
    }
    pub(crate) fn grant(&mut self) {
        if let Some(w) = self.waits() {
            w.grant()
        }
    }
    pub(crate) fn memory_asker(&mut self) -> Option<MemoryAsker> {
        self.waits().and_then(|w| w.memory_asker())
    }
    pub(crate) fn lend(&mut self, memory: Option<Lent>) {
        if let Some(w) = self.waits() {
            w.lend(memory)
        }
    }
    pub(crate) fn suspend(&mut self) {
        if let Some(w) = self.waits() {
            w.suspend()
        }
    }
    pub(crate) fn give_up(&mut self) {
        if let Some(w) = self.waits() {
            w.give_up()
        }
    }
    pub(crate) fn set_aside(&mut self, resume: Resume) -> Option<Resume> {
        match self.waits() {
            Some(w) => w.set_aside(resume),
            None => Some(resume),
        }
    }
    pub(crate) fn watch_cancel(&mut self, cancelled: CancelFlag) {
        if let Some(w) = self.waits() {
            w.watch_cancel(cancelled)
        }
    }
}
