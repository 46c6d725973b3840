//! SiloR recovery of several streams, window by window (Zheng et al., OSDI 2014, Section 5:
//! replay every record of an epoch `<= D`, latest TID winning per key, in parallel), without
//! holding the log in memory.
//!
//! Each recovery thread reads every stream and applies the operations of its own share of
//! the keys (`shared_scan.rs`). The windows come from the durable-epoch records: with several
//! streams a `P d` record carries, per stream, the tail before which every record of an epoch
//! `<= d` lies (`durable.rs`, `logger.rs`). A thread reads stream 0 up to the next such `P`,
//! every other stream up to that `P`'s tail for it, and then applies the share's operations
//! it holds whose epoch is now durable, sorted by (table, key, TID); the others (later
//! epochs, read early) wait for a later window. At the end of stream 0 the other streams
//! are read to their ends and the last window is applied under the final `D`.
//!
//! Why it applies what the batch definition does (every record of an epoch `<= D`, no void
//! marker covering it, per key in TID order). Which: an operation is applied once its epoch
//! is `<= d` for a `d` already read, and `d <= D`; a void marker `V lo hi` is written, before
//! any `P` above `lo`, by the open after a recovery that found `D = lo`, so when an operation
//! of a void epoch could be applied its marker has been read, and it is dropped; what no `P`
//! reaches stays held and is counted as skipped. Order: when the window of `P d` is applied,
//! every record of an epoch `<= d` has been read (the tails say where they end, and stream 0
//! has been read past its own), so each key's operations applied in that window are all of
//! its operations of epochs in `(d', d]` (`d'` the previous window's), sorted by TID; those
//! of a later window have later epochs, and a TID's high bits are its epoch. Across a crash
//! and a reopen LSNs only grow, so a later `P`'s tails are past every earlier record.
//!
//! A `P` without tails (a log written before they were added, or one whose stream count
//! differs from the device count) opens no window: its records wait for the next `P` with
//! tails or the end, as in one batch. A checkpoint's cut on stream 0 is taken before the other
//! streams' (`durable.rs`), so the `P` covering a record kept after a cut is itself kept.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use super::durable::{Mark, decode_mark, is_void, pepoch_tails};
use super::epoch::epoch_of;
use super::pipeline::HELD_RESERVE;
use super::recovery::{NO_TID, Recovered, bad};
use crate::device::Device;
use crate::payload::{OP_DELETE, OP_INSERT, decode_redo};
use crate::record::Kind;
use crate::scan::{ScanEnd, Scanner};
use crate::scheme::cut::Cut;
use crate::scheme::feed::Records;
use crate::scheme::shared_scan::{self, Share};
use crate::scheme::{LogKind, Lookahead, RecoveryReport, Replay, SchemeConfig, replay_failed};
use crate::{Lsn, RecordProblem, WalError};

/// One held operation of the share.
#[derive(Clone, Copy)]
struct Op {
    table: u32,
    key: u64,
    tid: u64,
    txn: u64,
    lsn: Lsn,
    stream: u32,
    /// Where its bytes are in [`Held::bytes`].
    at: usize,
    len: usize,
    full: bool,
}

/// A share's operations not applied yet, their bytes in one buffer.
struct Held {
    ops: Vec<Op>,
    bytes: Vec<u8>,
    /// The buffer the kept operations move to after a window (swapped with `bytes`).
    spare: Vec<u8>,
    /// The operations a window applies (kept between windows for its capacity).
    now: Vec<Op>,
}

/// What one thread read of one stream.
#[derive(Default, Clone)]
struct StreamRead {
    records: u64,
    bytes: u64,
    max_txn: u64,
    /// Transaction records the cut covers.
    covered: u64,
    end: Option<ScanEnd>,
}

/// What one thread found, beside the rows it applied.
#[derive(Default)]
struct Found {
    streams: Vec<StreamRead>,
    /// Transaction records (not covered by the cut) by epoch.
    epochs: BTreeMap<u64, u64>,
    durable: u64,
    voids: Vec<(u64, u64)>,
    max_epoch: u64,
}

/// One thread's reading of the streams.
struct Reader<'a> {
    share: Share,
    cfg: &'a SchemeConfig,
    found: Found,
    held: Held,
    /// Run of records of one epoch not yet added to `found.epochs` (epoch, count).
    run: (u64, u64),
}

