//! Plover recovery (Taurus paper Sec. 5.2 on Plover: "Each Plover log file contains totally
//! ordered entries, sufficient to recover independently").
//!
//! 1. **Read** (one thread per log): a [`Scanner`] finds each log's valid prefix; every record
//!    is decoded (`record.rs`) and kept with its payload, except those the checkpoint
//!    recovery started from already holds. Sequence numbers must strictly increase along a
//!    log, and a transaction's records must agree on its number and record count and lie in
//!    distinct logs; anything else is an error naming the log and position (the log was not
//!    written by this scheme).
//! 2. **Cut** (`cut.rs`): keep a transaction only if all of its records are in the kept
//!    prefixes; each log is cut at its first incomplete transaction, to a fixpoint. Each log
//!    restarts at its cut.
//! 3. **Replay**: each log's kept records, in log order, on its own thread (`min(logs,
//!    recovery_threads)` threads, each replaying whole logs). Empty records (partitions a
//!    transaction only read) are not applied.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use super::cut::{Entry, cut};
use super::record::{self, Rec};
use crate::device::Device;
use crate::scan::{ScanEnd, Scanner};
use crate::scheme::cut::Cut;
use crate::scheme::{LogKind, RecoveryReport, Replay, SchemeConfig, replay_failed};
use crate::{Lsn, WalError};

/// The decoded valid prefix of one log.
struct Log {
    recs: Vec<Rec>,
    arena: Vec<u8>,
    end: ScanEnd,
    records: u64,
    bytes: u64,
    max_txn: u64,
    max_seq: u64,
    covered: u64,
}

/// What recovery did, and where each log restarts.
pub(super) struct Outcome {
    pub(super) ends: Vec<Lsn>,
    pub(super) report: RecoveryReport,
    /// The largest sequence number found in any log (new ones go above it).
    pub(super) max_seq: u64,
}

fn read_log(dev: &dyn Device, s: usize, cfg: &SchemeConfig, n: usize) -> Result<Log, WalError> {
    let mut sc = Scanner::new(dev, cfg.scan_mode);
    let mut log = Log {
        recs: Vec::new(),
        arena: Vec::new(),
        end: ScanEnd::clean(0),
        records: 0,
        bytes: 0,
        max_txn: 0,
        max_seq: 0,
        covered: 0,
    };
    let mut last: Option<u64> = None;
    while let Some(rec) = sc.next_record()? {
        log.records += 1;
        let h = rec.header;
        log.max_txn = log.max_txn.max(h.txn);
        let head = record::head(&rec, s, n)?;
        if last.is_some_and(|l| head.seq <= l) {
            return Err(WalError::Config(format!(
                "plover log {s}: the record of transaction {} at LSN {} has sequence number {} \
                 after {}: a log's sequence numbers must increase",
                h.txn,
                h.lsn,
                head.seq,
                last.unwrap_or(0)
            )));
        }
        last = Some(head.seq);
        log.max_seq = log.max_seq.max(head.seq);
        if Cut::covered(cfg.cut.as_ref(), s, h.lsn, h.flags) {
            log.covered += 1;
            continue;
        }
        let a = log.arena.len();
        log.arena.extend_from_slice(rec.payload);
        log.recs.push(Rec {
            start: h.lsn,
            txn: h.txn,
            head,
            payload: (a, log.arena.len()),
        });
    }
    log.bytes = sc.bytes_read();
    log.end = sc
        .end()
        .cloned()
        .ok_or_else(|| WalError::Config("scanner stopped without an end".into()))?;
    Ok(log)
}

