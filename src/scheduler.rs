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
//! * A read stream is many requests (blocks) over its life. They form one *keyed*
//!   flow ([`FairQueue::push_keyed`]): one place in the rotation and one deficit,
//!   carried from each block to the next, so that a stream earns what one long
//!   `readFile` earns, however many blocks it has in flight, and does not come back
//!   as new (ahead of everyone) with each block.
//!
//! * A keyed flow's next request may start *early*, before the one in the rotation
//!   is done, but only for a worker that finds nothing else to read
//!   ([`FairQueue::pop_early`]). It is served outside the rotation and charged
//!   nothing, since nobody waits; if it is not done in one step, it goes back to the
//!   front of its flow's waiting line. A lone stream then keeps every free worker busy
//!   instead of waiting at each block's end for the one in the rotation.
//!
//! A request being read by a worker is *checked out* of the lists (so one request
//! is never read by two workers at once), and comes back through [`FairQueue::put_back`],
//! or, when it is done, ends its turn through [`FairQueue::end`].

use std::collections::{HashMap, VecDeque};

/// How many chunks of new requests may be served in a row while old ones wait.
pub const NEW_BURST: u32 = 8;

/// A request checked out of the queue or waiting in it, with its credit.
#[derive(Debug)]
pub struct Flow<T> {
    pub item: T,
    turn: Turn,
}

/// A flow's place in the rotation, apart from its request: what [`FairQueue::end`]
/// needs once the request is gone.
#[derive(Clone, Copy, Debug)]
pub struct Turn {
    /// Bytes it may still read before it goes to the back of the line.
    deficit: i64,
    /// Whether it is still on its first quantum (the *new* list).
    is_new: bool,
    /// The keyed flow it belongs to ([`FairQueue::push_keyed`]), if any.
    key: Option<u64>,
    /// A keyed flow's request started early ([`FairQueue::pop_early`]): outside the
    /// rotation, with no place or credit of its own.
    early: bool,
}

impl<T> Flow<T> {
    /// Splits a checked-out request that is done (or leaves the pool) from its turn,
    /// which goes back through [`FairQueue::end`].
    pub fn into_parts(self) -> (T, Turn) {
        (self.item, self.turn)
    }

    /// Its turn, for [`FairQueue::end`] when the request leaves the queue to wait.
    pub fn turn(&self) -> Turn {
        self.turn
    }
}

/// A flow made of many requests one after another (a read stream's blocks): it keeps
/// one place in the rotation and one deficit for its whole life, so that reading in
/// many requests earns no more than reading in one.
#[derive(Debug)]
struct Keyed<T> {
    /// Its credit and list while none of its requests is queued.
    deficit: i64,
    is_new: bool,
    /// One of its requests is in the lists or checked out; the others wait here.
    active: bool,
    waiting: VecDeque<T>,
    /// Its requests started early and checked out now ([`FairQueue::pop_early`]).
    early: usize,
    /// Its request in the rotation is checked out (being read), not in the lists.
    head_out: bool,
    /// [`FairQueue::end_key`] was called: forget the flow once it is idle.
    ended: bool,
}

impl<T> Keyed<T> {
    /// None of its requests is in the lists or checked out (followers wait only
    /// behind one that is).
    fn idle(&self) -> bool {
        !self.active && self.early == 0
    }
}

/// The fair queue of requests. Not thread-safe by itself: the pool holds it under its lock.
#[derive(Debug)]
pub struct FairQueue<T> {
    new: VecDeque<Flow<T>>,
    old: VecDeque<Flow<T>>,
    quantum: i64,
    /// Chunks of new requests served in a row while an old one was waiting.
    new_streak: u32,
    /// Keyed flows by key.
    keyed: HashMap<u64, Keyed<T>>,
    /// Requests waiting behind another of their keyed flow.
    followers: usize,
}

