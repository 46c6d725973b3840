//! SiloR recovery (Zheng et al., OSDI 2014, Section 5): read the durable epoch `D`, replay in
//! parallel every record of an epoch `<= D`, installing per key the value of the largest TID,
//! and discard everything of a later epoch.
//!
//! 1. **Scan** (one thread per stream): each stream's valid prefix is decoded and kept in
//!    memory: its value-log records (TID, transaction, payload) and the bookkeeping records
//!    (`P` durable epochs, `V` void markers, see `durable.rs`).
//! 2. **Decide**: `D` is the largest `P` (or `V` upper end) found. A record is replayed if the
//!    checkpoint recovery starts from does not hold it ([`Cut`]), its epoch is `<= D` and no
//!    void marker covers its epoch; the rest are counted as skipped.
//! 3. **Partition** (one thread per stream): the replayed records' operations are split by key
//!    into `recovery_threads` buckets.
//! 4. **Apply** (one thread per bucket): a bucket's operations are sorted by (table, key, TID)
//!    and each key gets its operations from its last full image (insert or delete) on, in TID
//!    order, each through [`Replay::apply`] as a one-operation payload.
//!
//! Choices where the paper is vague or braid differs: SiloR logs whole row values, so a record
//! for a key applies only if its TID is above the one installed. braid's redo updates carry
//! the changed columns only, so "latest TID wins" becomes "latest full image wins, and the
//! updates after it apply in TID order": the result is the same value the largest TID left,
//! and operations older than a key's last full image are never applied (SiloR's skip). A
//! bucket is sorted rather than applied under a per-key TID check so that no key needs a lock
//! and an update never finds its row missing. Recovery holds the valid log in memory (as
//! Taurus's does here).

use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use super::durable::{Mark, decode_mark};
use super::epoch::epoch_of;
use crate::device::Device;
use crate::payload::{OP_DELETE, OP_INSERT, decode_redo};
use crate::record::Kind;
use crate::scan::{ScanEnd, Scanner};
use crate::scheme::cut::Cut;
use crate::scheme::{LogKind, RecoveryReport, Replay, SchemeConfig, replay_failed};
use crate::{Lsn, WalError};

/// One value-log record.
struct Rec {
    lsn: Lsn,
    flags: u8,
    txn: u64,
    tid: u64,
    payload: Range<usize>,
}

