//! What is damaged or foreign in a log: the record decoder's findings ([`RecordFault`]),
//! damaged log bytes ([`Corruption`]), damaged containers ([`SegmentDamage`]) and logs of
//! another configuration ([`WrongLog`]), the kinds inside [`WalError`](super::WalError)'s
//! `Corrupt`, `BadSegment` and `WrongLog`.

use std::path::PathBuf;

/// Why bytes where a log record should start are not one (the record decoder's finding).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecordFault {
    /// Zero bytes where a record was expected.
    #[error("zeros where a record was expected")]
    Zeros,
    /// The format version field is 0.
    #[error("format version field is 0")]
    ZeroVersion,
    /// The length field is smaller than a record header.
    #[error("length field is smaller than a record header")]
    TooShort,
    /// The length field exceeds the maximum record length.
    #[error("length field exceeds the maximum record length")]
    TooLong,
    /// The record's LSN field is not its position in the stream.
    #[error("lsn field does not match the record's position")]
    LsnMismatch,
    /// A whole record of a newer log format version than this build reads.
    #[error("record written by a newer log format version than this build reads")]
    NewerVersion,
    /// The checksum does not match the bytes.
    #[error("checksum mismatch")]
    Checksum,
    /// The record kind byte names no kind.
    #[error("unknown record kind")]
    UnknownKind,
    /// The stamp kind names no stamp.
    #[error("unknown stamp kind")]
    UnknownStamp,
    /// The stamp runs past the record.
    #[error("stamp does not fit in the record")]
    StampOverflow,
    /// The record ends before its length says (found where the whole record was expected).
    #[error("incomplete record")]
    Incomplete,
    /// A record cut off by the end of the written log.
    #[error("record cut off by the end of the written log")]
    CutOff,
    /// A record cut off by the end of the written log inside its padding.
    #[error("record cut off by the end of the written log (inside its padding)")]
    CutOffInPadding,
}

/// What is wrong with log bytes that are not a torn tail ([`WalError::Corrupt`](super::WalError::Corrupt),
/// which names the file and the byte offset).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Corruption {
    /// A record that does not decode in the sealed part of the log (made durable before).
    #[error(
        "{fault}; it lies in the sealed part of the log (everything before lsn {sealed} was made durable)"
    )]
    Sealed {
        /// Why the bytes are not a record.
        fault: RecordFault,
        /// The LSN up to which the log was made durable.
        sealed: u64,
    },
    /// A record that does not decode, followed by a valid record written when the log was
    /// durable past it.
    #[error(
        "{fault}; the valid record at lsn {valid} was written when the log was durable up to lsn {synced}, past this position"
    )]
    BeforeDurable {
        /// Why the bytes are not a record.
        fault: RecordFault,
        /// The valid record found after them.
        valid: u64,
        /// The durable point that record was written at.
        synced: u64,
    },
    /// A replicated log's message starts outside what the stream holds: one is missing.
    #[error(
        "a message starts at LSN {lsn} but the stream holds LSN {start} to {end}: a message is missing"
    )]
    MissingMessage {
        /// Where the message starts.
        lsn: u64,
        /// The first LSN held.
        start: u64,
        /// The end of what is held.
        end: u64,
    },
    /// A standby resumes past the stream's end: the stream was rewritten below what it
    /// replayed.
    #[error(
        "stream {stream}: the standby resumes at LSN {resume}, past the stream's end {end} (rewritten below what the standby replayed)"
    )]
    ResumePastEnd {
        /// The stream.
        stream: usize,
        /// Where the standby resumes.
        resume: u64,
        /// The stream's end.
        end: u64,
    },
    /// A gsn log's GSNs decrease.
    #[error(
        "gsn log {log}: GSN {gsn} at LSN {lsn} follows a larger GSN (GSNs grow with LSNs in a log)"
    )]
    GsnOrder {
        /// The log (stream).
        log: usize,
        /// The GSN found.
        gsn: u64,
        /// Its record's LSN.
        lsn: u64,
    },
    /// A per-transaction log's backup record lacks its object's LSN.
    #[error("pertxn backup record without its object's LSN")]
    BackupWithoutLsn,
    /// A per-transaction log's backup holds another object than expected.
    #[error("pertxn backup holds object LSN {found} where LSN {expected} was expected")]
    BackupLsn {
        /// The LSN found.
        found: u64,
        /// The LSN expected.
        expected: u64,
    },
    /// The per-transaction region is not formatted but its backup holds objects.
    #[error(
        "the pertxn region is not formatted but {} holds {objects} backed-up objects; restore the region or move the backup away",
        .backup.display()
    )]
    UnformattedWithBackup {
        /// The backup directory.
        backup: PathBuf,
        /// Objects it holds.
        objects: u64,
    },
    /// The per-transaction log's head is past the end of its backup.
    #[error(
        "the log head is at LSN {head} but the backup in {} ends at LSN {backed}: objects truncated from the index are missing",
        .backup.display()
    )]
    BackupBehindHead {
        /// The log head.
        head: u64,
        /// The backup directory.
        backup: PathBuf,
        /// Where the backup ends.
        backed: u64,
    },
    /// An index entry of the per-transaction log that does not point at its slot.
    #[error("index entry of LSN {lsn} points at offset {points}, not at its slot")]
    IndexEntry {
        /// The entry's LSN.
        lsn: u64,
        /// Where it points.
        points: u64,
    },
    /// A persistent log object (its state bit set) has an impossible length.
    #[error("log object of LSN {lsn} (state bit set) has length {len}")]
    ObjectLength {
        /// The object's LSN.
        lsn: u64,
        /// The length found.
        len: usize,
    },
    /// A persistent log object (its state bit set) is not a valid record.
    #[error("log object of LSN {lsn} (state bit set): {fault}")]
    Object {
        /// The object's LSN.
        lsn: u64,
        /// Why it is not a record.
        fault: RecordFault,
    },
    /// An object the log tail says is persistent is missing from the index.
    #[error(
        "the object of LSN {lsn} is missing from the index, but the log tail says every LSN below {tail} was persistent"
    )]
    ObjectMissing {
        /// The missing object's LSN.
        lsn: u64,
        /// The log tail.
        tail: u64,
    },
    /// The per-transaction region's superblock fails its checksum.
    #[error("pertxn superblock checksum mismatch")]
    SuperblockChecksum,
    /// The per-transaction region's superblock describes a layout that cannot be.
    #[error("superblock describes an impossible layout: {source}")]
    SuperblockLayout {
        /// Why the layout cannot be.
        #[source]
        source: Box<super::WalError>,
    },
    /// The per-transaction region's superblock counts other entries than the region holds.
    #[error("superblock says {recorded} entries, the region holds {holds}")]
    SuperblockEntries {
        /// Entries recorded.
        recorded: u64,
        /// Entries the region holds.
        holds: u64,
    },
}

