//! `pertxn`: NV-Logging (Huang et al., VLDB 2014, Sections 4.2-4.6 and 5.1-5.2), per-transaction
//! logging in persistent memory.
//!
//! Each transaction's log object is built in its worker's DRAM buffer, takes its LSN from one
//! global 64-bit counter, and is copied into a pre-allocated slot of persistent memory; a
//! circular log index of {offset, state} entries with a persistent head and tail records which
//! objects are valid. There is no central log buffer to reserve space in: the only shared words
//! an insert touches are the LSN counter and the durable frontier.
//!
//! * `layout`: the persistent layout (superblock, head, tail, index, slots).
//! * `log`: inserting objects under flush-on-insert or flush-on-commit, the frontier that
//!   acknowledges commits without a global lock, abort objects ([`LogWriter`], [`PerTxnTicket`]).
//! * `daemon`: the flush daemon (flush-on-commit) and truncation with backup to segment files.
//! * `recovery`: backup files, then the index in LSN order; replay of committed transactions.
//!
//! Choices where the paper is vague or where braid differs from Shore-MT:
//!
//! * With per-update records ([`super::Records::Update`], the paper's way: Section 4.2) each
//!   write is one log object in the transaction's log, taking its LSN from the global counter
//!   as it happens, and the commit inserts a commit object; the objects of one transaction are
//!   chained by their transaction id and assembled again at recovery (the paper's back
//!   pointer to the transaction's previous object serves the undo pass Shore-MT runs; braid
//!   logs redo only, so recovery needs the id, not the chain). With one record per
//!   transaction (the default) a transaction's redo images or command are one object at
//!   commit. A payload larger than a slot takes several consecutive LSNs, allocated at once,
//!   and is concatenated again at recovery. Objects hold redo information only: the engine
//!   keeps undo information in DRAM and installs writes only after the commit's object is in
//!   the log, so no undo object ever needs to reach persistent memory.
//! * Slots have a fixed size ([`PerTxnConfig::slot_size`]) and the entry of LSN `l` is
//!   `l mod entries`; both are fixed when the region is formatted, and a reopened region keeps
//!   its own layout whatever the options ask.
//! * A commit is acknowledged only when its objects and every object with a smaller LSN are
//!   persistent (early lock release lets later transactions read earlier ones' writes); see
//!   `log` for how that is done without a lock. flush-on-insert therefore still waits for the
//!   objects of concurrent commits with smaller LSNs, as every ELR scheme must.
//! * A read-only transaction waits for every LSN allocated before it committed.
//! * Truncation discards objects after they are durable in the backup files, except objects
//!   a durable checkpoint already holds (below its cut), which need no backup; checkpoint
//!   truncation also removes backup segments before the cut. Recovery replays backup + index
//!   from the checkpoint's cut (or from LSN 0 without one).
//! * `streams()` reports the backup stream (the index is not a stream), so the log statistics
//!   of a `pertxn` database count backed-up bytes; [`PerTxnLog::stats`] counts objects.
//! * [`ObjectPlace::File`] (`place=file`) is the paper's NV-Disk+decentralized-logging
//!   (Section 6.1, Table 3: "the log buffer is decentralized, but logs are still placed on file
//!   system via the same way as implemented in NV-Disk"): the same per-transaction log objects,
//!   global LSN, index and recovery, but each object and then its state word reach the region
//!   file through the file-system API (`pwrite` + `fdatasync`, [`Region::write_file`]) instead
//!   of by stores and cache-line write-backs, by the inserting worker (flush-on-insert). The
//!   paper does not say which thread writes; with no central buffer there is no group for a
//!   daemon to write in one call, which is what the paper blames for its slowness ("this also
//!   hurts the ability of grouping logs, and increases the frequency of disk accesses").

mod daemon;
mod frontier;
pub(crate) mod layout;
mod log;
mod recovery;
mod writer;

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering::{Acquire, Release};
use std::time::{Duration, Instant};

use braid_pmem::Region;
use parking_lot::Mutex;

#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) use frontier::PerTxnTicket;
#[cfg(test)]
pub(crate) use log::PerTxnStats;
#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) use writer::LogWriter;

