//! What the log refuses or cannot do: full rings, bad options and sizes, unsupported
//! combinations, misuse by a caller, broken invariants, fenced writers and failed remote
//! services, the kinds inside [`WalError`](super::WalError)'s variants of those names.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The ring that stayed full ([`WalError::LogFull`](super::WalError::LogFull)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FullRing {
    /// A persistent-memory device's ring.
    #[error("{region} (stream {stream}, {bytes} bytes)")]
    Pmem {
        /// The region.
        region: String,
        /// The stream.
        stream: u32,
        /// The ring's size.
        bytes: u64,
    },
    /// The per-transaction scheme's log index: no truncation freed an entry in time.
    #[error(
        "index of {entries} entries (no truncation freed an entry for LSN {lsn} within {waited:?})"
    )]
    PertxnIndex {
        /// Entries of the index.
        entries: u64,
        /// The LSN waiting for an entry.
        lsn: u64,
        /// How long it waited.
        waited: Duration,
    },
    /// The per-transaction scheme's LSN space.
    #[error("pertxn LSN space")]
    PertxnLsns,
}

/// A scheme or device option that is malformed or out of range
/// ([`WalError::BadOption`](super::WalError::BadOption)).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum BadOption {
    /// A scheme option not written as `key=value`.
    #[error("scheme option {given:?} of {scheme}: write it as key=value")]
    NotKeyValue {
        /// The scheme.
        scheme: String,
        /// The text given.
        given: String,
    },
    /// An option the scheme does not have.
    #[error("scheme {scheme} has no option {key:?}{}", known_text(.known))]
    Unknown {
        /// The scheme.
        scheme: String,
        /// The option asked for.
        key: String,
        /// The scheme's options.
        known: Vec<&'static str>,
    },
    /// A value that does not parse or is out of range.
    #[error("scheme {scheme}: option {key}={value}: {source}")]
    Value {
        /// The scheme.
        scheme: String,
        /// The option.
        key: String,
        /// The value given.
        value: String,
        /// Why it is refused.
        #[source]
        source: Arc<dyn std::error::Error + Send + Sync>,
    },
    /// A number out of its range.
    #[error("scheme {scheme}: option {key}={value}: use {}", range_text(*.min, *.max))]
    Range {
        /// The scheme.
        scheme: &'static str,
        /// The option.
        key: &'static str,
        /// The value given.
        value: u64,
        /// The least accepted.
        min: u64,
        /// The most accepted (`u64::MAX`: no bound).
        max: u64,
    },
    /// A value this CPU cannot run.
    #[error("scheme {scheme}: {key}={value}: this CPU cannot run it (it can run: {})", .runs.join(", "))]
    Cpu {
        /// The scheme.
        scheme: &'static str,
        /// The option.
        key: &'static str,
        /// The value given.
        value: String,
        /// The values this CPU runs.
        runs: Vec<String>,
    },
    /// Two options that cannot go together.
    #[error("scheme {scheme}: {first} cannot go with {second}: {why}")]
    Conflict {
        /// The scheme.
        scheme: &'static str,
        /// One option with its value.
        first: String,
        /// The other.
        second: String,
        /// Why.
        why: &'static str,
    },
    /// A replicated device's database id that cannot name its streams.
    #[error(
        "database id {db_id:?} cannot name NATS streams: use 1 to 64 letters, digits, '-' or '_'"
    )]
    DbId {
        /// The id given.
        db_id: String,
    },
    /// A replicated device without a server address.
    #[error("no NATS URL: set the device's url to nats://HOST:PORT[,nats://...]")]
    NoUrl,
}

fn range_text(min: u64, max: u64) -> String {
    if max == u64::MAX {
        format!("at least {min}")
    } else {
        format!("{min} to {max}")
    }
}

fn known_text(known: &[&str]) -> String {
    if known.is_empty() {
        " (it has no options)".to_string()
    } else {
        format!("; its options: {}", known.join(", "))
    }
}

