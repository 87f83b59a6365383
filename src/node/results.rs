//! Finished reads as JS values: Buffers (copied, or external over pooled memory),
//! stream chunks, external latin1 strings, errors, and the batch handed to JS.

use super::*;

/// Whether results must be copied into V8's heap: set `FAIRFS_NO_EXTERNAL_BUFFERS=1`
/// to test the path Electron and other V8-sandbox builds take.
pub(super) fn copy_results() -> bool {
    static COPY: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *COPY.get_or_init(|| std::env::var_os("FAIRFS_NO_EXTERNAL_BUFFERS").is_some_and(|v| v == "1"))
}

/// Whole files below this are copied into V8's heap and their buffer reused at once.
/// Lent memory comes back only after a GC, and between GCs a busy reader would drain
/// the pool and churn the allocator; copying costs little next to the read below this.
pub(super) const LEND_FILES_FROM: usize = 1024 * 1024;

/// Files this big and bigger are not read into memory V8 lends ([`lend_buffer`]): the
/// allocator behind V8 (glibc's malloc) maps every block from 32 MiB up afresh, so each
/// read would fault in and zero all its pages, where pooled memory is warm
/// (docs/tuning.md).
pub(super) const LEND_V8_MEMORY_BELOW: usize = 32 * 1024 * 1024;

/// A Buffer of `bytes`. Results under `lend_from` bytes are copied and their buffer
/// reused at once; larger ones are lent to JS as an external Buffer, whose memory
/// comes back when it is finalized ([`views`]).
pub(super) fn to_buffer<'e>(
    env: &'e Env,
    views: &Rc<Views>,
    mut bytes: PooledBytes,
    lend_from: usize,
) -> Result<BufferSlice<'e>> {
    if bytes.len() < lend_from.max(MIN_CLASS) || copy_results() {
        return BufferSlice::copy_from(env, &*bytes);
    }
    let (ptr, len) = (bytes.as_mut_ptr(), bytes.len());
    external_view(env, views, &ViewedBytes::new(bytes), ptr, len, len)
}

/// Stream chunks smaller than this are copies. Each external Buffer costs Node a
/// tracked ArrayBuffer and a finalizer of its own, which for small chunks costs more
/// than the copy; from here up, lent pieces (kept from V8's count while the pool has
/// stock) spare V8 the mark-compacts that copies held by slow readers start
/// (BENCHMARKS.md, "Stream chunks of their own").
pub(super) const COPY_PIECES_BELOW: usize = 16 * 1024;

/// A stream block as an array of Buffers of `piece` bytes each (the last may be
/// shorter), each over an ArrayBuffer of its own, as node:fs's chunks are: a consumer
/// that transfers one chunk's memory takes nothing from the others. Pieces under
/// [`COPY_PIECES_BELOW`] are copied and the block goes back to the pool at once;
/// otherwise it goes back after its last external piece is finalized.
pub(super) fn to_pieces<'e>(
    env: &'e Env,
    views: &Rc<Views>,
    mut bytes: PooledBytes,
    piece: usize,
) -> Result<Array<'e>> {
    let len = bytes.len();
    let count = len.div_ceil(piece);
    let mut out = env.create_array(count as u32)?;
    if count == 1 {
        out.set(0, to_buffer(env, views, bytes, MIN_CLASS)?)?;
        return Ok(out);
    }
    if piece < COPY_PIECES_BELOW || copy_results() {
        for (i, part) in bytes.chunks(piece).enumerate() {
            out.set(i as u32, BufferSlice::copy_from(env, part)?)?;
        }
        return Ok(out);
    }
    let base = bytes.as_mut_ptr();
    let block = ViewedBytes::new(bytes);
    for i in 0..count {
        let start = i * piece;
        // SAFETY: `start < len`, so the pointer stays inside the block's bytes.
        let ptr = unsafe { base.add(start) };
        out.set(i as u32, external_view(env, views, &block, ptr, piece.min(len - start), len)?)?;
    }
    Ok(out)
}

