//! Which request gets the next chunk: deficit round robin by bytes.
//!
//! The algorithm is Shreedhar and Varghese's deficit round robin (SIGCOMM 1995) in
//! the form Linux's `fq_codel` uses ("DRR++"), with a request in the role of a flow
//! and a chunk in the role of a packet:
//!
//! * Every request has a byte *deficit*. A request is served only while its deficit
//!   is positive; each chunk read subtracts its bytes. When the deficit runs out, the
//!   request gets another `quantum` of credit and goes to the back of the line. So a
//!   request's share of the pool is counted in bytes, whatever its chunk size.
//! * Requests that have not yet used their first quantum wait on a separate *new*
//!   list that is served first. A small read arriving behind many big ones therefore
//!   waits for about one chunk per worker, not for a round of every big read.
//!   To keep a flood of new requests from starving the old ones, at most
//!   [`NEW_BURST`] chunks of new requests are served in a row while old ones wait.
//!
//! A request being read by a worker is *checked out* of the lists (so one request
//! is never read by two workers at once), and comes back through [`FairQueue::put_back`].

use std::collections::VecDeque;

/// How many chunks of new requests may be served in a row while old ones wait.
pub const NEW_BURST: u32 = 8;

/// A request waiting in the queue, with its credit.
#[derive(Debug)]
pub struct Flow<T> {
    pub item: T,
    /// Bytes this request may still read before it goes to the back of the line.
    deficit: i64,
    /// Whether it is still on its first quantum (the *new* list).
    is_new: bool,
}

/// The fair queue of requests. Not thread-safe by itself: the pool holds it under its lock.
#[derive(Debug)]
pub struct FairQueue<T> {
    new: VecDeque<Flow<T>>,
    old: VecDeque<Flow<T>>,
    quantum: i64,
    /// Chunks of new requests served in a row while an old one was waiting.
    new_streak: u32,
}

impl<T> FairQueue<T> {
    pub fn new(quantum: usize) -> Self {
        FairQueue { new: VecDeque::new(), old: VecDeque::new(), quantum: quantum.max(1) as i64, new_streak: 0 }
    }

    /// Credit granted per round; normally the chunk size.
    pub fn set_quantum(&mut self, quantum: usize) {
        self.quantum = quantum.max(1) as i64;
    }

    pub fn len(&self) -> usize {
        self.new.len() + self.old.len()
    }

    pub fn is_empty(&self) -> bool {
        self.new.is_empty() && self.old.is_empty()
    }

    /// Adds a request at the back of the new list with one quantum of credit.
    pub fn push(&mut self, item: T) {
        self.new.push_back(Flow { item, deficit: self.quantum, is_new: true });
    }

    /// Checks out the request that should read next.
    pub fn pop(&mut self) -> Option<Flow<T>> {
        if self.old.is_empty() {
            self.new_streak = 0;
            return self.new.pop_front();
        }
        if self.next_is_new() {
            self.new_streak += 1;
            self.new.pop_front()
        } else {
            self.new_streak = 0;
            self.old.pop_front()
        }
    }

    /// Whether [`FairQueue::pop`] takes the next request from the new list.
    fn next_is_new(&self) -> bool {
        self.old.is_empty() || (!self.new.is_empty() && self.new_streak < NEW_BURST)
    }

    /// Checks out the request that should read next among those that satisfy `ok`:
    /// the one [`FairQueue::pop`] would give if it does, else the first that does
    /// (new list first), which keeps its place in the rotation.
    pub fn pop_where(&mut self, mut ok: impl FnMut(&T) -> bool) -> Option<Flow<T>> {
        let next = if self.next_is_new() { self.new.front() } else { self.old.front() };
        if ok(&next?.item) {
            return self.pop();
        }
        for list in [&mut self.new, &mut self.old] {
            if let Some(i) = list.iter().position(|f| ok(&f.item)) {
                return list.remove(i);
            }
        }
        None
    }

    /// Returns a checked-out request that read `spent` bytes and has more to read.
    pub fn put_back(&mut self, mut flow: Flow<T>, spent: usize) {
        flow.deficit -= spent as i64;
        if flow.deficit > 0 {
            // Credit left: it keeps its place at the front of its list.
            if flow.is_new {
                self.new.push_front(flow);
            } else {
                self.old.push_front(flow);
            }
        } else {
            flow.deficit += self.quantum;
            flow.is_new = false;
            self.old.push_back(flow);
        }
    }

