//! Bytes a caller lets a write take from its own memory, without a copy.
//!
//! In the binding it is the JS Buffer passed to `writeFile`, held by a reference
//! until the outcome is delivered (node:fs holds its Buffer the same way while libuv
//! writes from it). [`crate::memory::lent`] is the other direction: memory a read fills.

/// `len` bytes at `ptr`, readable until this is dropped.
pub struct Borrowed {
    ptr: *const u8,
    len: usize,
    /// Dropped after the last write: the lender may then free or change the memory.
    _guard: Box<dyn Send>,
}

// SAFETY: the memory stays valid and unchanged by its owner until this is dropped
// (see `Borrowed::new`), and `Borrowed` only reads it, so it may be read from any one
// thread at a time.
unsafe impl Send for Borrowed {}

impl Borrowed {
    /// # Safety
    /// `ptr..ptr + len` must stay valid for reads until `guard` is dropped. Whoever
    /// writes into it meanwhile gets the bytes written torn, as with node:fs, but no
    /// memory is freed under the write.
    pub unsafe fn new(ptr: *const u8, len: usize, guard: Box<dyn Send>) -> Borrowed {
        Borrowed { ptr, len, _guard: guard }
    }

    /// Bytes this owns (tests, benchmarks and callers in Rust).
    pub fn owned(bytes: Vec<u8>) -> Borrowed {
        let (ptr, len) = (bytes.as_ptr(), bytes.len());
        // SAFETY: the Vec's heap memory does not move when the Vec is moved into the
        // guard, and nothing changes it until the guard, and with it the Vec, is dropped.
        unsafe { Borrowed::new(ptr, len, Box::new(bytes)) }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_slice(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: valid for reads of `len` bytes while `self` lives (`Borrowed::new`).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl std::fmt::Debug for Borrowed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Borrowed").field("len", &self.len).finish_non_exhaustive()
    }
}