/// What is wrong with a segment file, a ring header or another container of the log
/// ([`WalError::BadSegment`](super::WalError::BadSegment), which names the file or region).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SegmentDamage {
    /// A whole record of a newer log format version.
    #[error(
        "the record at byte offset {offset} was written by log format version {version}, but this build reads only version {reads}: open the log with a newer braid"
    )]
    NewerRecord {
        /// The record's byte offset in the file.
        offset: u64,
        /// Its format version.
        version: u16,
        /// The version this build reads.
        reads: u16,
    },
    /// A container (segment, meta file, ring, region layout) of another format version.
    #[error("{what} format version {version}, this braid reads version {reads}")]
    Version {
        /// Which container (`"segment"`, `"meta file"`, `"log ring"`, `"pertxn layout"`).
        what: &'static str,
        /// The version found.
        version: u32,
        /// The version this braid reads.
        reads: u32,
    },
    /// A file too short for its fixed part.
    #[error("{what} is {len} bytes, expected {expected}")]
    Short {
        /// Which part (`"meta file"`).
        what: &'static str,
        /// Its length.
        len: usize,
        /// The length expected.
        expected: usize,
    },
    /// No magic where the container's magic belongs.
    #[error("bad magic (not a braid {what})")]
    BadMagic {
        /// What was expected (`"stream meta file"`, `"segment header"`).
        what: &'static str,
    },
    /// A header or meta file fails its checksum.
    #[error("{what} checksum mismatch")]
    Checksum {
        /// Which part (`"meta"`, `"header"`).
        what: &'static str,
    },
    /// A segment header that cannot be read (torn or damaged).
    #[error("damaged segment header ({fault}){}", if *.data_after { " with data after it" } else { "" })]
    Header {
        /// What is wrong with it.
        fault: Box<SegmentDamage>,
        /// Whether data follows it (a torn last header with nothing after it is a torn tail).
        data_after: bool,
    },
    /// A segment header shorter than a header.
    #[error("the header is incomplete (file shorter than its header)")]
    HeaderIncomplete,
    /// A file of another stream.
    #[error("belongs to stream {found}, not {expected}")]
    OtherStream {
        /// The stream it belongs to.
        found: u32,
        /// The stream opened.
        expected: u32,
    },
    /// The stream was created with another segment size than configured.
    #[error(
        "the stream was created with segment size {created}, but {configured} is configured; open it with its segment size"
    )]
    SegmentSize {
        /// The size it was created with.
        created: u64,
        /// The size configured.
        configured: u64,
    },
    /// A segment header's segment size is not the stream's.
    #[error("segment size {found} in the header, the stream uses {expected}")]
    HeaderSegmentSize {
        /// The size in the header.
        found: u64,
        /// The stream's.
        expected: u64,
    },
    /// The stream's meta file is missing but segments exist.
    #[error("missing, but segment files of the stream exist (e.g. {})", .example.display())]
    MetaMissing {
        /// One of the segments.
        example: PathBuf,
    },
    /// A segment's first LSN is not a multiple of the segment size.
    #[error("first LSN {first} is not a multiple of the segment size {segment_size}")]
    Unaligned {
        /// The first LSN.
        first: u64,
        /// The segment size.
        segment_size: u64,
    },
    /// A segment is missing before this one.
    #[error("segment missing before it (previous segment starts at LSN {previous})")]
    Gap {
        /// Where the previous segment starts.
        previous: u64,
    },
    /// The header's first LSN is not the file name's.
    #[error("header says first LSN {header}, the file name says {name}")]
    FirstLsn {
        /// The header's.
        header: u64,
        /// The file name's.
        name: u64,
    },
    /// A segment of another incarnation of the stream.
    #[error(
        "salt {found:#010x} differs from the stream's {expected:#010x} (a segment of another incarnation of the stream)"
    )]
    Salt {
        /// The segment's salt.
        found: u32,
        /// The stream's.
        expected: u32,
    },
    /// A replicated log's message of an unknown kind.
    #[error("a message of an unknown kind (written by a newer braid?)")]
    UnknownMessage,
    /// A replicated log's message without its LSN header.
    #[error("a message without its Braid-Lsn header")]
    MessageWithoutLsn,
    /// A persistent log ring's header that is damaged.
    #[error("damaged log ring header ({fault})")]
    RingHeader {
        /// What is wrong with it.
        fault: RingFault,
    },
    /// A persistent log ring of another size than the region has room for.
    #[error(
        "log ring of {found} bytes, but the region has room for {room}; open the region with the size it was created with"
    )]
    RingSize {
        /// The ring's size.
        found: u64,
        /// The room in the region.
        room: u64,
    },
    /// A region that holds something else than a log ring.
    #[error(
        "not a braid log ring (no ring magic and not empty); point the stream at another region"
    )]
    NotARing,
    /// De-staged files that start after the ring head.
    #[error("de-staged files start at LSN {files_start}, after the ring head {head}")]
    DestageAfterHead {
        /// Where the files start.
        files_start: u64,
        /// The ring head.
        head: u64,
    },
    /// A ring that recycled LSNs with nothing de-staged.
    #[error(
        "the ring has recycled LSNs before {head} but the de-staging directory holds nothing; de-staging must be enabled from the ring's first use (or use a fresh region)"
    )]
    DestageEmpty {
        /// The ring head.
        head: u64,
    },
    /// De-staged files that end before the ring head.
    #[error(
        "de-staged files end at LSN {files_end} but the ring starts at {head}: files are missing"
    )]
    DestageMissing {
        /// Where the files end.
        files_end: u64,
        /// The ring head.
        head: u64,
    },
    /// A striped device's stripe file that cannot be read.
    #[error("damaged stripe file (member count, unit and start)")]
    StripeFile,
}

