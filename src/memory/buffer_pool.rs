//! A lock-free pool of reusable byte buffers, in size classes.
//!
//! Reading into fresh memory costs a page fault per 4 KiB on first touch, about as
//! much as the copy from the page cache itself. Buffers that come back to the pool
//! keep their pages, so a reused buffer is read into at copy speed.
//!
//! * **Classes.** Sizes run from 4 KiB to 64 MiB with four classes per doubling
//!   (4, 5, 6, 7, 8, 10, 12, 14, 16 KiB, ...), so rounding a request up to its class
//!   wastes less than 20% of the buffer.
//! * **Free lists.** One bounded lock-free queue per class: crossbeam's `ArrayQueue`
//!   (Dmitry Vyukov's bounded MPMC queue). Under loom a mutex-guarded deque stands in,
//!   since loom cannot see inside crossbeam.
//! * **Cap.** The bytes kept in the free lists never exceed the cap; a buffer
//!   released over it is freed. [`BufferPool::trim`] frees them all, which the worker
//!   pool does when it has been idle for a while.
//! * **More while big reads run.** The cap is `max_pooled_bytes` plus
//!   [`STOCK_PER_BYTE_IN_FLIGHT`] times the bytes granted to big reads in flight
//!   (at most `maxBytesInFlight` of them; the process-wide worker pool reports them,
//!   and reports none while its contention governor holds big reads back).
//!   Their results come back only when V8 collects them, all at once, and the reads
//!   after a collection need that stock: with a cap of 64 MiB, ten 16 MiB reads at a
//!   time missed the pool on half their buffers and faulted fresh pages in.
//! * **Waits a little for big buffers on their way back.** [`BufferPool::acquire`]
//!   allocates when its class is empty. [`BufferPool::acquire_or_wait`], which the
//!   worker pool's reads use, first waits up to [`STOCK_PATIENCE`] for a buffer of
//!   4 MiB or more to come back, when buffers of that size have been coming back and
//!   a worker would still be left to serve the queue. Results come back in bursts,
//!   after a collection; a miss in between faults in and zeroes a fresh buffer, and
//!   the burst then finds the pool full and frees as much.
//!
//! A buffer is a `Vec<u8>` whose capacity is exactly its class size; anything else
//! (a request above the largest class, or a `Vec` from elsewhere) is simply freed on
//! release.

use crate::loom::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
use crate::loom::sync::{Condvar, Mutex};
use crate::memory::free_later;

/// Smallest pooled size: below this, copying is as cheap as pooling.
/// Buffers from this size on ask for transparent huge pages.
const HUGE_FROM: usize = 4 << 20;
/// Smallest class [`BufferPool::acquire_or_wait`] waits for.
const WAIT_FROM: usize = 4 << 20;
/// How long [`BufferPool::acquire_or_wait`] waits for stock. After a mark-compact
/// that V8 was told to run, results are back within a few milliseconds.
pub const STOCK_PATIENCE: std::time::Duration = std::time::Duration::from_millis(5);
pub const MIN_CLASS: usize = 4 * 1024;
/// Largest pooled size.
pub const MAX_CLASS: usize = 64 * 1024 * 1024;
/// Default cap on the bytes kept in the free lists while no big read is in flight.
pub const DEFAULT_MAX_POOLED_BYTES: usize = 64 * 1024 * 1024;
/// Bytes the pool may keep beyond `max_pooled_bytes` for each byte granted to big
/// reads in flight. Ten 16 MiB reads at a time (64 MiB in flight) on Node 20 ran at
/// 1.2-2x the reads/s with 256 MiB of stock as with 64, and no faster with 1 GiB.
pub const STOCK_PER_BYTE_IN_FLIGHT: usize = 3;

/// What the `test-hooks` build writes into every buffer that comes back to the pool.
#[cfg(feature = "test-hooks")]
pub const POISON: u8 = 0xDB;

/// Counters reported by [`BufferPool::stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Acquires served from a free list.
    pub hits: u64,
    /// Acquires that had to allocate.
    pub misses: u64,
    /// Bytes currently kept in the free lists.
    pub pooled_bytes: usize,
    /// Class-sized buffers handed out and not yet released.
    pub outstanding: u64,
    /// Acquires served by a buffer that came back while they waited.
    pub waited: u64,
}

