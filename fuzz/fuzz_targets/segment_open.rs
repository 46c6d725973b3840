//! Fuzz the file device's segment files (stream meta file and segment headers, see
//! `braid_wal::device::file`): input = `[opts]` then files `[kind u8][len u16 LE][bytes]`, kind
//! 0 = the stream meta file, `k + 1` = segment `k` (4 KiB segments); opts bit 0 = preallocate,
//! bit 1 = salvage mode. Opening never panics and fails only with an error naming the damage;
//! a device that opens scans to an end inside its extent, resets its tail there, and scans
//! again to the same records with a clean end. Same check as
//! `crates/braid-wal/tests/decoder_mutation.rs` (DESIGN.md invariant 6).
#![no_main]

use std::path::Path;
use std::sync::Arc;

use braid_wal::WalError;
use braid_wal::device::Device;
use braid_wal::device::file::{FileDevice, FileDeviceConfig, meta_file_name, segment_file_name};
use braid_wal::fs::{FaultFs, Fs, OpenOpts};
use braid_wal::scan::{EndKind, ScanMode, Scanner, StreamSource};
use libfuzzer_sys::fuzz_target;

const SEG: u64 = 4096;

fn typed(e: &WalError) -> bool {
    matches!(
        e,
        WalError::BadSegment { .. } | WalError::Corrupt { .. } | WalError::Config(_)
    )
}

/// Records (lsn, txn), end and end kind of a scan.
type Scanned = (Vec<(u64, u64)>, u64, EndKind);

fn scan(src: &dyn StreamSource, mode: ScanMode) -> Result<Scanned, WalError> {
    let mut s = Scanner::new(src, mode);
    let mut recs = Vec::new();
    while let Some(r) = s.next_record()? {
        recs.push((r.header.lsn, r.header.txn));
    }
    let end = s.end().cloned().expect("end set after None");
    Ok((recs, end.end, end.kind))
}

fuzz_target!(|data: &[u8]| {
    let Some((&opts, mut rest)) = data.split_first() else {
        return;
    };
    let fs = FaultFs::new();
    let dir = Path::new("/log");
    fs.create_dir_all(dir).unwrap();
    while rest.len() >= 3 {
        let kind = rest[0];
        let n = (u16::from_le_bytes([rest[1], rest[2]]) as usize).min(rest.len() - 3);
        let bytes = &rest[3..3 + n];
        rest = &rest[3 + n..];
        let name = match kind {
            0 => meta_file_name(0),
            k => segment_file_name(0, (k as u64 - 1) * SEG),
        };
        let f = fs
            .open(&dir.join(name), OpenOpts::create_truncate())
            .unwrap();
        f.write_all_at(0, bytes).unwrap();
    }
    let mut cfg = FileDeviceConfig::new(dir, 0);
    cfg.segment_size = SEG;
    cfg.buffer_size = 64 << 10;
    cfg.preallocate = opts & 1 != 0;
    let dev = match FileDevice::open(Arc::new(fs), cfg) {
        Ok(d) => d,
        Err(e) => {
            assert!(typed(&e), "open failed with an untyped error: {e}");
            return;
        }
    };
    let mode = if opts & 2 != 0 {
        ScanMode::Salvage
    } else {
        ScanMode::Strict
    };
    let (recs, end, _) = match scan(&dev, mode) {
        Ok(x) => x,
        Err(e) => {
            assert!(typed(&e), "scan failed with an untyped error: {e}");
            return;
        }
    };
    assert!(
        end >= dev.start() && end <= dev.limit(),
        "end {end} outside the extent"
    );
    dev.reset_tail(end).expect("reset_tail to the scanned end");
    let (again, end2, kind2) = scan(&dev, mode).expect("rescan");
    assert_eq!(again, recs);
    assert_eq!((end2, kind2), (end, EndKind::Clean));
});
