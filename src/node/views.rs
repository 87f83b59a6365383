//! External Buffers over pooled memory, and when that memory may be used again.
//!
//! A result reaches JS without a copy as an external Buffer over pooled bytes
//! ([`ViewedBytes`]). Node calls the Buffer's finalizer in two cases:
//!
//! * **Collected.** Node frees an external ArrayBuffer's memory only once no
//!   ArrayBuffer anywhere holds it, even one it was transferred to on another thread
//!   (the memory moves with a transfer: `ReadableByteStreamController.enqueue()`,
//!   `ArrayBuffer.prototype.transfer()`, then `postMessage` of the new one). Then
//!   nothing can see it, and the bytes go back to the pool.
//! * **Teardown.** When an environment (a worker, the main thread) is torn down, Node
//!   runs the finalizer of every external Buffer still alive, newest first, whether or
//!   not its memory was transferred elsewhere. It detaches the Buffer's own
//!   ArrayBuffer first, but one the memory was transferred to lives on, maybe on
//!   another thread.
//!
//! So at teardown a block may go back to the pool only if, when teardown began, its
//! Buffer's own ArrayBuffer was still alive and not detached: then that ArrayBuffer
//! was the only one holding the memory, and Node detaches it before the finalizer
//! runs. Any other block is abandoned: taken out of the pool's accounting and never
//! freed, since nothing tells us when the last view elsewhere goes.
//!
//! [`Views`] keeps a weak reference to each external Buffer's ArrayBuffer, and a
//! sentinel: an external Buffer of one byte, held alive, made anew after each batch
//! of new Buffers ([`Views::rearm`]). Being the newest, its finalizer runs first at
//! teardown (Node's order, the same whether a Node keeps these finalizers as cleanup
//! hooks or, from 20.x, in its list of cleanables), and it notes which blocks may go
//! back. A finalizer that runs while JS cannot run but before the sentinel's is that
//! of a Buffer collected just before teardown (its finalizer waited for the event
//! loop): its block goes back only if its ArrayBuffer is gone, which it is unless a
//! Node ran finalizers in another order. And a batch whose sentinel cannot be made
//! because the environment began to stop while it was being made (a worker terminated
//! from another thread) never reaches JS: its Buffers' memory goes back too.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

use napi::bindgen_prelude::{BufferSlice, Env, Error, FromNapiValue, JsValue, Result};
use napi::sys;

use crate::memory::buffer_pool::PooledBytes;

/// Pooled bytes that one or more external Buffers view, freed or pooled again when
/// the last of them is finalized, and abandoned if any of them might still be seen.
pub(super) struct ViewedBytes {
    bytes: Option<PooledBytes>,
    abandon: Cell<bool>,
}

impl ViewedBytes {
    pub(super) fn new(bytes: PooledBytes) -> Rc<Self> {
        Rc::new(ViewedBytes { bytes: Some(bytes), abandon: Cell::new(false) })
    }

    /// Marks the bytes as possibly still seen by another thread: they are never used
    /// again.
    pub(super) fn abandon(&self) {
        self.abandon.set(true);
    }
}

impl Drop for ViewedBytes {
    fn drop(&mut self) {
        if let Some(bytes) = self.bytes.take() {
            if self.abandon.get() {
                ABANDONED_BYTES.fetch_add(bytes.abandon() as u64, Ordering::Relaxed);
            }
        }
    }
}

/// Bytes given up in this process because another thread might still see them
/// (`stats().abandonedBytes`).
static ABANDONED_BYTES: AtomicU64 = AtomicU64::new(0);

pub(super) fn abandoned_bytes() -> u64 {
    ABANDONED_BYTES.load(Ordering::Relaxed)
}

