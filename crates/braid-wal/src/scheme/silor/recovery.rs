//! SiloR recovery (Zheng et al., OSDI 2014, Section 5): read the durable epoch `D`, replay in
//! parallel every record of an epoch `<= D`, installing per key the value of the largest TID,
//! and discard everything of a later epoch.
//!
//! This is the recovery of several streams, whose records of one key are ordered only by TID;
//! a single stream is replayed while it is read (`pipeline.rs`).
//!
//! 1. **Scan and partition** (one thread per stream): each stream's valid prefix is read
//!    once; a value-log record's payload is copied into the stream's payload chunks (8 MiB
//!    each, never moved once written, so memory is touched once) and its operations are split
//!    at once, while the payload is in cache, by key into `recovery_threads` buckets. Records
//!    the checkpoint recovery starts from already holds ([`Cut`]) are counted and dropped.
//!    The bookkeeping records (`P` durable epochs, `V` void markers, see `durable.rs`) are
//!    kept, and each record's epoch is counted.
//! 2. **Decide**: `D` is the largest `P` (or `V` upper end) found. A record is replayed if
//!    its epoch is `<= D` and no void marker covers its epoch; the rest are counted as
//!    skipped.
//! 3. **Apply** (one thread per bucket): a bucket's operations of replayed epochs are sorted
//!    by (table, key, TID) and each key gets its operations from its last full image (insert
//!    or delete) on, in TID order, each through [`Replay::apply`] as a one-operation payload.
//!
//! Choices where the paper is vague or braid differs: SiloR logs whole row values, so a record
//! for a key applies only if its TID is above the one installed. braid's redo updates carry
//! the changed columns only, so "latest TID wins" becomes "latest full image wins, and the
//! updates after it apply in TID order": the result is the same value the largest TID left,
//! and operations older than a key's last full image are never applied (SiloR's skip). A
//! bucket is sorted rather than applied under a per-key TID check so that no key needs a lock
//! and an update never finds its row missing. Recovery holds the valid log in memory (as
//! Taurus's does here).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use super::durable::{Mark, decode_mark, is_void};
use super::epoch::epoch_of;
use crate::device::Device;
use crate::payload::{OP_DELETE, OP_INSERT, decode_redo};
use crate::record::Kind;
use crate::scan::{ScanEnd, Scanner};
use crate::scheme::cut::Cut;
use crate::scheme::{LogKind, Lookahead, RecoveryReport, Replay, SchemeConfig, replay_failed};
use crate::{Lsn, RecordProblem, WalError};

/// Payload chunk size: a chunk is filled and never grown, so no payload is copied twice.
const CHUNK_BYTES: usize = 8 << 20;

/// The payloads of one stream's value-log records, in chunks that never move.
#[derive(Default)]
struct Payloads {
    chunks: Vec<Vec<u8>>,
}

impl Payloads {
    /// Keep `bytes`; returns (chunk, offset).
    fn push(&mut self, bytes: &[u8]) -> (u32, u32) {
        let fits = self
            .chunks
            .last()
            .is_some_and(|c| c.capacity() - c.len() >= bytes.len());
        if !fits {
            self.chunks
                .push(Vec::with_capacity(CHUNK_BYTES.max(bytes.len())));
        }
        let n = self.chunks.len() - 1;
        let c = &mut self.chunks[n];
        let at = c.len();
        c.extend_from_slice(bytes);
        // A chunk holds at most max(CHUNK_BYTES, one record) bytes, and a record is far below
        // 4 GiB (the record header's length field is 32 bits).
        (n as u32, at as u32)
    }

    fn get(&self, chunk: u32, at: u32, len: u32) -> &[u8] {
        let (at, len) = (at as usize, len as usize);
        &self.chunks[chunk as usize][at..at + len]
    }
}

/// What the scan of one stream found.
#[derive(Default)]
struct Log {
    payloads: Payloads,
    /// Per bucket: the operations of this stream's records not covered by the cut.
    buckets: Vec<Vec<Op>>,
    /// Records not covered by the cut, by epoch.
    epochs: BTreeMap<u64, u64>,
    covered: u64,
    marks: Vec<Mark>,
    end: Option<ScanEnd>,
    records: u64,
    bytes: u64,
    max_txn: u64,
    max_epoch: u64,
}

