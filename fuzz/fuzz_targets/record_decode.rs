//! Fuzz `record::decode`: input = u64 lsn, u32 salt (little endian), then the bytes to decode.
//! Never panics; a record that decodes re-encodes to the same bytes.
#![no_main]

use braid_wal::record::{Decoded, RecordSpec, decode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 12 {
        return;
    }
    let lsn = u64::from_le_bytes(data[0..8].try_into().unwrap());
    let salt = u32::from_le_bytes(data[8..12].try_into().unwrap());
    let buf = &data[12..];
    if let Decoded::Record(r) = decode(buf, lsn, salt) {
        let len = r.header.len as usize;
        assert!(len <= buf.len());
        assert_eq!(r.header.lsn, lsn);
        let mut lv = [0u64; 256];
        let n = r.stamp.lv_into(&mut lv);
        assert_eq!(n, r.stamp.lv_len());
        let stamp = r.stamp.to_stamp();
        let payload = [r.payload];
        let spec = RecordSpec {
            kind: r.header.kind,
            flags: r.header.flags,
            txn: r.header.txn,
            stamp: &stamp,
            payload: &payload,
        };
        assert_eq!(spec.unpadded_len(), len);
        let mut out = vec![0u8; spec.encoded_len()];
        spec.encode(lsn, r.header.synced, salt, &mut out);
        // `synced` is stored as a saturated distance; where it round-trips, so must every byte.
        if out[12..16] == buf[12..16] {
            assert_eq!(&out[..len], &buf[..len], "re-encoding differs");
        }
        assert!(matches!(decode(&out, lsn, salt), Decoded::Record(_)));
    }
});
