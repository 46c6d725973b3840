//! LSN-vector update cost per transaction (Taurus Section 4.2, Fig. 16): the LV work of one
//! YCSB transaction with two accesses, scalar against AVX2 and AVX-512, for 4, 16 and 64
//! streams. Per transaction: merge the two rows' writeLVs (and readLVs, as command logging
//! does for writes) into T.LV, compare T.LV with the committed vector, and raise both rows'
//! LVs with T.LV afterwards. `cargo bench -p braid-wal --bench lv`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use braid_wal::testing::LvImpl as Impl;
use criterion::{Criterion, criterion_group, criterion_main};

fn lv_update(c: &mut Criterion) {
    let mut g = c.benchmark_group("lv_update_per_txn");
    for n in [4usize, 16, 64] {
        // Two rows, each with a writeLV and a readLV.
        let mut rows: Vec<Vec<u64>> = (0..4)
            .map(|r| {
                (0..n as u64)
                    .map(|i| (i * 7919 + r * 104_729) % 1_000_003)
                    .collect()
            })
            .collect();
        let clv: Vec<u64> = vec![2_000_000; n];
        for imp in Impl::available() {
            g.bench_function(format!("{}/{n}", imp.name()), |b| {
                let mut t = vec![0u64; n];
                b.iter(|| {
                    t.fill(0);
                    for r in &rows {
                        imp.max_into(&mut t, black_box(r));
                    }
                    let covered = imp.le(&t, black_box(&clv));
                    t[0] += 1;
                    for r in rows.iter_mut() {
                        imp.max_into(r, &t);
                    }
                    black_box(covered)
                })
            });
        }
        rows.clear();
    }
    g.finish();
}

criterion_group!(benches, lv_update);
criterion_main!(benches);
