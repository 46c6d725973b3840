//! Appending records to a log and clearing them: Alg. 1's ADLL append for Simple (REWIND
//! §3.2), slot publication in buckets for Optimized and Batch (§3.3), the Batch group sync, and
//! clearing (an ADLL removal, or gap slots and the unlinking of an empty bucket).

use super::{
    GAP_SALT, GEN, LogLayout, LogStore, PIDX, Pos, SEALED_CELL, SIMPLE_CELL, SLOT_GAP, State, seal,
    seal_words,
};
use crate::RewindError;
use crate::record::{REC_SIZE, REC_WORDS, Rec};

impl LogStore {
    /// Append a record. Simple and Optimized: durable on return. Batch: stored only; durable
    /// after the next [`LogStore::sync`].
    ///
    /// `hold = Some(h)`: a new record; fails with `LogFull` unless the log has room for it,
    /// for every record reserved so far, and for `h` more, which are then reserved for the
    /// caller. `None`: the record uses one of the caller's reserved records (CLR, ROLLBACK,
    /// END), so a transaction that started can always roll back and finish.
    pub fn append(&self, rec: &Rec, hold: Option<usize>) -> Result<Pos, RewindError> {
        let mut st = self.lock();
        self.append_locked(&mut st, rec, hold)
    }

    /// Append the records `recs`, each with the reservation it makes (as `hold = Some(h)` of
    /// [`LogStore::append`]), under one lock: all of them, or none (`LogFull`) if the log has
    /// no room for them all. Each position is handed to `at` in order.
    pub fn append_many(
        &self,
        recs: &[(Rec, usize)],
        mut at: impl FnMut(Pos),
    ) -> Result<(), RewindError> {
        let mut st = self.lock();
        self.append_all(&mut st, recs, &mut at)
    }

    fn append_all(
        &self,
        st: &mut State,
        recs: &[(Rec, usize)],
        at: &mut impl FnMut(Pos),
    ) -> Result<(), RewindError> {
        if recs.is_empty() {
            return Ok(());
        }
        let held = recs.iter().map(|&(_, h)| h).sum::<usize>();
        if self.available(st) < recs.len() + held + st.reserved {
            return Err(RewindError::LogFull {
                capacity: self.capacity(),
            });
        }
        if self.fits_tail(st, recs.len()) {
            // All in the tail bucket: the cells one after another, the counts once (what
            // `append_locked` does per record, room checked above for all of them).
            for (rec, _) in recs {
                at(self.push_sealed(st, rec));
            }
            st.reserved += held;
            self.count_appended(st, recs.len());
            return Ok(());
        }
        for (rec, h) in recs {
            at(self.append_locked(st, rec, Some(*h))?);
        }
        Ok(())
    }

    /// Sealed: whether `n` more records fit the tail bucket (then [`LogStore::push_sealed`]
    /// appends them without a new bucket).
    #[inline]
    fn fits_tail(&self, st: &State, n: usize) -> bool {
        self.layout == LogLayout::Sealed && st.tail != 0 && st.next + n <= self.bucket
    }

    /// Sealed, with room in the tail bucket: write `rec` in its next cell; the caller counts
    /// it ([`LogStore::count_appended`]).
    #[inline]
    fn push_sealed(&self, st: &mut State, rec: &Rec) -> Pos {
        let p = Pos {
            node: st.tail,
            slot: st.next,
        };
        self.write_sealed(self.cell(p), rec, st.generation);
        st.next += 1;
        p
    }

    /// Count `k` records just appended to the tail bucket as live.
    #[inline]
    fn count_appended(&self, st: &mut State, k: usize) {
        let tail = st.tail;
        if let Some(i) = st.index_of(&self.arena, tail) {
            st.live[i] += k as u32;
        }
        st.total_live += k;
    }

    /// Take the log room one record needs, as `hold` of [`LogStore::append`] says.
    #[inline]
    fn take_room(&self, st: &mut State, hold: Option<usize>) -> Result<(), RewindError> {
        match hold {
            Some(h) => {
                if self.available(st) < 1 + st.reserved + h {
                    return Err(RewindError::LogFull {
                        capacity: self.capacity(),
                    });
                }
                st.reserved += h;
            }
            None => st.reserved = st.reserved.saturating_sub(1),
        }
        Ok(())
    }

