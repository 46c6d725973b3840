//! Record framing shared by every scheme: one checksummed, self-locating record format for the
//! serial, GSN (Wang & Johnson 2014, Section 3.1: records stamped with a GSN), per-transaction
//! (NV-Logging, Huang et al. 2014, Section 4.2) and Taurus (Xia et al. 2021, Section 3.2:
//! records stamped with the transaction's LSN vector; Section 4.1 / Alg. 5: compressed, sparse
//! LVs) logs.
//!
//! Layout (little endian), records padded to 8 bytes:
//! ```text
//! 0..4   len      u32  header + stamp + payload, unpadded
//! 4      kind     u8   Kind
//! 5      flags    u8   bit 0 COMMIT (record ends its transaction); bits 4..8 stamp kind
//! 6..8   version  u16  FORMAT_VERSION
//! 8..12  crc      u32  crc32c(salt_le ++ header with crc = 0 ++ stamp ++ payload)
//! 12..16 synced   u32  lsn - (stream durable LSN known when written), saturated
//! 16..24 lsn      u64  stream position of this record's first byte
//! 24..32 txn      u64  transaction id
//! 32..   stamp    0 (none) | 8 (GSN) | 2 + 8n (dense LV) | 2 + 9n (sparse LV: u8 index, u64 value)
//! ..     payload
//! ```
//!
//! Design choices where the layout above leaves room:
//!
//! * Stamp kinds (flags bits 4..8): 0 none, 1 GSN, 2 dense LV, 3 sparse LV. Both LV forms start
//!   with a `u16` entry count `n`. Sparse entries are stored as given by the writer; when they
//!   are expanded ([`StampRef::lv_into`]) a repeated index keeps its largest value (LV merge is
//!   an element-wise max, so this is the only meaning that cannot lose an order constraint).
//! * Flags bits 0..4 belong to the caller ([`FLAG_MASK`]); only bit 0 ([`FLAG_COMMIT`]) is
//!   defined today. They are stored and returned verbatim, so new flags need no format change.
//!   [`RecordHeader::flags`] holds only these caller bits, never the stamp kind.
//! * `synced` is stored as the distance `lsn - synced`, saturated to `u32::MAX`; a saturated
//!   distance decodes as `synced = 0` ("unknown"), which is always a safe under-estimate. The
//!   scanner uses it to tell a torn tail from mid-log corruption (see [`crate::scan`]).
//! * Versioning: every version keeps `len` at 0..4, `version` at 6..8 and `lsn` at 16..24, so a
//!   reader can always tell "a record from a newer format" from garbage at a given position.
//!   Records of a newer version are refused with a reason saying so; within a known version an
//!   unknown record or stamp kind is `Invalid` (new kinds therefore need a version bump, which
//!   keeps old logs readable by new code and refuses new logs in old code).
//! * The salt (one per segment / ring lap, chosen by the device) enters the checksum but is not
//!   stored: bytes left over from an earlier use of the same space never decode as records.
//! * Padding bytes (between `len` and the next multiple of 8) are written as zeros and are not
//!   covered by the checksum.
//! * Encoding is on every commit's hot path: [`RecordSpec::encode`] does not allocate and makes a
//!   single crc32c pass over the bytes it has just written.

use crate::{Lsn, WalError};

/// Bytes of a record header (everything before the stamp).
pub const HEADER_LEN: usize = 32;
/// Records start and end on multiples of this many bytes.
pub const ALIGN: usize = 8;
/// The format version this build writes; it reads this version and refuses newer ones.
pub const FORMAT_VERSION: u16 = 1;
/// Largest record (header + stamp + payload, unpadded) in bytes: 64 MiB.
pub const MAX_RECORD_LEN: usize = 1 << 26;
/// Flag: this record ends its transaction (no separate commit record follows).
pub const FLAG_COMMIT: u8 = 1;
/// The flag bits that belong to the caller; bits 4..8 hold the stamp kind.
pub const FLAG_MASK: u8 = 0x0F;
/// Most entries an LV stamp can hold (the count is a `u16`).
pub const MAX_LV_ENTRIES: usize = u16::MAX as usize;

