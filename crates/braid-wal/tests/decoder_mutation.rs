//! Byte mutation of the log layer's on-media structures other than records (DESIGN.md
//! invariant 6: no panic and no silent skip on bad bytes): the segment files and the stream
//! meta file of the file device, the pmem ring (its header, head and start words, and the
//! ring), and the pertxn region of NV-Logging (superblock, the log index entries, the object
//! slots; Huang et al. 2014, Section 4.2). Valid images are built, mutated by proptest, and
//! opened and recovered:
//!
//! * nothing panics; every error is a `WalError` of a kind that names the damage
//!   (`BadSegment`, `Corrupt`, `Config`), never an I/O or internal one;
//! * a device that opens can be scanned, reset to the end the scan found (the step recovery
//!   takes before appending), and scanned again to the same records ending cleanly there;
//! * a pertxn region that recovers recovers the same transactions a second time.
//!
//! The same checks run in the fuzz targets `segment_open`, `pmem_ring` and `pertxn_open`
//! (see `fuzz/README.md`); with `BRAID_FUZZ_SEEDS=<dir>` set, `write_fuzz_seeds` writes the
//! valid images in those targets' input formats to `<dir>/<target>/`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use braid_pmem::{CrashMode, CrashSim, PmemConfig, Region};
use braid_wal::WalError;
use braid_wal::device::Device;
use braid_wal::device::file::{FileDevice, FileDeviceConfig, meta_file_name, segment_file_name};
use braid_wal::device::pmem::{PmemDevice, PmemDeviceConfig, RING_HEADER};
use braid_wal::fs::{FaultFs, Fs, OpenOpts};
use braid_wal::record::{Kind, RecordSpec, Stamp};
use braid_wal::scan::{EndKind, ScanMode, Scanner};
use braid_wal::scheme::pertxn::{PerTxnLog, PerTxnOptions, PerTxnStorage};
use braid_wal::scheme::{DurabilityWait, LogKind, Replay, ReplayError, SchemeConfig};
use braid_wal::stream::{Stream, StreamConfig};
use parking_lot::Mutex;
use proptest::prelude::*;

const SEG: u64 = 4096;
const DIR: &str = "/log";
const RING_BYTES: usize = RING_HEADER + 8192;
const PERTXN_BYTES: usize = 16 << 10;

fn payload(i: u64) -> Vec<u8> {
    (0..(i * 37 % 300) as usize)
        .map(|j| (i as usize * 13 + j) as u8)
        .collect()
}

fn append_records(dev: Arc<dyn Device>, n: u64) {
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

// ---------------------------------------------------------------------------------------------
// File device: a directory of segment files.

/// Files of a stream directory: `(kind, bytes)`, kind 0 = meta file, `k + 1` = segment `k`.
type Files = Vec<(u8, Vec<u8>)>;

fn file_cfg(preallocate: bool) -> FileDeviceConfig {
    let mut c = FileDeviceConfig::new(DIR, 0);
    c.segment_size = SEG;
    c.buffer_size = 64 << 10;
    c.preallocate = preallocate;
    c
}

/// A stream of three segments' worth of records.
fn file_image() -> &'static Files {
    static IMG: OnceLock<Files> = OnceLock::new();
    IMG.get_or_init(|| {
        let fs = FaultFs::new();
        let dev = Arc::new(FileDevice::open(Arc::new(fs.clone()), file_cfg(false)).unwrap());
        append_records(dev, 60);
        let mut files = vec![(
            0,
            fs.contents(&Path::new(DIR).join(meta_file_name(0)))
                .unwrap(),
        )];
        for k in 0..250u8 {
            match fs.contents(&Path::new(DIR).join(segment_file_name(0, k as u64 * SEG))) {
                Some(b) => files.push((k + 1, b)),
                None => break,
            }
        }
        assert!(files.len() >= 3, "the image spans several segments");
        files
    })
}

/// The fuzz target's input: `[opts]` then `[kind u8][len u16 LE][bytes]` per file.
fn encode_files(opts: u8, files: &Files) -> Vec<u8> {
    let mut out = vec![opts];
    for (kind, b) in files {
        out.push(*kind);
        out.extend_from_slice(&(b.len() as u16).to_le_bytes());
        out.extend_from_slice(b);
    }
    out
}

