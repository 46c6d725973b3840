//! Fuzz recovery of the NV-Logging (`pertxn`) region (`braid_wal::scheme::pertxn`: superblock,
//! log head and tail, the circular log index entries, the object slots): input = `[opts]`
//! then the 16 KiB region image (shorter inputs are zero-filled); opts bit 1 = salvage mode.
//! Recovery never panics and fails only with an error naming the damage; a region that
//! recovers recovers the same transactions a second time (idempotence). Same check as
//! `crates/braid-wal/tests/decoder_mutation.rs` (DESIGN.md invariants 5 and 6).
#![no_main]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use braid_pmem::{CrashSim, PmemConfig, Region};
use braid_wal::WalError;
use braid_wal::fs::FaultFs;
use braid_wal::scan::ScanMode;
use braid_wal::scheme::pertxn::{PerTxnLog, PerTxnOptions, PerTxnStorage};
use braid_wal::scheme::{LogKind, Replay, ReplayError, SchemeConfig};
use libfuzzer_sys::fuzz_target;

const BYTES: usize = 16 << 10;

#[derive(Default)]
struct Recorder(Mutex<BTreeMap<u64, Vec<u8>>>);

impl Replay for Recorder {
    fn apply(&self, txn: u64, _: LogKind, payload: &[u8]) -> Result<(), ReplayError> {
        self.0.lock().unwrap().insert(txn, payload.to_vec());
        Ok(())
    }
}

fn open(r: &Region, fs: &FaultFs, mode: ScanMode) -> Result<BTreeMap<u64, Vec<u8>>, WalError> {
    let cfg = SchemeConfig {
        scan_mode: mode,
        ..SchemeConfig::default()
    };
    let storage = PerTxnStorage {
        region: r.clone(),
        fs: Arc::new(fs.clone()),
        backup_dir: PathBuf::from("/backup"),
        options: PerTxnOptions {
            slot_size: 128,
            backup_segment_size: 4096,
            backup_buffer_size: 16 << 10,
            ..PerTxnOptions::default()
        },
    };
    let rec = Recorder::default();
    let (log, _) = PerTxnLog::open(&cfg, storage, &rec, &|_| {})?;
    log.close()?;
    Ok(rec.0.into_inner().unwrap())
}

fuzz_target!(|data: &[u8]| {
    let Some((&opts, img)) = data.split_first() else {
        return;
    };
    let r = CrashSim::region(BYTES, PmemConfig::default());
    r.write(0, &img[..img.len().min(BYTES)]);
    let fs = FaultFs::new();
    let mode = if opts & 2 != 0 {
        ScanMode::Salvage
    } else {
        ScanMode::Strict
    };
    let first = match open(&r, &fs, mode) {
        Ok(m) => m,
        Err(e) => {
            assert!(
                matches!(
                    e,
                    WalError::BadSegment { .. } | WalError::Corrupt { .. } | WalError::Config(_)
                ),
                "recovery failed with an untyped error: {e}"
            );
            return;
        }
    };
    let second = open(&r, &fs, mode).expect("a recovered region recovers again");
    assert_eq!(
        second, first,
        "the second recovery replayed other transactions"
    );
});
