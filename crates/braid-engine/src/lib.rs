//! braid-engine: an embedded, in-memory, durable transactional store whose logging scales with
//! cores. Tables of fixed-width rows indexed by u64 keys (hash or ordered), transactions under
//! two-phase locking (NO_WAIT), OCC or multi-version OCC (MVCC) with early lock release, stored procedures for command
//! logging, and recovery through the logging scheme chosen at open. The engine knows nothing of
//! a particular scheme: it calls the scheme's hooks on every row access and at commit
//! (`braid_wal::scheme`).

pub mod checkpoint;
pub mod db;
pub mod env;
pub mod error;
mod mvcc;
pub mod procedure;
mod recovery;
pub mod row;
pub mod schema;
pub mod table;
pub mod txn;

pub use braid_pmem::{Domain, Media};
pub use braid_wal::WalError;
pub use braid_wal::pmem_device::PmemWrite;
pub use braid_wal::scan::{EndKind, ScanEnd, ScanMode};
pub use braid_wal::scheme::gsn::{CommitProtocol, GsnConfig, Partition};
pub use braid_wal::scheme::none::NoneConfig;
pub use braid_wal::scheme::nvdisk::NvDiskConfig;
pub use braid_wal::scheme::pertxn::{FlushPolicy, PerTxnOptions};
pub use braid_wal::scheme::serial::SerialConfig;
pub use braid_wal::scheme::taurus::TaurusConfig;
pub use braid_wal::scheme::{
    LogKind, LogPlace, RecoveryPlan, RecoveryReport, SCHEMES, SchemeDef, SchemeSpec, Ticket,
};
pub use checkpoint::{CheckpointLoad, CheckpointOptions, CheckpointReport, CheckpointStats};
pub use db::{
    Cc, Db, DeviceConfig, Durability, FileOptions, Loader, MemoryReport, Meta, OpenReport, Options,
    PmemOptions, Worker,
};
pub use env::{Env, PmemEnv, SimPmem};
pub use error::{EngineError, TxError};
pub use procedure::{ParamReader, Params, Procedures};
pub use schema::{Catalog, Column, ColumnType, IndexKind, Schema, TableDef, TableId};
pub use txn::{RowWriter, Txn};
