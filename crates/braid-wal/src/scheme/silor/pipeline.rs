//! SiloR recovery of a single log, replaying while it reads (Zheng et al., OSDI 2014, Section
//! 5: "the log is read and replayed in parallel"): each recovery thread reads the stream and
//! applies the operations of its share of the keys as soon as their epoch is known durable
//! (`shared_scan.rs` says why each thread reads rather than one handing to the others);
//! nothing of the log is held in memory but a share's operations of epochs not yet known to
//! be durable.
//!
//! Why it is correct with one stream. The engine calls a Silo-R commit with the write set
//! locked and appends the record before it releases the locks (`worker.rs`), so the records
//! writing one key appear in the stream in the order of their TIDs, and so of their epochs.
//! Replaying each key's operations in stream order is therefore replaying them in TID order,
//! which is what the recovery of several streams (`windows.rs`) sorts for: across streams the
//! order is known only by TID.
//!
//! Which records are replayed is the same as in `recovery.rs`: epochs up to the durable epoch
//! `D` (the largest `P` record, or `V` upper end) that no void marker covers. `D` is only
//! known at the end, but every `P d` read proves `D >= d`, so a record of an epoch `<= d` is
//! replayed at once; a record of a later epoch waits (its share's operations copied) until a larger
//! `P` arrives, or the end of the stream decides it. A key's waiting records are released
//! before any later record of that key is read (epochs do not decrease along a key's records),
//! so its order holds. A release announces each record to [`Replay::prefetch`] a few records before
//! it applies it, so the memory misses of the next records' rows overlap the apply of this one
//! (measured on Silo-R's recovery of 1 KB YCSB rows: the apply's row misses were a quarter of
//! the replay's samples before). A void marker `V lo hi` is written, before any `P` above `lo`, by the
//! open that followed a recovery which discarded epochs `lo < e <= hi`; so when a `P` releases
//! a record of such an epoch, its `V` has been read, and the record is dropped.

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use super::durable::{Mark, decode_mark, is_void};
use super::epoch::epoch_of;
use super::recovery::{NO_TID, Recovered, bad};
use crate::RecordProblem;
use crate::device::Device;
use crate::record::Kind;
use crate::scan::StreamSource;
use crate::scheme::cut::Cut;
use crate::scheme::feed::Records;
use crate::scheme::shared_scan::{self, Reading, Share};
use crate::scheme::{LogKind, Lookahead, RecoveryReport, Replay, SchemeConfig, replay_failed};
use crate::{Lsn, WalError};

/// A record whose epoch is not yet known to be durable.
struct Waiting {
    epoch: u64,
    txn: u64,
    lsn: Lsn,
    /// This share's operations of it, in [`Held::ops`].
    ops: std::ops::Range<usize>,
}

/// The records waiting for a larger durable epoch, their operations in one buffer. Each `P`
/// usually releases all of them (every record of an epoch comes before the `P` that covers
/// it), so the buffer is emptied every epoch and stays in cache.
struct Held {
    recs: Vec<Waiting>,
    ops: Vec<u8>,
}

/// Address space [`Held`] (and `windows.rs`'s buffers) reserves for operations at the start,
/// in bytes. A share holds about the records of the two or three epochs its `P` lags behind
/// (measured: 12-34 MB for 1 KB rows at 5 ms epochs), and growing a buffer by doubling to that
/// size writes every byte it has held once more into memory never touched before, which on a
/// guest whose fresh pages cost a host fault each (0.4-1.7 s/GB measured) was a third of the
/// replay. Reserving does not touch: a page costs only when first written.
pub(super) const HELD_RESERVE: usize = 64 << 20;

impl Held {
    fn reserved() -> Self {
        Held {
            recs: Vec::with_capacity(HELD_RESERVE / 1024),
            ops: Vec::with_capacity(HELD_RESERVE),
        }
    }
}

/// One thread's view: its share of the keys and where it applies them.
struct Applier<'a> {
    share: Share,
    replay: &'a dyn Replay,
}

impl Applier<'_> {
    /// Apply this share's operations of the record at `lsn`.
    fn apply(&self, lsn: Lsn, txn: u64, payload: &[u8]) -> Result<(), WalError> {
        self.share.runs(
            payload,
            |e| bad(0, lsn, RecordProblem::Payload(e)),
            |ops| self.apply_ops(lsn, txn, ops),
        )
    }

    fn apply_ops(&self, lsn: Lsn, txn: u64, ops: &[u8]) -> Result<(), WalError> {
        self.replay
            .apply(txn, LogKind::Data, ops)
            .map_err(|e| replay_failed(0, lsn, txn, e))
    }
}

/// Recover the single stream on `dev` through `replay`.
pub(super) fn recover(
    cfg: &SchemeConfig,
    dev: &dyn Device,
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
) -> Result<Recovered, WalError> {
    let t0 = Instant::now();
    let src = (
        dev as &(dyn StreamSource + Sync),
        cfg.scan_mode,
        Reading::EachThread,
    );
    let mut rec = shared_scan::run(cfg.recovery_threads, src, |share, scanner, stop| {
        read(cfg, scanner, &Applier { share, replay }, stop)
    })?;
    progress(rec.report.bytes);
    rec.report.stages = vec![("read and replay", t0.elapsed().as_secs_f64())];
    Ok(rec)
}

