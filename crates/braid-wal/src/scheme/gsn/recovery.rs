//! GSN recovery: the two-step parallel redo pipeline of Wang & Johnson 2014, Section 3.2
//! ("N scanners partition the log records by page into M buckets; M workers sort each bucket
//! by GSN and apply it").
//!
//! 1. **Scan** (N threads): each scanner reads whole logs and keeps their valid records (GSN,
//!    LSN, transaction, payload). A log is a chain of records found by reading it front to
//!    back, so one thread reads one log: at most `min(N, logs)` scanners read at once.
//! 2. **Plan** (one thread, cheap): decide the target GSN `B` (below) and which transactions
//!    committed.
//! 3. **Partition** (N threads): the records kept are cut into N chunks per log's share
//!    (`ceil(N / logs)` chunks of each log, so all N threads work even with fewer logs), and
//!    every redo operation of a committed transaction with GSN <= `B` goes to bucket
//!    `hash(page) mod M`.
//! 4. **Apply** (M threads, one bucket each): each bucket is gathered from the chunks, sorted
//!    by (GSN, log, LSN, operation index) and applied; consecutive operations of one record are
//!    handed to [`Replay::apply`] together as one redo payload. Operations on one page are thus
//!    applied in GSN order, which is the order their writers held the page in; pages in
//!    different buckets are independent.
//!
//! N and M are [`Threads`]: `GsnConfig::scan_threads` and `GsnConfig::apply_threads`, each
//! defaulting (0) to `SchemeConfig::recovery_threads`. Each stage is timed
//! ([`RecoveryReport::stages`]: `scan`, `plan`, `partition`, `apply`).
//!
//! # The target GSN
//!
//! * On persistent memory every record is durable when its insert returns, inserts into one log
//!   are serialised (no holes), and a transaction's writes become visible only after its
//!   records are inserted; so every complete transaction in the logs depends only on complete
//!   transactions in the logs and `B` is unbounded: nothing is cut.
//! * On files a record is durable only once its log is flushed, so a recovered transaction may
//!   depend on a lost record of another log. GSNs grow with LSNs within a log and a dependency
//!   always has a smaller GSN, so every record of log `s` with a GSN up to `M_s` (the largest
//!   GSN recovered from `s`) was recovered, and `B = min_s M_s` is safe: every record at or
//!   below it is present. The commit daemon acknowledges a commit only once every log holds a
//!   durable record at or above its GSN (writing a small clock record into a log that lags),
//!   so acknowledged commits are at or below `B`.
//! * Records above `B` stay in the logs; to keep them from being replayed by a later recovery
//!   (when `B` has moved past them while what they depended on is still lost), recovery writes
//!   a void marker `(B, base)` into every log before new transactions run, where `base` is
//!   above every GSN in the logs and new GSNs start at `base`. Later recoveries ignore records
//!   in any marker's open range and never take `B` below a marker's `B` (everything at or below
//!   it was present when the marker was written and still is).
//!
//! Records (all stamped with their GSN; LSN = stream position):
//! * `Redo` + COMMIT: a whole transaction in one log (transaction-level partitioning, or a
//!   page-partitioned transaction that touched one log).
//! * `Redo` without COMMIT: one log's part of a page-partitioned transaction.
//! * `Redo` without COMMIT: one log's part of a page-partitioned transaction, or one update
//!   record (per-update records, any partitioning).
//! * `Commit` + COMMIT, payload `u32` number of parts: the end of a page-partitioned
//!   transaction or of one with update records, in the committing worker's log (a record
//!   without a page; logs written by older versions have it in log 0: recovery looks in every
//!   log). It is committed only if all its parts are found with smaller GSNs (fewer means
//!   damage the scan did not flag; the transaction is skipped). A transaction without its
//!   commit record leaves no trace.
//! * `Command`, with or without COMMIT: as `Redo`, but the payload is a stored procedure's
//!   call (command logging, the autonomous scheme), after its replay floor when flagged
//!   (`deps.rs`). When the logs hold any, the live transactions are re-executed by M threads,
//!   each log in GSN order and a transaction once every other log is replayed up to its floor
//!   (`reexec.rs`), instead of steps 3 and 4; which ones live is decided as for redo.
//! * `Abort`: a transaction with update records aborted (a standby stops waiting for its
//!   commit record; recovery needs nothing from it but its GSN).
//! * `Checkpoint`, empty payload: a clock record; otherwise a void marker `lo, hi` and the
//!   recovery's per-log decisions above `lo` (`deps.rs`; 16 bytes without them).
//! * A `Commit` record's payload may go on with the commit's dependencies (autonomous
//!   commit's sparse vector, `deps.rs`); a whole transaction that has some is written as a
//!   `Redo` part and such a `Commit` record.
//!
//! # Remote Flush Avoidance
//!
//! With RFA (Haubenschild et al. 2020) a commit record may carry [`FLAG_LOCAL`]: it was
//! acknowledged once its own log was durable up to it, possibly above `B`. It depends only on
//! records of its own log before it and on records at or below the acknowledged GSN when it
//! committed (durable in every log then, so at or below `B`), and no earlier commit of its own
//! log was still waiting for a remote flush (`worker.rs`). So a local transaction found in a
//! log is replayed whatever its GSN, and so are its update records: everything it depends on
//! is replayed too (at or below `B`, or itself local), and GSN order still puts it after all
//! of that. A later recovery replays it although the void marker written after this one
//! covers it: the marker records what was replayed (`live.rs`, which also decides autonomous
//! commit's commits with dependency vectors above `B`).
//!
//! A checkpoint's cut ([`Cut`]) decides coverage by the record that commits: a `Redo` +
//! COMMIT record, or a `Commit` record, whose transaction's parts follow it. Parts are never
//! judged by their own position: an update record is written before its transaction's epoch
//! is known, so it may lie before the cut's start while its commit record lies after it. The
//! log is read from the cut's keep position (the first record of every transaction open at
//! its start), so the parts of a transaction the checkpoint does not hold are all read.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use parking_lot::Mutex;

