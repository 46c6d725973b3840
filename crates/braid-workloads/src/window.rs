//! [`Window`]: the next few transactions of a [`TxnSource`], drawn a little ahead of the one
//! running so that their rows can be announced to the engine's prefetch
//! ([`Worker::prefetch`](braid_engine::Worker::prefetch)) before they run, when the client does
//! not hold transactions drawn before the run ([`Pregenerated`](crate::Pregenerated)).
//!
//! The window hands out the source's transactions in the source's order; it only draws each
//! one a few transactions earlier. So it is kept for sources that may be drawn ahead
//! ([`TxnSource::check_pregenerate`]). A `VecDeque` of parameter buffers, with the buffers of
//! the transactions taken handed back for the next draws, so that drawing allocates nothing
//! once the window is full.

use std::collections::VecDeque;

use braid_engine::Params;

use crate::client::TxnSource;

/// The next `len` transactions of a source, drawn ahead (see the module doc).
#[derive(Debug)]
pub(crate) struct Window {
    len: usize,
    txns: VecDeque<(u32, Params)>,
}

impl Window {
    /// An empty window that keeps `len` transactions (at least one) drawn ahead.
    pub(crate) fn new(len: usize) -> Window {
        Window {
            len: len.max(1),
            txns: VecDeque::with_capacity(len.max(1) + 1),
        }
    }

    /// Draw from `source` until the window holds its length.
    fn fill<S: TxnSource + ?Sized>(&mut self, source: &mut S, mut spare: Params) {
        while self.txns.len() < self.len {
            let proc_id = source.next_txn(&mut spare);
            self.txns.push_back((proc_id, spare));
            spare = Params::new();
        }
    }

    /// The next transaction, into `params` (its procedure id returned); the window draws one
    /// more from `source` in its place.
    pub(crate) fn next_txn<S: TxnSource + ?Sized>(
        &mut self,
        source: &mut S,
        params: &mut Params,
    ) -> u32 {
        if self.txns.is_empty() {
            self.fill(source, Params::new());
        }
        let Some((proc_id, mut taken)) = self.txns.pop_front() else {
            // `fill` leaves at least one transaction (the length is at least one).
            return source.next_txn(params);
        };
        std::mem::swap(&mut params.bytes, &mut taken.bytes);
        self.fill(source, taken);
        proc_id
    }

    /// The transaction `k` places after the one [`Window::next_txn`] gives next, if the window
    /// holds it (before the first draw it holds none).
    pub(crate) fn peek(&self, k: usize) -> Option<(u32, &[u8])> {
        self.txns.get(k).map(|(p, params)| (*p, &params.bytes[..]))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::client::Counting;

    fn txn(i: u8) -> (u32, Vec<u8>) {
        (u32::from(i % 3), vec![i; usize::from(i)])
    }

    #[test]
    fn hands_out_the_sources_transactions_in_order_and_sees_ahead() {
        let mut source = Counting(0);
        let mut w = Window::new(4);
        assert!(w.peek(0).is_none());
        let mut p = Params::new();
        for i in 0..20u8 {
            p.put::<u64>(99); // left over from an earlier transaction
            let id = w.next_txn(&mut source, &mut p);
            assert_eq!((id, p.bytes.clone()), txn(i), "transaction {i}");
            for k in 0..4u8 {
                let (id, bytes) = w.peek(usize::from(k)).unwrap();
                assert_eq!((id, bytes.to_vec()), txn(i + 1 + k), "{k} after {i}");
            }
            assert!(w.peek(4).is_none());
        }
        // Drawn ahead by exactly the window's length.
        assert_eq!(source.0, 24);
    }
}