#[cfg(not(fairfs_loom))]
type FreeList = crossbeam_queue::ArrayQueue<Vec<u8>>;

/// The loom stand-in for `ArrayQueue`, with the same `push`/`pop` contract.
#[cfg(fairfs_loom)]
struct FreeList {
    cap: usize,
    items: crate::loom::sync::Mutex<std::collections::VecDeque<Vec<u8>>>,
}

#[cfg(fairfs_loom)]
impl FreeList {
    fn new(cap: usize) -> Self {
        FreeList { cap, items: crate::loom::sync::Mutex::new(Default::default()) }
    }
    fn push(&self, v: Vec<u8>) -> Result<(), Vec<u8>> {
        let mut items = self.items.lock().unwrap();
        if items.len() == self.cap {
            return Err(v);
        }
        items.push_back(v);
        Ok(())
    }
    fn pop(&self) -> Option<Vec<u8>> {
        self.items.lock().unwrap().pop_front()
    }
    fn is_empty(&self) -> bool {
        self.items.lock().unwrap().is_empty()
    }
}

struct Class {
    size: usize,
    free: FreeList,
}

/// The buffer pool. See the module docs.
pub struct BufferPool {
    classes: Vec<Class>,
    /// Cap on `pooled_bytes` while no big read is in flight.
    max_pooled_bytes: AtomicUsize,
    /// Bytes granted to big reads in flight, as the worker pool last reported them:
    /// at most its `maxBytesInFlight`, and 0 while its governor holds them back.
    bytes_in_flight: AtomicUsize,
    /// Bytes in the free lists. Reserved before a push, so it never exceeds the cap.
    pooled_bytes: AtomicUsize,
    hits: AtomicU64,
    misses: AtomicU64,
    /// Class-sized buffers handed out and not yet released.
    outstanding: AtomicU64,
    /// Acquires served after waiting.
    waited: AtomicU64,
    /// How many threads may wait for stock at once: the worker pool's threads less
    /// one, so that one is always left to serve the queue (small reads). 0: none.
    max_waiters: AtomicUsize,
    /// Threads waiting for stock now.
    waiters: AtomicUsize,
    /// Whether a big buffer has come back since the last wait ran out of patience.
    /// Results a program keeps (a cache) never come back; waiting for them would only
    /// add [`STOCK_PATIENCE`] to every read.
    returning: AtomicBool,
    /// Wakes waiters when a big buffer comes back.
    stock: (Mutex<()>, Condvar),
    /// How long a waiter waits: [`STOCK_PATIENCE`], longer in tests.
    patience: std::time::Duration,
}

/// The sizes of all classes, ascending.
pub fn class_sizes() -> impl Iterator<Item = usize> {
    (MIN_CLASS.trailing_zeros()..MAX_CLASS.trailing_zeros())
        .flat_map(|shift| (4..8).map(move |m| (m << shift) / 4))
        .chain(std::iter::once(MAX_CLASS))
}

impl BufferPool {
    pub fn new(max_pooled_bytes: usize) -> Self {
        let classes = class_sizes()
            .map(|size| Class {
                size,
                // Enough slots to hold 256 MiB of this class, within sane bounds.
                free: FreeList::new(((256 << 20) / size).clamp(2, 1024)),
            })
            .collect();
        BufferPool {
            classes,
            max_pooled_bytes: AtomicUsize::new(max_pooled_bytes),
            bytes_in_flight: AtomicUsize::new(0),
            pooled_bytes: AtomicUsize::new(0),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            outstanding: AtomicU64::new(0),
            waited: AtomicU64::new(0),
            max_waiters: AtomicUsize::new(0),
            waiters: AtomicUsize::new(0),
            returning: AtomicBool::new(false),
            stock: (Mutex::new(()), Condvar::new()),
            patience: STOCK_PATIENCE,
        }
    }

    /// The class a request of `len` bytes is served from: the smallest class that fits.
    fn class_for_len(&self, len: usize) -> Option<&Class> {
        let i = self.classes.partition_point(|c| c.size < len);
        self.classes.get(i)
    }