use super::deps;
use super::live::{Liveness, Voids};
use super::pages::PageId;
use crate::device::Device;
use crate::payload::{RedoBuf, decode_redo};
use crate::record::{FLAG_COMMIT, Kind};
use crate::scan::{ScanEnd, ScanMode, Scanner, StreamSource};
use crate::scheme::cut::Cut;
use crate::scheme::{LogKind, RecoveryReport, Replay, replay_failed};
use crate::{Lsn, RecordProblem, WalError};

/// Record flag (a caller bit, see [`crate::record`]): a commit acknowledged by its own log's
/// flush under Remote Flush Avoidance (see the module doc).
pub(crate) const FLAG_LOCAL: u8 = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RecKind {
    Txn,
    Part,
    Commit(u32),
    /// A commit record of a transaction the checkpoint holds (its parts are not replayed).
    Covered,
    /// The transaction aborted.
    Abort,
    Clock,
    Marker(u64, u64),
}

pub(super) struct Rec {
    pub lsn: Lsn,
    pub txn: u64,
    pub gsn: u64,
    pub kind: RecKind,
    /// A commit (`Txn` or `Commit`) marked [`FLAG_LOCAL`].
    pub local: bool,
    /// (log, GSN) pairs (`deps.rs`): a commit record's dependencies, a void marker's
    /// decisions; `None` where the record has none.
    pub pairs: Option<Vec<(u16, u64)>>,
    /// A `Command` record (a stored procedure's call, re-executed: `reexec.rs`), not a redo.
    pub command: bool,
    /// A `Command` record's replay floor (`deps.rs`); `None` for any other record and for a
    /// command written without one.
    pub floor: Option<u64>,
    pub(super) payload: Vec<u8>,
}

pub(super) struct StreamScan {
    pub recs: Vec<Rec>,
    pub end: ScanEnd,
    pub bytes: u64,
    pub records: u64,
    pub max_txn: u64,
    /// Transactions the checkpoint already holds.
    pub covered: u64,
}

