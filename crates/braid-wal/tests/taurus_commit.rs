//! When Taurus acknowledges a commit, on log devices whose flushes the test holds back.
//!
//! The scenario of `scheme/taurus/commit.rs`: stream 2 cannot flush; `a` (stream 2) writes x;
//! `b` (stream 1) reads x; `c` (stream 1, after `b`) writes z; `d` (stream 0) reads z. Streams 0
//! and 1 are durable, so `PLV >= d.LV` and every earlier record of stream 0 is committed, yet
//! `d` must not be acknowledged: a crash loses `a`, recovery cuts stream 1 at `b` (it depends on
//! `a`), which takes `c` and then `d` with it. The test checks exactly that, then that `d` is
//! acknowledged once stream 2 flushes, and that every acknowledged transaction survives.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::ops::Bound;
use std::sync::Arc;

use braid_wal::device::{Device, DeviceInfo};
use braid_wal::scan::StreamSource;
use braid_wal::scheme::taurus::{TaurusConfig, open_taurus};
use braid_wal::scheme::{
    CommitRequest, LogKind, NoRows, Replay, ReplayError, RowRef, Scheme, SchemeConfig, Ticket,
};
use braid_wal::{Lsn, WalError};
use parking_lot::{Condvar, Mutex};

/// An in-memory device whose flushes wait while its gate is closed.
struct GatedDev {
    live: Mutex<Vec<u8>>,
    durable: Mutex<Vec<u8>>,
    open: Mutex<bool>,
    cv: Condvar,
}

impl GatedDev {
    fn new(image: Vec<u8>) -> Arc<GatedDev> {
        Arc::new(GatedDev {
            live: Mutex::new(image.clone()),
            durable: Mutex::new(image),
            open: Mutex::new(true),
            cv: Condvar::new(),
        })
    }
    fn gate(&self, open: bool) {
        *self.open.lock() = open;
        self.cv.notify_all();
    }
    /// What a power failure leaves.
    fn crash_image(&self) -> Vec<u8> {
        self.durable.lock().clone()
    }
}

impl StreamSource for GatedDev {
    fn start(&self) -> Lsn {
        0
    }
    fn limit(&self) -> Lsn {
        self.live.lock().len() as u64
    }
    fn sealed(&self) -> Lsn {
        0
    }
    fn read_at(&self, lsn: Lsn, buf: &mut [u8]) -> Result<usize, WalError> {
        let l = self.live.lock();
        let at = (lsn as usize).min(l.len());
        let n = buf.len().min(l.len() - at);
        buf[..n].copy_from_slice(&l[at..at + n]);
        Ok(n)
    }
    fn salt_for(&self, _lsn: Lsn) -> u32 {
        7
    }
    fn locate(&self, lsn: Lsn) -> (String, u64) {
        ("gated".into(), lsn)
    }
}

impl Device for GatedDev {
    fn info(&self) -> DeviceInfo {
        DeviceInfo {
            kind: "file",
            location: "gated".into(),
            emulation: None,
        }
    }
    fn capacity(&self) -> u64 {
        1 << 30
    }
    fn reusable(&self) -> Lsn {
        0
    }
    fn fill(&self, lsn: Lsn, bytes: &[u8]) {
        let mut l = self.live.lock();
        let end = lsn as usize + bytes.len();
        if l.len() < end {
            l.resize(end, 0);
        }
        l[lsn as usize..end].copy_from_slice(bytes);
    }
    fn durable_on_fill(&self) -> bool {
        false
    }
    fn flush(&self, from: Lsn, to: Lsn) -> Result<(), WalError> {
        let mut g = self.open.lock();
        while !*g {
            self.cv.wait(&mut g);
        }
        drop(g);
        let l = self.live.lock();
        let mut d = self.durable.lock();
        if d.len() < to as usize {
            d.resize(to as usize, 0);
        }
        d[from as usize..to as usize].copy_from_slice(&l[from as usize..to as usize]);
        Ok(())
    }
    fn ensure_space(&self, _upto: Lsn) -> Result<(), WalError> {
        Ok(())
    }
    fn reset_tail(&self, end: Lsn) -> Result<(), WalError> {
        self.live.lock().truncate(end as usize);
        self.durable.lock().truncate(end as usize);
        Ok(())
    }
    fn release(&self, _upto: Lsn) -> Result<(), WalError> {
        Ok(())
    }
}

