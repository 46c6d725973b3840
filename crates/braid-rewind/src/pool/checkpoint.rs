//! Checkpoints (REWIND §4.6, no-force): flush the lines the completed transactions' records
//! name, process their deferred frees, and remove their records, whole transactions in commit
//! order with END last (see the module docs of [`super`] for why a prefix of the commit order),
//! in bulk behind a persisted cut.
//!
//! What a checkpoint removes is known without reading the log: each finished transaction
//! adds its records, the lines it wrote and its deferred frees to its log's [`Finished`]
//! queue while it holds the commit side of the cut lock, so the queues taken under the write
//! side hold exactly the transactions at or below the cut. A scan of the logs builds the
//! same queues where they are not kept: under force (leftovers of failed clears) and after a
//! checkpoint failed half-way (its queues are gone, its records still in the log).

use std::sync::atomic::Ordering;

use super::{H_CUT, Inner, RecRef};
use crate::RewindError;
use crate::record::{Kind, Rec};

/// Finished transactions of one log not yet removed by a checkpoint, flattened.
#[derive(Default)]
pub(crate) struct Finished {
    /// Their records other than END.
    pub recs: Vec<RecRef>,
    /// Their END records.
    pub ends: Vec<RecRef>,
    /// Cache lines their UPDATE records name (repeats allowed).
    pub lines: Vec<usize>,
    /// Blocks freed by the committed ones (DELETE records).
    pub frees: Vec<usize>,
    /// Their highest commit number.
    pub top: u64,
    /// How many.
    pub txs: usize,
}

impl Finished {
    /// Add a finished transaction.
    pub fn push(
        &mut self,
        seq: u64,
        recs: &[RecRef],
        end: RecRef,
        lines: &[usize],
        frees: &[usize],
    ) {
        append(&mut self.recs, recs);
        self.ends.push(end);
        append(&mut self.lines, lines);
        append(&mut self.frees, frees);
        self.top = self.top.max(seq);
        self.txs += 1;
    }

    fn clear(&mut self) {
        self.recs.clear();
        self.ends.clear();
        self.lines.clear();
        self.frees.clear();
        self.top = 0;
        self.txs = 0;
    }
}

/// `v.extend_from_slice(s)` without its call to copy for the short slices of most
/// transactions (none or one record, line or free): a 1-word transaction queues one record and
/// one line, and a copy call for each cost about a fifth of its queueing.
#[inline]
fn append<T: Copy>(v: &mut Vec<T>, s: &[T]) {
    match s {
        [] => {}
        [x] => v.push(*x),
        _ => v.extend_from_slice(s),
    }
}

/// Build the queues of the transactions at or below `cut` by scanning the logs.
fn scan(inner: &Inner, cut: u64, out: &mut [Finished]) -> Result<(), RewindError> {
    for (log, f) in inner.logs.iter().zip(out.iter_mut()) {
        f.clear();
        let mut by_tx: std::collections::HashMap<u64, Vec<(RecRef, Rec)>> =
            std::collections::HashMap::new();
        let mut ends = Vec::new();
        for (at, rec) in log.scan()? {
            if rec.kind == Kind::End {
                if rec.addr <= cut {
                    ends.push((at, rec));
                }
            } else {
                by_tx.entry(rec.txid).or_default().push((at, rec));
            }
        }
        for (at, e) in ends {
            let recs = by_tx.remove(&e.txid).unwrap_or_default();
            let aborted = e.old != 0;
            let refs: Vec<RecRef> = recs.iter().map(|(a, _)| *a).collect();
            let lines: Vec<usize> = recs
                .iter()
                .filter(|(_, r)| matches!(r.kind, Kind::Update | Kind::Clr))
                .map(|(_, r)| r.addr as usize & !63)
                .collect();
            let frees: Vec<usize> = recs
                .iter()
                .filter(|(_, r)| !aborted && r.kind == Kind::Delete)
                .map(|(_, r)| r.addr as usize)
                .collect();
            f.push(e.addr, &refs, at, &lines, &frees);
        }
    }
    Ok(())
}

/// The lines of `lines` without repeats, in no particular order: an open-addressing set kept
/// at most half full, one probe per line (transactions of a checkpoint rewrite the same lines
/// again and again; sorting them to drop the repeats cost more than the rest of the
/// checkpoint). The set is sized for `hint` distinct lines (the previous checkpoint's) and
/// doubles when they are more, not for all of `lines`: 18,000 1-word transactions on 512
/// lines fill a set of 1,024 slots (8 KiB, in the first-level cache) instead of clearing and
/// probing one of 65,536.
/// `lines` yields `count` lines (the queues' lines, not copied into one vector first).
fn distinct(lines: impl IntoIterator<Item = usize>, count: usize, hint: usize) -> Vec<usize> {
    let most = (2 * count).next_power_of_two().max(16);
    let mut bits = (2 * hint)
        .next_power_of_two()
        .clamp(16, most)
        .trailing_zeros();
    let mut set = vec![EMPTY; 1 << bits];
    // Grown as the set is: most lines of a checkpoint may be repeats.
    let mut out = Vec::with_capacity(count.min(hint.max(8)));
    for l in lines {
        if set_insert(&mut set, bits, l) {
            out.push(l);
            if 2 * out.len() > set.len() {
                // Half full: double, and put the distinct lines so far back in.
                bits += 1;
                set.clear();
                set.resize(1 << bits, EMPTY);
                for &x in &out {
                    set_insert(&mut set, bits, x);
                }
            }
        }
    }
    out
}

