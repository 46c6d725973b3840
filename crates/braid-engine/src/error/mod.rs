//! Engine errors: transaction outcomes ([`TxError`]) and database-level failures
//! ([`EngineError`], with the checkpoint failures of [`CheckpointError`]); the typed kinds
//! inside their variants are in [`kind`].

mod kind;

use std::path::PathBuf;

pub use kind::{BadParameter, BadRequest, Invariant, Mismatch, Unsupported};

use braid_wal::{Lsn, WalError};

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
    /// The transaction's own logic asked to roll back (e.g. TPC-C New-Order's 1%), for a
    /// reason of the application's ([`TxError::user_abort`]). A reason in words is the whole of
    /// it: an abort is an outcome the transaction chose, not a failure with a cause to keep.
    #[error("transaction rolled back: {reason}")]
    UserAbort {
        /// The application's reason.
        reason: String,
    },
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
    /// range scan of a hash-indexed table, or procedure parameters that end too early or are
    /// out of range.
    #[error("table {table}: {request}")]
    BadRequest {
        /// Table id (`u32::MAX` for parameters, which belong to no table).
        table: u32,
        /// What was wrong.
        #[source]
        request: BadRequest,
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
    /// The log refused the commit, or failed before the commit was durable (poisoned stream,
    /// no space, ...). The transaction's effects are not acknowledged.
    #[error(transparent)]
    Log(#[from] WalError),
}

impl TxError {
    /// A [`TxError::UserAbort`] with `reason`.
    pub fn user_abort(reason: impl Into<String>) -> TxError {
        TxError::UserAbort {
            reason: reason.into(),
        }
    }

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
        "{dir} is in use by {}: a database has one writer at a time; wait for it to be closed, or read it without writing (OpenBuilder::open_read_only)",
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
        "{path} is not a braid database (no braid.json but other files); open a braid database's directory or an empty one"
    )]
    NotADatabase {
        /// The directory.
        path: PathBuf,
    },
    /// `braid.json` cannot be parsed.
    #[error("{path}/braid.json is damaged: {source}")]
    BadMeta {
        /// The database directory.
        path: PathBuf,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// The database was created with other settings than it is opened with;
    /// [`Mismatch::setting`] says which, the message how to reopen it.
    #[error("{}: {mismatch}", .dir.display())]
    Mismatch {
        /// The database directory.
        dir: PathBuf,
        /// What was found, what was asked and how to reopen it.
        #[source]
        mismatch: Mismatch,
    },
    /// A table of the catalog has no columns or more than 64 (column sets are 64-bit masks).
    #[error("schema: table {table} has {columns} columns; a table needs 1 to 64")]
    Schema {
        /// The table's name.
        table: String,
        /// Its number of columns.
        columns: usize,
    },
    /// Options that cannot work together (a scheme and a device, a logging kind and a
    /// concurrency control, ...); the message says which and what to use instead.
    #[error("not supported: {0}")]
    Unsupported(#[source] Unsupported),
    /// A workload's or the database's parameter out of range.
    #[error("invalid option: {0}")]
    BadOption(#[source] BadParameter),
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
    #[error("engine thread: cannot start the {thread} thread: {source}")]
    Thread {
        /// Which thread (`"checkpoint"`).
        thread: &'static str,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A state the engine's own invariants rule out: a bug in braid.
    #[error("internal error (a bug in braid, please report it): {0}")]
    Internal(#[source] Invariant),
    /// The application's loader (see [`OpenBuilder::loader`](crate::OpenBuilder::loader))
    /// failed with an error of its own, kept as the source; [`EngineError::load`] makes one.
    #[error("loading the initial data failed: {source}")]
    Load {
        /// The loader's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A loader inserted a row into a table the catalog does not have
    /// ([`Loader::insert`](crate::Loader::insert)).
    #[error("loading the initial data failed: no table {table}")]
    LoadNoTable {
        /// The table id asked for ([`TableId`](crate::TableId)`.0`).
        table: u32,
    },
    /// A loader inserted a row image whose length is not its table's row length
    /// ([`Loader::insert`](crate::Loader::insert)).
    #[error(
        "loading the initial data failed: table {table}: row of {len} bytes, the schema says {expected}"
    )]
    LoadRowLength {
        /// The table's name.
        table: String,
        /// Bytes of the row image given.
        len: usize,
        /// Bytes of a row of the table.
        expected: usize,
    },
    /// A checkpoint file is damaged or missing.
    #[error("checkpoint {path}, offset {offset}: {damage}")]
    BadCheckpoint {
        /// The checkpoint file.
        path: PathBuf,
        /// Byte offset of the damage (0 for a missing file).
        offset: u64,
        /// What is wrong there.
        damage: CheckpointDamage,
    },
    /// Taking or loading checkpoints failed otherwise, e.g. every checkpoint is damaged and
    /// the log they replaced is gone; the [`CheckpointError`] says how.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
}

impl EngineError {
    /// An [`EngineError::Load`] keeping `source`, the loader's own error (a `&str` or `String`
    /// makes a message-only one).
    pub fn load(source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> EngineError {
        EngineError::Load {
            source: source.into(),
        }
    }
}

/// How taking or loading checkpoints failed ([`EngineError::Checkpoint`]), beyond a damaged
/// checkpoint file ([`EngineError::BadCheckpoint`]) and I/O on the database's own files
/// ([`EngineError::Io`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// The checkpoint store of an external device could not list its checkpoints.
    #[error("checkpoint: cannot list the checkpoints in {location}: {source}")]
    List {
        /// The store ([`CheckpointStore::location`](crate::CheckpointStore::location)).
        location: String,
        /// The store's error.
        #[source]
        source: Box<WalError>,
    },
    /// The checkpoint store could not store a checkpoint.
    #[error("checkpoint: cannot store checkpoint {name} in {location}: {source}")]
    Put {
        /// The checkpoint's file name.
        name: String,
        /// The store.
        location: String,
        /// The store's error.
        #[source]
        source: Box<WalError>,
    },
    /// The checkpoint store could not hand back a checkpoint it lists.
    #[error("checkpoint: cannot read checkpoint {name} from {location}: {source}")]
    Get {
        /// The checkpoint's file name.
        name: String,
        /// The store.
        location: String,
        /// The store's error.
        #[source]
        source: Box<WalError>,
    },
    /// The checkpoint store could not remove a checkpoint older than those kept.
    #[error("checkpoint: cannot remove checkpoint {name} from {location}: {source}")]
    Remove {
        /// The checkpoint's file name.
        name: String,
        /// The store.
        location: String,
        /// The store's error.
        #[source]
        source: Box<WalError>,
    },
    /// The checkpoint store does not hold the checkpoint the log was about to be truncated up
    /// to, so it was not.
    #[error(
        "checkpoint: {location} does not hold checkpoint {name}, so the log is not truncated up to it"
    )]
    NotHeld {
        /// The store.
        location: String,
        /// The checkpoint's file name.
        name: String,
    },
    /// A checkpoint just taken could not be stored beside the log: it was dropped (it must
    /// not count, since recovery would not find it there) and the log was not truncated.
    #[error(
        "checkpoint: {source}; the checkpoint was dropped and the log not truncated{}",
        removal_text(.removal.as_ref())
    )]
    Dropped {
        /// Why it could not be stored.
        #[source]
        source: Box<EngineError>,
        /// The local file, and the error removing it, where that failed too.
        removal: Option<(PathBuf, std::io::Error)>,
    },
    /// Every checkpoint is damaged and the log they replaced was truncated: nothing can be
    /// recovered safely.
    #[error(
        "checkpoint: every checkpoint in {} is damaged and the log before them was truncated, \
         so nothing can be recovered safely: {}",
        .dir.display(),
        .damaged.join("; ")
    )]
    AllDamaged {
        /// The checkpoint directory.
        dir: PathBuf,
        /// Why each checkpoint was passed over.
        damaged: Vec<String>,
    },
    /// A stream's log starts after what the loaded checkpoint covers: records between were
    /// truncated with checkpoints that are gone, and recovering would lose transactions.
    #[error(
        "checkpoint: stream {stream}'s log starts at LSN {first}, but checkpoint {} covers only \
         the records before LSN {covered}: the log between was truncated, so recovering would \
         lose transactions; put the newer checkpoints back into {kept} (or recover from a \
         backup)",
        .checkpoint.display()
    )]
    LogAfterCheckpoint {
        /// The stream.
        stream: usize,
        /// The stream's first kept LSN.
        first: Lsn,
        /// The checkpoint loaded.
        checkpoint: PathBuf,
        /// The LSN up to which it covers the stream.
        covered: Lsn,
        /// Where the checkpoints are kept (a directory, or an external store's location).
        kept: String,
    },
    /// A stream's log was truncated after a checkpoint, but no valid checkpoint is left to
    /// recover from: recovering from the loader would lose every transaction before.
    #[error(
        "checkpoint: stream {stream}'s log starts at LSN {first}: the log before it was \
         truncated after a checkpoint, but {kept} holds no valid checkpoint{}; recovering from \
         the loader and the rest of the log would lose every transaction before LSN {first}. \
         Put the checkpoints back into {kept} (or recover from a backup)",
        damaged_text(.damaged)
    )]
    LogWithoutCheckpoint {
        /// The stream.
        stream: usize,
        /// The stream's first kept LSN.
        first: Lsn,
        /// Where the checkpoints are kept (a directory, or an external store's location).
        kept: String,
        /// Why each damaged checkpoint was passed over (empty if there were none).
        damaged: Vec<String>,
    },
}

