//! The configuration every scheme shares ([`SchemeConfig`]: data or command logging, group
//! commit, worker and recovery settings) and the kinds it chooses between ([`LogKind`],
//! [`Records`], [`RecoveryPlan`]).

use std::sync::Arc;
use std::time::Duration;

use super::cut;
use crate::device::Device;
use crate::record::Kind;
use crate::scan::ScanMode;
use crate::stream::{Stream, StreamConfig};
use crate::{Lsn, UnknownName, WalError};

/// Data logging writes after-images; command logging writes stored-procedure calls.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::IntoStaticStr,
)]
#[strum(serialize_all = "lowercase", parse_err_ty = UnknownName, parse_err_fn = unknown_log_kind)]
pub enum LogKind {
    /// Redo images of the rows a transaction wrote (redo records).
    Data,
    /// The stored-procedure call that re-executes the transaction (command records).
    Command,
}

impl LogKind {
    /// `"data"` or `"command"` (what its `FromStr` reads).
    pub fn name(self) -> &'static str {
        self.into()
    }
    /// The record kind its payloads are logged as.
    pub(crate) fn record_kind(self) -> Kind {
        match self {
            LogKind::Data => Kind::Redo,
            LogKind::Command => Kind::Command,
        }
    }
}

fn unknown_log_kind(s: &str) -> UnknownName {
    UnknownName::new("logging kind", s, &["data", "command"])
}

/// How a transaction's redo images reach the log (data logging).
///
/// `Txn` is Silo's and Taurus's way: one record per transaction, built at commit. `Update` is
/// the ARIES way of Shore-MT, the engine Wang & Johnson and NV-Logging build on: every insert,
/// update and delete puts its redo image into the log as it happens
/// ([`SchemeWorker::log_update`](super::SchemeWorker::log_update)), and the commit inserts a
/// commit record. Recovery redoes exactly the transactions whose commit record it finds; a
/// transaction without one leaves no trace. Recovery reads both layouts, so the choice is per
/// run, not per database.
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
#[strum(serialize_all = "lowercase", parse_err_ty = UnknownName, parse_err_fn = unknown_records)]
pub enum Records {
    /// One record per transaction, at commit.
    #[default]
    Txn,
    /// One record per write as it happens, and a commit record.
    Update,
}

impl Records {
    /// `"txn"` or `"update"` (what its `FromStr` reads).
    pub fn name(self) -> &'static str {
        self.into()
    }
}

fn unknown_records(s: &str) -> UnknownName {
    UnknownName::new("record unit", s, &["txn", "update"])
}

/// Configuration every scheme shares; each scheme's own options live in its
/// [`SchemeDef`](super::SchemeDef). Built from [`SchemeConfig::default`] with the setters
/// (or by assigning fields): `SchemeConfig::default().logging(LogKind::Command).max_workers(8)`.
/// The group-commit and worker defaults are the streams' own, declared once in the stream
/// layer.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SchemeConfig {
    /// Data or command logging.
    pub logging: LogKind,
    /// Worker threads that will ask for a [`SchemeWorker`](super::SchemeWorker).
    pub max_workers: usize,
    /// Group commit: the longest a flusher waits for more log.
    pub group_delay: Duration,
    /// Group commit: flush once this many bytes are pending.
    pub group_bytes: usize,
    /// Whether mid-log corruption is an error or the valid prefix is salvaged.
    pub scan_mode: ScanMode,
    /// Threads recovery may use.
    pub recovery_threads: usize,
    /// How a scheme with a parallel recovery planner replays (taurus).
    pub recovery_plan: RecoveryPlan,
    /// The engine runs multi-versioned (Taurus Section 4.4): every record carries its commit
    /// timestamp and replay reads the versions it names, so read-after-write order needs no
    /// tracking (Taurus keeps no readLVs even under command logging).
    pub mvcc: bool,
    /// What the checkpoint recovery starts from already holds; `None` replays the whole log.
    pub cut: Option<cut::Cut>,
    /// One record per transaction or one per write (data logging).
    pub records: Records,
}