    /// Sealed: store `rec` and its seal in the cell at `cell` of a bucket of generation
    /// `generation`, as words, little endian whatever the processor (the layout's byte order).
    #[inline(always)]
    fn write_sealed(&self, cell: usize, rec: &Rec, generation: u64) {
        let words = rec.words();
        let mut b = [0u64; REC_WORDS + 1];
        for (b, w) in b.iter_mut().zip(words) {
            *b = w.to_le();
        }
        b[REC_WORDS] = seal_words(&words, cell, generation).to_le();
        self.r.store_words(cell, &b);
    }

    /// A transaction's END under one lock: append its records `pre` not yet in the log (as
    /// [`LogStore::append_many`], positions to `at`; none appended if they do not fit), then
    /// END (as [`LogStore::append`]), give back `release` reserved records, and sync (Batch,
    /// Sealed). Returns END's position and the records now in the log.
    pub fn append_end(
        &self,
        pre: &[(Rec, usize)],
        mut at: impl FnMut(Pos),
        rec: &Rec,
        hold: Option<usize>,
        release: usize,
    ) -> Result<(Pos, usize), RewindError> {
        let mut st = self.lock();
        self.append_all(&mut st, pre, &mut at)?;
        let at = if self.fits_tail(&st, 1) {
            self.take_room(&mut st, hold)?;
            let p = self.push_sealed(&mut st, rec);
            self.count_appended(&mut st, 1);
            p
        } else {
            self.append_locked(&mut st, rec, hold)?
        };
        st.reserved = st.reserved.saturating_sub(release);
        if self.is_grouped() {
            self.sync_locked(&mut st);
        }
        Ok((at, st.total_live))
    }

    fn append_locked(
        &self,
        st: &mut State,
        rec: &Rec,
        hold: Option<usize>,
    ) -> Result<Pos, RewindError> {
        self.take_room(st, hold)?;
        let r = &self.r;
        // Stored as words, little endian whatever the processor (the layout's byte order).
        let le = rec.words().map(u64::to_le);
        if self.layout == LogLayout::Simple {
            let n = st.free.pop().ok_or(RewindError::LogFull {
                capacity: self.capacity(),
            })?;
            r.store_words(n + SIMPLE_CELL, &le);
            r.flush(n + SIMPLE_CELL, REC_SIZE);
            st.list.append(r, n);
            st.live[self.arena.index(n).unwrap_or(0)] = 1;
            st.total_live += 1;
            return Ok(Pos { node: n, slot: 0 });
        }
        if st.tail == 0 || st.next == self.bucket {
            self.new_bucket(st)?;
        }
        let p = Pos {
            node: st.tail,
            slot: st.next,
        };
        let cell = self.cell(p);
        if self.layout == LogLayout::Sealed {
            self.write_sealed(cell, rec, st.generation);
        } else {
            r.store_words(cell, &le);
        }
        if self.layout == LogLayout::Optimized {
            r.persist(cell, REC_SIZE);
            r.store_u64(self.slot(p.node, p.slot), cell as u64);
            r.persist(self.slot(p.node, p.slot), 8);
        } else if self.layout == LogLayout::Batch {
            r.store_u64(self.slot(p.node, p.slot), cell as u64);
        }
        st.next += 1;
        if let Some(i) = st.index_of(&self.arena, p.node) {
            st.live[i] += 1;
        }
        st.total_live += 1;
        Ok(p)
    }