/// An external Buffer over `ptr..ptr + len`, a range of `block`'s bytes that no
/// other Buffer views; `block_len` is the block's length, whose stock in the pool
/// decides what V8 is told ([`crate::memory::external_memory`]).
pub(super) fn external_view<'e>(
    env: &'e Env,
    views: &Rc<Views>,
    block: &Rc<ViewedBytes>,
    ptr: *mut u8,
    len: usize,
    block_len: usize,
) -> Result<BufferSlice<'e>> {
    // Whether the ledger counts this Buffer as lent: not if N-API copied it instead,
    // or made none (then the finalizer has run before `external_buffer` returns).
    let lent = Rc::new(std::cell::Cell::new(Lending::Creating));
    // The view's id in `views`, once it is watched (never, if N-API copied).
    let view = Rc::new(std::cell::Cell::new(None));
    let hint = (block.clone(), views.clone(), lent.clone(), view.clone());
    // SAFETY: `ptr..ptr + len` are initialised bytes of `block`'s heap buffer, which
    // does not move, and which the hint keeps (a count of `block`) until V8 calls the
    // finalizer. No other Buffer views this range. When the finalizer runs, `views`
    // says whether anything else may still see it; if so `block` is abandoned, never
    // used again, else it goes back to the pool with its last view. If N-API refuses
    // external buffers, or makes no Buffer, the finalizer runs at once.
    let buffer = unsafe {
        views::external_buffer(env, ptr, len, hint, move |env, (block, views, lent, view)| {
            if lent.replace(Lending::Finalized) == Lending::Lent {
                // At thread exit the ledger may be gone, and V8 with it.
                if let Ok(change) = LEDGER.try_with(|ledger| ledger.borrow_mut().collected(len as u64)) {
                    adjust_external_memory(&env, change);
                }
            }
            if let Some(id) = view.get() {
                if !views.finalized(env.raw(), id) {
                    block.abandon();
                }
            }
            drop(block)
        })
    }?;
    // Had the finalizer run already, it was a copy and will not run again.
    if lent.replace(Lending::Lent) == Lending::Creating {
        view.set(Some(views.watch(buffer.raw())));
        let short = !buffer_pool::global().has_stock(block_len);
        if let Ok(change) = LEDGER.try_with(|ledger| ledger.borrow_mut().lent(len as u64, short)) {
            adjust_external_memory(env, change);
        }
    }
    Ok(buffer)
}

/// Where an external Buffer stands with the [`LEDGER`].
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Lending {
    /// Being created: not yet in the ledger.
    Creating,
    /// In the ledger, until its finalizer takes it out.
    Lent,
    /// Finalized: taken out, or (a copy) never in.
    Finalized,
}

thread_local! {
    /// What V8 on this thread is told of the pooled memory lent to its Buffers.
    pub(super) static LEDGER: std::cell::RefCell<Ledger> = std::cell::RefCell::new(Ledger::default());
}

/// Changes V8's count of external memory by `change` bytes. Best effort: failing
/// only means V8 collects sooner or later than it would.
pub(super) fn adjust_external_memory(env: &Env, change: i64) {
    if change != 0 {
        let _ = env.adjust_external_memory(change);
    }
}

/// `node_api_create_external_string_latin1`, where this Node has it (experimental
/// from 20.4, Node-API 10 from 22.14). Looked up at run time, so that a Node without
/// it still loads the addon and gets copied strings.
pub(super) type CreateExternalLatin1 = unsafe extern "C" fn(
    napi::sys::napi_env,
    *mut std::ffi::c_char,
    isize,
    napi::sys::napi_finalize,
    *mut std::ffi::c_void,
    *mut napi::sys::napi_value,
    *mut bool,
) -> napi::sys::napi_status;

pub(super) fn create_external_latin1() -> Option<CreateExternalLatin1> {
    static FOUND: std::sync::OnceLock<Option<CreateExternalLatin1>> = std::sync::OnceLock::new();
    *FOUND.get_or_init(|| {
        let sym = find_node_symbol(c"node_api_create_external_string_latin1");
        // SAFETY: Node exports this symbol with exactly the signature of
        // `CreateExternalLatin1`.
        (!sym.is_null()).then(|| unsafe { std::mem::transmute::<*mut std::ffi::c_void, CreateExternalLatin1>(sym) })
    })
}

/// The address of Node's exported symbol `name`, or null.
#[cfg(unix)]
pub(super) fn find_node_symbol(name: &std::ffi::CStr) -> *mut std::ffi::c_void {
    // SAFETY: dlsym with a NUL-terminated name only looks the symbol up.
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) }
}