const STAMP_SHIFT: u32 = 4;
const STAMP_NONE: u8 = 0;
const STAMP_GSN: u8 = 1;
const STAMP_LV: u8 = 2;
const STAMP_LV_SPARSE: u8 = 3;
const SPARSE_ENTRY: usize = 9;

/// Round `n` up to the record alignment.
#[inline]
pub const fn align_up(n: usize) -> usize {
    (n + ALIGN - 1) & !(ALIGN - 1)
}

/// What a record holds (header byte 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Kind {
    /// Redo images of a transaction's writes (data logging).
    Redo = 1,
    /// A stored-procedure invocation to re-execute (command logging).
    Command = 2,
    /// Ends a transaction whose earlier records did not carry [`FLAG_COMMIT`].
    Commit = 3,
    /// Discards the earlier records of a transaction.
    Abort = 4,
    /// A Taurus LV anchor (LV compression, Alg. 5): its stamp fills in the LV entries that
    /// later compressed records of the same stream leave out.
    Anchor = 5,
    /// Scheme bookkeeping that belongs to no transaction (the gsn scheme's clock records and
    /// void markers).
    Checkpoint = 6,
    /// Filler skipping space to a boundary; its payload is zeros and it is never replayed.
    Pad = 7,
}

impl Kind {
    /// The kind with this code, `None` for an unknown one.
    pub fn from_u8(v: u8) -> Option<Kind> {
        Some(match v {
            1 => Kind::Redo,
            2 => Kind::Command,
            3 => Kind::Commit,
            4 => Kind::Abort,
            5 => Kind::Anchor,
            6 => Kind::Checkpoint,
            7 => Kind::Pad,
            _ => return None,
        })
    }

    /// The code stored in the header.
    pub fn as_u8(self) -> u8 {
        self as u8
    }
}

/// Which ordering stamp a record carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StampKind {
    /// No stamp (serial and per-transaction logs: order is the LSN).
    None,
    /// A global sequence number.
    Gsn,
    /// A dense LSN vector.
    Lv,
    /// A sparse LSN vector: only the listed `(index, value)` entries.
    LvSparse,
}

impl StampKind {
    fn code(self) -> u8 {
        match self {
            StampKind::None => STAMP_NONE,
            StampKind::Gsn => STAMP_GSN,
            StampKind::Lv => STAMP_LV,
            StampKind::LvSparse => STAMP_LV_SPARSE,
        }
    }

    fn from_code(c: u8) -> Option<StampKind> {
        Some(match c {
            STAMP_NONE => StampKind::None,
            STAMP_GSN => StampKind::Gsn,
            STAMP_LV => StampKind::Lv,
            STAMP_LV_SPARSE => StampKind::LvSparse,
            _ => return None,
        })
    }
}

/// An owned ordering stamp, as a writer supplies it (see [`StampKind`] for the forms).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Stamp {
    /// No stamp.
    #[default]
    None,
    /// A global sequence number.
    Gsn(u64),
    /// A dense LSN vector, one entry per stream (at most [`MAX_LV_ENTRIES`]).
    Lv(Vec<u64>),
    /// A sparse LSN vector of `(stream index, LSN)` entries; absent entries are 0.
    LvSparse(Vec<(u8, u64)>),
}

impl Stamp {
    /// Which form this stamp has.
    pub fn kind(&self) -> StampKind {
        match self {
            Stamp::None => StampKind::None,
            Stamp::Gsn(_) => StampKind::Gsn,
            Stamp::Lv(_) => StampKind::Lv,
            Stamp::LvSparse(_) => StampKind::LvSparse,
        }
    }

    /// Bytes this stamp takes in a record.
    pub fn encoded_len(&self) -> usize {
        match self {
            Stamp::None => 0,
            Stamp::Gsn(_) => 8,
            Stamp::Lv(v) => 2 + 8 * v.len(),
            Stamp::LvSparse(v) => 2 + SPARSE_ENTRY * v.len(),
        }
    }

