//! The replay pools of Taurus's parallel recovery (Alg. 4), without the log: one pool per
//! stream, its records in log order, each with a `claimed` and a `done` flag, and a `head`
//! (the first record not yet replayed) that workers move forward lock-free after each replay
//! (Alg. 4 lines 4-7). `RLV[j]` is derived from `head(j)`: everything before the head's record
//! is replayed, and its effects are visible to whoever read the head with acquire.
//!
//! Which records are ready (`T.LV <= RLV`) is the caller's business ([`Pools::claim_ready`]
//! takes it as a predicate), so `tests/loom_taurus.rs` can model-check the claim / finish /
//! head protocol on small hand-made pools; the atomics come from [`crate::sync`].

use std::sync::atomic::Ordering;

use crossbeam_utils::CachePadded;

use crate::sync::{AtomicBool, AtomicUsize};

struct Pool {
    claimed: Box<[AtomicBool]>,
    done: Box<[AtomicBool]>,
    head: CachePadded<AtomicUsize>,
}

/// The pools of one recovery.
pub struct Pools {
    pools: Box<[Pool]>,
}

impl Pools {
    /// Pools holding `keep[s]` records each.
    pub fn new(keep: &[usize]) -> Pools {
        Pools {
            pools: keep
                .iter()
                .map(|&k| Pool {
                    claimed: (0..k).map(|_| AtomicBool::new(false)).collect(),
                    done: (0..k).map(|_| AtomicBool::new(false)).collect(),
                    head: CachePadded::new(AtomicUsize::new(0)),
                })
                .collect(),
        }
    }

    /// The first record of pool `s` not known replayed (its length once all are).
    #[inline]
    pub fn head(&self, s: usize) -> usize {
        self.pools[s].head.load(Ordering::Acquire)
    }

    /// Claim a record no one claimed and `ready(s, k)` accepts: pools are visited from
    /// `first` on (a worker starts at its own), each within `window` records of its head.
    pub fn claim_ready(
        &self,
        first: usize,
        window: usize,
        mut ready: impl FnMut(usize, usize) -> bool,
    ) -> Option<(usize, usize)> {
        let n = self.pools.len();
        for off in 0..n {
            let s = (first + off) % n;
            let p = &self.pools[s];
            let h = p.head.load(Ordering::Acquire);
            for k in h..p.claimed.len().min(h.saturating_add(window)) {
                if p.claimed[k].load(Ordering::Relaxed) || !ready(s, k) {
                    continue;
                }
                if !p.claimed[k].swap(true, Ordering::AcqRel) {
                    return Some((s, k));
                }
            }
        }
        None
    }

    /// Record `k` of pool `s` is replayed: mark it done and move the head over every finished
    /// record (Alg. 4 lines 4-7, lock-free).
    pub fn finish(&self, s: usize, k: usize) {
        let p = &self.pools[s];
        p.done[k].store(true, Ordering::Release);
        loop {
            let h = p.head.load(Ordering::Acquire);
            if h >= p.done.len() || !p.done[h].load(Ordering::Acquire) {
                break;
            }
            let _ = p
                .head
                .compare_exchange(h, h + 1, Ordering::AcqRel, Ordering::Acquire);
        }
    }
}