use super::registry::{LogPlace, Registration, SchemeDef, parse_option, unknown_option};
use super::{
    AccessSet, CommitRequest, RecoveryReport, Replay, Scheme, SchemeConfig, SchemeWorker, Storage,
    Ticket,
};
use crate::device::pmem::PmemWrite;
use crate::fs::Fs;
use crate::stream::{Stream, StreamConfig};
use crate::{Lsn, UnknownName, WalError};
use daemon::Backup;
#[cfg(test)]
use layout::Layout;
use log::Shared;

/// When log objects become persistent (Section 4.3).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Default,
    strum::Display,
    strum::EnumString,
    strum::IntoStaticStr,
)]
#[strum(parse_err_ty = UnknownName, parse_err_fn = unknown_flush)]
pub enum FlushPolicy {
    /// The committing worker persists its object before `commit` returns.
    #[default]
    #[strum(to_string = "insert", serialize = "flush-on-insert")]
    Insert,
    /// A daemon persists completed objects in the background; a waiting commit persists
    /// whatever it depends on that the daemon has not reached yet.
    #[strum(to_string = "commit", serialize = "flush-on-commit")]
    Commit,
}

impl FlushPolicy {
    /// `"insert"` or `"commit"` (what its `FromStr` reads).
    pub fn name(self) -> &'static str {
        self.into()
    }
}

fn unknown_flush(s: &str) -> UnknownName {
    UnknownName::new("flush policy", s, &["insert", "commit"])
}

/// How a log object is placed into its persistent slot: NV-Logging's way, or NV-Disk's
/// (Table 3's "NV-Disk+decentralized-logging").
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Default,
    strum::Display,
    strum::EnumString,
    strum::IntoStaticStr,
)]
#[strum(parse_err_ty = UnknownName, parse_err_fn = unknown_place)]
pub enum ObjectPlace {
    /// By the CPU's stores into the mapped region, then cache-line write-backs and a fence
    /// (Section 4.3: NVRAM "directly accessed via hardware-supported memory references").
    #[default]
    #[strum(to_string = "memory")]
    Memory,
    /// Through the file-system API: `pwrite` of the object into the region file, then
    /// `fdatasync`, and the same for its state word (Section 6.1: in NV-Disk+decentralized-
    /// logging "the log buffer is decentralized, but logs are still placed on file system via
    /// the same way as implemented in NV-Disk"). flush-on-insert only.
    #[strum(to_string = "file")]
    File,
}

impl ObjectPlace {
    /// `"memory"` or `"file"` (what its `FromStr` reads).
    pub fn name(self) -> &'static str {
        self.into()
    }
}

fn unknown_place(s: &str) -> UnknownName {
    UnknownName::new("object place", s, &["memory", "file"])
}

/// Settings of the `pertxn` scheme. With the crate's `cli` feature they are command-line flags
/// (`clap::Args`), whose help is the fields' docs.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
#[cfg_attr(feature = "cli", command(next_help_heading = "Scheme pertxn"))]
#[non_exhaustive]
pub struct PerTxnConfig {
    /// When log objects are persisted: insert (by the committing worker) or commit (by a
    /// background daemon; a waiting commit persists what the daemon has not reached). Scheme
    /// option `flush`.
    #[cfg_attr(feature = "cli", arg(long = "pertxn-flush", default_value_t = PerTxnConfig::default().flush))]
    pub flush: FlushPolicy,
    /// How a log object reaches its slot: memory (stores into the mapped region, NV-Logging)
    /// or file (pwrite + fdatasync of the region file by the inserting worker: NV-Disk's
    /// file-system path with NV-Logging's decentralized log, the paper's
    /// NV-Disk+decentralized-logging; flush-on-insert only). Scheme option `place`.
    #[cfg_attr(feature = "cli", arg(long = "pertxn-place", default_value_t = PerTxnConfig::default().place))]
    pub place: ObjectPlace,
    /// Bytes per persistent log object slot (a multiple of 64, 128 to about 1 MiB), used when
    /// the region is formatted (a formatted region keeps its own); the index gets one entry
    /// per slot. Scheme option `slot_bytes`.
    #[cfg_attr(feature = "cli", arg(long = "pertxn-slot-bytes", default_value_t = PerTxnConfig::default().slot_size))]
    pub slot_size: usize,
    /// Consumed log index entries that trigger truncation (0: half the index). Scheme option
    /// `truncate_entries`.
    #[cfg_attr(feature = "cli", arg(long = "pertxn-truncate", default_value_t = PerTxnConfig::default().truncate_entries))]
    pub truncate_entries: u64,
    /// How flush-on-insert copies an object into its slot.
    #[cfg_attr(feature = "cli", arg(skip = PerTxnConfig::default().write))]
    pub write: PmemWrite,
    /// Longest sleep of the idle flush daemon (flush-on-commit).
    #[cfg_attr(feature = "cli", arg(skip = PerTxnConfig::default().daemon_interval))]
    pub daemon_interval: Duration,
    /// Run the flush daemon under flush-on-commit (the default). Without it every waiting
    /// commit persists what it depends on itself (Section 4.3's fallback path), so persist
    /// events happen in one deterministic order: crash-point enumeration needs that.
    #[cfg_attr(feature = "cli", arg(skip = PerTxnConfig::default().flush_daemon))]
    pub flush_daemon: bool,
    /// Segment size of the backup files (a multiple of 4096).
    #[cfg_attr(feature = "cli", arg(skip = PerTxnConfig::default().backup_segment_size))]
    pub backup_segment_size: u64,
    /// DRAM buffer of the backup stream.
    #[cfg_attr(feature = "cli", arg(skip = PerTxnConfig::default().backup_buffer_size))]
    pub backup_buffer_size: usize,
}

