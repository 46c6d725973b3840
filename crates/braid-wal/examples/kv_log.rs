//! An engine builder's own key-value map, made durable with braid's log alone (no
//! braid-engine): any registered scheme, chosen by name, through [`Wal`].
//!
//! The map is the builder's: keys striped over locks, values in a `BTreeMap`. A transaction's
//! `append` names the rows it wrote (while their locks are held, so the scheme can order
//! conflicting transactions: a GSN for gsn, an LSN vector for taurus) and carries its redo
//! payload, and returns a `Ticket`; the transaction is acknowledged once the ticket resolves. On reopen the scheme scans its log and hands every
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

use braid_wal::payload::{RedoBuf, RedoOp, decode_redo};
use braid_wal::{LogKind, Replay, ReplayError, Wal, WalError, WalWriter};
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

/// Open (recovering) the map and its log.
fn open(scheme: &str, dir: &Path) -> Result<(Arc<Map>, Wal), WalError> {
    let map = Arc::new(Map::new());
    let wal = Wal::builder(dir)
        .scheme(scheme)?
        .streams(2)
        .writers(4)
        .open(&*map)?;
    println!(
        "opened {}: {} transactions recovered",
        wal.scheme(),
        wal.recovered().txns
    );
    Ok((map, wal))
}

/// One transaction: set `keys` to `value`, atomically and durably.
fn put(map: &Map, w: &mut WalWriter, keys: &[u64], value: &[u8]) -> Result<(), WalError> {
    // Lock the rows (in stripe order, so two transactions never wait for each other in a
    // cycle); the log is told about the writes while their locks are held.
    let mut stripes: Vec<usize> = keys.iter().map(|k| (*k % 64) as usize).collect();
    stripes.sort_unstable();
    stripes.dedup();
    let guards: Vec<_> = stripes.iter().map(|&s| map.locks[s].lock()).collect();
    let mut redo = RedoBuf::default();
    let mut rows = Vec::new();
    for &key in keys {
        rows.push((0, key));
        redo.push(&RedoOp::Insert {
            table: 0,
            key,
            data: value,
        });
    }
    let ticket = w.append(&rows, &redo.bytes)?;
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
    let scheme = std::env::args().nth(1).unwrap_or_else(|| "taurus".into());
    let dir: PathBuf = std::env::temp_dir().join(format!("braid-kv-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;

    // Two threads, each with its own writer, write 1,000 two-key transactions each.
    let (map, wal) = open(&scheme, &dir)?;
    std::thread::scope(|s| -> Result<(), WalError> {
        let handles: Vec<_> = (0..2u64)
            .map(|t| {
                let (map, wal) = (Arc::clone(&map), &wal);
                s.spawn(move || -> Result<(), WalError> {
                    let mut w = wal.writer()?;
                    for i in 0..1_000u64 {
                        let keys = [i % 100, 100 + (i * 7 + t) % 100];
                        put(&map, &mut w, &keys, &(t * 1_000 + i).to_le_bytes())?;
                    }
                    Ok(())
                })
            })
            .collect();
        for h in handles {
            h.join()
                .map_err(|_| WalError::ThreadPanicked { thread: "a writer" })??;
        }
        Ok(())
    })?;
    let before = map.values.lock().clone();
    let logged = wal.scheme() != "none";
    wal.close()?;
    drop(map);

    // Reopen: the scheme replays its log into a fresh map, which must equal the old one.
    let (map, wal) = open(&scheme, &dir)?;
    let after = map.values.lock().clone();
    wal.close()?;
    std::fs::remove_dir_all(&dir)?;
    if logged {
        assert_eq!(after, before, "the recovered map differs");
        println!("ok: {} keys recovered as they were", after.len());
    }
    Ok(())
}