/// What is wrong with a persistent log ring's header ([`SegmentDamage::RingHeader`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RingFault {
    /// The header fails its checksum.
    #[error("checksum mismatch")]
    Checksum,
    /// Head or start not record-aligned.
    #[error("head {head} / start {start} not record-aligned")]
    Misaligned {
        /// The head.
        head: u64,
        /// The start.
        start: u64,
    },
    /// The start outside the ring's window.
    #[error("start {start} beyond the ring window of head {head} and {cap} bytes")]
    StartOutside {
        /// The start.
        start: u64,
        /// The head.
        head: u64,
        /// The ring's size.
        cap: u64,
    },
}

/// How a log found is not what this configuration reads
/// ([`WalError::WrongLog`](super::WalError::WrongLog)).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum WrongLog {
    /// A database whose log is elsewhere than the device opened.
    #[error("its log is at {recorded}, not at {opened}; reopen it with that location")]
    Location {
        /// The location recorded.
        recorded: String,
        /// The location opened.
        opened: String,
    },
    /// A replicated log's database of another id.
    #[error(
        "its log is database {recorded} on {url}, not {opened}; reopen it with the device's db_id {recorded}"
    )]
    DbId {
        /// The id recorded.
        recorded: String,
        /// Where it is.
        url: String,
        /// The id opened.
        opened: String,
    },
    /// A recorded location that is not of this device kind.
    #[error("its recorded log location {recorded:?} is not a {device} one")]
    LocationKind {
        /// The location recorded.
        recorded: String,
        /// The device kind.
        device: &'static str,
    },
    /// A replicated log that already holds a database where a new one is created.
    #[error(
        "the cluster at {url} already holds a database {db_id}; recover it into an empty directory, or choose another db_id"
    )]
    Occupied {
        /// The cluster.
        url: String,
        /// The database id.
        db_id: String,
    },
    /// A persistent-memory region of another stream.
    #[error(
        "pmem region {region} holds the log ring of stream {found}, not of stream {stream}; give each stream its own region"
    )]
    RingStream {
        /// The region.
        region: String,
        /// The stream whose ring it holds.
        found: u32,
        /// The stream opened.
        stream: u32,
    },
    /// A striped log opened with another striping.
    #[error(
        "{} is striped over {members} devices in units of {unit_kib} KiB; reopen it with that striping, or use a new directory",
        .stripe_file.display()
    )]
    Striping {
        /// The stripe file.
        stripe_file: PathBuf,
        /// Its members.
        members: u64,
        /// Its unit in KiB.
        unit_kib: u64,
    },
    /// A scheme's storage of another kind than it keeps its log in.
    #[error("scheme {scheme} keeps its log in {want}; the storage given is another")]
    Storage {
        /// The scheme.
        scheme: String,
        /// What it keeps its log in.
        want: &'static str,
    },
    /// A record that this scheme does not write, or does not write so.
    #[error(
        "{scheme} log {stream}: the record {}at LSN {lsn}: {problem}; was this log written by another scheme?",
        .txn.map_or(String::new(), |t| format!("of transaction {t} "))
    )]
    Record {
        /// The scheme reading it.
        scheme: &'static str,
        /// The log stream.
        stream: usize,
        /// The record's transaction, where known.
        txn: Option<u64>,
        /// The record's LSN.
        lsn: u64,
        /// What is wrong with it.
        problem: RecordProblem,
    },
    /// Taurus records whose LSN vectors depend on each other in a cycle.
    #[error(
        "taurus recovery: no transaction is ready although some remain (a dependency cycle in the LSN vectors): the log is damaged"
    )]
    DependencyCycle,
}

