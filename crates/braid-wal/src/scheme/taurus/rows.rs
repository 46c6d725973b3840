//! Row LSN vectors (Taurus Section 4.1): in the engine's rows, beside their lock words, and in
//! a lock-table-like map with delta eviction ("Tuple LV Compression") for what has no row.
//!
//! Every row a transaction touches has a `writeLV` and, under command logging, a `readLV`
//! (data logging never needs WAR order, so it keeps no readLV at all), in one run of words
//! `[pending, writeLV.., readLV..]` (see [`lv_words`]).
//!
//! * **In the row.** When the engine hands the row's [`RowMeta`](crate::scheme::RowMeta) slot
//!   (it always does), the words live there, in the row beside its lock word for up to
//!   [`ROW_META_INLINE`](crate::scheme::row::ROW_META_INLINE) words. They are zero until written,
//!   and zero reads as `base`, the log end recovery stopped at (every new transaction follows
//!   every recovered one it touches): each transaction's LV starts at `base`, so merging a
//!   zero word changes nothing a merge of `base` would not. This is where the paper keeps them:
//!   in the lock table entry the concurrency control finds anyway, so an access costs no second
//!   hash probe, no shard lock, no reference count and no cache miss of its own. They are never
//!   evicted: the storage is the row's (words beyond the inline ones are one allocation per
//!   row, counted in [`RowTable::bytes`]).
//! * **In the map.** Range LVs (below) and rows named by identity only (the log layer used
//!   without an engine) have an entry keyed by `(table, key)`. A key without an entry has the
//!   *floor* vector as both LVs: `floor = max(base, CLV - delta)` element-wise, where `CLV` is
//!   the committed vector of [`super::commit`]. An entry is evicted once nobody holds it and
//!   both its LVs are `<= floor`; since the floor only grows, the entry that replaces it later
//!   starts at a floor at least as large: eviction only ever adds (artificial) dependencies.
//!
//! The range LVs of ordered indexes (buckets of keys and table-wide entries, see `worker.rs`)
//! are entries of this table too, under table ids with the top bit set, and are held, raised and
//! evicted like row entries.
//!
//! Choices where the paper is vague:
//!
//! * The paper seeds a re-inserted tuple with `PLV - delta`; braid uses the committed vector
//!   `CLV` instead of `PLV`, so an artificial dependency never makes a transaction wait for
//!   anything that has not already committed (PLV may run ahead of CLV).
//! * A row's words belong to the row object: a key deleted and inserted again is a new row
//!   whose words start at `base`. The WAW edge from the delete to the insert (which the
//!   paper's "initialise to zero" would lose) goes through the range LV of the key's bucket:
//!   the delete raises its writeLV at commit, before the key leaves the index, and the insert
//!   merges it after the key entered the index (see `worker.rs`).
//! * A map entry: "nobody holds it" is the `Arc` count: a transaction clones the entry's `Arc` for as long
//!   as it runs, and new clones are only made under the shard lock, which eviction holds.
//! * `pending` counts OCC readers between raising the readLV (before validation) and raising
//!   it again with their own LSN (after logging); see `worker.rs` for why writers wait for it.
//! * Eviction is incremental: an insertion into a shard that reached its threshold sweeps that
//!   shard, and the threshold becomes twice what stays (at least 64), so sweeping costs O(1)
//!   amortised per insertion; evicted entries are reused by later insertions.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering, fence};

use crossbeam_utils::CachePadded;

use crate::scheme::{ROW_META_WORDS, RowMeta};
use parking_lot::Mutex;
use rustc_hash::FxHasher;

/// Shards of the row table (a power of two).
pub(crate) const SHARDS: usize = 64;
/// A shard is not swept below this many entries.
const SWEEP_MIN: usize = 64;
/// Evicted entries a shard keeps for reuse.
const FREE_MAX: usize = 64;