    /// Whether a request of `len` bytes would be served from the free lists now. A
    /// size the pool does not keep is never in stock.
    pub fn has_stock(&self, len: usize) -> bool {
        self.class_for_len(len.max(1)).is_some_and(|class| !class.free.is_empty())
    }

    /// An empty `Vec` with capacity of at least `len` bytes: a pooled one when its
    /// class has one, otherwise a fresh allocation. Never blocks.
    pub fn acquire(&self, len: usize) -> Vec<u8> {
        let Some(class) = self.class_for_len(len.max(1)) else {
            return Vec::with_capacity(len);
        };
        self.outstanding.fetch_add(1, Ordering::Relaxed);
        match class.free.pop() {
            Some(buf) => {
                self.count_hit(class);
                buf
            }
            None => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                let mut v: Vec<u8> = Vec::with_capacity(class.size);
                if class.size >= HUGE_FROM {
                    crate::sys::advise_huge_pages(v.spare_capacity_mut());
                }
                v
            }
        }
    }

    /// [`BufferPool::acquire`], but a big class that is empty while its buffers have
    /// been coming back first waits up to [`STOCK_PATIENCE`] for one, if fewer than
    /// [`BufferPool::set_max_waiters`] threads wait already. Only threads that do
    /// not run JS may call it: results come back on the JS thread.
    pub fn acquire_or_wait(&self, len: usize) -> Vec<u8> {
        if let Some(class) = self.class_for_len(len.max(1)).filter(|c| c.size >= WAIT_FROM) {
            if class.free.is_empty() && self.returning.load(Ordering::Relaxed) {
                if let Some(buf) = self.wait_for_stock(class) {
                    self.outstanding.fetch_add(1, Ordering::Relaxed);
                    self.count_hit(class);
                    self.waited.fetch_add(1, Ordering::Relaxed);
                    return buf;
                }
            }
        }
        self.acquire(len)
    }

    /// A buffer of `class` taken from its free list: it leaves the pooled bytes.
    fn count_hit(&self, class: &Class) {
        self.pooled_bytes.fetch_sub(class.size, Ordering::Relaxed);
        self.hits.fetch_add(1, Ordering::Relaxed);
    }

    /// A buffer of `class` that comes back within the pool's patience; `None` if this
    /// thread may not wait (as many wait already), or if none came back in time, and
    /// then no thread waits again until one comes back.
    fn wait_for_stock(&self, class: &Class) -> Option<Vec<u8>> {
        let max = self.max_waiters.load(Ordering::Relaxed);
        self.waiters.fetch_update(Ordering::SeqCst, Ordering::Relaxed, |w| (w < max).then_some(w + 1)).ok()?;
        // With the fence after a release's push: either the release sees this waiter
        // and notifies it, or the look below finds its buffer.
        fence(Ordering::SeqCst);
        let deadline = std::time::Instant::now() + self.patience;
        let mut guard = self.stock.0.lock().unwrap();
        let found = loop {
            // Checked under the lock a release takes to notify, so no wakeup is lost.
            if let Some(buf) = class.free.pop() {
                break Some(buf);
            }
            let now = std::time::Instant::now();
            if now >= deadline {
                self.returning.store(false, Ordering::Relaxed);
                break None;
            }
            guard = self.stock.1.wait_timeout(guard, deadline - now).unwrap().0;
        };
        drop(guard);
        self.waiters.fetch_sub(1, Ordering::Relaxed);
        found
    }

    /// How many threads may wait in [`BufferPool::acquire_or_wait`] at once.
    pub fn set_max_waiters(&self, max: usize) {
        self.max_waiters.store(max, Ordering::Relaxed);
    }

    /// Takes a buffer back. It is kept if it is class-sized and fits under the cap,
    /// and freed otherwise. The caller must not use it again: whoever could still see
    /// its bytes (a JS Buffer) must be gone.
    pub fn release(&self, mut buf: Vec<u8>) {
        let cap = buf.capacity();
        let Some(class) = self.class_for_len(cap).filter(|c| c.size == cap) else {
            return free_later::free(buf);
        };
        self.outstanding.fetch_sub(1, Ordering::Relaxed);
        if !self.reserve(cap) {
            // Full: make room by freeing buffers of other sizes, so the pool follows
            // the sizes in use instead of keeping whatever filled it first.
            if cap > self.cap() || !self.evict_except(class.size, cap) || !self.reserve(cap) {
                return free_later::free(buf);
            }
        }
        buf.clear();
        #[cfg(feature = "test-hooks")]
        buf.spare_capacity_mut().fill(std::mem::MaybeUninit::new(POISON));
        if let Err(buf) = class.free.push(buf) {
            self.pooled_bytes.fetch_sub(cap, Ordering::Relaxed);
            return free_later::free(buf);
        }
        if cap >= WAIT_FROM {
            self.returning.store(true, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            if self.waiters.load(Ordering::Relaxed) > 0 {
                // Taking the lock orders this push before a waiter's next look.
                let _guard = self.stock.0.lock().unwrap();
                self.stock.1.notify_all();
            }
        }
    }

    /// Counts `bytes` into the pool if that stays under the cap.
    fn reserve(&self, bytes: usize) -> bool {
        let max = self.cap();
        let before = self.pooled_bytes.fetch_add(bytes, Ordering::Relaxed);
        if before + bytes > max {
            self.pooled_bytes.fetch_sub(bytes, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Frees pooled buffers of classes other than `keep`, largest first, until at
    /// least `bytes` are freed. Returns whether it freed that much.
    fn evict_except(&self, keep: usize, bytes: usize) -> bool {
        let mut freed = 0;
        for class in self.classes.iter().rev().filter(|c| c.size != keep) {
            while freed < bytes {
                let Some(buf) = class.free.pop() else { break };
                self.pooled_bytes.fetch_sub(class.size, Ordering::Relaxed);
                freed += class.size;
                free_later::free(buf);
            }
            if freed >= bytes {
                return true;
            }
        }
        false
    }

    /// Sets the cap; buffers over a lowered cap are freed by [`BufferPool::trim`] or
    /// as they are acquired.
    pub fn set_max_pooled_bytes(&self, max: usize) {
        self.max_pooled_bytes.store(max, Ordering::Relaxed);
        if self.pooled_bytes.load(Ordering::Relaxed) > max {
            self.trim();
        }
    }

    pub fn max_pooled_bytes(&self) -> usize {
        self.max_pooled_bytes.load(Ordering::Relaxed)
    }

    /// The worker pool's bytes granted to big reads in flight (bounded by its limit
    /// on them, and 0 while its governor holds big reads back) changed to `bytes`.
    ///
    /// At 0 the stock over `max_pooled_bytes` is freed at once: the burst of big reads
    /// is over or held back, and a busy process may never idle long enough to trim.
    pub fn set_bytes_in_flight(&self, bytes: u64) {
        self.bytes_in_flight.store(usize::try_from(bytes).unwrap_or(usize::MAX), Ordering::Relaxed);
        if bytes == 0 {
            self.free_over(self.max_pooled_bytes.load(Ordering::Relaxed));
        }
    }

    /// Frees pooled buffers, largest first, until at most `max` bytes are kept.
    fn free_over(&self, max: usize) {
        for class in self.classes.iter().rev() {
            while self.pooled_bytes.load(Ordering::Relaxed) > max {
                let Some(buf) = class.free.pop() else { break };
                self.pooled_bytes.fetch_sub(class.size, Ordering::Relaxed);
                free_later::free(buf);
            }
        }
    }

    /// The most bytes the free lists may hold now (module docs).
    pub fn cap(&self) -> usize {
        let extra = self.bytes_in_flight.load(Ordering::Relaxed).saturating_mul(STOCK_PER_BYTE_IN_FLIGHT);
        self.max_pooled_bytes.load(Ordering::Relaxed).saturating_add(extra)
    }

    /// Frees every pooled buffer.
    pub fn trim(&self) {
        self.free_over(0);
    }

    pub fn stats(&self) -> PoolStats {
        PoolStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            pooled_bytes: self.pooled_bytes.load(Ordering::Relaxed),
            outstanding: self.outstanding.load(Ordering::Relaxed),
            waited: self.waited.load(Ordering::Relaxed),
        }
    }
}

/// Bytes in a buffer that may belong to a [`BufferPool`]. Dropping it gives the
/// buffer back to its pool, so failed and cancelled reads return their memory too.
pub struct PooledBytes {
    data: Vec<u8>,
    pool: Option<&'static BufferPool>,
}

impl PooledBytes {
    /// An empty buffer of capacity `len` or more, from `pool` if there is one.
    pub fn with_capacity(len: usize, pool: Option<&'static BufferPool>) -> Self {
        Self::take(len, pool, BufferPool::acquire)
    }

    /// [`PooledBytes::with_capacity`] for a file read on a worker thread, which may
    /// wait a little for stock ([`BufferPool::acquire_or_wait`]).
    pub fn for_read(len: usize, pool: Option<&'static BufferPool>) -> Self {
        Self::take(len, pool, BufferPool::acquire_or_wait)
    }

    /// `len` bytes of capacity through `acquire` from `pool`, or allocated here where
    /// there is no pool or `len` is over its largest class.
    fn take(len: usize, pool: Option<&'static BufferPool>, acquire: fn(&BufferPool, usize) -> Vec<u8>) -> Self {
        match pool {
            Some(p) if len <= MAX_CLASS => PooledBytes { data: acquire(p, len), pool },
            _ => PooledBytes { data: Vec::with_capacity(len), pool: None },
        }
    }

    /// Bytes that belong to no pool.
    pub fn unpooled(data: Vec<u8>) -> Self {
        PooledBytes { data, pool: None }
    }

    /// The buffer, to read into its spare capacity.
    pub fn vec_mut(&mut self) -> &mut Vec<u8> {
        &mut self.data
    }

    /// Takes the bytes out of the pool's accounting for good.
    pub fn into_vec(mut self) -> Vec<u8> {
        if let Some(pool) = self.pool.take() {
            pool.outstanding.fetch_sub(1, Ordering::Relaxed);
        }
        std::mem::take(&mut self.data)
    }

    /// Gives the bytes up for good: they are neither pooled again nor freed, because
    /// something outside Rust may still read or write them (a JS ArrayBuffer on
    /// another thread). Returns how many bytes that was.
    pub fn abandon(mut self) -> usize {
        let data = std::mem::take(&mut self.data);
        if let Some(pool) = self.pool.take() {
            pool.outstanding.fetch_sub(1, Ordering::Relaxed);
        }
        let bytes = data.capacity();
        std::mem::forget(data);
        bytes
    }
}

impl Drop for PooledBytes {
    fn drop(&mut self) {
        let data = std::mem::take(&mut self.data);
        match self.pool {
            Some(pool) => pool.release(data),
            None => free_later::free(data),
        }
    }
}

impl std::ops::Deref for PooledBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.data
    }
}