/// A size, count or alignment the log cannot work with
/// ([`WalError::BadSize`](super::WalError::BadSize)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BadSize {
    /// An LSN-vector stamp with too many entries.
    #[error("an LSN-vector stamp of {entries} entries exceeds the limit of {max}")]
    Stamp {
        /// Entries of the stamp.
        entries: usize,
        /// The limit.
        max: usize,
    },
    /// A file device's buffer too small.
    #[error("log buffer of {bytes} bytes is too small (at least {min}{})", if *.direct { " with O_DIRECT" } else { "" })]
    Buffer {
        /// The buffer's size.
        bytes: usize,
        /// The least.
        min: usize,
        /// Whether O_DIRECT is on (it needs more).
        direct: bool,
    },
    /// A segment size that is not a positive multiple of 4096.
    #[error("segment size {bytes} must be a positive multiple of 4096")]
    Segment {
        /// The size given.
        bytes: u64,
    },
    /// A persistent-memory region too small for a log ring.
    #[error(
        "pmem region {region} of {bytes} bytes is too small for a log ring (at least {min} bytes)"
    )]
    Region {
        /// The region.
        region: String,
        /// Its usable bytes.
        bytes: u64,
        /// The least.
        min: u64,
    },
    /// A striping that cannot work.
    #[error(
        "a striped device needs at least 2 members and a unit that is a multiple of 4096 smaller than each member's buffer ({members} members, unit {unit}, buffer {buffer})"
    )]
    Stripe {
        /// Members given.
        members: usize,
        /// The unit given.
        unit: u64,
        /// The smallest member buffer.
        buffer: u64,
    },
    /// A per-transaction slot size out of range.
    #[error("pertxn slot size {bytes} must be a multiple of {align} between {min} and {max}")]
    Slot {
        /// The size given.
        bytes: usize,
        /// The alignment.
        align: usize,
        /// The least.
        min: usize,
        /// The most.
        max: usize,
    },
    /// A per-transaction region with too few slots.
    #[error(
        "a pertxn region of {bytes} bytes holds only {entries} slots of {slot} bytes; at least {min} are needed (give it a larger ring)"
    )]
    Slots {
        /// The region's size.
        bytes: usize,
        /// The slots it holds.
        entries: u64,
        /// The slot size.
        slot: usize,
        /// The least.
        min: u64,
    },
    /// A per-transaction region too small for its superblock.
    #[error("{region}: {bytes} bytes is too small for a pertxn region")]
    PertxnRegion {
        /// The region.
        region: String,
        /// Its size.
        bytes: usize,
    },
}

/// What a scheme refuses ([`Unsupported::Scheme`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::Display)]
#[strum(serialize_all = "snake_case")]
#[non_exhaustive]
pub enum Refused {
    /// Command logging ([`LogKind::Command`](crate::LogKind::Command)).
    CommandLogging,
    /// The multi-versioned engine.
    Mvcc,
    /// A persistent-memory device.
    Pmem,
    /// One record per update.
    UpdateRecords,
    /// An option combination of the scheme.
    Options,
}

/// A combination the log does not support ([`WalError::Unsupported`](super::WalError::Unsupported)).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Unsupported {
    /// A scheme refuses a logging kind, a concurrency control, a device or an option
    /// combination; `why` says why and what to use instead.
    #[error("{why}")]
    Scheme {
        /// The scheme.
        scheme: &'static str,
        /// What it refuses.
        refused: Refused,
        /// Why, and what to use instead.
        why: &'static str,
    },
    /// The file system refuses O_DIRECT.
    #[error(
        "the file system of {} refuses O_DIRECT ({source}); configure the log without direct I/O or put it on another file system",
        .dir.display()
    )]
    Direct {
        /// The log directory.
        dir: PathBuf,
        /// The refusal.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// Striping over persistent-memory rings.
    #[error("striping is over file devices; persistent-memory rings cannot be striped")]
    StripedPmem,
    /// A scheme's logs on devices of different kinds.
    #[error("the {scheme} scheme needs all its logs on one kind of device (all pmem or all files)")]
    MixedDevices {
        /// The scheme.
        scheme: &'static str,
    },
    /// A standby of a scheme whose commits are not a prefix of each stream.
    #[error(
        "a standby cannot follow scheme {scheme}: what it has committed is not a prefix of each log stream; standbys follow serial, taurus and gsn logs"
    )]
    StandbyScheme {
        /// The scheme.
        scheme: String,
    },
    /// A standby of a taurus log with compressed LSN vectors.
    #[error(
        "a standby cannot follow a taurus log with compressed LVs ({streams} streams); create the database with the scheme option lv_compress=off"
    )]
    StandbyCompressed {
        /// The log's streams.
        streams: usize,
    },
    /// A standby of a log on a device that cannot be followed.
    #[error("a standby cannot follow a log on a {device} device")]
    StandbyDevice {
        /// The device kind.
        device: &'static str,
    },
    /// Passive group commit without its signal handler.
    #[error("passive group commit: {source}")]
    PassiveCommit {
        /// Why the handler could not be installed.
        #[source]
        source: braid_pmem::signal::SignalError,
    },
}

