//! A batch of whole-file reads that its caller hears about once (`readFiles`).
//!
//! Pool threads fill in each file's outcome in any order; a small result is packed
//! into a slab as it arrives, so its read buffer goes back to the buffer pool at once
//! ([`crate::jobs::pack`]); and whoever fills in the last outcome hands the whole batch, in
//! order, to its completion.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::error::ReadError;
use crate::jobs::pack::{Packed, Packer};
use crate::memory::buffer_pool::{BufferPool, PooledBytes};

/// One file's outcome in a finished batch: where its bytes are, or its error.
pub type Outcome = Result<Packed, ReadError>;

/// What a finished batch goes to: the slabs, and every file's outcome in order.
pub type BatchDone = Box<dyn FnOnce(Vec<PooledBytes>, Vec<Outcome>) + Send>;

/// The outcomes so far, and the slabs the small ones are packed into.
struct SoFar {
    outcomes: Vec<Option<Outcome>>,
    packer: Packer,
}

/// The outcomes of a batch of files, filled in by pool threads in any order.
pub struct BatchSlots {
    so_far: Mutex<SoFar>,
    /// Files whose outcome has not come yet.
    left: AtomicUsize,
    /// Taken by the last outcome in.
    done: Mutex<Option<BatchDone>>,
}

impl BatchSlots {
    /// A batch of `len` files whose slabs come from `buffers`. With `len` 0 nothing
    /// ever completes it: its caller completes an empty batch itself.
    pub fn new(len: usize, buffers: Option<&'static BufferPool>, done: BatchDone) -> BatchSlots {
        BatchSlots {
            so_far: Mutex::new(SoFar { outcomes: (0..len).map(|_| None).collect(), packer: Packer::new(buffers) }),
            left: AtomicUsize::new(len),
            done: Mutex::new(Some(done)),
        }
    }

    /// File `i`'s outcome. The last one in hands the batch to its completion.
    pub fn fill(&self, i: usize, outcome: Result<PooledBytes, ReadError>) {
        let mut guard = self.so_far.lock().unwrap_or_else(|p| p.into_inner());
        let SoFar { outcomes, packer } = &mut *guard;
        outcomes[i] = Some(outcome.map(|bytes| packer.pack(bytes)));
        drop(guard);
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            let empty = SoFar { outcomes: Vec::new(), packer: Packer::new(None) };
            let SoFar { outcomes, packer } =
                std::mem::replace(&mut *self.so_far.lock().unwrap_or_else(|p| p.into_inner()), empty);
            let outcomes = outcomes.into_iter().map(|o| o.unwrap_or(Err(ReadError::Cancelled))).collect();
            if let Some(done) = self.done.lock().unwrap_or_else(|p| p.into_inner()).take() {
                done(packer.into_slabs(), outcomes);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::pack::MAX_PACKED;
    use std::sync::{mpsc, Arc};

    type Finished = (Vec<PooledBytes>, Vec<Outcome>);

    fn batch(len: usize) -> (Arc<BatchSlots>, mpsc::Receiver<Finished>) {
        let (tx, rx) = mpsc::channel();
        let done: BatchDone = Box::new(move |slabs, outcomes| tx.send((slabs, outcomes)).unwrap());
        (Arc::new(BatchSlots::new(len, None, done)), rx)
    }

    fn bytes(len: usize, fill: u8) -> PooledBytes {
        PooledBytes::unpooled(vec![fill; len])
    }

    /// The bytes an outcome stands for.
    fn content(slabs: &[PooledBytes], outcome: &Outcome) -> Option<Vec<u8>> {
        match outcome {
            Ok(Packed::Span { slab, offset, len }) => {
                Some(slabs[*slab as usize][*offset as usize..(*offset + *len) as usize].to_vec())
            }
            Ok(Packed::Own(bytes)) => Some(bytes.to_vec()),
            Err(_) => None,
        }
    }

    #[test]
    fn outcomes_filled_in_any_order_complete_once_and_in_order() {
        let (slots, rx) = batch(4);
        slots.fill(2, Ok(bytes(MAX_PACKED + 1, 3)));
        slots.fill(0, Ok(bytes(10, 1)));
        assert!(rx.try_recv().is_err(), "not complete before its last outcome");
        slots.fill(3, Err(ReadError::Cancelled));
        slots.fill(1, Ok(bytes(20, 2)));
        let (slabs, outcomes) = rx.try_recv().expect("complete after the last outcome");
        assert!(rx.try_recv().is_err(), "completed once");
        assert_eq!(outcomes.len(), 4);
        assert_eq!(content(&slabs, &outcomes[0]), Some(vec![1; 10]));
        assert_eq!(content(&slabs, &outcomes[1]), Some(vec![2; 20]));
        assert_eq!(content(&slabs, &outcomes[2]), Some(vec![3; MAX_PACKED + 1]));
        assert!(matches!(outcomes[2], Ok(Packed::Own(_))), "a big result keeps its own buffer");
        assert!(matches!(outcomes[3], Err(ReadError::Cancelled)));
        assert_eq!(slabs.len(), 1, "the two small results share one slab");
    }

    #[test]
    fn threads_racing_to_fill_the_last_outcomes_complete_it_once() {
        for _ in 0..50 {
            let n = 16;
            let (slots, rx) = batch(n);
            let threads: Vec<_> = (0..n)
                .map(|i| {
                    let slots = slots.clone();
                    std::thread::spawn(move || slots.fill(i, Ok(bytes(i + 1, i as u8))))
                })
                .collect();
            for t in threads {
                t.join().unwrap();
            }
            let (slabs, outcomes) = rx.try_recv().expect("complete");
            assert!(rx.try_recv().is_err(), "completed once");
            for (i, outcome) in outcomes.iter().enumerate() {
                assert_eq!(content(&slabs, outcome), Some(vec![i as u8; i + 1]));
            }
        }
    }
}
