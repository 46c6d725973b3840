//! The pacing layer ([`braid_wal::device::pace`]): a paced device waits at least as long as a
//! device of its speed would, changes no byte, says what it emulates, and passes a crash and
//! fault through unchanged (what the wrapped device made durable is what a scan finds).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use braid_wal::device::Device;
use braid_wal::device::file::{FileDevice, FileDeviceConfig};
use braid_wal::device::pace::{Pace, PacedDevice};
use braid_wal::scan::StreamSource;

use crate::integration::file_device_common::Env;

fn paced(env: &Env, pace: Pace) -> PacedDevice {
    let dev = FileDevice::open(env.fs.clone(), FileDeviceConfig::new(&env.dir, 0)).unwrap();
    PacedDevice::new(Arc::new(dev), pace)
}

#[test]
fn a_flush_waits_for_its_transfer_and_sync() {
    let env = Env::real();
    // 100 KB at 10 MB/s is 10 ms, plus 2 ms of sync.
    let dev = paced(&env, Pace::default().mbps(10.0).sync_us(2_000));
    let bytes: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    dev.ensure_space(bytes.len() as u64).unwrap();
    dev.fill(0, &bytes);
    let t = Instant::now();
    dev.flush(0, bytes.len() as u64).unwrap();
    assert!(
        t.elapsed() >= Duration::from_millis(12),
        "{:?}",
        t.elapsed()
    );
    // The bytes are the wrapped device's, unchanged; reading them back takes the bandwidth
    // too (100 KB at 10 MB/s: 10 ms, no sync), as a recovery's scan of a paced device does.
    let mut back = vec![0u8; bytes.len()];
    let t = Instant::now();
    assert_eq!(dev.read_at(0, &mut back).unwrap(), bytes.len());
    assert!(
        t.elapsed() >= Duration::from_millis(10),
        "a paced read took {:?}",
        t.elapsed()
    );
    assert_eq!(back, bytes);
}

#[test]
fn its_emulation_is_named() {
    let env = Env::real();
    let dev = paced(&env, Pace::default().mbps(160.0).sync_us(50));
    let note = dev
        .info()
        .emulation
        .expect("a paced device is an emulation");
    assert!(
        note.contains("160 MB/s") && note.contains("50 us"),
        "{note}"
    );
    assert_eq!(dev.info().kind, "file");
}