impl<T> FairQueue<T> {
    pub fn new(quantum: usize) -> Self {
        FairQueue {
            new: VecDeque::new(),
            old: VecDeque::new(),
            quantum: quantum.max(1) as i64,
            new_streak: 0,
            keyed: HashMap::new(),
            followers: 0,
        }
    }

    /// Credit granted per round; normally the chunk size.
    pub fn set_quantum(&mut self, quantum: usize) {
        self.quantum = quantum.max(1) as i64;
    }

    /// Requests queued, including those waiting behind another of their keyed flow.
    pub fn len(&self) -> usize {
        self.new.len() + self.old.len() + self.followers
    }

    /// Whether no request can be checked out (a keyed flow's followers wait for the
    /// one that is checked out, so they do not count).
    pub fn is_empty(&self) -> bool {
        self.new.is_empty() && self.old.is_empty()
    }

    /// Adds a request at the back of the new list with one quantum of credit.
    pub fn push(&mut self, item: T) {
        self.new.push_back(Flow { item, turn: Turn { deficit: self.quantum, is_new: true, key: None, early: false } });
    }

    /// Adds a request to the keyed flow `key`. The flow's first request joins the new
    /// list like any other; later ones wait behind the one in the rotation, or, if
    /// the flow was idle, go on with the credit or debt it had: a flow that goes quiet
    /// between requests does not come back as new with a fresh quantum.
    pub fn push_keyed(&mut self, item: T, key: u64) {
        let quantum = self.quantum;
        let Some(flow) = self.keyed.get_mut(&key) else {
            self.keyed.insert(
                key,
                Keyed {
                    deficit: quantum,
                    is_new: true,
                    active: true,
                    waiting: VecDeque::new(),
                    early: 0,
                    head_out: false,
                    ended: false,
                },
            );
            self.new
                .push_back(Flow { item, turn: Turn { deficit: quantum, is_new: true, key: Some(key), early: false } });
            return;
        };
        if flow.active {
            flow.waiting.push_back(item);
            self.followers += 1;
            return;
        }
        self.activate(key, item);
    }

    /// Puts the request of an idle keyed flow in the rotation with the flow's credit.
    fn activate(&mut self, key: u64, item: T) {
        let Some(flow) = self.keyed.get_mut(&key) else { return };
        flow.active = true;
        let turn = Turn { deficit: flow.deficit, is_new: flow.is_new, key: Some(key), early: false };
        // As if it had never paused: credit left keeps its place at the front of its
        // list, debt sends it to the back with one more quantum.
        self.put_back(Flow { item, turn }, 0);
    }

    /// Checks out, for a worker that found nothing else to read, the next request of
    /// a keyed flow whose request in the rotation is being read, among those that
    /// satisfy `ok`. It reads outside the rotation: see the module's docs.
    pub fn pop_early(&mut self, mut ok: impl FnMut(&T) -> bool) -> Option<Flow<T>> {
        if self.followers == 0 {
            return None;
        }
        let (&key, flow) = self.keyed.iter_mut().find(|(_, f)| f.head_out && f.waiting.front().is_some_and(&mut ok))?;
        let item = flow.waiting.pop_front()?;
        flow.early += 1;
        self.followers -= 1;
        Some(Flow { item, turn: Turn { deficit: self.quantum, is_new: false, key: Some(key), early: true } })
    }

    /// Whether [`Self::pop_early`] would find a request satisfying `ok`.
    pub fn has_early(&self, mut ok: impl FnMut(&T) -> bool) -> bool {
        self.followers > 0 && self.keyed.values().any(|f| f.head_out && f.waiting.front().is_some_and(&mut ok))
    }

    /// Checks out the request that should read next. A flow whose credit ran out
    /// (a step bigger than the quantum, or a smaller quantum since) gets another
    /// quantum and goes to the back of the line instead.
    pub fn pop(&mut self) -> Option<Flow<T>> {
        loop {
            let flow = self.pop_next()?;
            if flow.turn.deficit > 0 {
                return Some(self.check_out(flow));
            }
            self.put_back(flow, 0);
        }
    }