/// One redo operation placed in a bucket.
struct Entry {
    gsn: u64,
    stream: u32,
    lsn: Lsn,
    seq: u32,
    txn: u64,
    rec: usize,
    start: u32,
    end: u32,
}

/// The pipeline's thread counts (both at least 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Threads {
    /// N: scanners, then partitioners.
    pub scan: usize,
    /// M: buckets and the threads that sort and apply them.
    pub apply: usize,
}

impl Threads {
    /// N and M from the configuration: the gsn options, 0 meaning `recovery_threads`.
    pub(crate) fn of(cfg: &crate::scheme::SchemeConfig, gsn: &super::GsnConfig) -> Threads {
        let base = cfg.recovery_threads.max(1);
        let pick = |x: usize| if x == 0 { base } else { x };
        Threads {
            scan: pick(gsn.scan_threads),
            apply: pick(gsn.apply_threads),
        }
    }
}

/// What recovery decided.
pub(super) struct Recovered {
    pub report: RecoveryReport,
    /// Valid end of each log.
    pub ends: Vec<Lsn>,
    /// The target GSN used (`u64::MAX` when unbounded).
    pub bound: u64,
    /// Larger than every GSN in the logs: new GSNs start here.
    pub base: u64,
    /// For the void marker: each log's first commit above the bound that was not replayed.
    pub dead: Vec<(u16, u64)>,
}

fn bad(stream: usize, lsn: Lsn, problem: RecordProblem) -> WalError {
    WalError::WrongLog(crate::WrongLog::Record {
        scheme: "gsn",
        stream,
        txn: None,
        lsn,
        problem,
    })
}

fn scan_stream(
    src: &dyn StreamSource,
    s: usize,
    mode: ScanMode,
    cut: Option<&Cut>,
) -> Result<StreamScan, WalError> {
    let mut scanner = Scanner::new(src, mode);
    let mut recs = Vec::new();
    let (mut records, mut max_txn, mut covered) = (0u64, 0u64, 0u64);
    while let Some(r) = scanner.next_record()? {
        records += 1;
        let h = r.header;
        max_txn = max_txn.max(h.txn);
        let commits = h.flags & FLAG_COMMIT != 0;
        let mut pairs = None;
        let kind = match h.kind {
            Kind::Redo | Kind::Command if commits => RecKind::Txn,
            Kind::Redo | Kind::Command => RecKind::Part,
            Kind::Commit => {
                if r.payload.len() < 4 {
                    return Err(bad(s, h.lsn, RecordProblem::NoPartCount));
                }
                let (k, deps) = deps::decode_commit(r.payload)
                    .map_err(|_| bad(s, h.lsn, RecordProblem::Bookkeeping))?;
                pairs = deps;
                RecKind::Commit(k)
            }
            Kind::Checkpoint if r.payload.is_empty() => RecKind::Clock,
            Kind::Checkpoint => {
                let m = deps::decode_marker(r.payload)
                    .map_err(|_| bad(s, h.lsn, RecordProblem::Bookkeeping))?;
                pairs = m.dead;
                RecKind::Marker(m.lo, m.hi)
            }
            Kind::Abort => RecKind::Abort,
            Kind::Pad => continue,
            k => {
                return Err(bad(s, h.lsn, RecordProblem::Kind(k.into())));
            }
        };
        let gsn = r
            .stamp
            .gsn()
            .ok_or_else(|| bad(s, h.lsn, RecordProblem::NoStamp("GSN")))?;
        // Coverage by the checkpoint recovery started from is decided by the record that
        // commits (see the module doc); a covered one counts only for its GSN (the bound).
        let kind = match kind {
            RecKind::Txn if Cut::covered(cut, s, h.lsn, h.flags) => {
                covered += 1;
                RecKind::Clock
            }
            RecKind::Commit(_) if Cut::covered(cut, s, h.lsn, h.flags) => {
                covered += 1;
                RecKind::Covered
            }
            k => k,
        };
        let (floor, payload) = match kind {
            RecKind::Txn | RecKind::Part if h.kind == Kind::Command => {
                let (floor, call) = deps::decode_floor(h.flags & deps::FLAG_FLOOR != 0, r.payload)
                    .map_err(|_| bad(s, h.lsn, RecordProblem::Bookkeeping))?;
                (floor, call.to_vec())
            }
            RecKind::Txn | RecKind::Part => (None, r.payload.to_vec()),
            _ => (None, Vec::new()),
        };
        let local = matches!(kind, RecKind::Txn | RecKind::Commit(_)) && h.flags & FLAG_LOCAL != 0;
        recs.push(Rec {
            lsn: h.lsn,
            txn: h.txn,
            gsn,
            kind,
            local,
            pairs,
            command: h.kind == Kind::Command,
            floor,
            payload,
        });
    }
    let bytes = scanner.bytes_read();
    let end = scanner
        .end()
        .cloned()
        .ok_or_else(|| WalError::Internal(crate::Invariant::ScanWithoutEnd))?;
    Ok(StreamScan {
        recs,
        end,
        bytes,
        records,
        max_txn,
        covered,
    })
}

