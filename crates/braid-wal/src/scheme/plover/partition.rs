//! Plover's partitioning by the data accessed (Taurus paper Sec. 5.2: Plover "partitions log
//! records based on data accesses"; Zhou et al. 2020): a row's partition is a hash of its
//! table and key modulo the number of logs, one log per partition, so a row lives in exactly
//! one partition and every write of it goes to that partition's log.
//!
//! [`Split`] collects what one transaction touched: the partitions it read (from `on_read`,
//! and every partition once it scanned a range, since hashing spreads a key range over all of
//! them) and its redo operations grouped by partition.

use crate::WalError;
use crate::mix::mix64;
use crate::payload::{RedoBuf, decode_redo};
use crate::scheme::CommitRequest;

/// Added to a table's number before mixing, so table 0 key 0 is not the fixed point 0.
const TABLE_SALT: u64 = 0x6A09_E667_F3BC_C908;

/// The partition of row (`table`, `key`) among `n` (at least 1).
#[inline]
pub(crate) fn partition_of(table: u32, key: u64, n: usize) -> usize {
    let h = mix64(key ^ mix64(u64::from(table).wrapping_add(TABLE_SALT)));
    (h % n as u64) as usize
}

/// One transaction's accesses, by partition.
pub(crate) struct Split {
    n: usize,
    /// Partitions read (bit `p`).
    pub(crate) read: u64,
    /// Per partition: the redo operations of the rows written there.
    pub(crate) ops: Vec<RedoBuf>,
    /// Partitions written (bit `p`).
    pub(crate) written: u64,
}

impl Split {
    pub(crate) fn new(n: usize) -> Split {
        Split {
            n,
            read: 0,
            ops: (0..n).map(|_| RedoBuf::default()).collect(),
            written: 0,
        }
    }

    /// Every partition (a range scan).
    pub(crate) fn all(&self) -> u64 {
        if self.n >= 64 {
            u64::MAX
        } else {
            (1u64 << self.n) - 1
        }
    }

    /// The row (`table`, `key`) was read.
    #[inline]
    pub(crate) fn on_read(&mut self, table: u32, key: u64) {
        self.read |= 1 << partition_of(table, key, self.n);
    }

    /// Forget the transaction (commit done or abort).
    pub(crate) fn clear(&mut self) {
        self.read = 0;
        let mut w = self.written;
        while w != 0 {
            let p = w.trailing_zeros() as usize;
            w &= w - 1;
            self.ops[p].clear();
        }
        self.written = 0;
    }

    /// Group the redo operations of `req` by partition: from the rows the caller says it
    /// wrote, or, when it does not say, by decoding the payload.
    pub(crate) fn add_writes(&mut self, req: &CommitRequest<'_>) -> Result<(), WalError> {
        if req.writes.is_empty() {
            for op in decode_redo(req.payload) {
                let op = op.map_err(|source| {
                    WalError::Misuse(crate::Misuse::Payload {
                        scheme: "plover",
                        source,
                    })
                })?;
                let p = partition_of(op.table(), op.key(), self.n);
                self.ops[p].push(&op);
                self.written |= 1 << p;
            }
            return Ok(());
        }
        for w in req.writes {
            let op = w.op_in(req.payload, "plover")?;
            let p = partition_of(w.table, w.key, self.n);
            self.ops[p].bytes.extend_from_slice(op);
            self.written |= 1 << p;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_are_spread_and_stable() {
        let n = 4;
        let mut counts = [0usize; 4];
        for k in 0..4000u64 {
            let p = partition_of(1, k, n);
            assert_eq!(p, partition_of(1, k, n));
            counts[p] += 1;
        }
        for c in counts {
            assert!((800..1200).contains(&c), "{counts:?}");
        }
        // The table takes part: the same key of two tables does not always share a partition.
        assert!((0..64u64).any(|k| partition_of(1, k, n) != partition_of(2, k, n)));
        assert_eq!(partition_of(7, 9, 1), 0);
    }
}