    /// Append `recs` as one group, durable on return: Optimized writes every cell, persists
    /// them with one fence, then publishes every slot with one more (a record is in the log
    /// only once its cell is durable, as for [`LogStore::append`]); Batch and Sealed append
    /// and sync; Simple appends each record (Alg. 1). The records need no reservation (the
    /// bottom log of a two-layer log). Returns their positions.
    pub fn append_group(&self, recs: &[Rec]) -> Result<Vec<Pos>, RewindError> {
        let mut st = self.lock();
        if self.layout != LogLayout::Optimized {
            let mut at = Vec::with_capacity(recs.len());
            for rec in recs {
                at.push(self.append_locked(&mut st, rec, Some(0))?);
            }
            if self.is_grouped() {
                self.sync_locked(&mut st);
            }
            return Ok(at);
        }
        if self.available(&st) < recs.len() + st.reserved {
            return Err(RewindError::LogFull {
                capacity: self.capacity(),
            });
        }
        let r = &self.r;
        let mut at = Vec::with_capacity(recs.len());
        for rec in recs {
            if st.tail == 0 || st.next == self.bucket {
                self.new_bucket(&mut st)?;
            }
            let p = Pos {
                node: st.tail,
                slot: st.next,
            };
            r.store_words(self.cell(p), &rec.words().map(u64::to_le));
            st.next += 1;
            if let Some(i) = self.arena.index(p.node) {
                st.live[i] += 1;
            }
            st.total_live += 1;
            at.push(p);
        }
        // The cells of one bucket are consecutive: one flush per run of lines.
        let mut cells: Vec<usize> = Vec::with_capacity(2 * at.len());
        for p in &at {
            cells.push(self.cell(*p));
            cells.push(self.cell(*p) + REC_SIZE - 1);
        }
        flush_lines(r, cells.into_iter());
        r.fence();
        for p in &at {
            r.store_u64(self.slot(p.node, p.slot), self.cell(*p) as u64);
        }
        flush_lines(r, at.iter().map(|p| self.slot(p.node, p.slot)));
        r.fence();
        Ok(at)
    }