/// An empty slot of [`distinct`]'s set: never a line (lines are in the region, below its
/// size).
const EMPTY: usize = usize::MAX;

/// Put line `l` in `set` (of `1 << bits` slots, not full); false if it was there.
fn set_insert(set: &mut [usize], bits: u32, l: usize) -> bool {
    let mask = set.len() - 1;
    // Fibonacci hashing of the line number.
    let mut h = ((l as u64 >> 6).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize;
    loop {
        match set[h] {
            EMPTY => {
                set[h] = l;
                return true;
            }
            x if x == l => return false,
            _ => h = (h + 1) & mask,
        }
    }
}

/// See [`Pool::checkpoint`].
pub(crate) fn checkpoint(inner: &Inner) -> Result<usize, RewindError> {
    let mut spare = inner.ckpt.lock().unwrap_or_else(|e| e.into_inner());
    let done: &mut Vec<Finished> = &mut spare;
    let rescan = inner.cfg.policy == super::Policy::Force || inner.rescan.load(Ordering::Relaxed);
    let cut = {
        let _w = inner.cut.write().unwrap_or_else(|e| e.into_inner());
        for (q, f) in inner.finished.iter().zip(done.iter_mut()) {
            let mut q = q.lock().unwrap_or_else(|e| e.into_inner());
            f.clear();
            std::mem::swap(&mut *q, f);
        }
        inner.commit_seq.load(Ordering::SeqCst)
    };
    if rescan {
        scan(inner, cut, done)?;
        inner.rescan.store(false, Ordering::Relaxed);
    }
    let txs: usize = done.iter().map(|f| f.txs).sum();
    if txs == 0 {
        return Ok(0);
    }
    // From here on the queues are consumed: a failure leaves their records for a scan.
    inner.rescan.store(true, Ordering::Relaxed);
    let r = &inner.r;
    let lines = distinct(
        done.iter().flat_map(|f| f.lines.iter().copied()),
        done.iter().map(|f| f.lines.len()).sum(),
        inner.ckpt_lines.load(Ordering::Relaxed),
    );
    inner.ckpt_lines.store(lines.len(), Ordering::Relaxed);
    // The dirty lines only, in one call (a clean line between two dirty ones is not
    // written back).
    r.flush_lines(&lines);
    r.fence();
    for b in done.iter().flat_map(|f| f.frees.iter()) {
        inner.alloc.mark_free(*b);
    }
    // The cut, durable before any record goes (see the module docs of `super`).
    let top = done.iter().map(|f| f.top).max().unwrap_or(0);
    if top > r.load_u64(H_CUT) {
        r.store_u64(H_CUT, top);
        r.flush(H_CUT, 8);
    }
    r.fence();
    // Every removed transaction's other records, then (after a fence) their END records.
    // Sealed forgets them instead (volatile state only): recovery ignores transactions at or
    // below the cut, so nothing needs to reach memory.
    for (log, f) in inner.logs.iter().zip(done.iter_mut()) {
        if inner.cfg.layout == crate::LogLayout::Sealed && inner.cfg.layers == super::Layers::One {
            log.forget(&f.recs, &f.ends)?;
        } else {
            log.clear_checkpoint(&f.recs, &f.ends)?;
        }
    }
    for b in done.iter().flat_map(|f| f.frees.iter()) {
        inner.alloc.release(*b);
    }
    inner.rescan.store(false, Ordering::Relaxed);
    inner.stats.checkpoints.fetch_add(1, Ordering::Relaxed);
    Ok(txs)
}

#[cfg(test)]
mod tests {
    use super::distinct;

    /// Each line once, whatever the repeats and collisions (lines far more than the set's
    /// slots would hold without growing, many equal).
    #[test]
    fn distinct_drops_repeats_only() {
        let mut x = 7u64;
        let lines: Vec<usize> = (0..5000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                64 * (x % 700) as usize
            })
            .collect();
        let mut got = distinct(lines.iter().copied(), lines.len(), 0);
        got.sort_unstable();
        let mut want = lines.clone();
        want.sort_unstable();
        want.dedup();
        assert_eq!(got, want);
        assert!(distinct([], 0, 0).is_empty());
        // More distinct lines than the set starts with: it grows, and keeps each once.
        let many: Vec<usize> = (0..20_000).map(|i| 64 * (i % 9_000)).collect();
        for hint in [0, 100, 9_000, 1 << 20] {
            let mut got = distinct(many.iter().copied(), many.len(), hint);
            got.sort_unstable();
            assert_eq!(got, (0..9_000).map(|i| 64 * i).collect::<Vec<_>>());
        }
        assert_eq!(distinct([64, 64, 0], 3, 0), vec![64, 0]);
    }
}
