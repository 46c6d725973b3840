//! An engine builder's own key-value map, made durable with braid's log alone (no
//! braid-engine): any registered scheme, chosen by name, through the scheme seam.
//!
//! The map is the builder's: keys striped over locks, values in a `BTreeMap`. braid is told
//! about every row a transaction writes (`on_write`, while the row's lock is held, so the
//! scheme can order conflicting transactions: a GSN for gsn, an LSN vector for taurus), gets
//! the transaction's redo payload at commit and returns a `Ticket`; the transaction is
//! acknowledged once the ticket resolves. On reopen the scheme scans its log and hands every
//! committed transaction back, in an order that respects their dependencies, to the map's
//! `Replay`.
//!
//! ```sh
//! cargo run --release -p braid-wal --example kv_log                 # taurus, 2 streams
//! cargo run --release -p braid-wal --example kv_log -- gsn          # or any scheme by name
//! cargo run --release -p braid-wal --example kv_log -- "gsn:partition=page"
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use braid_pmem::{PmemConfig, Region};
use braid_wal::WalError;
use braid_wal::device::Device;
use braid_wal::device::PmemWrite;
use braid_wal::device::{FileDevice, FileDeviceConfig};
use braid_wal::fs::RealFs;
use braid_wal::payload::{RedoBuf, RedoOp, decode_redo};
use braid_wal::scheme::{
    self, CommitRequest, LogKind, LogPlace, NoRows, RegionStorage, Replay, ReplayError, RowRef,
    Scheme, SchemeConfig, SchemeSpec, Storage,
};
use parking_lot::Mutex;

/// The builder's map: values by key, and striped row locks held across a transaction.
struct Map {
    values: Mutex<BTreeMap<u64, Vec<u8>>>,
    locks: Vec<Mutex<()>>,
}

impl Map {
    fn new() -> Map {
        Map {
            values: Mutex::new(BTreeMap::new()),
            locks: (0..64).map(|_| Mutex::new(())).collect(),
        }
    }
}

/// Recovery hands every committed transaction's payload back here.
impl Replay for Map {
    fn apply(&self, _txn: u64, _kind: LogKind, payload: &[u8]) -> Result<(), ReplayError> {
        let mut values = self.values.lock();
        for op in decode_redo(payload) {
            match op? {
                RedoOp::Insert { key, data, .. } | RedoOp::Update { key, data, .. } => {
                    values.insert(key, data.to_vec());
                }
                RedoOp::Delete { key, .. } => {
                    values.remove(&key);
                }
            }
        }
        Ok(())
    }
}

/// Where the chosen scheme keeps its log, under `dir`.
fn storage(spec: &SchemeSpec, dir: &Path, streams: usize) -> Result<Storage, WalError> {
    Ok(match spec.log_place() {
        LogPlace::Nowhere => Storage::Nothing,
        LogPlace::Devices | LogPlace::NvramFiles => {
            let mut devices: Vec<Arc<dyn Device>> = Vec::new();
            for i in 0..spec.streams_for(streams) {
                let cfg = FileDeviceConfig::new(dir.join("log"), i as u32);
                devices.push(Arc::new(FileDevice::open(Arc::new(RealFs), cfg)?));
            }
            Storage::Devices(devices)
        }
        LogPlace::Region => {
            let path = dir.join("log.region");
            // Media::Auto (the default): MAP_SYNC on DAX persistent memory, else every flush
            // is written back with msync, so the region is durable on any file system.
            let cfg = PmemConfig::default();
            let region = match Region::open(&path, Some(16 << 20), cfg) {
                Ok(r) => r,
                Err(_) if !path.exists() => Region::create(&path, 16 << 20, cfg)?,
                Err(e) => return Err(e.into()),
            };
            Storage::Region(RegionStorage {
                region,
                fs: Arc::new(RealFs),
                backup_dir: dir.join("backup"),
                write: PmemWrite::NonTemporal,
            })
        }
    })
}

/// Open (recovering) the map and its log.
fn open(spec: &SchemeSpec, dir: &Path) -> Result<(Arc<Map>, Arc<dyn Scheme>), WalError> {
    let map = Arc::new(Map::new());
    let cfg = SchemeConfig {
        max_workers: 4,
        ..SchemeConfig::default()
    };
    let (log, report) = scheme::open(spec, &cfg, storage(spec, dir, 2)?, &*map, &|_| {})?;
    println!(
        "opened {} ({} streams): {} transactions recovered",
        spec.name(),
        log.streams().len(),
        report.txns
    );
    Ok((map, log))
}

/// One transaction: set `keys` to `value`, atomically and durably.
fn put(
    map: &Map,
    w: &mut dyn braid_wal::scheme::SchemeWorker,
    txn: u64,
    keys: &[u64],
    value: &[u8],
) -> Result<(), WalError> {
    // Lock the rows (in stripe order, so two transactions never wait for each other in a
    // cycle), telling the scheme about each write while its lock is held.
    let mut stripes: Vec<usize> = keys.iter().map(|k| (*k % 64) as usize).collect();
    stripes.sort_unstable();
    stripes.dedup();
    let guards: Vec<_> = stripes.iter().map(|&s| map.locks[s].lock()).collect();
    let mut redo = RedoBuf::default();
    for &key in keys {
        w.on_write(RowRef::new(0, key));
        redo.push(&RedoOp::Insert {
            table: 0,
            key,
            data: value,
        });
    }
    let ticket = w.commit(&CommitRequest {
        txn,
        kind: LogKind::Data,
        payload: &redo.bytes,
        read_only: false,
        epoch: 0,
        writes: &[],
        rows: &NoRows,
        updates: 0,
    })?;
    // The record is in the log: install the writes and release the locks (early lock release),
    // then acknowledge once durable.
    {
        let mut values = map.values.lock();
        for &key in keys {
            values.insert(key, value.to_vec());
        }
    }
    drop(guards);
    ticket.wait()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let spec: SchemeSpec = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "taurus".into())
        .parse()?;
    let dir: PathBuf = std::env::temp_dir().join(format!("braid-kv-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;

    // Two threads, each its own scheme worker, write 1,000 two-key transactions each.
    let (map, log) = open(&spec, &dir)?;
    std::thread::scope(|s| -> Result<(), WalError> {
        let handles: Vec<_> = (0..2u64)
            .map(|t| {
                let (map, log) = (Arc::clone(&map), Arc::clone(&log));
                s.spawn(move || -> Result<(), WalError> {
                    let mut w = log.worker(t as usize)?;
                    for i in 0..1_000u64 {
                        let txn = 1 + t * 1_000 + i;
                        let keys = [i % 100, 100 + (i * 7 + t) % 100];
                        put(&map, &mut *w, txn, &keys, &txn.to_le_bytes())?;
                    }
                    Ok(())
                })
            })
            .collect();
        for h in handles {
            h.join().map_err(|_| WalError::Thread {
                detail: "a writer panicked".into(),
            })??;
        }
        Ok(())
    })?;
    let before = map.values.lock().clone();
    log.close()?;
    drop((map, log));

    // Reopen: the scheme replays its log into a fresh map, which must equal the old one.
    let (map, log) = open(&spec, &dir)?;
    let after = map.values.lock().clone();
    log.close()?;
    std::fs::remove_dir_all(&dir)?;
    if spec.log_place() != LogPlace::Nowhere {
        assert_eq!(after, before, "the recovered map differs");
        println!("ok: {} keys recovered as they were", after.len());
    }
    Ok(())
}
