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
//! Recovery replays the stream in LSN order on one thread: every record that ends a transaction
//! (flag COMMIT, or a commit record) is applied together with any earlier records of the same
//! transaction; records of transactions that never committed are skipped.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use super::central::{Central, Reserve};
use super::registry::{Registration, SchemeDef};
use super::{LogKind, RecoveryReport, Replay, Scheme, SchemeConfig, Storage, replay_failed};
use crate::device::Device;
use crate::record::{FLAG_COMMIT, Kind};
use crate::scan::{Scanner, StreamSource};
use crate::scheme::cut::Cut;
use crate::scheme::follow::{Follower, Resumed};
use crate::stream::Stream;
use crate::{Lsn, WalError};

/// The scheme's registration (see [`super::SCHEMES`]).
pub const REGISTRATION: Registration = Registration {
    name: NAME,
    about: "one central log, group commit, early lock release",
    default: || Box::new(SerialConfig),
};

/// The scheme's name.
pub const NAME: &str = "serial";

/// The `serial` scheme's configuration (it has no options of its own).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
        return Err(WalError::Config(format!(
            "the {name} scheme uses exactly one log stream, {streams} were given"
        )));
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
            return Err(WalError::Config(format!(
                "the {} scheme uses exactly one log stream, {} were given",
                self.name,
                sources.len()
            )));
        };
        let from = Resumed::new(*src, self.pos, 0)?;
        let started = Instant::now();
        let mut report = RecoveryReport::default();
        self.pos = scan_and_replay(
            &from,
            &self.cfg,
            replay,
            &|_| {},
            &mut report,
            &mut self.open_txns,
        )?;
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
pub fn open(
    cfg: &SchemeConfig,
    mut devices: Vec<Arc<dyn Device>>,
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
) -> Result<(Arc<dyn Scheme>, RecoveryReport), WalError> {
    if devices.len() != 1 {
        return Err(WalError::Config(format!(
            "the serial scheme uses exactly one log stream, {} devices were given",
            devices.len()
        )));
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

/// Replay one stream in LSN order; returns its valid end.
pub(crate) fn replay_serial(
    src: &dyn StreamSource,
    cfg: &SchemeConfig,
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
    report: &mut RecoveryReport,
) -> Result<u64, WalError> {
    scan_and_replay(src, cfg, replay, progress, report, &mut HashMap::new())
}

/// [`replay_serial`] with the records of transactions still open before `src` starts (a
/// standby's earlier rounds), left holding those still open at its end.
fn scan_and_replay(
    src: &dyn StreamSource,
    cfg: &SchemeConfig,
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
    report: &mut RecoveryReport,
    open_txns: &mut Pending,
) -> Result<u64, WalError> {
    let mut scanner = Scanner::new(src, cfg.scan_mode);
    let mut last_progress = 0u64;
    while let Some(rec) = scanner.next_record()? {
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
                        replay
                            .apply(h.txn, k, &p)
                            .map_err(|e| replay_failed(0, h.lsn, h.txn, e))?;
                    }
                }
                replay
                    .apply(h.txn, kind, rec.payload)
                    .map_err(|e| replay_failed(0, h.lsn, h.txn, e))?;
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
                        replay
                            .apply(h.txn, k, &p)
                            .map_err(|e| replay_failed(0, h.lsn, h.txn, e))?;
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
    let read = scanner.bytes_read();
    progress(read - last_progress);
    report.bytes += read;
    report.skipped += open_txns.len() as u64;
    let end = scanner
        .end()
        .cloned()
        .ok_or_else(|| WalError::Config("scanner stopped without an end".into()))?;
    let end_lsn = end.end;
    report.ends.push(end);
    Ok(end_lsn)
}