impl Default for PerTxnConfig {
    fn default() -> Self {
        PerTxnConfig {
            flush: FlushPolicy::Insert,
            place: ObjectPlace::Memory,
            slot_size: 1024,
            truncate_entries: 0,
            write: PmemWrite::NonTemporal,
            daemon_interval: Duration::from_micros(100),
            flush_daemon: true,
            backup_segment_size: 16 << 20,
            backup_buffer_size: 4 << 20,
        }
    }
}

/// The scheme's name.
pub(crate) const NAME: &str = "pertxn";

/// The scheme's registration (see [`super::SCHEMES`]).
pub(crate) const REGISTRATION: Registration = Registration {
    name: NAME,
    about: "NV-Logging: per-transaction log objects in persistent memory",
    default: || Box::new(PerTxnConfig::default()),
};

const OPTIONS: &[&str] = &[
    "flush",
    "place",
    "slot_bytes",
    "truncate_entries",
    "backup_segment_bytes",
];

impl SchemeDef for PerTxnConfig {
    fn name(&self) -> &'static str {
        NAME
    }
    fn log_place(&self) -> LogPlace {
        LogPlace::Region
    }
    fn update_records_refusal(&self) -> Option<&'static str> {
        None
    }
    fn set_option(&mut self, key: &str, value: &str) -> Result<(), WalError> {
        match key {
            "flush" => self.flush = parse_option(NAME, key, value)?,
            "place" => self.place = parse_option(NAME, key, value)?,
            "slot_bytes" => self.slot_size = parse_option(NAME, key, value)?,
            "truncate_entries" => self.truncate_entries = parse_option(NAME, key, value)?,
            "backup_segment_bytes" => {
                self.backup_segment_size = parse_option(NAME, key, value)?;
            }
            _ => return Err(unknown_option(NAME, key, OPTIONS)),
        }
        Ok(())
    }
    fn options(&self) -> Vec<(&'static str, String)> {
        vec![
            ("flush", self.flush.name().to_string()),
            ("place", self.place.name().to_string()),
            ("slot_bytes", self.slot_size.to_string()),
            ("truncate_entries", self.truncate_entries.to_string()),
            ("backup_segment_bytes", self.backup_segment_size.to_string()),
        ]
    }
    fn open(
        &self,
        cfg: &SchemeConfig,
        storage: Storage,
        replay: &dyn Replay,
        progress: &dyn Fn(u64),
    ) -> Result<(Arc<dyn Scheme>, RecoveryReport), WalError> {
        let Storage::Region(r) = storage else {
            return Err(super::registry::wrong_storage(NAME, LogPlace::Region));
        };
        let storage = PerTxnStorage {
            region: r.region,
            fs: r.fs,
            backup_dir: r.backup_dir,
            options: PerTxnConfig {
                write: r.write,
                ..self.clone()
            },
        };
        open(cfg, storage, replay, progress)
    }
    fn clone_def(&self) -> Box<dyn SchemeDef> {
        Box::new(self.clone())
    }
}

