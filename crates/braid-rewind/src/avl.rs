//! Two-layer logging (REWIND §3.4): the Atomic AVL Tree (AAVLT). User log records are nodes of
//! an AVL tree indexed by record identifier; every change to the tree's internal pointers is
//! itself logged, as an UPDATE record, in an Optimized ADLL log (the bottom layer) before it is
//! made, so an interrupted tree operation is undone at recovery.
//!
//! Choices where the paper is open:
//! * The record identifier (the AVL key) is `txid << 24 | n` where `n` counts the
//!   transaction's records, so one transaction's records form a contiguous key range and
//!   rolling one back visits only its own records: each step is a "largest key below" search
//!   (O(log n)), the selective access the two-layer configuration is for. The transaction
//!   table (status of each transaction, last record) is the set of its records in the tree:
//!   its END and ROLLBACK records say whether it finished and how.
//! * A tree operation is a small force-policy transaction on the bottom log, executed by one
//!   thread at a time (the paper: "every update to the AAVLT is only executed by a single
//!   thread and forwarded directly to NVM"): its pointer/height stores are planned first, then
//!   their records are logged as one group (cells persisted, then slots published: two fences
//!   whatever their number), then the stores are made and flushed, and at the end one fence,
//!   an END record, and the clearing of the operation's records (END last). Recovery of the bottom
//!   layer undoes the records of an operation that has no END (newest first), or only clears
//!   them if it has one, then resets the bottom log. A freshly allocated tree node is written
//!   unlogged (it is unreachable until the logged store that links it, whose record's fence
//!   also orders the node's contents); removed nodes go back to the free list only after the
//!   operation finished (§3.4 "delay the de-allocation of removed nodes").
//! * Tree nodes come from a fixed arena; the nodes reachable from the root are in use, the
//!   rest free, so the arena needs no persistent allocation state.
//!
//! Node layout (64 bytes, one cache line): left, right, height, key, then the 32-byte record.

use std::sync::{Mutex, MutexGuard};

use braid_pmem::Region;

use crate::log::{Arena, LogStore};
use crate::record::{Kind, REC_SIZE, Rec};
use crate::{CheckError, Damage, RewindError};

const LEFT: usize = 0;
const RIGHT: usize = 8;
const HEIGHT: usize = 16;
const KEY: usize = 24;
const REC: usize = 32;
pub(crate) const AVL_NODE: usize = 64;
/// Bits of a key holding the record number within its transaction.
pub(crate) const SEQ_BITS: u32 = 24;

pub(crate) fn key(txid: u64, n: u64) -> u64 {
    (txid << SEQ_BITS) | (n & ((1 << SEQ_BITS) - 1))
}

struct State {
    free: Vec<usize>,
    reserved: usize,
}

/// The two-layer log of one log stream.
pub(crate) struct TwoLayer {
    r: Region,
    /// Word holding the tree root.
    root: usize,
    arena: Arena,
    /// Bottom layer: logs the tree's own updates.
    bottom: LogStore,
    st: Mutex<State>,
}

/// One logged tree operation: its stores are planned first (read back through `plan`), then
/// logged as one group, then made (see [`Op::finish`]).
struct Op<'a> {
    r: &'a Region,
    log: &'a LogStore,
    /// The words the operation writes: (address, value before the operation, final value),
    /// one entry per word.
    plan: Vec<(usize, u64, u64)>,
}

