//! Taurus recovery of a single data-logged stream by several threads: every thread reads the
//! stream and applies the redo operations of its own share of the keys, in stream order
//! (`shared_scan.rs`, as serial's, Silo-R's and Plover's single-log recoveries do), a few
//! dozen records at a time so that the rows of the next are announced before each apply
//! (`apply_queue.rs`).
//!
//! Why this is the same recovery as Alg. 3-4 on one log. With one stream an LV has one entry,
//! the position of a record's last dependency in that stream, always before the record: every
//! record in the valid prefix has its LV below the valid end, so the cut (Alg. 3) keeps the
//! whole valid prefix and the stream restarts at its valid end. Replay in any order that
//! keeps each key's operations in stream order leaves every row with the image of its last
//! writer in the stream, which is what replay in LV order (Alg. 4) leaves: a transaction that
//! wrote a key after another took that key's lock after it, so its record is later in the
//! stream. What this path saves is Alg. 4's bookkeeping (the readers' batches, the pools'
//! claims and heads, the window search), which on one log only orders records the stream
//! already orders; with one recovery thread, command logging (re-execution needs the whole
//! serial order, not each key's) or MVCC, or a plan asked for explicitly, recovery runs the
//! pipeline of `recovery.rs`.

use std::sync::atomic::AtomicBool;

use super::{Outcome, Read, problem, record_lv, too_wide};
use crate::lv::MAX_STREAMS;
use crate::record::Kind;
use crate::scan::StreamSource;
use crate::scheme::apply_queue::ApplyQueue;
use crate::scheme::cut::Cut;
use crate::scheme::feed::Records;
use crate::scheme::shared_scan::{self, Reading, Share};
use crate::scheme::{RecoveryReport, Replay, SchemeConfig};
use crate::{RecordProblem, WalError};

/// Recover the one stream `dev` through `replay` on `cfg.recovery_threads` threads.
pub(super) fn recover(
    cfg: &SchemeConfig,
    dev: &(dyn StreamSource + Sync),
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
    started: std::time::Instant,
) -> Result<Outcome, WalError> {
    let src = (dev, cfg.scan_mode, Reading::Once);
    let (read, txns) = shared_scan::run(cfg.recovery_threads, src, |share, sc, stop| {
        scan(sc, cfg, replay, share, stop)
    })?;
    // Every share reads the same records and decides alike: share 0's counts are the log's.
    progress(read.bytes);
    let end = read.end.end;
    let report = RecoveryReport {
        txns,
        records: read.records,
        bytes: read.bytes,
        max_txn: read.max_txn,
        covered: read.covered,
        ends: vec![read.end],
        stages: vec![("read and replay", started.elapsed().as_secs_f64())],
        plan: Some("shared scan"),
        ..RecoveryReport::default()
    };
    Ok(Outcome {
        ends: vec![end],
        report,
    })
}

/// One share's pass over the stream: the committed redo records not in the checkpoint, the
/// operations of `share` applied; `None` once another share failed.
fn scan(
    sc: &mut dyn Records,
    cfg: &SchemeConfig,
    replay: &dyn Replay,
    share: Share,
    stop: &AtomicBool,
) -> Result<Option<(Read, u64)>, WalError> {
    let mut read = Read::empty();
    let mut txns = 0u64;
    let mut lv = [0u64; MAX_STREAMS];
    let mut queue = ApplyQueue::default();
    while let Some(rec) = sc.next_record()? {
        if shared_scan::stopped(stop) {
            return Ok(None);
        }
        read.records += 1;
        let h = rec.header;
        read.max_txn = read.max_txn.max(h.txn);
        match h.kind {
            Kind::Anchor => {
                if rec.stamp.lv_into(&mut lv[..1]) > 1 {
                    return Err(too_wide(0, h.lsn, 1));
                }
                continue;
            }
            Kind::Redo if rec.commits() => {}
            Kind::Command if rec.commits() => {
                return Err(problem(
                    0,
                    h.txn,
                    h.lsn,
                    RecordProblem::CommandLogged { threads: share.n },
                ));
            }
            _ => continue,
        }
        if Cut::covered(cfg.cut.as_ref(), 0, h.lsn, h.flags) {
            read.covered += 1;
            continue;
        }
        record_lv(&rec, 0, 1, &lv)?;
        let bad = |e| problem(0, h.txn, h.lsn, RecordProblem::Payload(e));
        queue.push(&share, (h.txn, h.lsn), rec.payload, bad, (replay, 0))?;
        txns += 1;
    }
    queue.apply(replay)?;
    read.bytes = sc.bytes_read();
    read.end = sc
        .end()
        .cloned()
        .ok_or_else(|| WalError::Internal(crate::Invariant::ScanWithoutEnd))?;
    Ok(Some((read, txns)))
}
