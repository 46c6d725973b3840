//! The ring header: its constant part's codec and checksum, crash-safe formatting and the
//! checks at open, and the per-lap checksum salt.

use braid_pmem::Region;

use super::{
    CONST_LEN, OFF_CAP, OFF_CRC, OFF_SALT, OFF_STREAM, OFF_VERSION, RING_HEADER, RING_MAGIC,
    RING_VERSION,
};
use crate::{RingFault, SegmentDamage, WalError, WrongLog};

/// The checksum salt of ring lap `lap` (splitmix64 finaliser of the ring salt and the lap).
pub(super) fn lap_salt(salt: u32, lap: u64) -> u32 {
    let x = crate::mix::mix64(
        (u64::from(salt) << 32 | u64::from(salt))
            ^ lap.wrapping_mul(0x9E37_79B9_7F4A_7C15)
            ^ 0x5249_4E47,
    );
    // Folding: the truncation to the low half is intended.
    (x ^ (x >> 32)) as u32
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// The constant part of a ring header (magic included), with its crc.
fn encode_header(stream: u32, salt: u32, cap: u64) -> [u8; CONST_LEN] {
    let mut b = [0u8; CONST_LEN];
    b[..8].copy_from_slice(&RING_MAGIC);
    b[OFF_VERSION..OFF_VERSION + 4].copy_from_slice(&RING_VERSION.to_le_bytes());
    b[OFF_STREAM..OFF_STREAM + 4].copy_from_slice(&stream.to_le_bytes());
    b[OFF_SALT..OFF_SALT + 4].copy_from_slice(&salt.to_le_bytes());
    b[OFF_CAP..OFF_CAP + 8].copy_from_slice(&cap.to_le_bytes());
    let crc = crc32c::crc32c(&b[..OFF_CRC]);
    b[OFF_CRC..CONST_LEN].copy_from_slice(&crc.to_le_bytes());
    b
}

/// Check (or write) the ring header; returns the ring salt.
pub(super) fn open_header(
    region: &Region,
    name: &str,
    stream: u32,
    cap: u64,
) -> Result<u32, WalError> {
    let mut hdr = vec![0u8; RING_HEADER];
    region.read(0, &mut hdr);
    let not_ring = |damage: SegmentDamage| WalError::BadSegment {
        file: name.to_string(),
        damage,
    };
    if hdr[..8] == RING_MAGIC {
        let version = le_u32(&hdr, OFF_VERSION);
        if version != RING_VERSION {
            return Err(not_ring(SegmentDamage::Version {
                what: "log ring",
                version,
                reads: RING_VERSION,
            }));
        }
        if crc32c::crc32c(&hdr[..OFF_CRC]) != le_u32(&hdr, OFF_CRC) {
            return Err(not_ring(SegmentDamage::RingHeader {
                fault: RingFault::Checksum,
            }));
        }
        let found = le_u32(&hdr, OFF_STREAM);
        if found != stream {
            return Err(WalError::WrongLog(WrongLog::RingStream {
                region: name.to_string(),
                found,
                stream,
            }));
        }
        let found_cap = le_u64(&hdr, OFF_CAP);
        if found_cap != cap {
            return Err(not_ring(SegmentDamage::RingSize {
                found: found_cap,
                room: cap,
            }));
        }
        return Ok(le_u32(&hdr, OFF_SALT));
    }
    // No magic: a new ring (all zero) or a format interrupted before its magic was written
    // (which writes nothing but bytes 8..36 before the magic; see the module docs).
    let blank = hdr[..8].iter().chain(&hdr[CONST_LEN..]).all(|b| *b == 0);
    if !blank {
        return Err(not_ring(SegmentDamage::NotARing));
    }
    let salt: u32 = rand::random();
    let h = encode_header(stream, salt, cap);
    // Everything but the magic first, then the magic: a torn format is recognisable.
    region.write(8, &h[8..]);
    region.persist(0, CONST_LEN);
    region.write(0, &h[..8]);
    region.persist(0, 8);
    region.check()?;
    Ok(salt)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn lap_salts_differ() {
        let s = 0x1234_5678;
        let salts: Vec<u32> = (0..64).map(|l| lap_salt(s, l)).collect();
        for i in 0..salts.len() {
            for j in i + 1..salts.len() {
                assert_ne!(salts[i], salts[j]);
            }
        }
        assert_ne!(lap_salt(1, 0), lap_salt(2, 0));
    }

    #[test]
    fn header_round_trip() {
        let h = encode_header(3, 77, 1 << 20);
        assert_eq!(&h[..8], &RING_MAGIC);
        assert_eq!(le_u32(&h, OFF_STREAM), 3);
        assert_eq!(le_u32(&h, OFF_SALT), 77);
        assert_eq!(le_u64(&h, OFF_CAP), 1 << 20);
        assert_eq!(crc32c::crc32c(&h[..OFF_CRC]), le_u32(&h, OFF_CRC));
    }
}