    /// Notes that a keyed flow's request in the rotation is being read.
    fn check_out(&mut self, flow: Flow<T>) -> Flow<T> {
        if let Some(keyed) = flow.turn.key.and_then(|key| self.keyed.get_mut(&key)) {
            keyed.head_out = true;
        }
        flow
    }

    fn pop_next(&mut self) -> Option<Flow<T>> {
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
        let mut found = None;
        for list in [&mut self.new, &mut self.old] {
            if let Some(i) = list.iter().position(|f| ok(&f.item)) {
                found = list.remove(i);
                break;
            }
        }
        found.map(|flow| self.check_out(flow))
    }

    /// Returns a checked-out request that read `spent` bytes and has more to read.
    pub fn put_back(&mut self, mut flow: Flow<T>, spent: usize) {
        if flow.turn.early {
            // Back to the front of its flow's line, or, if the flow's request in the
            // rotation has ended meanwhile with none behind it, into the rotation.
            let key = flow.turn.key.expect("an early request belongs to a keyed flow");
            let Some(keyed) = self.keyed.get_mut(&key) else {
                // Its flow is gone (drained): it must still be served, on its own.
                flow.turn = Turn { deficit: self.quantum, is_new: false, key: None, early: false };
                self.old.push_front(flow);
                return;
            };
            keyed.early -= 1;
            if keyed.active {
                keyed.waiting.push_front(flow.item);
                self.followers += 1;
            } else {
                self.activate(key, flow.item);
            }
            return;
        }
        if let Some(keyed) = flow.turn.key.and_then(|key| self.keyed.get_mut(&key)) {
            keyed.head_out = false;
        }
        flow.turn.deficit -= spent as i64;
        if flow.turn.deficit > 0 {
            // Credit left: it keeps its place at the front of its list.
            if flow.turn.is_new {
                self.new.push_front(flow);
            } else {
                self.old.push_front(flow);
            }
        } else {
            flow.turn.deficit += self.quantum;
            flow.turn.is_new = false;
            self.old.push_back(flow);
        }
    }

    /// Ends the turn of a checked-out request that is done (or left the pool) after
    /// reading `spent` bytes. A keyed flow's next request takes its place with the
    /// credit left, as if one request had read on; an idle keyed flow keeps its credit
    /// for the next. Other requests' turns just end.
    pub fn end(&mut self, mut turn: Turn, spent: usize) {
        let Some(key) = turn.key else { return };
        let Some(flow) = self.keyed.get_mut(&key) else { return };
        if turn.early {
            flow.early -= 1;
            if flow.ended && flow.idle() {
                self.keyed.remove(&key);
            }
            return;
        }
        flow.head_out = false;
        turn.deficit -= spent as i64;
        if let Some(item) = flow.waiting.pop_front() {
            self.followers -= 1;
            self.put_back(Flow { item, turn }, 0);
            return;
        }
        flow.active = false;
        flow.deficit = turn.deficit;
        flow.is_new = turn.is_new && turn.deficit > 0;
        if flow.ended && flow.idle() {
            self.keyed.remove(&key);
        }
    }

    /// Forgets keyed flow `key` (its stream has closed) once no request of it is left.
    pub fn end_key(&mut self, key: u64) {
        match self.keyed.get_mut(&key) {
            Some(flow) if !flow.idle() => flow.ended = true,
            Some(_) => {
                self.keyed.remove(&key);
            }
            None => {}
        }
    }