/// Read the stream, applying this share's operations as soon as their epoch is known
/// durable; `None` if another share failed first.
fn read(
    cfg: &SchemeConfig,
    scanner: &mut dyn Records,
    to: &Applier<'_>,
    stop: &AtomicBool,
) -> Result<Option<Recovered>, WalError> {
    let mut report = RecoveryReport::default();
    let cut = cfg.cut.as_ref();
    // The durable epoch proved so far, the void ranges read, and what waits for a larger one.
    let mut durable = 0u64;
    let mut voids: Vec<(u64, u64)> = Vec::new();
    let mut waiting = Held::reserved();
    let mut max_epoch = 0u64;
    while let Some(r) = scanner.next_record()? {
        if shared_scan::stopped(stop) {
            return Ok(None);
        }
        report.records += 1;
        let h = r.header;
        match h.kind {
            Kind::Redo => {
                let tid = r.stamp.gsn().ok_or_else(|| bad(0, h.lsn, NO_TID))?;
                report.max_txn = report.max_txn.max(h.txn);
                let epoch = epoch_of(tid);
                max_epoch = max_epoch.max(epoch);
                if Cut::covered(cut, 0, h.lsn, h.flags) {
                    report.covered += 1;
                    continue;
                }
                if epoch <= durable {
                    if is_void(&voids, epoch) {
                        report.skipped += 1;
                    } else {
                        report.txns += 1;
                        to.apply(h.lsn, h.txn, r.payload)?;
                    }
                } else {
                    let from = waiting.ops.len();
                    to.share.runs(
                        r.payload,
                        |e| bad(0, h.lsn, RecordProblem::Payload(e)),
                        |run| {
                            waiting.ops.extend_from_slice(run);
                            Ok(())
                        },
                    )?;
                    waiting.recs.push(Waiting {
                        epoch,
                        txn: h.txn,
                        lsn: h.lsn,
                        ops: from..waiting.ops.len(),
                    });
                }
            }
            Kind::Checkpoint => {
                let before = durable;
                match decode_mark(r.payload) {
                    Some(Mark::Pepoch(d)) => durable = durable.max(d),
                    Some(Mark::Void(lo, hi)) => {
                        durable = durable.max(hi);
                        voids.push((lo, hi));
                    }
                    None => return Err(bad(0, h.lsn, RecordProblem::Bookkeeping)),
                }
                if durable > before && !waiting.recs.is_empty() {
                    release(&mut waiting, durable, &voids, to, &mut report)?;
                }
            }
            Kind::Pad => {}
            k => return Err(bad(0, h.lsn, RecordProblem::Kind(k.into()))),
        }
    }
    // The end decides the rest: `D` is the largest mark read.
    release(&mut waiting, durable, &voids, to, &mut report)?;
    report.skipped += waiting.recs.len() as u64;
    report.bytes = scanner.bytes_read();
    let end = scanner
        .end()
        .cloned()
        .ok_or_else(|| WalError::Internal(crate::Invariant::ScanWithoutEnd))?;
    let ends = vec![end.end];
    report.ends.push(end);
    Ok(Some(Recovered {
        report,
        ends,
        durable,
        max_epoch: max_epoch.max(durable),
    }))
}

/// Apply this share's waiting operations of epochs up to `durable` (in stream order),
/// dropping those a void marker covers; the rest keep waiting.
fn release(
    waiting: &mut Held,
    durable: u64,
    voids: &[(u64, u64)],
    to: &Applier<'_>,
    report: &mut RecoveryReport,
) -> Result<(), WalError> {
    let mut kept = 0;
    let mut kept_to = 0;
    let n = waiting.recs.len();
    let mut ahead = Lookahead::default();
    for i in 0..n {
        // The records after this one are not moved yet (only those up to `i` are), so their
        // operations can be announced where they are.
        ahead.before(i, n, |items, step| {
            let mut ops = waiting.recs[items]
                .iter()
                .filter(|w| w.epoch <= durable)
                .map(|w| &waiting.ops[w.ops.clone()]);
            to.replay.prefetch(LogKind::Data, &mut ops, step);
        });
        let w = &waiting.recs[i];
        if w.epoch > durable {
            // Keep it, moved down over what was released (ranges only move down).
            let len = w.ops.len();
            waiting.ops.copy_within(w.ops.clone(), kept_to);
            let mut w = Waiting {
                ops: kept_to..kept_to + len,
                ..*w
            };
            std::mem::swap(&mut waiting.recs[kept], &mut w);
            kept += 1;
            kept_to += len;
        } else if is_void(voids, w.epoch) {
            report.skipped += 1;
        } else {
            report.txns += 1;
            if !w.ops.is_empty() {
                to.apply_ops(w.lsn, w.txn, &waiting.ops[w.ops.clone()])?;
            }
        }
    }
    waiting.recs.truncate(kept);
    waiting.ops.truncate(kept_to);
    Ok(())
}