    fn entries(&self) -> usize {
        match self {
            Stamp::None | Stamp::Gsn(_) => 0,
            Stamp::Lv(v) => v.len(),
            Stamp::LvSparse(v) => v.len(),
        }
    }

    /// Write the stamp at the start of `out`; returns the bytes written.
    fn write(&self, out: &mut [u8]) -> usize {
        match self {
            Stamp::None => 0,
            Stamp::Gsn(g) => {
                out[..8].copy_from_slice(&g.to_le_bytes());
                8
            }
            Stamp::Lv(v) => {
                // `RecordSpec::encode` has checked the count fits a u16.
                out[..2].copy_from_slice(&(v.len() as u16).to_le_bytes());
                for (chunk, x) in out[2..2 + 8 * v.len()].chunks_exact_mut(8).zip(v) {
                    chunk.copy_from_slice(&x.to_le_bytes());
                }
                2 + 8 * v.len()
            }
            Stamp::LvSparse(v) => {
                out[..2].copy_from_slice(&(v.len() as u16).to_le_bytes());
                let body = &mut out[2..2 + SPARSE_ENTRY * v.len()];
                for (chunk, (i, x)) in body.chunks_exact_mut(SPARSE_ENTRY).zip(v) {
                    chunk[0] = *i;
                    chunk[1..].copy_from_slice(&x.to_le_bytes());
                }
                2 + SPARSE_ENTRY * v.len()
            }
        }
    }
}

/// The decoded fixed fields of a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordHeader {
    /// Header + stamp + payload, unpadded.
    pub len: u32,
    /// What the record holds.
    pub kind: Kind,
    /// The caller's flag bits (`FLAG_MASK`); the stamp kind is not included.
    pub flags: u8,
    /// Stream position of the record's first byte.
    pub lsn: Lsn,
    /// Transaction id (0 for records that belong to no transaction).
    pub txn: u64,
    /// The stream's durable LSN known when this record was written (0 = unknown).
    pub synced: Lsn,
}

/// A borrowed stamp as found in a log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StampRef<'a> {
    kind: StampKind,
    /// The stamp's whole encoding (count included); its length was validated by `decode`.
    bytes: &'a [u8],
}

impl Default for StampRef<'_> {
    fn default() -> Self {
        StampRef::NONE
    }
}

#[inline]
fn le_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

#[inline]
fn le_u32(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[..4]);
    u32::from_le_bytes(a)
}

#[inline]
fn le_u16(b: &[u8]) -> u16 {
    u16::from_le_bytes([b[0], b[1]])
}

