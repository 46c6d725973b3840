//! The log devices' on-media structures: the file device's segment files and stream meta file
//! (`braid_wal::device::file`) and the pmem ring (`braid_wal::device::pmem`). Checks for the
//! fuzz targets `segment_open` and `pmem_ring`, and the valid images they start from.
//!
//! The oracle (docs/design.md invariant 6): opening never panics and fails only with an error that
//! names the damage (`BadSegment`, `Corrupt`, `Config`); a device that opens scans to an end
//! inside its extent, resets its tail there (the step recovery takes before appending), and
//! scans again to the same records, ending cleanly.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use braid_pmem::{CrashMode, CrashSim, PmemConfig};
use braid_wal::WalError;
use braid_wal::device::Device;
use braid_wal::device::{FileDevice, FileDeviceConfig};
use braid_wal::device::{PmemDevice, PmemDeviceConfig};
use braid_wal::fs::{FaultFs, Fs, OpenOpts};
use braid_wal::record::{Kind, RecordSpec, Stamp};
use braid_wal::scan::{EndKind, ScanEnd, ScanMode, Scanner, StreamSource};
use braid_wal::testing::{RING_HEADER, meta_file_name, segment_file_name};
use braid_wal::testing::{Stream, StreamConfig};

use crate::{Checked, mode_of};

/// Segment size of the file-device images (small, so a few records span several segments).
pub const SEG: u64 = 4096;
/// The stream directory on the in-memory file system.
pub const DIR: &str = "/log";
/// Bytes of the pmem ring images: the ring header and an 8 KiB ring.
pub const RING_BYTES: usize = RING_HEADER + 8192;

/// Files of a stream directory: `(kind, bytes)`, kind 0 = meta file, `k + 1` = segment `k`.
pub type Files = Vec<(u8, Vec<u8>)>;

/// The payload of the `i`th record of the images: 0-299 bytes, a pattern of `i`.
pub fn payload(i: u64) -> Vec<u8> {
    (0..(i * 37 % 300) as usize)
        .map(|j| (i as usize * 13 + j) as u8)
        .collect()
}

/// Append `n` redo records (txn `i + 1`, GSN stamps) to `dev` through a stream, each durable.
pub fn append_records(dev: Arc<dyn Device>, n: u64) {
    let stream = Stream::start(dev, 0, StreamConfig::default()).unwrap();
    let mut w = stream.writer().unwrap();
    for i in 0..n {
        let p = payload(i);
        let stamp = Stamp::Gsn(i + 1);
        let spec = RecordSpec {
            kind: Kind::Redo,
            flags: 1,
            txn: i + 1,
            stamp: &stamp,
            payload: &[&p],
        };
        let (_, end) = w.append(&spec).unwrap();
        stream.wait_durable(end).unwrap();
    }
    drop(w);
    stream.close().unwrap();
}

/// The file device configuration of the images (`SEG`-byte segments under `DIR`).
pub fn file_cfg(preallocate: bool) -> FileDeviceConfig {
    let mut c = FileDeviceConfig::new(DIR, 0);
    c.segment_size = SEG;
    c.buffer_size = 64 << 10;
    c.preallocate = preallocate;
    c
}

/// A stream of three segments' worth of records, as files.
pub fn file_image() -> &'static Files {
    static IMG: OnceLock<Files> = OnceLock::new();
    IMG.get_or_init(|| {
        let fs = FaultFs::new();
        let dev = Arc::new(FileDevice::open(Arc::new(fs.clone()), file_cfg(false)).unwrap());
        append_records(dev, 60);
        let dir = Path::new(DIR);
        let mut files = vec![(0, fs.contents(&dir.join(meta_file_name(0))).unwrap())];
        for k in 0..250u8 {
            match fs.contents(&dir.join(segment_file_name(0, k as u64 * SEG))) {
                Some(b) => files.push((k + 1, b)),
                None => break,
            }
        }
        assert!(files.len() >= 3, "the image spans several segments");
        files
    })
}

/// The `segment_open` input: `[opts]` then `[kind u8][len u16 LE][bytes]` per file.
pub fn encode_files(opts: u8, files: &[(u8, Vec<u8>)]) -> Vec<u8> {
    let mut out = vec![opts];
    for (kind, b) in files {
        out.push(*kind);
        out.extend_from_slice(&(b.len() as u16).to_le_bytes());
        out.extend_from_slice(b);
    }
    out
}

/// Split a `segment_open` input into its options and files (the inverse of `encode_files`,
/// lengths clipped to what is there).
pub fn decode_files(data: &[u8]) -> Option<(u8, Files)> {
    let (&opts, mut rest) = data.split_first()?;
    let mut files = Vec::new();
    while rest.len() >= 3 {
        let n = (u16::from_le_bytes([rest[1], rest[2]]) as usize).min(rest.len() - 3);
        files.push((rest[0], rest[3..3 + n].to_vec()));
        rest = &rest[3 + n..];
    }
    Some((opts, files))
}

