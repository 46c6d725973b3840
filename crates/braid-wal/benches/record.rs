//! Encode and decode of one record with a 250-byte payload (a typical YCSB redo record): the
//! per-commit framing cost, dominated by one crc32c pass.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use braid_wal::record::{Decoded, FLAG_COMMIT, Kind, RecordSpec, Stamp, decode};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn record(c: &mut Criterion) {
    let payload = vec![0x5Au8; 250];
    let parts: [&[u8]; 1] = [&payload];
    let stamps = [
        ("gsn", Stamp::Gsn(123_456)),
        ("lv8", Stamp::Lv((0..8).map(|i| i * 1000).collect())),
        ("lv_sparse2", Stamp::LvSparse(vec![(1, 10), (5, 77)])),
    ];
    let mut g = c.benchmark_group("record_250B");
    for (name, stamp) in &stamps {
        let spec = RecordSpec {
            kind: Kind::Redo,
            flags: FLAG_COMMIT,
            txn: 42,
            stamp,
            payload: &parts,
        };
        let len = spec.encoded_len();
        g.throughput(Throughput::Bytes(len as u64));
        let mut out = vec![0u8; len];
        g.bench_function(format!("encode/{name}"), |b| {
            b.iter(|| black_box(&spec).encode(black_box(1 << 20), 1 << 19, 7, &mut out))
        });
        spec.encode(1 << 20, 1 << 19, 7, &mut out);
        g.bench_function(format!("decode/{name}"), |b| {
            b.iter(|| match decode(black_box(&out), black_box(1 << 20), 7) {
                Decoded::Record(r) => black_box(r.payload.len()),
                _ => unreachable!("valid record"),
            })
        });
    }
    g.finish();
}

criterion_group!(benches, record);
criterion_main!(benches);
