//! The gsn recovery pipeline (Wang & Johnson 2014, Section 3.2: N scanners partition the redo
//! records by page into M buckets, M appliers sort each bucket by GSN and apply it), timed over
//! a synthetic multi-stream log for N, M in {1, 2, 4}.
//!
//! The log is written once by the gsn scheme itself: 4 logs on persistent memory (anonymous
//! regions), 4 workers taking turns, 40,000 transactions of 4 row writes (64-byte images) over
//! 100,000 keys, so pages are shared across logs and the GSNs of the logs interleave. Both
//! partitionings are measured: transaction-level (one record per transaction) and page-level
//! (one part per log touched plus a commit record). Each iteration recovers the whole log with
//! [`gsn::recover_only`](braid_wal::testing::recover_only) into an array of row words (the replay decodes every operation and
//! stores a word of its image), so the figure is records recovered per second by the pipeline
//! alone; nothing is written. `cargo bench -p braid-wal --bench gsn_recovery`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use braid_pmem::Region;
use braid_wal::device::Device;
use braid_wal::device::{PmemDevice, PmemDeviceConfig};
use braid_wal::payload::{RedoBuf, RedoOp, decode_redo};
use braid_wal::scheme::{CommitProtocol, GsnConfig, Partition};
use braid_wal::scheme::{
    CommitRequest, LogKind, NoRows, Replay, ReplayError, RowRef, Scheme, SchemeConfig,
};
use braid_wal::testing as gsn;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

const LOGS: usize = 4;
const TXNS: u64 = 40_000;
const WRITES: u64 = 4;
const KEYS: u64 = 100_000;
const RING: usize = 32 << 20;

/// Replay into one word per row: decode every operation, keep a word of its image.
struct Rows {
    words: Vec<AtomicU64>,
}

impl Replay for Rows {
    fn apply(&self, _txn: u64, _kind: LogKind, payload: &[u8]) -> Result<(), ReplayError> {
        for op in decode_redo(payload) {
            if let RedoOp::Insert { key, data, .. } = op? {
                let w = u64::from_le_bytes(data[..8].try_into()?);
                self.words[(key % KEYS) as usize].store(w, Ordering::Relaxed);
            }
        }
        Ok(())
    }
}

fn cfg(partition: Partition, scan: usize, apply: usize) -> (SchemeConfig, GsnConfig) {
    let mut gsn = GsnConfig::default();
    gsn.partition = partition;
    gsn.commit = CommitProtocol::DurableCache;
    gsn.rows_per_page = 16;
    gsn.scan_threads = scan;
    gsn.apply_threads = apply;
    (
        SchemeConfig::default()
            .max_workers(LOGS)
            .recovery_threads(1),
        gsn,
    )
}

fn devices(regions: &[Region]) -> Vec<Arc<dyn Device>> {
    regions
        .iter()
        .enumerate()
        .map(|(i, r)| {
            Arc::new(PmemDevice::open(r.clone(), PmemDeviceConfig::new(i as u32)).unwrap())
                as Arc<dyn Device>
        })
        .collect()
}

/// Write the synthetic log with the gsn scheme; returns its regions and its record count.
fn write_log(partition: Partition) -> (Vec<Region>, u64) {
    let regions: Vec<Region> = (0..LOGS)
        .map(|_| Region::anonymous(RING + braid_pmem::HEADER_SIZE))
        .collect();
    let rows = Rows {
        words: (0..KEYS).map(|_| AtomicU64::new(0)).collect(),
    };
    let c = cfg(partition, 1, 1);
    let (s, _) = gsn::open_gsn(&c.0, &c.1, devices(&regions), &rows, &|_| {}).unwrap();
    let mut workers: Vec<_> = (0..LOGS).map(|w| s.worker(w).unwrap()).collect();
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut buf = RedoBuf::default();
    let mut image = [0u8; 64];
    for i in 0..TXNS {
        let w = &mut workers[(i % LOGS as u64) as usize];
        buf.clear();
        for _ in 0..WRITES {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let key = x % KEYS;
            w.on_write(RowRef::new(0, key));
            image[..8].copy_from_slice(&i.to_le_bytes());
            buf.push(&RedoOp::Insert {
                table: 0,
                key,
                data: &image,
            });
        }
        let req = CommitRequest {
            txn: i + 1,
            kind: LogKind::Data,
            payload: &buf.bytes,
            read_only: false,
            epoch: 0,
            writes: &[],
            rows: &NoRows,
            updates: 0,
        };
        w.commit(&req).unwrap().wait().unwrap();
    }
    drop(workers);
    s.close().unwrap();
    drop(s);
    let report = gsn::recover_only(&c.0, &c.1, &devices(&regions), &rows, &|_| {}).unwrap();
    assert_eq!(report.txns, TXNS, "the synthetic log recovers completely");
    (regions, report.records)
}

fn pipeline(c: &mut Criterion) {
    for partition in [Partition::Transaction, Partition::Page] {
        let (regions, records) = write_log(partition);
        let rows = Rows {
            words: (0..KEYS).map(|_| AtomicU64::new(0)).collect(),
        };
        let mut g = c.benchmark_group(format!("gsn_recovery_{}", partition.name()));
        g.sample_size(10)
            .measurement_time(Duration::from_secs(4))
            .warm_up_time(Duration::from_secs(1))
            .throughput(Throughput::Elements(records));
        for n in [1usize, 2, 4] {
            for m in [1usize, 2, 4] {
                let conf = cfg(partition, n, m);
                g.bench_function(BenchmarkId::new("records", format!("N{n}_M{m}")), |b| {
                    b.iter(|| {
                        let devs = devices(&regions);
                        let r = gsn::recover_only(&conf.0, &conf.1, &devs, &rows, &|_| {}).unwrap();
                        black_box(r.txns)
                    })
                });
            }
        }
        g.finish();
    }
}

criterion_group!(benches, pipeline);
criterion_main!(benches);
