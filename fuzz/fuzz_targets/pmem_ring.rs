//! Fuzz the pmem log ring (`braid_wal::device::pmem`: ring header, head and start words,
//! ring bytes): input = `[opts]` then the region image (4 KiB ring header + 8 KiB ring; shorter
//! inputs are zero-filled); opts bit 1 = salvage mode. Opening never panics and fails only
//! with an error naming the damage; a ring that opens scans to an end inside its window,
//! resets its tail there, and scans again to the same records with a clean end. Same check as
//! `crates/braid-wal/tests/decoder_mutation.rs` (DESIGN.md invariant 6).
#![no_main]

use braid_pmem::{CrashSim, PmemConfig};
use braid_wal::WalError;
use braid_wal::device::Device;
use braid_wal::device::pmem::{PmemDevice, PmemDeviceConfig, RING_HEADER};
use braid_wal::scan::{EndKind, ScanMode, Scanner, StreamSource};
use libfuzzer_sys::fuzz_target;

const BYTES: usize = RING_HEADER + 8192;

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
    let Some((&opts, img)) = data.split_first() else {
        return;
    };
    let r = CrashSim::region(BYTES, PmemConfig::default());
    r.write(0, &img[..img.len().min(BYTES)]);
    let dev = match PmemDevice::open(r, PmemDeviceConfig::new(0)) {
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
        "end {end} outside the window"
    );
    dev.reset_tail(end).expect("reset_tail to the scanned end");
    let (again, end2, kind2) = scan(&dev, mode).expect("rescan");
    assert_eq!(again, recs);
    assert_eq!((end2, kind2), (end, EndKind::Clean));
});
