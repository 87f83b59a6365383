//! Small results of a batch packed into shared slabs.
//!
//! A `readFiles` of 10,000 small files would otherwise hold 10,000 buffers until the
//! batch is done, each one a `malloc` on a pool thread (with page faults, as the pool
//! of buffers cannot keep that many), a Buffer of its own on the JS thread, and a
//! `free` there. Packed, each file's bytes are copied into a 64 KiB slab as soon as
//! it is read, its read buffer goes straight back to the buffer pool for the next
//! file, and JS gets a few slabs and makes each result a view of one of them, as
//! node's own pool does for small Buffers. A kept result keeps its slab alive: at
//! most [`SLAB_SIZE`] for one result of up to [`MAX_PACKED`] bytes.

use crate::memory::buffer_pool::{BufferPool, PooledBytes};

/// The size of a slab.
pub const SLAB_SIZE: usize = 64 * 1024;
/// Results up to this size are packed; bigger ones keep their own buffer.
pub const MAX_PACKED: usize = 16 * 1024;

/// Where one result of a batch is.
#[derive(Debug, PartialEq)]
pub enum Packed {
    /// `len` bytes at `offset` in slab number `slab`.
    Span { slab: u32, offset: u32, len: u32 },
    /// A result too big to pack.
    Own(PooledBytes),
}

/// Packs results into slabs from `buffers`. Not thread-safe by itself: a batch keeps
/// it under the lock that guards its results.
#[derive(Debug)]
pub struct Packer {
    slabs: Vec<PooledBytes>,
    buffers: Option<&'static BufferPool>,
}

impl Packer {
    pub fn new(buffers: Option<&'static BufferPool>) -> Packer {
        Packer { slabs: Vec::new(), buffers }
    }

    /// Copies a small result into the current slab (starting a new one when it does
    /// not fit) and releases its buffer; a big one is kept as it is.
    pub fn pack(&mut self, bytes: PooledBytes) -> Packed {
        let len = bytes.len();
        if len > MAX_PACKED {
            return Packed::Own(bytes);
        }
        let fits = self.slabs.last_mut().is_some_and(|s| s.vec_mut().spare_capacity_mut().len() >= len);
        if !fits {
            self.slabs.push(PooledBytes::with_capacity(SLAB_SIZE, self.buffers));
        }
        let slab = self.slabs.len() - 1;
        let vec = self.slabs[slab].vec_mut();
        let offset = vec.len();
        vec.extend_from_slice(&bytes);
        Packed::Span { slab: slab as u32, offset: offset as u32, len: len as u32 }
    }

    /// The slabs, in the order their numbers refer to.
    pub fn into_slabs(self) -> Vec<PooledBytes> {
        self.slabs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(len: usize, fill: u8) -> PooledBytes {
        PooledBytes::unpooled(vec![fill; len])
    }

    #[test]
    fn small_results_share_slabs_and_big_ones_keep_their_buffer() {
        let mut p = Packer::new(None);
        assert_eq!(p.pack(bytes(1000, 1)), Packed::Span { slab: 0, offset: 0, len: 1000 });
        assert_eq!(p.pack(bytes(0, 2)), Packed::Span { slab: 0, offset: 1000, len: 0 });
        assert_eq!(p.pack(bytes(MAX_PACKED + 1, 3)), Packed::Own(bytes(MAX_PACKED + 1, 3)));
        // Fill slab 0 up to 1 byte short, then one that does not fit starts slab 1.
        for _ in 0..3 {
            p.pack(bytes(MAX_PACKED, 4));
        }
        assert_eq!(
            p.pack(bytes(SLAB_SIZE - 1000 - 3 * MAX_PACKED - 1, 5)),
            Packed::Span {
                slab: 0,
                offset: (1000 + 3 * MAX_PACKED) as u32,
                len: (SLAB_SIZE - 1000 - 3 * MAX_PACKED - 1) as u32
            }
        );
        assert_eq!(p.pack(bytes(2, 6)), Packed::Span { slab: 1, offset: 0, len: 2 });
        let slabs = p.into_slabs();
        assert_eq!(slabs.len(), 2);
        assert_eq!(slabs[0].len(), SLAB_SIZE - 1);
        assert_eq!(&slabs[0][..1000], &[1; 1000][..]);
        assert_eq!(slabs[0][1000], 4);
        assert_eq!(slabs[0][SLAB_SIZE - 2], 5);
        assert_eq!(&slabs[1][..], &[6, 6][..]);
    }

    #[test]
    fn packed_buffers_go_back_to_the_pool_at_once() {
        static POOL: std::sync::OnceLock<BufferPool> = std::sync::OnceLock::new();
        let pool = POOL.get_or_init(|| BufferPool::new(1 << 20));
        let mut p = Packer::new(Some(pool));
        for _ in 0..100 {
            let mut b = PooledBytes::with_capacity(1024, Some(pool));
            b.vec_mut().extend_from_slice(&[7; 1024]);
            p.pack(b);
        }
        // One 4 KiB read buffer cycled 100 times, plus two 64 KiB slabs.
        let stats = pool.stats();
        assert_eq!(stats.misses, 3, "{stats:?}");
        assert_eq!(stats.hits, 99);
        assert_eq!(p.into_slabs().len(), 2);
    }
}
