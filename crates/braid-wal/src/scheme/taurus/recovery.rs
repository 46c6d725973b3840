//! Taurus recovery (Alg. 3-4), pipelined: per-stream readers, the cut of what committed
//! (ELV), and replay by pools in LV order, in parallel or serially, with replay starting
//! while the streams are still being read.
//!
//! 1. **Read** (Alg. 3, one thread per stream): a [`Scanner`] finds each stream's valid prefix;
//!    every transaction record is decoded with its LV (sparse stamps are decompressed against
//!    the latest `Anchor` seen before them in the same stream, Alg. 5 `Decompress`) and kept in
//!    memory with its payload. Readers publish their records in batches (`feed.rs`) with
//!    their read frontier `F[j]`: the end of the last record decoded (the valid end once the
//!    stream is read).
//! 2. **Cut**: `ELV[i]` starts as stream `i`'s valid end. Each stream is cut before its first
//!    record whose LV is not `<= ELV` (Alg. 3 line 1: "T and transactions after it are
//!    ignored"), which lowers `ELV[i]` to that record's start; the cut is repeated until nothing
//!    changes, because a cut in one stream can uncover a record of another. The result is the
//!    greatest closed vector below the valid ends (closed: every record below it has its LV
//!    below it), which contains every acknowledged transaction (see `commit.rs`). The streams
//!    then restart at the cut (`Stream::start` resets the device tail there), so the records
//!    dropped can never be resurrected by a later recovery that finds the streams they
//!    depended on grown again.
//! 3. **Admission while reading**: every publication computes `C`, the greatest closed vector
//!    `<= F`, the same way with `F` in place of the valid ends. Records below `C` may be
//!    replayed before reading ends: `C` is closed and `C <= F <= valid ends`, and the
//!    componentwise maximum of two closed vectors is closed, so `max(C, ELV)` is a closed
//!    vector below the valid ends, hence `<= ELV` (the greatest): `C <= ELV`, and every
//!    record below `C[i]` is in the final cut. `C` only grows as `F` grows (the old `C` is a
//!    closed vector below the new `F`). Records past `C` may still be dropped by the final
//!    cut and are never applied before it is known; once every reader is done, `F` is the
//!    valid ends and `C` is the final ELV.
//! 4. **Replay** (Alg. 4): an admitted record `T` of stream `i` may run once `T.LV <= RLV`,
//!    where `RLV[j]` is the start of the first record of stream `j` not yet replayed, or
//!    `C[j]` once every admitted record of `j` is (those are exactly the records below
//!    `C[j]`, and `T.LV <= C`); Alg. 4 lines 4-7. `RLV` is derived from a per-stream `head`
//!    index that workers advance lock-free (compare-and-swap over `done` flags) after each
//!    replay ([`super::pools`], model-checked in `tests/loom_taurus.rs`). Each of
//!    `recovery_threads` workers looks, from the heads of the pools (one pool per stream, its
//!    records in log order), for a ready admitted record no one claimed, within a window of
//!    [`WINDOW`] records, claims it with a swap, and replays it through [`Replay::apply`]:
//!    redo images for data logging, re-execution for command logging. While the streams are
//!    read, only as many workers run as there are cores the readers leave (at least one):
//!    readers and workers share the cores, and a worker waiting on a preempted one would only
//!    burn the time the readers need; the others start on the final cut. A worker that finds
//!    nothing ready backs off, and parks on the feed's condition variable (for at most a
//!    millisecond at a time) when no one is replaying and the readers have not published
//!    since.
//! 5. **Serial fallback** (Section 3.5): one thread visits the pools in turn and replays,
//!    from each, admitted records while they are ready, parking when nothing admitted is
//!    ready until the next publication. Chosen by `SchemeConfig::recovery_plan` or, on
//!    `Auto`, when there is one recovery thread or the log's parallelism is low: the planner
//!    waits until [`SAMPLE`] records are admitted (or the log is read), replays (without
//!    applying) the first [`SAMPLE`] admitted records in the serial order to measure the
//!    longest dependency chain `D` (with the same prefix semantics as `RLV`), and picks
//!    serial when `records / D` is below [`MIN_PARALLELISM`]. A log of fewer records is
//!    planned on its final cut, as before pipelining; a longer one on the admitted prefix,
//!    whose serial order can differ from the final cut's only where a pool runs past `C`.
//!
//! 6. **One data log, several threads** (`single.rs`): on `Auto` with one stream, data
//!    logging and more than one recovery thread, every thread reads the stream and applies
//!    its share of the keys in stream order instead, which on one log is the same recovery
//!    without the pools' bookkeeping (`single.rs` says why).
//! 7. **Several data logs, several threads** (`walk.rs`, `RecoveryPlan::Shares`, asked for by
//!    name): every thread walks every stream in the serial order of step 5, applying its share
//!    of the keys, and stops at the cut of step 2 without holding the log. `Auto` keeps the
//!    planner of step 5 for several streams (the Taurus figures measure it).
//!
//! Errors: a reader that fails (corruption in the middle of a stream in strict mode, a record
//! this scheme cannot have written) stops replay at once, and nothing past the damage was
//! ever published, so nothing past it is applied; recovery then returns the error of the
//! first failed stream (by stream number), as when the log was read before replay. A replay
//! error is returned only when every reader succeeded. Nothing applied is outside the final
//! cut, since only records below `C <= ELV` are ever admitted.
//!
//! [`RecoveryReport::stages`] holds, in seconds from the start of recovery, when the first
//! record was applied (`first apply`), when the last stream was read (`read`) and when replay
//! ended (`replay`).
//!
//! Choices where the paper is vague: recovery holds the valid log in memory (the cut needs
//! every stream's end, and an LV names positions, not transactions); a record without an LV
//! stamp or with more entries than there are streams is an error (it was not written by
//! this scheme with this stream count).

