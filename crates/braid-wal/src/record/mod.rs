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
//! * Flags bits 0..4 belong to the caller (`FLAG_MASK`); only bit 0 ([`FLAG_COMMIT`]) is
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
//!
//! One file per mechanism: `stamp` (ordering stamps: GSN, dense and sparse LVs), `encode`
//! (writing records and pads) and `decode` (validating and reading them back).

use crate::Lsn;

mod decode;
mod encode;
mod stamp;

pub use decode::{Decoded, decode, peek_header};
pub use encode::{RecordSpec, encode_pad};
pub use stamp::{LvEntries, Stamp, StampKind, StampRef};
/// Bytes of a record header (everything before the stamp).
pub(crate) const HEADER_LEN: usize = 32;
/// Records start and end on multiples of this many bytes.
pub(crate) const ALIGN: usize = 8;
/// The format version this build writes; it reads this version and refuses newer ones.
pub(crate) const FORMAT_VERSION: u16 = 1;
/// Largest record (header + stamp + payload, unpadded) in bytes: 64 MiB.
pub(crate) const MAX_RECORD_LEN: usize = 1 << 26;
/// Flag: this record ends its transaction (no separate commit record follows).
pub const FLAG_COMMIT: u8 = 1;
/// The flag bits that belong to the caller; bits 4..8 hold the stamp kind.
pub(crate) const FLAG_MASK: u8 = 0x0F;
/// Most entries an LV stamp can hold (the count is a `u16`).
pub(crate) const MAX_LV_ENTRIES: usize = u16::MAX as usize;

const STAMP_SHIFT: u32 = 4;
const STAMP_NONE: u8 = 0;
const STAMP_GSN: u8 = 1;
const STAMP_LV: u8 = 2;
const STAMP_LV_SPARSE: u8 = 3;
const SPARSE_ENTRY: usize = 9;

/// Round `n` up to the record alignment.
#[inline]
pub(crate) const fn align_up(n: usize) -> usize {
    (n + ALIGN - 1) & !(ALIGN - 1)
}

/// What a record holds (header byte 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr)]
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
    pub(crate) fn from_u8(v: u8) -> Option<Kind> {
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
    pub(crate) fn as_u8(self) -> u8 {
        self as u8
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::encode::seal;
    use super::*;
    use crate::WalError;

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
            Decoded::Invalid(crate::RecordFault::Checksum)
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
            Decoded::Invalid(crate::RecordFault::Checksum)
        ));
        buf[8..12].fill(0);
        seal(&mut buf, 40, 0);
        assert!(matches!(
            decode(&buf, 0, 0),
            Decoded::Invalid(crate::RecordFault::NewerVersion)
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
