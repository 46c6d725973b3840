//! One recoverable log in persistent memory, in one of the three layouts of REWIND §3 / §5:
//!
//! * **Simple** (§3.2): an ADLL whose nodes each carry one record. Appending is Alg. 1 (four
//!   fences); clearing a record is an ADLL removal (three fences).
//! * **Optimized** (§3.3, Fig. 2): an ADLL of fixed-size *buckets*. A bucket holds an array of
//!   slots (one word each) and an array of record cells. A record is written to its cell,
//!   persisted, and then published by one atomic store of its slot (two fences per record).
//!   Clearing marks a slot as a gap; a bucket whose slots are all gaps is unlinked. The next
//!   free slot and the per-bucket live counts are volatile and rebuilt at recovery from the
//!   slots (the paper: "we reconstruct them through the marked gaps").
//! * **Batch** (§3.3, "Multiple log records per cache line"): the Optimized buckets plus a
//!   persistent index per bucket of the last persisted slot. Appends only store (no flush, no
//!   fence); [`LogStore::sync`] flushes every record and slot written since the last sync,
//!   fences, and then persists the index, so a group of records costs two fences whatever
//!   its size. Recovery trusts only slots below the index. The transaction layer defers its
//!   user writes until the records covering them are synced (WAL), and syncs when its group
//!   is full, at END, and when a bucket fills.
//! * **Sealed** (beyond the paper; the one-fence commit of Quadra and Trinity, Ramalhete,
//!   Correia and Felber, PPoPP 2021, carried over to REWIND's log): Batch buckets without
//!   slots or persisted index. Each record cell carries a *seal*, a hash of the record, the
//!   cell's offset and the bucket's generation (bumped each time the bucket is linked), so a
//!   cell is valid exactly when all of its five words reached memory from this use of the
//!   bucket. [`LogStore::sync`] flushes the cells written since the last sync and fences once;
//!   recovery trusts a bucket's cells up to the first one whose seal does not match. A
//!   transaction that logs END in the same group as its last records (the Batch rule)
//!   therefore commits with one fence: its records and END are durable together or END is not
//!   part of the log. Clearing a record flips its seal to the gap seal (one atomic word).
//!   Quadra validates a commit by counting the words of the transaction; here the seals do
//!   the same for log records, keeping REWIND's in-place updates and its recoverable log.
//!
//! Choices where the paper is open: records are written with plain stores plus a cache-line
//! flush rather than non-temporal stores (equal durability; and a flush also writes back lines
//! another thread stored, which lets any thread sync a shared Batch log). The index is made
//! durable with a second fence before any user write it covers may reach memory, as a user
//! line can be evicted at any time. Slot values: 0 = empty, 1 = gap, otherwise the offset of
//! the slot's own cell. The log's nodes come from a fixed arena reserved when the pool is
//! created; arena nodes that are not on the list are free, so the arena needs no allocator
//! state of its own and cannot leak across crashes. Log clearing after recovery follows §4.5:
//! a fresh empty list header is written and persisted, and the log's root word is switched to
//! it with one atomic store (two header slots alternate).
//!
//! Files: this one holds the layouts, the arena and the log's volatile state; `append.rs`
//! appends, syncs and clears records; `recover.rs` scans, recovers and resets the log.

mod append;
mod recover;

pub(crate) use append::flush_lines;

use std::sync::{Mutex, MutexGuard};

use braid_pmem::Region;

use crate::adll::{ADLL_HDR, Adll};
use crate::record::{REC_SIZE, REC_WORDS, Rec};

/// Log layout (REWIND's Simple, Optimized and Batch versions, §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum LogLayout {
    /// An atomic doubly-linked list with one record per node (§3.2, Alg. 1): four fences per
    /// append.
    Simple,
    /// A list of buckets of record slots (§3.3, Fig. 2): two fences per record.
    Optimized,
    /// Optimized buckets whose records are persisted a group at a time (§3.3, "Multiple log
    /// records per cache line"): two fences per group of records.
    Batch,
    /// Batch buckets whose records validate themselves with a seal (Quadra's one-fence
    /// commit): one fence per group of records, and a commit is one fence.
    Sealed,
}

impl LogLayout {
    pub(crate) fn code(self) -> u64 {
        match self {
            LogLayout::Simple => 1,
            LogLayout::Optimized => 2,
            LogLayout::Batch => 3,
            LogLayout::Sealed => 4,
        }
    }

