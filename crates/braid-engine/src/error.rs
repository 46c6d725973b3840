//! Engine errors: transaction outcomes ([`TxError`]) and database-level failures
//! ([`EngineError`]).

use std::path::PathBuf;

use braid_wal::WalError;

/// Why a transaction did not commit.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum TxError {
    /// A lock was held by another transaction (NO_WAIT) or OCC validation failed; retry.
    #[error("transaction aborted by a conflict on table {table} key {key}")]
    Conflict {
        /// Table id ([`TableId`](crate::TableId)`.0`).
        table: u32,
        /// Key of the contended row.
        key: u64,
    },
    /// The transaction's own logic asked to roll back (e.g. TPC-C New-Order's 1%).
    #[error("transaction rolled back: {0}")]
    UserAbort(String),
    /// An insert found the key already present.
    #[error("table {table}: key {key} already exists")]
    DuplicateKey {
        /// Table id.
        table: u32,
        /// The existing key.
        key: u64,
    },
    /// A row the transaction's logic needs does not exist. The engine itself reports absence
    /// as `None` or `false`; stored procedures return this.
    #[error("table {table}: key {key} not found")]
    NotFound {
        /// Table id.
        table: u32,
        /// The missing key.
        key: u64,
    },
    /// A request the engine cannot run: no such table, a row image of the wrong length, a
    /// range scan of a hash-indexed table, or procedure parameters that end too early.
    #[error("table {table}: {what}")]
    BadRequest {
        /// Table id (`u32::MAX` for parameters, which belong to no table).
        table: u32,
        /// What was wrong.
        what: String,
    },
    /// The transaction wrote, but the database was opened read-only
    /// ([`OpenBuilder::open_read_only`](crate::OpenBuilder::open_read_only)); nothing was logged.
    #[error(
        "the database was opened read-only; a transaction that writes needs a database opened for writing (OpenBuilder::open)"
    )]
    ReadOnly,
    /// No stored procedure is registered under this id.
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

/// Errors opening, recovering or running a database. Messages say what to do where there is
/// something to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The log failed: device I/O, a damaged log, a poisoned stream, a scheme refusing its
    /// configuration, ...
    #[error(transparent)]
    Wal(#[from] WalError),
    /// A persistent-memory region could not be created or opened.
    #[error(transparent)]
    Pmem(#[from] braid_pmem::PmemError),
    /// A file operation of the engine itself (`braid.json`, directories, checkpoints) failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The database is open in another process, or through another handle in this one (see
    /// [`OpenBuilder::open`](crate::OpenBuilder::open)): a database has one writer at a time.
    #[error(
        "{dir} is in use by {}: a database has one writer at a time; wait for it to be closed, or read it without writing (OpenBuilder::open_read_only, braid recover --read-only, braid inspect)",
        braid_pmem::lock::holder_text(*.holder)
    )]
    InUse {
        /// The database directory.
        dir: PathBuf,
        /// The holder's process id, where the kernel tells it.
        holder: Option<u32>,
    },
    /// The database was opened with
    /// [`OpenBuilder::open_read_only`](crate::OpenBuilder::open_read_only), which writes nothing;
    /// what was asked needs a writer.
    #[error(
        "{dir} was opened read-only: {what} needs the database opened for writing (OpenBuilder::open)"
    )]
    ReadOnly {
        /// The database directory.
        dir: PathBuf,
        /// What was refused.
        what: &'static str,
    },
    /// The directory holds files but no `braid.json`.
    #[error(
        "{path} is not a braid database (no braid.json but other files); point --dir at a braid database or an empty directory"
    )]
    NotADatabase {
        /// The directory.
        path: PathBuf,
    },
    /// `braid.json` cannot be parsed.
    #[error("{path}/braid.json is damaged: {why}")]
    BadMeta {
        /// The database directory.
        path: PathBuf,
        /// The parser's complaint.
        why: String,
    },
    /// The database was created with other settings than it is opened with; `setting` says
    /// which, the message how to reopen it.
    #[error("{detail}")]
    Mismatch {
        /// The database directory.
        dir: PathBuf,
        /// The setting that differs: `"format"`, `"scheme"`, `"streams"`, `"device"`,
        /// `"cc"`, `"ring_size"`, `"stripe"`, `"catalog"` or `"location"` (an external log).
        setting: &'static str,
        /// What was found, what was asked and how to reopen it.
        detail: String,
    },
    /// The catalog is invalid (a table without columns or with more than 64).
    #[error("schema: {0}")]
    Schema(String),
    /// Options that cannot work together (a scheme and a device, a logging kind and a
    /// concurrency control, ...); the message says which and what to use instead.
    #[error("not supported: {detail}")]
    Unsupported {
        /// What was asked and why it cannot be done.
        detail: String,
    },
    /// A workload's or the database's parameter out of range.
    #[error("invalid option: {detail}")]
    BadOption {
        /// Which parameter, its value and what is accepted.
        detail: String,
    },
    /// More workers at once than [`Options::max_workers`](crate::Options::max_workers).
    #[error("more than {max} workers at once; open the database with a larger max_workers")]
    TooManyWorkers {
        /// The database's `max_workers`.
        max: usize,
    },
    /// A standby was pointed at an external log that holds no database.
    #[error("there is no database at {location} to follow; start its writer first")]
    NoDatabase {
        /// The external log's location.
        location: String,
    },
    /// A background thread of the engine could not start.
    #[error("engine thread: {detail}")]
    Thread {
        /// Which thread, and the error.
        detail: String,
    },
    /// A state the engine's own invariants rule out: a bug in braid.
    #[error("internal error (a bug in braid, please report it): {detail}")]
    Internal {
        /// What went wrong.
        detail: String,
    },
    /// Building the initial image failed (a loader's own error, or a row that does not fit
    /// its table).
    #[error("loading the initial data failed: {0}")]
    Load(String),
    /// A checkpoint file is damaged or missing.
    #[error("checkpoint {path}, offset {offset}: {why}")]
    BadCheckpoint {
        /// The checkpoint file.
        path: PathBuf,
        /// Byte offset of the damage (0 for a missing file).
        offset: u64,
        /// What is wrong there.
        why: String,
    },
    /// Taking or loading checkpoints failed otherwise, e.g. every checkpoint is damaged and
    /// the log they replaced is gone.
    #[error("checkpoint: {0}")]
    Checkpoint(String),
}
