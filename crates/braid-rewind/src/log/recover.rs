//! Reading a log back and recovering it (REWIND §4.5, first step): the scan of live records
//! in order, the repair of a pending ADLL operation and the rebuilding of the volatile state
//! from the slots, and the log's reset to a fresh empty list after recovery.

use super::{
    ADLL_HDR, Adll, CellState, LogLayout, LogStore, PIDX, Pos, SIMPLE_CELL, SLOT_EMPTY, SLOT_GAP,
    State,
};
use crate::record::{REC_SIZE, Rec};
use crate::{Damage, RewindError};

impl LogStore {
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
            } else if self.layout == LogLayout::Sealed {
                let limit = if n == st.tail { st.next } else { self.bucket };
                let g = self.generation(n);
                for i in 0..limit {
                    let p = Pos { node: n, slot: i };
                    let (w, bit) = self.forgotten_bit(p);
                    if st.forgotten[w] & bit != 0 {
                        continue;
                    }
                    match self.read_sealed(p, g) {
                        CellState::Live(rec) => out.push((p, rec)),
                        CellState::Gap => {}
                        CellState::Invalid => break,
                    }
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

    /// The records of transaction `txid`, newest first, found by reading the whole log
    /// backwards from its tail (REWIND §4.4: "In one-layer logging, rollback is a trivial
    /// backwards scan"; §4.6: "To clear the log when forcing, we scan the log backwards"). The
    /// one-layer log keeps no per-transaction state, so every record in the log is read: the
    /// cost grows with the records of other transactions (§5.1's skip records).
    pub fn scan_tx_rev(&self, txid: u64) -> Vec<(Pos, Rec)> {
        let st = self.lock();
        self.scan_tx_rev_locked(&st, txid)
    }

    pub(super) fn scan_tx_rev_locked(&self, st: &State, txid: u64) -> Vec<(Pos, Rec)> {
        let r = &self.r;
        let mut out = Vec::new();
        let mut buf = [0u8; REC_SIZE];
        // The record's first word holds its type and transaction id: only a record of
        // `txid` is read whole.
        let mine = |cell: usize| r.load_u64(cell) >> 8 == txid;
        let mut n = st.list.tail(r);
        while n != 0 {
            if self.layout == LogLayout::Simple {
                let p = Pos { node: n, slot: 0 };
                if mine(self.cell(p)) {
                    r.read(self.cell(p), &mut buf);
                    if let Some(rec) = Rec::decode(&buf) {
                        out.push((p, rec));
                    }
                }
            } else {
                let limit = if n == st.tail { st.next } else { self.bucket };
                let g = (self.layout == LogLayout::Sealed).then(|| self.generation(n));
                for i in (0..limit).rev() {
                    let p = Pos { node: n, slot: i };
                    if let Some(g) = g {
                        let (w, bit) = self.forgotten_bit(p);
                        if st.forgotten[w] & bit != 0 || !mine(self.cell(p)) {
                            continue;
                        }
                        if let CellState::Live(rec) = self.read_sealed(p, g) {
                            out.push((p, rec));
                        }
                        continue;
                    }
                    let v = r.load_u64(self.slot(n, i));
                    if v == SLOT_EMPTY || v == SLOT_GAP || !mine(self.cell(p)) {
                        continue;
                    }
                    r.read(self.cell(p), &mut buf);
                    if let Some(rec) = Rec::decode(&buf) {
                        out.push((p, rec));
                    }
                }
            }
            n = r.load_u64(n + crate::adll::PREV) as usize;
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
            return Err(Damage::LogDescriptor {
                desc: self.desc as u64,
                header: hdr as u64,
            }
            .into());
        }
        st.list = Adll { hdr };
        let arena = self.arena;
        st.list
            .recover(r, |n| arena.index(n).is_some())
            .map_err(|damage| Damage::LogList {
                log: self.desc as u64,
                damage,
            })?;
        let nodes = st
            .list
            .nodes(r, |n| arena.index(n).is_some(), arena.count)
            .map_err(|damage| Damage::LogList {
                log: self.desc as u64,
                damage,
            })?;
        let mut used = vec![false; arena.count];
        st.live.iter_mut().for_each(|c| *c = 0);
        st.forgotten.iter_mut().for_each(|w| *w = 0);
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
                    return Err(Damage::LogRecord {
                        at: (n + SIMPLE_CELL) as u64,
                    }
                    .into());
                }
                st.live[i] = 1;
                st.total_live += 1;
                continue;
            }
            let is_tail = k + 1 == nodes.len();
            if self.layout == LogLayout::Sealed {
                // Valid cells up to the first torn, stale or unwritten one. A linked bucket
                // other than the tail was synced whole before the next one was linked.
                let g = self.generation(n);
                let mut valid = 0;
                while valid < self.bucket {
                    match self.read_sealed(
                        Pos {
                            node: n,
                            slot: valid,
                        },
                        g,
                    ) {
                        CellState::Live(_) => {
                            st.live[i] += 1;
                            st.total_live += 1;
                        }
                        CellState::Gap => {}
                        CellState::Invalid => break,
                    }
                    valid += 1;
                }
                if is_tail {
                    // Cells past the first invalid one may hold whole records of the group
                    // that was being synced at the crash; recovery appends behind `valid`, so
                    // their seals are wiped first, or a record appended next to one would
                    // bring it back into the log.
                    if valid < self.bucket {
                        for s in valid..self.bucket {
                            r.store_u64(self.cell(Pos { node: n, slot: s }) + REC_SIZE, 0);
                        }
                        let from = self.cell(Pos {
                            node: n,
                            slot: valid,
                        });
                        r.flush(from, (self.bucket - valid) * super::SEALED_CELL);
                        r.fence();
                    }
                    st.tail = n;
                    st.next = valid;
                    st.persisted = valid;
                    st.generation = g;
                }
                continue;
            }
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
                    return Err(Damage::LogSlot {
                        at: self.slot(n, s) as u64,
                        value: v,
                    }
                    .into());
                }
                r.read(self.cell(p), &mut buf);
                if Rec::decode(&buf).is_none() {
                    return Err(Damage::LogRecord {
                        at: self.cell(p) as u64,
                    }
                    .into());
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