/// An external Buffer over `data..data + len`, whose `finalize` gets `hint` back when
/// Node lets go of the memory: after V8 collects the Buffer, at teardown, at once if
/// Node copies instead (no external buffers allowed), and at once if no Buffer could
/// be made at all (the environment is stopping, say). napi-rs's `from_external` keeps
/// the hint in that last case, and with it whatever memory the hint owns.
///
/// # Safety
/// `data..data + len` must be initialised bytes that stay put and readable until
/// `finalize` runs, and that no other Buffer views.
pub(super) unsafe fn external_buffer<'e, T, F: FnOnce(Env, T)>(
    env: &'e Env,
    data: *mut u8,
    len: usize,
    hint: T,
    finalize: F,
) -> Result<BufferSlice<'e>> {
    unsafe extern "C" fn finalize_external<T, F: FnOnce(Env, T)>(
        env: sys::napi_env,
        _data: *mut std::ffi::c_void,
        hint: *mut std::ffi::c_void,
    ) {
        // SAFETY: `hint` is the box made below, which Node hands back exactly once.
        let (hint, finalize) = unsafe { *Box::from_raw(hint.cast::<(T, F)>()) };
        finalize(Env::from_raw(env), hint);
    }
    let boxed = Box::into_raw(Box::new((hint, finalize)));
    let mut value = std::ptr::null_mut();
    // SAFETY: per this function's contract; on success Node owns `boxed` until it
    // calls `finalize_external`.
    let status = unsafe {
        sys::napi_create_external_buffer(
            env.raw(),
            len,
            data.cast(),
            Some(finalize_external::<T, F>),
            boxed.cast(),
            &mut value,
        )
    };
    if status != sys::Status::napi_ok {
        let mut copy_status = status;
        if status == sys::Status::napi_no_external_buffers_allowed {
            // SAFETY: the bytes are still ours to read: `finalize` has not run.
            copy_status =
                unsafe { sys::napi_create_buffer_copy(env.raw(), len, data.cast(), std::ptr::null_mut(), &mut value) };
        }
        // SAFETY: no Buffer was made over `data`, so Node never calls the finalizer:
        // the box is ours again.
        let (hint, finalize) = unsafe { *Box::from_raw(boxed) };
        finalize(*env, hint);
        if copy_status != sys::Status::napi_ok {
            return Err(Error::new(napi::Status::from(copy_status), "fairfs: cannot make a Buffer"));
        }
    }
    // SAFETY: `value` is a Buffer just made in this environment.
    unsafe { BufferSlice::from_napi_value(env.raw(), value) }
}

/// The external Buffers of one environment whose finalizer has not run yet.
pub(super) struct Views {
    env: sys::napi_env,
    inner: RefCell<Inner>,
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    /// A weak reference to each live external Buffer's ArrayBuffer, by view id. A view
    /// whose ArrayBuffer could not be referenced has a null one.
    live: HashMap<u64, sys::napi_ref>,
    /// `None` until the environment's teardown begins; then the views whose
    /// ArrayBuffer was alive and attached, so whose block may go back to the pool.
    teardown: Option<HashSet<u64>>,
    /// The sentinel Buffer (module docs), held by a strong reference, and its number;
    /// earlier sentinels, collected later, are ignored.
    sentinel: sys::napi_ref,
    sentinel_number: u64,
    /// Views made since the sentinel was: judged by the next one.
    unjudged: Vec<u64>,
    /// Views made in a batch that JS never saw (module docs): their memory may go back.
    unseen: HashSet<u64>,
}

impl Views {
    pub(super) fn new(env: sys::napi_env) -> Rc<Self> {
        Rc::new(Views { env, inner: RefCell::default() })
    }

    /// Starts watching the external Buffer `buffer`, just made; returns its view id,
    /// for [`Views::finalized`].
    pub(super) fn watch(&self, buffer: sys::napi_value) -> u64 {
        let reference = self.weak_arraybuffer(buffer);
        let mut inner = self.inner.borrow_mut();
        let id = inner.next_id;
        inner.next_id += 1;
        inner.live.insert(id, reference);
        inner.unjudged.push(id);
        id
    }

    /// A weak reference to the ArrayBuffer under the typed array `buffer`, or null.
    fn weak_arraybuffer(&self, buffer: sys::napi_value) -> sys::napi_ref {
        let (mut kind, mut len, mut data, mut arraybuffer, mut offset) =
            (0, 0, std::ptr::null_mut(), std::ptr::null_mut(), 0);
        let mut reference = std::ptr::null_mut();
        // SAFETY: on this environment's JS thread, with `buffer` a live value of it
        // (a Buffer is a Uint8Array); the out-pointers are valid.
        unsafe {
            if sys::napi_get_typedarray_info(
                self.env,
                buffer,
                &mut kind,
                &mut len,
                &mut data,
                &mut arraybuffer,
                &mut offset,
            ) != sys::Status::napi_ok
                || sys::napi_create_reference(self.env, arraybuffer, 0, &mut reference) != sys::Status::napi_ok
            {
                return std::ptr::null_mut();
            }
        }
        reference
    }

    /// View `id`'s Buffer was finalized: whether its memory may be used again (module
    /// docs). Called on the JS thread, from the finalizer.
    pub(super) fn finalized(&self, env: sys::napi_env, id: u64) -> bool {
        let mut inner = self.inner.borrow_mut();
        let reference = inner.live.remove(&id).unwrap_or(std::ptr::null_mut());
        let unseen = inner.unseen.remove(&id);
        let teardown = inner.teardown.as_ref().map(|exclusive| exclusive.contains(&id));
        drop(inner);
        let reusable = match teardown {
            _ if unseen => true,
            Some(exclusive) => exclusive,
            None if js_can_run(env) => true,
            // Teardown has begun, before the sentinel's finalizer: a Buffer collected
            // just before, whose finalizer waited for the event loop. Its ArrayBuffer
            // is gone, and its memory was freed by V8. One whose ArrayBuffer is still
            // alive is finalized here only if Node runs finalizers in another order.
            None => self.collected(reference),
        };
        if !reference.is_null() {
            // SAFETY: a reference this environment made in `watch` and nobody deleted.
            unsafe { sys::napi_delete_reference(env, reference) };
        }
        reusable
    }

