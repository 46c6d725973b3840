//! Plover's per-log sequence numbers and the global sequence number a transaction takes from
//! them (Taurus paper, Xia et al. VLDB 2021, Sec. 5.2 describing Plover: a transaction
//! "accesses the per-log LSN to generate a global LSN for the transaction. Then, it uses this
//! global LSN to update the per-log sequence numbers. These updates are atomic").
//!
//! Each log (partition) has a counter behind its own latch: the sequence number of the newest
//! record in that log. A committing transaction latches the counters of every partition it
//! logs to, in ascending partition order (so two transactions never wait for each other in a
//! cycle), takes `global = max(counter) + 1` over them, sets each of those counters to
//! `global`, and reserves its records' space in those logs while it still holds the latches
//! (the records are encoded and copied after, `worker.rs`). Two transactions that share a log
//! therefore hold its latch one after the other, and the later one's number is larger: each
//! log is totally ordered by sequence number, and by position in the same way.
//!
//! The latch is a `parking_lot` mutex padded to its own cache line: the critical section is a
//! compare-and-swap on each log's tail, short enough that spinning briefly and then parking is
//! what we want, and a hand-written lock would buy nothing here.

use crossbeam_utils::CachePadded;
use parking_lot::{Mutex, MutexGuard};

/// Most logs (partitions) a Plover database has: as many as any scheme's streams, which a
/// transaction's partitions, a `u64` mask, can name.
pub(crate) const MAX_LOGS: usize = crate::stream::MAX_STREAMS;
const _: () = assert!(MAX_LOGS <= u64::BITS as usize);

/// The per-log counters, each behind its latch.
pub(crate) struct SeqCounters {
    latches: Box<[CachePadded<Mutex<u64>>]>,
}

/// The latches of one transaction's partitions, held (in ascending partition order), with the
/// global sequence number they gave.
pub(crate) struct Held<'a> {
    guards: Vec<(usize, MutexGuard<'a, u64>)>,
    seq: u64,
}

impl SeqCounters {
    /// `n` counters, every one starting at `floor` (the largest number found in the logs).
    pub(crate) fn new(n: usize, floor: u64) -> SeqCounters {
        SeqCounters {
            latches: (0..n)
                .map(|_| CachePadded::new(Mutex::new(floor)))
                .collect(),
        }
    }

    /// Latch the counters of the partitions in `mask` (bit `p` = partition `p`, at least one,
    /// all below [`Self::len`]) in ascending order, take the global sequence number
    /// `max + 1` and set every latched counter to it. The records' space must be reserved before the
    /// returned latches are dropped.
    pub(crate) fn take(&self, mask: u64) -> Held<'_> {
        let mut guards = Vec::with_capacity(mask.count_ones() as usize);
        let mut m = mask;
        let mut max = 0u64;
        while m != 0 {
            let p = m.trailing_zeros() as usize;
            m &= m - 1;
            let g = self.latches[p].lock();
            max = max.max(*g);
            guards.push((p, g));
        }
        let seq = max + 1;
        for (_, g) in &mut guards {
            **g = seq;
        }
        Held { guards, seq }
    }

    /// The counter of log `p` now (its newest record's number).
    #[cfg(test)]
    pub(crate) fn current(&self, p: usize) -> u64 {
        *self.latches[p].lock()
    }
}

impl Held<'_> {
    /// The transaction's global sequence number.
    pub(crate) fn seq(&self) -> u64 {
        self.seq
    }

    /// The partitions latched, ascending.
    pub(crate) fn partitions(&self) -> impl Iterator<Item = usize> + '_ {
        self.guards.iter().map(|(p, _)| *p)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use std::sync::Arc;

    #[test]
    fn global_number_is_one_above_the_largest_counter_taken() {
        let c = SeqCounters::new(4, 0);
        let a = c.take(0b0001);
        assert_eq!(a.seq(), 1);
        drop(a);
        let b = c.take(0b0001);
        assert_eq!(b.seq(), 2);
        drop(b);
        // Partition 2 is still at 0, partition 0 at 2: the transaction takes 3 and raises both.
        let t = c.take(0b0101);
        assert_eq!(t.seq(), 3);
        assert_eq!(t.partitions().collect::<Vec<_>>(), vec![0, 2]);
        drop(t);
        assert_eq!(c.current(0), 3);
        assert_eq!(c.current(2), 3);
        // Untouched counters stay where they were.
        assert_eq!(c.current(1), 0);
        assert_eq!(c.current(3), 0);
        // A transaction on partition 1 alone is independent of the others.
        assert_eq!(c.take(0b0010).seq(), 1);
        // Starting from a floor (recovery): every number is above it.
        let f = SeqCounters::new(2, 41);
        assert_eq!(f.take(0b10).seq(), 42);
    }

    /// Many threads take numbers over random overlapping partition sets and record, under the
    /// latches, the order in which each log was appended to: every log's numbers strictly
    /// increase in that order, and no two transactions sharing a log share a number.
    #[test]
    fn each_log_is_totally_ordered_under_concurrency() {
        const N: usize = 5;
        let c = Arc::new(SeqCounters::new(N, 0));
        let logs: Arc<Vec<Mutex<Vec<u64>>>> =
            Arc::new((0..N).map(|_| Mutex::new(vec![])).collect());
        let hs: Vec<_> = (0..4u64)
            .map(|t| {
                let c = Arc::clone(&c);
                let logs = Arc::clone(&logs);
                std::thread::spawn(move || {
                    let mut x = t.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                    for _ in 0..5_000 {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let mask = (x % ((1 << N) - 1)) + 1;
                        let h = c.take(mask);
                        for p in h.partitions() {
                            logs[p].lock().push(h.seq());
                        }
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        let mut total = 0;
        for (p, l) in logs.iter().enumerate() {
            let l = l.lock();
            total += l.len();
            assert!(
                l.windows(2).all(|w| w[0] < w[1]),
                "log {p} is not ordered by sequence number"
            );
            assert_eq!(c.current(p), l.last().copied().unwrap_or(0));
        }
        assert!(total >= 4 * 5_000);
    }
}