impl Reader<'_> {
    /// Take record `r` of stream `s`; returns the tails a durable-epoch record with one per
    /// stream carries (`n` streams).
    fn take(
        &mut self,
        s: usize,
        n: usize,
        r: &crate::record::Record<'_>,
    ) -> Result<Option<Vec<Lsn>>, WalError> {
        let h = &r.header;
        let st = &mut self.found.streams[s];
        st.records += 1;
        match h.kind {
            Kind::Redo => {
                let tid = r.stamp.gsn().ok_or_else(|| bad(s, h.lsn, NO_TID))?;
                st.max_txn = st.max_txn.max(h.txn);
                let epoch = epoch_of(tid);
                self.found.max_epoch = self.found.max_epoch.max(epoch);
                if Cut::covered(self.cfg.cut.as_ref(), s, h.lsn, h.flags) {
                    st.covered += 1;
                    return Ok(None);
                }
                if self.run.0 == epoch {
                    self.run.1 += 1;
                } else {
                    self.count_run();
                    self.run = (epoch, 1);
                }
                let payload = r.payload;
                let mut it = decode_redo(payload);
                loop {
                    let from = it.offset();
                    let Some(op) = it.next() else { break };
                    let op = op.map_err(|e| bad(s, h.lsn, RecordProblem::Payload(e)))?;
                    let (table, key) = (op.table(), op.key());
                    if !self.share.owns(table, key) {
                        continue;
                    }
                    let bytes = &payload[from..it.offset()];
                    let at = self.held.bytes.len();
                    self.held.bytes.extend_from_slice(bytes);
                    let tag = payload[from];
                    self.held.ops.push(Op {
                        table,
                        key,
                        tid,
                        txn: h.txn,
                        lsn: h.lsn,
                        stream: s as u32,
                        at,
                        len: bytes.len(),
                        full: tag == OP_INSERT || tag == OP_DELETE,
                    });
                }
                Ok(None)
            }
            Kind::Checkpoint => match decode_mark(r.payload) {
                Some(Mark::Pepoch(d)) => {
                    self.found.durable = self.found.durable.max(d);
                    let tails = pepoch_tails(r.payload);
                    Ok((s == 0 && tails.len() == n).then(|| tails.collect()))
                }
                Some(Mark::Void(lo, hi)) => {
                    self.found.durable = self.found.durable.max(hi);
                    self.found.voids.push((lo, hi));
                    Ok(None)
                }
                None => Err(bad(s, h.lsn, RecordProblem::Bookkeeping)),
            },
            Kind::Pad => Ok(None),
            k => Err(bad(s, h.lsn, RecordProblem::Kind(k.into()))),
        }
    }

    /// Add the run of records of one epoch to `found.epochs`.
    fn count_run(&mut self) {
        if self.run.1 > 0 {
            *self.found.epochs.entry(self.run.0).or_default() += self.run.1;
        }
        self.run = (0, 0);
    }

    /// Apply the held operations of epochs now durable (dropping those a void marker
    /// covers), per key in TID order from its last full image; keep the rest.
    fn apply(&mut self, replay: &dyn Replay) -> Result<(), WalError> {
        let (d, voids) = (self.found.durable, &self.found.voids);
        let held = &mut self.held;
        let now = &mut held.now;
        now.clear();
        let mut kept = 0;
        held.spare.clear();
        for i in 0..held.ops.len() {
            let o = held.ops[i];
            let e = epoch_of(o.tid);
            if e > d {
                let at = held.spare.len();
                held.spare
                    .extend_from_slice(&held.bytes[o.at..o.at + o.len]);
                held.ops[kept] = Op { at, ..o };
                kept += 1;
            } else if !is_void(voids, e) {
                now.push(o);
            }
        }
        held.ops.truncate(kept);
        // Stable: one transaction's operations on one key keep their payload order.
        now.sort_by_key(|o| (o.table, o.key, o.tid));
        let bytes = &held.bytes;
        let get = |o: &Op| &bytes[o.at..o.at + o.len];
        let mut ahead = Lookahead::default();
        let mut i = 0;
        while i < now.len() {
            ahead.before(i, now.len(), |items, step| {
                let mut ops = now[items].iter().map(get);
                replay.prefetch(LogKind::Data, &mut ops, step);
            });
            let mut j = i;
            let mut from = i;
            while j < now.len() && (now[j].table, now[j].key) == (now[i].table, now[i].key) {
                if now[j].full {
                    from = j;
                }
                j += 1;
            }
            for o in &now[from..j] {
                replay
                    .apply(o.txn, LogKind::Data, get(o))
                    .map_err(|e| replay_failed(o.stream, o.lsn, o.txn, e))?;
            }
            i = j;
        }
        std::mem::swap(&mut held.bytes, &mut held.spare);
        Ok(())
    }
}

