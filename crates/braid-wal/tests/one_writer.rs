//! One writer per log stream, below the engine: a file device's stream, a striped stream's
//! members and a persistent-memory ring each refuse a second opener with `WalError::InUse` /
//! `PmemError::InUse` while the first is open, on the real file system and on the
//! fault-injecting one (whose locks vanish with a crash, as a process's do with a power cut).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use braid_pmem::{PmemConfig, PmemError, Region};
use braid_wal::WalError;
use braid_wal::device::file::{FileDevice, FileDeviceConfig};
use braid_wal::fs::{CrashOpts, FaultFs, Fs, RealFs};

fn cfg(dir: &std::path::Path, stream: u32) -> FileDeviceConfig {
    let mut c = FileDeviceConfig::new(dir.to_path_buf(), stream);
    c.segment_size = 64 << 10;
    c.buffer_size = 64 << 10;
    c
}

fn refuses_a_second_opener(fs: Arc<dyn Fs>, dir: &std::path::Path) {
    let first = FileDevice::open(fs.clone(), cfg(dir, 0)).unwrap();
    match FileDevice::open(fs.clone(), cfg(dir, 0)) {
        Err(WalError::InUse { path, holder }) => {
            assert_eq!(path.file_name().unwrap(), "s000.lock");
            assert_eq!(holder, Some(std::process::id()));
        }
        other => panic!("a second opener of stream 0 was not refused: {other:?}"),
    }
    // Another stream of the same directory has a writer of its own.
    let other = FileDevice::open(fs.clone(), cfg(dir, 1)).unwrap();
    drop(first);
    FileDevice::open(fs.clone(), cfg(dir, 0)).unwrap();
    drop(other);
}

#[test]
fn a_file_stream_has_one_writer() {
    let tmp = tempfile::tempdir().unwrap();
    refuses_a_second_opener(Arc::new(RealFs), &tmp.path().join("log"));
    let fault = FaultFs::new();
    refuses_a_second_opener(Arc::new(fault.clone()), std::path::Path::new("/log"));
    // A crash takes every lock with it.
    let held = FileDevice::open(
        Arc::new(fault.clone()),
        cfg(std::path::Path::new("/log"), 0),
    )
    .unwrap();
    let after = fault.crash(CrashOpts::default());
    FileDevice::open(Arc::new(after), cfg(std::path::Path::new("/log"), 0)).unwrap();
    drop(held);
}

#[test]
fn a_region_has_one_user() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("r.region");
    let r = Region::create(&p, 1 << 16, PmemConfig::default()).unwrap();
    r.write(0, b"kept");
    for again in [
        Region::open(&p, None, PmemConfig::default()),
        Region::create(&p, 1 << 16, PmemConfig::default()),
    ] {
        match again {
            Err(PmemError::InUse { path, holder }) => {
                assert_eq!(path, p);
                assert_eq!(holder, Some(std::process::id()));
            }
            other => panic!("a second user of the region was not refused: {other:?}"),
        }
    }
    // The refused create truncated nothing; a copy reads it without a lock.
    let copy = Region::snapshot(&p, Some(1 << 16)).unwrap();
    let mut b = [0u8; 4];
    copy.read(0, &mut b);
    assert_eq!(&b, b"kept");
    drop(r);
    let r = Region::open(&p, Some(1 << 16), PmemConfig::default()).unwrap();
    r.read(0, &mut b);
    assert_eq!(&b, b"kept");
}