impl<'a> StampRef<'a> {
    /// The empty stamp.
    pub const NONE: StampRef<'static> = StampRef {
        kind: StampKind::None,
        bytes: &[],
    };

    /// Rebuild a stamp from the kind and bytes of one that [`decode`] returned.
    pub(crate) fn from_decoded(kind: StampKind, bytes: &'a [u8]) -> StampRef<'a> {
        StampRef { kind, bytes }
    }

    /// Which form this stamp has.
    pub fn kind(&self) -> StampKind {
        self.kind
    }

    /// The stamp's encoded bytes.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// An owned copy (sparse entries as stored, repeats included).
    pub fn to_stamp(&self) -> Stamp {
        match self.kind {
            StampKind::None => Stamp::None,
            StampKind::Gsn => Stamp::Gsn(le_u64(self.bytes)),
            StampKind::Lv => Stamp::Lv(self.bytes[2..].chunks_exact(8).map(le_u64).collect()),
            StampKind::LvSparse => Stamp::LvSparse(
                self.bytes[2..]
                    .chunks_exact(SPARSE_ENTRY)
                    .map(|c| (c[0], le_u64(&c[1..])))
                    .collect(),
            ),
        }
    }

    /// The GSN of a GSN stamp, `None` for other forms.
    pub fn gsn(&self) -> Option<u64> {
        match self.kind {
            StampKind::Gsn => Some(le_u64(self.bytes)),
            _ => None,
        }
    }

    /// Length of the dense LV this stamp stands for: the entry count of a dense LV, one past
    /// the largest index of a sparse one, 0 for other stamps.
    pub fn lv_len(&self) -> usize {
        match self.kind {
            StampKind::None | StampKind::Gsn => 0,
            StampKind::Lv => (self.bytes.len() - 2) / 8,
            StampKind::LvSparse => self.bytes[2..]
                .chunks_exact(SPARSE_ENTRY)
                .map(|c| c[0] as usize + 1)
                .max()
                .unwrap_or(0),
        }
    }

    /// The LV entries as `(index, value)`: every entry of a dense LV, the stored entries of a
    /// sparse one, nothing for other stamps.
    pub fn lv_entries(&self) -> LvEntries<'a> {
        let (dense, body) = match self.kind {
            StampKind::Lv => (true, &self.bytes[2..]),
            StampKind::LvSparse => (false, &self.bytes[2..]),
            StampKind::None | StampKind::Gsn => (true, &[][..]),
        };
        LvEntries {
            dense,
            body,
            next: 0,
        }
    }

    /// Write a dense LV into `out` (entries absent from a sparse stamp become 0); returns n.
    ///
    /// All of `out` is written: entries the stamp does not mention are 0. `n` is the stamp's
    /// dense length ([`StampRef::lv_len`]); if it exceeds `out.len()` the entries that do not fit
    /// are dropped, which the caller detects by comparing the result with `out.len()`.
    pub fn lv_into(&self, out: &mut [u64]) -> usize {
        out.fill(0);
        match self.kind {
            StampKind::None | StampKind::Gsn => 0,
            StampKind::Lv => {
                let body = &self.bytes[2..];
                for (o, c) in out.iter_mut().zip(body.chunks_exact(8)) {
                    *o = le_u64(c);
                }
                body.len() / 8
            }
            StampKind::LvSparse => {
                let mut n = 0;
                for c in self.bytes[2..].chunks_exact(SPARSE_ENTRY) {
                    let i = c[0] as usize;
                    n = n.max(i + 1);
                    if let Some(o) = out.get_mut(i) {
                        *o = (*o).max(le_u64(&c[1..]));
                    }
                }
                n
            }
        }
    }
}

/// Iterator over the `(index, value)` entries of an LV stamp.
#[derive(Debug, Clone)]
pub struct LvEntries<'a> {
    dense: bool,
    body: &'a [u8],
    next: usize,
}

impl Iterator for LvEntries<'_> {
    type Item = (usize, u64);

    fn next(&mut self) -> Option<(usize, u64)> {
        if self.dense {
            let c = self.body.get(self.next * 8..self.next * 8 + 8)?;
            self.next += 1;
            Some((self.next - 1, le_u64(c)))
        } else {
            let at = self.next * SPARSE_ENTRY;
            let c = self.body.get(at..at + SPARSE_ENTRY)?;
            self.next += 1;
            Some((c[0] as usize, le_u64(&c[1..])))
        }
    }
}

/// A decoded record, borrowing its stamp and payload from the buffer it was decoded from.
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    /// The fixed fields.
    pub header: RecordHeader,
    /// The ordering stamp.
    pub stamp: StampRef<'a>,
    /// The caller's bytes (without padding).
    pub payload: &'a [u8],
}

impl Record<'_> {
    /// Padded size in the log.
    pub fn padded_len(&self) -> usize {
        align_up(self.header.len as usize)
    }
    /// Stream position just past the record (and its padding): where the next one starts.
    pub fn end(&self) -> Lsn {
        self.header.lsn + self.padded_len() as u64
    }
    /// Whether [`FLAG_COMMIT`] is set: this record ends its transaction.
    pub fn commits(&self) -> bool {
        self.header.flags & FLAG_COMMIT != 0
    }
}