    /// Link a fresh bucket at the tail (syncing the old one first under Batch).
    fn new_bucket(&self, st: &mut State) -> Result<(), RewindError> {
        let r = &self.r;
        if self.is_grouped() {
            self.sync_locked(st);
        }
        let n = st.free.pop().ok_or(RewindError::LogFull {
            capacity: self.capacity(),
        })?;
        if self.layout == LogLayout::Sealed {
            // A new generation makes every cell left from an earlier use of the bucket
            // invalid; the list append below fences the header before the bucket is linked.
            let g = r.load_u64(n + GEN).wrapping_add(1).max(1);
            r.store_u64(n + GEN, g);
            r.flush(n + GEN, 8);
            st.generation = g;
            let (w, _) = self.forgotten_bit(Pos { node: n, slot: 0 });
            let words = self.bucket.div_ceil(64);
            st.forgotten[w..w + words].iter_mut().for_each(|x| *x = 0);
        } else {
            r.fill(n + self.slots_off, self.bucket * 8, 0);
            r.store_u64(n + PIDX, 0);
            r.flush(n, self.cells_off);
        }
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
    ///
    /// Sealed unlinks only from the head: records a checkpoint forgot stay valid in memory, so
    /// a bucket holding a transaction's END must not leave the list before the buckets
    /// holding its earlier records (recovery would take the transaction for a running one).
    fn maybe_unlink(&self, st: &mut State, n: usize) {
        if self.layout == LogLayout::Sealed {
            loop {
                let h = st.list.head(&self.r);
                match self.arena.index(h) {
                    Some(i) if h != st.tail && st.live[i] == 0 => {
                        st.list.remove(&self.r, h);
                        st.free.push(h);
                    }
                    _ => return,
                }
            }
        }
        let Some(i) = self.arena.index(n) else {
            return;
        };
        if st.live[i] == 0 && n != st.tail {
            st.list.remove(&self.r, n);
            st.free.push(n);
        }
    }

    /// Batch and Sealed: make every record appended so far durable (no-op for other layouts).
    pub fn sync(&self) {
        if self.is_grouped() {
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
        if self.layout == LogLayout::Sealed {
            // The seals make the cells self-validating: one fence, no index.
            r.flush(n + self.cells_off + a * SEALED_CELL, (z - a) * SEALED_CELL);
            r.fence();
            st.persisted = z;
            return;
        }
        r.flush(self.slot(n, a), (z - a) * 8);
        r.flush(n + self.cells_off + a * REC_SIZE, (z - a) * REC_SIZE);
        r.fence();
        r.store_u64(n + PIDX, z as u64);
        r.persist(n + PIDX, 8);
        st.persisted = z;
    }

    /// Sealed: remove records from the log's volatile state only (they stay valid in memory
    /// until their bucket is unlinked and reused). For a checkpoint that persisted a cut
    /// covering their transactions: recovery ignores such records (see [`crate::pool`]).
    /// Returns false (doing nothing) for the other layouts.
    pub fn forget(&self, recs: impl IntoIterator<Item = Pos>) -> bool {
        if self.layout != LogLayout::Sealed {
            return false;
        }
        let mut st = self.lock();
        let mut touched = Vec::new();
        // The bits of consecutive records in one word of one bucket's bitmap are gathered
        // into a mask and applied together (a checkpoint's records come in log order, so a
        // mask takes up to 64 of them): per record a compare and an or.
        let mut run: Option<(usize, usize, u64)> = None;
        for p in recs {
            let (node, word, bit) = (p.node, p.slot / 64, 1u64 << (p.slot % 64));
            match &mut run {
                Some((n, w, mask)) if *n == node && *w == word => *mask |= bit,
                _ => {
                    if let Some((n, w, mask)) = run.replace((node, word, bit)) {
                        self.forget_mask(&mut st, &mut touched, n, w, mask);
                    }
                }
            }
        }
        if let Some((n, w, mask)) = run {
            self.forget_mask(&mut st, &mut touched, n, w, mask);
        }
        touched.sort_unstable();
        touched.dedup();
        for n in touched {
            self.maybe_unlink(&mut st, n);
        }
        true
    }

    /// [`LogStore::forget`] the cells of bucket `node` whose bits are set in `mask`, word
    /// `word` of the bucket's forgotten bitmap (cells `64 * word` on); those forgotten already
    /// are skipped. A bucket with live records left is noted in `touched`.
    fn forget_mask(
        &self,
        st: &mut State,
        touched: &mut Vec<usize>,
        node: usize,
        word: usize,
        mask: u64,
    ) {
        let i = st.index_of(&self.arena, node);
        let (w, _) = self.forgotten_bit_at(i.unwrap_or(0), 64 * word);
        let new = mask & !st.forgotten[w];
        if new == 0 {
            return;
        }
        st.forgotten[w] |= new;
        let n = new.count_ones();
        if let Some(i) = i {
            st.live[i] -= n;
        }
        st.total_live -= n as usize;
        if touched.last() != Some(&node) {
            touched.push(node);
        }
    }

    /// Remove records: all of `recs`, then (after a fence) `last`, which is the transaction's
    /// END record so that it is removed last (REWIND §4.6).
    pub fn clear(&self, recs: &[Pos], last: Option<Pos>) {
        let mut st = self.lock();
        self.clear_locked(&mut st, recs, last);
    }

    /// Force commit, one layer, the paper's way (§4.6: "To clear the log when forcing, we
    /// scan the log backwards and remove the records of committed transactions"): under one
    /// lock of the log, read it backwards for the records of `txid` (see
    /// [`LogStore::scan_tx_rev`]) and remove them, its END record `end` last. Returns the
    /// records removed.
    pub fn clear_tx_scan(&self, txid: u64, end: Pos) -> usize {
        let mut st = self.lock();
        let found = self.scan_tx_rev_locked(&st, txid);
        let recs: Vec<Pos> = found
            .iter()
            .map(|&(p, _)| p)
            .filter(|&p| p != end)
            .collect();
        let has_end = found.len() > recs.len();
        self.clear_locked(&mut st, &recs, has_end.then_some(end));
        found.len()
    }

    /// A checkpoint's removal of whole finished transactions (REWIND §4.6): their records
    /// `recs`, then their END records `ends`, so that after a crash at any point a
    /// transaction whose END is gone has no record left. Optimized and Batch remove a bucket
    /// all of whose records are removed by unlinking it (§3.3: "removing a bucket when it
    /// becomes empty"), without writing gaps into it; the other records become gaps. In order:
    /// the other records' gaps of buckets that stay (one fence), then the emptied buckets
    /// unlinked from the oldest (a transaction's END is never in an older bucket than its
    /// other records), then the END records' gaps (one fence). Simple removes each record's
    /// node (Alg. 1's removal), the records first.
    pub fn clear_checkpoint(&self, recs: &[Pos], ends: &[Pos]) {
        let mut st = self.lock();
        if !matches!(self.layout, LogLayout::Optimized | LogLayout::Batch) {
            self.clear_locked(&mut st, recs, None);
            self.clear_locked(&mut st, ends, None);
            return;
        }
        let r = &self.r;
        // Records removed per bucket, to find the buckets emptied whole.
        let mut covered: Vec<(usize, u32)> = Vec::new();
        for p in recs.iter().chain(ends) {
            match covered.iter_mut().find(|(n, _)| *n == p.node) {
                Some(c) => c.1 += 1,
                None => covered.push((p.node, 1)),
            }
        }
        let whole = |st: &State, n: usize| {
            n != st.tail
                && self.arena.index(n).is_some_and(|i| {
                    covered
                        .iter()
                        .any(|&(m, c)| m == n && c == st.live[i] && c > 0)
                })
        };
        let whole_nodes: Vec<usize> = {
            // In list order, oldest first.
            let mut v = Vec::new();
            let mut n = st.list.head(r);
            while n != 0 {
                if whole(&st, n) {
                    v.push(n);
                }
                n = r.load_u64(n) as usize;
            }
            v
        };
        let stays = |p: &&Pos| !whole_nodes.contains(&p.node);
        let rest: Vec<Pos> = recs.iter().filter(stays).copied().collect();
        self.clear_locked(&mut st, &rest, None);
        for n in whole_nodes {
            let Some(i) = self.arena.index(n) else {
                continue;
            };
            st.list.remove(r, n);
            st.free.push(n);
            st.total_live -= st.live[i] as usize;
            st.live[i] = 0;
        }
        let rest: Vec<Pos> = ends
            .iter()
            .filter(|p| self.arena.index(p.node).is_some_and(|i| st.live[i] > 0))
            .copied()
            .collect();
        self.clear_locked(&mut st, &rest, None);
    }

    fn clear_locked(&self, st: &mut State, recs: &[Pos], last: Option<Pos>) {
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
        let mut words = Vec::new();
        for group in [recs, last.as_slice()] {
            if group.is_empty() {
                continue;
            }
            words.clear();
            for p in group {
                if self.layout == LogLayout::Sealed {
                    // Recomputed rather than flipped, so clearing twice stays a gap.
                    let cell = self.cell(*p);
                    let mut rec = [0u8; REC_SIZE];
                    r.read(cell, &mut rec);
                    let g = self.generation(p.node);
                    r.store_u64(cell + REC_SIZE, seal(&rec, cell, g) ^ GAP_SALT);
                    words.push(cell + REC_SIZE);
                } else {
                    let s = self.slot(p.node, p.slot);
                    r.store_u64(s, SLOT_GAP);
                    words.push(s);
                }
                if let Some(i) = self.arena.index(p.node) {
                    st.live[i] -= 1;
                }
                st.total_live -= 1;
                if touched.last() != Some(&p.node) {
                    touched.push(p.node);
                }
            }
            // The gap words of one line (eight slots, or a few sealed cells) are flushed once.
            flush_lines(r, words.iter().copied());
            r.fence();
        }
        touched.sort_unstable();
        touched.dedup();
        for n in touched {
            self.maybe_unlink(st, n);
        }
    }
}

/// Flush the cache lines of the bytes at `offs` (any order), each line once, in one call.
pub(crate) fn flush_lines(r: &braid_pmem::Region, offs: impl Iterator<Item = usize>) {
    let mut lines: Vec<usize> = offs.map(|o| o & !63).collect();
    lines.sort_unstable();
    lines.dedup();
    r.flush_lines(&lines);
}