/// What is wrong with a checkpoint file ([`EngineError::BadCheckpoint`], which names the file
/// and the offset).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointDamage {
    /// The file is missing.
    #[error("missing")]
    Missing,
    /// The file was missing right after it was written and sealed.
    #[error("missing right after it was sealed")]
    MissingAfterSeal,
    /// The file does not start with the checkpoint magic.
    #[error("not a braid checkpoint (bad magic)")]
    BadMagic,
    /// The file ends inside its header.
    #[error("truncated header")]
    TruncatedHeader,
    /// The file has a format version this braid does not read.
    #[error("checkpoint format {found}; this braid reads formats {oldest} and {newest}")]
    Version {
        /// The version in the file.
        found: u32,
        /// The oldest version this braid reads.
        oldest: u32,
        /// The version this braid writes.
        newest: u32,
    },
    /// The header length is too short for a header or longer than the file.
    #[error("header length {len} out of range")]
    HeaderLength {
        /// The header length recorded.
        len: usize,
    },
    /// The header fails its checksum.
    #[error("header checksum mismatch")]
    HeaderChecksum,
    /// The stream count does not fit the header length.
    #[error("{streams} streams do not fit a header of {header_len} bytes")]
    Streams {
        /// The stream count recorded.
        streams: usize,
        /// The header length recorded.
        header_len: usize,
    },
    /// The checkpoint holds another number of tables than the catalog.
    #[error("{found} tables, but the catalog has {catalog}; was it written for another schema?")]
    Tables {
        /// Tables in the checkpoint.
        found: u32,
        /// Tables in the catalog.
        catalog: usize,
    },
    /// Where a chunk or the footer should start, there is neither.
    #[error("neither a chunk nor the footer")]
    NotAChunk,
    /// The file ends before its footer: it was not completely written.
    #[error("ends without a footer (incomplete)")]
    NoFooter,
    /// The file ends inside a chunk header.
    #[error("truncated chunk")]
    TruncatedChunk,
    /// A chunk runs past the end of the file.
    #[error("chunk of {len} bytes runs past the end")]
    ChunkPastEnd {
        /// The chunk's body length.
        len: usize,
    },
    /// A chunk names a table the catalog does not have.
    #[error("chunk of unknown table {table}")]
    UnknownTable {
        /// The table id in the chunk.
        table: u32,
    },
    /// A chunk's rows do not fill its body.
    #[error("{rows} rows of table {table} do not fill {len} bytes")]
    ChunkRows {
        /// Rows the chunk counts.
        rows: u32,
        /// Its table.
        table: u32,
        /// Its body length.
        len: usize,
    },
    /// A chunk fails its checksum.
    #[error("chunk checksum mismatch")]
    ChunkChecksum,
    /// The footer is not of the footer's length.
    #[error("{len} bytes after the footer's start, expected {expected}")]
    FooterLength {
        /// Bytes from the footer's start to the end of the file.
        len: usize,
        /// Bytes of a footer.
        expected: usize,
    },
    /// The footer's chunk count, row count or checksum does not match the chunks.
    #[error("footer does not match the chunks")]
    FooterMismatch,
}

fn removal_text(removal: Option<&(PathBuf, std::io::Error)>) -> String {
    removal.map_or(String::new(), |(path, e)| {
        format!(" (removing {} failed too: {e})", path.display())
    })
}

fn damaged_text(damaged: &[String]) -> String {
    if damaged.is_empty() {
        String::new()
    } else {
        format!(" (damaged: {})", damaged.join("; "))
    }
}
