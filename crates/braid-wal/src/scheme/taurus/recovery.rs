//! Taurus recovery (Alg. 3-4): per-stream readers, the cut of what committed (ELV), and replay
//! by pools in LV order, in parallel or serially.
//!
//! 1. **Read** (Alg. 3, one thread per stream): a [`Scanner`] finds each stream's valid prefix;
//!    every transaction record is decoded with its LV (sparse stamps are decompressed against
//!    the latest `Anchor` seen before them in the same stream, Alg. 5 `Decompress`) and kept in
//!    memory with its payload.
//! 2. **Cut**: `ELV[i]` starts as stream `i`'s valid end. Each stream is cut before its first
//!    record whose LV is not `<= ELV` (Alg. 3 line 1: "T and transactions after it are
//!    ignored"), which lowers `ELV[i]` to that record's start; the cut is repeated until nothing
//!    changes, because a cut in one stream can uncover a record of another. The result is the
//!    greatest closed vector below the valid ends, which contains every acknowledged
//!    transaction (see `commit.rs`). The streams then restart at the cut (`Stream::start`
//!    resets the device tail there), so the records dropped can never be resurrected by a later
//!    recovery that finds the streams they depended on grown again.
//! 3. **Replay** (Alg. 4): record `T` of stream `i` may run once `T.LV <= RLV`, where `RLV[j]`
//!    is the start of the first record of stream `j` not yet replayed (everything ending before
//!    it is done; Alg. 4 lines 4-7). `RLV` is derived from a per-stream `head` index that
//!    workers advance lock-free (compare-and-swap over `done` flags) after each replay
//!    ([`super::pools`], model-checked in `tests/loom_taurus.rs`). Each
//!    of `recovery_threads` workers looks, from the heads of the pools (one pool per stream,
//!    its records in log order), for a ready record no one claimed, within a window of
//!    [`WINDOW`] records, claims it with a swap, and replays it through [`Replay::apply`]: redo
//!    images for data logging, re-execution for command logging.
//! 4. **Serial fallback** (Section 3.5): one thread visits the pools in turn and replays, from
//!    each, records while they are ready; no waiting between dependent transactions. Chosen by
//!    `SchemeConfig::recovery_plan` or, on `Auto`, when there is one recovery thread or the
//!    log's parallelism is low: the planner replays (without applying) the first
//!    [`SAMPLE`] records in the serial order to measure the longest dependency chain `D` (with
//!    the same prefix semantics as `RLV`), and picks serial when `records / D` is below
//!    [`MIN_PARALLELISM`].
//!
//! Choices where the paper is vague: the log is read completely before replay starts (the
//! cut needs every stream's end, and an LV names positions, not transactions), so recovery
//! holds the valid log in memory; a record without an LV stamp or with more entries than
//! there are streams is an error (it was not written by this scheme with this stream count).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use parking_lot::Mutex;

use super::commit::backoff;
use super::pools::Pools;
use crate::device::Device;
use crate::lv::{self, MAX_STREAMS};
use crate::record::{Kind, StampKind};
use crate::scan::{ScanEnd, Scanner};
use crate::scheme::{LogKind, RecoveryPlan, RecoveryReport, Replay, SchemeConfig, replay_failed};
use crate::{Lsn, WalError};

/// How far past a pool's head a worker looks for a ready record.
pub const WINDOW: usize = 256;
/// Records the auto planner simulates.
pub const SAMPLE: usize = 1 << 16;
/// Below this expected parallelism (records per link of the longest chain) `Auto` replays
/// serially.
pub const MIN_PARALLELISM: f64 = 4.0;
/// Idle looks (with back-off, about 0.2 s in all) after which a parallel replay in which
/// nobody is replaying and nothing is ready gives up.
const STUCK_ROUNDS: usize = 1000;

/// One transaction record.
struct Rec {
    start: Lsn,
    end: Lsn,
    txn: u64,
    kind: LogKind,
    payload: (usize, usize),
}