/// Whether an error from opening or recovering damaged bytes names the damage.
fn typed(e: &WalError) -> bool {
    matches!(
        e,
        WalError::BadSegment { .. } | WalError::Corrupt { .. } | WalError::Config(_)
    )
}

/// Scan a source: records (lsn, txn) and the end; `Err` if the scan failed.
fn scan(
    src: &dyn braid_wal::scan::StreamSource,
    mode: ScanMode,
) -> Result<(Vec<(u64, u64)>, braid_wal::scan::ScanEnd), WalError> {
    let mut s = Scanner::new(src, mode);
    let mut recs = Vec::new();
    while let Some(r) = s.next_record()? {
        recs.push((r.header.lsn, r.header.txn));
    }
    Ok((recs, s.end().cloned().expect("end set")))
}

/// Open, scan, reset the tail to the end found, scan again (the fuzz target's oracle).
fn check_device(dev: &dyn Device, mode: ScanMode) -> Result<(), String> {
    let (recs, end) = match scan(dev, mode) {
        Ok(x) => x,
        Err(e) if typed(&e) => return Ok(()),
        Err(e) => return Err(format!("scan failed with an untyped error: {e}")),
    };
    if end.end < dev.start() || end.end > dev.limit() {
        return Err(format!(
            "end {} outside [{}, {}]",
            end.end,
            dev.start(),
            dev.limit()
        ));
    }
    dev.reset_tail(end.end)
        .map_err(|e| format!("reset_tail({}) after a scan failed: {e}", end.end))?;
    let (again, end2) = scan(dev, mode).map_err(|e| format!("rescan failed: {e}"))?;
    if again != recs || end2.end != end.end || end2.kind != EndKind::Clean {
        return Err(format!(
            "rescan differs: {} records ending at {} ({:?}) after {} records ending at {}",
            again.len(),
            end2.end,
            end2.kind,
            recs.len(),
            end.end
        ));
    }
    Ok(())
}

fn check_files(opts: u8, files: &Files) -> Result<(), String> {
    let fs = FaultFs::new();
    fs.create_dir_all(Path::new(DIR)).unwrap();
    for (kind, b) in files {
        let name = match kind {
            0 => meta_file_name(0),
            k => segment_file_name(0, (*k as u64 - 1) * SEG),
        };
        let f = fs
            .open(&Path::new(DIR).join(name), OpenOpts::create_truncate())
            .unwrap();
        f.write_all_at(0, b).unwrap();
    }
    let dev = match FileDevice::open(Arc::new(fs), file_cfg(opts & 1 != 0)) {
        Ok(d) => d,
        Err(e) if typed(&e) => return Ok(()),
        Err(e) => return Err(format!("open failed with an untyped error: {e}")),
    };
    let mode = if opts & 2 != 0 {
        ScanMode::Salvage
    } else {
        ScanMode::Strict
    };
    check_device(&dev, mode)
}

/// A mutation: overwrite, zero, truncate the file (or region) at a position, or (files)
/// remove a file.
#[derive(Debug, Clone)]
enum Mutation {
    Set(u32, Vec<u8>),
    Zero(u32, u16),
    Truncate(u32),
    Remove(u8),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<u32>(), proptest::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(o, b)| Mutation::Set(o, b)),
        2 => (any::<u32>(), 1u16..600).prop_map(|(o, n)| Mutation::Zero(o, n)),
        1 => any::<u32>().prop_map(Mutation::Truncate),
        1 => any::<u8>().prop_map(Mutation::Remove),
    ]
}

fn mutate_bytes(b: &mut Vec<u8>, m: &Mutation) {
    if b.is_empty() {
        return;
    }
    match m {
        Mutation::Set(o, bytes) => {
            let at = *o as usize % b.len();
            let n = bytes.len().min(b.len() - at);
            b[at..at + n].copy_from_slice(&bytes[..n]);
        }
        Mutation::Zero(o, n) => {
            let at = *o as usize % b.len();
            let n = (*n as usize).min(b.len() - at);
            b[at..at + n].fill(0);
        }
        Mutation::Truncate(o) => {
            let at = *o as usize % b.len();
            b.truncate(at);
        }
        Mutation::Remove(_) => {}
    }
}

