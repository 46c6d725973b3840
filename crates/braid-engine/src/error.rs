//! Engine errors: transaction outcomes ([`TxError`]) and database-level failures
//! ([`EngineError`]).

use std::path::PathBuf;

use braid_wal::WalError;

/// Why a transaction did not commit.
#[derive(Debug, Clone, thiserror::Error)]
pub enum TxError {
    /// A lock was held by another transaction (NO_WAIT) or OCC validation failed; retry.
    #[error("transaction aborted by a conflict on table {table} key {key}")]
    Conflict { table: u32, key: u64 },
    /// The transaction's own logic asked to roll back (e.g. TPC-C New-Order's 1%).
    #[error("transaction rolled back: {0}")]
    UserAbort(String),
    #[error("table {table}: key {key} already exists")]
    DuplicateKey { table: u32, key: u64 },
    #[error("table {table}: key {key} not found")]
    NotFound { table: u32, key: u64 },
    #[error("table {table}: {what}")]
    BadRequest { table: u32, what: String },
    #[error("unknown stored procedure {0}; register it before opening the database")]
    UnknownProcedure(u32),
    /// The log refused the commit (poisoned stream, no space, ...). The transaction's effects
    /// are not acknowledged.
    #[error(transparent)]
    Log(#[from] WalError),
}

impl TxError {
    /// Whether retrying the same transaction may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, TxError::Conflict { .. })
    }
}

/// Errors opening, recovering or running a database.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Wal(#[from] WalError),
    #[error(transparent)]
    Pmem(#[from] braid_pmem::PmemError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{path} is not a braid database (no braid.json but other files); point --dir at a braid database or an empty directory"
    )]
    NotADatabase { path: PathBuf },
    #[error("{path}/braid.json is damaged: {why}")]
    BadMeta { path: PathBuf, why: String },
    #[error("{0}")]
    Mismatch(String),
    #[error("schema: {0}")]
    Schema(String),
    #[error("configuration: {0}")]
    Config(String),
    #[error("loading the initial data failed: {0}")]
    Load(String),
    #[error("checkpoint {path}, offset {offset}: {why}")]
    BadCheckpoint {
        path: PathBuf,
        offset: u64,
        why: String,
    },
    #[error("checkpoint: {0}")]
    Checkpoint(String),
}
