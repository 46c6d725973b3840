//! The ordered index of a table: `u64` keys in 64 `parking_lot::RwLock<BTreeMap>` shards, each
//! key in the shard of its prefix (the bits above [`BLOCK_BITS`]), so a range inside one prefix
//! takes one shared lock and walks one `std` B-tree. (No paper section: the papers' engines keep
//! their indexes out of the measurement.)
//!
//! Why not a concurrent tree from a crate: `benches/ordered_index.rs` measures the candidates
//! under TPC-C's New-Order queue (insert at the high end of a district, scan for its lowest key,
//! recount, remove it) and under point gets of 1M ORDER-LINE keys, two threads. `scc::TreeIndex`,
//! the index before this one, keeps the slots of removed keys in its leaves and walks them on
//! every scan from the low end: a queue operation costs hundreds of microseconds once a few
//! million keys have passed through (540 us against 0.16 us here). `crossbeam_skiplist::SkipMap`
//! scans in time proportional to what it returns but takes 3x as long per queue operation and
//! 2.5-3.5x as long per get (a pointer chase per level). `concurrent_map` (a lock-free
//! copy-on-write B+-tree) copies a whole leaf of values on each insert and remove (5x per queue
//! operation, 1.4x per get) and is not `Sync`. The shards were fastest on the queue and as fast
//! as `TreeIndex` at gets: a `std` B-tree frees a removed key's slot at once, so a scan from the
//! low end of a queue finds its first key in one descent.
//!
//! Keys are sharded by prefix, not hashed, so that a range scan stays ordered: TPC-C's keys put
//! the warehouse and district above bit 32 (its queue, orders, order lines, customers by name
//! and orders by customer), so each district's rows share a lock only with other districts that
//! hash to the same shard, and every range a transaction scans lies inside one prefix. A table
//! whose keys all lie below 2^32 (TATP's call forwardings) has one shard: correct, with one
//! shared lock word for the whole table. A range over several prefixes walks them in order,
//! each under its own shard's lock (see [`OrderedIndex::range`]).
//!
//! Guarantees the transactions rely on: a scan sees every key of its range that stays in the
//! index for the whole scan, whatever is inserted or removed around it (a range inside one
//! prefix is even an atomic snapshot, being read under one lock), so the phantom check that
//! counts a range twice sees no false phantom and misses no real one.

use std::collections::BTreeMap;
use std::ops::Bound::{self, Excluded, Included, Unbounded};

use parking_lot::RwLock;

/// Bits of a key below its prefix: keys that agree above them share a shard.
pub(crate) const BLOCK_BITS: u32 = 32;
const SHARDS: usize = 64;

type Shard<V> = RwLock<BTreeMap<u64, V>>;

/// An ordered map of `u64` keys, safe to share between threads.
pub(crate) struct OrderedIndex<V> {
    shards: Box<[Shard<V>]>,
}

impl<V> Default for OrderedIndex<V> {
    fn default() -> Self {
        OrderedIndex {
            shards: (0..SHARDS).map(|_| RwLock::new(BTreeMap::new())).collect(),
        }
    }
}

/// The prefix of `key` (its block of 2^[`BLOCK_BITS`] keys).
fn block(key: u64) -> u64 {
    key >> BLOCK_BITS
}

