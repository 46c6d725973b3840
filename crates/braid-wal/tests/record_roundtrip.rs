//! Record framing: round trips for every stamp kind, and `decode` on hostile bytes (arbitrary
//! buffers, single-bit flips, truncations, stale salts). These are also the byte-mutation
//! stand-in for the `record_decode` fuzz target on machines without a nightly toolchain.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use braid_wal::RecordFault;
use braid_wal::record::{
    ALIGN, Decoded, FLAG_COMMIT, FLAG_MASK, FORMAT_VERSION, HEADER_LEN, Kind, MAX_RECORD_LEN,
    Record, RecordSpec, Stamp, StampKind, decode, encode_pad,
};
use proptest::prelude::*;

fn kind_strategy() -> impl Strategy<Value = Kind> {
    (1u8..=7).prop_map(|k| Kind::from_u8(k).unwrap())
}

fn stamp_strategy() -> impl Strategy<Value = Stamp> {
    prop_oneof![
        Just(Stamp::None),
        any::<u64>().prop_map(Stamp::Gsn),
        prop::collection::vec(any::<u64>(), 0..40).prop_map(Stamp::Lv),
        prop::collection::vec((any::<u8>(), any::<u64>()), 0..40).prop_map(Stamp::LvSparse),
    ]
}

#[derive(Debug, Clone)]
struct Case {
    kind: Kind,
    flags: u8,
    txn: u64,
    stamp: Stamp,
    /// The payload, given to the encoder split in pieces at `cuts`.
    payload: Vec<u8>,
    cuts: Vec<usize>,
    lsn: u64,
    synced_back: u64,
    salt: u32,
}

fn case_strategy() -> impl Strategy<Value = Case> {
    (
        kind_strategy(),
        any::<u8>(),
        any::<u64>(),
        stamp_strategy(),
        prop::collection::vec(any::<u8>(), 0..4096),
        prop::collection::vec(any::<prop::sample::Index>(), 0..4),
        (0u64..1 << 50).prop_map(|l| l * ALIGN as u64),
        prop_oneof![0u64..64, 0u64..1 << 40, Just(u64::MAX)],
        any::<u32>(),
    )
        .prop_map(
            |(kind, flags, txn, stamp, payload, cuts, lsn, synced_back, salt)| {
                let mut cuts: Vec<usize> =
                    cuts.iter().map(|i| i.index(payload.len() + 1)).collect();
                cuts.sort_unstable();
                Case {
                    kind,
                    flags,
                    txn,
                    stamp,
                    payload,
                    cuts,
                    lsn,
                    synced_back,
                    salt,
                }
            },
        )
}

fn pieces<'a>(payload: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut at = 0;
    for &c in cuts {
        out.push(&payload[at..c]);
        at = c;
    }
    out.push(&payload[at..]);
    out
}

fn encode_case(c: &Case) -> (Vec<u8>, usize) {
    let parts = pieces(&c.payload, &c.cuts);
    let spec = RecordSpec {
        kind: c.kind,
        flags: c.flags,
        txn: c.txn,
        stamp: &c.stamp,
        payload: &parts,
    };
    let len = spec.check().unwrap();
    assert_eq!(len, spec.encoded_len());
    assert_eq!(len % ALIGN, 0);
    // Garbage in the buffer must not leak into the record or its padding.
    let mut out = vec![0xA5; len];
    spec.encode(c.lsn, c.lsn.saturating_sub(c.synced_back), c.salt, &mut out);
    (out, spec.unpadded_len())
}

fn expected_synced(c: &Case) -> u64 {
    let synced = c.lsn.saturating_sub(c.synced_back);
    if c.lsn - synced >= u32::MAX as u64 {
        0
    } else {
        synced
    }
}

fn check_same(r: &Record<'_>, c: &Case) {
    assert_eq!(r.header.kind, c.kind);
    assert_eq!(r.header.flags, c.flags & FLAG_MASK);
    assert_eq!(r.commits(), c.flags & FLAG_COMMIT != 0);
    assert_eq!(r.header.txn, c.txn);
    assert_eq!(r.header.lsn, c.lsn);
    assert_eq!(r.header.synced, expected_synced(c));
    assert_eq!(r.stamp.to_stamp(), c.stamp);
    assert_eq!(r.stamp.kind(), c.stamp.kind());
    assert_eq!(r.payload, &c.payload[..]);
}