/// What a caller wants written; the stream supplies lsn, synced and salt.
#[derive(Debug, Clone, Copy)]
pub struct RecordSpec<'a> {
    /// What the record holds.
    pub kind: Kind,
    /// Caller flags (`FLAG_MASK` bits; higher bits are ignored).
    pub flags: u8,
    /// Transaction id.
    pub txn: u64,
    /// The ordering stamp.
    pub stamp: &'a Stamp,
    /// The payload, as slices written back to back (so a caller need not concatenate).
    pub payload: &'a [&'a [u8]],
}

impl RecordSpec<'_> {
    /// Header + stamp + payload: the value of the `len` field.
    pub fn unpadded_len(&self) -> usize {
        HEADER_LEN + self.stamp.encoded_len() + self.payload.iter().map(|p| p.len()).sum::<usize>()
    }

    /// Space the record takes in the log (padded to [`ALIGN`]): what a stream reserves.
    pub fn encoded_len(&self) -> usize {
        align_up(self.unpadded_len())
    }

    /// Check the record can be encoded; returns [`RecordSpec::encoded_len`].
    pub fn check(&self) -> Result<usize, WalError> {
        if self.stamp.entries() > MAX_LV_ENTRIES {
            return Err(WalError::Config(format!(
                "an LSN-vector stamp of {} entries exceeds the limit of {MAX_LV_ENTRIES}",
                self.stamp.entries()
            )));
        }
        let len = self.unpadded_len();
        if len > MAX_RECORD_LEN {
            return Err(WalError::RecordTooLarge {
                len,
                max: MAX_RECORD_LEN,
            });
        }
        Ok(align_up(len))
    }

    /// Encode the record for stream position `lsn` into `out`.
    ///
    /// `synced` is the stream's durable LSN known now; `salt` the device's salt for `lsn`.
    /// Writes `unpadded_len()` bytes plus as many zero padding bytes (up to `encoded_len()`)
    /// as `out` holds. Does not allocate.
    ///
    /// # Panics
    /// If `out` is shorter than `unpadded_len()` or [`RecordSpec::check`] fails: both are
    /// caller bugs (a stream checks the spec before reserving space for it).
    pub fn encode(&self, lsn: Lsn, synced: Lsn, salt: u32, out: &mut [u8]) {
        let len = self.unpadded_len();
        assert!(
            len <= MAX_RECORD_LEN && self.stamp.entries() <= MAX_LV_ENTRIES,
            "record spec fails RecordSpec::check ({len} bytes)"
        );
        assert!(
            out.len() >= len,
            "encode buffer of {} bytes for a {len}-byte record",
            out.len()
        );
        write_header(
            out,
            len,
            self.kind,
            self.flags,
            self.stamp.kind(),
            lsn,
            synced,
            self.txn,
        );
        let mut at = HEADER_LEN + self.stamp.write(&mut out[HEADER_LEN..]);
        for p in self.payload {
            out[at..at + p.len()].copy_from_slice(p);
            at += p.len();
        }
        seal(out, len, salt);
    }
}

/// Encode a [`Kind::Pad`] record filling all of `out` (used to skip space, e.g. to a segment
/// or ring boundary). Its payload is zeros.
///
/// # Panics
/// If `out.len()` is not a multiple of [`ALIGN`] or not in `HEADER_LEN..=MAX_RECORD_LEN`
/// (a caller bug: the gap to fill is a stream invariant).
pub fn encode_pad(lsn: Lsn, synced: Lsn, salt: u32, out: &mut [u8]) {
    let len = out.len();
    assert!(
        (HEADER_LEN..=MAX_RECORD_LEN).contains(&len) && len.is_multiple_of(ALIGN),
        "pad of {len} bytes"
    );
    write_header(out, len, Kind::Pad, 0, StampKind::None, lsn, synced, 0);
    out[HEADER_LEN..].fill(0);
    seal(out, len, salt);
}

/// The stored form of `synced`: the distance back from `lsn`, saturated.
#[inline]
fn synced_delta(lsn: Lsn, synced: Lsn) -> u32 {
    lsn.saturating_sub(synced).min(u32::MAX as u64) as u32
}

