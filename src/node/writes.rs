//! Writes from JS Buffers: the pool writes straight from a Buffer's memory, which a
//! reference holds until the outcome is delivered (node:fs holds its Buffer in the
//! request the same way), and which the environment's teardown waits for a write to
//! let go of. Whole-file writes, and the fd primitives (`fs.write`, `fs.writev`,
//! `fs.fsync`, `fs.fdatasync`, `fs.close`) in order per fd.

use super::*;
use crate::jobs::write::{FdJob, FdOp, WriteChain};
use crate::jobs::write_file::WriteFileJob;
use crate::memory::borrowed::Borrowed;
use crate::write::{Target, WriteLimits};
use std::sync::Arc;

/// Writes of up to this many bytes in all take a copy of them, not the caller's
/// Buffers: copying a few KiB costs less than making, tracking and deleting a
/// reference per Buffer (a 16-byte log line's write is mostly that).
const COPY_UP_TO: usize = 4096;

/// References that hold `buffers` and the bytes of each, borrowed for a write; or, for
/// a small write, no reference and one copy of all the bytes.
fn borrow(env: &Env, st: &mut EnvState, buffers: &[BufferSlice]) -> Result<(Vec<napi::sys::napi_ref>, Vec<Borrowed>)> {
    let total: usize = buffers.iter().map(|b| b.len()).sum();
    if total <= COPY_UP_TO {
        let mut bytes = Vec::with_capacity(total);
        for data in buffers {
            bytes.extend_from_slice(data);
        }
        return Ok((Vec::new(), vec![Borrowed::owned(bytes)]));
    }
    let mut references = Vec::with_capacity(buffers.len());
    let mut bytes = Vec::with_capacity(buffers.len());
    for data in buffers {
        let mut reference = std::ptr::null_mut();
        // SAFETY: we are on this environment's JS thread; `data` is a live JS value and
        // the out-pointer is valid.
        let status = unsafe { napi::sys::napi_create_reference(env.raw(), data.raw(), 1, &mut reference) };
        if status != napi::sys::Status::napi_ok {
            for r in references {
                delete_reference(env, r);
            }
            return Err(Error::new(Status::GenericFailure, "fairfs: cannot hold the data to write"));
        }
        references.push(reference);
        // SAFETY: the bytes stay valid until the outcome is delivered, because
        // `reference` holds the Buffer until then (deleted in the completion callback,
        // env.rs), and until the environment's teardown, which waits for the guard
        // (`LentWrites`). The write reads them only before it delivers; a caller that
        // changes them meanwhile gets torn bytes on disk, as with node:fs, never freed
        // memory.
        bytes.push(unsafe { Borrowed::new(data.as_ptr(), data.len(), Box::new(st.lent_writes.enter())) });
    }
    Ok((references, bytes))
}

/// Submits the job `make` builds from the borrowed bytes of `buffers`; the references
/// are deleted when its outcome is delivered.
fn submit_borrowing(
    env: &Env,
    lane: Option<u64>,
    buffers: &[BufferSlice],
    make: impl FnOnce(Vec<Borrowed>, Deliver) -> Box<dyn Job>,
) -> Result<f64> {
    let st = state(env)?;
    let (references, bytes) = borrow(env, st, buffers)?;
    match submit_on(env, lane, |deliver| make(bytes, deliver)) {
        Ok(id) => {
            if !references.is_empty() {
                st.written_from.insert(id as u64, references);
            }
            Ok(id)
        }
        Err(e) => {
            for r in references {
                delete_reference(env, r);
            }
            Err(e)
        }
    }
}

/// Writes all of `data` to `target` (a whole-file write); returns the request id.
pub(super) fn submit_write(
    env: &Env,
    target: Target,
    data: BufferSlice,
    flush: bool,
    write_empty: bool,
) -> Result<f64> {
    let limits = WriteLimits { chunk_size: global().chunk_size(), flush, write_empty, admitted: true };
    let lane = match &target {
        Target::Path { path, .. } => crate::lanes::of_path(path),
        Target::Fd(fd) => crate::lanes::of_fd(*fd),
    };
    submit_borrowing(env, lane, &[data], |mut bytes, deliver| {
        let bytes = bytes.pop().expect("one buffer");
        Box::new(WriteFileJob::new(target, bytes, limits, move |outcome| {
            deliver(match outcome {
                Err(ReadError::Cancelled) => Delivered::Cancelled,
                outcome => Delivered::Done(outcome),
            })
        }))
    })
}

/// Runs `op` on `fd` after the fd's earlier requests; the outcome is the bytes written
/// (a write) or nothing.
fn submit_fd_op(
    env: &Env,
    fd: i32,
    buffers: &[BufferSlice],
    op: impl FnOnce(Vec<Borrowed>) -> FdOp,
    count: bool,
) -> Result<f64> {
    // Every ordered request on one fd goes to one pool, whatever the mounts do meanwhile.
    submit_borrowing(env, crate::lanes::of_ordered_fd(fd), buffers, |bytes, deliver| {
        Box::new(FdJob::new(fd, op(bytes), move |outcome| {
            deliver(match outcome {
                Err(ReadError::Cancelled) => Delivered::Cancelled,
                outcome if count => Delivered::Written(outcome),
                outcome => Delivered::Done(outcome.map(|_| ())),
            })
        }))
    })
}

/// `fs.write` / `fs.writev`: every byte of `buffers` at `position` (`None`: the fd's);
/// a WriteStream's write is one of its `chain` (`WriteChain`).
pub(super) fn submit_fd_write(
    env: &Env,
    fd: i32,
    buffers: &[BufferSlice],
    position: Option<u64>,
    chain: Option<Arc<WriteChain>>,
) -> Result<f64> {
    submit_fd_op(env, fd, buffers, |bufs| FdOp::Write { bufs, position, chain }, true)
}

/// `fs.fsync` / `fs.fdatasync` (`data_only`) / `fs.close` (`close`).
pub(super) fn submit_fd_call(env: &Env, fd: i32, op: FdOp) -> Result<f64> {
    submit_fd_op(env, fd, &[], |_| op, false)
}