/// The LVs of one row, in one allocation with its reference count (a sweep looks at the count
/// and the LVs of many entries: one cache line each rather than two allocations): word 0 is
/// the `pending` count, words `1..=n` writeLV, `n+1..=2n` readLV (command logging only).
/// Cloning it is holding it.
#[derive(Debug, Clone)]
pub(crate) struct RowLv(Arc<[AtomicU64]>);

impl RowLv {
    fn new(words: impl Iterator<Item = u64>) -> RowLv {
        RowLv(
            std::iter::once(0)
                .chain(words)
                .map(AtomicU64::new)
                .collect(),
        )
    }
    /// Its words.
    #[inline]
    pub(crate) fn view(&self) -> Lvs<'_> {
        Lvs(&self.0)
    }
    /// writeLV and readLV, one after the other.
    #[inline]
    fn lvs(&self) -> &[AtomicU64] {
        &self.0[1..]
    }
    /// Whether `self` and `other` are the same entry.
    #[inline]
    pub(crate) fn same(&self, other: &RowLv) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
    /// Nobody but the table holds it.
    #[inline]
    fn unheld(&self) -> bool {
        Arc::strong_count(&self.0) == 1
    }
}

/// A row's LV words `[pending, writeLV (n), readLV (n, command logging only)]`, wherever they
/// live (a map entry or a row's slot).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lvs<'a>(pub(crate) &'a [AtomicU64]);

impl<'a> Lvs<'a> {
    /// OCC readers (and validating scanners) between their two raises of readLV.
    #[inline]
    pub(crate) fn pending(self) -> &'a AtomicU64 {
        &self.0[0]
    }
    #[inline]
    pub(crate) fn write_lv(self, n: usize) -> &'a [AtomicU64] {
        &self.0[1..=n]
    }
    /// Empty under data logging.
    #[inline]
    pub(crate) fn read_lv(self, n: usize) -> &'a [AtomicU64] {
        &self.0[n + 1..]
    }
    /// The words' address (an identity for comparisons).
    #[inline]
    pub(crate) fn addr(self) -> *const AtomicU64 {
        self.0.as_ptr()
    }
}

/// `dst = max(dst, src)` with `ops`, reading `src` entry by entry (the entries may be raised concurrently;
/// each load is atomic, which is all the protocol needs: every value read is one some
/// transaction published).
#[inline]
pub(crate) fn merge_from(
    ops: crate::lv::Ops,
    dst: &mut [u64],
    src: &[AtomicU64],
    scratch: &mut [u64],
) {
    for (s, a) in scratch.iter_mut().zip(src) {
        *s = a.load(Ordering::Relaxed);
    }
    ops.max_into(dst, &scratch[..src.len()]);
}

/// Raise every entry of `dst` to at least `src` (compare-and-swap per entry, Alg. 6 lines
/// 9-11; `fetch_max` is that loop).
#[inline]
pub(crate) fn raise(dst: &[AtomicU64], src: &[u64]) {
    for (a, &v) in dst.iter().zip(src) {
        if a.load(Ordering::Relaxed) < v {
            a.fetch_max(v, Ordering::Relaxed);
        }
    }
}

type Map = HashMap<(u32, u64), RowLv, BuildHasherDefault<FxHasher>>;

#[derive(Default)]
struct Shard {
    map: Map,
    /// Sweep when an insertion finds the map this large.
    next_sweep: usize,
    /// Evicted entries kept for reuse (no allocation for the next insertions).
    free: Vec<RowLv>,
}

/// The row-LV table.
pub(crate) struct RowTable {
    n: usize,
    /// 1 (writeLV) or 2 (writeLV + readLV).
    lvs: usize,
    delta: u64,
    base: Box<[u64]>,
    shards: Box<[CachePadded<Mutex<Shard>>]>,
}

impl RowTable {
    pub(crate) fn new(n: usize, read_lvs: bool, delta: u64, base: &[u64]) -> RowTable {
        RowTable {
            n,
            lvs: if read_lvs { 2 } else { 1 },
            delta,
            base: base.into(),
            shards: (0..SHARDS)
                .map(|_| {
                    CachePadded::new(Mutex::new(Shard {
                        next_sweep: SWEEP_MIN,
                        ..Shard::default()
                    }))
                })
                .collect(),
        }
    }