    pub(crate) fn from_code(c: u64) -> Option<LogLayout> {
        match c {
            1 => Some(LogLayout::Simple),
            2 => Some(LogLayout::Optimized),
            3 => Some(LogLayout::Batch),
            4 => Some(LogLayout::Sealed),
            _ => None,
        }
    }
}

/// Bytes of a log descriptor in the pool: root word, then two ADLL header slots.
pub(crate) const LOG_DESC: usize = 3 * 64;
const SLOT_EMPTY: u64 = 0;
const SLOT_GAP: u64 = 1;
/// Bucket header: next, prev, persisted index (Batch) or generation (Sealed).
const PIDX: usize = 16;
const GEN: usize = 16;
/// Sealed: a cell is the 32-byte record followed by its seal word.
const SEALED_CELL: usize = REC_SIZE + 8;
/// Sealed: a cleared cell's seal is its record's seal xor this.
const GAP_SALT: u64 = 0x9E37_79B9_7F4A_7C15;
const BUCKET_HDR: usize = 64;
/// Simple node: next, prev, then the record cell.
const SIMPLE_NODE: usize = 64;
const SIMPLE_CELL: usize = 16;

/// Position of a record: its node and its slot in the node (0 for Simple).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Pos {
    pub node: usize,
    pub slot: usize,
}

/// Node arena geometry.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Arena {
    pub base: usize,
    pub node_size: usize,
    pub count: usize,
}

impl Arena {
    fn node(&self, i: usize) -> usize {
        self.base + i * self.node_size
    }

    fn index(&self, n: usize) -> Option<usize> {
        if n < self.base || !(n - self.base).is_multiple_of(self.node_size) {
            return None;
        }
        let i = (n - self.base) / self.node_size;
        (i < self.count).then_some(i)
    }
}

/// Bytes of one arena node for a layout with `bucket` records per bucket.
pub(crate) fn node_size(layout: LogLayout, bucket: usize) -> usize {
    match layout {
        LogLayout::Simple => SIMPLE_NODE,
        LogLayout::Sealed => BUCKET_HDR + bucket * SEALED_CELL,
        _ => BUCKET_HDR + (bucket * 8).next_multiple_of(64) + bucket * REC_SIZE,
    }
}

struct State {
    list: Adll,
    free: Vec<usize>,
    /// Live records per arena node.
    live: Vec<u32>,
    /// Bucket layouts: current tail bucket and its next free slot; Batch: persisted index.
    tail: usize,
    next: usize,
    persisted: usize,
    /// Sealed: the tail bucket's generation.
    generation: u64,
    /// Sealed: cells forgotten by a checkpoint (still valid in memory), a bit per cell, the
    /// buckets' bitmaps one after another.
    forgotten: Vec<u64>,
    /// Live records in the whole log.
    total_live: usize,
    /// Records promised to running transactions (their CLRs, ROLLBACK and END).
    reserved: usize,
    /// The last node whose arena index an append asked for, and that index (appends go to
    /// the tail bucket again and again, and the index costs a division).
    memo: (usize, Option<usize>),
}

impl State {
    /// `arena.index(n)`, remembered for the last `n` asked.
    #[inline]
    fn index_of(&mut self, arena: &Arena, n: usize) -> Option<usize> {
        if self.memo.0 != n {
            self.memo = (n, arena.index(n));
        }
        self.memo.1
    }
}

/// One log (see the module documentation).
pub(crate) struct LogStore {
    r: Region,
    layout: LogLayout,
    /// Offset of the descriptor (root word; header slots at +64 and +128).
    desc: usize,
    arena: Arena,
    bucket: usize,
    slots_off: usize,
    cells_off: usize,
    st: Mutex<State>,
}