/// Check that each transaction's records agree and lie in distinct logs; returns the number
/// of transactions.
fn check_txns(logs: &[Log]) -> Result<usize, WalError> {
    // Per transaction: (sequence number, records, logs seen as a mask).
    let mut seen: HashMap<u64, (u64, u32, u64)> = HashMap::new();
    for (s, log) in logs.iter().enumerate() {
        for r in &log.recs {
            let x = seen.entry(r.txn).or_insert((r.head.seq, r.head.parts, 0));
            let bad = if x.0 != r.head.seq || x.1 != r.head.parts {
                Some("disagrees with another record of it on its sequence number or record count")
            } else if x.2 & (1 << s) != 0 {
                Some("is its second record in this log")
            } else if (x.2 | (1 << s)).count_ones() > x.1 {
                Some("is one more record than it claims to have")
            } else {
                None
            };
            if let Some(what) = bad {
                return Err(WalError::Config(format!(
                    "plover log {s}: the record of transaction {} at LSN {} {what}; this log \
                     was not written by the plover scheme",
                    r.txn, r.start
                )));
            }
            x.2 |= 1 << s;
        }
    }
    Ok(seen.len())
}

fn replay_log(log: &Log, s: usize, keep: usize, replay: &dyn Replay) -> Result<(), WalError> {
    for r in &log.recs[..keep] {
        let (a, b) = r.payload;
        if a == b {
            continue;
        }
        replay
            .apply(r.txn, LogKind::Data, &log.arena[a..b])
            .map_err(|e| replay_failed(s as u32, r.start, r.txn, e))?;
    }
    Ok(())
}

/// Recover the devices through `replay` (steps 1-3 of the module doc).
pub(super) fn recover(
    cfg: &SchemeConfig,
    devices: &[Arc<dyn Device>],
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
) -> Result<Outcome, WalError> {
    let n = devices.len();
    let logs: Vec<Log> = std::thread::scope(|sc| {
        let hs: Vec<_> = devices
            .iter()
            .enumerate()
            .map(|(i, d)| sc.spawn(move || read_log(&**d, i, cfg, n)))
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(WalError::Config("a plover log reader panicked".into()))
                })
            })
            .collect::<Result<Vec<Log>, WalError>>()
    })?;
    for l in &logs {
        progress(l.bytes);
    }
    let found = check_txns(&logs)?;
    let entries: Vec<Vec<Entry>> = logs
        .iter()
        .map(|l| {
            l.recs
                .iter()
                .map(|r| Entry {
                    txn: r.txn,
                    parts: r.head.parts,
                })
                .collect()
        })
        .collect();
    let keep = cut(&entries);
    let mut report = RecoveryReport::default();
    let mut ends = Vec::with_capacity(n);
    let mut kept: std::collections::HashSet<u64> = std::collections::HashSet::new();
    let mut max_seq = 0;
    for (s, l) in logs.iter().enumerate() {
        let end = l.recs.get(keep[s]).map_or(l.end.end, |r| r.start);
        ends.push(end);
        report.records += l.records;
        report.bytes += l.bytes;
        report.max_txn = report.max_txn.max(l.max_txn);
        report.covered += l.covered;
        report.ends.push(ScanEnd {
            end,
            ..l.end.clone()
        });
        max_seq = max_seq.max(l.max_seq);
        kept.extend(l.recs[..keep[s]].iter().map(|r| r.txn));
    }
    report.txns = kept.len() as u64;
    report.skipped = (found - kept.len()) as u64;
    let threads = cfg.recovery_threads.clamp(1, n);
    let error: Mutex<Option<WalError>> = Mutex::new(None);
    std::thread::scope(|sc| {
        let (logs, keep, error) = (&logs, &keep, &error);
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                sc.spawn(move || {
                    for s in (t..n).step_by(threads) {
                        if error.lock().is_some() {
                            return;
                        }
                        if let Err(e) = replay_log(&logs[s], s, keep[s], replay) {
                            error.lock().get_or_insert(e);
                            return;
                        }
                    }
                })
            })
            .collect();
        for h in hs {
            if h.join().is_err() {
                error
                    .lock()
                    .get_or_insert(WalError::Config("a plover replay thread panicked".into()));
            }
        }
    });
    if let Some(e) = error.into_inner() {
        return Err(e);
    }
    Ok(Outcome {
        ends,
        report,
        max_seq,
    })
}
