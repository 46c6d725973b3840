//! Decoding: validating the bytes at a position (length, version, salted checksum, stored
//! LSN) and borrowing the record's stamp and payload from them.

use super::stamp::{StampKind, StampRef, le_u16, le_u32, le_u64};
use super::{
    FLAG_MASK, FORMAT_VERSION, HEADER_LEN, Kind, MAX_RECORD_LEN, Record, RecordHeader,
    SPARSE_ENTRY, STAMP_SHIFT,
};
use crate::{Lsn, RecordFault};

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
    Invalid(RecordFault),
}

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
        return Decoded::Invalid(RecordFault::ZeroVersion);
    }
    if let Some(reason) = check_len(len) {
        return Decoded::Invalid(reason);
    }
    if version > FORMAT_VERSION {
        // Only a record whose checksum holds proves a newer writer: a torn header (8-byte
        // words of old and new bytes mixed) may show any version.
        if le_u64(&h[16..24]) != expected_lsn {
            return Decoded::Invalid(RecordFault::LsnMismatch);
        }
        let Some(rec) = buf.get(..len) else {
            return Decoded::Truncated { need: len };
        };
        return if crc_ok(rec, salt) {
            Decoded::Invalid(RecordFault::NewerVersion)
        } else {
            Decoded::Invalid(RecordFault::Checksum)
        };
    }
    let Some(kind) = Kind::from_u8(h[4]) else {
        return Decoded::Invalid(RecordFault::UnknownKind);
    };
    let Some(stamp_kind) = StampKind::from_code(h[5] >> STAMP_SHIFT) else {
        return Decoded::Invalid(RecordFault::UnknownStamp);
    };
    let lsn = le_u64(&h[16..24]);
    if lsn != expected_lsn {
        return Decoded::Invalid(RecordFault::LsnMismatch);
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
        return Decoded::Invalid(RecordFault::StampOverflow);
    };
    let stored = le_u32(&h[8..12]);
    // salt ++ header with the crc zeroed, as one block, then the rest in place: two calls.
    let mut head = [0u8; 4 + HEADER_LEN];
    head[..4].copy_from_slice(&salt.to_le_bytes());
    head[4..12].copy_from_slice(&h[..8]);
    head[16..].copy_from_slice(&h[12..]);
    let crc = crc32c::crc32c_append(crc32c::crc32c(&head), &rec[HEADER_LEN..]);
    if crc != stored {
        return Decoded::Invalid(RecordFault::Checksum);
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
pub(super) fn crc_ok(rec: &[u8], salt: u32) -> bool {
    let h = &rec[..HEADER_LEN];
    let mut head = [0u8; 4 + HEADER_LEN];
    head[..4].copy_from_slice(&salt.to_le_bytes());
    head[4..12].copy_from_slice(&h[..8]);
    head[16..].copy_from_slice(&h[12..]);
    crc32c::crc32c_append(crc32c::crc32c(&head), &rec[HEADER_LEN..]) == le_u32(&h[8..12])
}

pub(super) fn check_len(len: usize) -> Option<RecordFault> {
    if len < HEADER_LEN {
        Some(RecordFault::TooShort)
    } else if len > MAX_RECORD_LEN {
        Some(RecordFault::TooLong)
    } else {
        None
    }
}