/// Where the `pertxn` log lives: its persistent region (index and slots) and the directory of
/// its backup segment files (through `fs`, so tests can crash it).
#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) struct PerTxnStorage {
    /// The persistent region holding the index and the object slots.
    pub region: Region,
    /// The file system of the backup directory.
    pub fs: Arc<dyn Fs>,
    /// Where truncation backs up cold objects to segment files.
    pub backup_dir: PathBuf,
    /// The scheme's settings.
    pub options: PerTxnConfig,
}

impl fmt::Debug for PerTxnStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PerTxnStorage")
            .field("region", &self.region)
            .field("backup_dir", &self.backup_dir)
            .field("options", &self.options)
            .finish()
    }
}

/// The running log: the shared state, the backup stream and the background threads.
#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) struct PerTxnLog {
    sh: Arc<Shared>,
    backup: Stream,
    threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
    close_result: Mutex<Option<Result<(), WalError>>>,
}

impl fmt::Debug for PerTxnLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PerTxnLog")
            .field("layout", &self.sh.layout)
            .field("frontier", &self.frontier())
            .field("head", &self.head())
            .finish_non_exhaustive()
    }
}

impl PerTxnLog {
    /// Recover the log in `storage` through `replay`, then start it.
    #[cfg_attr(feature = "testing", visibility::make(pub))]
    pub(crate) fn open(
        cfg: &SchemeConfig,
        storage: PerTxnStorage,
        replay: &dyn Replay,
        progress: &dyn Fn(u64),
    ) -> Result<(PerTxnLog, RecoveryReport), WalError> {
        let o = &storage.options;
        if o.place == ObjectPlace::File && o.flush != FlushPolicy::Insert {
            return Err(WalError::BadOption(crate::BadOption::Conflict {
                scheme: NAME,
                first: "place=file".to_string(),
                second: format!("flush={}", o.flush),
                why: "place=file writes each object through the file system as it is inserted, \
                      which is flush=insert",
            }));
        }
        let started = Instant::now();
        let mut report = RecoveryReport::default();
        let rec = recovery::recover(cfg, &storage, replay, progress, &mut report)?;
        report.seconds = started.elapsed().as_secs_f64();
        let log = PerTxnLog::start(storage, rec)?;
        Ok((log, report))
    }

    fn start(storage: PerTxnStorage, rec: recovery::Recovered) -> Result<PerTxnLog, WalError> {
        let flush = storage.options.flush;
        let sh = Arc::new(Shared::new(
            storage.region,
            rec.layout,
            storage.options,
            rec.next,
            rec.head,
        ));
        let scfg = StreamConfig {
            max_writers: 2,
            ..StreamConfig::default()
        };
        let backup = Stream::start(rec.backup, rec.backup_end, scfg)?;
        let mut threads = Vec::new();
        let job = Backup {
            sh: Arc::clone(&sh),
            stream: backup.clone(),
            writer: backup.writer()?,
            backed: rec.backed,
            buf: vec![0u8; rec.layout.slot_size],
        };
        let h = std::thread::Builder::new()
            .name("braid-pertxn-backup".into())
            .spawn(move || job.run())
            .map_err(|e| WalError::thread_start("pertxn backup", e))?;
        let _ = sh.backup.set(h.thread().clone());
        threads.push(h);
        if flush == FlushPolicy::Commit && sh.opts.flush_daemon {
            let d = Arc::clone(&sh);
            let h = std::thread::Builder::new()
                .name("braid-pertxn-flush".into())
                .spawn(move || daemon::flush_daemon(d))
                .map_err(|e| WalError::thread_start("pertxn flush", e))?;
            let _ = sh.daemon.set(h.thread().clone());
            threads.push(h);
        }
        Ok(PerTxnLog {
            sh,
            backup,
            threads: Mutex::new(threads),
            close_result: Mutex::new(None),
        })
    }

    /// A writer for one worker thread.
    #[cfg_attr(feature = "testing", visibility::make(pub))]
    pub(crate) fn writer(&self) -> LogWriter {
        LogWriter::new(Arc::clone(&self.sh))
    }

    /// The promise that every object below `end` becomes persistent.
    #[cfg(any(test, feature = "testing"))]
    #[cfg_attr(feature = "testing", visibility::make(pub))]
    pub(crate) fn ticket(&self, end: Lsn) -> PerTxnTicket {
        PerTxnTicket::new(Arc::clone(&self.sh), end)
    }

    /// Every object below this LSN is persistent.
    pub(crate) fn frontier(&self) -> Lsn {
        self.sh.advance()
    }