/// What is wrong with a record for the scheme reading it ([`WrongLog::Record`]).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum RecordProblem {
    /// Its payload does not decode.
    #[error("{0}")]
    Payload(#[source] crate::payload::PayloadError),
    /// A record of a kind the scheme never writes.
    #[error("a {0} record")]
    Kind(&'static str),
    /// A record without the stamp the scheme writes.
    #[error("no {0} stamp")]
    NoStamp(&'static str),
    /// A bookkeeping record of an unknown sort.
    #[error("an unknown bookkeeping record")]
    Bookkeeping,
    /// A commit record without its part count.
    #[error("commit record without a part count")]
    NoPartCount,
    /// An LSN vector wider than the database's streams.
    #[error(
        "an LSN vector wider than the {streams} streams of this database (reopen it with the stream count it was written with)"
    )]
    LvWidth {
        /// The database's streams.
        streams: usize,
    },
    /// A plover record claiming more records for its transaction than there are logs.
    #[error("it claims {claimed} records for its transaction, with {logs} logs")]
    Parts {
        /// Records claimed.
        claimed: u64,
        /// Logs.
        logs: usize,
    },
    /// A plover record whose sequence number does not increase.
    #[error("sequence number {seq} after {after}: a log's sequence numbers must increase")]
    Sequence {
        /// Its sequence number.
        seq: u64,
        /// The one before.
        after: u64,
    },
    /// A plover record that the merge could not place.
    #[error("{0}")]
    Merge(&'static str),
    /// A command-logged record recovered as data logging.
    #[error(
        "command-logged, but the log is recovered as data logging on {threads} threads: reopen with command logging"
    )]
    CommandLogged {
        /// Recovery threads.
        threads: usize,
    },
}