#[allow(clippy::too_many_arguments)]
#[inline]
fn write_header(
    out: &mut [u8],
    len: usize,
    kind: Kind,
    flags: u8,
    stamp: StampKind,
    lsn: Lsn,
    synced: Lsn,
    txn: u64,
) {
    let h = &mut out[..HEADER_LEN];
    // len <= MAX_RECORD_LEN < u32::MAX, checked by the callers.
    h[0..4].copy_from_slice(&(len as u32).to_le_bytes());
    h[4] = kind.as_u8();
    h[5] = (flags & FLAG_MASK) | (stamp.code() << STAMP_SHIFT);
    h[6..8].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    h[8..12].fill(0);
    h[12..16].copy_from_slice(&synced_delta(lsn, synced).to_le_bytes());
    h[16..24].copy_from_slice(&lsn.to_le_bytes());
    h[24..32].copy_from_slice(&txn.to_le_bytes());
}

/// Checksum `out[..len]` (whose crc field is zero) and zero the padding that fits in `out`.
#[inline]
fn seal(out: &mut [u8], len: usize, salt: u32) {
    let crc = crc32c::crc32c_append(crc32c::crc32c(&salt.to_le_bytes()), &out[..len]);
    out[8..12].copy_from_slice(&crc.to_le_bytes());
    let padded = align_up(len).min(out.len());
    out[len..padded].fill(0);
}

/// What [`decode`] found at a position.
#[derive(Debug, Clone, Copy)]
pub enum Decoded<'a> {
    /// A valid record.
    Record(Record<'a>),
    /// The header is all zeros: nothing was ever written here.
    Empty,
    /// `buf` ends inside the record; at least `need` bytes are required.
    Truncated {
        /// Bytes needed from the start of `buf` (the header, or the whole record).
        need: usize,
    },
    /// Not a valid record here; the reason says why (length, version, kind, stamp, LSN or
    /// checksum).
    Invalid(&'static str),
}

/// Reason given for a record of a newer format version (the scanner refuses such logs).
pub const REASON_NEWER_VERSION: &str =
    "record written by a newer log format version than this build reads";

/// The fields of a header that every format version keeps in place, read without any check:
/// `(len, version, lsn)`. `None` if `buf` is shorter than a header.
pub fn peek_header(buf: &[u8]) -> Option<(u32, u16, Lsn)> {
    let h = buf.get(..HEADER_LEN)?;
    Some((le_u32(&h[0..4]), le_u16(&h[6..8]), le_u64(&h[16..24])))
}

/// Decode the record at the start of `buf`, expected at stream position `expected_lsn` and
/// checksummed with `salt`. Never panics, whatever the bytes.
///
/// A zero length field (in particular an all-zero header) is [`Decoded::Empty`]; a buffer
/// shorter than the header or the length field is [`Decoded::Truncated`] (if the length field
/// itself is implausible the result is `Invalid` even for a short buffer).
pub fn decode(buf: &[u8], expected_lsn: Lsn, salt: u32) -> Decoded<'_> {
    let Some(len_bytes) = buf.get(..4) else {
        return Decoded::Truncated { need: HEADER_LEN };
    };
    let len = le_u32(len_bytes) as usize;
    if len == 0 {
        return Decoded::Empty;
    }
    let Some(h) = buf.get(..HEADER_LEN) else {
        return match check_len(len) {
            Some(reason) => Decoded::Invalid(reason),
            None => Decoded::Truncated { need: len },
        };
    };
    let version = le_u16(&h[6..8]);
    if version == 0 {
        return Decoded::Invalid("format version field is 0");
    }
    if let Some(reason) = check_len(len) {
        return Decoded::Invalid(reason);
    }
    if version > FORMAT_VERSION {
        // Only a record whose checksum holds proves a newer writer: a torn header (8-byte
        // words of old and new bytes mixed) may show any version.
        if le_u64(&h[16..24]) != expected_lsn {
            return Decoded::Invalid("lsn field does not match the record's position");
        }
        let Some(rec) = buf.get(..len) else {
            return Decoded::Truncated { need: len };
        };
        return if crc_ok(rec, salt) {
            Decoded::Invalid(REASON_NEWER_VERSION)
        } else {
            Decoded::Invalid("checksum mismatch")
        };
    }
    let Some(kind) = Kind::from_u8(h[4]) else {
        return Decoded::Invalid("unknown record kind");
    };
    let Some(stamp_kind) = StampKind::from_code(h[5] >> STAMP_SHIFT) else {
        return Decoded::Invalid("unknown stamp kind");
    };
    let lsn = le_u64(&h[16..24]);
    if lsn != expected_lsn {
        return Decoded::Invalid("lsn field does not match the record's position");
    }
    let Some(rec) = buf.get(..len) else {
        return Decoded::Truncated { need: len };
    };
    let body = &rec[HEADER_LEN..];
    let stamp_len = match stamp_kind {
        StampKind::None => Some(0),
        StampKind::Gsn => Some(8),
        StampKind::Lv => body.get(..2).map(|c| 2 + 8 * le_u16(c) as usize),
        StampKind::LvSparse => body.get(..2).map(|c| 2 + SPARSE_ENTRY * le_u16(c) as usize),
    };
    let Some(stamp_len) = stamp_len.filter(|&n| n <= body.len()) else {
        return Decoded::Invalid("stamp does not fit in the record");
    };
    let stored = le_u32(&h[8..12]);
    // salt ++ header with the crc zeroed, as one block, then the rest in place: two calls.
    let mut head = [0u8; 4 + HEADER_LEN];
    head[..4].copy_from_slice(&salt.to_le_bytes());
    head[4..12].copy_from_slice(&h[..8]);
    head[16..].copy_from_slice(&h[12..]);
    let crc = crc32c::crc32c_append(crc32c::crc32c(&head), &rec[HEADER_LEN..]);
    if crc != stored {
        return Decoded::Invalid("checksum mismatch");
    }
    let delta = le_u32(&h[12..16]);
    let synced = if delta == u32::MAX {
        0
    } else {
        lsn.saturating_sub(delta as u64)
    };
    Decoded::Record(Record {
        header: RecordHeader {
            // `len <= MAX_RECORD_LEN` was checked above.
            len: len as u32,
            kind,
            flags: h[5] & FLAG_MASK,
            lsn,
            txn: le_u64(&h[24..32]),
            synced,
        },
        stamp: StampRef {
            kind: stamp_kind,
            bytes: &body[..stamp_len],
        },
        payload: &body[stamp_len..],
    })
}

