//! Recovery (REWIND §4.5): recover each log's structure, then analysis, redo (no-force only)
//! and undo, then process the deferred frees of committed transactions, make everything
//! durable, and clear the logs. A crash at any point of recovery is recovered again by the
//! same procedure.
//!
//! * Log recovery: the pending ADLL operation is finished (Alg. 1), Batch buckets are trusted
//!   up to their persisted index, and a two-layer log's interrupted tree operation is undone.
//! * Analysis scans every log forward and builds the transaction table (a record naming an
//!   address no transaction writes, i.e. outside the heap and the root word, or a DELETE of
//!   a block outside the heap, is refused as damage): a transaction with an
//!   END record finished (committed, or rolled back if END says so); one with a ROLLBACK but
//!   no END was rolling back; one with neither was running.
//! * Redo (no-force): finished transactions above the last checkpoint's cut (see
//!   [`crate::pool`]) are replayed in commit order (their END carries the commit sequence
//!   number), each in log order: UPDATEs set the new value, CLRs the
//!   restored one. Choice beyond the paper: the paper replays one log in log order; with
//!   per-thread logs there is no single log order, and the commit order is the order in which
//!   conflicting writes happened, since the user holds a transaction's locks until it ends.
//!   Unfinished transactions then have their history repeated in log order (they are the
//!   last writers of what they touched), so that the undo below starts from the state at the
//!   crash, including the effect of their CLRs.
//! * Under force, finished transactions need no redo; for each unfinished one the last CLR is
//!   redone (§4.4: the corner case of a crash after the last CLR but before its store).
//! * Undo, one layer (Alg. 2): one backward scan per log over the records present at the
//!   start; the first record met of an unfinished transaction that was not rolling back
//!   logs ROLLBACK; a CLR increments the transaction's count of compensated records; an
//!   UPDATE is skipped while that count is positive (it was compensated before the crash) and
//!   otherwise gets a CLR and has its old value restored. Two layers: each unfinished
//!   transaction's records are visited newest first (its key range of the index) with the
//!   same rule, the transactions latest first (by id, i.e. by start). Then every unfinished
//!   transaction gets an END.
//! * Frees: DELETE records of committed transactions are applied (idempotently).
//! * Finally (no-force) every line named by a record is flushed, and each log is emptied by
//!   switching to a fresh header (§4.5). The allocator's free lists are rebuilt afterwards.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::Instant;

use crate::alloc::BLOCK_HDR;
use crate::pool::{Inner, Log, Policy, RecRef};
use crate::record::{Kind, Rec};
use crate::{Damage, RewindError};

/// Commit numbers and transaction ids at or above this are damage (see `recover`).
const MAX_NUMBER: u64 = 1 << 62;

/// What recovery found and did.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct RecoveryReport {
    /// Records found in the logs.
    pub records: usize,
    /// Finished transactions found committed.
    pub committed: usize,
    /// Finished transactions found rolled back.
    pub rolled_back: usize,
    /// Unfinished transactions undone by this recovery.
    pub undone: usize,
    /// UPDATE records redone (committed transactions, no-force).
    pub redone_records: usize,
    /// UPDATE records undone (unfinished transactions).
    pub undone_records: usize,
    /// Deferred frees applied.
    pub frees: usize,
    /// Wall time of the whole recovery, microseconds.
    pub micros: u64,
}

#[derive(Default)]
struct TxInfo {
    log: usize,
    recs: Vec<(RecRef, Rec)>,
    end: Option<(u64, bool)>,
    rolling_back: bool,
    clr_skip: usize,
    /// Two layers: the record number of the transaction's next record.
    next_n: u64,
}

impl TxInfo {
    fn take_n(&mut self) -> u64 {
        self.next_n += 1;
        self.next_n - 1
    }
}

