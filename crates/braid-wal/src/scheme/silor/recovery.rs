//! SiloR recovery (Zheng et al., OSDI 2014, Section 5): read the durable epoch `D`, replay in
//! parallel every record of an epoch `<= D`, installing per key the value of the largest TID,
//! and discard everything of a later epoch.
//!
//! This is the recovery of several streams, whose records of one key are ordered only by TID;
//! a single stream is replayed while it is read (`pipeline.rs`).
//!
//! 1. **Scan and partition** (one thread per stream): each stream's valid prefix is read
//!    once, into buffers of 8 MiB that are kept rather than reused ([`Scanner::holding`]), so
//!    the log is in memory once and no payload is copied; a value-log record's operations are
//!    split at once, while the payload is in cache, by key into `recovery_threads` buckets of
//!    references to them. Records
//!    the checkpoint recovery starts from already holds ([`Cut`]) are counted and dropped.
//!    The bookkeeping records (`P` durable epochs, `V` void markers, see `durable.rs`) are
//!    kept, and each record's epoch is counted.
//! 2. **Decide**: `D` is the largest `P` (or `V` upper end) found. A record is replayed if
//!    its epoch is `<= D` and no void marker covers its epoch; the rest are counted as
//!    skipped.
//! 3. **Apply** (one thread per bucket): a bucket's operations of replayed epochs are sorted
//!    by (table, key, TID) (by 16-byte references, see `apply_order`) and each key gets its operations from its last full image (insert
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

/// Read size of a scan: the buffers are kept, so each holds this much of the stream.
const CHUNK_BYTES: usize = 8 << 20;

/// The valid log of one stream, in the buffers its scan read it into (never moved).
#[derive(Default)]
struct Payloads {
    chunks: Vec<Vec<u8>>,
}

impl Payloads {
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
    let mut scanner = Scanner::new(dev, cfg.scan_mode)
        .with_chunk_size(CHUNK_BYTES)
        .holding();
    while let Some((r, chunk, base)) = scanner.next_held()? {
        log.records += 1;
        // A buffer holds at most CHUNK_BYTES or one record (below 4 GiB: the record header's
        // length field is 32 bits), and there are fewer than 2^32 buffers of a stream in memory.
        let (chunk, base) = (chunk as u32, base as u32);
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
    log.payloads = Payloads {
        chunks: scanner.into_held(),
    };
    Ok(log)
}

/// The order to apply `ops` in: grouped by (table, key), each group in TID order (one
/// transaction's operations on one key in their payload order). The sort moves 16-byte
/// entries (key, table, index) rather than the operations; a key's few operations are then
/// put in TID order in place.
fn apply_order(ops: &[Op]) -> Vec<usize> {
    let by_tid = |i: &usize| (ops[*i].tid, *i);
    if u32::try_from(ops.len()).is_err() {
        let mut order: Vec<usize> = (0..ops.len()).collect();
        order.sort_unstable_by_key(|&i| (ops[i].key, ops[i].table, ops[i].tid, i));
        return order;
    }
    let mut keyed: Vec<u128> = ops
        .iter()
        .enumerate()
        .map(|(i, o)| u128::from(o.key) << 64 | u128::from(o.table) << 32 | i as u128)
        .collect();
    keyed.sort_unstable();
    // The low 32 bits are the index (below 2^32, checked above).
    let mut order: Vec<usize> = keyed.iter().map(|&k| k as u32 as usize).collect();
    let mut i = 0;
    while i < keyed.len() {
        let mut j = i + 1;
        while j < keyed.len() && keyed[j] >> 32 == keyed[i] >> 32 {
            j += 1;
        }
        // In index order a group is each stream's operations in stream order, one stream
        // after the other: merged by TID here.
        if j - i > 1 {
            order[i..j].sort_unstable_by_key(by_tid);
        }
        i = j;
    }
    order
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
    let order = apply_order(&ops);
    let bytes_of = |o: &Op| payloads[o.stream as usize].get(o.chunk, o.at, o.len);
    let mut i = 0;
    let mut ahead = Lookahead::default();
    while i < order.len() {
        ahead.before(i, order.len(), |items, step| {
            let mut bytes = order[items].iter().map(|&k| bytes_of(&ops[k]));
            replay.prefetch(LogKind::Data, &mut bytes, step);
        });
        let first = &ops[order[i]];
        let mut j = i;
        let mut from = i;
        while j < order.len()
            && (ops[order[j]].table, ops[order[j]].key) == (first.table, first.key)
        {
            if ops[order[j]].full {
                from = j;
            }
            j += 1;
        }
        for &k in &order[from..j] {
            let o = &ops[k];
            replay
                .apply(o.txn, LogKind::Data, bytes_of(o))
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

#[cfg(test)]
mod tests {
    use super::{Op, apply_order};

    fn op(table: u32, key: u64, tid: u64, stream: u32, at: u32) -> Op {
        Op {
            key,
            tid,
            txn: tid,
            lsn: 0,
            table,
            stream,
            chunk: 0,
            at,
            len: 0,
            full: false,
        }
    }

    /// Two streams' operations, each stream in its own order: the order groups (table, key)
    /// and puts each group in TID order across the streams, a transaction's operations on
    /// one key in their payload order.
    #[test]
    fn the_apply_order_groups_keys_and_merges_streams_by_tid() {
        let ops = vec![
            op(1, 7, 10, 0, 0),
            op(1, 7, 10, 0, 20),
            op(2, 7, 11, 0, 40),
            op(1, 7, 30, 0, 60),
            op(1, 3, 31, 0, 80),
            op(1, 7, 20, 1, 0),
            op(1, 3, 5, 1, 20),
            op(1, 7, 40, 1, 40),
        ];
        let order = apply_order(&ops);
        let got: Vec<(u32, u64, u64, u32)> = order
            .iter()
            .map(|&i| (ops[i].table, ops[i].key, ops[i].tid, ops[i].at))
            .collect();
        let mut want = got.clone();
        want.sort_by_key(|&(table, key, tid, _)| (key, table, tid));
        assert_eq!(got, want, "grouped by key, each key in TID order");
        let key7: Vec<u64> = got
            .iter()
            .filter(|g| (g.0, g.1) == (1, 7))
            .map(|g| g.2)
            .collect();
        assert_eq!(key7, [10, 10, 20, 30, 40]);
        let tid10: Vec<u32> = got.iter().filter(|g| g.2 == 10).map(|g| g.3).collect();
        assert_eq!(
            tid10,
            [0, 20],
            "one transaction's operations keep their order"
        );
    }
}