/// The address of Node's exported symbol `name`, or null. On Windows Node-API lives
/// in the executable (node.exe, electron.exe), which is where napi-rs finds it too;
/// a Node embedded as libnode.dll gets copied strings.
#[cfg(windows)]
pub(super) fn find_node_symbol(name: &std::ffi::CStr) -> *mut std::ffi::c_void {
    #[link(name = "kernel32")]
    extern "system" {
        fn GetModuleHandleW(name: *const u16) -> *mut std::ffi::c_void;
        fn GetProcAddress(module: *mut std::ffi::c_void, name: *const std::ffi::c_char) -> *mut std::ffi::c_void;
    }
    // SAFETY: a null name asks for the executable's module, which is never unloaded;
    // GetProcAddress with a NUL-terminated name only looks the symbol up.
    unsafe {
        let exe = GetModuleHandleW(std::ptr::null());
        if exe.is_null() {
            return std::ptr::null_mut();
        }
        GetProcAddress(exe, name.as_ptr())
    }
}

/// Frees the bytes behind an external string once V8 has collected it.
pub(super) unsafe extern "C" fn drop_text(
    env: napi::sys::napi_env,
    _data: *mut std::ffi::c_void,
    hint: *mut std::ffi::c_void,
) {
    // SAFETY: `hint` is the `Box<PooledBytes>` leaked in `to_latin1_string`, and V8
    // calls this finalizer once.
    let bytes = unsafe { Box::from_raw(hint.cast::<PooledBytes>()) };
    if !env.is_null() {
        let mut total = 0;
        // SAFETY: `env` is the live environment the string belonged to (null when it
        // is being torn down); adjusting external memory is allowed in finalizers.
        unsafe { napi::sys::napi_adjust_external_memory(env, -(bytes.len() as i64), &mut total) };
    }
}

/// A JS string of the latin1 `bytes`: external (no copy; the bytes go back to the
/// pool after V8 collects the string) from [`LEND_FILES_FROM`] where Node allows it,
/// else copied into V8's heap.
pub(super) fn to_latin1_string(env: &Env, bytes: PooledBytes) -> Result<napi::sys::napi_value> {
    if let Some(create) = create_external_latin1().filter(|_| bytes.len() >= LEND_FILES_FROM && !copy_results()) {
        let (ptr, len) = (bytes.as_ptr(), bytes.len());
        // V8 does not count external strings towards its heap: without this a loop of
        // big text reads held gigabytes until a GC happened to come. The finalizer
        // takes it back, whenever it runs (at once if Node copies).
        env.adjust_external_memory(len as i64)?;
        let hint = Box::into_raw(Box::new(bytes));
        let mut value = std::ptr::null_mut();
        let mut copied = false;
        // SAFETY: `ptr..ptr + len` are the bytes owned by `*hint`, which stay put and
        // unchanged until `drop_text` runs: when V8 collects the string, or at once
        // if Node copied them (`copied`). If the call fails no finalizer runs and we
        // take the bytes back.
        let status = unsafe {
            create(env.raw(), ptr as *mut _, len as isize, Some(drop_text), hint.cast(), &mut value, &mut copied)
        };
        if status == napi::sys::Status::napi_ok {
            return Ok(value);
        }
        // SAFETY: the call failed, so no finalizer owns `hint`.
        let bytes = unsafe { Box::from_raw(hint) };
        env.adjust_external_memory(-(len as i64))?;
        return Ok(env.create_string_latin1(&**bytes)?.raw());
    }
    Ok(env.create_string_latin1(&*bytes)?.raw())
}

/// The lent Buffer, its memory and length; its reference is deleted. `None` if N-API
/// cannot give it back (the read is then reported as an internal failure).
pub(super) fn take_lent(env: &Env, lent: LentBuffer) -> Option<(Unknown<'_>, *const u8, usize)> {
    let mut value = std::ptr::null_mut();
    // SAFETY: on the JS thread, with a reference this environment created; the value
    // stays alive in the current handle scope after the reference is deleted.
    let status = unsafe { napi::sys::napi_get_reference_value(env.raw(), lent.reference, &mut value) };
    delete_reference(env, lent.reference);
    if status != napi::sys::Status::napi_ok || value.is_null() {
        return None;
    }
    // SAFETY: `value` is a live value of this environment.
    Some((unsafe { Unknown::from_raw_unchecked(env.raw(), value) }, lent.data, lent.len))
}

pub(super) fn error_to_js(env: &Env, err: ReadError) -> Result<Unknown<'_>> {
    match err {
        // libuv's error number and the syscall: JS names the error from Node's own
        // map (`util.getSystemErrorMap()`), exactly as node:fs does.
        ReadError::Io(e) => (e.uv_errno(), e.syscall.as_str()).into_unknown(env),
        ReadError::TooLarge { size, limit } => (size as f64, limit as f64).into_unknown(env),
        ReadError::Cancelled => Null.into_unknown(env),
        ReadError::Panicked => ("panic",).into_unknown(env),
    }
}