    /// Whether the ArrayBuffer `reference` refers to was collected (false if unknown).
    fn collected(&self, reference: sys::napi_ref) -> bool {
        let mut value = std::ptr::null_mut();
        // SAFETY: on the JS thread, in a finalizer (which has a handle scope), with a
        // reference this environment made and has not deleted.
        !reference.is_null()
            && unsafe { sys::napi_get_reference_value(self.env, reference, &mut value) } == sys::Status::napi_ok
            && value.is_null()
    }

    /// Makes a new sentinel if Buffers were made since the last one, so that it is
    /// newer than all of them (module docs). Call after making them, before JS sees
    /// them.
    pub(super) fn rearm(self: &Rc<Self>, env: &Env) -> Result<()> {
        let number = {
            let inner = self.inner.borrow();
            if inner.unjudged.is_empty() || inner.teardown.is_some() {
                return Ok(());
            }
            inner.sentinel_number + 1
        };
        let made = self.make_sentinel(env, number);
        let mut inner = self.inner.borrow_mut();
        match made {
            Ok(reference) => {
                inner.sentinel_number = number;
                inner.unjudged.clear();
                let old = std::mem::replace(&mut inner.sentinel, reference);
                if !old.is_null() {
                    // SAFETY: the previous sentinel's reference, made here and not deleted.
                    unsafe { sys::napi_delete_reference(self.env, old) };
                }
                Ok(())
            }
            Err(e) => {
                if !js_can_run(self.env) {
                    // The environment began to stop (a worker terminated from another
                    // thread) while this batch was made: JS will never be called with
                    // it, so nothing but these Buffers can see their memory.
                    let batch = std::mem::take(&mut inner.unjudged);
                    inner.unseen.extend(batch);
                }
                Err(e)
            }
        }
    }

    /// A new sentinel numbered `number`, held by a strong reference.
    fn make_sentinel(self: &Rc<Self>, env: &Env, number: u64) -> Result<sys::napi_ref> {
        let mut byte = Box::new(0u8);
        let ptr: *mut u8 = &mut *byte;
        let hint = (self.clone(), number, byte);
        // SAFETY: `ptr` points to the boxed byte, which the hint owns, so it stays put
        // until the finalizer drops it; no other Buffer views it.
        let sentinel = unsafe {
            external_buffer(env, ptr, 1, hint, |env, (views, number, byte)| {
                views.sentinel_finalized(&env, number);
                drop(byte)
            })
        }?;
        let mut reference = std::ptr::null_mut();
        // SAFETY: on the JS thread, with a value just made in this environment.
        let status = unsafe { sys::napi_create_reference(self.env, sentinel.raw(), 1, &mut reference) };
        if status != sys::Status::napi_ok {
            return Err(Error::from_reason("fairfs: cannot hold the teardown sentinel"));
        }
        Ok(reference)
    }

    /// A sentinel was finalized: if it is the newest, teardown has begun.
    fn sentinel_finalized(&self, env: &Env, number: u64) {
        let current = {
            let inner = self.inner.borrow();
            inner.sentinel_number == number && inner.teardown.is_none()
        };
        if current && !js_can_run(env.raw()) {
            self.record_exclusive();
        }
    }

    /// Teardown begins: notes which views' memory nothing else can hold.
    fn record_exclusive(&self) {
        let mut inner = self.inner.borrow_mut();
        let mut exclusive = HashSet::new();
        let mut scope = std::ptr::null_mut();
        // SAFETY: on the JS thread, in a finalizer; the handle scope holds the values
        // looked up. The references are this environment's.
        unsafe {
            if sys::napi_open_handle_scope(self.env, &mut scope) == sys::Status::napi_ok {
                for (&id, &reference) in &inner.live {
                    let mut value = std::ptr::null_mut();
                    let mut detached = true;
                    if !reference.is_null()
                        && sys::napi_get_reference_value(self.env, reference, &mut value) == sys::Status::napi_ok
                        && !value.is_null()
                        && sys::napi_is_detached_arraybuffer(self.env, value, &mut detached) == sys::Status::napi_ok
                        && !detached
                    {
                        exclusive.insert(id);
                    }
                }
                sys::napi_close_handle_scope(self.env, scope);
            }
        }
        inner.teardown = Some(exclusive);
    }
}

/// Whether JS may run in `env`: Node stops it before tearing an environment down, and
/// N-API calls that could run JS then fail.
pub(super) fn js_can_run(env: sys::napi_env) -> bool {
    let (mut undefined, mut result) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: on the JS thread of `env`, in a finalizer (which has a handle scope);
    // coercing `undefined` to a boolean runs no JS, but N-API checks first whether JS
    // could run.
    unsafe {
        sys::napi_get_undefined(env, &mut undefined) == sys::Status::napi_ok
            && sys::napi_coerce_to_bool(env, undefined, &mut result) == sys::Status::napi_ok
    }
}