/// The decoded valid prefix of one stream.
#[derive(Default)]
struct Log {
    recs: Vec<Rec>,
    arena: Vec<u8>,
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
    table: u32,
    key: u64,
    tid: u64,
    txn: u64,
    stream: u32,
    lsn: Lsn,
    full: bool,
    /// Byte range in its stream's arena.
    at: (usize, usize),
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

fn bad(stream: usize, lsn: Lsn, what: &str) -> WalError {
    WalError::Config(format!(
        "silor recovery: stream {stream} LSN {lsn}: {what} (was this log written by another scheme?)"
    ))
}

fn scan(s: usize, dev: &dyn Device, cfg: &SchemeConfig) -> Result<Log, WalError> {
    let mut log = Log::default();
    let mut scanner = Scanner::new(dev, cfg.scan_mode);
    while let Some(r) = scanner.next_record()? {
        log.records += 1;
        let h = r.header;
        match h.kind {
            Kind::Redo => {
                let tid = match r.stamp.gsn() {
                    Some(t) => t,
                    None => return Err(bad(s, h.lsn, "a redo record without a TID stamp")),
                };
                log.max_txn = log.max_txn.max(h.txn);
                log.max_epoch = log.max_epoch.max(epoch_of(tid));
                let start = log.arena.len();
                log.arena.extend_from_slice(r.payload);
                log.recs.push(Rec {
                    lsn: h.lsn,
                    flags: h.flags,
                    txn: h.txn,
                    tid,
                    payload: start..log.arena.len(),
                });
            }
            Kind::Checkpoint => match decode_mark(r.payload) {
                Some(m) => log.marks.push(m),
                None => return Err(bad(s, h.lsn, "an unknown bookkeeping record")),
            },
            Kind::Pad => {}
            k => return Err(bad(s, h.lsn, &format!("a {k:?} record"))),
        }
    }
    log.bytes = scanner.bytes_read();
    log.end = scanner.end().cloned();
    Ok(log)
}

/// Split the replayed records of `log` (stream `s`) into `buckets` by key.
fn partition(
    s: usize,
    log: &Log,
    live: &(dyn Fn(&Rec) -> bool + Sync),
    buckets: usize,
) -> Result<Vec<Vec<Op>>, WalError> {
    let mut out: Vec<Vec<Op>> = (0..buckets).map(|_| Vec::new()).collect();
    for r in log.recs.iter().filter(|r| live(r)) {
        let payload = &log.arena[r.payload.clone()];
        let mut it = decode_redo(payload);
        loop {
            let from = it.offset();
            let Some(op) = it.next() else { break };
            let op = op.map_err(|e| bad(s, r.lsn, &e.to_string()))?;
            let (table, key) = (op.table(), op.key());
            let tag = payload[from];
            let h = (key ^ (u64::from(table) << 40)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            out[(h >> 32) as usize % buckets].push(Op {
                table,
                key,
                tid: r.tid,
                txn: r.txn,
                stream: s as u32,
                lsn: r.lsn,
                full: tag == OP_INSERT || tag == OP_DELETE,
                at: (r.payload.start + from, r.payload.start + it.offset()),
            });
        }
    }
    Ok(out)
}

/// Apply one bucket: per key, from its last full image on, in TID order.
fn apply(mut ops: Vec<Op>, logs: &[Log], replay: &dyn Replay) -> Result<(), WalError> {
    // Stable: one transaction's operations on one key keep their payload order.
    ops.sort_by_key(|o| (o.table, o.key, o.tid));
    let mut i = 0;
    while i < ops.len() {
        let mut j = i;
        let mut from = i;
        while j < ops.len() && (ops[j].table, ops[j].key) == (ops[i].table, ops[i].key) {
            if ops[j].full {
                from = j;
            }
            j += 1;
        }
        for o in &ops[from..j] {
            let bytes = &logs[o.stream as usize].arena[o.at.0..o.at.1];
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
    let mut report = RecoveryReport::default();
    let t0 = Instant::now();
    let logs: Vec<Log> = std::thread::scope(|sc| {
        let hs: Vec<_> = devices
            .iter()
            .enumerate()
            .map(|(s, d)| sc.spawn(move || scan(s, &**d, cfg)))
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(WalError::Config("silor: a scan thread panicked".into()))
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
    let cut = cfg.cut.as_ref();
    let void = |e: u64| voids.iter().any(|&(lo, hi)| lo < e && e <= hi);
    for (s, log) in logs.iter().enumerate() {
        for r in &log.recs {
            if Cut::covered(cut, s, r.lsn, r.flags) {
                report.covered += 1;
            } else if epoch_of(r.tid) <= durable && !void(epoch_of(r.tid)) {
                report.txns += 1;
            } else {
                report.skipped += 1;
            }
        }
    }
    let buckets = cfg.recovery_threads.max(1);
    let parts: Vec<Vec<Vec<Op>>> = std::thread::scope(|sc| {
        let hs: Vec<_> = logs
            .iter()
            .enumerate()
            .map(|(s, log)| {
                let live = move |r: &Rec| {
                    !Cut::covered(cut, s, r.lsn, r.flags)
                        && epoch_of(r.tid) <= durable
                        && !void(epoch_of(r.tid))
                };
                sc.spawn(move || partition(s, log, &live, buckets))
            })
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(WalError::Config(
                        "silor: a partition thread panicked".into(),
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()
    })?;
    let mut by_bucket: Vec<Vec<Op>> = (0..buckets).map(|_| Vec::new()).collect();
    for per_stream in parts {
        for (b, ops) in per_stream.into_iter().enumerate() {
            by_bucket[b].extend(ops);
        }
    }
    let t2 = Instant::now();
    let logs_ref = &logs;
    std::thread::scope(|sc| {
        let hs: Vec<_> = by_bucket
            .into_iter()
            .map(|ops| sc.spawn(move || apply(ops, logs_ref, replay)))
            .collect();
        hs.into_iter().try_for_each(|h| {
            h.join()
                .unwrap_or_else(|_| Err(WalError::Config("silor: a replay thread panicked".into())))
        })
    })?;
    let t3 = Instant::now();
    report.stages = vec![
        ("scan", (t1 - t0).as_secs_f64()),
        ("partition", (t2 - t1).as_secs_f64()),
        ("apply", (t3 - t2).as_secs_f64()),
    ];
    let mut ends = Vec::with_capacity(logs.len());
    for (s, log) in logs.into_iter().enumerate() {
        let end = log
            .end
            .ok_or_else(|| bad(s, 0, "the scanner stopped without an end"))?;
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