/// Recover the streams on `devices` (two or more) through `replay`.
pub(super) fn recover(
    cfg: &SchemeConfig,
    devices: &[Arc<dyn Device>],
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
) -> Result<Recovered, WalError> {
    let t0 = Instant::now();
    let found = shared_scan::run_shares(cfg.recovery_threads, |share, stop| {
        let mut scanners: Vec<Scanner<'_, dyn Device>> = devices
            .iter()
            .map(|d| Scanner::new(&**d, cfg.scan_mode))
            .collect();
        let mut records: Vec<&mut dyn Records> =
            scanners.iter_mut().map(|s| s as &mut dyn Records).collect();
        read(cfg, share, &mut records, replay, stop)
    })?;
    // Every share reads the same records and decides alike: share 0's counts are the log's.
    let live = |e: u64| e <= found.durable && !is_void(&found.voids, e);
    let mut report = RecoveryReport::default();
    for (&e, &n) in &found.epochs {
        if live(e) {
            report.txns += n;
        } else {
            report.skipped += n;
        }
    }
    let mut ends = Vec::with_capacity(devices.len());
    for st in found.streams {
        progress(st.bytes);
        report.records += st.records;
        report.bytes += st.bytes;
        report.max_txn = report.max_txn.max(st.max_txn);
        report.covered += st.covered;
        let end = st
            .end
            .ok_or(WalError::Internal(crate::Invariant::ScanWithoutEnd))?;
        ends.push(end.end);
        report.ends.push(end);
    }
    report.stages = vec![("read and replay", t0.elapsed().as_secs_f64())];
    report.plan = Some("windows");
    Ok(Recovered {
        report,
        ends,
        durable: found.durable,
        max_epoch: found.max_epoch.max(found.durable),
    })
}

/// One share's reading (see the module doc); `None` once another share failed.
fn read(
    cfg: &SchemeConfig,
    share: Share,
    streams: &mut [&mut dyn Records],
    replay: &dyn Replay,
    stop: &AtomicBool,
) -> Result<Option<Found>, WalError> {
    let n = streams.len();
    let mut r = Reader {
        share,
        cfg,
        found: Found {
            streams: vec![StreamRead::default(); n],
            ..Found::default()
        },
        held: Held {
            ops: Vec::with_capacity(HELD_RESERVE / 1024),
            bytes: Vec::with_capacity(HELD_RESERVE),
            spare: Vec::with_capacity(HELD_RESERVE),
            now: Vec::new(),
        },
        run: (0, 0),
    };
    // Per stream: the start of the last record read, and whether the stream has ended.
    let mut last: Vec<Option<Lsn>> = vec![None; n];
    let mut done = vec![false; n];
    loop {
        // Stream 0 up to the next `P` with tails, or its end.
        let mut tails = None;
        while tails.is_none() && !done[0] {
            if shared_scan::stopped(stop) {
                return Ok(None);
            }
            match streams[0].next_record()? {
                Some(rec) => tails = r.take(0, n, &rec)?,
                None => done[0] = true,
            }
        }
        // Every other stream past that tail (every record before it read), or to its end.
        for s in 1..n {
            let reached = |last: Option<Lsn>| match (&tails, last) {
                (Some(t), Some(l)) => l >= t[s],
                _ => false,
            };
            while !done[s] && !reached(last[s]) {
                if shared_scan::stopped(stop) {
                    return Ok(None);
                }
                match streams[s].next_record()? {
                    Some(rec) => {
                        last[s] = Some(rec.header.lsn);
                        r.take(s, n, &rec)?;
                    }
                    None => done[s] = true,
                }
            }
        }
        r.apply(replay)?;
        if tails.is_none() {
            break;
        }
    }
    r.count_run();
    for (st, records) in r.found.streams.iter_mut().zip(streams.iter()) {
        st.bytes = records.bytes_read();
        st.end = records.end().cloned();
    }
    Ok(Some(r.found))
}