    /// Removes every waiting request that matches `pred`, in one pass; the others
    /// keep their order and credit. A keyed flow whose queued request is removed
    /// passes its turn to its next request.
    pub fn remove_all(&mut self, mut pred: impl FnMut(&T) -> bool) -> Vec<T> {
        let mut removed = Vec::new();
        if self.followers > 0 {
            for flow in self.keyed.values_mut() {
                let before = flow.waiting.len();
                let mut kept = VecDeque::with_capacity(before);
                for item in flow.waiting.drain(..) {
                    if pred(&item) {
                        removed.push(item);
                    } else {
                        kept.push_back(item);
                    }
                }
                self.followers -= before - kept.len();
                flow.waiting = kept;
            }
        }
        let mut ended = Vec::new();
        for list in [&mut self.new, &mut self.old] {
            let mut kept = VecDeque::with_capacity(list.len());
            for flow in list.drain(..) {
                if pred(&flow.item) {
                    ended.push(flow.turn);
                    removed.push(flow.item);
                } else {
                    kept.push_back(flow);
                }
            }
            *list = kept;
        }
        for turn in ended {
            self.end(turn, 0);
        }
        removed
    }

    /// Removes every waiting request, and forgets every keyed flow.
    pub fn drain(&mut self) -> Vec<T> {
        let mut all: Vec<T> = self.new.drain(..).chain(self.old.drain(..)).map(|f| f.item).collect();
        for (_, flow) in self.keyed.drain() {
            all.extend(flow.waiting);
        }
        self.followers = 0;
        all
    }

