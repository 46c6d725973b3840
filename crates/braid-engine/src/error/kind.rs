//! The typed kinds inside the engine's error variants: how a database differs from the options
//! it is opened with ([`Mismatch`]), what the engine does not support ([`Unsupported`]), a
//! parameter out of range ([`BadParameter`]), a request a transaction cannot run
//! ([`BadRequest`]) and the engine's broken invariants ([`Invariant`]).

use std::path::PathBuf;

use braid_wal::WalError;

/// How a database differs from the options it is opened with
/// ([`EngineError::Mismatch`](super::EngineError::Mismatch), which names the directory).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Mismatch {
    /// Written by another format of braid.
    #[error("written by braid format {found}, this braid reads format {reads}")]
    Format {
        /// The format found.
        found: u32,
        /// The format this braid reads.
        reads: u32,
    },
    /// Created with another scheme.
    #[error(
        "created with scheme {found}; reopen it with Options::scheme {found}, or use a new directory for scheme {want}"
    )]
    Scheme {
        /// The scheme it was created with.
        found: String,
        /// The scheme asked for.
        want: String,
    },
    /// Created with another number of log streams.
    #[error(
        "created with {found} log streams; reopen it with Options::streams {found}, or use a new directory"
    )]
    Streams {
        /// The streams it was created with.
        found: usize,
    },
    /// Its log is on another kind of device.
    #[error(
        "keeps its log on a {found} device; reopen it with an Options::device of kind {found}, or use a new directory"
    )]
    Device {
        /// The device kind it was created with.
        found: String,
    },
    /// Created with (or without) multi-versioning, opened the other way.
    #[error(
        "created {} multi-versioning (its log records {} commit timestamps); reopen it with {}, or use a new directory for {}",
        if *.found { "with" } else { "without" },
        if *.found { "carry" } else { "lack" },
        if *.found { "Options::cc Cc::Mvcc" } else { "Options::cc Cc::TwoPl or Cc::Occ" },
        if *.found { "2pl or occ" } else { "mvcc" }
    )]
    Mvcc {
        /// Whether it was created with multi-versioning.
        found: bool,
    },
    /// Its persistent-memory rings are of another size.
    #[error(
        "has pmem log rings of {found} bytes; reopen it with that PmemOptions::ring_size, or use a new directory"
    )]
    RingSize {
        /// The ring size it was created with.
        found: usize,
    },
    /// Its file log is striped otherwise.
    #[error("keeps its log {}; reopen it with {}, or use a new directory", stripe_text(*.found), stripe_options(*.found))]
    Stripe {
        /// Its striping (members and unit in bytes), `None` for one device per stream.
        found: Option<(usize, u64)>,
    },
    /// Its catalog is another.
    #[error("schema mismatch: {difference}; open it with the workload and options that created it")]
    Catalog {
        /// How the catalogs differ, in words (which table, which column).
        difference: String,
    },
    /// Its log is elsewhere than the external device opened.
    #[error("{source}")]
    Location {
        /// The device's refusal.
        #[source]
        source: Box<WalError>,
    },
}

impl Mismatch {
    /// The setting that differs: `"format"`, `"scheme"`, `"streams"`, `"device"`, `"cc"`,
    /// `"ring_size"`, `"stripe"`, `"catalog"` or `"location"`.
    pub fn setting(&self) -> &'static str {
        match self {
            Mismatch::Format { .. } => "format",
            Mismatch::Scheme { .. } => "scheme",
            Mismatch::Streams { .. } => "streams",
            Mismatch::Device { .. } => "device",
            Mismatch::Mvcc { .. } => "cc",
            Mismatch::RingSize { .. } => "ring_size",
            Mismatch::Stripe { .. } => "stripe",
            Mismatch::Catalog { .. } => "catalog",
            Mismatch::Location { .. } => "location",
        }
    }
}

fn stripe_text(s: Option<(usize, u64)>) -> String {
    match s {
        Some((n, unit)) => format!("striped over {n} devices in {} KiB units", unit >> 10),
        None => "on one device per stream".to_string(),
    }
}

fn stripe_options(s: Option<(usize, u64)>) -> String {
    match s {
        Some((n, unit)) => format!("FileOptions::stripe {n} and FileOptions::stripe_unit {unit}"),
        None => "FileOptions::stripe 1".to_string(),
    }
}

