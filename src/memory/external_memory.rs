//! What the JS engine is told of the pooled memory JS holds.
//!
//! A pooled buffer handed to JS as an external Buffer is counted by V8 as external
//! memory, and V8 answers every 64 MB of growth with a full (mark-compact) GC. But
//! collecting such a Buffer frees nothing: its memory goes back to the buffer pool.
//! A GC is worth its cost only when the pool has run short and wants its buffers
//! back. Ten concurrent 16 MiB reads ran a mark-compact every six reads, a third of
//! the JS thread's time.
//!
//! So the binding keeps one [`Ledger`] per JS thread (one per V8 isolate):
//!
//! * **Lent while the pool has stock:** the Buffer's bytes are taken back off V8's
//!   count and become *untold*.
//! * **Lent while the pool is short** (no pooled buffer of that size left): V8 is
//!   told every untold byte, so that it collects and the pool refills.
//! * **Collected:** V8 takes the Buffer's bytes off its count by itself, so as many
//!   untold bytes (at most the Buffer's) are put back.
//!
//! **The cushion.** V8 takes a collected Buffer's bytes off its count when it frees
//! the memory, and the finalizer that lets the ledger put untold bytes back runs
//! later. In between, the count would fall below zero if untold bytes were more than
//! the rest of it, and Node 24's V8 stops the process when it does (`Check failed:
//! static_cast<int64_t>(amount_before) >= -delta`, in a collection started by
//! `napi_create_buffer`). So V8 also counts a cushion of bytes never taken back, at
//! least as many as are untold: the first untold bytes grow it instead of leaving
//! V8's count, and from then on it covers them. V8 starts collections on the count's
//! growth since the last one, which a steady cushion does not change.
//!
//! V8 then always counts the lent bytes less the untold ones, plus the cushion, and
//! never less than is lent. The untold bytes are the pool's stock handed out since V8
//! was last told, so the growth V8 sees falls short by at most about the pool's cap
//! (`configure({ maxPooledBytes })`). With a bigger cap, V8 collects less often and
//! more memory circulates: memory for CPU, the user's choice.

/// Bytes lent to JS that V8 has not been told of, for one JS thread.
#[derive(Debug, Default)]
pub struct Ledger {
    /// Lent bytes taken off V8's count, not yet told again or collected.
    untold: u64,
    /// Bytes V8 counts that stand for nothing, so that its count stays above what it
    /// may take off by itself: never less than `untold`, never shrinking.
    cushion: u64,
}

impl Ledger {
    /// A pooled buffer of `len` bytes was just lent to JS, and V8 counted it. Returns
    /// the change to make to V8's count of external memory.
    pub fn lent(&mut self, len: u64, pool_short: bool) -> i64 {
        if pool_short {
            // Tell V8 everything, so that it collects the Buffers the pool wants back.
            let told = std::mem::take(&mut self.untold);
            told as i64
        } else {
            self.untold += len;
            // Untold bytes past the cushion grow it instead of leaving V8's count.
            let grown = self.untold.saturating_sub(self.cushion);
            self.cushion += grown;
            grown as i64 - len as i64
        }
    }

    /// V8 collected a lent Buffer of `len` bytes and took them off its count. Returns
    /// the change to make to V8's count.
    pub fn collected(&mut self, len: u64) -> i64 {
        let back = self.untold.min(len);
        self.untold -= back;
        back as i64
    }

    /// Lent bytes V8 does not count now.
    pub fn untold(&self) -> u64 {
        self.untold
    }

    /// Bytes V8 counts beyond what is lent, less the untold ones.
    pub fn cushion(&self) -> u64 {
        self.cushion
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// V8's side: lent bytes and its count, changed as V8 and the ledger change it.
    struct Model {
        ledger: Ledger,
        lent: Vec<u64>,
        v8_count: i64,
    }

    impl Model {
        fn lend(&mut self, len: u64, short: bool) {
            self.lent.push(len);
            self.v8_count += len as i64; // V8 counts the new Buffer itself
            self.v8_count += self.ledger.lent(len, short);
            self.check();
        }
        fn collect(&mut self, i: usize) {
            let len = self.lent.swap_remove(i);
            self.v8_count -= len as i64; // V8 frees it and counts that itself
            assert!(self.v8_count >= 0, "V8's count fell below zero before the finalizer ran");
            self.v8_count += self.ledger.collected(len);
            self.check();
        }
        fn check(&self) {
            let lent: u64 = self.lent.iter().sum();
            assert!(self.ledger.untold() <= lent, "never more untold than lent");
            assert!(self.ledger.untold() <= self.ledger.cushion(), "the cushion covers the untold bytes");
            assert_eq!(
                self.v8_count,
                (lent - self.ledger.untold() + self.ledger.cushion()) as i64,
                "V8 counts the lent bytes less the untold, plus the cushion"
            );
            // Were every lent Buffer freed before any finalizer ran, the count would
            // still not fall below zero.
            assert!(self.v8_count >= lent as i64);
        }
    }

    #[test]
    fn stocked_lends_are_untold_once_the_cushion_covers_them_and_a_short_one_tells_all() {
        let mut ledger = Ledger::default();
        assert_eq!(ledger.lent(16, false), 0, "the first untold bytes grow the cushion");
        assert_eq!(ledger.lent(16, false), 0);
        assert_eq!((ledger.untold(), ledger.cushion()), (32, 32));
        assert_eq!(ledger.lent(16, true), 32, "short: V8 is told the 32 untold bytes");
        assert_eq!(ledger.untold(), 0);
        assert_eq!(ledger.lent(16, false), -16, "within the cushion: taken off V8's count");
        assert_eq!(ledger.lent(32, false), -16, "past it by 16: those grow the cushion");
        assert_eq!((ledger.untold(), ledger.cushion()), (48, 48));
    }

    #[test]
    fn a_collected_buffer_puts_back_at_most_its_own_bytes() {
        let mut ledger = Ledger::default();
        ledger.lent(16, false);
        ledger.lent(16, false);
        assert_eq!(ledger.collected(4), 4);
        assert_eq!(ledger.untold(), 28);
        ledger.lent(8, true);
        assert_eq!(ledger.collected(16), 0, "nothing untold is left to put back");
        assert_eq!(ledger.cushion(), 32, "the cushion stays");
    }

    #[test]
    fn v8_counts_the_lent_bytes_less_the_untold_and_never_falls_below_them_in_any_order() {
        // A small xorshift drives lends and collections in many orders.
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut model = Model { ledger: Ledger::default(), lent: Vec::new(), v8_count: 0 };
        for _ in 0..10_000 {
            let r = next();
            if model.lent.is_empty() || r % 3 != 0 {
                model.lend(1 + (r >> 8) % (16 << 20), (r >> 40) % 4 == 0);
            } else {
                let i = (r >> 8) as usize % model.lent.len();
                model.collect(i);
            }
        }
        while !model.lent.is_empty() {
            model.collect(0);
        }
        assert_eq!(model.v8_count, model.ledger.cushion() as i64, "all collected: V8 counts the cushion alone");
        assert_eq!(model.ledger.untold(), 0);
    }
}