impl std::ops::DerefMut for PooledBytes {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.data
    }
}

impl std::fmt::Debug for PooledBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PooledBytes").field("len", &self.data.len()).field("pooled", &self.pool.is_some()).finish()
    }
}

impl PartialEq for PooledBytes {
    fn eq(&self, other: &Self) -> bool {
        self.data == other.data
    }
}

impl PartialEq<Vec<u8>> for PooledBytes {
    fn eq(&self, other: &Vec<u8>) -> bool {
        &self.data == other
    }
}

impl PartialEq<&[u8]> for PooledBytes {
    fn eq(&self, other: &&[u8]) -> bool {
        self.data == *other
    }
}

impl<const N: usize> PartialEq<&[u8; N]> for PooledBytes {
    fn eq(&self, other: &&[u8; N]) -> bool {
        self.data == other[..]
    }
}

impl std::fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufferPool").field("stats", &self.stats()).finish_non_exhaustive()
    }
}

/// The process-wide buffer pool.
#[cfg(not(fairfs_loom))]
pub fn global() -> &'static BufferPool {
    static GLOBAL: std::sync::OnceLock<BufferPool> = std::sync::OnceLock::new();
    GLOBAL.get_or_init(|| BufferPool::new(DEFAULT_MAX_POOLED_BYTES))
}

