//! `serial`: the baseline every paper beats. One central log stream shared by all workers, one
//! LSN (the byte position in that stream), group commit by the stream's flusher, and early lock
//! release: a transaction's locks go as soon as its record is in the log buffer; its commit is
//! acknowledged once the stream is durable past the record's end.
//!
//! A read-only transaction logs nothing but may have read data whose writer is not durable yet
//! (early lock release), so its ticket waits for everything appended before it.
//!
//! The worker side is the central log that `nvdisk`, `aether` and `baseline` share
//! (`scheme/central.rs`), with the stream's own lock-free reservation as its insert. With
//! per-update records ([`super::Records::Update`]) each write is a record of its own, inserted
//! into the central log as it happens, and the commit inserts a commit record (an aborted
//! transaction that logged writes inserts an abort record): the log of Shore-MT, whose central
//! buffer sees several inserts per transaction. A checkpoint keeps the log from the first
//! record of every transaction still open ([`super::open_txns`]).
//!
//! Recovery replays the stream in LSN order: every record that ends a transaction (flag
//! COMMIT, or a commit record) is applied together with any earlier records of the same
//! transaction; records of transactions that never committed are skipped. With several
//! recovery threads and data logging, every thread sees the stream (read once, through a
//! feed) and applies the operations of its share of the keys, queued so that their rows are
//! announced ahead (`scheme/shared_scan.rs`, `scheme/apply_queue.rs`); command logging replays on one
//! thread, since a command reads keys of every share. Recovering from a checkpoint, the scan
//! starts at the checkpoint's keep position, not at the first byte the stream still holds.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use super::apply_queue::ApplyQueue;
use super::central::{Central, Reserve};
use super::registry::{Registration, SchemeDef};
use super::{LogKind, RecoveryReport, Replay, Scheme, SchemeConfig, Storage, replay_failed};
use crate::device::Device;
use crate::payload::PayloadError;
use crate::record::{FLAG_COMMIT, Kind};
use crate::scan::{Scanner, StreamSource};
use crate::scheme::cut::Cut;
use crate::scheme::feed::Records;
use crate::scheme::follow::{Follower, Resumed};
use crate::scheme::shared_scan::{self, Reading, Share};
use crate::stream::Stream;
use crate::{Lsn, RecordProblem, WalError};

/// The scheme's registration (see [`super::SCHEMES`]).
pub(crate) const REGISTRATION: Registration = Registration {
    name: NAME,
    about: "one central log, group commit, early lock release",
    default: || Box::new(SerialConfig),
};

/// The scheme's name.
pub(crate) const NAME: &str = "serial";

/// The `serial` scheme's configuration (it has no options of its own).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SerialConfig;

impl SchemeDef for SerialConfig {
    fn name(&self) -> &'static str {
        NAME
    }
    fn update_records_refusal(&self) -> Option<&'static str> {
        None
    }
    fn open(
        &self,
        cfg: &SchemeConfig,
        storage: Storage,
        replay: &dyn Replay,
        progress: &dyn Fn(u64),
    ) -> Result<(Arc<dyn Scheme>, RecoveryReport), WalError> {
        open(cfg, storage.devices(NAME)?, replay, progress)
    }
    fn follower(&self, cfg: &SchemeConfig, streams: usize) -> Result<Box<dyn Follower>, WalError> {
        follower(NAME, cfg, streams)
    }
    fn clone_def(&self) -> Box<dyn SchemeDef> {
        Box::new(*self)
    }
}

/// A standby of the central log of scheme `name` (serial's record format on one stream).
pub(crate) fn follower(
    name: &'static str,
    cfg: &SchemeConfig,
    streams: usize,
) -> Result<Box<dyn Follower>, WalError> {
    if streams != 1 {
        return Err(WalError::StreamCount {
            scheme: name.to_string(),
            given: streams,
            min: 1,
            max: 1,
        });
    }
    Ok(Box::new(SerialFollower {
        name,
        cfg: cfg.clone(),
        pos: Cut::start_of(cfg.cut.as_ref(), 0),
        open_txns: HashMap::new(),
    }))
}

/// A standby's replay of the central log ([`super::follow`]): the in-order replay of recovery,
/// resumed where the last round's scan stopped, with the records of transactions not yet
/// committed kept between rounds.
struct SerialFollower {
    name: &'static str,
    cfg: SchemeConfig,
    pos: Lsn,
    open_txns: Pending,
}