use std::time::Instant;

use crate::lv::{self, MAX_STREAMS};
use crate::record::{Kind, Record, StampKind};
use crate::scan::{ScanEnd, Scanner, StreamSource};
use crate::scheme::{LogKind, RecoveryPlan, RecoveryReport, Replay, SchemeConfig};
use crate::{Lsn, RecordProblem, WalError};

mod feed;
mod replay;
mod single;
mod walk;

pub(crate) use feed::BATCH_BITS;
use feed::{Batch, Feed, Rec};
use replay::FirstApply;

/// How far past a pool's head a worker looks for a ready record.
pub(crate) const WINDOW: usize = 256;
/// Records the auto planner simulates.
pub(crate) const SAMPLE: usize = 1 << 16;
/// Below this expected parallelism (records per link of the longest chain) `Auto` replays
/// serially.
pub(crate) const MIN_PARALLELISM: f64 = 4.0;
/// Idle looks (each a wait of `replay::STUCK_LOOK` in which nothing moved, about 0.2 s in
/// all) after which a parallel replay of the final cut in which nobody is replaying and
/// nothing is ready gives up.
const STUCK_ROUNDS: usize = 200;

/// What a reader found besides the records it published.
struct Read {
    end: ScanEnd,
    records: u64,
    bytes: u64,
    max_txn: u64,
    /// Transaction records the checkpoint already holds.
    covered: u64,
}

impl Read {
    /// Nothing read yet.
    fn empty() -> Read {
        Read {
            end: ScanEnd::clean(0),
            records: 0,
            bytes: 0,
            max_txn: 0,
            covered: 0,
        }
    }
}

/// What recovery did, and where each stream restarts.
pub(crate) struct Outcome {
    pub(crate) ends: Vec<Lsn>,
    pub(crate) report: RecoveryReport,
}

/// Marks the feed failed if its reader ends without publishing its end (an error or a
/// panic), so replay never waits for it.
struct ReaderGuard<'a> {
    feed: &'a Feed,
    finished: bool,
}

impl Drop for ReaderGuard<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.feed.fail();
        }
    }
}