#[cfg(all(test, not(fairfs_loom)))]
mod tests {
    use super::*;

    /// A pool whose big classes have been coming back (one 4 MiB buffer went out and
    /// came back) and are empty now, with `patience` for waiters.
    fn drained(max_waiters: usize, patience: std::time::Duration) -> (BufferPool, Vec<u8>) {
        let pool = BufferPool { patience, ..BufferPool::new(64 << 20) };
        pool.set_max_waiters(max_waiters);
        pool.release(pool.acquire(WAIT_FROM));
        let out = pool.acquire(WAIT_FROM);
        (pool, out)
    }

    #[test]
    fn a_waiting_read_gets_the_buffer_that_comes_back() {
        let (pool, out) = drained(1, std::time::Duration::from_secs(60));
        std::thread::scope(|s| {
            let waiter = s.spawn(|| pool.acquire_or_wait(WAIT_FROM));
            while pool.waiters.load(Ordering::Relaxed) == 0 {
                std::thread::yield_now();
            }
            pool.release(out);
            assert_eq!(waiter.join().unwrap().capacity(), WAIT_FROM);
        });
        let s = pool.stats();
        assert_eq!((s.hits, s.misses, s.waited, s.outstanding, s.pooled_bytes), (2, 1, 1, 1, 0));
    }

