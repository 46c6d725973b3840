//! docs/design.md "Adding a device", walked through: a toy store over a `Vec` (step 1: a
//! `Store` and its `StreamSource` half), behind the shared DRAM ring (step 2: a
//! `BufferedDevice`), handed to a scheme as its device (step 3), commits acknowledged, and a
//! crash that keeps only what was synced recovered through the scheme, twice (step 4).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::Arc;

use braid_wal::device::{BufferedDevice, Device, DeviceInfo, DramRing, Store};
use braid_wal::scan::StreamSource;
use braid_wal::scheme::{self, SchemeConfig, Storage};
use braid_wal::{Lsn, WalError};
use parking_lot::Mutex;

use crate::integration::redo_state::State;
use crate::integration::scheme_txn::txn;

/// The toy's bytes: what was written, and how much of it a sync made durable.
#[derive(Default)]
struct Bytes {
    written: Vec<u8>,
    durable: usize,
}

/// Step 1: storage over a `Vec`.
#[derive(Default)]
struct VecStore(Mutex<Bytes>);

impl VecStore {
    /// What a crash leaves: the synced bytes.
    fn crash_image(&self) -> Vec<u8> {
        let g = self.0.lock();
        g.written[..g.durable].to_vec()
    }
}

impl Store for VecStore {
    fn info(&self) -> DeviceInfo {
        DeviceInfo {
            kind: "toy",
            location: String::new(),
            emulation: Some("a Vec in memory: nothing survives a crash".to_string()),
        }
    }

    fn end(&self) -> Lsn {
        self.0.lock().written.len() as u64
    }

    fn write_at(&self, ring: &DramRing, from: Lsn, to: Lsn) -> Result<(), WalError> {
        let mut g = self.0.lock();
        g.written.resize(to as usize, 0);
        ring.read(from, &mut g.written[from as usize..]);
        Ok(())
    }

    fn sync(&self) -> Result<(), WalError> {
        let mut g = self.0.lock();
        g.durable = g.written.len();
        Ok(())
    }

    fn truncate(&self, end: Lsn) -> Result<(), WalError> {
        let mut g = self.0.lock();
        g.written.truncate(end as usize);
        g.durable = g.durable.min(end as usize);
        Ok(())
    }

    fn release(&self, _upto: Lsn) -> Result<(), WalError> {
        Ok(())
    }
}

impl StreamSource for VecStore {
    fn start(&self) -> Lsn {
        0
    }

    fn limit(&self) -> Lsn {
        self.0.lock().written.len() as u64
    }

    fn sealed(&self) -> Lsn {
        0
    }

    fn read_at(&self, lsn: Lsn, buf: &mut [u8]) -> Result<usize, WalError> {
        let g = self.0.lock();
        let from = (lsn as usize).min(g.written.len());
        let n = buf.len().min(g.written.len() - from);
        buf[..n].copy_from_slice(&g.written[from..from + n]);
        Ok(n)
    }

    fn salt_for(&self, _lsn: Lsn) -> u32 {
        0x70_79
    }

    fn locate(&self, lsn: Lsn) -> (String, u64) {
        ("toy".to_string(), lsn)
    }
}

/// Steps 2 and 3: the store behind a 4 KiB ring (smaller than the log, so the ring wraps), as
/// the serial scheme's device, recovering what `image` holds into `state`.
fn open(
    image: Vec<u8>,
    state: &State,
) -> (
    Arc<BufferedDevice<VecStore>>,
    Arc<dyn scheme::Scheme>,
    scheme::RecoveryReport,
) {
    let store = VecStore(Mutex::new(Bytes {
        durable: image.len(),
        written: image,
    }));
    let dev = Arc::new(BufferedDevice::new(store, 4 << 10).unwrap());
    let devices = vec![Arc::clone(&dev) as Arc<dyn Device>];
    let spec = "serial".parse().unwrap();
    let (s, report) = scheme::open(
        &spec,
        &SchemeConfig::default(),
        Storage::Devices(devices),
        state,
        &|_| {},
    )
    .unwrap();
    (dev, s, report)
}

/// Commit transactions `ids`, each writing key `id % 50`, and wait for each.
fn commit(s: &dyn scheme::Scheme, ids: std::ops::Range<u64>, want: &mut HashMap<u64, u8>) {
    let mut w = s.worker(0).unwrap();
    for id in ids {
        txn(&mut *w, id, &[], &[id % 50], id as u8).wait().unwrap();
        want.insert(id % 50, id as u8);
    }
}

/// Step 4: commits are acknowledged once synced, and a crash keeps them; recovery appends after
/// the recovered end, and a second crash keeps both runs.
#[test]
fn a_toy_store_commits_and_recovers_through_a_scheme() {
    let mut want = HashMap::new();
    let (dev, s, report) = open(Vec::new(), &State::default());
    assert_eq!(report.txns, 0);
    assert_eq!(dev.info().kind, "toy");
    commit(&*s, 1..201, &mut want);
    let image = dev.store().crash_image();
    assert!(image.len() > 4 << 10, "the log outgrew the ring");
    drop(s);

    let state = State::default();
    let (dev, s, report) = open(image, &state);
    assert_eq!(report.txns, 200);
    assert_eq!(*state.rows.lock(), want);
    commit(&*s, 201..251, &mut want);
    let image = dev.store().crash_image();
    drop(s);

    let state = State::default();
    let (_, s, report) = open(image, &state);
    assert_eq!(report.txns, 250);
    assert_eq!(*state.rows.lock(), want);
    s.close().unwrap();
}
