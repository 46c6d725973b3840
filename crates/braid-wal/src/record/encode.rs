//! Encoding: a caller's [`RecordSpec`] (or a pad) into its framed, checksummed bytes, in one
//! crc32c pass and without allocating.

use super::stamp::{Stamp, StampKind};
use super::{
    ALIGN, FLAG_MASK, FORMAT_VERSION, HEADER_LEN, Kind, MAX_LV_ENTRIES, MAX_RECORD_LEN,
    STAMP_SHIFT, align_up,
};
use crate::{Lsn, WalError};

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

    /// Space the record takes in the log (padded to `ALIGN`): what a stream reserves.
    pub fn encoded_len(&self) -> usize {
        align_up(self.unpadded_len())
    }

    /// Check the record can be encoded; returns [`RecordSpec::encoded_len`].
    pub(crate) fn check(&self) -> Result<usize, WalError> {
        if self.stamp.entries() > MAX_LV_ENTRIES {
            return Err(WalError::BadSize(crate::BadSize::Stamp {
                entries: self.stamp.entries(),
                max: MAX_LV_ENTRIES,
            }));
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
    /// If `out` is shorter than `unpadded_len()` or `RecordSpec::check` fails: both are
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
/// If `out.len()` is not a multiple of `ALIGN` or not in `HEADER_LEN..=MAX_RECORD_LEN`
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
pub(super) fn synced_delta(lsn: Lsn, synced: Lsn) -> u32 {
    lsn.saturating_sub(synced).min(u32::MAX as u64) as u32
}

#[allow(clippy::too_many_arguments)]
#[inline]
pub(super) fn write_header(
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
pub(super) fn seal(out: &mut [u8], len: usize, salt: u32) {
    let crc = crc32c::crc32c_append(crc32c::crc32c(&salt.to_le_bytes()), &out[..len]);
    out[8..12].copy_from_slice(&crc.to_le_bytes());
    let padded = align_up(len).min(out.len());
    out[len..padded].fill(0);
}