impl<V: Clone> OrderedIndex<V> {
    /// An empty index.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    fn shard(&self, key: u64) -> &Shard<V> {
        self.shard_of_block(block(key))
    }

    fn shard_of_block(&self, b: u64) -> &Shard<V> {
        // Consecutive prefixes (districts, warehouses) land on different shards.
        &self.shards[(b % SHARDS as u64) as usize]
    }

    /// `f` on the value at `key`.
    pub(crate) fn peek<R>(&self, key: u64, f: impl FnOnce(&V) -> R) -> Option<R> {
        self.shard(key).read_recursive().get(&key).map(f)
    }

    /// Insert; gives the value back if the key is taken.
    pub(crate) fn insert(&self, key: u64, value: V) -> Result<(), V> {
        match self.shard(key).write().entry(key) {
            std::collections::btree_map::Entry::Vacant(e) => {
                e.insert(value);
                Ok(())
            }
            std::collections::btree_map::Entry::Occupied(_) => Err(value),
        }
    }

    /// Remove `key` if `remove` says yes to its value; whether it was removed.
    pub(crate) fn remove_if(&self, key: u64, remove: impl FnOnce(&V) -> bool) -> bool {
        let mut m = self.shard(key).write();
        match m.get(&key) {
            Some(v) if remove(v) => {
                m.remove(&key);
                true
            }
            _ => false,
        }
    }

    /// Keys in the index.
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.read_recursive().len()).sum()
    }

    /// Visit the entries in `[lo, hi]` in key order until `f` returns false. `f` runs under a
    /// shard's shared lock: it may read the index but must not insert or remove.
    ///
    /// A range inside one prefix is read under one lock. A wider one goes prefix by prefix
    /// from `lo`: the next prefix holding a key of the range is found by asking every shard for
    /// its first key at or after the cursor (the smallest answer is the next key in the index),
    /// so empty prefixes cost nothing and each non-empty one costs one probe per shard.
    pub(crate) fn range(&self, lo: Bound<u64>, hi: Bound<u64>, mut f: impl FnMut(u64, &V) -> bool) {
        let Some(start) = first_key(lo) else { return };
        let Some(end) = last_key(hi) else { return };
        if start > end {
            return;
        }
        if block(start) == block(end) {
            self.walk(start, end, &mut f);
            return;
        }
        let mut cursor = start;
        loop {
            let next = self
                .shards
                .iter()
                .filter_map(|s| {
                    s.read_recursive()
                        .range(cursor..=end)
                        .next()
                        .map(|(k, _)| *k)
                })
                .min();
            let Some(next) = next else { return };
            let b = block(next);
            let block_end = (b << BLOCK_BITS) | ((1u64 << BLOCK_BITS) - 1);
            if !self.walk(next, block_end.min(end), &mut f) {
                return;
            }
            if block_end >= end {
                return;
            }
            cursor = block_end + 1;
        }
    }

    /// Visit `[start, end]`, which lies inside one prefix; false if `f` stopped the walk.
    fn walk(&self, start: u64, end: u64, f: &mut impl FnMut(u64, &V) -> bool) -> bool {
        let m = self.shard(start).read_recursive();
        for (k, v) in m.range(start..=end) {
            if !f(*k, v) {
                return false;
            }
        }
        true
    }

    /// Every entry, shard by shard (no order). Each shard is copied out under its lock and
    /// `f` runs with no lock held, so it may do anything, the index included.
    pub(crate) fn for_each(&self, mut f: impl FnMut(u64, &V)) {
        for s in self.shards.iter() {
            let entries: Vec<(u64, V)> = s
                .read_recursive()
                .iter()
                .map(|(k, v)| (*k, v.clone()))
                .collect();
            for (k, v) in &entries {
                f(*k, v);
            }
        }
    }
}

/// The smallest key `lo` admits.
fn first_key(lo: Bound<u64>) -> Option<u64> {
    match lo {
        Included(k) => Some(k),
        Excluded(k) => k.checked_add(1),
        Unbounded => Some(0),
    }
}

/// The greatest key `hi` admits.
fn last_key(hi: Bound<u64>) -> Option<u64> {
    match hi {
        Included(k) => Some(k),
        Excluded(k) => k.checked_sub(1),
        Unbounded => Some(u64::MAX),
    }
}