    /// Removes the first waiting request that matches `pred`.
    pub fn remove(&mut self, mut pred: impl FnMut(&T) -> bool) -> Option<T> {
        for list in [&mut self.new, &mut self.old] {
            if let Some(i) = list.iter().position(|f| pred(&f.item)) {
                return list.remove(i).map(|f| f.item);
            }
        }
        None
    }

    /// Removes every waiting request that matches `pred`, in one pass; the others
    /// keep their order and credit.
    pub fn remove_all(&mut self, mut pred: impl FnMut(&T) -> bool) -> Vec<T> {
        let mut removed = Vec::new();
        for list in [&mut self.new, &mut self.old] {
            let mut kept = VecDeque::with_capacity(list.len());
            for flow in list.drain(..) {
                if pred(&flow.item) {
                    removed.push(flow.item);
                } else {
                    kept.push_back(flow);
                }
            }
            *list = kept;
        }
        removed
    }

    /// Removes every waiting request.
    pub fn drain(&mut self) -> Vec<T> {
        self.new.drain(..).chain(self.old.drain(..)).map(|f| f.item).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Serves the queue with one worker until it is empty, where request `i` needs
    /// `sizes[i]` bytes in chunks of `chunks[i]`. Returns the order of chunks served.
    fn serve(quantum: usize, sizes: &[usize], chunks: &[usize]) -> Vec<usize> {
        let mut q = FairQueue::new(quantum);
        let mut left = sizes.to_vec();
        for i in 0..sizes.len() {
            q.push(i);
        }
        let mut order = vec![];
        while let Some(flow) = q.pop() {
            let i = flow.item;
            let n = chunks[i].min(left[i]);
            left[i] -= n;
            order.push(i);
            if left[i] > 0 {
                q.put_back(flow, n);
            }
        }
        order
    }

    #[test]
    fn equal_chunks_are_served_round_robin() {
        let order = serve(100, &[300, 300, 300], &[100, 100, 100]);
        assert_eq!(order, [0, 1, 2, 0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn share_is_counted_in_bytes_not_chunks() {
        // Request 0 reads 10-byte chunks, request 1 reads 100-byte chunks. Over any
        // round both get about one quantum (100 bytes).
        let order = serve(100, &[1000, 1000], &[10, 100]);
        let mut bytes = [0usize; 2];
        for (k, &i) in order.iter().enumerate() {
            bytes[i] += [10, 100][i];
            if bytes[0] < 1000 && bytes[1] < 1000 && k > 0 {
                let diff = bytes[0].abs_diff(bytes[1]);
                assert!(diff <= 100, "after {k} chunks: {bytes:?}");
            }
        }
        assert_eq!(order.iter().filter(|&&i| i == 0).count(), 100);
        assert_eq!(order.iter().filter(|&&i| i == 1).count(), 10);
    }

    #[test]
    fn a_new_request_overtakes_old_ones() {
        let mut q = FairQueue::new(10);
        for i in 0..5 {
            q.push(i);
        }
        // All five use up their first quantum and become old.
        for _ in 0..5 {
            let f = q.pop().unwrap();
            q.put_back(f, 10);
        }
        q.push(99);
        assert_eq!(q.pop().unwrap().item, 99);
    }

    #[test]
    fn new_requests_cannot_starve_old_ones() {
        let mut q = FairQueue::new(10);
        q.push(0);
        let f = q.pop().unwrap();
        q.put_back(f, 10); // request 0 is old now
        let mut served_new = 0;
        for i in 1..100 {
            q.push(i);
        }
        loop {
            let f = q.pop().unwrap();
            if f.item == 0 {
                break;
            }
            served_new += 1; // new requests finish in one chunk
        }
        assert_eq!(served_new, NEW_BURST);
    }

    #[test]
    fn pop_where_skips_requests_that_may_not_run_now() {
        let mut q = FairQueue::new(10);
        for i in 0..4 {
            q.push(i);
        }
        assert_eq!(q.pop_where(|&i| i % 2 == 0).unwrap().item, 0, "the head is fine");
        assert_eq!(q.pop_where(|&i| i >= 3).unwrap().item, 3, "1 and 2 are skipped");
        assert!(q.pop_where(|_| false).is_none());
        assert_eq!(q.pop().unwrap().item, 1, "skipped requests keep their places");
        assert_eq!(q.pop().unwrap().item, 2);
    }

    #[test]
    fn remove_takes_a_waiting_request_out() {
        let mut q = FairQueue::new(10);
        q.push(1);
        q.push(2);
        assert_eq!(q.remove(|&i| i == 2), Some(2));
        assert_eq!(q.remove(|&i| i == 2), None);
        assert_eq!(q.len(), 1);
        assert_eq!(q.drain(), vec![1]);
        assert!(q.is_empty());
    }
}