/// A record whose checksum holds may still name an address no transaction can have
/// written (damage the checksum happened to miss, or a record of another pool): recovery
/// refuses it rather than store outside the pool or free a block that is not one.
fn check_target(p: &Inner, rec: &Rec) -> Result<(), RewindError> {
    let ok = match rec.kind {
        // Transactions write heap words and the root pointer, nothing else of the pool.
        Kind::Update | Kind::Clr => usize::try_from(rec.addr).is_ok_and(|a| {
            a.is_multiple_of(8)
                && (a == crate::pool::H_ROOT
                    || (p.alloc.in_heap(a) && a.checked_add(8).is_some_and(|e| e <= p.r.len())))
        }),
        Kind::Delete => usize::try_from(rec.addr)
            .ok()
            .and_then(|b| b.checked_add(BLOCK_HDR))
            .is_some_and(|payload| p.alloc.heap_block(payload as u64).is_ok()),
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(Damage::RecordTarget {
            record: rec.kind.name(),
            txid: rec.txid,
            addr: rec.addr,
            area: if rec.kind == Kind::Delete {
                "heap"
            } else {
                "heap and root word"
            },
        }
        .into())
    }
}

pub(crate) fn recover(p: &Inner) -> Result<RecoveryReport, RewindError> {
    let t0 = Instant::now();
    let r = &p.r;
    let mut rep = RecoveryReport::default();
    for l in &p.logs {
        l.recover()?;
    }

    // Analysis.
    let mut table: HashMap<u64, TxInfo> = HashMap::new();
    let mut scans = Vec::with_capacity(p.logs.len());
    let mut max_seq = 0;
    for (li, l) in p.logs.iter().enumerate() {
        let scan = l.scan()?;
        rep.records += scan.len();
        for &(at, rec) in &scan {
            check_target(p, &rec)?;
            let t = table.entry(rec.txid).or_insert_with(|| TxInfo {
                log: li,
                ..TxInfo::default()
            });
            match rec.kind {
                Kind::End => {
                    t.end = Some((rec.addr, rec.old != 0));
                    max_seq = max_seq.max(rec.addr);
                }
                Kind::Rollback => t.rolling_back = true,
                _ => {}
            }
            if let RecRef::Key(k) = at {
                t.next_n = t.next_n.max((k & ((1 << crate::avl::SEQ_BITS) - 1)) + 1);
            }
            t.recs.push((at, rec));
        }
        scans.push(scan);
    }
    // Commit numbers keep growing across recoveries, above the last checkpoint's cut.
    let cut = r.load_u64(crate::pool::H_CUT);
    let max_txid = table.keys().copied().max().unwrap_or(0);
    // No pool lives to run 2^62 transactions: numbers that large are damage, and counting
    // on from them would overflow.
    if max_seq.max(cut).max(max_txid) >= MAX_NUMBER {
        return Err(Damage::NumberRange {
            commit: max_seq.max(cut),
            txid: max_txid,
        }
        .into());
    }
    p.commit_seq.store(max_seq.max(cut), Ordering::SeqCst);
    p.next_txid.store(max_txid + 1, Ordering::SeqCst);
    rep.committed = table
        .values()
        .filter(|t| matches!(t.end, Some((_, false))))
        .count();
    rep.rolled_back = table
        .values()
        .filter(|t| matches!(t.end, Some((_, true))))
        .count();

    let force = p.cfg.policy == Policy::Force;
    let mut losers: Vec<u64> = table
        .iter()
        .filter(|(_, t)| t.end.is_none())
        .map(|(&id, _)| id)
        .collect();
    losers.sort_unstable();

    // Redo.
    if !force {
        // Transactions at or below the cut were made durable by the checkpoint that was
        // removing them when the power failed (some of their records may be gone).
        let mut finished: Vec<(u64, u64)> = table
            .iter()
            .filter_map(|(&id, t)| t.end.map(|(seq, _)| (seq, id)))
            .filter(|&(seq, _)| seq > cut)
            .collect();
        finished.sort_unstable();
        let order = finished
            .iter()
            .map(|&(_, id)| id)
            .chain(losers.iter().copied());
        for id in order {
            for (_, rec) in &table[&id].recs {
                if matches!(rec.kind, Kind::Update | Kind::Clr) {
                    r.store_u64(rec.addr as usize, rec.new);
                    rep.redone_records += 1;
                }
            }
        }
    } else {
        for id in &losers {
            if let Some((_, c)) = table[id]
                .recs
                .iter()
                .rev()
                .find(|(_, x)| x.kind == Kind::Clr)
            {
                r.store_u64(c.addr as usize, c.new);
                r.persist(c.addr as usize, 8);
                rep.redone_records += 1;
            }
        }
    }

    // Undo.
    let undo_one =
        |t: &mut TxInfo, rec: &Rec, rep: &mut RecoveryReport| -> Result<(), RewindError> {
            let log = &p.logs[t.log];
            if !t.rolling_back {
                let n = t.take_n();
                log.append(&Rec::rollback(rec.txid), n, Some(0))?;
                t.rolling_back = true;
            }
            match rec.kind {
                Kind::Clr => t.clr_skip += 1,
                Kind::Update if t.clr_skip > 0 => t.clr_skip -= 1,
                Kind::Update => {
                    let n = t.take_n();
                    log.append(&Rec::clr(rec.txid, rec.addr, rec.old), n, Some(0))?;
                    r.store_u64(rec.addr as usize, rec.old);
                    if force {
                        r.persist(rec.addr as usize, 8);
                    }
                    rep.undone_records += 1;
                }
                _ => {}
            }
            Ok(())
        };
    for (li, l) in p.logs.iter().enumerate() {
        match l {
            Log::One(_) => {
                for (_, rec) in scans[li].iter().rev() {
                    if let Some(t) = table.get_mut(&rec.txid)
                        && t.end.is_none()
                    {
                        undo_one(t, rec, &mut rep)?;
                    }
                }
            }
            Log::Two(_) => {
                // Latest transaction first, as the backward scan of one layer would.
                for id in losers.iter().rev() {
                    let Some(t) = table.get_mut(id) else { continue };
                    if t.log != li {
                        continue;
                    }
                    let mine: Vec<Rec> = t.recs.iter().rev().map(|(_, x)| *x).collect();
                    for rec in &mine {
                        undo_one(t, rec, &mut rep)?;
                    }
                }
            }
        }
    }
    for id in &losers {
        let Some(t) = table.get_mut(id) else { continue };
        let seq = p.commit_seq.fetch_add(1, Ordering::SeqCst) + 1;
        let n = t.take_n();
        p.logs[t.log].append(&Rec::end(*id, seq, true), n, Some(0))?;
        t.end = Some((seq, true));
        rep.undone += 1;
    }
    for l in &p.logs {
        l.sync();
    }
    r.fence();

    // Deferred frees of committed transactions (those at or below the cut were processed by
    // their checkpoint, before it persisted the cut, and their blocks may be in use again).
    for t in table.values() {
        if t.end.is_some_and(|(seq, aborted)| !aborted && seq > cut) {
            for (_, rec) in t.recs.iter().filter(|(_, x)| x.kind == Kind::Delete) {
                p.alloc.mark_free(rec.addr as usize);
                rep.frees += 1;
            }
        }
    }
    r.fence();

    // Make the recovered state durable, then clear the logs.
    if !force {
        let mut lines: Vec<usize> = table
            .values()
            .flat_map(|t| t.recs.iter())
            .filter(|(_, x)| matches!(x.kind, Kind::Update | Kind::Clr))
            .map(|(_, x)| x.addr as usize & !63)
            .collect();
        lines.sort_unstable();
        lines.dedup();
        for l in lines {
            r.flush(l, 8);
        }
        r.fence();
    }
    for l in &p.logs {
        l.reset();
    }
    p.alloc.rebuild()?;
    p.next_txid.store(1, Ordering::SeqCst);
    rep.micros = t0.elapsed().as_micros() as u64;
    Ok(rep)
}