    /// Whether a row's words fit its [`RowMeta`](crate::scheme::RowMeta) slot (else rows
    /// are kept in the map even when the engine hands a slot).
    pub(crate) fn fits_slot(&self) -> bool {
        self.slot_words() <= ROW_META_WORDS
    }

    /// The log end recovery stopped at, per stream: what a row's LV words read as while they
    /// are zero (never written since open), and so where every transaction's LV starts.
    pub(crate) fn base(&self) -> &[u64] {
        &self.base
    }

    /// Words of a row's LVs.
    pub(crate) fn slot_words(&self) -> usize {
        1 + self.n * self.lvs
    }

    #[inline]
    fn shard_of(table: u32, key: u64) -> usize {
        let mut h = FxHasher::default();
        h.write_u32(table);
        h.write_u64(key);
        (h.finish() >> 32) as usize & (SHARDS - 1)
    }

    /// `floor = max(base, clv - delta)` into `out`.
    pub(crate) fn floor_into(&self, clv: &[u64], out: &mut [u64]) {
        for ((o, &c), &b) in out.iter_mut().zip(clv).zip(self.base.iter()) {
            *o = c.saturating_sub(self.delta).max(b);
        }
    }

    /// The entry of `(table, key)`, created at the floor if absent (`clv` is read only then).
    /// An insertion into a shard that has grown to its sweep threshold first evicts what it can
    /// (see the module docs), so eviction costs O(1) amortised per insertion.
    pub(crate) fn get(&self, table: u32, key: u64, clv: impl FnOnce(&mut [u64])) -> RowLv {
        let mut g = self.shards[Self::shard_of(table, key)].lock();
        if let Some(e) = g.map.get(&(table, key)) {
            return e.clone();
        }
        let mut c = [0u64; crate::lv::MAX_STREAMS];
        let mut f = [0u64; crate::lv::MAX_STREAMS];
        clv(&mut c[..self.n]);
        self.floor_into(&c[..self.n], &mut f[..self.n]);
        if g.map.len() >= g.next_sweep {
            self.sweep_locked(&mut g, &f[..self.n]);
            g.next_sweep = (2 * g.map.len()).max(SWEEP_MIN);
        }
        let e = match g.free.pop() {
            Some(e) => {
                for (k, a) in e.lvs().iter().enumerate() {
                    a.store(f[k % self.n], Ordering::Relaxed);
                }
                e
            }
            None => RowLv::new((0..self.n * self.lvs).map(|k| f[k % self.n])),
        };
        g.map.insert((table, key), e.clone());
        e
    }

    fn sweep_locked(&self, g: &mut Shard, floor: &[u64]) -> usize {
        let before = g.map.len();
        let Shard { map, free, .. } = g;
        map.retain(|_, e| {
            if !e.unheld() || e.view().pending().load(Ordering::Relaxed) != 0 {
                return true;
            }
            // Pairs with the release decrement of the last holder's `Arc` drop: its raises of
            // the LVs (made before it dropped the clone) are visible below.
            fence(Ordering::Acquire);
            let keep = !e
                .lvs()
                .iter()
                .enumerate()
                .all(|(k, a)| a.load(Ordering::Relaxed) <= floor[k % self.n]);
            if !keep && free.len() < FREE_MAX {
                free.push(e.clone());
            }
            keep
        });
        before - g.map.len()
    }

    /// Evict the entries of shard `shard` nobody holds whose LVs are all `<= floor(clv)`.
    /// Returns how many were evicted.
    #[cfg(test)]
    pub(crate) fn sweep(&self, shard: usize, clv: &[u64]) -> usize {
        let mut f = [0u64; crate::lv::MAX_STREAMS];
        self.floor_into(clv, &mut f[..self.n]);
        let mut g = self.shards[shard % SHARDS].lock();
        self.sweep_locked(&mut g, &f[..self.n])
    }