impl ToNapiValue for Batch {
    /// `[id, result, id, result, ...]`, where result is a Buffer (read), a number
    /// (opened fd), `undefined` (closed), `[uvErrno, syscall]` (OS error: libuv's
    /// negative error number), `[size, limit]` (file over the limit), `['panic']` (a pool
    /// thread panicked), `null` (cancelled), or for a stat the index of its 18 slots in
    /// the batch's stats, which end the batch as the pair `-2, [Float64Array | null,
    /// BigInt64Array | null]`: one typed array per batch, not one per stat, each of
    /// which costs V8 an ArrayBuffer to allocate, register and sweep.
    unsafe fn to_napi_value(raw_env: napi::sys::napi_env, batch: Self) -> Result<napi::sys::napi_value> {
        let env = Env::from_raw(raw_env);
        if !views::js_can_run(raw_env) {
            // The environment is being torn down, and Node flushes the queued call:
            // nobody will see these outcomes, so they are dropped (the memory goes back
            // to the pool, an fd opened for nobody is closed) rather than made into
            // Buffers that teardown would have to judge.
            drop(batch);
            return unsafe { <()>::to_napi_value(raw_env, ()) };
        }
        let mut st = state(&env).ok();
        let views =
            st.as_ref().map(|st| st.views.clone()).ok_or_else(|| Error::from_reason("fairfs: no environment state"))?;
        // The Buffers made here must be judged before their finalizers at teardown,
        // even if making the batch fails part way.
        let rearm = Rearm(&env, &views);
        // Stream blocks: the chunks of the last batches are likely consumed by now, and
        // these not yet made (young_collection_nudge). Not while a Buffer V8 lent a
        // read is held here: a young collection would age it towards the old generation.
        if batch.0.iter().any(|(_, d)| matches!(d, Delivered::Chunk(Ok(_), _)))
            && st.as_ref().is_some_and(|st| st.lent_files.is_empty())
        {
            young_collection_nudge(raw_env);
        }
        let mut out = env.create_array(batch.0.len() as u32 * 2)?;
        // The batch's stats (unix only: elsewhere stats are node:fs's).
        #[cfg_attr(not(unix), allow(unused_mut))]
        let (mut numbers, mut bigints) = (Vec::<f64>::new(), Vec::<i64>::new());
        let pairs = batch.0.len() as u32;
        for (i, (id, delivered)) in batch.0.into_iter().enumerate() {
            out.set(2 * i as u32, id as f64)?;
            let slot = 2 * i as u32 + 1;
            // The outcome of a read lent a Buffer has come, whatever it is: the read
            // no longer writes into the Buffer, and the reference goes.
            let lent = st.as_mut().and_then(|st| st.lent_files.remove(&id)).and_then(|b| take_lent(&env, b));
            match delivered {
                Delivered::LentFile(filled) => match lent {
                    Some((buffer, _, len)) if filled == len => out.set(slot, buffer)?,
                    // The file shrank after fstat: a Buffer of what was read.
                    Some((_, data, len)) => {
                        // SAFETY: `data..data + len` is the lent Buffer's memory, alive
                        // in this scope, and the read that wrote `filled <= len` bytes
                        // of it has finished.
                        let bytes = unsafe { std::slice::from_raw_parts(data, filled.min(len)) };
                        out.set(slot, BufferSlice::copy_from(&env, bytes)?)?
                    }
                    None => out.set(slot, error_to_js(&env, ReadError::Panicked)?)?,
                },
                Delivered::WantsMemory(_) => out.set(slot, error_to_js(&env, ReadError::Panicked)?)?,
                Delivered::Bytes(Ok(bytes)) => out.set(slot, to_buffer(&env, &views, bytes, LEND_FILES_FROM)?)?,
                Delivered::Text(bytes) => {
                    let value = to_latin1_string(&env, bytes)?;
                    // SAFETY: `value` was just created in this environment.
                    out.set(slot, unsafe { Unknown::from_raw_unchecked(raw_env, value) })?
                }
                Delivered::Chunk(Ok(bytes), piece) => out.set(slot, to_pieces(&env, &views, bytes, piece)?)?,
                Delivered::Opened(Ok(fd)) => {
                    let fd = fd.into_raw();
                    if let Some(st) = st.as_mut() {
                        st.fds.insert(fd);
                    }
                    out.set(slot, fd)?
                }
                Delivered::Done(Ok(())) => out.set(slot, ())?,
                #[cfg(unix)]
                Delivered::Written(Ok(n)) => out.set(slot, n as f64)?,
                #[cfg(unix)]
                Delivered::Written(Err(e)) => out.set(slot, error_to_js(&env, e)?)?,
                #[cfg(unix)]
                Delivered::Stats(slots, true) => {
                    out.set(slot, (bigints.len() / 18) as f64)?;
                    bigints.extend_from_slice(&slots);
                }
                #[cfg(unix)]
                Delivered::Stats(slots, false) => {
                    out.set(slot, (numbers.len() / 18) as f64)?;
                    numbers.extend_from_slice(&crate::jobs::metadata::stat_numbers(&slots));
                }
                Delivered::Bytes(Err(e))
                | Delivered::Chunk(Err(e), _)
                | Delivered::Opened(Err(e))
                | Delivered::Done(Err(e)) => out.set(slot, error_to_js(&env, e)?)?,
                Delivered::Cancelled => out.set(slot, Null)?,
                Delivered::Batch(slabs, results) => {
                    // [slabs, spans, others]: result j is `len` bytes at `offset` of
                    // slabs[slab], with spans[3j..3j+3] = [slab, offset, len], or, where
                    // slab is -1, others[j] (a Buffer of its own or an error).
                    let mut slab_list = env.create_array(slabs.len() as u32)?;
                    for (k, slab) in slabs.into_iter().enumerate() {
                        slab_list.set(k as u32, to_buffer(&env, &views, slab, MIN_CLASS)?)?;
                    }
                    let mut spans = vec![-1i32; 3 * results.len()];
                    let mut others = env.create_array(results.len() as u32)?;
                    for (j, outcome) in results.into_iter().enumerate() {
                        match outcome {
                            Ok(Packed::Span { slab, offset, len }) => {
                                spans[3 * j..3 * j + 3].copy_from_slice(&[slab as i32, offset as i32, len as i32])
                            }
                            Ok(Packed::Own(bytes)) => {
                                others.set(j as u32, to_buffer(&env, &views, bytes, LEND_FILES_FROM)?)?
                            }
                            Err(e) => others.set(j as u32, error_to_js(&env, e)?)?,
                        }
                    }
                    let mut triple = env.create_array(3)?;
                    triple.set(0, slab_list)?;
                    triple.set(1, Int32Array::new(spans))?;
                    triple.set(2, others)?;
                    out.set(slot, triple)?
                }
            }
        }
        if !numbers.is_empty() || !bigints.is_empty() {
            let numbers = (!numbers.is_empty()).then(|| Float64Array::new(numbers));
            let bigints = (!bigints.is_empty()).then(|| BigInt64Array::new(bigints));
            out.set(2 * pairs, -2.0)?;
            out.set(2 * pairs + 1, (numbers, bigints))?;
        }
        drop(rearm);
        // SAFETY: `out` was created in `raw_env`, the environment we are called in.
        unsafe { Array::to_napi_value(raw_env, out) }
    }
}

