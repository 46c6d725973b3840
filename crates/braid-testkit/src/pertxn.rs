//! The NV-Logging (`pertxn`) region (Huang et al., VLDB 2014, Section 4.2: superblock, log head
//! and tail, the circular log index entries, the object slots): the check of the fuzz target
//! `pertxn_open` and the valid image it starts from. Recovery never panics and fails only with
//! an error naming the damage; a region that recovers recovers the same transactions a second
//! time (docs/design.md invariants 5 and 6).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use braid_pmem::{CrashMode, CrashSim, PmemConfig, Region};
use braid_wal::WalError;
use braid_wal::fs::FaultFs;
use braid_wal::record::Kind;
use braid_wal::scan::ScanMode;
use braid_wal::scheme::PerTxnConfig;
use braid_wal::scheme::{DurabilityWait, LogKind, Replay, ReplayError, SchemeConfig};
use braid_wal::testing::{PerTxnLog, PerTxnStorage};
use parking_lot::Mutex;

use crate::device::typed;
use crate::{Checked, mode_of};

/// Bytes of the pertxn region images.
pub const PERTXN_BYTES: usize = 16 << 10;

/// Records what recovery replays: transaction id to payload.
#[derive(Default)]
struct Recorder(Mutex<BTreeMap<u64, Vec<u8>>>);

impl Replay for Recorder {
    fn apply(&self, txn: u64, _: LogKind, payload: &[u8]) -> Result<(), ReplayError> {
        self.0.lock().insert(txn, payload.to_vec());
        Ok(())
    }
}

fn open(region: &Region, fs: &FaultFs, mode: ScanMode) -> Result<(PerTxnLog, Recorder), WalError> {
    let cfg = SchemeConfig::default().scan_mode(mode);
    let mut options = PerTxnConfig::default();
    options.slot_size = 128;
    options.backup_segment_size = 4096;
    options.backup_buffer_size = 16 << 10;
    let storage = PerTxnStorage {
        region: region.clone(),
        fs: Arc::new(fs.clone()),
        backup_dir: PathBuf::from("/backup"),
        options,
    };
    let rec = Recorder::default();
    let (log, _) = PerTxnLog::open(&cfg, storage, &rec, &|_| {})?;
    Ok((log, rec))
}

/// A region with 12 committed transactions (some spanning several slots), crashed without
/// closing, so the objects stay in the index for recovery.
pub fn pertxn_image() -> &'static Vec<u8> {
    static IMG: OnceLock<Vec<u8>> = OnceLock::new();
    IMG.get_or_init(|| {
        let r = CrashSim::region(PERTXN_BYTES, PmemConfig::default());
        let (log, _) = open(&r, &FaultFs::new(), ScanMode::Strict).unwrap();
        let mut w = log.writer();
        for t in 1..=12u64 {
            let p = vec![t as u8; (t as usize * 29) % 300];
            let end = w.insert(t, Kind::Redo, &p, true).unwrap();
            log.ticket(end).wait().unwrap();
        }
        drop(w);
        let c = r.crash(CrashMode::DropUnpersisted).unwrap();
        drop(log);
        let mut img = vec![0u8; PERTXN_BYTES];
        c.read(0, &mut img);
        img
    })
}

/// Fuzz target `pertxn_open`: `[opts]` (bit 1 salvage) then the region image (shorter inputs
/// are zero-filled).
pub fn pertxn_open(data: &[u8]) -> Checked {
    let Some((&opts, img)) = data.split_first() else {
        return Ok(());
    };
    let r = CrashSim::region(PERTXN_BYTES, PmemConfig::default());
    r.write(0, &img[..img.len().min(PERTXN_BYTES)]);
    let fs = FaultFs::new();
    let mode = mode_of(opts);
    let first = match open(&r, &fs, mode) {
        Ok((log, rec)) => {
            log.close().map_err(|e| format!("close: {e}"))?;
            rec.0.into_inner()
        }
        Err(e) if typed(&e) => return Ok(()),
        Err(e) => return Err(format!("recovery failed with an untyped error: {e}").into()),
    };
    let (log, rec) = open(&r, &fs, mode).map_err(|e| format!("second recovery: {e}"))?;
    log.close().map_err(|e| format!("close: {e}"))?;
    let second = rec.0.into_inner();
    if second != first {
        return Err(format!(
            "second recovery replayed {:?}, the first {:?}",
            second.keys().collect::<Vec<_>>(),
            first.keys().collect::<Vec<_>>()
        )
        .into());
    }
    Ok(())
}