    #[test]
    fn waiting_stops_once_patience_runs_out_until_a_buffer_comes_back() {
        let (mut pool, out) = drained(1, std::time::Duration::from_millis(1));
        let t = std::time::Instant::now();
        let fresh = pool.acquire_or_wait(WAIT_FROM);
        assert!(t.elapsed() >= std::time::Duration::from_millis(1), "it waited");
        assert_eq!((pool.stats().misses, pool.stats().waited), (2, 0));
        // Nothing came back since: the next read does not wait (it would for a minute).
        pool.patience = std::time::Duration::from_secs(60);
        let t = std::time::Instant::now();
        let again = pool.acquire_or_wait(WAIT_FROM);
        assert!(t.elapsed() < std::time::Duration::from_secs(30), "did not wait");
        // One comes back: waiting resumes, and finds it.
        pool.release(out);
        pool.release(pool.acquire(WAIT_FROM));
        assert_eq!(pool.acquire_or_wait(WAIT_FROM).capacity(), WAIT_FROM);
        drop((fresh, again));
    }

    #[test]
    fn no_waiting_without_a_spare_worker_or_for_small_classes() {
        let (pool, _out) = drained(0, std::time::Duration::from_secs(60));
        let t = std::time::Instant::now();
        assert_eq!(pool.acquire_or_wait(WAIT_FROM).capacity(), WAIT_FROM);
        let pool = BufferPool { patience: std::time::Duration::from_secs(60), ..BufferPool::new(64 << 20) };
        pool.set_max_waiters(4);
        pool.release(pool.acquire(WAIT_FROM));
        pool.release(pool.acquire(WAIT_FROM / 2));
        let _half = pool.acquire(WAIT_FROM / 2);
        assert_eq!(pool.acquire_or_wait(WAIT_FROM / 2).capacity(), WAIT_FROM / 2, "below 4 MiB: a fresh one");
        assert!(t.elapsed() < std::time::Duration::from_secs(30), "neither waited");
        assert_eq!(pool.stats().waited, 0);
    }

    #[test]
    fn classes_waste_less_than_a_quarter() {
        let sizes: Vec<_> = class_sizes().collect();
        assert_eq!(sizes[..6], [4096, 5120, 6144, 7168, 8192, 10240]);
        assert_eq!(*sizes.last().unwrap(), MAX_CLASS);
        assert!(sizes.windows(2).all(|w| w[0] < w[1]));
        let pool = BufferPool::new(0);
        for len in (MIN_CLASS..=MAX_CLASS).step_by(4093).chain([MIN_CLASS + 1, MAX_CLASS - 1, 1, 100]) {
            let class = pool.class_for_len(len).unwrap().size;
            assert!(class >= len);
            let waste = (class - len) as f64 / class as f64;
            assert!(waste < 0.25 || len < MIN_CLASS, "len {len} class {class} waste {waste}");
        }
    }

    #[test]
    fn released_buffers_are_reused_with_their_memory() {
        let pool = BufferPool::new(1 << 20);
        let mut a = pool.acquire(10_000);
        assert_eq!(a.capacity(), 10_240);
        a.extend_from_slice(&[7; 10_000]);
        let ptr = a.as_ptr();
        pool.release(a);
        assert_eq!(pool.stats(), PoolStats { hits: 0, misses: 1, pooled_bytes: 10_240, outstanding: 0, waited: 0 });
        let b = pool.acquire(9_000);
        assert_eq!(b.as_ptr(), ptr, "same memory, so no new page faults");
        assert!(b.is_empty());
        assert_eq!(pool.stats(), PoolStats { hits: 1, misses: 1, pooled_bytes: 0, outstanding: 1, waited: 0 });
    }