/// Options the engine cannot run together
/// ([`EngineError::Unsupported`](super::EngineError::Unsupported)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Unsupported {
    /// The scheme refuses the logging kind, the concurrency control, the device or the
    /// record granularity asked for.
    #[error("{0}")]
    Log(#[source] braid_wal::Unsupported),
    /// A scheme that keeps its log in persistent memory, without the pmem device.
    #[error("scheme {scheme} keeps its log in persistent memory; use the pmem device")]
    NeedsPmem {
        /// The scheme.
        scheme: String,
    },
    /// A scheme that needs a log device, without one.
    #[error("scheme {scheme} needs a log device (pmem or file); only scheme none runs without one")]
    NeedsDevice {
        /// The scheme.
        scheme: String,
    },
    /// A device pace for a scheme whose log is a persistent-memory region.
    #[error(
        "scheme {scheme} keeps its log in a persistent-memory region, which an emulated device speed cannot pace; run it without a device pace"
    )]
    PacedRegion {
        /// The scheme.
        scheme: String,
    },
    /// Per-update records with command logging.
    #[error(
        "per-update records are redo images of writes; command logging logs one call per transaction: use data logging, or one record per transaction"
    )]
    UpdateRecordsCommand,
    /// Per-update records under MVCC.
    #[error(
        "per-update records are not supported under MVCC, whose records carry a commit timestamp drawn at commit: use 2PL or OCC, or one record per transaction"
    )]
    UpdateRecordsMvcc,
    /// A checkpoint of a database that keeps no log.
    #[error(
        "scheme none keeps no log, so a checkpoint could not be recovered from; use a logging scheme"
    )]
    CheckpointWithoutLog,
    /// A read-only open of a database whose log is on an external device.
    #[error("{} keeps its log on an external device; read it with a Standby", .dir.display())]
    ExternalReadOnly {
        /// The database directory.
        dir: PathBuf,
    },
    /// A standby of a log on the machine.
    #[error(
        "a standby follows a log kept outside the machine: use an external device (DeviceConfig::External)"
    )]
    StandbyNeedsExternal,
}

/// A parameter of a workload or of the database out of range
/// ([`EngineError::BadOption`](super::EngineError::BadOption)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{owner}: {name} {value} is not accepted: use {accepted}")]
#[non_exhaustive]
pub struct BadParameter {
    /// Whose parameter (`"tpcc"`, ...).
    pub owner: &'static str,
    /// The parameter.
    pub name: &'static str,
    /// Its value.
    pub value: String,
    /// What is accepted.
    pub accepted: &'static str,
}

impl BadParameter {
    /// `owner`'s parameter `name` of `value` is not accepted; `accepted` says what is.
    pub fn new(
        owner: &'static str,
        name: &'static str,
        value: impl ToString,
        accepted: &'static str,
    ) -> BadParameter {
        BadParameter {
            owner,
            name,
            value: value.to_string(),
            accepted,
        }
    }
}

/// A request a transaction cannot run ([`TxError::BadRequest`](super::TxError::BadRequest),
/// which names the table).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BadRequest {
    /// No table of this id.
    #[error("no such table")]
    NoTable,
    /// A row image of the wrong length.
    #[error("insert of {len} bytes into rows of {expected} bytes")]
    RowLength {
        /// Bytes given.
        len: usize,
        /// Bytes of a row.
        expected: usize,
    },
    /// A range scan of a hash-indexed table.
    #[error("range scan on a hash-indexed table")]
    RangeOnHash,
    /// Procedure parameters that end too early.
    #[error("procedure parameters end at byte {at} (wanted {wanted} more)")]
    ParamsEnd {
        /// Where they end.
        at: usize,
        /// Bytes wanted.
        wanted: usize,
    },
    /// A procedure parameter out of range.
    #[error("{0}")]
    Param(BadParameter),
}

/// A state the engine's own invariants rule out
/// ([`EngineError::Internal`](super::EngineError::Internal)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Invariant {
    /// A checkpoint row of a table its header does not count.
    #[error("a checkpoint row of table {table}, which its header does not count")]
    UncountedTable {
        /// The table id.
        table: u32,
    },
    /// A checkpoint path without a file name.
    #[error("checkpoint path {} has no file name", .path.display())]
    NoFileName {
        /// The path.
        path: PathBuf,
    },
    /// `braid.json` could not be encoded.
    #[error("encoding braid.json: {0}")]
    MetaEncode(#[source] serde_json::Error),
}