fn mutate_files(files: &mut Files, m: &Mutation) {
    if files.is_empty() {
        return;
    }
    match m {
        Mutation::Remove(i) => {
            files.remove(*i as usize % files.len());
        }
        Mutation::Set(o, _) | Mutation::Zero(o, _) | Mutation::Truncate(o) => {
            let i = *o as usize % files.len();
            mutate_bytes(&mut files[i].1, m);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Pmem ring.

fn ring_image() -> &'static Vec<u8> {
    static IMG: OnceLock<Vec<u8>> = OnceLock::new();
    IMG.get_or_init(|| {
        let r = CrashSim::region(RING_BYTES, PmemConfig::default());
        let dev = Arc::new(PmemDevice::open(r.clone(), PmemDeviceConfig::new(0)).unwrap());
        // More than a ring's worth would need de-staging: stay within it.
        append_records(dev, 40);
        let c = r.crash(CrashMode::DropUnpersisted).unwrap();
        let mut img = vec![0u8; RING_BYTES];
        c.read(0, &mut img);
        img
    })
}

fn check_ring(opts: u8, img: &[u8]) -> Result<(), String> {
    let r = CrashSim::region(RING_BYTES, PmemConfig::default());
    r.write(0, &img[..img.len().min(RING_BYTES)]);
    let dev = match PmemDevice::open(r, PmemDeviceConfig::new(0)) {
        Ok(d) => d,
        Err(e) if typed(&e) => return Ok(()),
        Err(e) => return Err(format!("open failed with an untyped error: {e}")),
    };
    let mode = if opts & 2 != 0 {
        ScanMode::Salvage
    } else {
        ScanMode::Strict
    };
    check_device(&dev, mode)
}

// ---------------------------------------------------------------------------------------------
// Pertxn region.

#[derive(Default)]
struct Recorder(Mutex<BTreeMap<u64, Vec<u8>>>);

impl Replay for Recorder {
    fn apply(&self, txn: u64, _: LogKind, payload: &[u8]) -> Result<(), ReplayError> {
        self.0.lock().insert(txn, payload.to_vec());
        Ok(())
    }
}

fn pertxn_options() -> PerTxnOptions {
    PerTxnOptions {
        slot_size: 128,
        backup_segment_size: 4096,
        backup_buffer_size: 16 << 10,
        ..PerTxnOptions::default()
    }
}

fn pertxn_open(
    region: &Region,
    fs: &FaultFs,
    mode: ScanMode,
) -> Result<(PerTxnLog, Recorder), WalError> {
    let cfg = SchemeConfig {
        scan_mode: mode,
        ..SchemeConfig::default()
    };
    let storage = PerTxnStorage {
        region: region.clone(),
        fs: Arc::new(fs.clone()),
        backup_dir: PathBuf::from("/backup"),
        options: pertxn_options(),
    };
    let rec = Recorder::default();
    let (log, _) = PerTxnLog::open(&cfg, storage, &rec, &|_| {})?;
    Ok((log, rec))
}

fn pertxn_image() -> &'static Vec<u8> {
    static IMG: OnceLock<Vec<u8>> = OnceLock::new();
    IMG.get_or_init(|| {
        let r = CrashSim::region(PERTXN_BYTES, PmemConfig::default());
        let (log, _) = pertxn_open(&r, &FaultFs::new(), ScanMode::Strict).unwrap();
        let mut w = log.writer();
        for t in 1..=12u64 {
            // Some transactions take several objects (slots).
            let p = vec![t as u8; (t as usize * 29) % 300];
            let end = w.insert(t, Kind::Redo, &p, true).unwrap();
            log.ticket(end).wait().unwrap();
        }
        drop(w);
        // A crash without closing: the objects stay in the index for recovery.
        let c = r.crash(CrashMode::DropUnpersisted).unwrap();
        drop(log);
        let mut img = vec![0u8; PERTXN_BYTES];
        c.read(0, &mut img);
        img
    })
}

fn check_pertxn(opts: u8, img: &[u8]) -> Result<(), String> {
    let r = CrashSim::region(PERTXN_BYTES, PmemConfig::default());
    r.write(0, &img[..img.len().min(PERTXN_BYTES)]);
    let fs = FaultFs::new();
    let mode = if opts & 2 != 0 {
        ScanMode::Salvage
    } else {
        ScanMode::Strict
    };
    let first = match pertxn_open(&r, &fs, mode) {
        Ok((log, rec)) => {
            log.close().map_err(|e| format!("close: {e}"))?;
            rec.0.into_inner()
        }
        Err(e) if typed(&e) => return Ok(()),
        Err(e) => return Err(format!("recovery failed with an untyped error: {e}")),
    };
    // Recovery is idempotent (invariant 5): the recovered log recovers the same way.
    let (log, rec) = pertxn_open(&r, &fs, mode).map_err(|e| format!("second recovery: {e}"))?;
    log.close().map_err(|e| format!("close: {e}"))?;
    let second = rec.0.into_inner();
    if second != first {
        return Err(format!(
            "second recovery replayed {:?}, the first {:?}",
            second.keys().collect::<Vec<_>>(),
            first.keys().collect::<Vec<_>>()
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------

#[test]
fn valid_images_pass_the_checks() {
    check_files(0, file_image()).unwrap();
    check_files(1, file_image()).unwrap();
    check_ring(0, ring_image()).unwrap();
    check_pertxn(0, pertxn_image()).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn segment_files_never_panic(
        opts in 0u8..4,
        ms in proptest::collection::vec(mutation(), 1..6),
    ) {
        let mut files = file_image().clone();
        for m in &ms {
            mutate_files(&mut files, m);
        }
        prop_assert!(check_files(opts, &files).is_ok(), "{:?}", check_files(opts, &files));
    }

    #[test]
    fn pmem_ring_never_panics(
        opts in 0u8..4,
        ms in proptest::collection::vec(mutation(), 1..6),
    ) {
        let mut img = ring_image().clone();
        for m in &ms {
            mutate_bytes(&mut img, m);
        }
        prop_assert!(check_ring(opts, &img).is_ok(), "{:?}", check_ring(opts, &img));
    }

    #[test]
    fn pertxn_index_and_slots_never_panic(
        opts in 0u8..4,
        ms in proptest::collection::vec(mutation(), 1..6),
    ) {
        let mut img = pertxn_image().clone();
        for m in &ms {
            mutate_bytes(&mut img, m);
        }
        prop_assert!(check_pertxn(opts, &img).is_ok(), "{:?}", check_pertxn(opts, &img));
    }
}

/// With `BRAID_FUZZ_SEEDS=<dir>`: write the valid images as seed inputs of the fuzz targets.
#[test]
fn write_fuzz_seeds() {
    let Some(dir) = std::env::var_os("BRAID_FUZZ_SEEDS") else {
        return;
    };
    let dir = PathBuf::from(dir);
    let put = |target: &str, name: &str, bytes: &[u8]| {
        let d = dir.join(target);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(name), bytes).unwrap();
    };
    let files = file_image();
    put("segment_open", "three_segments", &encode_files(0, files));
    put(
        "segment_open",
        "three_segments_salvage",
        &encode_files(2, files),
    );
    let mut torn = files.clone();
    let last = torn.len() - 1;
    let n = torn[last].1.len();
    torn[last].1.truncate(n - 5);
    put("segment_open", "torn_last_segment", &encode_files(0, &torn));
    put(
        "segment_open",
        "meta_only",
        &encode_files(0, &files[..1].to_vec()),
    );
    let mut ring = vec![0u8];
    ring.extend_from_slice(ring_image());
    put("pmem_ring", "ring_with_records", &ring);
    put("pmem_ring", "blank", &[0u8; 64]);
    let mut pt = vec![0u8];
    pt.extend_from_slice(pertxn_image());
    put("pertxn_open", "region_with_objects", &pt);
    pt[0] = 2;
    put("pertxn_open", "region_with_objects_salvage", &pt);
}