/// One operation to apply: where it is and what orders it.
#[derive(Clone, Copy)]
struct Op {
    key: u64,
    tid: u64,
    txn: u64,
    lsn: Lsn,
    table: u32,
    stream: u32,
    /// Where its bytes are in its stream's payloads: chunk, offset, length.
    chunk: u32,
    at: u32,
    len: u32,
    full: bool,
}

/// What recovery found.
pub(crate) struct Recovered {
    pub(crate) report: RecoveryReport,
    /// Per stream: where appends resume.
    pub(crate) ends: Vec<Lsn>,
    /// The durable epoch the log proves.
    pub(crate) durable: u64,
    /// The largest epoch of any record or marker found (`>= durable`).
    pub(crate) max_epoch: u64,
}

/// What [`bad`] says of a redo record that carries no TID.
pub(super) const NO_TID: RecordProblem = RecordProblem::NoStamp("TID");

/// A record silor does not write (so).
pub(super) fn bad(stream: usize, lsn: Lsn, problem: RecordProblem) -> WalError {
    WalError::WrongLog(crate::WrongLog::Record {
        scheme: "silor",
        stream,
        txn: None,
        lsn,
        problem,
    })
}

/// Scan stream `s` and split the operations of its records into `buckets` by key.
fn scan(s: usize, dev: &dyn Device, cfg: &SchemeConfig, buckets: usize) -> Result<Log, WalError> {
    let mut log = Log {
        buckets: (0..buckets).map(|_| Vec::new()).collect(),
        ..Log::default()
    };
    let cut = cfg.cut.as_ref();
    let mut scanner = Scanner::new(dev, cfg.scan_mode);
    while let Some(r) = scanner.next_record()? {
        log.records += 1;
        let h = r.header;
        match h.kind {
            Kind::Redo => {
                let tid = r.stamp.gsn().ok_or_else(|| bad(s, h.lsn, NO_TID))?;
                log.max_txn = log.max_txn.max(h.txn);
                let epoch = epoch_of(tid);
                log.max_epoch = log.max_epoch.max(epoch);
                if Cut::covered(cut, s, h.lsn, h.flags) {
                    log.covered += 1;
                    continue;
                }
                *log.epochs.entry(epoch).or_default() += 1;
                let (chunk, base) = log.payloads.push(r.payload);
                let payload = r.payload;
                let mut it = decode_redo(payload);
                loop {
                    let from = it.offset();
                    let Some(op) = it.next() else { break };
                    let op = op.map_err(|e| bad(s, h.lsn, RecordProblem::Payload(e)))?;
                    let (table, key) = (op.table(), op.key());
                    let tag = payload[from];
                    let hash = super::worker::row_hash(table, key);
                    log.buckets[(hash >> 32) as usize % buckets].push(Op {
                        key,
                        tid,
                        txn: h.txn,
                        lsn: h.lsn,
                        table,
                        stream: s as u32,
                        chunk,
                        // Offsets within one record's payload fit its 32-bit length.
                        at: base + from as u32,
                        len: (it.offset() - from) as u32,
                        full: tag == OP_INSERT || tag == OP_DELETE,
                    });
                }
            }
            Kind::Checkpoint => match decode_mark(r.payload) {
                Some(m) => log.marks.push(m),
                None => return Err(bad(s, h.lsn, RecordProblem::Bookkeeping)),
            },
            Kind::Pad => {}
            k => return Err(bad(s, h.lsn, RecordProblem::Kind(k.into()))),
        }
    }
    log.bytes = scanner.bytes_read();
    log.end = scanner.end().cloned();
    Ok(log)
}