impl LogStore {
    pub fn new(r: Region, layout: LogLayout, desc: usize, arena: Arena, bucket: usize) -> Self {
        let bucket = if layout == LogLayout::Simple {
            1
        } else {
            bucket
        };
        let slots_off = BUCKET_HDR;
        let cells_off = if layout == LogLayout::Sealed {
            BUCKET_HDR
        } else {
            BUCKET_HDR + (bucket * 8).next_multiple_of(64)
        };
        LogStore {
            r,
            layout,
            desc,
            arena,
            bucket,
            slots_off,
            cells_off,
            st: Mutex::new(State {
                list: Adll { hdr: desc + 64 },
                free: Vec::new(),
                live: vec![0; arena.count],
                tail: 0,
                next: 0,
                persisted: 0,
                generation: 0,
                forgotten: if layout == LogLayout::Sealed {
                    vec![0; arena.count * bucket.div_ceil(64)]
                } else {
                    Vec::new()
                },
                total_live: 0,
                reserved: 0,
                memo: (usize::MAX, None),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves the persistent log consistent (every step is
        // recoverable), and the volatile state is only advanced after each step, so poisoning
        // carries no information here.
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Capacity in records.
    pub fn capacity(&self) -> usize {
        self.arena.count * self.bucket
    }

    /// Records currently in the log.
    pub fn live(&self) -> usize {
        self.lock().total_live
    }

    /// Initialise an empty log (pool creation).
    pub fn format(&self) {
        let r = &self.r;
        let hdr = self.desc + 64;
        Adll { hdr }.format(r);
        r.store_u64(self.desc, hdr as u64);
        r.persist(self.desc, 8);
        let mut st = self.lock();
        self.reset_state(&mut st, hdr);
    }

    fn reset_state(&self, st: &mut State, hdr: usize) {
        st.list = Adll { hdr };
        st.free = (0..self.arena.count)
            .rev()
            .map(|i| self.arena.node(i))
            .collect();
        st.live.iter_mut().for_each(|c| *c = 0);
        st.forgotten.iter_mut().for_each(|w| *w = 0);
        st.tail = 0;
        st.next = 0;
        st.persisted = 0;
        st.total_live = 0;
        st.reserved = 0;
    }

    /// Records that can still be appended.
    fn available(&self, st: &State) -> usize {
        match self.layout {
            LogLayout::Simple => st.free.len(),
            _ => {
                let tail_room = if st.tail == 0 {
                    0
                } else {
                    self.bucket - st.next
                };
                st.free.len() * self.bucket + tail_room
            }
        }
    }

    /// Give back `n` reserved records (a transaction ended without using them).
    pub fn unreserve(&self, n: usize) {
        if n == 0 {
            return;
        }
        let mut st = self.lock();
        st.reserved = st.reserved.saturating_sub(n);
    }

    fn slot(&self, node: usize, i: usize) -> usize {
        node + self.slots_off + i * 8
    }

    fn cell(&self, p: Pos) -> usize {
        match self.layout {
            LogLayout::Simple => p.node + SIMPLE_CELL,
            LogLayout::Sealed => p.node + self.cells_off + p.slot * SEALED_CELL,
            _ => p.node + self.cells_off + p.slot * REC_SIZE,
        }
    }

    /// Sealed: the bit of the cell at `p` in the forgotten bitmap (word index, mask).
    fn forgotten_bit(&self, p: Pos) -> (usize, u64) {
        self.forgotten_bit_at(self.arena.index(p.node).unwrap_or(0), p.slot)
    }

    /// Sealed: the bit of cell `slot` of the bucket of arena index `i` in the forgotten
    /// bitmap.
    fn forgotten_bit_at(&self, i: usize, slot: usize) -> (usize, u64) {
        let words = self.bucket.div_ceil(64);
        (i * words + slot / 64, 1 << (slot % 64))
    }

    /// Sealed: the generation of bucket `node`.
    fn generation(&self, node: usize) -> u64 {
        self.r.load_u64(node + GEN)
    }

    /// Sealed: read and check the cell at `p` of a bucket of generation `generation`.
    fn read_sealed(&self, p: Pos, generation: u64) -> CellState {
        let cell = self.cell(p);
        let mut b = [0u8; SEALED_CELL];
        self.r.read(cell, &mut b);
        let mut rec = [0u8; REC_SIZE];
        rec.copy_from_slice(&b[..REC_SIZE]);
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[REC_SIZE..]);
        let stored = u64::from_le_bytes(w);
        let want = seal(&rec, cell, generation);
        if stored == want {
            Rec::decode(&rec).map_or(CellState::Invalid, CellState::Live)
        } else if stored == want ^ GAP_SALT {
            CellState::Gap
        } else {
            CellState::Invalid
        }
    }

    /// Whether records are persisted a group at a time by [`LogStore::sync`] (Batch, Sealed).
    pub fn is_grouped(&self) -> bool {
        matches!(self.layout, LogLayout::Batch | LogLayout::Sealed)
    }
}

/// Sealed: the seal of the record `bytes` in the cell at offset `cell` of a bucket of
/// generation `gen` (a multiply-xorshift hash; it only has to tell a complete cell of this
/// use of the bucket from torn or stale bytes, not resist an adversary).
pub(crate) fn seal(bytes: &[u8; REC_SIZE], cell: usize, generation: u64) -> u64 {
    let mut w = [0u64; REC_WORDS];
    for (w, b) in w.iter_mut().zip(bytes.chunks_exact(8)) {
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        *w = u64::from_le_bytes(a);
    }
    seal_words(&w, cell, generation)
}

/// [`seal`] of the record whose words ([`Rec::words`]) are `words`.
pub(crate) fn seal_words(words: &[u64; REC_WORDS], cell: usize, generation: u64) -> u64 {
    const K: u64 = 0xFF51_AFD7_ED55_8CCD;
    let mut h = (cell as u64).wrapping_mul(K) ^ generation.rotate_left(32) ^ 0xC4CE_B9FE_1A85_EC53;
    for &w in words {
        h = (h ^ w).wrapping_mul(K);
        h ^= h >> 29;
    }
    h ^= h >> 32;
    // Never 0 (a zeroed cell) nor GAP_SALT (a zeroed cell seen as a gap).
    if h == 0 || h == GAP_SALT { 2 } else { h }
}

/// Sealed: what a cell holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CellState {
    /// A record of this use of the bucket.
    Live(Rec),
    /// A record cleared.
    Gap,
    /// Torn, stale or never written: the end of the bucket's valid cells.
    Invalid,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::RewindError;
    use crate::record::Rec;
    use braid_pmem::{CrashMode, CrashSim, PmemConfig};

    fn store(r: &Region, layout: LogLayout) -> LogStore {
        let arena = Arena {
            base: 1024,
            node_size: node_size(layout, 4),
            count: 16,
        };
        LogStore::new(r.clone(), layout, 0, arena, 4)
    }

    fn recs(l: &LogStore) -> Vec<Rec> {
        l.scan().into_iter().map(|(_, r)| r).collect()
    }

    #[test]
    fn append_clear_recover_every_layout() {
        for layout in [
            LogLayout::Simple,
            LogLayout::Optimized,
            LogLayout::Batch,
            LogLayout::Sealed,
        ] {
            let r = CrashSim::region(64 * 1024, PmemConfig::default());
            let l = store(&r, layout);
            l.format();
            let mut ps = Vec::new();
            for i in 0..10 {
                ps.push(l.append(&Rec::update(1, 8 * i, i, i + 1), Some(0)).unwrap());
            }
            l.sync();
            assert_eq!(recs(&l).len(), 10);
            l.clear(&ps[..5], Some(ps[5]));
            let left: Vec<u64> = recs(&l).iter().map(|r| r.addr).collect();
            assert_eq!(left, vec![48, 56, 64, 72], "{layout:?}");
            let c = r.crash(CrashMode::DropUnpersisted).unwrap();
            let l2 = store(&c, layout);
            l2.recover().unwrap();
            assert_eq!(recs(&l2), recs(&l), "{layout:?}");
            // Appending continues after the recovered position.
            l2.append(&Rec::update(2, 800, 0, 1), Some(0)).unwrap();
            l2.sync();
            assert_eq!(recs(&l2).len(), 5);
            l2.reset();
            assert!(recs(&l2).is_empty());
            let c = c.crash(CrashMode::DropUnpersisted).unwrap();
            let l3 = store(&c, layout);
            l3.recover().unwrap();
            assert!(recs(&l3).is_empty());
            // The log fills up and reports it; clearing makes room again.
            let mut all = Vec::new();
            loop {
                match l3.append(&Rec::update(3, 0, 0, 0), Some(0)) {
                    Ok(p) => all.push(p),
                    Err(RewindError::LogFull { .. }) => break,
                    Err(e) => panic!("{e}"),
                }
            }
            assert!(all.len() >= l3.capacity() - 4);
            l3.sync();
            l3.clear(&all, None);
            l3.append(&Rec::update(3, 0, 0, 0), Some(0)).unwrap();
        }
    }

    /// A Batch record is not part of the log until synced, and is after.
    #[test]
    fn batch_needs_sync() {
        let r = CrashSim::region(64 * 1024, PmemConfig::default());
        let l = store(&r, LogLayout::Batch);
        l.format();
        l.append(&Rec::update(1, 8, 0, 1), Some(0)).unwrap();
        let c = r.crash(CrashMode::DropUnpersisted).unwrap();
        let l2 = store(&c, LogLayout::Batch);
        l2.recover().unwrap();
        assert!(recs(&l2).is_empty());
        l.sync();
        let c = r.crash(CrashMode::DropUnpersisted).unwrap();
        let l2 = store(&c, LogLayout::Batch);
        l2.recover().unwrap();
        assert_eq!(recs(&l2).len(), 1);
    }
}