impl Follower for SerialFollower {
    fn round(
        &mut self,
        sources: &[&(dyn StreamSource + Sync)],
        replay: &dyn Replay,
    ) -> Result<RecoveryReport, WalError> {
        let [src] = sources else {
            return Err(WalError::StreamCount {
                scheme: self.name.to_string(),
                given: sources.len(),
                min: 1,
                max: 1,
            });
        };
        let from = Resumed::new(*src, self.pos, 0)?;
        let started = Instant::now();
        let mut report = RecoveryReport::default();
        let whole = (Share { part: 0, n: 1 }, &AtomicBool::new(false));
        self.pos = scan_and_replay(
            &mut Scanner::new(&from, self.cfg.scan_mode),
            &self.cfg,
            replay,
            &|_| {},
            &mut report,
            &mut self.open_txns,
            whole,
        )?
        .ok_or_else(|| {
            WalError::Internal(crate::Invariant::StoppedWithoutError("a standby's replay"))
        })?;
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    fn resume(&self) -> Vec<Lsn> {
        vec![self.pos]
    }

    fn keeps(&self) -> Vec<Lsn> {
        let first = self.open_txns.values().map(|(lsn, _)| *lsn);
        vec![first.fold(self.pos, Lsn::min)]
    }
}

/// Records of transactions that span several records, until their commit: where the first
/// one starts, and each one's kind and payload.
type Pending = HashMap<u64, (Lsn, Vec<(LogKind, Vec<u8>)>)>;

/// Recover the central log and start it.
pub(crate) fn open(
    cfg: &SchemeConfig,
    mut devices: Vec<Arc<dyn Device>>,
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
) -> Result<(Arc<dyn Scheme>, RecoveryReport), WalError> {
    if devices.len() != 1 {
        return Err(WalError::StreamCount {
            scheme: "serial".to_string(),
            given: devices.len(),
            min: 1,
            max: 1,
        });
    }
    let device = devices.remove(0);
    let started = Instant::now();
    let mut report = RecoveryReport::default();
    let end = replay_serial(&*device, cfg, replay, progress, &mut report)?;
    report.seconds = started.elapsed().as_secs_f64();
    let stream = Stream::start(device, end, cfg.stream(0, cfg.max_workers.max(1)))?;
    let insert = Reserve(stream.clone());
    Ok((
        Arc::new(Central::new(NAME, stream, insert, cfg.max_workers)),
        report,
    ))
}

/// Replay one stream in LSN order; returns its valid end. With several recovery threads and
/// data logging, each thread reads the stream and applies its share of the keys.
///
/// Recovering from a checkpoint, the scan begins at the checkpoint's keep position (where its
/// cut says recovery begins reading) rather than at the first byte the stream holds: a
/// checkpoint truncates the log only up to the older of the two checkpoints kept, and only by
/// whole segments, so the bytes before the keep position (up to a segment and a checkpoint
/// interval of log) would be read only to be skipped as covered. They are not read at all,
/// so not checked either: the checkpoint holds what they held.
pub(crate) fn replay_serial(
    src: &(dyn StreamSource + Sync),
    cfg: &SchemeConfig,
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
    report: &mut RecoveryReport,
) -> Result<u64, WalError> {
    let keep = Cut::start_of(cfg.cut.as_ref(), 0);
    if keep > src.start() && keep <= src.limit() {
        let from = Resumed::new(src, keep, 0)?;
        return replay_from(&from, cfg, replay, progress, report);
    }
    replay_from(src, cfg, replay, progress, report)
}

/// [`replay_serial`] from `src`'s start.
fn replay_from(
    src: &(dyn StreamSource + Sync),
    cfg: &SchemeConfig,
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
    report: &mut RecoveryReport,
) -> Result<u64, WalError> {
    if cfg.recovery_threads <= 1 || cfg.logging != LogKind::Data || cfg.mvcc {
        let whole = (Share { part: 0, n: 1 }, &AtomicBool::new(false));
        return scan_and_replay(
            &mut Scanner::new(src, cfg.scan_mode),
            cfg,
            replay,
            progress,
            report,
            &mut HashMap::new(),
            whole,
        )?
        .ok_or_else(|| WalError::Internal(crate::Invariant::StoppedWithoutError("recovery")));
    }
    let (end, share0) = shared_scan::run(
        cfg.recovery_threads,
        (src, cfg.scan_mode, Reading::Once),
        |share, sc, stop| {
            let mut r = RecoveryReport::default();
            let open = &mut HashMap::new();
            let end = scan_and_replay(sc, cfg, replay, &|_| {}, &mut r, open, (share, stop))?;
            Ok(end.map(|e| (e, r)))
        },
    )?;
    // Every share decides alike which transactions it replays: share 0's counts are the log's.
    // Progress is told once, at the end (the callback is not shared between threads).
    progress(share0.bytes);
    report.txns += share0.txns;
    report.records += share0.records;
    report.bytes += share0.bytes;
    report.max_txn = report.max_txn.max(share0.max_txn);
    report.skipped += share0.skipped;
    report.covered += share0.covered;
    report.ends.extend(share0.ends);
    Ok(end)
}

/// [`replay_serial`] with the records of transactions still open before `src` starts (a
/// standby's earlier rounds), left holding those still open at its end; applying only the
/// operations of `share` (all of them with a share of one), and returning `None` once the
/// stop flag is set (another share failed).
fn scan_and_replay(
    scanner: &mut dyn Records,
    cfg: &SchemeConfig,
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
    report: &mut RecoveryReport,
    open_txns: &mut Pending,
    (share, stop): (Share, &AtomicBool),
) -> Result<Option<u64>, WalError> {
    let mut last_progress = 0u64;
    // With several shares, a share's data operations are queued so that their rows are
    // announced before they are applied (`apply_queue.rs`). With one, every payload is
    // applied whole as it is read (it need not be a redo payload: the log is the caller's).
    let mut queue = ApplyQueue::default();
    let mut apply = |txn: u64, lsn: Lsn, kind: LogKind, payload: &[u8]| {
        if share.n == 1 {
            return replay
                .apply(txn, kind, payload)
                .map_err(|e| replay_failed(0, lsn, txn, e));
        }
        if kind != LogKind::Data {
            return Err(record_problem(
                txn,
                lsn,
                RecordProblem::CommandLogged { threads: share.n },
            ));
        }
        let bad = |e: PayloadError| record_problem(txn, lsn, RecordProblem::Payload(e));
        queue.push(&share, (txn, lsn), payload, bad, (replay, 0))
    };
    while let Some(rec) = scanner.next_record()? {
        if shared_scan::stopped(stop) {
            return Ok(None);
        }
        report.records += 1;
        let h = rec.header;
        report.max_txn = report.max_txn.max(h.txn);
        let kind = match h.kind {
            Kind::Redo => Some(LogKind::Data),
            Kind::Command => Some(LogKind::Command),
            Kind::Abort => {
                open_txns.remove(&h.txn);
                None
            }
            _ => None,
        };
        let commits = h.flags & FLAG_COMMIT != 0;
        if (commits || h.kind == Kind::Commit) && Cut::covered(cfg.cut.as_ref(), 0, h.lsn, h.flags)
        {
            // The checkpoint recovery started from holds this transaction already.
            open_txns.remove(&h.txn);
            report.covered += 1;
            continue;
        }
        match (kind, commits) {
            (Some(kind), true) => {
                if let Some((_, earlier)) = open_txns.remove(&h.txn) {
                    for (k, p) in earlier {
                        apply(h.txn, h.lsn, k, &p)?;
                    }
                }
                apply(h.txn, h.lsn, kind, rec.payload)?;
                report.txns += 1;
            }
            (Some(kind), false) => {
                open_txns
                    .entry(h.txn)
                    .or_insert_with(|| (h.lsn, Vec::new()))
                    .1
                    .push((kind, rec.payload.to_vec()));
            }
            (None, _) if h.kind == Kind::Commit => {
                if let Some((_, earlier)) = open_txns.remove(&h.txn) {
                    for (k, p) in earlier {
                        apply(h.txn, h.lsn, k, &p)?;
                    }
                    report.txns += 1;
                }
            }
            _ => {}
        }
        let read = scanner.bytes_read();
        if read - last_progress >= 1 << 20 {
            progress(read - last_progress);
            last_progress = read;
        }
    }
    queue.apply(replay)?;
    let read = scanner.bytes_read();
    progress(read - last_progress);
    report.bytes += read;
    report.skipped += open_txns.len() as u64;
    let end = scanner
        .end()
        .cloned()
        .ok_or_else(|| WalError::Internal(crate::Invariant::ScanWithoutEnd))?;
    let end_lsn = end.end;
    report.ends.push(end);
    Ok(Some(end_lsn))
}

/// The central log's record `txn` at `lsn` is not what its recovery reads.
fn record_problem(txn: u64, lsn: Lsn, problem: RecordProblem) -> WalError {
    WalError::WrongLog(crate::WrongLog::Record {
        scheme: "serial",
        stream: 0,
        txn: Some(txn),
        lsn,
        problem,
    })
}