/// Makes the teardown sentinel anew when dropped ([`Views::rearm`]).
pub(super) struct Rearm<'a>(&'a Env, &'a Rc<Views>);

impl Drop for Rearm<'_> {
    fn drop(&mut self) {
        // Failing leaves the last sentinel, older than these Buffers: their finalizers
        // at teardown then find JS stopped and give up what they cannot prove free.
        let _ = self.1.rearm(self.0);
    }
}

/// Lets V8 run a young collection if the Buffers made since its last one hold enough
/// memory outside its heap.
///
/// V8 starts a young collection on the memory of young ArrayBuffers only when it
/// allocates one itself (twice its largest semi-space, 32 MiB on Node 20), never for
/// an external one. So stream chunks over pooled memory, dead as soon as a consumer
/// has written them out, waited for a mark-compact to come back to the pool, and that
/// mark-compact came only once the pool had run dry. Allocating one byte of V8's own
/// memory before a batch of chunks lets V8 apply its own rule: with 32 MiB of dead
/// chunks behind it, a young collection returns them, which costs a fraction of a
/// millisecond when little is alive. Whole-file results are left out: a reader
/// holding each result until its next read completes (a variable of a loop that awaits
/// the next read) keeps them alive across young collections, which then promote them
/// and cost more than they return (ARCHITECTURE.md, "Young collections").
fn young_collection_nudge(env: napi::sys::napi_env) {
    let (mut data, mut value) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: on the JS thread of `env`; the out-pointers are valid.
    unsafe { napi::sys::napi_create_buffer(env, 1, &mut data, &mut value) };
}
