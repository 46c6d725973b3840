//! Errors of the log layer. Cloneable so one failure can be handed to every waiting commit.

use std::path::PathBuf;
use std::sync::Arc;

#[derive(Debug, Clone, thiserror::Error)]
pub enum WalError {
    #[error("{op} {path}: {source}")]
    Io {
        path: PathBuf,
        op: &'static str,
        #[source]
        source: Arc<std::io::Error>,
    },
    #[error(
        "log stream {stream} is poisoned by an earlier failure ({cause}); nothing after it is acknowledged; reopen the database to recover every acknowledged commit"
    )]
    Poisoned { stream: u32, cause: String },
    #[error(
        "log device {path} is out of space: the commit was not acknowledged (it is durable only if space returns and the log catches up); free space and retry"
    )]
    NoSpace { path: PathBuf },
    #[error(
        "corrupt log in {file} at byte offset {offset}: {reason}; valid records follow it, so this is not a torn tail (use salvage mode to keep only the prefix before it)"
    )]
    Corrupt {
        file: String,
        offset: u64,
        reason: String,
    },
    #[error("bad segment file {file}: {reason}")]
    BadSegment { file: String, reason: String },
    #[error("log record of {len} bytes exceeds the limit of {max} bytes")]
    RecordTooLarge { len: usize, max: usize },
    #[error(
        "the persistent log ring {what} is full; enable de-staging to files or take checkpoints"
    )]
    LogFull { what: String },
    #[error("configuration: {0}")]
    Config(String),
    #[error(transparent)]
    Pmem(Arc<braid_pmem::PmemError>),
    #[error("log stream {0} is shut down")]
    Closed(u32),
    #[error("replaying transaction {txn} (stream {stream}, LSN {lsn}) failed: {cause}")]
    Replay {
        stream: u32,
        lsn: u64,
        txn: u64,
        cause: String,
    },
}

impl From<braid_pmem::PmemError> for WalError {
    fn from(e: braid_pmem::PmemError) -> Self {
        WalError::Pmem(Arc::new(e))
    }
}

impl WalError {
    /// Wrap an I/O error with the operation and the path it concerned.
    pub fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> WalError {
        WalError::Io {
            path: path.into(),
            op,
            source: Arc::new(source),
        }
    }
}