fn read_stream(
    dev: &dyn StreamSource,
    id: usize,
    cfg: &SchemeConfig,
    n: usize,
    feed: &Feed,
) -> Result<Read, WalError> {
    let mut guard = ReaderGuard {
        feed,
        finished: false,
    };
    let mut sc = Scanner::new(dev, cfg.scan_mode);
    let mut read = Read::empty();
    let size = feed.batch();
    let mut batch = Batch::new(n, size);
    let mut lplv = [0u64; MAX_STREAMS];
    let mut tmp = [0u64; MAX_STREAMS];
    while let Some(rec) = sc.next_record()? {
        read.records += 1;
        let h = rec.header;
        read.max_txn = read.max_txn.max(h.txn);
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
            read.covered += 1;
            continue;
        }
        tmp = record_lv(&rec, id, n, &lplv)?;
        let a = batch.arena.len();
        batch.arena.extend_from_slice(rec.payload);
        batch.lvs.extend_from_slice(&tmp[..n]);
        lv::max_into(&mut batch.pm, &tmp[..n]);
        let end = rec.end();
        batch.recs.push(Rec {
            start: h.lsn,
            end,
            txn: h.txn,
            kind,
            payload: (a, batch.arena.len()),
        });
        if batch.recs.len() == size {
            let mut next = Batch::new(n, size);
            next.pm.copy_from_slice(&batch.pm);
            batch.flags = super::pools::Flags::new(size);
            feed.publish(id, Some(std::mem::replace(&mut batch, next)), end, false);
        }
    }
    read.bytes = sc.bytes_read();
    read.end = sc
        .end()
        .cloned()
        .ok_or_else(|| WalError::Internal(crate::Invariant::ScanWithoutEnd))?;
    batch.flags = super::pools::Flags::new(batch.recs.len());
    let last = (!batch.recs.is_empty()).then_some(batch);
    guard.finished = true;
    feed.publish(id, last, read.end.end, true);
    Ok(read)
}

/// The LV of transaction record `rec` of stream `id` among `n`: its stamp, a sparse one
/// decompressed against `anchor` (the latest anchor's LV, Alg. 5 `Decompress`). A stamp wider
/// than `n` or without an LV is an error naming the record.
fn record_lv(
    rec: &Record<'_>,
    id: usize,
    n: usize,
    anchor: &[u64; MAX_STREAMS],
) -> Result<[u64; MAX_STREAMS], WalError> {
    let h = rec.header;
    let mut lv = [0u64; MAX_STREAMS];
    if rec.stamp.lv_into(&mut lv[..n]) > n {
        return Err(too_wide(id, h.lsn, n));
    }
    match rec.stamp.kind() {
        StampKind::Lv => {}
        StampKind::LvSparse => lv::max_into(&mut lv[..n], &anchor[..n]),
        StampKind::None | StampKind::Gsn => {
            return Err(problem(
                id,
                h.txn,
                h.lsn,
                RecordProblem::NoStamp("LSN-vector"),
            ));
        }
    }
    Ok(lv)
}

/// Transaction `txn`'s record at `lsn` of stream `stream` is not what this recovery reads.
fn problem(stream: usize, txn: u64, lsn: Lsn, problem: RecordProblem) -> WalError {
    WalError::WrongLog(crate::WrongLog::Record {
        scheme: "taurus",
        stream,
        txn: Some(txn),
        lsn,
        problem,
    })
}

fn too_wide(id: usize, lsn: Lsn, n: usize) -> WalError {
    WalError::WrongLog(crate::WrongLog::Record {
        scheme: "taurus",
        stream: id,
        txn: None,
        lsn,
        problem: crate::RecordProblem::LvWidth { streams: n },
    })
}

