//! braid-engine: an embedded, in-memory, durable transactional store whose logging scales with
//! cores. Tables of fixed-width rows indexed by u64 keys (hash or ordered), transactions under
//! two-phase locking (NO_WAIT), OCC or multi-version OCC (MVCC) with early lock release,
//! stored procedures for command logging, checkpoints, and recovery through the logging scheme
//! chosen at open. The engine knows nothing of a particular scheme: it calls the scheme's hooks
//! on every row access and at commit (`braid_wal::scheme`).
//!
//! # Quick start
//!
//! ```
//! use braid_engine::{Catalog, ColumnType, Db, EngineError, IndexKind, Loader, TableDef};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let tmp = tempfile::tempdir()?;
//! # let dir = tmp.path().join("bank");
//! let mut catalog = Catalog::new();
//! let accounts = catalog.add(TableDef::new("accounts", IndexKind::Hash).column("balance", ColumnType::I64));
//!
//! // Default options: the serial scheme logging to files in `dir`, and commits that return
//! // only once durable (group fdatasync). The loader builds the initial image on creation and
//! // again before the log is replayed on every recovery.
//! let load = |l: &Loader<'_>| -> Result<(), EngineError> {
//!     for a in 0..10 {
//!         l.insert(accounts, a, &100i64.to_le_bytes())?;
//!     }
//!     Ok(())
//! };
//! let (db, _) = Db::builder(&dir).catalog(catalog.clone()).loader(load).open()?;
//! let mut w = db.worker()?;
//! let mut tx = w.begin();
//! tx.update(accounts, 1, |r| r.set::<i64>(0, r.get::<i64>(0) - 30))?;
//! tx.update(accounts, 2, |r| r.set::<i64>(0, r.get::<i64>(0) + 30))?;
//! tx.commit()?; // durable here
//! drop(w);
//! db.close()?;
//! drop(db);
//!
//! // Reopening recovers from the log; another scheme is one option away, e.g.
//! // `.options(Options::default().scheme("taurus".parse()?).streams(4))` for a new database.
//! let (db, report) = Db::builder(&dir).catalog(catalog).loader(load).open()?;
//! assert_eq!(report.recovery.txns, 1);
//! assert_eq!(db.peek(accounts, 2), Some(130i64.to_le_bytes().to_vec()));
//! # Ok(())
//! # }
//! ```
//!
//! [`Db::builder`] takes each part of a database in turn, all optional: its [`Options`], its
//! [`Catalog`], its stored [`Procedures`], the loader of its initial rows and a recovery
//! progress callback; then opens it for writing, read-only, or as a standby. Options worth
//! knowing: [`Options::scheme`] (by name or typed configuration:
//! [`SerialConfig`](log::SerialConfig), [`TaurusConfig`](log::TaurusConfig), ...: the
//! log layer's types are in [`log`]),
//! [`Options::logging`] (data or command logging with stored [`Procedures`]), [`Options::cc`],
//! [`Options::device`] (files, or persistent memory with [`PmemOptions`]; [`Media`](log::Media) says how
//! region files reach power-safe media) and [`Options::checkpoint`] (by default a checkpoint
//! every 16 MiB of log keeps the log and the reopen time bounded). [`Txn::commit`] and
//! [`Worker::call`] return once the transaction is durable; [`Txn::commit_async`] and
//! [`Worker::call_async`] return a [`Ticket`](log::Ticket) at once to pipeline commits, the transaction
//! acknowledged only when the ticket resolves.
//! [`Db::emulation`] says whether acknowledged commits would survive a power cut on this
//! machine. The `bank` example kills a process mid-run and recovers it.

#![deny(missing_docs)]

pub(crate) mod checkpoint;
pub(crate) mod db;
pub(crate) mod env;
pub(crate) mod error;
pub(crate) mod index;
mod mvcc;
pub(crate) mod procedure;
mod recovery;
pub(crate) mod row;
pub(crate) mod schema;
pub(crate) mod table;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub(crate) mod txn;
pub(crate) mod value;

pub use crate::{
    checkpoint::{
        CheckpointLoad, CheckpointOptions, CheckpointReport, CheckpointStats,
        list as list_checkpoints,
    },
    db::{
        AccessStats, Db, DbStats, LogInsertStats, MemoryReport,
        builder::OpenBuilder,
        external::{CheckpointStore, DeviceFactory, LogTail, TailPoll},
        loader::Loader,
        meta::Meta,
        open::OpenReport,
        options::{Cc, DeviceConfig, FileOptions, Options, PmemOptions},
        standby::{RoundReport, Standby},
        worker::Worker,
    },
    error::{
        BadParameter, BadRequest, CheckpointDamage, CheckpointError, EngineError, Invariant,
        Mismatch, TxError, Unsupported,
    },
    procedure::{ParamReader, Params, Procedures},
    schema::{Catalog, Column, ColumnType, IndexKind, Schema, TableDef, TableId},
    txn::{Txn, writer::RowWriter},
    value::Value,
};
/// The log layer's types the engine's options, reports and tickets are made of, re-exported
/// from braid-wal and braid-pmem (so their versions move with those crates', not this one's):
/// the scheme chosen at open ([`SchemeSpec`](log::SchemeSpec), by name or from a typed
/// configuration such as [`TaurusConfig`](log::TaurusConfig)), data or command logging, what a
/// pipelined commit returns ([`Ticket`](log::Ticket)), what recovery reports, the steps of a
/// prefetch ([`Prefetch`](log::Prefetch), for [`Worker::prefetch`]), the pacing and
/// persistent-memory settings of the devices, and the log layer's error.
pub mod log {
    pub use braid_pmem::{Domain, Media};
    pub use braid_wal::{
        LogKind, Prefetch, RecoveryReport, Ticket, WalError,
        device::{Pace, PmemWrite},
        scan::{EndKind, ScanEnd, ScanMode},
        scheme::{
            CommitProtocol, FlushPolicy, GsnConfig, LogPlace, NoneConfig, NvDiskConfig,
            ObjectPlace, Partition, PerTxnConfig, PloverConfig, Records, RecoveryPlan, SchemeSpec,
            SerialConfig, SilorConfig, TaurusConfig,
        },
    };
}

// The crate's own tests (`tests/`, one module per file) are compiled into its unit-test
// binary, where they reach the internals without making them public; under this name their
// `braid_engine::` paths resolve to the crate itself.
#[cfg(test)]
extern crate self as braid_engine;
#[cfg(test)]
#[path = "../tests/main.rs"]
mod integration;

/// The README's Rust examples, compiled and run as doc tests (`cargo test --doc`), so that
/// what a newcomer copies from it builds.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub(crate) struct ReadmeDoctests;
