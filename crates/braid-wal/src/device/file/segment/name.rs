//! Segment and meta file names, and the per-segment checksum salt (a recycled segment's old
//! records never verify under the new salt).

use crate::Lsn;

/// The checksum salt of segment `index` of a stream whose salt is `stream_salt`: a 64-bit mix
/// (splitmix64 finaliser) of both, folded to 32 bits.
pub fn segment_salt(stream_salt: u32, index: u64) -> u32 {
    let x = crate::mix::mix64(
        (u64::from(stream_salt) << 32 | u64::from(stream_salt))
            ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15),
    );
    // Folding: the truncation to the low half is intended.
    (x ^ (x >> 32)) as u32
}

/// File name of the segment of `stream` starting at `first_lsn`.
#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) fn segment_file_name(stream: u32, first_lsn: Lsn) -> String {
    format!("s{stream:03}-{first_lsn:016x}.log")
}

/// File name of the lock file of `stream`: whoever holds its lock is the stream's one writer.
pub(crate) fn lock_file_name(stream: u32) -> String {
    format!("s{stream:03}.lock")
}

/// File name of the meta file of `stream`.
#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) fn meta_file_name(stream: u32) -> String {
    format!("s{stream:03}.meta")
}

pub(super) fn parse_segment_name(stream: u32, name: &str) -> Option<Lsn> {
    let rest = name
        .strip_prefix(&format!("s{stream:03}-"))?
        .strip_suffix(".log")?;
    if rest.len() != 16 || !rest.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(rest, 16).ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn names_round_trip() {
        let n = segment_file_name(7, 0x1234_0000);
        assert_eq!(n, "s007-0000000012340000.log");
        assert_eq!(parse_segment_name(7, &n), Some(0x1234_0000));
        assert_eq!(parse_segment_name(70, &n), None);
        assert_eq!(parse_segment_name(7, "s007-00000000123400.log"), None);
        assert_eq!(parse_segment_name(7, "s007.meta"), None);
        assert_eq!(
            parse_segment_name(1000, &segment_file_name(1000, 4096)),
            Some(4096)
        );
    }

    #[test]
    fn segment_salts_differ() {
        let s: Vec<u32> = (0..64).map(|i| segment_salt(0x1234_5678, i)).collect();
        let mut d = s.clone();
        d.sort_unstable();
        d.dedup();
        assert_eq!(d.len(), s.len());
        assert_ne!(segment_salt(1, 0), segment_salt(2, 0));
    }
}
