//! Codecs of the segment header and the stream meta file (layouts in the parent module's doc),
//! and the crash-safe replacement of the meta file.

use std::path::Path;

use super::{SEGMENT_HEADER, io_err};
use crate::fs::{Fs, OpenOpts};
use crate::{Lsn, SegmentDamage, WalError};

const SEG_MAGIC: &[u8; 8] = b"BRAIDSEG";
const META_MAGIC: &[u8; 8] = b"BRAIDMET";
/// Format version of segment headers and meta files.
pub(crate) const SEGMENT_FORMAT_VERSION: u32 = 1;
pub(super) const META_LEN: usize = 64;
pub(super) const SEG_HEADER_USED: usize = 40;

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

pub(super) struct SegHeader {
    pub(super) stream: u32,
    pub(super) first_lsn: Lsn,
    pub(super) segment_size: u64,
    pub(super) salt: u32,
}

pub(super) fn encode_seg_header(h: &SegHeader) -> Vec<u8> {
    let mut b = vec![0u8; SEGMENT_HEADER as usize];
    b[0..8].copy_from_slice(SEG_MAGIC);
    b[8..12].copy_from_slice(&SEGMENT_FORMAT_VERSION.to_le_bytes());
    b[12..16].copy_from_slice(&h.stream.to_le_bytes());
    b[16..24].copy_from_slice(&h.first_lsn.to_le_bytes());
    b[24..32].copy_from_slice(&h.segment_size.to_le_bytes());
    b[32..36].copy_from_slice(&h.salt.to_le_bytes());
    let crc = crc32c::crc32c(&b[0..36]);
    b[36..40].copy_from_slice(&crc.to_le_bytes());
    b
}

pub(super) enum HeaderProblem {
    /// Unreadable: short, bad magic or bad checksum (a crash while writing it, or damage).
    Torn(SegmentDamage),
    /// Well-formed but not what this stream expects.
    Foreign(SegmentDamage),
}

pub(super) fn decode_seg_header(b: &[u8]) -> Result<SegHeader, HeaderProblem> {
    if b.len() < SEG_HEADER_USED {
        return Err(HeaderProblem::Torn(SegmentDamage::HeaderIncomplete));
    }
    if &b[0..8] != SEG_MAGIC {
        return Err(HeaderProblem::Torn(SegmentDamage::BadMagic {
            what: "segment header",
        }));
    }
    if crc32c::crc32c(&b[0..36]) != u32_at(b, 36) {
        return Err(HeaderProblem::Torn(SegmentDamage::Checksum {
            what: "header",
        }));
    }
    let version = u32_at(b, 8);
    if version != SEGMENT_FORMAT_VERSION {
        return Err(HeaderProblem::Foreign(SegmentDamage::Version {
            what: "segment",
            version,
            reads: SEGMENT_FORMAT_VERSION,
        }));
    }
    Ok(SegHeader {
        stream: u32_at(b, 12),
        first_lsn: u64_at(b, 16),
        segment_size: u64_at(b, 24),
        salt: u32_at(b, 32),
    })
}

pub(super) struct Meta {
    pub(super) stream: u32,
    pub(super) salt: u32,
    pub(super) segment_size: u64,
    pub(super) start: Lsn,
}

pub(super) fn encode_meta(m: &Meta) -> Vec<u8> {
    let mut b = vec![0u8; META_LEN];
    b[0..8].copy_from_slice(META_MAGIC);
    b[8..12].copy_from_slice(&SEGMENT_FORMAT_VERSION.to_le_bytes());
    b[12..16].copy_from_slice(&m.stream.to_le_bytes());
    b[16..20].copy_from_slice(&m.salt.to_le_bytes());
    b[24..32].copy_from_slice(&m.segment_size.to_le_bytes());
    b[32..40].copy_from_slice(&m.start.to_le_bytes());
    let crc = crc32c::crc32c(&b[0..40]);
    b[40..44].copy_from_slice(&crc.to_le_bytes());
    b
}

pub(super) fn decode_meta(b: &[u8]) -> Result<Meta, SegmentDamage> {
    if b.len() < 44 {
        return Err(SegmentDamage::Short {
            what: "meta file",
            len: b.len(),
            expected: META_LEN,
        });
    }
    if &b[0..8] != META_MAGIC {
        return Err(SegmentDamage::BadMagic {
            what: "stream meta file",
        });
    }
    if crc32c::crc32c(&b[0..40]) != u32_at(b, 40) {
        return Err(SegmentDamage::Checksum { what: "meta" });
    }
    let version = u32_at(b, 8);
    if version != SEGMENT_FORMAT_VERSION {
        return Err(SegmentDamage::Version {
            what: "meta file",
            version,
            reads: SEGMENT_FORMAT_VERSION,
        });
    }
    Ok(Meta {
        stream: u32_at(b, 12),
        salt: u32_at(b, 16),
        segment_size: u64_at(b, 24),
        start: u64_at(b, 32),
    })
}

pub(super) fn write_meta(
    fs: &dyn Fs,
    dir: &Path,
    meta_path: &Path,
    tmp_path: &Path,
    m: &Meta,
) -> Result<(), WalError> {
    let f = fs
        .open(tmp_path, OpenOpts::create_truncate())
        .map_err(|e| io_err("create", tmp_path, e))?;
    f.write_all_at(0, &encode_meta(m))
        .map_err(|e| io_err("write", tmp_path, e))?;
    f.sync_data()
        .map_err(|e| io_err("fdatasync", tmp_path, e))?;
    drop(f);
    fs.rename(tmp_path, meta_path)
        .map_err(|e| io_err("rename", tmp_path, e))?;
    fs.sync_dir(dir)
        .map_err(|e| io_err("fsync directory", dir, e))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn header_round_trip_and_damage() {
        let h = SegHeader {
            stream: 3,
            first_lsn: 8192,
            segment_size: 4096,
            salt: 0xdead_beef,
        };
        let mut b = encode_seg_header(&h);
        let d = decode_seg_header(&b).ok().unwrap();
        assert_eq!(
            (d.stream, d.first_lsn, d.segment_size, d.salt),
            (3, 8192, 4096, 0xdead_beef)
        );
        b[20] ^= 1;
        assert!(matches!(decode_seg_header(&b), Err(HeaderProblem::Torn(_))));
        assert!(matches!(
            decode_seg_header(&b[..10]),
            Err(HeaderProblem::Torn(_))
        ));
    }

    #[test]
    fn meta_round_trip() {
        let m = Meta {
            stream: 1,
            salt: 42,
            segment_size: 65536,
            start: 777,
        };
        let b = encode_meta(&m);
        let d = decode_meta(&b).unwrap();
        assert_eq!(
            (d.stream, d.salt, d.segment_size, d.start),
            (1, 42, 65536, 777)
        );
        let mut b2 = b.clone();
        b2[33] ^= 4;
        assert!(decode_meta(&b2).is_err());
    }
}
