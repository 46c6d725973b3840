//! Per-worker statistics counters: each worker adds to words of its own (a relaxed load and
//! store, no read-modify-write) on a cache line of their own, and a reader sums them over the
//! workers. So a statistics count on a hot path writes no word that every worker writes (see
//! [`crate::proxy`]: such a word would be a global read-modify-write per event). The same
//! single-writer pattern as [`crate::proxy::ProxyCounter`], for a scheme's own counters.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;

use crossbeam_utils::CachePadded;
use parking_lot::Mutex;

/// Counters a [`Tally`] holds.
pub(crate) const WORDS: usize = 7;

type Cells = CachePadded<[AtomicU64; WORDS]>;

/// One worker's counters. Only its owner adds to them.
#[derive(Debug)]
pub(crate) struct Tally(Arc<Cells>);

impl Tally {
    /// Add `n` to counter `i` (`i < WORDS`; others are ignored).
    #[inline]
    pub(crate) fn add(&self, i: usize, n: u64) {
        if let Some(a) = self.0.get(i) {
            a.store(a.load(Relaxed) + n, Relaxed);
        }
    }
}

/// The register of a scheme's workers' [`Tally`]s.
#[derive(Debug, Default)]
pub(crate) struct TallyBoard {
    cells: Mutex<Vec<Arc<Cells>>>,
}

impl TallyBoard {
    /// A tally for a new worker (its counts stay in the sums after the worker is gone).
    pub(crate) fn tally(&self) -> Tally {
        let c: Arc<Cells> = Arc::new(CachePadded::new(Default::default()));
        let mut g = self.cells.lock();
        // Merge the tallies of workers that are gone into one, so the list stays short.
        let gone = g.iter().filter(|c| Arc::strong_count(c) == 1).count();
        if gone >= 2 {
            let retired: Cells = CachePadded::new(Default::default());
            g.retain(|c| {
                if Arc::strong_count(c) != 1 {
                    return true;
                }
                for (r, x) in retired.iter().zip(c.iter()) {
                    r.store(r.load(Relaxed) + x.load(Relaxed), Relaxed);
                }
                false
            });
            g.push(Arc::new(retired));
        }
        g.push(Arc::clone(&c));
        Tally(c)
    }

    /// Counter `i` summed over every worker.
    pub(crate) fn sum(&self, i: usize) -> u64 {
        self.cells
            .lock()
            .iter()
            .filter_map(|c| c.get(i))
            .map(|a| a.load(Relaxed))
            .sum()
    }
}