/// Whether the checksum of the whole record `rec` (exactly `len` bytes) holds.
fn crc_ok(rec: &[u8], salt: u32) -> bool {
    let h = &rec[..HEADER_LEN];
    let mut head = [0u8; 4 + HEADER_LEN];
    head[..4].copy_from_slice(&salt.to_le_bytes());
    head[4..12].copy_from_slice(&h[..8]);
    head[16..].copy_from_slice(&h[12..]);
    crc32c::crc32c_append(crc32c::crc32c(&head), &rec[HEADER_LEN..]) == le_u32(&h[8..12])
}

fn check_len(len: usize) -> Option<&'static str> {
    if len < HEADER_LEN {
        Some("length field is smaller than a record header")
    } else if len > MAX_RECORD_LEN {
        Some("length field exceeds the maximum record length")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn enc(spec: &RecordSpec<'_>, lsn: Lsn, synced: Lsn, salt: u32) -> Vec<u8> {
        let mut out = vec![0xAA; spec.encoded_len()];
        spec.encode(lsn, synced, salt, &mut out);
        out
    }

    #[test]
    fn round_trip_basic() {
        let stamp = Stamp::LvSparse(vec![(3, 9), (0, 1)]);
        let spec = RecordSpec {
            kind: Kind::Redo,
            flags: FLAG_COMMIT,
            txn: 77,
            stamp: &stamp,
            payload: &[b"hello", b" world"],
        };
        let buf = enc(&spec, 4096, 4000, 7);
        assert_eq!(buf.len() % ALIGN, 0);
        assert!(buf[spec.unpadded_len()..].iter().all(|&b| b == 0));
        let Decoded::Record(r) = decode(&buf, 4096, 7) else {
            panic!("not a record")
        };
        assert_eq!(r.header.kind, Kind::Redo);
        assert!(r.commits());
        assert_eq!(r.header.txn, 77);
        assert_eq!(r.header.synced, 4000);
        assert_eq!(r.payload, b"hello world");
        assert_eq!(r.stamp.to_stamp(), stamp);
        let mut lv = [5u64; 5];
        assert_eq!(r.stamp.lv_into(&mut lv), 4);
        assert_eq!(lv, [1, 0, 0, 9, 0]);
        assert_eq!(r.end(), 4096 + buf.len() as u64);
        assert!(matches!(
            decode(&buf, 4096, 8),
            Decoded::Invalid("checksum mismatch")
        ));
        assert!(matches!(decode(&buf, 4104, 7), Decoded::Invalid(_)));
    }

    #[test]
    fn synced_saturates() {
        let spec = RecordSpec {
            kind: Kind::Commit,
            flags: 0,
            txn: 1,
            stamp: &Stamp::None,
            payload: &[],
        };
        let lsn = 10u64 << 32;
        let buf = enc(&spec, lsn, 5, 0);
        let Decoded::Record(r) = decode(&buf, lsn, 0) else {
            panic!()
        };
        assert_eq!(r.header.synced, 0);
        let buf = enc(&spec, lsn, lsn, 0);
        let Decoded::Record(r) = decode(&buf, lsn, 0) else {
            panic!()
        };
        assert_eq!(r.header.synced, lsn);
    }

    #[test]
    fn empty_truncated_and_newer_version() {
        assert!(matches!(decode(&[0u8; 40], 0, 0), Decoded::Empty));
        assert!(matches!(
            decode(&[0u8; 2], 0, 0),
            Decoded::Truncated { need: HEADER_LEN }
        ));
        let spec = RecordSpec {
            kind: Kind::Abort,
            flags: 0,
            txn: 1,
            stamp: &Stamp::Gsn(3),
            payload: &[],
        };
        let mut buf = enc(&spec, 0, 0, 0);
        assert!(matches!(
            decode(&buf[..20], 0, 0),
            Decoded::Truncated { need: 40 }
        ));
        assert!(matches!(
            decode(&buf[..39], 0, 0),
            Decoded::Truncated { need: 40 }
        ));
        buf[6] = 2;
        // A torn header can show any version: without a valid checksum it is just damage.
        assert!(matches!(
            decode(&buf, 0, 0),
            Decoded::Invalid("checksum mismatch")
        ));
        buf[8..12].fill(0);
        seal(&mut buf, 40, 0);
        assert!(matches!(
            decode(&buf, 0, 0),
            Decoded::Invalid(REASON_NEWER_VERSION)
        ));
    }

    #[test]
    fn pad_records() {
        let mut buf = vec![1u8; 64];
        encode_pad(800, 700, 3, &mut buf);
        let Decoded::Record(r) = decode(&buf, 800, 3) else {
            panic!()
        };
        assert_eq!(r.header.kind, Kind::Pad);
        assert_eq!(r.padded_len(), 64);
    }

    #[test]
    fn check_rejects_oversized() {
        let big = vec![0u8; MAX_RECORD_LEN];
        let p: [&[u8]; 1] = [&big];
        let spec = RecordSpec {
            kind: Kind::Redo,
            flags: 0,
            txn: 1,
            stamp: &Stamp::None,
            payload: &p,
        };
        assert!(matches!(spec.check(), Err(WalError::RecordTooLarge { .. })));
        let lv = Stamp::Lv(vec![0; MAX_LV_ENTRIES + 1]);
        let spec = RecordSpec {
            kind: Kind::Redo,
            flags: 0,
            txn: 1,
            stamp: &lv,
            payload: &[],
        };
        assert!(spec.check().is_err());
    }
}
