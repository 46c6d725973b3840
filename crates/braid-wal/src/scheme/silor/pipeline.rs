//! SiloR recovery of a single log, replaying while it reads (Zheng et al., OSDI 2014, Section
//! 5: "the log is read and replayed in parallel"): one thread reads the stream and hands each
//! operation of an epoch known to be durable to the replay thread of its key, while those
//! threads apply; nothing of the log is held in memory but the records of epochs not yet known
//! to be durable.
//!
//! Why it is correct with one stream. The engine calls a Silo-R commit with the write set
//! locked and appends the record before it releases the locks (`worker.rs`), so the records
//! writing one key appear in the stream in the order of their TIDs, and so of their epochs.
//! Replaying each key's operations in stream order is therefore replaying them in TID order,
//! which is what the batch recovery (`recovery.rs`) sorts for. With several streams the order
//! across streams is known only by TID, so those logs are recovered by `recovery.rs`.
//!
//! Which records are replayed is the same as in `recovery.rs`: epochs up to the durable epoch
//! `D` (the largest `P` record, or `V` upper end) that no void marker covers. `D` is only
//! known at the end, but every `P d` read proves `D >= d`, so a record of an epoch `<= d` is
//! replayed at once; a record of a later epoch waits (with its payload copied) until a larger
//! `P` arrives, or the end of the stream decides it. A key's waiting records are released
//! before any later record of that key is read (epochs do not decrease along a key's records),
//! so its order holds. A void marker `V lo hi` is written, before any `P` above `lo`, by the
//! open that followed a recovery which discarded epochs `lo < e <= hi`; so when a `P` releases
//! a record of such an epoch, its `V` has been read, and the record is dropped.

use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::time::Instant;

use super::durable::{Mark, decode_mark, is_void};
use super::epoch::epoch_of;
use super::recovery::{NO_TID, Recovered, bad};
use crate::device::Device;
use crate::payload::decode_redo;
use crate::record::Kind;
use crate::scan::Scanner;
use crate::scheme::cut::Cut;
use crate::scheme::{LogKind, RecoveryReport, Replay, SchemeConfig, replay_failed};
use crate::{Lsn, WalError};

/// A batch is handed to its replay thread once its operations hold this many bytes.
const BATCH_BYTES: usize = 256 << 10;
/// Batches in flight per replay thread (bounds memory while the reader runs ahead).
const BATCHES_IN_FLIGHT: usize = 4;

/// Operations for one replay thread, in stream order.
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    /// (txn, lsn, end of the operation in `bytes`).
    ops: Vec<(u64, Lsn, u32)>,
}

/// A record whose epoch is not yet known to be durable.
struct Waiting {
    epoch: u64,
    txn: u64,
    lsn: Lsn,
    payload: Vec<u8>,
}

/// The reader's side: one open batch per replay thread.
struct Router {
    open: Vec<Batch>,
    to: Vec<SyncSender<Batch>>,
    free: Receiver<Batch>,
}

