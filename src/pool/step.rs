//! One step of a checked-out job, run outside the lock and counted: what a worker
//! does with the request it took, and what a job on a thread of its own does too
//! ([`super::waits::run_on_own_thread`]).

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::job::Data;
use crate::loom::sync::atomic::Ordering;

use super::state::{Entry, Shared};

/// How a step ended.
pub(super) enum Stepped {
    /// More to do; this many bytes were read.
    More(usize),
    /// The job has its outcome; the last step read this many bytes.
    Done(usize),
    /// The step panicked (a bug): the job must fail.
    Panicked,
}

/// Runs one step of a checked-out job and counts it. A panic (a bug) is caught: it
/// fails this request alone, the thread lives on, and the caller hears of it instead
/// of waiting forever.
pub(super) fn step(shared: &Shared, entry: &mut Entry) -> Stepped {
    let Ok(step) = catch_unwind(AssertUnwindSafe(|| entry.job.step())) else {
        count_chunk(shared, 0, Data::Neither, false);
        return Stepped::Panicked;
    };
    // A step that read nothing and is not the last only opened the file (and waits
    // for admission): it is not a chunk; nor is a job's that reads no file data.
    let data = entry.job.data();
    count_chunk(shared, step.bytes, data, step.bytes > 0 || (step.done && data == Data::Read));
    if step.done {
        Stepped::Done(step.bytes)
    } else {
        Stepped::More(step.bytes)
    }
}

/// Counts a chunk (step or piece) that read or wrote `bytes` as done. Called before
/// the result is delivered, so whoever sees a result never sees its chunk as active.
pub(super) fn count_chunk(shared: &Shared, bytes: usize, data: Data, chunk: bool) {
    shared.active.fetch_sub(1, Ordering::Relaxed);
    let (bytes_moved, chunks) = match data {
        Data::Written => (&shared.bytes_written, &shared.chunks_written),
        Data::Read | Data::Neither => (&shared.bytes_read, &shared.chunks_read),
    };
    bytes_moved.fetch_add(bytes as u64, Ordering::Relaxed);
    chunks.fetch_add(chunk as u64, Ordering::Relaxed);
}