    /// Entries held now.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().map.len()).sum()
    }

    /// Bytes the table holds now: per shard its map's slots (at the map's capacity, with one
    /// control byte each and hashbrown's 7/8 load factor) and the shard itself, per entry
    /// in a map or on a free list its `Arc` allocation and LV allocation (16-byte allocator
    /// headers assumed), and the allocations of `spilled` row slots too large for the row (counted per
    /// worker, `Shared::stats`).
    pub(crate) fn bytes(&self, spilled: u64) -> usize {
        let slots = spilled as usize * (16 + RowMeta::spill_bytes(self.slot_words()));
        let slot = std::mem::size_of::<((u32, u64), RowLv)>() + 1;
        let per_entry = self.alloc_bytes();
        let mut total =
            slots + self.shards.len() * std::mem::size_of::<CachePadded<Mutex<Shard>>>();
        for s in self.shards.iter() {
            let g = s.lock();
            total += g.map.capacity() * 8 / 7 * slot;
            total += (g.map.len() + g.free.len()) * per_entry;
        }
        total
    }

    /// An entry's allocation: the allocator's header, the `Arc` counts, the pending word and
    /// the LVs.
    fn alloc_bytes(&self) -> usize {
        16 + 16 + 8 + 8 * self.n * self.lvs
    }

    /// Approximate bytes per entry: the map slot (key, pointer, control byte), the `Arc`
    /// header, the entry and its LV allocation (with the allocator's header).
    #[cfg(test)]
    pub(crate) fn entry_bytes(&self) -> usize {
        let slot = std::mem::size_of::<(u32, u64)>() + std::mem::size_of::<RowLv>() + 1;
        // Hash maps run at most 7/8 full.
        slot * 8 / 7 + self.alloc_bytes()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn command_logging_lvs_fit_the_row_up_to_the_papers_16_logs() {
        // [pending, writeLV, readLV]: 9 words at 4 logs, 33 at 16. Rows whose words do not fit
        // their slot fall back to the shared map (a shard lock and a probe per access).
        for n in [1, 2, 3, 4, 8, 16] {
            let t = RowTable::new(n, true, 10, &vec![0; n]);
            assert!(t.fits_slot(), "command logging on {n} logs");
            let meta = crate::scheme::RowMeta::default();
            let mut allocs = 0;
            let w = meta.words(t.slot_words(), || allocs += 1);
            assert_eq!(w.len(), t.slot_words());
            w[t.slot_words() - 1].store(7, Ordering::Relaxed);
            let again = meta.words(t.slot_words(), || allocs += 1);
            assert_eq!(again[t.slot_words() - 1].load(Ordering::Relaxed), 7);
            assert_eq!(
                allocs,
                usize::from(t.slot_words() > 4),
                "one allocation per row"
            );
        }
        assert!(!RowTable::new(17, true, 10, &[0; 17]).fits_slot());
    }

    #[test]
    fn entries_start_at_the_floor_and_evict_only_below_it() {
        let t = RowTable::new(2, true, 10, &[5, 0]);
        let e = t.get(1, 7, |c| c.copy_from_slice(&[100, 3]));
        let vals: Vec<u64> = e.lvs().iter().map(|a| a.load(Ordering::Relaxed)).collect();
        assert_eq!(vals, vec![90, 0, 90, 0]);
        raise(e.view().write_lv(2), &[120, 4]);
        drop(e);
        let shard = RowTable::shard_of(1, 7);
        // floor(clv = [125, 14]) = [115, 4]: writeLV [120, 4] is above it.
        assert_eq!(t.sweep(shard, &[125, 14]), 0);
        let held = t.get(1, 7, |_| unreachable!("present"));
        assert_eq!(t.sweep(shard, &[1000, 1000]), 0, "held entries stay");
        drop(held);
        assert_eq!(t.sweep(shard, &[1000, 1000]), 1);
        assert_eq!(t.len(), 0);
        let e = t.get(1, 7, |c| c.copy_from_slice(&[1000, 1000]));
        assert_eq!(e.view().write_lv(2)[0].load(Ordering::Relaxed), 990);
    }
}
