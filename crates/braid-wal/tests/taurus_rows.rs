//! Taurus keeps row LVs only for recently touched rows (Section 4.1, delta eviction): after a
//! long run over many rows the row table holds a small fraction of them, and the metadata per
//! row stays far below the inline `2 x 8n` bytes. Prints the figures (`--nocapture`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use braid_pmem::{CrashSim, Domain, PmemConfig};
use braid_wal::device::Device;
use braid_wal::device::pmem::{PmemDevice, PmemDeviceConfig};
use braid_wal::scheme::taurus::{TaurusConfig, open_taurus};
use braid_wal::scheme::{
    CommitRequest, LogKind, NoRows, Replay, ReplayError, RowRef, Scheme, SchemeConfig,
};

struct Nothing;
impl Replay for Nothing {
    fn apply(&self, _: u64, _: LogKind, _: &[u8]) -> Result<(), ReplayError> {
        Ok(())
    }
}

#[test]
fn the_row_table_holds_only_recent_rows() {
    const ROWS: u64 = 100_000;
    const TXNS: u64 = 60_000;
    for (n, logging) in [
        (1usize, LogKind::Command),
        (2usize, LogKind::Data),
        (4, LogKind::Command),
        (16, LogKind::Command),
    ] {
        let devs: Vec<Arc<dyn Device>> = (0..n)
            .map(|i| {
                let r = CrashSim::region(
                    16 << 20,
                    PmemConfig {
                        domain: Domain::Adr,
                        flush: None,
                        write_delay_ns: 0,
                        ..PmemConfig::default()
                    },
                );
                Arc::new(PmemDevice::open(r, PmemDeviceConfig::new(i as u32)).unwrap())
                    as Arc<dyn Device>
            })
            .collect();
        let cfg = (
            SchemeConfig {
                logging,
                max_workers: n,
                ..SchemeConfig::default()
            },
            TaurusConfig {
                delta: 16 << 10,
                ..TaurusConfig::default()
            },
        );
        let (t, _) = open_taurus(&cfg.0, &cfg.1, devs, &Nothing, &|_| {}).unwrap();
        let mut workers: Vec<_> = (0..n).map(|w| t.worker(w).unwrap()).collect();
        let mut x = 12345u64;
        let payload = [7u8; 120];
        let mut touched = std::collections::HashSet::new();
        for i in 0..TXNS {
            let w = &mut workers[(i % n as u64) as usize];
            for _ in 0..2 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let key = (x >> 33) % ROWS;
                touched.insert(key);
                if x & 1 == 0 {
                    w.on_read(RowRef::new(0, key));
                } else {
                    w.on_write(RowRef::new(0, key));
                }
            }
            let req = CommitRequest {
                txn: i + 1,
                kind: logging,
                payload: &payload,
                read_only: false,
                epoch: 0,
                writes: &[],
                rows: &NoRows,
                updates: 0,
            };
            w.commit(&req).unwrap().wait().unwrap();
        }
        let (entries, bytes) = t.row_entries();
        let per_row = t.metadata_bytes() as f64 / ROWS as f64;
        println!(
            "{n} streams, {logging} logging: {entries} row-LV entries of {bytes} B for {} rows touched of {ROWS} \
             ({per_row:.2} B/row; inline LVs would take {} B/row)",
            touched.len(),
            8 * n * if logging == LogKind::Command { 2 } else { 1 }
        );
        assert!(
            entries < touched.len() / 2,
            "eviction keeps few entries: {entries} of {}",
            touched.len()
        );
        drop(workers);
        t.close().unwrap();
    }
}