/// A pmem ring with 40 records (within one ring, so nothing is de-staged), crashed.
pub fn ring_image() -> &'static Vec<u8> {
    static IMG: OnceLock<Vec<u8>> = OnceLock::new();
    IMG.get_or_init(|| {
        let r = CrashSim::region(RING_BYTES, PmemConfig::default());
        let dev = Arc::new(PmemDevice::open(r.clone(), PmemDeviceConfig::new(0)).unwrap());
        append_records(dev, 40);
        let c = r.crash(CrashMode::DropUnpersisted).unwrap();
        let mut img = vec![0u8; RING_BYTES];
        c.read(0, &mut img);
        img
    })
}

/// Whether an error from opening or recovering damaged bytes names the damage.
pub fn typed(e: &WalError) -> bool {
    matches!(
        e,
        WalError::BadSegment { .. }
            | WalError::Corrupt { .. }
            | WalError::WrongLog { .. }
            | WalError::BadSize { .. }
            | WalError::Misuse { .. }
    )
}

/// Scan a source: records `(lsn, txn)` and the end.
pub fn scan_all(
    src: &dyn StreamSource,
    mode: ScanMode,
) -> Result<(Vec<(u64, u64)>, ScanEnd), WalError> {
    let mut s = Scanner::new(src, mode);
    let mut recs = Vec::new();
    while let Some(r) = s.next_record()? {
        recs.push((r.header.lsn, r.header.txn));
    }
    // Invariant: the scanner sets its end before it returns `None`.
    let end = s.end().cloned().expect("end set after the last record");
    Ok((recs, end))
}

/// Scan an opened device, reset its tail to the end found, and scan again.
pub fn check_device(dev: &dyn Device, mode: ScanMode) -> Checked {
    let (recs, end) = match scan_all(dev, mode) {
        Ok(x) => x,
        Err(e) if typed(&e) => return Ok(()),
        Err(e) => return Err(format!("scan failed with an untyped error: {e}").into()),
    };
    if end.end < dev.start() || end.end > dev.limit() {
        return Err(format!("end {} outside [{}, {}]", end.end, dev.start(), dev.limit()).into());
    }
    dev.reset_tail(end.end)
        .map_err(|e| format!("reset_tail({}) after a scan failed: {e}", end.end))?;
    let (again, end2) = scan_all(dev, mode).map_err(|e| format!("rescan failed: {e}"))?;
    if again != recs || end2.end != end.end || end2.kind != EndKind::Clean {
        return Err(format!(
            "rescan differs: {} records ending at {} ({:?}) after {} records ending at {}",
            again.len(),
            end2.end,
            end2.kind,
            recs.len(),
            end.end
        )
        .into());
    }
    Ok(())
}

/// Fuzz target `segment_open`: `[opts]` (bit 0 preallocate, bit 1 salvage) then files
/// `[kind u8][len u16 LE][bytes]`, kind 0 = the stream meta file, `k + 1` = segment `k`.
pub fn segment_open(data: &[u8]) -> Checked {
    let Some((opts, files)) = decode_files(data) else {
        return Ok(());
    };
    let fs = FaultFs::new();
    let dir = Path::new(DIR);
    fs.create_dir_all(dir).unwrap();
    for (kind, b) in &files {
        let name = match kind {
            0 => meta_file_name(0),
            k => segment_file_name(0, (*k as u64 - 1) * SEG),
        };
        let f = fs
            .open(&dir.join(name), OpenOpts::create_truncate())
            .unwrap();
        f.write_all_at(0, b).unwrap();
    }
    let dev = match FileDevice::open(Arc::new(fs), file_cfg(opts & 1 != 0)) {
        Ok(d) => d,
        Err(e) if typed(&e) => return Ok(()),
        Err(e) => return Err(format!("open failed with an untyped error: {e}").into()),
    };
    check_device(&dev, mode_of(opts))
}

/// Fuzz target `pmem_ring`: `[opts]` (bit 1 salvage) then the region image (ring header and
/// ring; shorter inputs are zero-filled).
pub fn pmem_ring(data: &[u8]) -> Checked {
    let Some((&opts, img)) = data.split_first() else {
        return Ok(());
    };
    let r = CrashSim::region(RING_BYTES, PmemConfig::default());
    r.write(0, &img[..img.len().min(RING_BYTES)]);
    let dev = match PmemDevice::open(r, PmemDeviceConfig::new(0)) {
        Ok(d) => d,
        Err(e) if typed(&e) => return Ok(()),
        Err(e) => return Err(format!("open failed with an untyped error: {e}").into()),
    };
    check_device(&dev, mode_of(opts))
}