    /// Keyed flows remembered (for tests: each is forgotten after `end_key`).
    pub fn keyed_flows(&self) -> usize {
        self.keyed.len()
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

    /// Serves with one worker: request "big" (`big` bytes in one readFile) and a
    /// keyed flow of `blocks` requests of `block` bytes, `ahead` of them queued at
    /// once (a stream's read-ahead), each read in steps of at most `chunk`. Returns
    /// the bytes the stream had read when the big request finished.
    fn stream_beside_one_read(
        quantum: usize,
        chunk: usize,
        big: usize,
        block: usize,
        blocks: usize,
        ahead: usize,
    ) -> usize {
        #[derive(Debug)]
        enum Req {
            Big(usize),
            Block(usize),
        }
        let mut q = FairQueue::new(quantum);
        q.push(Req::Big(big));
        let mut issued = 0;
        while issued < ahead.min(blocks) {
            q.push_keyed(Req::Block(block), 7);
            issued += 1;
        }
        let mut stream_bytes = 0;
        while let Some(mut flow) = q.pop() {
            let left = match &mut flow.item {
                Req::Big(left) | Req::Block(left) => left,
            };
            let n = chunk.min(*left);
            *left -= n;
            let done = *left == 0;
            let is_block = matches!(flow.item, Req::Block(_));
            if is_block {
                stream_bytes += n;
            }
            if !done {
                q.put_back(flow, n);
                continue;
            }
            if !is_block {
                return stream_bytes;
            }
            let (_, turn) = flow.into_parts();
            q.end(turn, n);
            if issued < blocks {
                q.push_keyed(Req::Block(block), 7);
                issued += 1;
            }
        }
        unreachable!("the big request finishes")
    }

    #[test]
    fn a_stream_is_one_flow_however_many_blocks_it_has_in_flight() {
        let mib = 1 << 20;
        for ahead in [1, 4, 16] {
            for block in [64 * 1024, 512 * 1024, mib] {
                let stream = stream_beside_one_read(512 * 1024, 512 * 1024, 16 * mib, block, 1000, ahead);
                // Equal shares: the stream has read about as much as the big read (16
                // MiB), within one quantum and one block either way.
                let diff = stream.abs_diff(16 * mib);
                assert!(diff <= 512 * 1024 + block, "ahead {ahead}, block {block}: stream read {stream}");
            }
        }
    }

    #[test]
    fn unkeyed_blocks_would_each_take_a_share() {
        // The fault keyed flows fix, shown with the same numbers: four blocks in
        // flight as four flows read about four times the big read's bytes.
        let mut q = FairQueue::new(10);
        q.push(0usize);
        for i in 1..=4 {
            q.push(i);
        }
        let mut served = [0usize; 5];
        for _ in 0..50 {
            let f = q.pop().unwrap();
            served[f.item] += 10;
            q.put_back(f, 10);
        }
        assert_eq!(served[1..].iter().sum::<usize>(), 4 * served[0]);
        // The same four as one keyed flow: one share.
        let mut q = FairQueue::new(10);
        q.push(0usize);
        for i in 1..=4 {
            q.push_keyed(i, 1);
        }
        assert_eq!(q.len(), 5, "followers count as queued");
        let mut served = [0usize; 2];
        for _ in 0..50 {
            let f = q.pop().unwrap();
            served[(f.item > 0) as usize] += 10;
            q.put_back(f, 10);
        }
        assert_eq!(served[0], served[1]);
    }

    #[test]
    fn an_idle_keyed_flow_comes_back_old_with_its_debt() {
        let mut q = FairQueue::new(10);
        q.push_keyed(1, 5);
        let f = q.pop().unwrap();
        assert!(f.turn.is_new, "a stream's first block is new, like any request");
        let (_, turn) = f.into_parts();
        q.end(turn, 14); // overdrew by 4
        q.push(2); // a new request
        q.push_keyed(3, 5); // the stream's next block
        let f = q.pop().unwrap();
        assert_eq!(f.item, 2, "the new request goes first");
        let f = q.pop().unwrap();
        assert_eq!(f.item, 3);
        assert!(!f.turn.is_new);
        assert_eq!(f.turn.deficit, 6, "one quantum less the debt");
        let (_, turn) = f.into_parts();
        q.end(turn, 2);
        q.push(4);
        q.push_keyed(5, 5);
        assert_eq!(q.pop().unwrap().item, 4, "new requests first");
        let f = q.pop().unwrap();
        assert_eq!((f.item, f.turn.deficit), (5, 4), "the credit left, not a fresh quantum");
    }

    #[test]
    fn pop_never_serves_a_flow_without_credit() {
        let mut q = FairQueue::new(10);
        q.push(1);
        q.push(2);
        let f = q.pop().unwrap();
        q.put_back(f, 30); // a step of three quanta: deficit 10 - 30 + 10 = -10
        let f = q.pop().unwrap();
        assert_eq!(f.item, 2);
        q.put_back(f, 10);
        let f = q.pop().unwrap();
        assert_eq!(f.item, 2, "1 is still in debt after one more quantum");
        assert_eq!(f.turn.deficit, 10);
    }

    #[test]
    fn removing_a_keyed_request_passes_the_turn_and_end_key_forgets_the_flow() {
        let mut q = FairQueue::new(10);
        for i in 1..=3 {
            q.push_keyed(i, 9);
        }
        assert_eq!(q.remove_all(|&i| i == 1 || i == 3), vec![3, 1], "followers first, then the lists");
        assert_eq!(q.len(), 1);
        assert_eq!(q.pop().unwrap().item, 2, "2 took the place of 1");
        q.end_key(9);
        assert_eq!(q.keyed_flows(), 1, "kept while a request of it is checked out");
        let mut q2 = FairQueue::new(10);
        q2.push_keyed(1, 9);
        let f = q2.pop().unwrap();
        q2.end_key(9);
        q2.end(f.into_parts().1, 1);
        assert_eq!(q2.keyed_flows(), 0, "forgotten once idle");
        q2.push_keyed(4, 8);
        q2.end_key(8);
        assert_eq!(q2.keyed_flows(), 1);
        assert_eq!(q2.drain(), vec![4]);
        assert_eq!(q2.keyed_flows(), 0);
    }

    #[test]
    fn remove_takes_a_waiting_request_out() {
        let mut q = FairQueue::new(10);
        q.push(1);
        q.push(2);
        assert_eq!(q.remove_all(|&i| i == 2), vec![2]);
        assert_eq!(q.remove_all(|&i| i == 2), Vec::<i32>::new());
        assert_eq!(q.len(), 1);
        assert_eq!(q.drain(), vec![1]);
        assert!(q.is_empty());
    }

    #[test]
    fn a_keyed_flows_next_request_starts_early_only_outside_the_rotation() {
        let mut q = FairQueue::new(10);
        for block in 1..=3 {
            q.push_keyed(block, 7);
        }
        assert!(q.pop_early(|_| true).is_none(), "its first request is in the rotation, not started");
        let head = q.pop().unwrap();
        assert_eq!(head.item, 1);
        assert!(q.is_empty() && q.pop().is_none(), "the others wait behind it");
        assert!(q.pop_early(|&i| i != 2).is_none(), "only the next request may start early");
        let early = q.pop_early(|_| true).unwrap();
        assert_eq!(early.item, 2);
        assert_eq!(q.len(), 1, "block 3 still waits");
        // Not done in one step: back to the front of its flow's line, charged nothing.
        q.put_back(early, 10);
        assert_eq!(q.len(), 2);
        // Someone else comes. Then the head ends: block 2 takes its place with the
        // credit it left (at the front of the new list, still on the flow's first quantum).
        q.push(8);
        let (_, turn) = head.into_parts();
        q.end(turn, 4);
        let next = q.pop().unwrap();
        assert_eq!((next.item, next.turn.deficit), (2, 6), "the flow's one turn, not a second");
        // Block 3 starts early and is done: nothing changes for block 2's turn.
        let early = q.pop_early(|_| true).unwrap();
        assert_eq!(early.item, 3);
        q.end(early.into_parts().1, 10);
        assert_eq!(q.len(), 1, "only 8 waits");
        q.put_back(next, 1);
        let again = q.pop().unwrap();
        assert_eq!((again.item, again.turn.deficit), (2, 5), "charged its own bytes only");
        assert_eq!(q.pop().unwrap().item, 8);
    }

    #[test]
    fn an_early_request_left_alone_joins_the_rotation_and_its_flow_is_forgotten_last() {
        let mut q = FairQueue::new(10);
        q.push_keyed(1, 7);
        q.push_keyed(2, 7);
        let head = q.pop().unwrap();
        let early = q.pop_early(|_| true).unwrap();
        q.end_key(7);
        // The head ends with nobody behind it while block 2 is out.
        q.end(head.into_parts().1, 3);
        assert_eq!(q.keyed_flows(), 1, "kept while its early request is checked out");
        q.put_back(early, 10);
        let again = q.pop().expect("in the rotation, not stranded behind an ended head");
        assert_eq!((again.item, again.turn.deficit), (2, 7), "with the flow's credit");
        assert!(q.pop_early(|_| true).is_none());
        q.end(again.into_parts().1, 1);
        assert_eq!(q.keyed_flows(), 0, "forgotten once its last request ends");
        // Ended while only an early request is out: forgotten when that one ends.
        q.push_keyed(3, 9);
        q.push_keyed(4, 9);
        let head = q.pop().unwrap();
        let early = q.pop_early(|_| true).unwrap();
        q.end(head.into_parts().1, 1);
        q.end_key(9);
        assert_eq!(q.keyed_flows(), 1);
        q.end(early.into_parts().1, 1);
        assert_eq!(q.keyed_flows(), 0);
        // Drained while out: put back, it is still served, on its own.
        q.push_keyed(5, 4);
        q.push_keyed(6, 4);
        let head = q.pop().unwrap();
        let early = q.pop_early(|_| true).unwrap();
        assert_eq!(q.drain(), Vec::<i32>::new());
        q.put_back(early, 1);
        assert_eq!(q.pop().map(|f| f.item), Some(6));
        q.end(head.into_parts().1, 1);
        assert_eq!(q.keyed_flows(), 0);
    }
}