    #[test]
    fn abandoned_bytes_leave_the_accounting_and_never_come_back() {
        let pool: &'static BufferPool = Box::leak(Box::new(BufferPool::new(1 << 20)));
        let mut bytes = PooledBytes::with_capacity(10_000, Some(pool));
        bytes.vec_mut().extend_from_slice(&[7; 10_000]);
        let ptr = bytes.as_ptr();
        assert_eq!(pool.stats().outstanding, 1);
        assert_eq!(bytes.abandon(), 10_240, "the whole class-sized buffer");
        assert_eq!(pool.stats(), PoolStats { hits: 0, misses: 1, pooled_bytes: 0, outstanding: 0, waited: 0 });
        let next = PooledBytes::with_capacity(10_000, Some(pool));
        assert_ne!(next.as_ptr(), ptr, "an abandoned buffer is never handed out again");
        // SAFETY: the abandoned buffer was never freed, so its bytes are still readable.
        assert_eq!(unsafe { *ptr.add(9_999) }, 7, "nor freed");
    }

    #[test]
    fn stock_is_per_class() {
        let pool = BufferPool::new(1 << 20);
        assert!(!pool.has_stock(10_000), "an empty pool has none");
        let a = pool.acquire(10_000);
        pool.release(a);
        assert!(pool.has_stock(9_000), "the same class");
        assert!(!pool.has_stock(20_000), "a bigger class has none");
        assert!(!pool.has_stock(MAX_CLASS + 1), "a size the pool does not keep");
        let _b = pool.acquire(9_000);
        assert!(!pool.has_stock(9_000), "taken");
    }

    #[test]
    fn cap_bounds_pooled_bytes_and_trim_frees_all() {
        let pool = BufferPool::new(3 * 65_536);
        let bufs: Vec<_> = (0..5).map(|_| pool.acquire(65_536)).collect();
        for b in bufs {
            pool.release(b);
        }
        assert_eq!(pool.stats().pooled_bytes, 3 * 65_536);
        assert_eq!(pool.stats().outstanding, 0);
        pool.set_max_pooled_bytes(65_536);
        assert_eq!(pool.stats().pooled_bytes, 0, "lowering the cap trims");
        pool.release(pool.acquire(65_536));
        assert_eq!(pool.stats().pooled_bytes, 65_536);
        pool.trim();
        assert_eq!(pool.stats().pooled_bytes, 0);
    }

    #[test]
    fn big_reads_in_flight_raise_the_cap_by_three_times_their_bytes() {
        let pool = BufferPool::new(2 * 65_536);
        pool.set_bytes_in_flight(65_536);
        assert_eq!(pool.cap(), 5 * 65_536);
        let bufs: Vec<_> = (0..6).map(|_| pool.acquire(65_536)).collect();
        bufs.into_iter().for_each(|b| pool.release(b));
        assert_eq!(pool.stats().pooled_bytes, 5 * 65_536, "kept up to the raised cap, the sixth freed");
        pool.set_bytes_in_flight(65_536 / 2);
        assert_eq!(pool.stats().pooled_bytes, 5 * 65_536, "a lower cap frees nothing while big reads run");
        let bufs: Vec<_> = (0..2).map(|_| pool.acquire(65_536)).collect();
        bufs.into_iter().for_each(|b| pool.release(b));
        assert_eq!(pool.stats().pooled_bytes, 3 * 65_536, "but releases over it (3.5 buffers) are freed");
        pool.set_bytes_in_flight(0);
        assert_eq!(pool.stats().pooled_bytes, 2 * 65_536, "with none in flight the stock falls back to the cap");
    }

