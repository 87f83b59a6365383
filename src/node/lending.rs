//! Memory V8 lends a whole-file read: a Buffer allocated on the JS thread, written by a
//! pool thread, held by a reference until the outcome is delivered, and waited for at
//! the environment's teardown.

use super::*;

/// A Buffer V8 allocated for a whole-file read, held by a strong reference until the
/// read's outcome is delivered (JS never sees it before).
pub(super) struct LentBuffer {
    pub(super) reference: napi::sys::napi_ref,
    pub(super) data: *const u8,
    pub(super) len: usize,
}

/// Counts the reads that may still write into an environment's memory, and the writes
/// that may still take bytes from it, so that its teardown waits for them: V8 frees
/// the Buffers after it, whatever JS held.
#[derive(Default)]
pub(super) struct LentWrites {
    pub(super) count: Mutex<usize>,
    pub(super) none: Condvar,
}

impl LentWrites {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, usize> {
        self.count.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts one more read; dropping the guard uncounts it.
    pub(super) fn enter(self: &Arc<Self>) -> LentGuard {
        *self.lock() += 1;
        LentGuard(self.clone())
    }

    pub(super) fn wait_for_none(&self) {
        let mut count = self.lock();
        while *count > 0 {
            count = self.none.wait(count).unwrap_or_else(|p| p.into_inner());
        }
    }
}

pub(super) struct LentGuard(Arc<LentWrites>);

impl Drop for LentGuard {
    fn drop(&mut self) {
        let mut count = self.0.lock();
        *count -= 1;
        if *count == 0 {
            self.0.none.notify_all();
        }
    }
}

/// Lends request `id`, waiting for memory ([`crate::policy::admission::Wait::Memory`]), a new
/// Buffer of `size` uninitialised bytes that V8 allocates, as `Buffer.allocUnsafeSlow`
/// does. A reference holds it until the outcome is delivered. If V8 cannot allocate
/// it, the read allocates its own memory instead.
pub(super) fn lend_buffer(env: &Env, st: &mut EnvState, id: u64, size: u64) {
    let Some(ticket) = st.pending.get(&id).and_then(|t| t.first()).cloned() else { return };
    let (mut data, mut value, mut reference) = (std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: we are on this environment's JS thread; the out-pointers are valid.
    let created = unsafe {
        napi::sys::napi_create_buffer(env.raw(), size as usize, &mut data, &mut value) == napi::sys::Status::napi_ok
            && napi::sys::napi_create_reference(env.raw(), value, 1, &mut reference) == napi::sys::Status::napi_ok
    };
    if !created || data.is_null() {
        // Out of memory: node throws, and the error must not surface in onComplete.
        let mut error = std::ptr::null_mut();
        // SAFETY: as above.
        unsafe { napi::sys::napi_get_and_clear_last_exception(env.raw(), &mut error) };
        delete_reference(env, reference);
        crate::lanes::lend(&ticket, None);
        return;
    }
    let len = size as usize;
    // SAFETY: `data..data + len` is the new Buffer's memory, which stays valid while
    // `reference` holds the Buffer (until the outcome is delivered, after the read
    // let the memory go) and until the environment's teardown, which waits for the
    // guard (`LentWrites`). Nobody else sees the Buffer before the outcome.
    let lent = unsafe { Lent::new(data.cast(), len, Box::new(st.lent_writes.enter())) };
    if crate::lanes::lend(&ticket, Some(lent)) {
        st.lent_files.insert(id, LentBuffer { reference, data: data.cast_const().cast(), len });
    } else {
        delete_reference(env, reference);
    }
}

pub(super) fn delete_reference(env: &Env, reference: napi::sys::napi_ref) {
    if !reference.is_null() {
        // SAFETY: a reference this environment created and nobody deleted yet.
        unsafe { napi::sys::napi_delete_reference(env.raw(), reference) };
    }
}
