//! The counters [`super::Pool::stats`] reports.

use crate::loom::sync::atomic::Ordering;

use super::Pool;

/// Counters reported by [`Pool::stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Worker threads the pool is sized to.
    pub threads: usize,
    /// Requests waiting for their next chunk.
    pub queued: usize,
    /// Chunks being read right now.
    pub active: usize,
    /// Requests that delivered a result (success or error): reads, a stream's opens,
    /// blocks and closes, metadata calls.
    pub completed: u64,
    /// Requests that were cancelled.
    pub cancelled: u64,
    /// Bytes read by all requests.
    pub bytes_read: u64,
    /// Chunks of file data read: each step or piece of a read that read bytes, and a
    /// read's last step, which may find only the end ([`crate::job::Job::data`]).
    /// Metadata calls and closes read no file data and count none.
    pub chunks_read: u64,
    /// Bytes written by all requests, and the steps that wrote some.
    pub bytes_written: u64,
    pub chunks_written: u64,
    /// The chunk size new requests use.
    pub chunk_size: usize,
    /// The nice value workers are asked to run at.
    pub nice: i32,
    /// Big files read at once now ([`crate::policy::contention`]): every worker while nothing
    /// else wants the CPU, fewer while something does; and the most it may reach (the
    /// threads, or `largeLimit` if set). Without a contention signal it stays at
    /// cores − 1, and a lone big file may still use every worker.
    pub large_limit: usize,
    pub large_limit_max: usize,
    /// Whether the limit adapts ([`crate::policy::contention`]); else it is fixed.
    pub large_limit_adaptive: bool,
    /// Times the limit went down because others wanted the CPU (libuv's threads, other
    /// threads and processes, a waiting event loop: [`crate::policy::contention`]), and up
    /// because they did not.
    pub large_backoffs: u64,
    pub large_probes: u64,
    /// Files held open by admitted reads, and the most allowed ([`crate::policy::admission`]).
    pub open_files: usize,
    pub max_open_files: usize,
    /// Bytes of result buffers granted to big reads in flight, and the most allowed.
    pub bytes_in_flight: u64,
    pub max_bytes_in_flight: u64,
    /// Reads waiting for admission (a slot, their bytes, or a close after EMFILE).
    pub waiting: usize,
    /// Admitted big reads waiting for memory their caller lends ([`crate::job::Wait::Memory`]).
    pub awaiting_memory: usize,
    /// Whole-file writes waiting out of the queue for their file's turn
    /// ([`crate::job::Wait::Turn`]).
    pub awaiting_turn: usize,
    /// Reads of sources that may block for long (FIFOs, devices), each on a thread
    /// of its own outside the pool.
    pub own_threads: usize,
    /// Read streams the fair queue keeps as one flow each ([`crate::scheduler::FairQueue::push_keyed`]).
    pub stream_flows: usize,
}

impl Pool {
    /// A snapshot of the pool's counters, taken under its lock.
    pub fn stats(&self) -> Stats {
        let state = self.lock();
        Stats {
            threads: state.target_threads,
            queued: state.queue.len(),
            active: self.shared.active.load(Ordering::Relaxed),
            completed: self.shared.completed.load(Ordering::Relaxed),
            cancelled: self.shared.cancelled.load(Ordering::Relaxed),
            bytes_read: self.shared.bytes_read.load(Ordering::Relaxed),
            chunks_read: self.shared.chunks_read.load(Ordering::Relaxed),
            bytes_written: self.shared.bytes_written.load(Ordering::Relaxed),
            chunks_written: self.shared.chunks_written.load(Ordering::Relaxed),
            chunk_size: self.shared.chunk_size.load(Ordering::Relaxed),
            nice: state.nice,
            large_limit: state.governor.limit(),
            large_limit_max: state.governor.max(),
            large_limit_adaptive: state.governor.is_adaptive(),
            large_backoffs: state.governor.backed_off,
            large_probes: state.governor.probed,
            open_files: state.admission.open(),
            max_open_files: state.admission.limits().max_open,
            bytes_in_flight: state.admission.bytes(),
            max_bytes_in_flight: state.admission.limits().max_bytes,
            waiting: state.admission.waiting() + state.retry.len(),
            awaiting_memory: state.awaiting_memory.len(),
            awaiting_turn: state.awaiting_turn.len(),
            own_threads: self.shared.own_threads.load(Ordering::Relaxed),
            stream_flows: state.queue.keyed_flows(),
        }
    }
}