#[derive(Default)]
struct Applied(Mutex<HashMap<u64, Vec<u8>>>);

impl Replay for Applied {
    fn apply(&self, txn: u64, _kind: LogKind, payload: &[u8]) -> Result<(), ReplayError> {
        self.0.lock().insert(txn, payload.to_vec());
        Ok(())
    }
}

fn cfg(compress: bool) -> (SchemeConfig, TaurusConfig) {
    (
        SchemeConfig {
            logging: LogKind::Data,
            max_workers: 4,
            ..SchemeConfig::default()
        },
        TaurusConfig {
            compress: compress.into(),
            anchor_every: 64,
            ..TaurusConfig::default()
        },
    )
}

fn as_devices(d: &[Arc<GatedDev>]) -> Vec<Arc<dyn Device>> {
    d.iter().map(|x| Arc::clone(x) as Arc<dyn Device>).collect()
}

#[test]
fn acknowledgement_waits_for_the_closure_not_just_plv() {
    for compress in [false, true] {
        let devs: Vec<Arc<GatedDev>> = (0..3).map(|_| GatedDev::new(Vec::new())).collect();
        let (scheme, _) = open_taurus(
            &cfg(compress).0,
            &cfg(compress).1,
            as_devices(&devs),
            &Applied::default(),
            &|_| {},
        )
        .unwrap();
        let mut w: Vec<_> = (0..3).map(|i| scheme.worker(i).unwrap()).collect();
        let (x, y, z) = (0u64, 1u64, 2u64);
        let row = |k: u64| RowRef::new(0, k);
        let commit = |w: &mut Box<dyn braid_wal::scheme::SchemeWorker>, txn: u64| -> Ticket {
            let req = CommitRequest {
                txn,
                kind: LogKind::Data,
                payload: &[1, 2, 3],
                read_only: false,
                epoch: 0,
                writes: &[],
                rows: &NoRows,
                updates: 0,
            };
            w.commit(&req).unwrap()
        };
        // Warm up: something durable on every stream.
        for (i, wk) in w.iter_mut().enumerate() {
            wk.on_write(row(10 + i as u64));
            commit(wk, 100 + i as u64).wait().unwrap();
        }
        devs[2].gate(false);
        w[2].on_write(row(x));
        let ta = commit(&mut w[2], 1);
        w[1].on_read(row(x));
        w[1].on_write(row(y));
        let tb = commit(&mut w[1], 2);
        w[1].on_write(row(z));
        let tc = commit(&mut w[1], 3);
        w[0].on_read(row(z));
        w[0].on_write(row(10));
        let td = commit(&mut w[0], 4);
        // Streams 0 and 1 are durable past everything: PLV >= d.LV.
        for s in &scheme.streams()[..2] {
            s.wait_durable(s.tail()).unwrap();
        }
        let mut early = Vec::new();
        for _ in 0..20 {
            for (name, t) in [("d", &td), ("c", &tc), ("b", &tb), ("a", &ta)] {
                if t.is_durable().unwrap() {
                    early.push(name);
                }
            }
            std::thread::yield_now();
        }
        // Power fails now.
        let images: Vec<Vec<u8>> = devs.iter().map(|d| d.crash_image()).collect();
        // Open the gate before any assertion, so a failure cannot hang in the stream's close.
        devs[2].gate(true);
        assert!(
            early.is_empty(),
            "acknowledged although b depends on a lost record: {early:?}"
        );
        td.wait().unwrap();
        drop(w);
        scheme.close().unwrap();
        // Recovery from the crash image: b, c, d are cut with a; the warm-up survives.
        let devs2: Vec<Arc<GatedDev>> = images.into_iter().map(GatedDev::new).collect();
        let applied = Applied::default();
        let (s2, rep) = open_taurus(
            &cfg(compress).0,
            &cfg(compress).1,
            as_devices(&devs2),
            &applied,
            &|_| {},
        )
        .unwrap();
        let got: Vec<u64> = {
            let mut v: Vec<u64> = applied.0.lock().keys().copied().collect();
            v.sort();
            v
        };
        assert_eq!(got, vec![100, 101, 102], "report {rep:?}");
        assert_eq!(rep.skipped, 3, "b, c and d are found but cut");
        s2.close().unwrap();
        // Recovery after a clean close: everything.
        let devs3: Vec<Arc<GatedDev>> = devs
            .iter()
            .map(|d| GatedDev::new(d.crash_image()))
            .collect();
        let applied = Applied::default();
        let (s3, _) = open_taurus(
            &cfg(compress).0,
            &cfg(compress).1,
            as_devices(&devs3),
            &applied,
            &|_| {},
        )
        .unwrap();
        assert_eq!(applied.0.lock().len(), 7);
        s3.close().unwrap();
    }
}