/// The dense LV a stamp stands for, computed the slow way.
fn dense(stamp: &Stamp) -> Vec<u64> {
    match stamp {
        Stamp::None | Stamp::Gsn(_) => Vec::new(),
        Stamp::Lv(v) => v.clone(),
        Stamp::LvSparse(v) => {
            let n = v.iter().map(|&(i, _)| i as usize + 1).max().unwrap_or(0);
            let mut out = vec![0; n];
            for &(i, x) in v {
                out[i as usize] = out[i as usize].max(x);
            }
            out
        }
    }
}

/// Same record (byte-flips in padding leave the record unchanged, which is fine).
fn same_record(a: &Record<'_>, b: &Record<'_>) -> bool {
    a.header == b.header && a.stamp == b.stamp && a.payload == b.payload
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn round_trip(c in case_strategy()) {
        let (buf, unpadded) = encode_case(&c);
        prop_assert!(buf[unpadded..].iter().all(|&b| b == 0), "padding is zeroed");
        let Decoded::Record(r) = decode(&buf, c.lsn, c.salt) else {
            panic!("round trip failed: {:?}", decode(&buf, c.lsn, c.salt));
        };
        check_same(&r, &c);
        prop_assert_eq!(r.padded_len(), buf.len());
        prop_assert_eq!(r.end(), c.lsn + buf.len() as u64);
        prop_assert_eq!(r.header.len as usize, unpadded);
        // Trailing bytes (the next record) do not matter.
        let mut longer = buf.clone();
        longer.extend_from_slice(&[0xFF; 64]);
        prop_assert!(matches!(decode(&longer, c.lsn, c.salt), Decoded::Record(_)));

        // Stamp accessors.
        let want = dense(&c.stamp);
        prop_assert_eq!(r.stamp.lv_len(), want.len());
        let mut out = vec![u64::MAX; want.len() + 3];
        prop_assert_eq!(r.stamp.lv_into(&mut out), want.len());
        prop_assert_eq!(&out[..want.len()], &want[..]);
        prop_assert!(out[want.len()..].iter().all(|&x| x == 0));
        let mut short = vec![7u64; want.len() / 2];
        prop_assert_eq!(r.stamp.lv_into(&mut short), want.len());
        prop_assert_eq!(&short[..], &want[..want.len() / 2]);
        prop_assert_eq!(r.stamp.gsn(), match c.stamp { Stamp::Gsn(g) => Some(g), _ => None });
        if let Stamp::LvSparse(v) = &c.stamp {
            let got: Vec<(usize, u64)> = r.stamp.lv_entries().collect();
            let exp: Vec<(usize, u64)> = v.iter().map(|&(i, x)| (i as usize, x)).collect();
            prop_assert_eq!(got, exp);
        }

        // Wrong salt or wrong position never decodes.
        prop_assert!(matches!(decode(&buf, c.lsn, c.salt ^ 1), Decoded::Invalid(_)));
        prop_assert!(matches!(decode(&buf, c.lsn + 8, c.salt), Decoded::Invalid(_)));
    }

    #[test]
    fn bit_flips_never_yield_another_record(c in case_strategy(), bit in any::<prop::sample::Index>()) {
        let (buf, _) = encode_case(&c);
        let Decoded::Record(orig) = decode(&buf, c.lsn, c.salt) else { panic!("valid") };
        let bit = bit.index(buf.len() * 8);
        let mut bad = buf.clone();
        bad[bit / 8] ^= 1 << (bit % 8);
        match decode(&bad, c.lsn, c.salt) {
            Decoded::Record(r) => prop_assert!(same_record(&r, &orig), "flip of bit {} decoded as another record", bit),
            Decoded::Empty | Decoded::Truncated { .. } | Decoded::Invalid(_) => {}
        }
    }

    #[test]
    fn truncations_never_decode(c in case_strategy(), cut in any::<prop::sample::Index>()) {
        let (buf, unpadded) = encode_case(&c);
        let cut = cut.index(unpadded);
        match decode(&buf[..cut], c.lsn, c.salt) {
            Decoded::Truncated { need } => prop_assert!(need > cut && need <= unpadded.max(HEADER_LEN)),
            other => panic!("cut at {cut} of {unpadded}: {other:?}"),
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(buf in prop::collection::vec(any::<u8>(), 0..512), lsn in any::<u64>(), salt in any::<u32>()) {
        let _ = decode(&buf, lsn, salt);
        // Also with a plausible header prefix so the deeper checks are reached.
        let mut b = buf.clone();
        if b.len() >= HEADER_LEN {
            let len = (b.len() as u32).min(MAX_RECORD_LEN as u32);
            b[0..4].copy_from_slice(&len.to_le_bytes());
            b[6..8].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
            b[4] = 1 + b[4] % 7;
            b[16..24].copy_from_slice(&lsn.to_le_bytes());
            if let Decoded::Record(r) = decode(&b, lsn, salt) {
                // Accessors of whatever decoded must not panic either.
                let mut out = [0u64; 8];
                let _ = r.stamp.lv_into(&mut out);
                let _ = r.stamp.to_stamp();
                let _ = r.stamp.lv_entries().count();
            }
        }
    }

    #[test]
    fn mutated_records_never_panic(c in case_strategy(), muts in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8), cut in any::<prop::sample::Index>()) {
        let (mut buf, _) = encode_case(&c);
        for (i, v) in muts {
            let i = i.index(buf.len());
            buf[i] = v;
        }
        let cut = cut.index(buf.len() + 1);
        if let Decoded::Record(r) = decode(&buf[..cut], c.lsn, c.salt) {
            let mut out = [0u64; 300];
            let _ = r.stamp.lv_into(&mut out);
            let _ = r.stamp.to_stamp();
            prop_assert!(r.header.len as usize <= cut);
        }
    }
}

#[test]
fn stamp_kinds_are_in_flag_bits_4_to_8() {
    let stamps = [
        (Stamp::None, 0u8),
        (Stamp::Gsn(1), 1),
        (Stamp::Lv(vec![1, 2]), 2),
        (Stamp::LvSparse(vec![(1, 2)]), 3),
    ];
    for (stamp, code) in stamps {
        let spec = RecordSpec {
            kind: Kind::Redo,
            flags: FLAG_COMMIT,
            txn: 1,
            stamp: &stamp,
            payload: &[],
        };
        let mut buf = vec![0; spec.encoded_len()];
        spec.encode(0, 0, 0, &mut buf);
        assert_eq!(buf[5], FLAG_COMMIT | (code << 4));
        assert_eq!(&buf[6..8], &FORMAT_VERSION.to_le_bytes());
        let expected_len = HEADER_LEN
            + match &stamp {
                Stamp::None => 0,
                Stamp::Gsn(_) => 8,
                Stamp::Lv(v) => 2 + 8 * v.len(),
                Stamp::LvSparse(v) => 2 + 9 * v.len(),
            };
        assert_eq!(
            u32::from_le_bytes(buf[0..4].try_into().unwrap()) as usize,
            expected_len
        );
        assert_eq!(stamp.encoded_len() + HEADER_LEN, expected_len);
        // An unknown stamp kind in a known version is refused.
        buf[5] = 4 << 4;
        assert!(matches!(
            decode(&buf, 0, 0),
            Decoded::Invalid(RecordFault::UnknownStamp)
        ));
    }
    assert_eq!(Stamp::Lv(vec![]).kind(), StampKind::Lv);
}

#[test]
fn crc_covers_salt_header_stamp_and_payload() {
    let stamp = Stamp::Gsn(0x1122_3344);
    let spec = RecordSpec {
        kind: Kind::Command,
        flags: 0,
        txn: 5,
        stamp: &stamp,
        payload: &[b"xyz"],
    };
    let mut buf = vec![0; spec.encoded_len()];
    spec.encode(64, 32, 0xDEAD_BEEF, &mut buf);
    let len = spec.unpadded_len();
    let mut zeroed = buf[..len].to_vec();
    zeroed[8..12].fill(0);
    let mut msg = 0xDEAD_BEEFu32.to_le_bytes().to_vec();
    msg.extend_from_slice(&zeroed);
    assert_eq!(
        u32::from_le_bytes(buf[8..12].try_into().unwrap()),
        crc32c::crc32c(&msg)
    );
    // synced is stored as a distance back from lsn.
    assert_eq!(u32::from_le_bytes(buf[12..16].try_into().unwrap()), 32);
}

#[test]
fn header_checks_give_reasons() {
    let spec = RecordSpec {
        kind: Kind::Redo,
        flags: 0,
        txn: 1,
        stamp: &Stamp::None,
        payload: &[b"p"],
    };
    let mut good = vec![0; spec.encoded_len()];
    spec.encode(8, 0, 3, &mut good);
    let with = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut b = good.clone();
        f(&mut b);
        b
    };
    let reason = |b: &[u8]| match decode(b, 8, 3) {
        Decoded::Invalid(r) => r,
        other => panic!("expected invalid, got {other:?}"),
    };
    // A newer version is believed only with a valid checksum (a torn header may show any).
    assert_eq!(
        reason(&with(&|b| b[6..8].copy_from_slice(&2u16.to_le_bytes()))),
        RecordFault::Checksum
    );
    let resealed = with(&|b| {
        b[6..8].copy_from_slice(&2u16.to_le_bytes());
        b[8..12].fill(0);
        let mut h = 3u32.to_le_bytes().to_vec();
        h.extend_from_slice(
            &b[..b
                .len()
                .min(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)],
        );
        let crc = crc32c::crc32c(&h);
        b[8..12].copy_from_slice(&crc.to_le_bytes());
    });
    assert_eq!(reason(&resealed), RecordFault::NewerVersion);
    assert_eq!(
        reason(&with(&|b| b[6..8].fill(0))),
        RecordFault::ZeroVersion
    );
    assert_eq!(reason(&with(&|b| b[4] = 0)), RecordFault::UnknownKind);
    assert_eq!(reason(&with(&|b| b[4] = 8)), RecordFault::UnknownKind);
    assert_eq!(
        reason(&with(&|b| b[0..4].copy_from_slice(&31u32.to_le_bytes()))),
        RecordFault::TooShort
    );
    assert_eq!(
        reason(&with(
            &|b| b[0..4].copy_from_slice(&(MAX_RECORD_LEN as u32 + 1).to_le_bytes())
        )),
        RecordFault::TooLong
    );
    assert_eq!(reason(&with(&|b| b[16] ^= 8)), RecordFault::LsnMismatch);
    assert_eq!(reason(&with(&|b| b[32] ^= 1)), RecordFault::Checksum);
    // A GSN stamp needs 8 bytes; the record has only 1 after the header.
    assert_eq!(
        reason(&with(&|b| b[5] = 1 << 4)),
        RecordFault::StampOverflow
    );
    // Zero length: Empty, even if other header bytes are set.
    assert!(matches!(
        decode(&with(&|b| b[0..4].fill(0)), 8, 3),
        Decoded::Empty
    ));
    assert!(matches!(decode(&[0u8; HEADER_LEN], 0, 0), Decoded::Empty));
    assert!(matches!(
        decode(&[], 0, 0),
        Decoded::Truncated { need: HEADER_LEN }
    ));
}

#[test]
fn pad_fills_its_buffer() {
    for len in [32usize, 40, 4096] {
        let mut buf = vec![0xEE; len];
        encode_pad(1 << 33, (1 << 33) - 100, 77, &mut buf);
        let Decoded::Record(r) = decode(&buf, 1 << 33, 77) else {
            panic!("pad decodes")
        };
        assert_eq!(r.header.kind, Kind::Pad);
        assert_eq!(r.padded_len(), len);
        assert!(r.payload.iter().all(|&b| b == 0));
        assert_eq!(r.header.synced, (1 << 33) - 100);
    }
}