/// Step 1: scan the logs `srcs` with up to `scanners` threads, counting what was read in
/// `report` (with the `scan` stage).
pub(super) fn scan(
    srcs: &[&(dyn StreamSource + Sync)],
    scanners: usize,
    mode: ScanMode,
    cut: Option<&Cut>,
    report: &mut RecoveryReport,
) -> Result<Vec<StreamScan>, WalError> {
    let t = Instant::now();
    let scans = par(srcs.len(), scanners, &|s| {
        scan_stream(srcs[s], s, mode, cut)
    })?;
    for sc in &scans {
        report.records += sc.records;
        report.bytes += sc.bytes;
        report.max_txn = report.max_txn.max(sc.max_txn);
        report.covered += sc.covered;
        report.ends.push(sc.end.clone());
    }
    report.stages.push(("scan", t.elapsed().as_secs_f64()));
    Ok(scans)
}

/// Run `f(i)` for `i` in `0..n` on up to `threads` scoped threads; first error wins.
fn par<T: Send>(
    n: usize,
    threads: usize,
    f: &(dyn Fn(usize) -> Result<T, WalError> + Sync),
) -> Result<Vec<T>, WalError> {
    let threads = threads.clamp(1, n.max(1));
    if threads == 1 {
        return (0..n).map(f).collect();
    }
    let out: Vec<Mutex<Option<Result<T, WalError>>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let failed = AtomicBool::new(false);
    std::thread::scope(|sc| {
        for t in 0..threads {
            let (out, failed) = (&out, &failed);
            sc.spawn(move || {
                for i in (t..n).step_by(threads) {
                    if failed.load(Ordering::Relaxed) {
                        return;
                    }
                    let r = f(i);
                    if r.is_err() {
                        failed.store(true, Ordering::Relaxed);
                    }
                    *out[i].lock() = Some(r);
                }
            });
        }
    });
    let mut res = Vec::with_capacity(n);
    let mut first_err = None;
    for slot in out {
        match slot.into_inner() {
            Some(Ok(v)) => res.push(v),
            Some(Err(e)) => {
                first_err.get_or_insert(e);
            }
            None => {}
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(res),
    }
}

/// Recover the logs on `devices` through `replay` with N = `threads.scan` scanners and M =
/// `threads.apply` appliers.
#[allow(clippy::too_many_arguments)]
pub(super) fn recover(
    devices: &[Arc<dyn Device>],
    unbounded: bool,
    rows_per_page: u64,
    threads: Threads,
    mode: ScanMode,
    cut: Option<&Cut>,
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
) -> Result<Recovered, WalError> {
    let scanners = threads.scan.max(1);
    let m = threads.apply.max(1);
    let mut report = RecoveryReport::default();
    // 1. Scan.
    let srcs: Vec<&(dyn StreamSource + Sync)> = devices.iter().map(|d| &**d as _).collect();
    let scans = scan(&srcs, scanners, mode, cut, &mut report)?;
    progress(report.bytes);

    // 2. The bound and the committed set (`live.rs`).
    let t = Instant::now();
    let mut voids = Voids::default();
    voids.read(&scans);
    let mut max_gsn = cut.map_or(0, |c| c.marks.iter().copied().max().unwrap_or(0));
    for sc in &scans {
        for r in &sc.recs {
            max_gsn = max_gsn.max(r.gsn);
        }
    }
    // Per log: the largest GSN up to which it is present. A log truncated after a checkpoint
    // still proved durable up to the GSN clock noted with the cut (every record up to it was
    // before the cut's end).
    let tops: Vec<u64> = scans
        .iter()
        .enumerate()
        .map(|(s, sc)| {
            let floor = cut.and_then(|c| c.marks.get(s).copied()).unwrap_or(0);
            top(sc, &voids, floor)
        })
        .collect();
    let bound = if unbounded {
        u64::MAX
    } else {
        tops.iter().copied().min().unwrap_or(0).max(voids.floor())
    };
    let mut parts: HashMap<u64, u32> = HashMap::new();
    for sc in &scans {
        for r in sc.recs.iter().filter(|r| r.kind == RecKind::Part) {
            *parts.entry(r.txn).or_default() += 1;
        }
    }
    let live = Liveness::decide(&scans, bound, &tops, voids, &parts);
    let mut committed_parts: HashMap<u64, u64> = HashMap::new(); // txn -> commit GSN
    let mut all_part_txns: std::collections::HashSet<u64> = Default::default();
    // Covered by the checkpoint or aborted: their parts are not replayed, nor skipped.
    let mut closed: std::collections::HashSet<u64> = Default::default();
    for (s, sc) in scans.iter().enumerate() {
        for r in &sc.recs {
            match r.kind {
                RecKind::Txn if live.commit(s, r.gsn, r.local) => report.txns += 1,
                RecKind::Txn => report.skipped += 1,
                RecKind::Commit(k)
                    if live.commit(s, r.gsn, r.local)
                        && parts.get(&r.txn).copied().unwrap_or(0) == k =>
                {
                    committed_parts.insert(r.txn, r.gsn);
                    report.txns += 1;
                }
                RecKind::Part => {
                    all_part_txns.insert(r.txn);
                }
                RecKind::Covered | RecKind::Abort => {
                    closed.insert(r.txn);
                }
                _ => {}
            }
        }
    }
    report.skipped += all_part_txns
        .iter()
        .filter(|t| !committed_parts.contains_key(t) && !closed.contains(t))
        .count() as u64;
    report.stages.push(("plan", t.elapsed().as_secs_f64()));

    // A part goes with its commit record.
    let take = |s: usize, r: &Rec| match r.kind {
        RecKind::Txn => live.commit(s, r.gsn, r.local),
        RecKind::Part => committed_parts.get(&r.txn).is_some_and(|&c| r.gsn < c),
        _ => false,
    };
    if scans.iter().any(|sc| sc.recs.iter().any(|r| r.command)) {
        // Command logging: re-execute in GSN order.
        super::reexec::reexecute(&scans, &take, &committed_parts, m, replay, &mut report)?;
    } else {
        redo(
            &scans,
            &take,
            rows_per_page,
            scanners,
            m,
            replay,
            &mut report,
        )?;
    }

    let ends = scans.iter().map(|s| s.end.end).collect();
    let dead = live.decisions();
    Ok(Recovered {
        report,
        ends,
        bound,
        base: max_gsn + 1,
        dead,
    })
}

/// Steps 3 and 4 of the pipeline for the records `take` selects (given a record's log): cut
/// the logs' records into chunks for `scanners` threads, partition their redo operations by
/// page into `m` buckets, then sort each bucket by (GSN, log, LSN, operation) and apply it.
/// Adds the `partition` and `apply` stages to `report`.
pub(super) fn redo(
    scans: &[StreamScan],
    take: &(dyn Fn(usize, &Rec) -> bool + Sync),
    rows_per_page: u64,
    scanners: usize,
    m: usize,
    replay: &dyn Replay,
    report: &mut RecoveryReport,
) -> Result<(), WalError> {
    let n = scans.len();
    // 3. Partition by page into M buckets: N threads over chunks of the logs' records.
    let t = Instant::now();
    let per_log = scanners.div_ceil(n.max(1)).max(1);
    let mut chunks: Vec<(usize, std::ops::Range<usize>)> = Vec::new();
    for (s, sc) in scans.iter().enumerate() {
        let len = sc.recs.len();
        let step = len.div_ceil(per_log).max(1);
        let mut at = 0;
        while at < len {
            chunks.push((s, at..(at + step).min(len)));
            at += step;
        }
    }
    let rpp = rows_per_page.max(1);
    let bucketed = par(chunks.len(), scanners, &|c| -> Result<
        Vec<Vec<Entry>>,
        WalError,
    > {
        let (s, range) = &chunks[c];
        let s = *s;
        let mut buckets: Vec<Vec<Entry>> = (0..m).map(|_| Vec::new()).collect();
        for ri in range.clone() {
            let r = &scans[s].recs[ri];
            if !take(s, r) {
                continue;
            }
            let mut it = decode_redo(&r.payload);
            let mut seq = 0u32;
            loop {
                let start = it.offset();
                let Some(op) = it.next() else { break };
                let op = op.map_err(|e| bad(s, r.lsn, RecordProblem::Payload(e)))?;
                let end = it.offset();
                let page = PageId::of(op.table(), op.key(), rpp);
                buckets[(page.hash() % m as u64) as usize].push(Entry {
                    gsn: r.gsn,
                    stream: s as u32,
                    lsn: r.lsn,
                    seq,
                    txn: r.txn,
                    rec: ri,
                    start: start as u32,
                    end: end as u32,
                });
                seq += 1;
            }
        }
        Ok(buckets)
    })?;
    // Hand each bucket's pieces to its applier (moves vectors, copies no entries).
    let mut pieces: Vec<Vec<Vec<Entry>>> = (0..m).map(|_| Vec::new()).collect();
    for per_chunk in bucketed {
        for (b, v) in per_chunk.into_iter().enumerate() {
            if !v.is_empty() {
                pieces[b].push(v);
            }
        }
    }
    report.stages.push(("partition", t.elapsed().as_secs_f64()));

    // 4. Gather, sort each bucket by GSN and apply.
    let t = Instant::now();
    let pieces: Vec<Mutex<Vec<Vec<Entry>>>> = pieces.into_iter().map(Mutex::new).collect();
    par(m, m, &|b| -> Result<(), WalError> {
        let parts = std::mem::take(&mut *pieces[b].lock());
        let mut v: Vec<Entry> = Vec::with_capacity(parts.iter().map(Vec::len).sum());
        for mut p in parts {
            v.append(&mut p);
        }
        v.sort_unstable_by_key(|e| (e.gsn, e.stream, e.lsn, e.seq));
        let mut buf = RedoBuf::default();
        let mut i = 0;
        while i < v.len() {
            let (stream, lsn, txn) = (v[i].stream, v[i].lsn, v[i].txn);
            buf.clear();
            while i < v.len() && v[i].stream == stream && v[i].lsn == lsn {
                let e = &v[i];
                let payload = &scans[e.stream as usize].recs[e.rec].payload;
                buf.bytes
                    .extend_from_slice(&payload[e.start as usize..e.end as usize]);
                i += 1;
            }
            replay
                .apply(txn, LogKind::Data, &buf.bytes)
                .map_err(|e| replay_failed(stream, lsn, txn, e))?;
        }
        Ok(())
    })?;
    report.stages.push(("apply", t.elapsed().as_secs_f64()));
    Ok(())
}

/// The largest GSN log `sc` holds outside every void marker's range, at least `floor`: up to
/// where the log is present (recovery's and the standby's bound are the least of these).
pub(super) fn top(sc: &StreamScan, voids: &Voids, floor: u64) -> u64 {
    sc.recs
        .iter()
        .filter(|r| !voids.void(r.gsn))
        .map(|r| r.gsn)
        .max()
        .unwrap_or(0)
        .max(floor)
}