impl<V> std::fmt::Debug for OrderedIndex<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OrderedIndex").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ops::RangeBounds;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    fn keys(ix: &OrderedIndex<u64>, lo: Bound<u64>, hi: Bound<u64>) -> Vec<u64> {
        let mut out = Vec::new();
        ix.range(lo, hi, |k, v| {
            assert_eq!(k, *v);
            out.push(k);
            true
        });
        out
    }

    /// Ranges inside one prefix, across prefixes (sharing a shard or not) and unbounded agree
    /// with a `BTreeMap`; a scan stops when asked.
    #[test]
    fn ranges_match_a_btreemap() {
        let ix = OrderedIndex::new();
        let mut want = BTreeMap::new();
        let prefixes = [0u64, 1, 2, 65, 66, 1 << 20, u64::MAX >> BLOCK_BITS];
        for p in prefixes {
            for low in [0u64, 1, 7, 1000, u64::from(u32::MAX)] {
                let k = (p << BLOCK_BITS) | low;
                assert!(ix.insert(k, k).is_ok());
                want.insert(k, k);
            }
        }
        assert_eq!(ix.insert(7, 8), Err(8));
        assert_eq!(ix.len(), want.len());
        let edges: Vec<u64> = want
            .keys()
            .flat_map(|k| [k.saturating_sub(1), *k, k.saturating_add(1)])
            .collect();
        let bounds = |k: u64| [Included(k), Excluded(k)];
        for &a in edges.iter().step_by(3) {
            for &b in edges.iter().step_by(2) {
                for lo in bounds(a).into_iter().chain([Unbounded]) {
                    for hi in bounds(b).into_iter().chain([Unbounded]) {
                        let expect: Vec<u64> = want
                            .keys()
                            .copied()
                            .filter(|k| (lo, hi).contains(k))
                            .collect();
                        assert_eq!(keys(&ix, lo, hi), expect, "{lo:?} {hi:?}");
                    }
                }
            }
        }
        let mut n = 0;
        ix.range(Unbounded, Unbounded, |_, _| {
            n += 1;
            n < 9
        });
        assert_eq!(n, 9);
        assert!(ix.remove_if(7, |v| *v == 7));
        assert!(!ix.remove_if(7, |_| true));
        assert!(!ix.remove_if(1, |v| *v == 2));
        let mut all = Vec::new();
        ix.for_each(|k, _| all.push(k));
        all.sort_unstable();
        want.remove(&7);
        assert_eq!(all, want.keys().copied().collect::<Vec<_>>());
    }

    /// Writers insert and remove keys at a moving front in prefixes 0 and 1 while a reader
    /// scans ranges (inside prefix 0, and across prefixes 0..=2) whose ten keys are never
    /// removed: every scan sees all ten, in order.
    #[test]
    fn range_sees_stable_keys_under_churn() {
        let ix: OrderedIndex<u64> = OrderedIndex::new();
        let stable: Vec<u64> = (1_000_000..1_000_005u64)
            .chain((1 << BLOCK_BITS) + 1_000_000..(1 << BLOCK_BITS) + 1_000_005)
            .collect();
        for &k in &stable {
            assert!(ix.insert(k, k).is_ok());
        }
        let stop = AtomicBool::new(false);
        let (scans, missed) = (AtomicU64::new(0), AtomicU64::new(0));
        std::thread::scope(|s| {
            for w in 0..2u64 {
                let (ix, stop) = (&ix, &stop);
                s.spawn(move || {
                    let base = w << BLOCK_BITS;
                    let mut k = 0;
                    while !stop.load(Ordering::Relaxed) {
                        let _ = ix.insert(base + k, base + k);
                        if k >= 128 {
                            ix.remove_if(base + k - 128, |_| true);
                        }
                        k = if k + 1 >= 1_000_000 { 0 } else { k + 1 };
                    }
                });
            }
            // A count of scans, not a time: on a loaded machine the reader may get little of
            // it, and every scan it makes must still see all ten keys.
            for _ in 0..200 {
                for (lo, hi, want) in [
                    (Included(0), Included(2_000_000), &stable[..5]),
                    (Unbounded, Included(3 << BLOCK_BITS), &stable[..]),
                    (Included(500_000), Excluded(u64::MAX), &stable[..]),
                ] {
                    let mut seen = Vec::new();
                    ix.range(lo, hi, |k, _| {
                        if stable.contains(&k) {
                            seen.push(k);
                        }
                        true
                    });
                    scans.fetch_add(1, Ordering::Relaxed);
                    if seen != want {
                        missed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            stop.store(true, Ordering::Relaxed);
        });
        assert_eq!(scans.load(Ordering::Relaxed), 600);
        assert_eq!(missed.load(Ordering::Relaxed), 0);
    }
}