/// A call outside a device's, stream's or scheme's contract: a bug in the caller
/// ([`WalError::Misuse`](super::WalError::Misuse)).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Misuse {
    /// A position outside the extent of what the call applies to.
    #[error("{op} at LSN {lsn} outside [{from}, {to}]{}", on_text(.on))]
    Outside {
        /// The call (`"reset_tail"`, ...).
        op: &'static str,
        /// The position asked.
        lsn: u64,
        /// The extent's start.
        from: u64,
        /// The extent's end.
        to: u64,
        /// The stream, ring or file concerned, where the call names one.
        on: Option<String>,
    },
    /// A position before the start of what the call applies to.
    #[error("{op} at LSN {lsn} before the start at LSN {start}{}", on_text(.on))]
    BeforeStart {
        /// The call (`"read"`, `"write"`).
        op: &'static str,
        /// The position asked.
        lsn: u64,
        /// The start.
        start: u64,
        /// The stream, ring or file concerned.
        on: Option<String>,
    },
    /// A range that passes the end of what the call applies to.
    #[error("{op} of {len} bytes at LSN {lsn} passes the end at LSN {end}{}", on_text(.on))]
    PastEnd {
        /// The call (`"read"`, `"release"`, `"wait"`).
        op: &'static str,
        /// The position asked.
        lsn: u64,
        /// The length asked (0 for a position).
        len: u64,
        /// The end.
        end: u64,
        /// The stream, ring or file concerned.
        on: Option<String>,
    },
    /// A start position that is not aligned.
    #[error("start position {lsn} is not a multiple of {align}{}", on_text(.on))]
    UnalignedStart {
        /// The position.
        lsn: u64,
        /// The alignment required.
        align: u64,
        /// The stream concerned.
        on: Option<String>,
    },
    /// A length that is not a positive multiple of the alignment required.
    #[error(
        "{op} of {len} bytes{} is not a positive multiple of {align}{}",
        .lsn.map_or(String::new(), |l| format!(" at LSN {l}")),
        on_text(.on)
    )]
    Unaligned {
        /// The call (`"append"`, `"O_DIRECT segment write"`, `"group reservation"`).
        op: &'static str,
        /// The position, where it is the position that must be aligned too.
        lsn: Option<u64>,
        /// The length.
        len: u64,
        /// The alignment required.
        align: u64,
        /// The stream, ring or file concerned.
        on: Option<String>,
    },
    /// A write whose byte range lies outside its transaction's payload.
    #[error(
        "{scheme}: the write of table {table} key {key} names bytes {from}..{to} outside the {len}-byte payload"
    )]
    WriteOutside {
        /// The scheme.
        scheme: &'static str,
        /// The write's table.
        table: u32,
        /// Its key.
        key: u64,
        /// Its first byte.
        from: usize,
        /// Its end.
        to: usize,
        /// The payload's length.
        len: usize,
    },
    /// A redo payload that does not decode.
    #[error("{scheme}: malformed redo payload: {source}")]
    Payload {
        /// The scheme.
        scheme: &'static str,
        /// The decoder's error.
        #[source]
        source: crate::payload::PayloadError,
    },
}

fn on_text(on: &Option<String>) -> String {
    on.as_ref().map_or(String::new(), |o| format!(" of {o}"))
}

