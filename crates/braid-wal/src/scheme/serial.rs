//! `serial`: the baseline every paper beats. One central log stream shared by all workers, one
//! LSN (the byte position in that stream), group commit by the stream's flusher, and early lock
//! release: a transaction's locks go as soon as its record is in the log buffer; its commit is
//! acknowledged once the stream is durable past the record's end.
//!
//! A read-only transaction logs nothing but may have read data whose writer is not durable yet
//! (early lock release), so its ticket waits for everything appended before it.
//!
//! With per-update records ([`super::Records::Update`]) each write is a record of its own,
//! inserted into the central log as it happens, and the commit inserts a commit record (an
//! aborted transaction that logged writes inserts an abort record): the log of Shore-MT, whose
//! central buffer sees several inserts per transaction. The checkpoint's start is held back to
//! the first record of every transaction still open ([`super::open_txns`]).
//!
//! Recovery replays the stream in LSN order on one thread: every record that ends a transaction
//! (flag COMMIT, or a commit record) is applied together with any earlier records of the same
//! transaction; records of transactions that never committed are skipped.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use super::open_txns::{OpenSlot, OpenTxns};
use super::registry::{Registration, SchemeDef};
use super::{
    AccessSet, CommitRequest, LogKind, RecoveryReport, Replay, Scheme, SchemeConfig, SchemeWorker,
    Storage, Ticket, UpdateRecord, replay_failed,
};
use crate::device::Device;
use crate::proxy::{Proxies, ProxyBoard, ProxyCounter};
use crate::record::{FLAG_COMMIT, Kind, RecordSpec, Stamp};
use crate::scan::{Scanner, StreamSource};
use crate::scheme::cut::{Cut, epoch_flag};
use crate::scheme::follow::{Follower, Resumed};
use crate::stream::{Stream, StreamWriter};
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

/// The central-log scheme.
pub struct Serial {
    streams: [Stream; 1],
    board: ProxyBoard,
    open: Arc<OpenTxns>,
}

struct SerialWorker {
    stream: Stream,
    writer: StreamWriter,
    proxy: ProxyCounter,
    /// This worker's slot in the scheme's [`OpenTxns`].
    open: OpenSlot,
    /// The transaction with update records in the log and no commit or abort record yet.
    logging: Option<u64>,
}

impl SerialWorker {
    fn append(&mut self, kind: Kind, flags: u8, txn: u64, payload: &[u8]) -> Result<Lsn, WalError> {
        let payload = [payload];
        let spec = RecordSpec {
            kind,
            flags,
            txn,
            stamp: &Stamp::None,
            payload: &payload,
        };
        let (_, end) = self.writer.append(&spec)?;
        // The central log's tail: every worker appends to it.
        self.proxy.append_global(self.writer.cost());
        Ok(end)
    }
}

impl SchemeWorker for SerialWorker {
    fn log_update(&mut self, up: &UpdateRecord<'_>) -> Result<(), WalError> {
        let stream = &self.stream;
        self.open.note(0, || stream.tail());
        self.logging = Some(up.txn);
        self.append(Kind::Redo, 0, up.txn, up.payload)?;
        Ok(())
    }

    fn commit(&mut self, req: &CommitRequest<'_>) -> Result<Ticket, WalError> {
        self.proxy.commit();
        if req.read_only && req.updates == 0 {
            return Ok(Ticket::Stream {
                stream: self.stream.clone(),
                lsn: self.stream.tail(),
            });
        }
        let flags = FLAG_COMMIT | epoch_flag(req.epoch);
        let end = if req.updates > 0 {
            let end = self.append(Kind::Commit, flags, req.txn, &[]);
            self.logging = None;
            self.open.clear();
            end?
        } else {
            self.append(req.kind.record_kind(), flags, req.txn, req.payload)?
        };
        Ok(Ticket::Stream {
            stream: self.stream.clone(),
            lsn: end,
        })
    }

    fn abort(&mut self, _rows: &dyn AccessSet) {
        if let Some(txn) = self.logging.take() {
            // Recovery skips a transaction without a commit record either way; the abort
            // record only lets it forget the transaction's records sooner. A failure to
            // append it (a poisoned stream) is reported by the next commit.
            let _ = self.append(Kind::Abort, 0, txn, &[]);
            self.open.clear();
        }
    }
}

impl Scheme for Serial {
    fn name(&self) -> &'static str {
        NAME
    }
    fn worker(&self, _worker: usize) -> Result<Box<dyn SchemeWorker>, WalError> {
        let stream = self.streams[0].clone();
        let writer = stream.writer()?;
        Ok(Box::new(SerialWorker {
            stream,
            writer,
            proxy: self.board.counter(),
            open: self.open.claim()?,
            logging: None,
        }))
    }
    fn keeps(&self) -> Vec<Lsn> {
        vec![self.open.start(0, self.streams[0].tail())]
    }
    fn streams(&self) -> &[Stream] {
        &self.streams
    }
    fn close(&self) -> Result<(), WalError> {
        self.streams[0].close()
    }
    fn proxies(&self) -> Option<Proxies> {
        Some(self.board.sum())
    }
}

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
    Ok((
        Arc::new(Serial {
            streams: [stream],
            board: ProxyBoard::new(1),
            open: Arc::new(OpenTxns::new(cfg.max_workers.max(1), 1)),
        }),
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