impl Op<'_> {
    fn ld(&self, a: usize) -> usize {
        match self.plan.iter().find(|(x, ..)| *x == a) {
            Some(&(_, _, v)) => v as usize,
            None => self.r.load_u64(a) as usize,
        }
    }

    /// Logged store of a tree word (planned; made by [`Op::finish`]).
    fn w(&mut self, addr: usize, v: usize) -> Result<(), RewindError> {
        match self.plan.iter_mut().find(|(x, ..)| *x == addr) {
            Some(e) => e.2 = v as u64,
            None => {
                let old = self.r.load_u64(addr);
                if old != v as u64 {
                    self.plan.push((addr, old, v as u64));
                }
            }
        }
        Ok(())
    }

    fn h(&self, n: usize) -> usize {
        if n == 0 { 0 } else { self.ld(n + HEIGHT) }
    }

    fn fix_height(&mut self, n: usize) -> Result<(), RewindError> {
        let h = 1 + self.h(self.ld(n + LEFT)).max(self.h(self.ld(n + RIGHT)));
        self.w(n + HEIGHT, h)
    }

    fn rotate_right(&mut self, slot: usize) -> Result<(), RewindError> {
        let n = self.ld(slot);
        let l = self.ld(n + LEFT);
        self.w(n + LEFT, self.ld(l + RIGHT))?;
        self.w(l + RIGHT, n)?;
        self.fix_height(n)?;
        self.fix_height(l)?;
        self.w(slot, l)
    }

    fn rotate_left(&mut self, slot: usize) -> Result<(), RewindError> {
        let n = self.ld(slot);
        let x = self.ld(n + RIGHT);
        self.w(n + RIGHT, self.ld(x + LEFT))?;
        self.w(x + LEFT, n)?;
        self.fix_height(n)?;
        self.fix_height(x)?;
        self.w(slot, x)
    }

    fn rebalance(&mut self, slot: usize) -> Result<(), RewindError> {
        let n = self.ld(slot);
        if n == 0 {
            return Ok(());
        }
        self.fix_height(n)?;
        let l = self.ld(n + LEFT);
        let x = self.ld(n + RIGHT);
        let bf = self.h(l) as i64 - self.h(x) as i64;
        if bf > 1 {
            if self.h(self.ld(l + LEFT)) < self.h(self.ld(l + RIGHT)) {
                self.rotate_left(n + LEFT)?;
            }
            self.rotate_right(slot)?;
        } else if bf < -1 {
            if self.h(self.ld(x + RIGHT)) < self.h(self.ld(x + LEFT)) {
                self.rotate_right(n + RIGHT)?;
            }
            self.rotate_left(slot)?;
        }
        Ok(())
    }

    fn insert(&mut self, slot: usize, k: u64, nn: usize) -> Result<(), RewindError> {
        let n = self.ld(slot);
        if n == 0 {
            return self.w(slot, nn);
        }
        if k < self.r.load_u64(n + KEY) {
            self.insert(n + LEFT, k, nn)?;
        } else {
            self.insert(n + RIGHT, k, nn)?;
        }
        self.rebalance(slot)
    }

    fn remove_min(&mut self, slot: usize) -> Result<usize, RewindError> {
        let n = self.ld(slot);
        if self.ld(n + LEFT) == 0 {
            self.w(slot, self.ld(n + RIGHT))?;
            return Ok(n);
        }
        let m = self.remove_min(n + LEFT)?;
        self.rebalance(slot)?;
        Ok(m)
    }

    fn remove(&mut self, slot: usize, k: u64) -> Result<Option<usize>, RewindError> {
        let n = self.ld(slot);
        if n == 0 {
            return Ok(None);
        }
        let nk = self.r.load_u64(n + KEY);
        let removed = if k < nk {
            self.remove(n + LEFT, k)?
        } else if k > nk {
            self.remove(n + RIGHT, k)?
        } else {
            let (l, x) = (self.ld(n + LEFT), self.ld(n + RIGHT));
            if l == 0 {
                self.w(slot, x)?;
                return Ok(Some(n));
            }
            if x == 0 {
                self.w(slot, l)?;
                return Ok(Some(n));
            }
            let s = self.remove_min(n + RIGHT)?;
            self.w(s + LEFT, self.ld(n + LEFT))?;
            self.w(s + RIGHT, self.ld(n + RIGHT))?;
            self.w(slot, s)?;
            Some(n)
        };
        self.rebalance(slot)?;
        Ok(removed)
    }

    /// Log the operation's records as one group (every record durable before any store, so
    /// a crash leaves stores that recovery can undo), make its stores, fence, log END, and
    /// clear the operation's records (END last). Grouping the records of one operation under
    /// one fence pair is §3.3's batching ("place them in batches above the corresponding user
    /// writes") applied to the tree's own log: a tree operation costs the same few fences
    /// whatever the number of words its rebalancing writes.
    ///
    /// One record per word written, from its value before the operation to its final value:
    /// a crash may leave any subset of the group's records published (their slots are
    /// flushed together), and undoing any subset restores each word's value from before the
    /// operation, whether or not its store was made.
    fn finish(self) -> Result<(), RewindError> {
        let recs: Vec<Rec> = self
            .plan
            .iter()
            .filter(|&&(_, old, new)| old != new)
            .map(|&(a, old, new)| Rec::update(0, a as u64, old, new))
            .collect();
        if recs.is_empty() {
            return Ok(());
        }
        let at = self.log.append_group(&recs)?;
        for &(a, _, v) in &self.plan {
            self.r.store_u64(a, v);
        }
        // A node is one line: the words of one node are flushed once.
        crate::log::flush_lines(self.r, self.plan.iter().map(|&(a, ..)| a));
        self.r.fence();
        let end = self.log.append(&Rec::end(0, 0, false), Some(0))?;
        self.log.clear(&at, Some(end));
        Ok(())
    }
}

