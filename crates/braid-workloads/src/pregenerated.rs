//! Transactions drawn before a run: [`Pregenerated`] holds the next `n` transactions of a
//! [`TxnSource`] (procedure ids and encoded parameters) and hands them out in turn, starting over
//! at the first once they are used up.
//!
//! This is how the Taurus paper's code (DBx1000, `system/query.cpp`: `Query_thd::init` draws
//! every query of a thread before the run, `get_next_query` takes the next) keeps drawing keys
//! out of its timed loop; a bench that compares with it draws its transactions the same way
//! ([`Client::pregenerate`](crate::Client::pregenerate)). Memory: the transactions' parameter
//! bytes plus 12 bytes each (YCSB's 2 accesses: 44 + 12 = 56 bytes a transaction).

use braid_engine::Params;

use crate::client::TxnSource;
use crate::error::PregenerateError;

/// Transactions drawn ahead from a source, taken in turn and cycled.
#[derive(Clone)]
pub struct Pregenerated {
    /// Every transaction's parameters, one after the other.
    bytes: Vec<u8>,
    /// Where each transaction's parameters end in `bytes`.
    ends: Vec<usize>,
    /// Each transaction's procedure id.
    procs: Vec<u32>,
    /// The transaction [`TxnSource::next_txn`] gives next.
    next: usize,
    /// Times every transaction was handed out.
    cycles: usize,
}

impl Pregenerated {
    /// Draw `n` transactions from `source` now, in its order. Refused for no transaction
    /// and for a source that cannot be drawn ahead ([`TxnSource::check_pregenerate`]).
    pub fn draw<S: TxnSource + ?Sized>(
        source: &mut S,
        n: usize,
    ) -> Result<Pregenerated, PregenerateError> {
        if n == 0 {
            return Err(PregenerateError::Empty);
        }
        source.check_pregenerate()?;
        let mut p = Params::new();
        let mut out = Pregenerated {
            bytes: Vec::new(),
            ends: Vec::with_capacity(n),
            procs: Vec::with_capacity(n),
            next: 0,
            cycles: 0,
        };
        for i in 0..n {
            out.procs.push(source.next_txn(&mut p));
            if i == 0 {
                // Every transaction of a workload is about as long as the first.
                out.bytes.reserve_exact(n.saturating_mul(p.bytes.len()));
            }
            out.bytes.extend_from_slice(&p.bytes);
            out.ends.push(out.bytes.len());
        }
        Ok(out)
    }

    /// Transactions held.
    pub fn len(&self) -> usize {
        self.procs.len()
    }

    /// Whether no transaction is held (never, for one [`Pregenerated::draw`] returned).
    pub fn is_empty(&self) -> bool {
        self.procs.is_empty()
    }

    /// Bytes of memory the transactions take.
    pub fn memory_bytes(&self) -> usize {
        self.bytes.capacity()
            + self.ends.capacity() * std::mem::size_of::<usize>()
            + self.procs.capacity() * std::mem::size_of::<u32>()
    }

    /// The transaction `k` places after the one [`TxnSource::next_txn`] gives next (cycling
    /// as it does): its procedure id and parameters.
    pub fn peek(&self, k: usize) -> (u32, &[u8]) {
        // `draw` holds at least one transaction, so the modulus is not zero.
        self.txn((self.next + k) % self.procs.len())
    }

    /// Transaction `i` (below the count): its procedure id and parameters.
    fn txn(&self, i: usize) -> (u32, &[u8]) {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        (self.procs[i], &self.bytes[start..self.ends[i]])
    }

    /// Times the transactions were all handed out (0 until the last one has been).
    pub fn cycles(&self) -> usize {
        self.cycles
    }
}

impl TxnSource for Pregenerated {
    /// The next transaction held, the first again after the last.
    fn next_txn(&mut self, params: &mut Params) -> u32 {
        // `draw` holds at least one transaction and `next` stays below their count, so the
        // index is in range.
        let i = self.next;
        self.next += 1;
        if self.next == self.procs.len() {
            self.next = 0;
            self.cycles += 1;
        }
        let (proc_id, bytes) = self.txn(i);
        params.clear();
        params.bytes.extend_from_slice(bytes);
        proc_id
    }
}

impl std::fmt::Debug for Pregenerated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pregenerated")
            .field("len", &self.len())
            .field("next", &self.next)
            .field("cycles", &self.cycles)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::client::Counting;

    fn take(s: &mut impl TxnSource) -> (u32, Vec<u8>) {
        let mut p = Params::new();
        p.put::<u64>(99); // left over from an earlier transaction
        let id = s.next_txn(&mut p);
        (id, p.bytes)
    }

    #[test]
    fn yields_the_sources_transactions_in_order_then_cycles() {
        let mut reference = Counting(0);
        let expected: Vec<_> = (0..5).map(|_| take(&mut reference)).collect();
        let mut source = Counting(0);
        let mut pre = Pregenerated::draw(&mut source, 5).unwrap();
        assert_eq!(pre.len(), 5);
        // Drawn before the run: the source has moved on by exactly five.
        assert_eq!(take(&mut source), take(&mut Counting(5)));
        let got: Vec<_> = (0..12).map(|_| take(&mut pre)).collect();
        for (i, g) in got.iter().enumerate() {
            assert_eq!(g, &expected[i % 5], "transaction {i}");
        }
        assert_eq!(pre.cycles(), 2);
        assert!(pre.memory_bytes() >= (1 + 2 + 3 + 4) + 5 * 12);
    }

    #[test]
    fn peek_sees_the_coming_transactions_cycling() {
        let mut pre = Pregenerated::draw(&mut Counting(0), 5).unwrap();
        let mut reference = Counting(0);
        let expected: Vec<_> = (0..5).map(|_| take(&mut reference)).collect();
        take(&mut pre);
        take(&mut pre);
        for k in 0..12 {
            let (id, bytes) = pre.peek(k);
            assert_eq!((id, bytes.to_vec()), expected[(2 + k) % 5], "k {k}");
        }
        // Peeking takes nothing.
        assert_eq!(take(&mut pre), expected[2]);
    }

    #[test]
    fn no_transaction_is_refused() {
        assert!(matches!(
            Pregenerated::draw(&mut Counting(0), 0),
            Err(PregenerateError::Empty)
        ));
    }
}
