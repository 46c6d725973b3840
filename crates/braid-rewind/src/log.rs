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

use std::sync::{Mutex, MutexGuard};

use braid_pmem::Region;

use crate::RewindError;
use crate::adll::{ADLL_HDR, Adll};
use crate::record::{REC_SIZE, Rec};

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
}

impl LogLayout {
    pub(crate) fn code(self) -> u64 {
        match self {
            LogLayout::Simple => 1,
            LogLayout::Optimized => 2,
            LogLayout::Batch => 3,
        }
    }

    pub(crate) fn from_code(c: u64) -> Option<LogLayout> {
        match c {
            1 => Some(LogLayout::Simple),
            2 => Some(LogLayout::Optimized),
            3 => Some(LogLayout::Batch),
            _ => None,
        }
    }
}

/// Bytes of a log descriptor in the pool: root word, then two ADLL header slots.
pub(crate) const LOG_DESC: usize = 3 * 64;
const SLOT_EMPTY: u64 = 0;
const SLOT_GAP: u64 = 1;
/// Bucket header: next, prev, persisted index.
const PIDX: usize = 16;
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
    /// Live records in the whole log.
    total_live: usize,
    /// Records promised to running transactions (their CLRs, ROLLBACK and END).
    reserved: usize,
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
        let cells_off = BUCKET_HDR + (bucket * 8).next_multiple_of(64);
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
                total_live: 0,
                reserved: 0,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves the persistent log consistent (every step is
        // recoverable), and the volatile state is only advanced after each step, so poisoning
        // carries no information here.
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn layout(&self) -> LogLayout {
        self.layout
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
        let mut st = self.lock();
        st.reserved = st.reserved.saturating_sub(n);
    }

    fn slot(&self, node: usize, i: usize) -> usize {
        node + self.slots_off + i * 8
    }

    fn cell(&self, p: Pos) -> usize {
        match self.layout {
            LogLayout::Simple => p.node + SIMPLE_CELL,
            _ => p.node + self.cells_off + p.slot * REC_SIZE,
        }
    }

    /// Append a record. Simple and Optimized: durable on return. Batch: stored only; durable
    /// after the next [`LogStore::sync`].
    ///
    /// `hold = Some(h)`: a new record; fails with `LogFull` unless the log has room for it,
    /// for every record reserved so far, and for `h` more, which are then reserved for the
    /// caller. `None`: the record uses one of the caller's reserved records (CLR, ROLLBACK,
    /// END), so a transaction that started can always roll back and finish.
    pub fn append(&self, rec: &Rec, hold: Option<usize>) -> Result<Pos, RewindError> {
        let mut st = self.lock();
        match hold {
            Some(h) => {
                if self.available(&st) < 1 + st.reserved + h {
                    return Err(RewindError::LogFull {
                        capacity: self.capacity(),
                    });
                }
                st.reserved += h;
            }
            None => st.reserved = st.reserved.saturating_sub(1),
        }
        let r = &self.r;
        let bytes = rec.encode();
        if self.layout == LogLayout::Simple {
            let n = st.free.pop().ok_or(RewindError::LogFull {
                capacity: self.capacity(),
            })?;
            r.write(n + SIMPLE_CELL, &bytes);
            r.flush(n + SIMPLE_CELL, REC_SIZE);
            st.list.append(r, n);
            st.live[self.arena.index(n).unwrap_or(0)] = 1;
            st.total_live += 1;
            return Ok(Pos { node: n, slot: 0 });
        }
        if st.tail == 0 || st.next == self.bucket {
            self.new_bucket(&mut st)?;
        }
        let p = Pos {
            node: st.tail,
            slot: st.next,
        };
        let cell = self.cell(p);
        r.write(cell, &bytes);
        if self.layout == LogLayout::Optimized {
            r.persist(cell, REC_SIZE);
            r.store_u64(self.slot(p.node, p.slot), cell as u64);
            r.persist(self.slot(p.node, p.slot), 8);
        } else {
            r.store_u64(self.slot(p.node, p.slot), cell as u64);
        }
        st.next += 1;
        if let Some(i) = self.arena.index(p.node) {
            st.live[i] += 1;
        }
        st.total_live += 1;
        Ok(p)
    }

    /// Link a fresh bucket at the tail (syncing the old one first under Batch).
    fn new_bucket(&self, st: &mut State) -> Result<(), RewindError> {
        let r = &self.r;
        if self.layout == LogLayout::Batch {
            self.sync_locked(st);
        }
        let n = st.free.pop().ok_or(RewindError::LogFull {
            capacity: self.capacity(),
        })?;
        r.fill(n + self.slots_off, self.bucket * 8, 0);
        r.store_u64(n + PIDX, 0);
        r.flush(n, self.cells_off);
        st.list.append(r, n);
        let old = st.tail;
        st.tail = n;
        st.next = 0;
        st.persisted = 0;
        if old != 0 {
            self.maybe_unlink(st, old);
        }
        Ok(())
    }

    /// Unlink bucket `n` if it holds no live record and is not the tail.
    fn maybe_unlink(&self, st: &mut State, n: usize) {
        let Some(i) = self.arena.index(n) else {
            return;
        };
        if st.live[i] == 0 && n != st.tail {
            st.list.remove(&self.r, n);
            st.free.push(n);
        }
    }

    /// Batch: make every record appended so far durable (no-op for other layouts).
    pub fn sync(&self) {
        if self.layout == LogLayout::Batch {
            let mut st = self.lock();
            self.sync_locked(&mut st);
        }
    }

    fn sync_locked(&self, st: &mut State) {
        if st.tail == 0 || st.persisted == st.next {
            return;
        }
        let r = &self.r;
        let (a, z, n) = (st.persisted, st.next, st.tail);
        r.flush(self.slot(n, a), (z - a) * 8);
        r.flush(n + self.cells_off + a * REC_SIZE, (z - a) * REC_SIZE);
        r.fence();
        r.store_u64(n + PIDX, z as u64);
        r.persist(n + PIDX, 8);
        st.persisted = z;
    }

    /// Remove records: all of `recs`, then (after a fence) `last`, which is the transaction's
    /// END record so that it is removed last (REWIND §4.6).
    pub fn clear(&self, recs: &[Pos], last: Option<Pos>) {
        let mut st = self.lock();
        let r = &self.r;
        if self.layout == LogLayout::Simple {
            for p in recs.iter().chain(last.iter()) {
                st.list.remove(r, p.node);
                st.free.push(p.node);
                if let Some(i) = self.arena.index(p.node) {
                    st.live[i] = 0;
                }
                st.total_live -= 1;
            }
            return;
        }
        let mut touched = Vec::new();
        for group in [recs, last.as_slice()] {
            if group.is_empty() {
                continue;
            }
            for p in group {
                let s = self.slot(p.node, p.slot);
                r.store_u64(s, SLOT_GAP);
                r.flush(s, 8);
                if let Some(i) = self.arena.index(p.node) {
                    st.live[i] -= 1;
                }
                st.total_live -= 1;
                if touched.last() != Some(&p.node) {
                    touched.push(p.node);
                }
            }
            r.fence();
        }
        touched.sort_unstable();
        touched.dedup();
        for n in touched {
            self.maybe_unlink(&mut st, n);
        }
    }

    /// Every live record, oldest first, with its position.
    pub fn scan(&self) -> Vec<(Pos, Rec)> {
        let st = self.lock();
        self.scan_locked(&st)
    }

    fn scan_locked(&self, st: &State) -> Vec<(Pos, Rec)> {
        let r = &self.r;
        let mut out = Vec::with_capacity(st.total_live);
        let mut buf = [0u8; REC_SIZE];
        let mut n = st.list.head(r);
        while n != 0 {
            if self.layout == LogLayout::Simple {
                let p = Pos { node: n, slot: 0 };
                r.read(self.cell(p), &mut buf);
                if let Some(rec) = Rec::decode(&buf) {
                    out.push((p, rec));
                }
            } else {
                let limit = if n == st.tail { st.next } else { self.bucket };
                for i in 0..limit {
                    let v = r.load_u64(self.slot(n, i));
                    if v == SLOT_EMPTY || v == SLOT_GAP {
                        continue;
                    }
                    let p = Pos { node: n, slot: i };
                    r.read(self.cell(p), &mut buf);
                    if let Some(rec) = Rec::decode(&buf) {
                        out.push((p, rec));
                    }
                }
            }
            n = r.load_u64(n) as usize;
        }
        out
    }

    /// Recover the log structure after a crash (REWIND §4.5, first step): finish the pending
    /// ADLL operation, then rebuild the volatile state (free nodes, live counts, next slot).
    /// Damaged records are reported as errors naming their position.
    pub fn recover(&self) -> Result<(), RewindError> {
        let r = &self.r;
        let mut st = self.lock();
        let hdr = r.load_u64(self.desc) as usize;
        if hdr != self.desc + 64 && hdr != self.desc + 64 + ADLL_HDR {
            return Err(RewindError::Corrupt(format!(
                "log descriptor at {:#x} points at {hdr:#x}, not at one of its list headers",
                self.desc
            )));
        }
        st.list = Adll { hdr };
        let arena = self.arena;
        st.list
            .recover(r, |n| arena.index(n).is_some())
            .map_err(|e| RewindError::Corrupt(format!("log at {:#x}: {e}", self.desc)))?;
        let nodes = st
            .list
            .nodes(r, |n| arena.index(n).is_some(), arena.count)
            .map_err(|e| RewindError::Corrupt(format!("log at {:#x}: {e}", self.desc)))?;
        let mut used = vec![false; arena.count];
        st.live.iter_mut().for_each(|c| *c = 0);
        st.total_live = 0;
        st.tail = 0;
        st.next = 0;
        st.persisted = 0;
        let mut buf = [0u8; REC_SIZE];
        for (k, &n) in nodes.iter().enumerate() {
            let i = arena.index(n).unwrap_or(0);
            used[i] = true;
            if self.layout == LogLayout::Simple {
                r.read(n + SIMPLE_CELL, &mut buf);
                if Rec::decode(&buf).is_none() {
                    return Err(RewindError::Corrupt(format!(
                        "log record at {:#x} has no valid type",
                        n + SIMPLE_CELL
                    )));
                }
                st.live[i] = 1;
                st.total_live += 1;
                continue;
            }
            let is_tail = k + 1 == nodes.len();
            let limit = match self.layout {
                LogLayout::Batch => (r.load_u64(n + PIDX) as usize).min(self.bucket),
                _ => self.bucket,
            };
            let mut last_used = 0;
            for s in 0..limit {
                let v = r.load_u64(self.slot(n, s));
                if v == SLOT_EMPTY {
                    continue;
                }
                last_used = s + 1;
                if v == SLOT_GAP {
                    continue;
                }
                let p = Pos { node: n, slot: s };
                if v as usize != self.cell(p) {
                    return Err(RewindError::Corrupt(format!(
                        "log slot at {:#x} holds {v:#x}, neither empty, a gap nor its cell",
                        self.slot(n, s)
                    )));
                }
                r.read(self.cell(p), &mut buf);
                if Rec::decode(&buf).is_none() {
                    return Err(RewindError::Corrupt(format!(
                        "log record at {:#x} has no valid type",
                        self.cell(p)
                    )));
                }
                st.live[i] += 1;
                st.total_live += 1;
            }
            if is_tail {
                st.tail = n;
                st.next = match self.layout {
                    LogLayout::Batch => limit,
                    _ => last_used,
                };
                st.persisted = st.next;
            }
        }
        st.free = (0..arena.count)
            .rev()
            .filter(|&i| !used[i])
            .map(|i| arena.node(i))
            .collect();
        Ok(())
    }

    /// Empty the log (§4.5: "create a new log, and de-allocate the old log"): persist a fresh
    /// header in the other slot, then switch the root word to it atomically.
    pub fn reset(&self) {
        let r = &self.r;
        let mut st = self.lock();
        let cur = st.list.hdr;
        let other = if cur == self.desc + 64 {
            self.desc + 64 + ADLL_HDR
        } else {
            self.desc + 64
        };
        Adll { hdr: other }.format(r);
        r.store_u64(self.desc, other as u64);
        r.persist(self.desc, 8);
        self.reset_state(&mut st, other);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
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
        for layout in [LogLayout::Simple, LogLayout::Optimized, LogLayout::Batch] {
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