impl Router {
    /// Route the operations of one record (of a replayed epoch) to their replay threads.
    /// `Ok(false)`: a replay thread stopped (its error is reported when it is joined).
    fn route(&mut self, lsn: Lsn, txn: u64, payload: &[u8]) -> Result<bool, WalError> {
        let n = self.open.len();
        let mut it = decode_redo(payload);
        loop {
            let from = it.offset();
            let Some(op) = it.next() else { break };
            let op = op.map_err(|e| bad(0, lsn, &e.to_string()))?;
            let b = (super::worker::row_hash(op.table(), op.key()) >> 32) as usize % n;
            let batch = &mut self.open[b];
            batch.bytes.extend_from_slice(&payload[from..it.offset()]);
            // A batch is handed over at BATCH_BYTES plus one operation, far below 4 GiB.
            batch.ops.push((txn, lsn, batch.bytes.len() as u32));
            if batch.bytes.len() >= BATCH_BYTES && !self.hand_over(b) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Hand every open batch over (the end of the stream).
    fn finish(&mut self) {
        for b in 0..self.open.len() {
            if !self.open[b].ops.is_empty() && !self.hand_over(b) {
                return;
            }
        }
    }

    /// Send replay thread `b` its open batch; false if it stopped.
    fn hand_over(&mut self, b: usize) -> bool {
        let mut next = self.free.try_recv().unwrap_or_default();
        next.bytes.clear();
        next.ops.clear();
        let full = std::mem::replace(&mut self.open[b], next);
        self.to[b].send(full).is_ok()
    }
}

/// One replay thread: apply each batch's operations in order, each as a one-operation payload;
/// give the emptied batch back for reuse.
fn replay_batches(
    from: Receiver<Batch>,
    back: SyncSender<Batch>,
    replay: &dyn Replay,
) -> Result<(), WalError> {
    for batch in from {
        let mut at = 0usize;
        for &(txn, lsn, end) in &batch.ops {
            let end = end as usize;
            replay
                .apply(txn, LogKind::Data, &batch.bytes[at..end])
                .map_err(|e| replay_failed(0, lsn, txn, e))?;
            at = end;
        }
        let _ = back.try_send(batch);
    }
    Ok(())
}

/// Recover the single stream on `dev` through `replay`.
pub(super) fn recover(
    cfg: &SchemeConfig,
    dev: &dyn Device,
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
) -> Result<Recovered, WalError> {
    let threads = cfg.recovery_threads.max(1);
    let t0 = Instant::now();
    let (back, free) = sync_channel(threads * BATCHES_IN_FLIGHT);
    let mut to = Vec::with_capacity(threads);
    let mut inboxes = Vec::with_capacity(threads);
    for _ in 0..threads {
        let (tx, rx) = sync_channel(BATCHES_IN_FLIGHT);
        to.push(tx);
        inboxes.push(rx);
    }
    let mut router = Router {
        open: (0..threads).map(|_| Batch::default()).collect(),
        to,
        free,
    };
    let (read, applied, t1) = std::thread::scope(|sc| {
        let hs: Vec<_> = inboxes
            .into_iter()
            .map(|rx| {
                let back = back.clone();
                sc.spawn(move || replay_batches(rx, back, replay))
            })
            .collect();
        let read = read(cfg, dev, &mut router);
        // Closing the inboxes ends the replay threads once they applied what they hold.
        drop(router);
        let t1 = Instant::now();
        let applied = hs.into_iter().try_for_each(|h| {
            h.join()
                .unwrap_or_else(|_| Err(WalError::Config("silor: a replay thread panicked".into())))
        });
        (read, applied, t1)
    });
    let mut rec = read?;
    applied?;
    progress(rec.report.bytes);
    rec.report.stages = vec![
        ("read and replay", (t1 - t0).as_secs_f64()),
        ("replay after the read", t1.elapsed().as_secs_f64()),
    ];
    Ok(rec)
}

/// Read the stream, routing what is replayed as soon as its epoch is known durable.
fn read(cfg: &SchemeConfig, dev: &dyn Device, router: &mut Router) -> Result<Recovered, WalError> {
    let mut report = RecoveryReport::default();
    let cut = cfg.cut.as_ref();
    let mut scanner = Scanner::new(dev, cfg.scan_mode);
    // The durable epoch proved so far, the void ranges read, and what waits for a larger one.
    let mut durable = 0u64;
    let mut voids: Vec<(u64, u64)> = Vec::new();
    let mut waiting: Vec<Waiting> = Vec::new();
    let mut max_epoch = 0u64;
    let mut stopped = false;
    while let Some(r) = scanner.next_record()? {
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
                if stopped {
                    continue;
                }
                if epoch <= durable {
                    if is_void(&voids, epoch) {
                        report.skipped += 1;
                    } else {
                        report.txns += 1;
                        stopped = !router.route(h.lsn, h.txn, r.payload)?;
                    }
                } else {
                    waiting.push(Waiting {
                        epoch,
                        txn: h.txn,
                        lsn: h.lsn,
                        payload: r.payload.to_vec(),
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
                    None => return Err(bad(0, h.lsn, "an unknown bookkeeping record")),
                }
                if !stopped && durable > before && !waiting.is_empty() {
                    stopped = !release(&mut waiting, durable, &voids, router, &mut report)?;
                }
            }
            Kind::Pad => {}
            k => return Err(bad(0, h.lsn, &format!("a {k:?} record"))),
        }
    }
    // The end decides the rest: `D` is the largest mark read.
    if !stopped && release(&mut waiting, durable, &voids, router, &mut report)? {
        router.finish();
    }
    report.skipped += waiting.len() as u64;
    report.bytes = scanner.bytes_read();
    let end = scanner
        .end()
        .cloned()
        .ok_or_else(|| bad(0, 0, "the scanner stopped without an end"))?;
    let ends = vec![end.end];
    report.ends.push(end);
    Ok(Recovered {
        report,
        ends,
        durable,
        max_epoch: max_epoch.max(durable),
    })
}

/// Route the waiting records of epochs up to `durable` (in stream order), dropping those a
/// void marker covers; the rest keep waiting. Returns false if a replay thread stopped.
fn release(
    waiting: &mut Vec<Waiting>,
    durable: u64,
    voids: &[(u64, u64)],
    router: &mut Router,
    report: &mut RecoveryReport,
) -> Result<bool, WalError> {
    let mut keep = Vec::new();
    for w in waiting.drain(..) {
        if w.epoch > durable {
            keep.push(w);
        } else if is_void(voids, w.epoch) {
            report.skipped += 1;
        } else {
            report.txns += 1;
            if !router.route(w.lsn, w.txn, &w.payload)? {
                return Ok(false);
            }
        }
    }
    *waiting = keep;
    Ok(true)
}