/// Parallel replay, the serial fallback, or chosen by the planner from what it finds in the
/// log; or, for data logs, each recovery thread replaying its share of the keys.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    strum::Display,
    strum::EnumString,
    strum::IntoStaticStr,
)]
#[strum(serialize_all = "lowercase", parse_err_ty = UnknownName, parse_err_fn = unknown_plan)]
pub enum RecoveryPlan {
    /// Parallel if there are several recovery threads and the log's dependencies leave
    /// enough parallelism, else serial.
    #[default]
    Auto,
    /// Parallel replay (serial all the same with one recovery thread).
    Parallel,
    /// One thread, in an order that respects every dependency.
    Serial,
    /// Data logging on several threads: each thread reads every stream in the serial order
    /// and applies its own share of the keys (taurus `recovery/walk.rs`; one stream is what
    /// `Auto` already does with several threads). Serial with one thread, command logging or
    /// MVCC.
    Shares,
}

impl RecoveryPlan {}

fn unknown_plan(s: &str) -> UnknownName {
    UnknownName::new(
        "recovery plan",
        s,
        &["auto", "parallel", "serial", "shares"],
    )
}

impl SchemeConfig {
    /// [`SchemeConfig::logging`] set to `kind`.
    pub fn logging(mut self, kind: LogKind) -> SchemeConfig {
        self.logging = kind;
        self
    }
    /// [`SchemeConfig::max_workers`] set to `n`.
    pub fn max_workers(mut self, n: usize) -> SchemeConfig {
        self.max_workers = n;
        self
    }
    /// [`SchemeConfig::group_delay`] set to `d`.
    pub fn group_delay(mut self, d: Duration) -> SchemeConfig {
        self.group_delay = d;
        self
    }
    /// [`SchemeConfig::group_bytes`] set to `n`.
    pub fn group_bytes(mut self, n: usize) -> SchemeConfig {
        self.group_bytes = n;
        self
    }
    /// [`SchemeConfig::scan_mode`] set to `mode`.
    pub fn scan_mode(mut self, mode: ScanMode) -> SchemeConfig {
        self.scan_mode = mode;
        self
    }
    /// [`SchemeConfig::recovery_threads`] set to `n`.
    pub fn recovery_threads(mut self, n: usize) -> SchemeConfig {
        self.recovery_threads = n;
        self
    }
    /// [`SchemeConfig::recovery_plan`] set to `plan`.
    pub fn recovery_plan(mut self, plan: RecoveryPlan) -> SchemeConfig {
        self.recovery_plan = plan;
        self
    }
    /// [`SchemeConfig::mvcc`] set to `on`.
    pub fn mvcc(mut self, on: bool) -> SchemeConfig {
        self.mvcc = on;
        self
    }
    /// [`SchemeConfig::cut`] set to `cut`.
    pub fn cut(mut self, cut: Option<cut::Cut>) -> SchemeConfig {
        self.cut = cut;
        self
    }
    /// [`SchemeConfig::records`] set to `records`.
    pub fn records(mut self, records: Records) -> SchemeConfig {
        self.records = records;
        self
    }

    /// Stream `id`'s configuration: this group commit, at most `max_writers` writers.
    pub(crate) fn stream(&self, id: usize, max_writers: usize) -> StreamConfig {
        StreamConfig {
            id: id as u32,
            max_writers,
            group_delay: self.group_delay,
            group_bytes: self.group_bytes,
            ..StreamConfig::default()
        }
    }

    /// Start one stream per device at its recovered end, each taking a writer per worker.
    pub(crate) fn start_streams(
        &self,
        devices: Vec<Arc<dyn Device>>,
        ends: &[Lsn],
    ) -> Result<Vec<Stream>, WalError> {
        devices
            .into_iter()
            .zip(ends)
            .enumerate()
            .map(|(i, (d, &end))| Stream::start(d, end, self.stream(i, self.max_workers.max(1))))
            .collect()
    }
}

impl Default for SchemeConfig {
    /// Data logging, one record per transaction, strict scans, one recovery thread; the
    /// streams' own worker and group-commit defaults (`crate::stream::StreamConfig`'s: 64 workers, no
    /// group-commit delay, a flush once 1 MiB is pending).
    fn default() -> Self {
        let stream = StreamConfig::default();
        SchemeConfig {
            logging: LogKind::Data,
            max_workers: stream.max_writers,
            group_delay: stream.group_delay,
            group_bytes: stream.group_bytes,
            scan_mode: ScanMode::default(),
            recovery_threads: 1,
            recovery_plan: RecoveryPlan::default(),
            mvcc: false,
            cut: None,
            records: Records::default(),
        }
    }
}