/// Apply one bucket: per key, from its last full image on, in TID order; operations of an
/// epoch `live` refuses are left out.
fn apply(
    mut ops: Vec<Op>,
    live: &(dyn Fn(u64) -> bool + Sync),
    payloads: &[&Payloads],
    replay: &dyn Replay,
) -> Result<(), WalError> {
    ops.retain(|o| live(epoch_of(o.tid)));
    // Stable: one transaction's operations on one key keep their payload order.
    ops.sort_by_key(|o| (o.table, o.key, o.tid));
    let mut i = 0;
    let mut ahead = Lookahead::default();
    while i < ops.len() {
        ahead.before(i, ops.len(), |items, step| {
            let mut bytes = ops[items]
                .iter()
                .map(|o| payloads[o.stream as usize].get(o.chunk, o.at, o.len));
            replay.prefetch(LogKind::Data, &mut bytes, step);
        });
        let mut j = i;
        let mut from = i;
        while j < ops.len() && (ops[j].table, ops[j].key) == (ops[i].table, ops[i].key) {
            if ops[j].full {
                from = j;
            }
            j += 1;
        }
        for o in &ops[from..j] {
            let bytes = payloads[o.stream as usize].get(o.chunk, o.at, o.len);
            replay
                .apply(o.txn, LogKind::Data, bytes)
                .map_err(|e| replay_failed(o.stream, o.lsn, o.txn, e))?;
        }
        i = j;
    }
    Ok(())
}

/// Recover the streams on `devices` through `replay`.
pub(crate) fn recover(
    cfg: &SchemeConfig,
    devices: &[Arc<dyn Device>],
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
) -> Result<Recovered, WalError> {
    if let [dev] = devices {
        return super::pipeline::recover(cfg, &**dev, replay, progress);
    }
    let mut report = RecoveryReport::default();
    let buckets = cfg.recovery_threads.max(1);
    let t0 = Instant::now();
    let mut logs: Vec<Log> = std::thread::scope(|sc| {
        let hs: Vec<_> = devices
            .iter()
            .enumerate()
            .map(|(s, d)| sc.spawn(move || scan(s, &**d, cfg, buckets)))
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(WalError::ThreadPanicked {
                        thread: "a silor scan thread",
                    })
                })
            })
            .collect::<Result<Vec<_>, _>>()
    })?;
    let t1 = Instant::now();
    let mut durable = 0;
    let mut max_epoch = 0;
    let mut voids = Vec::new();
    for log in &logs {
        progress(log.bytes);
        report.records += log.records;
        report.bytes += log.bytes;
        report.max_txn = report.max_txn.max(log.max_txn);
        report.covered += log.covered;
        max_epoch = max_epoch.max(log.max_epoch);
        for &m in &log.marks {
            match m {
                Mark::Pepoch(d) => durable = durable.max(d),
                Mark::Void(lo, hi) => {
                    durable = durable.max(hi);
                    voids.push((lo, hi));
                }
            }
        }
    }
    let max_epoch = max_epoch.max(durable);
    let live = |e: u64| e <= durable && !is_void(&voids, e);
    for log in &logs {
        for (&e, &n) in &log.epochs {
            if live(e) {
                report.txns += n;
            } else {
                report.skipped += n;
            }
        }
    }
    let mut by_bucket: Vec<Vec<Op>> = (0..buckets).map(|_| Vec::new()).collect();
    for log in &mut logs {
        for (b, ops) in std::mem::take(&mut log.buckets).into_iter().enumerate() {
            if by_bucket[b].is_empty() {
                by_bucket[b] = ops;
            } else {
                by_bucket[b].extend(ops);
            }
        }
    }
    let payloads: Vec<&Payloads> = logs.iter().map(|l| &l.payloads).collect();
    let (payloads, live) = (&payloads, &live);
    std::thread::scope(|sc| {
        let hs: Vec<_> = by_bucket
            .into_iter()
            .map(|ops| sc.spawn(move || apply(ops, live, payloads, replay)))
            .collect();
        hs.into_iter().try_for_each(|h| {
            h.join().unwrap_or_else(|_| {
                Err(WalError::ThreadPanicked {
                    thread: "a silor replay thread",
                })
            })
        })
    })?;
    let t2 = Instant::now();
    report.stages = vec![
        ("scan and partition", (t1 - t0).as_secs_f64()),
        ("apply", (t2 - t1).as_secs_f64()),
    ];
    let mut ends = Vec::with_capacity(logs.len());
    for log in logs {
        let end = log
            .end
            .ok_or_else(|| WalError::Internal(crate::Invariant::ScanWithoutEnd))?;
        ends.push(end.end);
        report.ends.push(end);
    }
    Ok(Recovered {
        report,
        ends,
        durable,
        max_epoch,
    })
}