impl TwoLayer {
    pub fn new(r: Region, root: usize, arena: Arena, bottom: LogStore) -> TwoLayer {
        TwoLayer {
            r,
            root,
            arena,
            bottom,
            st: Mutex::new(State {
                free: Vec::new(),
                reserved: 0,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Volatile state is advanced only after each persistent step: poisoning is harmless.
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn capacity(&self) -> usize {
        self.arena.count
    }

    pub fn live(&self) -> usize {
        let st = self.lock();
        self.arena.count - st.free.len()
    }

    pub fn format(&self) {
        self.bottom.format();
        self.r.store_u64(self.root, 0);
        self.r.persist(self.root, 8);
        let mut st = self.lock();
        st.free = (0..self.arena.count)
            .rev()
            .map(|i| self.arena.base + i * AVL_NODE)
            .collect();
        st.reserved = 0;
    }

    fn op(&self) -> Op<'_> {
        Op {
            r: &self.r,
            log: &self.bottom,
            plan: Vec::new(),
        }
    }

    /// Insert a record under `k`; `hold` more nodes are reserved for the caller.
    pub fn append(&self, k: u64, rec: &Rec, hold: Option<usize>) -> Result<u64, RewindError> {
        let mut st = self.lock();
        match hold {
            Some(h) => {
                if st.free.len() < 1 + st.reserved + h {
                    return Err(RewindError::LogFull {
                        capacity: self.arena.count,
                    });
                }
                st.reserved += h;
            }
            None => st.reserved = st.reserved.saturating_sub(1),
        }
        let n = st.free.pop().ok_or(RewindError::LogFull {
            capacity: self.arena.count,
        })?;
        let r = &self.r;
        r.store_u64(n + LEFT, 0);
        r.store_u64(n + RIGHT, 0);
        r.store_u64(n + HEIGHT, 1);
        r.store_u64(n + KEY, k);
        r.write(n + REC, &rec.encode());
        r.flush(n, AVL_NODE);
        let mut op = self.op();
        let res = op.insert(self.root, k, n).and_then(|()| op.finish());
        if let Err(e) = res {
            st.free.push(n);
            return Err(e);
        }
        Ok(k)
    }

    pub fn unreserve(&self, n: usize) {
        let mut st = self.lock();
        st.reserved = st.reserved.saturating_sub(n);
    }

    /// Remove the records `keys`, then `last` (END last, §4.6), each in its own tree operation.
    pub fn clear(&self, keys: &[u64], last: Option<u64>) -> Result<(), RewindError> {
        let mut st = self.lock();
        for &k in keys.iter().chain(last.iter()) {
            let mut op = self.op();
            let removed = op.remove(self.root, k)?;
            op.finish()?;
            if let Some(n) = removed {
                st.free.push(n);
            }
        }
        Ok(())
    }

    /// A checkpoint's removal of whole finished transactions: their records `recs`, then
    /// their END records `ends` (END last, §4.6). When these are every record in the tree (no
    /// transaction is running on this log), the tree is emptied at once, by one persisted store
    /// of its root (as §4.5 empties a log after recovery: "De-allocating the entire log is
    /// faster compared to individually removing its records"), instead of one logged tree
    /// operation per record. Returns whether it was.
    pub fn clear_checkpoint(&self, recs: &[u64], ends: &[u64]) -> Result<bool, RewindError> {
        {
            let mut st = self.lock();
            if recs.len() + ends.len() == self.arena.count - st.free.len() && st.reserved == 0 {
                self.r.store_u64(self.root, 0);
                self.r.persist(self.root, 8);
                st.free = (0..self.arena.count)
                    .rev()
                    .map(|i| self.arena.base + i * AVL_NODE)
                    .collect();
                return Ok(true);
            }
        }
        self.clear(recs, None)?;
        self.clear(ends, None)?;
        Ok(false)
    }

    fn rec_at(&self, n: usize) -> Result<Rec, RewindError> {
        let mut b = [0u8; REC_SIZE];
        self.r.read(n + REC, &mut b);
        Rec::decode(&b).ok_or(RewindError::Corrupt {
            damage: Damage::TreeRecord { node: n as u64 },
        })
    }

    /// All records in key order.
    pub fn scan(&self) -> Result<Vec<(u64, Rec)>, RewindError> {
        let _st = self.lock();
        let mut out = Vec::new();
        let mut stack = Vec::new();
        let mut n = self.r.load_u64(self.root) as usize;
        loop {
            while n != 0 {
                stack.push(n);
                n = self.r.load_u64(n + LEFT) as usize;
            }
            let Some(top) = stack.pop() else { break };
            out.push((self.r.load_u64(top + KEY), self.rec_at(top)?));
            n = self.r.load_u64(top + RIGHT) as usize;
        }
        Ok(out)
    }

    /// The record with the largest key below `bound`, if its key is at least `low`.
    pub fn below(&self, low: u64, bound: u64) -> Result<Option<(u64, Rec)>, RewindError> {
        let _st = self.lock();
        let mut best = 0usize;
        let mut n = self.r.load_u64(self.root) as usize;
        while n != 0 {
            if self.r.load_u64(n + KEY) < bound {
                best = n;
                n = self.r.load_u64(n + RIGHT) as usize;
            } else {
                n = self.r.load_u64(n + LEFT) as usize;
            }
        }
        if best == 0 {
            return Ok(None);
        }
        let k = self.r.load_u64(best + KEY);
        if k < low {
            return Ok(None);
        }
        Ok(Some((k, self.rec_at(best)?)))
    }

    /// Recover the bottom log, undo an interrupted tree operation, check the tree and
    /// rebuild the free node list.
    pub fn recover(&self) -> Result<(), RewindError> {
        self.bottom.recover()?;
        let recs = self.bottom.scan();
        // The bottom layer only ever logs tree words: the root word and words of arena nodes.
        let tree_word = |a: u64| {
            let a = a as usize;
            a == self.root
                || (a.is_multiple_of(8)
                    && a.checked_sub(self.arena.base)
                        .is_some_and(|d| d < self.arena.count * AVL_NODE))
        };
        if let Some((_, bad)) = recs
            .iter()
            .find(|(_, r)| r.kind == Kind::Update && !tree_word(r.addr))
        {
            return Err(Damage::TreeLogTarget { addr: bad.addr }.into());
        }
        if !recs.iter().any(|(_, r)| r.kind == Kind::End) {
            for (_, rec) in recs.iter().rev() {
                if rec.kind == Kind::Update {
                    self.r.store_u64(rec.addr as usize, rec.old);
                    self.r.flush(rec.addr as usize, 8);
                }
            }
            self.r.fence();
        }
        self.bottom.reset();
        let mut used = vec![false; self.arena.count];
        // Nodes in pre-order (a parent before its descendants), for the height check below.
        let mut order = Vec::new();
        let mut stack = vec![(self.r.load_u64(self.root) as usize, 0u64, u64::MAX)];
        while let Some((n, lo, hi)) = stack.pop() {
            if n == 0 {
                continue;
            }
            order.push(n);
            let i = (n.checked_sub(self.arena.base))
                .filter(|d| d % AVL_NODE == 0)
                .map(|d| d / AVL_NODE)
                .filter(|&i| i < self.arena.count)
                .ok_or(Damage::TreeNode { node: n as u64 })?;
            if std::mem::replace(&mut used[i], true) {
                return Err(Damage::TreeNodeTwice { node: n as u64 }.into());
            }
            let k = self.r.load_u64(n + KEY);
            if k < lo || k > hi {
                return Err(Damage::TreeKey {
                    node: n as u64,
                    key: k,
                    lo,
                    hi,
                }
                .into());
            }
            self.rec_at(n)?;
            stack.push((self.r.load_u64(n + LEFT) as usize, lo, k.saturating_sub(1)));
            stack.push((self.r.load_u64(n + RIGHT) as usize, k.saturating_add(1), hi));
        }
        // Heights drive the rotations of later operations: they must be right and balanced.
        // Children come after their parent in `order`, so walk it backwards.
        let mut height = vec![0usize; self.arena.count];
        let h_of = |height: &[usize], c: usize| {
            if c == 0 {
                0
            } else {
                height[(c - self.arena.base) / AVL_NODE]
            }
        };
        for &n in order.iter().rev() {
            let hl = h_of(&height, self.r.load_u64(n + LEFT) as usize);
            let hr = h_of(&height, self.r.load_u64(n + RIGHT) as usize);
            let h = 1 + hl.max(hr);
            if self.r.load_u64(n + HEIGHT) != h as u64 || hl.abs_diff(hr) > 1 {
                return Err(Damage::TreeHeight {
                    node: n as u64,
                    height: self.r.load_u64(n + HEIGHT),
                    left: hl as u64,
                    right: hr as u64,
                }
                .into());
            }
            height[(n - self.arena.base) / AVL_NODE] = h;
        }
        let mut st = self.lock();
        st.free = (0..self.arena.count)
            .rev()
            .filter(|&i| !used[i])
            .map(|i| self.arena.base + i * AVL_NODE)
            .collect();
        st.reserved = 0;
        Ok(())
    }

    /// Empty the tree (after recovery): one atomic store of the root; every node is free.
    pub fn reset(&self) {
        self.r.store_u64(self.root, 0);
        self.r.persist(self.root, 8);
        let mut st = self.lock();
        st.free = (0..self.arena.count)
            .rev()
            .map(|i| self.arena.base + i * AVL_NODE)
            .collect();
        st.reserved = 0;
    }

    /// Check the AVL invariants (tests).
    pub fn check(&self) -> Result<usize, CheckError> {
        fn walk(r: &Region, n: usize, lo: u64, hi: u64) -> Result<(usize, usize), CheckError> {
            if n == 0 {
                return Ok((0, 0));
            }
            let k = r.load_u64(n + KEY);
            if k < lo || k > hi {
                return Err(CheckError::AvlOrder { key: k });
            }
            let (hl, cl) = walk(r, r.load_u64(n + LEFT) as usize, lo, k.saturating_sub(1))?;
            let (hr, cr) = walk(r, r.load_u64(n + RIGHT) as usize, k.saturating_add(1), hi)?;
            let h = 1 + hl.max(hr);
            if r.load_u64(n + HEIGHT) as usize != h || hl.abs_diff(hr) > 1 {
                return Err(CheckError::AvlBalance { node: n });
            }
            Ok((h, 1 + cl + cr))
        }
        let _st = self.lock();
        walk(&self.r, self.r.load_u64(self.root) as usize, 0, u64::MAX).map(|(_, c)| c)
    }
}
