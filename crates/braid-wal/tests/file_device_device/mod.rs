//! FileDevice: the Device contract on segment files, on the real file system and on FaultFs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use crate::integration::file_device_common::{
    Env, decode_from, encode_record, encode_record_synced, scan,
};
use braid_wal::device::Device;
use braid_wal::device::file::{FileDevice, FileDeviceConfig, segment_file_name};
use braid_wal::fs::{CrashOpts, SyncFault};
use braid_wal::scan::StreamSource;
use braid_wal::scan::{EndKind, ScanMode};
use braid_wal::{Lsn, WalError};

mod faults;
mod scanner;
mod space;

/// A single-threaded stand-in for a stream: reserve, fill, flush.
pub(crate) struct Writer<'a> {
    dev: &'a dyn Device,
    pub(crate) filled: Lsn,
    pub(crate) flushed: Lsn,
    pub(crate) expect: Vec<(Lsn, u64)>,
}

impl<'a> Writer<'a> {
    pub(crate) fn new(dev: &'a dyn Device, at: Lsn) -> Writer<'a> {
        Writer {
            dev,
            filled: at,
            flushed: at,
            expect: Vec::new(),
        }
    }

    pub(crate) fn append(&mut self, txn: u64, len: usize) -> Result<(), WalError> {
        let rec = encode_record_synced(self.dev, self.filled, self.flushed, txn, len);
        let end = self.filled + rec.len() as u64;
        if end > self.dev.reusable() + self.dev.capacity() {
            self.flush()?;
        }
        assert!(
            end <= self.dev.reusable() + self.dev.capacity(),
            "ring space after a flush"
        );
        self.dev.ensure_space(end)?;
        self.dev.fill(self.filled, &rec);
        self.expect.push((self.filled, txn));
        self.filled = end;
        Ok(())
    }

    pub(crate) fn flush(&mut self) -> Result<(), WalError> {
        self.dev.flush(self.flushed, self.filled)?;
        self.flushed = self.filled;
        Ok(())
    }
}

pub(crate) fn size_of(txn: u64) -> usize {
    (txn as usize * 613) % 2900 + 1
}

fn open(env: &Env, cfg: &FileDeviceConfig) -> FileDevice {
    FileDevice::open(env.fs.clone(), cfg.clone()).unwrap()
}

/// Write `n` records starting at txn `first`, flushing every `every` records and at the end.
fn write_batch(w: &mut Writer<'_>, first: u64, n: u64, every: u64) {
    for txn in first..first + n {
        w.append(txn, size_of(txn)).unwrap();
        if txn % every == 0 {
            w.flush().unwrap();
        }
    }
    w.flush().unwrap();
}

#[test]
fn round_trip_across_small_segments() {
    for env in Env::both() {
        for seg in [4096u64, 16384, 65536] {
            let mut cfg = env.cfg(seg as u32, seg);
            cfg.buffer_size = 12 << 10;
            let expect = {
                let dev = open(&env, &cfg);
                assert_eq!(dev.info().kind, "file");
                assert!(!dev.durable_on_fill());
                assert_eq!(dev.capacity(), 12 << 10);
                let mut w = Writer::new(&dev, 0);
                write_batch(&mut w, 1, 120, 7);
                assert_eq!(dev.reusable(), w.filled);
                assert_eq!(dev.limit(), w.filled);
                w.expect
            };
            let dev = open(&env, &cfg);
            let (got, end) = decode_from(&dev, dev.start());
            assert_eq!(got, expect, "{} seg {seg}", env.name);
            // The scan ends at the zeros of the preallocated (full-size) last segment.
            assert!(end <= dev.limit() && dev.limit() <= end.div_ceil(seg) * seg);
            assert!(dev.segment_log().segments().len() as u64 >= end / seg);
            // Appending after reopening continues the stream.
            dev.reset_tail(end).unwrap();
            let mut w = Writer::new(&dev, end);
            write_batch(&mut w, 1000, 30, 4);
            let mut all = expect.clone();
            all.extend(w.expect);
            drop(dev);
            let dev = open(&env, &cfg);
            assert_eq!(decode_from(&dev, 0).0, all, "{} seg {seg}", env.name);
        }
    }
}

#[test]
fn concurrent_fills_of_disjoint_ranges() {
    let env = Env::fault();
    let mut cfg = env.cfg(0, 8192);
    cfg.buffer_size = 64 << 10;
    let dev = open(&env, &cfg);
    // Reserve ranges up front (what a stream does), fill them from several threads.
    let mut plan = Vec::new();
    let mut lsn = 0;
    for txn in 1..=40u64 {
        let len = encode_record(&dev, lsn, txn, size_of(txn) / 4).len() as u64;
        plan.push((lsn, txn));
        lsn += len;
    }
    assert!(lsn <= dev.capacity());
    dev.ensure_space(lsn).unwrap();
    std::thread::scope(|s| {
        for t in 0..4 {
            let plan = &plan;
            let dev = &dev;
            s.spawn(move || {
                for (i, &(at, txn)) in plan.iter().enumerate() {
                    if i % 4 == t {
                        dev.fill(at, &encode_record(dev, at, txn, size_of(txn) / 4));
                    }
                }
            });
        }
    });
    dev.flush(0, lsn).unwrap();
    drop(dev);
    let dev = open(&env, &cfg);
    assert_eq!(decode_from(&dev, 0).0, plan);
}

#[test]
fn direct_io_round_trip_on_the_root_file_system() {
    let env = Env::real_on_disk();
    let mut cfg = env.cfg(0, 16384);
    cfg.direct = true;
    let dev = match FileDevice::open(env.fs.clone(), cfg.clone()) {
        Ok(d) => d,
        Err(WalError::Unsupported(m @ braid_wal::Unsupported::Direct { .. })) => {
            println!("note: skipping the O_DIRECT test: {m}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    direct_workload(&env, &cfg, dev);
}

#[test]
fn direct_io_round_trip_on_fault_fs() {
    // FaultFs checks the alignment of every O_DIRECT transfer.
    for short in [None, Some(5)] {
        let env = Env::fault();
        env.ffs().set_short_writes(short);
        let mut cfg = env.cfg(0, 8192);
        cfg.direct = true;
        let dev = open(&env, &cfg);
        direct_workload(&env, &cfg, dev);
    }
}

fn direct_workload(env: &Env, cfg: &FileDeviceConfig, dev: FileDevice) {
    let mut w = Writer::new(&dev, 0);
    for txn in 1..=60u64 {
        w.append(txn, size_of(txn)).unwrap();
        if txn % 3 == 0 {
            w.flush().unwrap();
            // The partial last block stays in the ring: it is written again next time.
            assert_eq!(dev.reusable(), w.filled / 4096 * 4096);
        }
    }
    w.flush().unwrap();
    let expect = w.expect.clone();
    let end = w.filled;
    drop(dev);
    // Readable with and without O_DIRECT.
    let mut plain = cfg.clone();
    plain.direct = false;
    for c in [&plain, cfg] {
        let dev = open(env, c);
        let (got, e) = decode_from(&dev, 0);
        assert_eq!(got, expect);
        assert_eq!(e, end);
    }
    // Reopen with O_DIRECT, cut at the recovered end (unaligned), append, reopen.
    let dev = open(env, cfg);
    dev.reset_tail(end).unwrap();
    assert_eq!(dev.reusable(), end / 4096 * 4096);
    let mut w = Writer::new(&dev, end);
    write_batch(&mut w, 500, 25, 2);
    let mut all = expect;
    all.extend(w.expect);
    drop(dev);
    let dev = open(env, cfg);
    assert_eq!(decode_from(&dev, 0).0, all);
}

#[test]
fn direct_io_refused_is_a_config_error() {
    let env = Env::fault();
    env.ffs().set_direct_refused(true);
    let mut cfg = env.cfg(0, 8192);
    cfg.direct = true;
    match FileDevice::open(env.fs.clone(), cfg.clone()) {
        Err(WalError::Unsupported(braid_wal::Unsupported::Direct { dir, source })) => {
            assert_eq!(dir, cfg.dir);
            assert_eq!(source.kind(), std::io::ErrorKind::InvalidInput, "{source}");
        }
        other => panic!("expected a Config error, got {:?}", other.map(|_| ())),
    }
    cfg.direct = false;
    open(&env, &cfg);
}