/// The decoded valid prefix of one stream.
struct Log {
    recs: Vec<Rec>,
    /// `n` entries per record.
    lvs: Vec<u64>,
    arena: Vec<u8>,
    end: ScanEnd,
    records: u64,
    bytes: u64,
    max_txn: u64,
    /// Transaction records the checkpoint already holds.
    covered: u64,
}

impl Log {
    #[inline]
    fn lv(&self, k: usize, n: usize) -> &[u64] {
        &self.lvs[k * n..(k + 1) * n]
    }
    #[inline]
    fn payload(&self, k: usize) -> &[u8] {
        let (a, b) = self.recs[k].payload;
        &self.arena[a..b]
    }
}

/// What recovery did, and where each stream restarts.
pub(crate) struct Outcome {
    pub(crate) ends: Vec<Lsn>,
    pub(crate) report: RecoveryReport,
    pub(crate) plan: RecoveryPlan,
}

fn read_stream(dev: &dyn Device, id: usize, cfg: &SchemeConfig, n: usize) -> Result<Log, WalError> {
    let mut sc = Scanner::new(dev, cfg.scan_mode);
    let mut log = Log {
        recs: Vec::new(),
        lvs: Vec::new(),
        arena: Vec::new(),
        end: ScanEnd::clean(0),
        records: 0,
        bytes: 0,
        max_txn: 0,
        covered: 0,
    };
    let mut lplv = [0u64; MAX_STREAMS];
    let mut tmp = [0u64; MAX_STREAMS];
    while let Some(rec) = sc.next_record()? {
        log.records += 1;
        let h = rec.header;
        log.max_txn = log.max_txn.max(h.txn);
        let kind = match h.kind {
            Kind::Anchor => {
                if rec.stamp.lv_into(&mut tmp[..n]) > n {
                    return Err(too_wide(id, h.lsn, n));
                }
                lv::max_into(&mut lplv[..n], &tmp[..n]);
                continue;
            }
            Kind::Redo if rec.commits() => LogKind::Data,
            Kind::Command if rec.commits() => LogKind::Command,
            _ => continue,
        };
        if crate::scheme::cut::Cut::covered(cfg.cut.as_ref(), id, h.lsn, h.flags) {
            // In the checkpoint recovery started from: already replayed, as far as RLV and
            // the cut are concerned.
            log.covered += 1;
            continue;
        }
        let lv_len = rec.stamp.lv_into(&mut tmp[..n]);
        if lv_len > n {
            return Err(too_wide(id, h.lsn, n));
        }
        match rec.stamp.kind() {
            StampKind::Lv => {}
            StampKind::LvSparse => lv::max_into(&mut tmp[..n], &lplv[..n]),
            StampKind::None | StampKind::Gsn => {
                return Err(WalError::Config(format!(
                    "stream {id}: the record of transaction {} at LSN {} has no LSN-vector stamp: \
                     this log was not written by the taurus scheme",
                    h.txn, h.lsn
                )));
            }
        }
        let a = log.arena.len();
        log.arena.extend_from_slice(rec.payload);
        log.lvs.extend_from_slice(&tmp[..n]);
        log.recs.push(Rec {
            start: h.lsn,
            end: rec.end(),
            txn: h.txn,
            kind,
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

fn too_wide(id: usize, lsn: Lsn, n: usize) -> WalError {
    WalError::Config(format!(
        "stream {id}: the record at LSN {lsn} has an LSN vector wider than the {n} streams of this \
         database; reopen it with the stream count it was written with"
    ))
}

/// Cut every stream before its first record not covered, to a fixpoint. Returns the number of
/// records kept per stream and the cut vector.
fn cut(logs: &[Log], n: usize) -> (Vec<usize>, Vec<Lsn>) {
    let mut keep: Vec<usize> = logs.iter().map(|l| l.recs.len()).collect();
    let mut e: Vec<Lsn> = logs.iter().map(|l| l.end.end).collect();
    loop {
        let mut changed = false;
        for (s, log) in logs.iter().enumerate() {
            if let Some(k) = (0..keep[s]).find(|&k| !lv::le(log.lv(k, n), &e)) {
                keep[s] = k;
                e[s] = log.recs[k].start;
                changed = true;
            }
        }
        if !changed {
            return (keep, e);
        }
    }
}

/// `RLV[j]` of a pool whose first unreplayed record is `head`.
#[inline]
fn rlv_at(log: &Log, keep: usize, head: usize, end: Lsn) -> Lsn {
    if head >= keep {
        end
    } else {
        log.recs[head].start
    }
}

/// Visit the records in the serial order (pools in turn, each while ready), calling `visit`
/// for each; stops after `limit` records. Fails if no record is ready while some remain
/// (a dependency cycle: the log is not one this scheme wrote).
fn serial_order(
    logs: &[Log],
    keep: &[usize],
    e: &[Lsn],
    n: usize,
    limit: usize,
    mut visit: impl FnMut(usize, usize, &[usize]) -> Result<(), WalError>,
) -> Result<usize, WalError> {
    let mut cur = vec![0usize; n];
    let total: usize = keep.iter().sum();
    let mut done = 0usize;
    let mut rlv = [0u64; MAX_STREAMS];
    while done < total.min(limit) {
        let mut progress = false;
        for s in 0..n {
            loop {
                if cur[s] >= keep[s] || done >= limit {
                    break;
                }
                for j in 0..n {
                    rlv[j] = rlv_at(&logs[j], keep[j], cur[j], e[j]);
                }
                if !lv::le(logs[s].lv(cur[s], n), &rlv[..n]) {
                    break;
                }
                visit(s, cur[s], &cur)?;
                cur[s] += 1;
                done += 1;
                progress = true;
            }
        }
        if !progress {
            return Err(cycle_error());
        }
    }
    Ok(done)
}

fn cycle_error() -> WalError {
    WalError::Config(
        "taurus recovery: no transaction is ready although some remain (a dependency cycle in \
         the LSN vectors): the log is damaged"
            .into(),
    )
}

/// Records per link of the longest dependency chain, over the first [`SAMPLE`] records.
fn parallelism(logs: &[Log], keep: &[usize], e: &[Lsn], n: usize) -> Result<f64, WalError> {
    // Prefix maximum of the chain depth, per pool, over the records visited so far.
    let mut pd: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut deepest = 0u32;
    let visited = serial_order(logs, keep, e, n, SAMPLE, |s, k, cur| {
        let lv = logs[s].lv(k, n);
        let mut d = 0u32;
        for j in 0..n {
            // The records of pool j ending at or before lv[j] (all visited: lv <= RLV).
            let recs = &logs[j].recs[..cur[j]];
            let m = recs.partition_point(|r| r.end <= lv[j]);
            if m > 0 {
                d = d.max(pd[j][m - 1]);
            }
        }
        let d = d + 1;
        deepest = deepest.max(d);
        let prev = pd[s].last().copied().unwrap_or(0);
        pd[s].push(prev.max(d));
        Ok(())
    })?;
    Ok(if deepest == 0 {
        f64::INFINITY
    } else {
        visited as f64 / deepest as f64
    })
}

fn apply(logs: &[Log], s: usize, k: usize, replay: &dyn Replay) -> Result<(), WalError> {
    let r = &logs[s].recs[k];
    replay
        .apply(r.txn, r.kind, logs[s].payload(k))
        .map_err(|e| replay_failed(s as u32, r.start, r.txn, e))
}

fn replay_parallel(
    logs: &[Log],
    keep: &[usize],
    e: &[Lsn],
    n: usize,
    threads: usize,
    replay: &dyn Replay,
) -> Result<(), WalError> {
    let pools = Pools::new(keep);
    let total: usize = keep.iter().sum();
    let finished = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let error: Mutex<Option<WalError>> = Mutex::new(None);
    // Workers replaying right now: with none, nothing ready and nothing finishing for
    // STUCK_ROUNDS looks, the remaining records wait for each other (a damaged log).
    let active = AtomicUsize::new(0);
    let work = |w: usize| {
        let mut step = 0u32;
        let mut idle = (0usize, usize::MAX);
        let mut rlv = [0u64; MAX_STREAMS];
        while finished.load(Ordering::Acquire) < total && !failed.load(Ordering::Relaxed) {
            for j in 0..n {
                rlv[j] = rlv_at(&logs[j], keep[j], pools.head(j), e[j]);
            }
            let found =
                pools.claim_ready(w % n, WINDOW, |s, k| lv::le(logs[s].lv(k, n), &rlv[..n]));
            let Some((s, k)) = found else {
                replay.replay_idle();
                let f = finished.load(Ordering::Acquire);
                if active.load(Ordering::Acquire) == 0 && f == idle.1 {
                    idle.0 += 1;
                    if idle.0 > STUCK_ROUNDS {
                        error.lock().get_or_insert_with(cycle_error);
                        failed.store(true, Ordering::Relaxed);
                        return;
                    }
                } else {
                    idle = (0, f);
                }
                backoff(&mut step);
                continue;
            };
            step = 0;
            idle = (0, usize::MAX);
            active.fetch_add(1, Ordering::AcqRel);
            let r = apply(logs, s, k, replay);
            if let Err(err) = r {
                active.fetch_sub(1, Ordering::AcqRel);
                error.lock().get_or_insert(err);
                failed.store(true, Ordering::Relaxed);
                return;
            }
            pools.finish(s, k);
            finished.fetch_add(1, Ordering::AcqRel);
            active.fetch_sub(1, Ordering::AcqRel);
        }
    };
    std::thread::scope(|sc| {
        let work = &work;
        let hs: Vec<_> = (1..threads).map(|w| sc.spawn(move || work(w))).collect();
        work(0);
        for h in hs {
            if h.join().is_err() {
                failed.store(true, Ordering::Relaxed);
                error
                    .lock()
                    .get_or_insert(WalError::Config("a taurus recovery worker panicked".into()));
            }
        }
    });
    match error.into_inner() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Recover the devices through `replay` (steps 1-4 of the module docs).
pub(crate) fn recover(
    cfg: &SchemeConfig,
    devices: &[Arc<dyn Device>],
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
    forced: RecoveryPlan,
) -> Result<Outcome, WalError> {
    let n = devices.len();
    let logs: Vec<Log> = std::thread::scope(|sc| {
        let hs: Vec<_> = devices
            .iter()
            .enumerate()
            .map(|(i, d)| sc.spawn(move || read_stream(&**d, i, cfg, n)))
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(WalError::Config("a taurus log reader panicked".into()))
                })
            })
            .collect::<Result<Vec<Log>, WalError>>()
    })?;
    for l in &logs {
        progress(l.bytes);
    }
    let (keep, e) = cut(&logs, n);
    let mut report = RecoveryReport::default();
    for (s, l) in logs.iter().enumerate() {
        report.records += l.records;
        report.bytes += l.bytes;
        report.max_txn = report.max_txn.max(l.max_txn);
        report.covered += l.covered;
        report.skipped += (l.recs.len() - keep[s]) as u64;
        report.ends.push(ScanEnd {
            end: e[s],
            ..l.end.clone()
        });
    }
    let total: usize = keep.iter().sum();
    let threads = cfg.recovery_threads.max(1);
    let plan = match forced {
        RecoveryPlan::Auto if threads == 1 || total == 0 => RecoveryPlan::Serial,
        RecoveryPlan::Auto => {
            if parallelism(&logs, &keep, &e, n)? < MIN_PARALLELISM {
                RecoveryPlan::Serial
            } else {
                RecoveryPlan::Parallel
            }
        }
        p => p,
    };
    match plan {
        RecoveryPlan::Parallel if threads > 1 => {
            replay_parallel(&logs, &keep, &e, n, threads, replay)?
        }
        _ => {
            serial_order(&logs, &keep, &e, n, usize::MAX, |s, k, _| {
                apply(&logs, s, k, replay)
            })?;
        }
    }
    report.txns = total as u64;
    Ok(Outcome {
        ends: e,
        report,
        plan,
    })
}
