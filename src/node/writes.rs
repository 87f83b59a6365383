//! Whole-file writes from a JS Buffer: the pool writes straight from the Buffer's
//! memory, which a reference holds until the outcome is delivered (node:fs holds its
//! Buffer in the request the same way), and which the environment's teardown waits
//! for a write to let go of.

use super::*;
use crate::borrowed::Borrowed;
use crate::jobs::write_file::WriteFileJob;
use crate::write::{Target, WriteLimits};

/// Writes the bytes of `data` (a Buffer or other Uint8Array JS made for this write)
/// to `target`; returns the request id.
pub(super) fn submit_write(
    env: &Env,
    target: Target,
    data: &BufferSlice,
    flush: bool,
    write_empty: bool,
) -> Result<f64> {
    let st = state(env)?;
    let mut reference = std::ptr::null_mut();
    // SAFETY: we are on this environment's JS thread; `data` is a live JS value and the
    // out-pointer is valid.
    let status = unsafe { napi::sys::napi_create_reference(env.raw(), data.raw(), 1, &mut reference) };
    if status != napi::sys::Status::napi_ok {
        return Err(Error::new(Status::GenericFailure, "fairfs: cannot hold the data to write"));
    }
    // SAFETY: the bytes stay valid until the outcome is delivered, because `reference`
    // holds the Buffer until then (deleted in the completion callback, env.rs), and
    // until the environment's teardown, which waits for the guard (`LentWrites`). The
    // write reads them only before it delivers; a caller that changes them meanwhile
    // gets torn bytes on disk, as with node:fs, never freed memory.
    let bytes = unsafe { Borrowed::new(data.as_ptr(), data.len(), Box::new(st.lent_writes.enter())) };
    let limits = WriteLimits { chunk_size: global().chunk_size(), flush, write_empty, admitted: true };
    let id = submit(env, |deliver| {
        Box::new(WriteFileJob::new(target, bytes, limits, move |outcome| {
            deliver(match outcome {
                Err(ReadError::Cancelled) => Delivered::Cancelled,
                outcome => Delivered::Done(outcome),
            })
        }))
    });
    match id {
        Ok(id) => {
            st.written_from.insert(id as u64, reference);
            Ok(id)
        }
        Err(e) => {
            delete_reference(env, reference);
            Err(e)
        }
    }
}
