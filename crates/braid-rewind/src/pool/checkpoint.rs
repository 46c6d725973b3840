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
        self.recs.extend_from_slice(recs);
        self.ends.push(end);
        self.lines.extend_from_slice(lines);
        self.frees.extend_from_slice(frees);
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

/// Lines apart by at most this many are flushed as one range, the lines between included.
const RUN_GAP_LINES: usize = 32;

/// Flush the sorted, distinct lines `lines` in few calls: one range per run of lines less
/// than [`RUN_GAP_LINES`] apart. Each flush call counts its lines with a locked add, and on
/// CPUs that order CLWB with locked instructions (AMD) that add waits for the write-back of
/// the previous call's lines as a fence would (about 160 ns here, against 3-5 ns for one
/// more CLWB of a clean or uncached line), so many single-line calls cost one fence each.
fn flush_runs(r: &braid_pmem::Region, lines: &[usize]) {
    let Some(&first) = lines.first() else {
        return;
    };
    let (mut start, mut end) = (first, first + 64);
    for &l in &lines[1..] {
        if l > end + 64 * RUN_GAP_LINES {
            r.flush(start, end - start);
            start = l;
        }
        end = l + 64;
    }
    r.flush(start, end - start);
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
    let mut lines: Vec<usize> = Vec::with_capacity(done.iter().map(|f| f.lines.len()).sum());
    for f in done.iter() {
        lines.extend_from_slice(&f.lines);
    }
    lines.sort_unstable();
    lines.dedup();
    flush_runs(r, &lines);
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
            f.recs.extend_from_slice(&f.ends);
            log.forget(&f.recs)?;
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
