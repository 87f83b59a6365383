//! Big buffers freed on a thread of their own.
//!
//! A result's memory is let go where its last Buffer is finalized: on the JS thread.
//! Freeing a big buffer there is a `munmap` of every page, which blocked the event loop
//! for 20–40 ms per 256 MiB result (the pool keeps no buffers that big, and drops
//! buffers over its cap the same way). V8 frees its own ArrayBuffers on a helper
//! thread; [`free`] does the same for ours: buffers from [`FREE_LATER_FROM`] up go to
//! one `fairfs-free` thread, started on first use, and smaller ones are freed at once.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::OnceLock;

/// Buffers this big and bigger are freed on the freeing thread. From 128 KiB glibc's
/// malloc maps each block on its own, so freeing one unmaps it; from 1 MiB that takes
/// long enough to matter to an event loop.
pub const FREE_LATER_FROM: usize = 1 << 20;

/// Bytes the freeing thread has freed in this process.
static FREED: AtomicU64 = AtomicU64::new(0);

/// The way to the freeing thread, or `None` if it could not be started.
fn freeing_thread() -> &'static Option<Sender<Vec<u8>>> {
    static THREAD: OnceLock<Option<Sender<Vec<u8>>>> = OnceLock::new();
    THREAD.get_or_init(|| {
        let (tx, rx) = channel::<Vec<u8>>();
        std::thread::Builder::new()
            .name("fairfs-free".into())
            .spawn(move || {
                for buf in rx {
                    let bytes = buf.capacity() as u64;
                    drop(buf);
                    FREED.fetch_add(bytes, Ordering::Relaxed);
                }
            })
            .ok()
            .map(|_| tx)
    })
}

/// Frees `buf`: a big one on the freeing thread, never making the caller wait for the
/// unmapping; a small one (or any, if that thread cannot run) here.
pub fn free(buf: Vec<u8>) {
    if buf.capacity() < FREE_LATER_FROM || cfg!(fairfs_loom) {
        return;
    }
    let Some(sender) = freeing_thread() else { return };
    // A send fails only if the thread is gone; then the buffer comes back and is freed here.
    let _ = sender.send(buf);
}

/// Bytes the freeing thread has freed so far.
pub fn freed_bytes() -> u64 {
    FREED.load(Ordering::Relaxed)
}

#[cfg(all(test, not(fairfs_loom)))]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn big_buffers_are_freed_on_the_freeing_thread() {
        let before = freed_bytes();
        free(Vec::with_capacity(FREE_LATER_FROM - 1));
        let big = Vec::<u8>::with_capacity(4 * FREE_LATER_FROM);
        let bytes = big.capacity() as u64;
        free(big);
        let deadline = Instant::now() + Duration::from_secs(10);
        while freed_bytes() < before + bytes && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        // Other tests free big buffers too, so the count may have grown by more.
        assert!(freed_bytes() >= before + bytes, "the big buffer was freed there");
    }
}