    #[test]
    fn a_full_pool_makes_room_for_the_size_in_use() {
        let pool = BufferPool::new(4 * 65_536);
        let old: Vec<_> = (0..4).map(|_| pool.acquire(65_536)).collect();
        old.into_iter().for_each(|b| pool.release(b));
        assert_eq!(pool.stats().pooled_bytes, 4 * 65_536, "full of 64 KiB buffers");
        // Now the application reads 8 KiB files: their buffers displace the old ones.
        let new: Vec<_> = (0..10).map(|_| pool.acquire(8192)).collect();
        new.into_iter().for_each(|b| pool.release(b));
        assert!(pool.stats().pooled_bytes <= 4 * 65_536);
        let misses = pool.stats().misses;
        let again: Vec<_> = (0..10).map(|_| pool.acquire(8192)).collect();
        assert_eq!(pool.stats().misses, misses, "all ten 8 KiB buffers were kept");
        drop(again);
    }

    #[test]
    fn foreign_and_oversized_buffers_are_not_kept() {
        let pool = BufferPool::new(1 << 30);
        pool.release(Vec::with_capacity(5000));
        let big = pool.acquire(MAX_CLASS + 1);
        assert!(big.capacity() > MAX_CLASS);
        pool.release(big);
        assert_eq!(pool.stats(), PoolStats::default());
    }

    #[test]
    fn concurrent_acquire_release_keeps_the_books() {
        let pool = std::sync::Arc::new(BufferPool::new(8 << 20));
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let pool = pool.clone();
                std::thread::spawn(move || {
                    for i in 0..2000 {
                        let mut b = pool.acquire(4096 * (1 + (i + t) % 8));
                        b.push(t as u8);
                        pool.release(b);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let s = pool.stats();
        assert_eq!(s.outstanding, 0);
        assert_eq!(s.hits + s.misses, 8000);
        assert!(s.pooled_bytes <= 8 << 20);
    }
}

#[cfg(all(test, fairfs_loom))]
mod loom_tests {
    use super::*;
    use crate::loom::sync::Arc;
    use crate::loom::thread;

    /// Two threads acquire and release under a cap of one buffer: the cap holds, no
    /// buffer is counted twice, and the books balance at the end.
    #[test]
    fn loom_acquire_release_under_cap() {
        loom::model(|| {
            let pool = Arc::new(BufferPool::new(MIN_CLASS));
            pool.release(pool.acquire(MIN_CLASS));
            let other = {
                let pool = pool.clone();
                thread::spawn(move || {
                    let b = pool.acquire(MIN_CLASS);
                    pool.release(b);
                })
            };
            let b = pool.acquire(MIN_CLASS);
            assert!(pool.stats().pooled_bytes <= MIN_CLASS);
            pool.release(b);
            other.join().unwrap();
            let s = pool.stats();
            assert_eq!(s.outstanding, 0);
            assert!(s.pooled_bytes <= MIN_CLASS);
            assert_eq!(s.hits + s.misses, 3);
        });
    }

    /// A worker waiting for a big buffer is woken by its release on another thread,
    /// whichever comes first (a lost wakeup would leave it waiting, which loom, whose
    /// timed waits never time out, reports as a deadlock).
    #[test]
    fn loom_a_waiter_gets_the_buffer_released_meanwhile() {
        loom::model(|| {
            let pool = Arc::new(BufferPool::new(64 << 20));
            pool.set_max_waiters(1);
            pool.release(pool.acquire(WAIT_FROM));
            let out = pool.acquire(WAIT_FROM);
            let waiter = {
                let pool = pool.clone();
                thread::spawn(move || pool.acquire_or_wait(WAIT_FROM))
            };
            pool.release(out);
            let got = waiter.join().unwrap();
            assert_eq!(got.capacity(), WAIT_FROM);
            let s = pool.stats();
            assert_eq!((s.hits, s.misses, s.outstanding), (2, 1, 1));
        });
    }

    /// A trim racing with a release leaves the byte count equal to what is queued.
    #[test]
    fn loom_trim_races_with_release() {
        loom::model(|| {
            let pool = Arc::new(BufferPool::new(4 * MIN_CLASS));
            let b = pool.acquire(MIN_CLASS);
            let other = {
                let pool = pool.clone();
                thread::spawn(move || pool.trim())
            };
            pool.release(b);
            other.join().unwrap();
            let queued = pool.classes[0].free.pop().map_or(0, |v| v.capacity());
            assert_eq!(pool.stats().pooled_bytes, queued);
        });
    }
}
