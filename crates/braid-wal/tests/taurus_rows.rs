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
                    PmemConfig::default()
                        .domain(Domain::Adr)
                        .flush(None)
                        .write_delay_ns(0),
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

/// A row's in-row LV words are zero until written, and zero reads as the log end recovery
/// stopped at (`base`): after a reopen, a transaction that writes only a row nobody has
/// touched since still logs an LV at least `base` on every stream, so it follows every
/// recovered transaction, as when the words were created at `base`.
#[test]
fn a_row_first_touched_after_reopen_follows_the_recovered_log() {
    use braid_wal::scan::{ScanMode, Scanner};
    use braid_wal::scheme::{Access, RowMeta};
    for logging in [LogKind::Data, LogKind::Command] {
        let n = 2usize;
        let regions: Vec<_> = (0..n)
            .map(|_| {
                CrashSim::region(
                    4 << 20,
                    PmemConfig::default()
                        .domain(Domain::Adr)
                        .flush(None)
                        .write_delay_ns(0),
                )
            })
            .collect();
        let open = || -> Vec<Arc<PmemDevice>> {
            regions
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    Arc::new(PmemDevice::open(r.clone(), PmemDeviceConfig::new(i as u32)).unwrap())
                })
                .collect()
        };
        let cfg = SchemeConfig {
            logging,
            max_workers: n,
            ..SchemeConfig::default()
        };
        let tcfg = TaurusConfig::default();
        let payload = [7u8; 40];
        let commit = |w: &mut dyn braid_wal::scheme::SchemeWorker, txn: u64, rows: Vec<Access>| {
            for a in &rows {
                w.on_write(a.row);
            }
            let req = CommitRequest {
                txn,
                kind: logging,
                payload: &payload,
                read_only: false,
                epoch: 0,
                writes: &[],
                rows: &rows,
                updates: 0,
            };
            w.commit(&req).unwrap().wait().unwrap();
        };
        // First life: both streams get records (rows named by identity).
        let devs = open();
        let dyn_devs: Vec<Arc<dyn Device>> = devs.iter().map(|d| d.clone() as _).collect();
        let (t, _) = open_taurus(&cfg, &tcfg, dyn_devs, &Nothing, &|_| {}).unwrap();
        for w in 0..n {
            let mut wk = t.worker(w).unwrap();
            for i in 0..20u64 {
                commit(&mut *wk, 1 + w as u64 * 100 + i, Vec::new());
            }
        }
        t.close().unwrap();
        drop(t);
        // Second life: one transaction on worker 0 writes one fresh row with a slot.
        let devs = open();
        let dyn_devs: Vec<Arc<dyn Device>> = devs.iter().map(|d| d.clone() as _).collect();
        let (t, _) = open_taurus(&cfg, &tcfg, dyn_devs, &Nothing, &|_| {}).unwrap();
        let base: Vec<u64> = t.streams().iter().map(|s| s.durable()).collect();
        assert!(
            base.iter().all(|&b| b > 0),
            "both streams hold records: {base:?}"
        );
        let meta = RowMeta::default();
        let row = RowRef {
            table: 0,
            key: 5,
            meta: Some(&meta),
        };
        let mut wk = t.worker(0).unwrap();
        commit(
            &mut *wk,
            1000,
            vec![Access {
                row,
                read: false,
                write: true,
            }],
        );
        drop(wk);
        t.close().unwrap();
        // The record after stream 0's base carries an LV >= base on both streams.
        let mut s = Scanner::new(&*devs[0], ScanMode::Strict);
        let mut found = false;
        while let Some(r) = s.next_record().unwrap() {
            if r.header.txn != 1000 {
                continue;
            }
            let mut lv = vec![0u64; n];
            r.stamp.lv_into(&mut lv);
            for j in 0..n {
                assert!(
                    lv[j] >= base[j],
                    "{logging:?}: LV {lv:?} below the recovered end {base:?}"
                );
            }
            found = true;
        }
        assert!(found, "{logging:?}: the new transaction's record");
    }
}
