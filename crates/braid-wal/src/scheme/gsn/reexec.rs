//! Command recovery: the live transactions re-executed one after another in GSN order
//! (Taurus's serial command replay, Xia et al., VLDB 2021, Section 3.3, with one GSN in place
//! of an LSN vector).
//!
//! Which transactions are live is decided exactly as for data logging (`live.rs`: the bound,
//! the void markers' decisions, the sparse dependencies); only how they are replayed differs.
//! Under command logging a transaction's GSN is above the GSN of every transaction it read from
//! (read-after-write), overwrote (write-after-write) or overwrote a read of (write-after-read,
//! `reads.rs`), so a total order by GSN is consistent with every conflict, and two transactions
//! with equal GSNs do not conflict: they run in either order (here by log, then position). A
//! transaction written as a part and a commit record (autonomous commit with dependencies) runs
//! at its commit record's GSN, which is, like the part's, above everything it depends on and
//! below everything that depends on it. Data records in the same logs (transactions that ran
//! no stored procedure) are applied as redo at their place in the order.
//!
//! Departure: Taurus re-executes in parallel, each thread taking a transaction once every
//! earlier LSN vector entry is replayed; a GSN is one number, so the order here is total and
//! the re-execution runs on one thread.

use std::collections::HashMap;
use std::time::Instant;

use super::recovery::{Rec, RecKind, StreamScan};
use crate::WalError;
use crate::scheme::{LogKind, RecoveryReport, Replay, replay_failed};

/// Re-execute the records `take` selects in `scans` (given a record's log), in GSN order;
/// `commits[txn]` is the commit record's GSN of a transaction whose parts are replayed. Adds
/// the `apply` stage to `report`.
pub(super) fn reexecute(
    scans: &[StreamScan],
    take: &(dyn Fn(usize, &Rec) -> bool + Sync),
    commits: &HashMap<u64, u64>,
    replay: &dyn Replay,
    report: &mut RecoveryReport,
) -> Result<(), WalError> {
    let t = Instant::now();
    // (GSN it runs at, transaction, log, position in the log's records).
    let mut order: Vec<(u64, u64, usize, usize)> = Vec::new();
    for (s, sc) in scans.iter().enumerate() {
        for (i, r) in sc.recs.iter().enumerate() {
            if !take(s, r) {
                continue;
            }
            let at = match r.kind {
                RecKind::Part => commits.get(&r.txn).copied().unwrap_or(r.gsn),
                _ => r.gsn,
            };
            order.push((at, r.txn, s, i));
        }
    }
    // Records of one log are in LSN order, so a transaction's parts keep theirs.
    order.sort_unstable();
    for (_, txn, s, i) in order {
        let r = &scans[s].recs[i];
        let kind = if r.command {
            LogKind::Command
        } else {
            LogKind::Data
        };
        replay
            .apply(txn, kind, &r.payload)
            .map_err(|e| replay_failed(s as u32, r.lsn, txn, e))?;
    }
    report.stages.push(("apply", t.elapsed().as_secs_f64()));
    Ok(())
}
