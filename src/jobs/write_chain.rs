//! A WriteStream's writes queued behind each other on the pool (`lib/write-stream.js`,
//! `configure({ writeBehind: true })`): the stream keeps its next write queued while one
//! runs. Once a write of the chain fails or falls short, the chain's later writes do not
//! run: nothing of a later write lands after a gap, or ahead of the rest of an earlier
//! one. The stream then does what node:fs's does after a short write (it writes the rest,
//! which meets the error), and writes the later ones again if that succeeds.
//!
//! The chain's writes are one in-order flow (`Job::in_order`), so they run one at a time
//! in the order made, and the flow's lock orders each after the one before; the flag
//! needs no more than that (the loom model `loom_chain_stops_after_a_failed_write`).

use crate::loom::sync::atomic::{AtomicBool, Ordering};

#[derive(Debug)]
pub struct WriteChain {
    broken: AtomicBool,
}

impl Default for WriteChain {
    fn default() -> Self {
        WriteChain { broken: AtomicBool::new(false) }
    }
}

impl WriteChain {
    /// Runs `write` of `total` bytes, unless an earlier write of the chain failed or fell
    /// short (`None`: not run). A write that ends with fewer bytes, or an error, breaks it.
    pub fn run<E>(&self, total: usize, write: impl FnOnce() -> Result<usize, E>) -> Option<Result<usize, E>> {
        if self.broken.load(Ordering::Acquire) {
            return None;
        }
        let outcome = write();
        if !matches!(outcome, Ok(n) if n == total) {
            self.broken.store(true, Ordering::Release);
        }
        Some(outcome)
    }

    #[cfg(test)]
    pub fn is_broken(&self) -> bool {
        self.broken.load(Ordering::Acquire)
    }
}

#[cfg(all(test, not(fairfs_loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_short_or_failed_write_stops_the_rest() {
        let chain = WriteChain::default();
        assert_eq!(chain.run(3, || Ok::<_, ()>(3)), Some(Ok(3)));
        assert!(!chain.is_broken(), "a whole write keeps it");
        assert_eq!(chain.run(3, || Ok::<_, ()>(2)), Some(Ok(2)), "a short write is reported");
        let mut ran = false;
        assert_eq!(
            chain.run(1, || {
                ran = true;
                Ok::<_, ()>(1)
            }),
            None
        );
        assert!(!ran, "nothing runs after a short write");
        let failed = WriteChain::default();
        assert_eq!(failed.run(1, || Err::<usize, _>("EIO")), Some(Err("EIO")));
        assert_eq!(failed.run(1, || Ok::<_, &str>(1)), None);
    }
}