    /// The next object's LSN.
    #[cfg(test)]
    pub(crate) fn next_lsn(&self) -> Lsn {
        self.sh.next_lsn.load(Acquire)
    }

    /// The first LSN still held by the index (objects below it are in the backup files).
    pub(crate) fn head(&self) -> Lsn {
        self.sh.head.load(Acquire)
    }

    /// Where everything is in the region (for tests that damage it).
    #[cfg(test)]
    pub(crate) fn layout(&self) -> Layout {
        self.sh.layout
    }

    /// Counters since the log was opened.
    #[cfg(test)]
    pub(crate) fn stats(&self) -> PerTxnStats {
        self.sh.stats()
    }

    /// Persist every filled object, stop the background threads, and close the backup stream.
    /// Later inserts fail with `Closed`. Idempotent; returns the failure that poisoned the log,
    /// if any.
    #[cfg_attr(feature = "testing", visibility::make(pub))]
    pub(crate) fn close(&self) -> Result<(), WalError> {
        let mut done = self.close_result.lock();
        if let Some(r) = &*done {
            return r.clone();
        }
        self.sh.closed.store(true, Release);
        self.sh.wake_threads();
        self.sh.progress.notify();
        let handles = std::mem::take(&mut *self.threads.lock());
        let mut result = Ok(());
        for h in handles {
            if h.join().is_err() {
                result = Err(WalError::ThreadPanicked {
                    thread: "a pertxn background thread",
                });
            }
        }
        // Without a daemon (flush-on-insert) nothing is left filled; with one, its last pass
        // persisted everything. Publish the frontier and its tail hint.
        let f = self.sh.advance();
        self.sh.persist_tail(f);
        self.sh.stopped.store(true, Release);
        self.sh.progress.notify();
        let closed = self.backup.close();
        if let Some(e) = self.sh.poisoned() {
            result = Err(e);
        } else if let Err(e) = closed {
            result = Err(e);
        }
        *done = Some(result.clone());
        result
    }
}

impl Drop for PerTxnLog {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// The `pertxn` scheme: a [`PerTxnLog`] behind the scheme seam.
pub(crate) struct PerTxn {
    log: PerTxnLog,
    streams: [Stream; 1],
    board: crate::proxy::ProxyBoard,
    open: Arc<super::open_txns::OpenTxns>,
}

impl PerTxn {}

struct PerTxnWorker {
    writer: LogWriter,
    proxy: crate::proxy::ProxyCounter,
    sh: Arc<Shared>,
    /// Transaction whose commit failed between two of its objects, or whose update objects
    /// are in the log without a commit object yet.
    failed: Option<u64>,
    /// This worker's slot in the scheme's open transactions (per-update records).
    open: super::open_txns::OpenSlot,
}

impl PerTxnWorker {
    /// Insert one object; count the global LSN counter's fetch_add as global.
    fn insert(
        &mut self,
        txn: u64,
        kind: crate::record::Kind,
        payload: &[u8],
        commit: bool,
    ) -> Result<Lsn, WalError> {
        let end = self.writer.insert(txn, kind, payload, commit)?;
        self.proxy.append(self.writer.cost());
        self.proxy.global(1);
        Ok(end)
    }
}

impl SchemeWorker for PerTxnWorker {
    fn log_update(&mut self, up: &super::UpdateRecord<'_>) -> Result<(), WalError> {
        let sh = &self.sh;
        self.open.note(0, || sh.next_lsn.load(Acquire));
        self.failed = Some(up.txn);
        self.writer.set_flags(0);
        self.insert(up.txn, crate::record::Kind::Redo, up.payload, false)?;
        Ok(())
    }

    fn commit(&mut self, req: &CommitRequest<'_>) -> Result<Ticket, WalError> {
        self.proxy.commit();
        if req.updates > 0 {
            self.writer
                .set_flags(crate::scheme::cut::epoch_flag(req.epoch));
            let end = self.insert(req.txn, crate::record::Kind::Commit, &[], true);
            if end.is_ok() {
                self.failed = None;
                self.open.clear();
            }
            return Ok(Ticket::waiter(Box::new(PerTxnTicket::new(
                Arc::clone(&self.sh),
                end?,
            ))));
        }
        if req.read_only {
            let end = self.sh.next_lsn.load(Acquire);
            return Ok(Ticket::waiter(Box::new(PerTxnTicket::new(
                Arc::clone(&self.sh),
                end,
            ))));
        }
        self.writer
            .set_flags(crate::scheme::cut::epoch_flag(req.epoch));
        match self.insert(req.txn, req.kind.record_kind(), req.payload, true) {
            Ok(end) => Ok(Ticket::waiter(Box::new(PerTxnTicket::new(
                Arc::clone(&self.sh),
                end,
            )))),
            Err(e) => {
                self.failed = self.writer.open_txn();
                Err(e)
            }
        }
    }

