//! Errors of the log layer. Cloneable so one failure can be handed to every waiting commit.
//! [`WalError`] names the file, offset, stream or service concerned; the typed kinds inside
//! its variants ([`damage`], [`refusal`]) say what exactly went wrong.

mod damage;
mod refusal;

use std::path::PathBuf;
use std::sync::Arc;

pub use damage::{Corruption, RecordFault, RecordProblem, RingFault, SegmentDamage, WrongLog};
pub use refusal::{
    BadOption, BadSize, Fence, FullRing, Invariant, Misuse, Refused, RemoteFailure, Unsupported,
};

/// An error of the log layer. The `Display` text says what failed and what to do about it.
///
/// Non-exhaustive: match the variants you act on and treat the rest as failures.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum WalError {
    /// A file-system operation failed (see `WalError::io`).
    #[error("{op} {path}: {source}")]
    Io {
        /// The file or directory concerned.
        path: PathBuf,
        /// The operation, e.g. `"fdatasync"`.
        op: &'static str,
        /// The underlying error.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// The stream failed earlier (e.g. a failed sync); every pending and later commit on it
    /// fails with this.
    #[error(
        "log stream {stream} is poisoned by an earlier failure ({during}: {cause}); nothing after it is acknowledged; reopen the database to recover every acknowledged commit"
    )]
    Poisoned {
        /// The stream's index.
        stream: u32,
        /// What the stream was doing when it failed (e.g. "flushing LSNs 4096..8192").
        during: String,
        /// The first failure.
        #[source]
        cause: Arc<WalError>,
    },
    /// The device has no space for the bytes to make durable. Not poisoning: the stream
    /// retries once space returns.
    #[error(
        "log device {path} is out of space: the commit was not acknowledged (it is durable only if space returns and the log catches up); free space and retry"
    )]
    NoSpace {
        /// The device's directory or file.
        path: PathBuf,
    },
    /// Damaged log bytes that are not a torn tail: valid records follow them, or they were
    /// known to be durable.
    #[error(
        "corrupt log in {file} at byte offset {offset}: {damage}; valid records follow it, so this is not a torn tail (use salvage mode to keep only the prefix before it)"
    )]
    Corrupt {
        /// The file (or region) holding the bad bytes.
        file: String,
        /// Byte offset of the bad bytes in that file.
        offset: u64,
        /// What is wrong with them.
        #[source]
        damage: Corruption,
    },
    /// The log stream is open in another process, or through another handle in this one: a
    /// stream has one writer at a time.
    #[error(
        "{path} is in use by {}; a log has one writer at a time: close the other handle or wait for that process to exit",
        braid_pmem::lock::holder_text(*.holder)
    )]
    InUse {
        /// The lock file (or region file) that is held.
        path: PathBuf,
        /// The holder's process id, where the kernel tells it.
        holder: Option<u32>,
    },
    /// A segment file or ring header that cannot be used: damaged, of another stream, or
    /// written by a newer format version.
    #[error("bad segment file {file}: {damage}")]
    BadSegment {
        /// The file (or region) concerned.
        file: String,
        /// What is wrong with it.
        #[source]
        damage: SegmentDamage,
    },
    /// A record larger than `MAX_RECORD_LEN`.
    #[error("log record of {len} bytes exceeds the limit of {max} bytes")]
    RecordTooLarge {
        /// The record's unpadded length in bytes.
        len: usize,
        /// The limit in bytes.
        max: usize,
    },
    /// A persistent ring (a pmem device, or the per-transaction scheme's log index) stayed
    /// full: nothing freed space in time.
    #[error(
        "the persistent log ring {ring} is full; enable de-staging to files or take checkpoints"
    )]
    LogFull {
        /// The ring that is full, with its stream and size.
        #[source]
        ring: FullRing,
    },
    /// No scheme is registered under this name.
    #[error("unknown scheme {name:?}; known schemes: {known}")]
    UnknownScheme {
        /// The name asked for.
        name: String,
        /// The registered names, comma-separated.
        known: String,
    },
    /// A scheme or device option that is unknown, malformed or out of range.
    #[error("invalid option: {0}")]
    BadOption(#[source] BadOption),
    /// A scheme was given a number of log streams (devices) it cannot use.
    #[error("the {scheme} scheme uses {} log streams, {given} were given", stream_range(*.min, *.max))]
    StreamCount {
        /// The scheme (or log) concerned.
        scheme: String,
        /// Streams given.
        given: usize,
        /// Fewest streams it accepts.
        min: usize,
        /// Most streams it accepts.
        max: usize,
    },
    /// More workers or writers at once than the log was opened for.
    #[error("{what}: all {max} are in use; {remedy}")]
    TooMany {
        /// What ran out (worker slots of a scheme, writer slots of a stream, ...).
        what: &'static str,
        /// How many there are.
        max: usize,
        /// What to change.
        remedy: &'static str,
    },
    /// A size, count or alignment the log cannot work with (a buffer, segment, region or
    /// slot too small or misaligned).
    #[error("invalid size: {0}")]
    BadSize(#[source] BadSize),
    /// A combination this scheme or device does not support (a logging kind, a device kind,
    /// following as a standby, O_DIRECT on this file system).
    #[error("not supported: {0}")]
    Unsupported(#[source] Unsupported),
    /// The log found is not what this configuration reads: records of another scheme, a
    /// region of another stream, a striping other than the one it was created with.
    #[error("the log does not match this configuration: {0}")]
    WrongLog(#[source] WrongLog),
    /// A background thread of the log could not start.
    #[error("log thread: cannot start the {thread} thread: {source}")]
    ThreadStart {
        /// Which thread.
        thread: &'static str,
        /// The operating system's error.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// A thread of the log (or one of its callers' threads it waits for) panicked.
    #[error("log thread: {thread} panicked")]
    ThreadPanicked {
        /// Which thread.
        thread: &'static str,
    },
    /// A call outside a device's or stream's contract (a position outside its extent, an
    /// unaligned length): a bug in the caller.
    #[error("log misuse: {0}")]
    Misuse(#[source] Misuse),
    /// A state the log's own invariants rule out: a bug in braid.
    #[error("internal error (a bug in braid, please report it): {0}")]
    Internal(#[source] Invariant),
    /// A persistent-memory region failed.
    #[error(transparent)]
    Pmem(Arc<braid_pmem::PmemError>),
    /// The stream with this index (0 for a scheme's log that is not a stream) was closed:
    /// nothing more is appended to it.
    #[error("log stream {0} is shut down")]
    Closed(u32),
    /// The engine's [`Replay`](crate::scheme::Replay) failed on a recovered transaction.
    #[error("replaying transaction {txn} (stream {stream}, LSN {lsn}) failed: {cause}")]
    Replay {
        /// The stream of the record being replayed.
        stream: u32,
        /// That record's position in its stream.
        lsn: u64,
        /// The transaction id.
        txn: u64,
        /// The engine's replay error.
        #[source]
        cause: Arc<dyn std::error::Error + Send + Sync>,
    },
    /// A replicated log device refused this writer: another writer claimed the database after
    /// it (a newer writer epoch, or a stream that moved on without it). Nothing this writer
    /// writes from now on is acknowledged.
    #[error(
        "log stream {stream}: this writer was fenced by a newer writer of the database ({fence}); nothing it writes is acknowledged any more; the newer writer recovers every commit acknowledged before"
    )]
    Fenced {
        /// The stream whose write was refused.
        stream: u32,
        /// What showed the newer writer (its epoch, the refused sequence).
        #[source]
        fence: Fence,
    },
    /// A standby fell behind the log: the writer's checkpoint truncation removed records the
    /// standby had not replayed yet. Reopening the standby starts it from the newest
    /// checkpoint.
    #[error(
        "log stream {stream}: the standby fell behind the log (it resumes at {unit} {resume}, but {} {unit} {start}); open the standby again: it starts from the newest checkpoint",
        if *.purged { "the writer purged everything before" } else { "the stream now starts at" }
    )]
    Behind {
        /// The stream concerned.
        stream: u32,
        /// What the standby counts in (`"LSN"`, or a replicated log's `"sequence"`).
        unit: &'static str,
        /// Where the standby resumes.
        resume: u64,
        /// Where the stream starts now.
        start: u64,
        /// Whether the writer purged what the standby needed (a replicated log).
        purged: bool,
    },
    /// A replicated log service failed or did not answer in time (a timeout names the service
    /// and the stream).
    #[error("replicated log {service}: {during}: {failure}")]
    Remote {
        /// The service and the stream concerned (URL and stream name).
        service: String,
        /// What was being done (e.g. "publishing to braid-db-0").
        during: String,
        /// What failed.
        #[source]
        failure: RemoteFailure,
    },
}

/// "exactly one", "exactly 3", "at least 1" or "1 to 64", for [`WalError::StreamCount`].
fn stream_range(min: usize, max: usize) -> String {
    match (min, max) {
        (1, 1) => "exactly one".to_string(),
        (a, usize::MAX) => format!("at least {a}"),
        (a, b) if a == b => format!("exactly {a}"),
        (a, b) => format!("{a} to {b}"),
    }
}

impl From<braid_pmem::PmemError> for WalError {
    fn from(e: braid_pmem::PmemError) -> Self {
        WalError::Pmem(Arc::new(e))
    }
}

impl WalError {
    /// Wrap an I/O error with the operation and the path it concerned.
    pub(crate) fn io(
        op: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> WalError {
        WalError::Io {
            path: path.into(),
            op,
            source: Arc::new(source),
        }
    }

    /// A [`WalError::ThreadStart`] for `thread`.
    pub(crate) fn thread_start(thread: &'static str, source: std::io::Error) -> WalError {
        WalError::ThreadStart {
            thread,
            source: Arc::new(source),
        }
    }
}

/// A name that is none of an enumeration's (a scheme option, a logging kind, a concurrency
/// control, a workload mix...): says what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {given:?}; use {}", .choices.join(", "))]
pub struct UnknownName {
    /// What was being named, e.g. `"logging kind"`.
    pub what: &'static str,
    /// The name given.
    pub given: String,
    /// The names accepted.
    pub choices: &'static [&'static str],
}

impl UnknownName {
    /// `given` is not one of `choices` for `what`.
    pub fn new(what: &'static str, given: &str, choices: &'static [&'static str]) -> UnknownName {
        UnknownName {
            what,
            given: given.to_string(),
            choices,
        }
    }
}

impl From<braid_pmem::lock::LockError> for WalError {
    fn from(e: braid_pmem::lock::LockError) -> WalError {
        match e {
            braid_pmem::lock::LockError::InUse { path, holder } => WalError::InUse { path, holder },
            braid_pmem::lock::LockError::Io { path, source } => WalError::Io {
                path,
                op: "lock",
                source: Arc::new(source),
            },
            // A kind of a later braid-pmem: kept whole as the I/O error's source.
            other => WalError::Io {
                path: PathBuf::new(),
                op: "lock",
                source: Arc::new(std::io::Error::other(other)),
            },
        }
    }
}
