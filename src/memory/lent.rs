//! Memory a caller lends a read to fill, instead of a pooled buffer.
//!
//! In the binding it is a JS Buffer that V8 allocated. V8 then owns the result as
//! ordinary memory of its own, which a scavenge frees once it is garbage. A pooled
//! buffer handed to JS needs a finalizer instead, and V8 keeps a Buffer with a
//! finalizer through scavenges: every such result costs a mark-compact (a loop of
//! 16 MiB reads ran one per read). Whole big files read alone ([`crate::read`],
//! [`crate::parts`]) read into lent memory.

use std::mem::MaybeUninit;

use crate::memory::buffer_pool::PooledBytes;

/// `len` bytes at `ptr`, lent until this is dropped.
pub struct Lent {
    ptr: *mut MaybeUninit<u8>,
    len: usize,
    /// Dropped after the last write: the lender may then free the memory.
    _guard: Box<dyn Send>,
}

// SAFETY: the memory belongs to this `Lent` alone until it is dropped (see `Lent::new`),
// so moving it to a pool thread moves the only access.
unsafe impl Send for Lent {}

impl Lent {
    /// # Safety
    /// `ptr..ptr + len` must stay valid for writes, and be neither read nor written by
    /// anyone else, until `guard` is dropped.
    pub unsafe fn new(ptr: *mut u8, len: usize, guard: Box<dyn Send>) -> Lent {
        Lent { ptr: ptr.cast(), len, _guard: guard }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The start of the memory, for [`crate::parts`], which hands out disjoint
    /// stretches of it while it keeps this `Lent`.
    pub(crate) fn base(&mut self) -> *mut MaybeUninit<u8> {
        self.ptr
    }
}

impl std::fmt::Debug for Lent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lent").field("len", &self.len).finish_non_exhaustive()
    }
}

/// What a finished read filled: pooled bytes, or how many bytes went into the lent
/// memory (from its start).
#[derive(Debug)]
pub enum Filled {
    Pooled(PooledBytes),
    Lent(usize),
}

impl Filled {
    /// The pooled bytes, if the read filled pooled memory.
    pub fn into_pooled(self) -> Option<PooledBytes> {
        match self {
            Filled::Pooled(bytes) => Some(bytes),
            Filled::Lent(_) => None,
        }
    }
}