/// Replay what the feed admits, as `forced` (or the planner) says; the plan used (serial when
/// one thread replays, whatever was asked), or `None`
/// if a reader failed before one was chosen.
fn replay_all(
    feed: &Feed,
    streams: usize,
    threads: usize,
    forced: RecoveryPlan,
    replay: &dyn Replay,
    first: &FirstApply,
) -> Result<Option<RecoveryPlan>, WalError> {
    let plan = match forced {
        RecoveryPlan::Auto if threads == 1 => RecoveryPlan::Serial,
        RecoveryPlan::Auto => match replay::plan_auto(feed)? {
            Some(p) => p,
            None => return Ok(None),
        },
        p => p,
    };
    // Workers that replay while the streams are read: the cores the readers leave.
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let early = cores.saturating_sub(streams).clamp(1, threads);
    match plan {
        RecoveryPlan::Parallel if threads > 1 => {
            replay::replay_parallel(feed, threads, early, replay, first)?;
            Ok(Some(RecoveryPlan::Parallel))
        }
        _ => {
            replay::replay_serial(feed, replay, first)?;
            Ok(Some(RecoveryPlan::Serial))
        }
    }
}

/// Recover the devices through `replay` (steps 1-5 of the module docs), the readers
/// publishing `2^batch_bits` records at a time.
pub(crate) fn recover(
    cfg: &SchemeConfig,
    devices: &[&(dyn StreamSource + Sync)],
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
    forced: RecoveryPlan,
    batch_bits: u32,
) -> Result<Outcome, WalError> {
    let n = devices.len();
    let started = Instant::now();
    let threads = cfg.recovery_threads.max(1);
    if threads > 1 && cfg.logging == LogKind::Data && !cfg.mvcc {
        match (devices, forced) {
            ([dev], RecoveryPlan::Auto | RecoveryPlan::Shares) => {
                return single::recover(cfg, *dev, replay, progress, started);
            }
            (_, RecoveryPlan::Shares) => {
                return walk::recover(cfg, devices, replay, progress, started);
            }
            _ => {}
        }
    }
    let feed = Feed::new(n, batch_bits);
    let first = FirstApply::new(started);
    let (reads, replayed, read_at) = std::thread::scope(|sc| {
        let feed = &feed;
        let hs: Vec<_> = devices
            .iter()
            .enumerate()
            .map(|(i, d)| {
                sc.spawn(move || {
                    let r = read_stream(&**d, i, cfg, n, feed);
                    (r, started.elapsed().as_secs_f64())
                })
            })
            .collect();
        let replayed = replay_all(feed, n, threads, forced, replay, &first);
        let mut read_at = 0f64;
        let reads = hs
            .into_iter()
            .map(|h| match h.join() {
                Ok((r, at)) => {
                    read_at = read_at.max(at);
                    r
                }
                Err(_) => Err(WalError::ThreadPanicked {
                    thread: "a taurus log reader",
                }),
            })
            .collect::<Result<Vec<Read>, WalError>>();
        (reads, replayed, read_at)
    });
    // A reader's error first (the first stream's), as when the log was read before replay.
    let reads = reads?;
    let plan = replayed?.ok_or_else(|| {
        // Only a failed reader stops the planner, and its error was returned above.
        WalError::Internal(crate::Invariant::StoppedWithoutError("taurus recovery"))
    })?;
    let replay_at = started.elapsed().as_secs_f64();
    for r in &reads {
        progress(r.bytes);
    }
    let v = feed.view();
    let mut report = RecoveryReport::default();
    for (s, r) in reads.iter().enumerate() {
        report.records += r.records;
        report.bytes += r.bytes;
        report.max_txn = report.max_txn.max(r.max_txn);
        report.covered += r.covered;
        report.skipped += (v.published[s] - v.admitted[s]) as u64;
        report.ends.push(ScanEnd {
            end: v.c[s],
            ..r.end.clone()
        });
    }
    report.txns = v.total as u64;
    if let Some(f) = first.seconds() {
        report.stages.push(("first apply", f));
    }
    report.stages.push(("read", read_at));
    report.stages.push(("replay", replay_at));
    report.plan = Some(match plan {
        RecoveryPlan::Parallel => "parallel",
        _ => "serial",
    });
    Ok(Outcome {
        ends: v.c.clone(),
        report,
    })
}