/// A point read that finds no row: the row's delete (stream 1, whose flushes are held back)
/// raised the writeLV of the key's bucket at its commit, before the key left the index, so a
/// read-only transaction of stream 0 that missed the key is not acknowledged until the delete
/// is durable; a miss of a key in a bucket nobody wrote waits for nothing.
#[test]
fn a_read_only_transaction_after_a_miss_waits_for_the_delete() {
    for compress in [false, true] {
        let devs: Vec<Arc<GatedDev>> = (0..2).map(|_| GatedDev::new(Vec::new())).collect();
        let c = cfg(compress);
        let (scheme, _) =
            open_taurus(&c.0, &c.1, as_devices(&devs), &Applied::default(), &|_| {}).unwrap();
        let mut w: Vec<_> = (0..2).map(|i| scheme.worker(i).unwrap()).collect();
        let key = 5u64;
        let far = 1u64 << 40; // another bucket
        let req = |txn: u64, read_only: bool| CommitRequest {
            txn,
            kind: LogKind::Data,
            payload: if read_only { &[] } else { &[1, 2, 3] },
            read_only,
            epoch: 0,
            writes: &[],
            rows: &NoRows,
            updates: 0,
        };
        devs[1].gate(false);
        w[1].on_write(RowRef::new(0, key));
        w[1].on_delete(0, key);
        let delete = w[1].commit(&req(1, false)).unwrap();
        w[0].on_absent(0, Bound::Included(far), Bound::Included(far));
        let elsewhere = w[0].commit(&req(2, true)).unwrap();
        w[0].on_absent(0, Bound::Included(key), Bound::Included(key));
        let miss = w[0].commit(&req(3, true)).unwrap();
        let s0 = &scheme.streams()[0];
        s0.wait_durable(s0.tail()).unwrap();
        let mut early = false;
        for _ in 0..20 {
            early |= miss.is_durable().unwrap();
            std::thread::yield_now();
        }
        let elsewhere_durable = elsewhere.is_durable().unwrap();
        // Open the gate before any assertion, so a failure cannot hang in the stream's close.
        devs[1].gate(true);
        assert!(
            !early,
            "compress {compress}: a read-only transaction after a miss was acknowledged before \
             the delete it missed"
        );
        assert!(
            elsewhere_durable,
            "compress {compress}: a miss in a bucket nobody wrote waited"
        );
        delete.wait().unwrap();
        miss.wait().unwrap();
        drop(w);
        scheme.close().unwrap();
    }
}