/// A state the log's own invariants rule out ([`WalError::Internal`](super::WalError::Internal)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Invariant {
    /// A scanner stopped without recording its end.
    #[error("scanner stopped without an end")]
    ScanWithoutEnd,
    /// Recovery (or a standby's replay) stopped without an error to report.
    #[error("{0} stopped without an error")]
    StoppedWithoutError(&'static str),
    /// Plover recovery ended before its cut.
    #[error("plover recovery ended before its cut")]
    NoCut,
    /// Silor's durable epoch stopped without an error.
    #[error("silor: durable epoch stopped")]
    EpochStopped,
    /// A group's reservation failed without an error.
    #[error("stream {stream}: a group's reservation failed")]
    Reservation {
        /// The stream.
        stream: u32,
    },
    /// A stream poisoned without a recorded cause.
    #[error("stream poisoned without a recorded cause")]
    NoCause,
    /// A writer reserved space while an earlier reservation of its was still unfilled.
    #[error("stream {stream}: a writer reserved again with LSN {lsn} unfilled")]
    Unfilled {
        /// The stream.
        stream: u32,
        /// Where the unfilled reservation starts.
        lsn: u64,
    },
    /// A replicated device's flush failed after messages in doubt, without an error.
    #[error("{stream}: a flush of LSNs {from}..{to} after messages in doubt failed")]
    InDoubt {
        /// The stream.
        stream: String,
        /// The flush's start.
        from: u64,
        /// Its end.
        to: u64,
    },
}

/// What refused a fenced writer ([`WalError::Fenced`](super::WalError::Fenced)).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Fence {
    /// The database was claimed by a newer writer epoch.
    #[error(
        "{during}: database {db_id} on {url} was claimed by writer epoch {now}, this writer has epoch {epoch}"
    )]
    Epoch {
        /// What the writer was doing.
        during: String,
        /// The database.
        db_id: String,
        /// Its cluster.
        url: String,
        /// The epoch that claimed it.
        now: u64,
        /// This writer's.
        epoch: u64,
    },
    /// A stream holds the fence of a newer writer epoch.
    #[error("stream {name} holds the fence of writer epoch {fence}, this writer has epoch {epoch}")]
    Stream {
        /// The stream's name.
        name: String,
        /// The fence found.
        fence: u64,
        /// This writer's.
        epoch: u64,
    },
    /// The service refused an append after a sequence another writer moved past.
    #[error(
        "{service} refused writer epoch {epoch}'s append after sequence {after}: another writer appended since ({source})"
    )]
    Append {
        /// The service.
        service: String,
        /// This writer's epoch.
        epoch: u64,
        /// The sequence appended after.
        after: u64,
        /// The service's refusal.
        #[source]
        source: Arc<dyn std::error::Error + Send + Sync>,
    },
}

/// What failed of a replicated log service ([`WalError::Remote`](super::WalError::Remote)).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum RemoteFailure {
    /// No answer in time; the last error of the attempts, where there was one, is the source.
    #[error("no answer within {after:?}{}", last_text(.last))]
    Timeout {
        /// How long it waited.
        after: Duration,
        /// The last attempt's error.
        #[source]
        last: Option<Arc<dyn std::error::Error + Send + Sync>>,
    },
    /// The client or the service returned an error.
    #[error("{0}")]
    Client(#[source] Arc<dyn std::error::Error + Send + Sync>),
    /// No standby answers a promote request.
    #[error("no standby follows database {db_id} (start one first)")]
    NoStandby {
        /// The database.
        db_id: String,
    },
    /// An object that is a link, not a checkpoint.
    #[error("{name} is a link, not a checkpoint written by braid")]
    Link {
        /// The object's name.
        name: String,
    },
    /// An object whose chunks do not add up to its size.
    #[error("{name} holds {bytes} bytes in its {chunks} chunks, its description says {described}")]
    ObjectSize {
        /// The object's name.
        name: String,
        /// Bytes read.
        bytes: usize,
        /// Its chunks.
        chunks: usize,
        /// Bytes described.
        described: u64,
    },
}

fn last_text(last: &Option<Arc<dyn std::error::Error + Send + Sync>>) -> String {
    last.as_ref()
        .map_or(String::new(), |e| format!(" (the last error: {e})"))
}