    fn abort(&mut self, _rows: &dyn AccessSet) {
        // Only a commit that failed half-way leaves objects behind; give them an abort object
        // (if the log still takes one: a poisoned log is dropped at recovery anyway).
        if let Some(txn) = self.failed.take() {
            let _ = self.writer.abort(txn);
        }
        self.open.clear();
    }
}

impl Scheme for PerTxn {
    fn name(&self) -> &'static str {
        NAME
    }
    fn worker(&self, _worker: usize) -> Result<Box<dyn SchemeWorker>, WalError> {
        Ok(Box::new(PerTxnWorker {
            writer: self.log.writer(),
            proxy: self.board.counter(),
            sh: Arc::clone(&self.log.sh),
            failed: None,
            open: self.open.claim()?,
        }))
    }
    fn streams(&self) -> &[Stream] {
        &self.streams
    }
    fn proxies(&self) -> Option<crate::proxy::Proxies> {
        Some(self.board.sum())
    }
    fn close(&self) -> Result<(), WalError> {
        self.log.close()
    }
    /// The region holds the log; the backup files only its cold part.
    fn emulation(&self) -> Option<String> {
        self.log.sh.region.emulation()
    }
    fn keeps(&self) -> Vec<Lsn> {
        vec![self.open.start(0, self.log.sh.next_lsn.load(Acquire))]
    }
    /// Positions are object LSNs (one "stream": the global LSN counter).
    fn positions(&self) -> super::cut::Positions {
        super::cut::Positions {
            lsns: vec![self.log.sh.next_lsn.load(Acquire)],
            marks: vec![0],
        }
    }
    fn wait_durable(&self, lsns: &[Lsn]) -> Result<(), WalError> {
        match lsns.first() {
            Some(&l) => self.log.sh.wait_durable(l),
            None => Ok(()),
        }
    }
    /// Objects before the cut still in the index are dropped by the log's own truncation
    /// without a backup; the backup files lose whole segments before the newest remembered
    /// backup position whose object is before the cut.
    fn truncate(&self, lsns: &[Lsn]) -> Result<(), WalError> {
        let Some(&cut) = lsns.first() else {
            return Ok(());
        };
        self.log
            .sh
            .ckpt_floor
            .fetch_max(cut, std::sync::atomic::Ordering::AcqRel);
        let byte = {
            let mut marks = self.log.sh.backup_marks.lock();
            let mut at = None;
            while let Some(&(obj, b)) = marks.front() {
                if obj > cut {
                    break;
                }
                at = Some(b);
                if marks.len() > 1 && marks[1].0 <= cut {
                    marks.pop_front();
                } else {
                    break;
                }
            }
            at
        };
        match byte {
            Some(b) => self
                .log
                .backup
                .device()
                .release(b.min(self.log.backup.durable())),
            None => Ok(()),
        }
    }
    /// Index entries in use (times the slot size) plus the backup files.
    fn log_bytes(&self) -> u64 {
        let sh = &self.log.sh;
        let live = sh
            .next_lsn
            .load(Acquire)
            .saturating_sub(sh.head.load(Acquire));
        let b = &self.log.backup;
        live * sh.layout.slot_size as u64
            + b.tail()
                .saturating_sub(crate::scan::StreamSource::start(&**b.device()))
    }
}

/// Recover the `pertxn` log and start the scheme.
pub(crate) fn open(
    cfg: &SchemeConfig,
    storage: PerTxnStorage,
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
) -> Result<(Arc<dyn Scheme>, RecoveryReport), WalError> {
    let (log, report) = PerTxnLog::open(cfg, storage, replay, progress)?;
    let streams = [log.backup.clone()];
    let board = crate::proxy::ProxyBoard::new(1);
    Ok((
        Arc::new(PerTxn {
            log,
            streams,
            board,
            open: Arc::new(super::open_txns::OpenTxns::new(cfg.max_workers.max(1), 1)),
        }),
        report,
    ))
}
