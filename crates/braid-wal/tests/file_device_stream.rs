//! The file device under a real Stream: concurrent writers, group commit, power failures at
//! arbitrary moments, fsync failures and a full disk.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::integration::file_device_common::{Env, payload, scan};
use braid_wal::device::Device;
use braid_wal::device::file::{FileDevice, FileDeviceConfig};
use braid_wal::fs::{CrashOpts, SyncFault};
use braid_wal::record::{FLAG_COMMIT, Kind, RecordSpec, Stamp};
use braid_wal::scan::ScanMode;
use braid_wal::stream::{Stream, StreamConfig};
use braid_wal::{Lsn, WalError};

fn start(env: &Env, cfg: &FileDeviceConfig) -> (Arc<FileDevice>, Stream, Lsn) {
    let dev = Arc::new(FileDevice::open(env.fs.clone(), cfg.clone()).unwrap());
    let (_, end) = scan(dev.as_ref(), ScanMode::Strict).unwrap();
    let scfg = StreamConfig {
        id: cfg.stream,
        max_writers: 8,
        group_delay: Duration::ZERO,
        group_bytes: 1 << 20,
        flusher_only: false,
    };
    let stream = Stream::start(dev.clone() as Arc<dyn Device>, end.end, scfg).unwrap();
    (dev, stream, end.end)
}

/// Call `f` with the record of txn `txn` (its payload's length depends on `txn`).
fn with_spec<R>(txn: u64, f: impl FnOnce(&RecordSpec<'_>) -> R) -> R {
    let p = payload(txn, (txn as usize * 37) % 700 + 1);
    let parts: [&[u8]; 1] = [&p];
    f(&RecordSpec {
        kind: Kind::Redo,
        flags: FLAG_COMMIT,
        txn,
        stamp: &Stamp::None,
        payload: &parts,
    })
}

fn append(w: &mut braid_wal::stream::StreamWriter, txn: u64) -> Result<(Lsn, Lsn), WalError> {
    with_spec(txn, |spec| w.append(spec))
}

/// `threads` writers append `per` records each, waiting for every commit; returns the txns.
fn run_writers(stream: &Stream, threads: u64, per: u64, base: u64) -> Vec<u64> {
    let mut all = Vec::new();
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let stream = stream.clone();
                s.spawn(move || {
                    let mut w = stream.writer().unwrap();
                    let mut mine = Vec::new();
                    for i in 0..per {
                        let txn = base + t * 100_000 + i;
                        let (_, end) = append(&mut w, txn).unwrap();
                        stream.wait_durable(end).unwrap();
                        mine.push(txn);
                    }
                    mine
                })
            })
            .collect();
        for h in hs {
            all.extend(h.join().unwrap());
        }
    });
    all
}

#[test]
fn concurrent_writers_round_trip() {
    for env in Env::both() {
        let mut cfg = env.cfg(0, 16384);
        cfg.buffer_size = 32 << 10;
        let (_, stream, _) = start(&env, &cfg);
        let acked = run_writers(&stream, 4, 60, 1);
        stream.close().unwrap();
        drop(stream);
        let (dev, stream, end) = start(&env, &cfg);
        let acked2 = run_writers(&stream, 2, 30, 10_000_000);
        stream.close().unwrap();
        drop(stream);
        let (got, e) = scan(dev.as_ref(), ScanMode::Strict).unwrap();
        assert!(e.end > end);
        let got: BTreeSet<u64> = got.into_iter().map(|(_, t)| t).collect();
        let want: BTreeSet<u64> = acked.into_iter().chain(acked2).collect();
        assert_eq!(got, want, "{}", env.name);
    }
}

/// Power fails at an arbitrary moment while writers run: every acknowledged commit is in the
/// recovered log, the scan never reports corruption, and the log can be appended to again.
#[test]
fn power_failure_while_writers_run() {
    for (round, opts) in [
        CrashOpts::drop_unsynced(),
        CrashOpts::tear_last(3),
        CrashOpts::keep_subset(4),
    ]
    .into_iter()
    .enumerate()
    {
        let env = Env::fault();
        env.ffs().set_record_ops(false);
        let mut cfg = env.cfg(0, 4096);
        cfg.buffer_size = 16 << 10;
        cfg.direct = round == 1;
        let (_, stream, _) = start(&env, &cfg);
        let acked = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let stop = AtomicBool::new(false);
        let crashed = std::thread::scope(|s| {
            for t in 0..3u64 {
                let stream = stream.clone();
                let acked = acked.clone();
                let stop = &stop;
                s.spawn(move || {
                    let mut w = stream.writer().unwrap();
                    let mut i = 0;
                    while !stop.load(Ordering::Relaxed) && i < 5000 {
                        let txn = t * 100_000 + i;
                        let (_, end) = append(&mut w, txn).unwrap();
                        stream.wait_durable(end).unwrap();
                        acked.lock().push(txn);
                        i += 1;
                    }
                });
            }
            // Crash once some commits were acknowledged (no timing: count them).
            while acked.lock().len() < 150 {
                std::thread::yield_now();
            }
            let before: Vec<u64> = acked.lock().clone();
            let crashed = env.crashed(opts);
            stop.store(true, Ordering::Relaxed);
            (crashed, before)
        });
        stream.close().unwrap();
        let (crashed_env, acked_before) = crashed;
        let (dev, stream, _) = start(&crashed_env, &cfg);
        let (got, _) = scan(dev.as_ref(), ScanMode::Strict).unwrap();
        let got: BTreeSet<u64> = got.into_iter().map(|(_, t)| t).collect();
        for t in &acked_before {
            assert!(got.contains(t), "{opts:?}: acknowledged txn {t} lost");
        }
        let more = run_writers(&stream, 1, 10, 50_000_000);
        stream.close().unwrap();
        drop(stream);
        let (got, _) = scan(dev.as_ref(), ScanMode::Strict).unwrap();
        let got: BTreeSet<u64> = got.into_iter().map(|(_, t)| t).collect();
        assert!(more.iter().all(|t| got.contains(t)));
    }
}

#[test]
fn fsync_failure_poisons_the_stream_and_nothing_later_is_acknowledged() {
    let env = Env::fault();
    let cfg = env.cfg(0, 8192);
    let (_, stream, _) = start(&env, &cfg);
    let acked = run_writers(&stream, 2, 20, 1);
    env.ffs()
        .inject_sync_fault(SyncFault::next().on_paths(".log"));
    let mut w = stream.writer().unwrap();
    let (_, end) = append(&mut w, 999_999).unwrap();
    let e = stream.wait_durable(end).unwrap_err();
    assert!(matches!(e, WalError::Poisoned { .. }), "{e}");
    assert!(append(&mut w, 1_000_000).is_err());
    drop(w);
    let _ = stream.close();
    drop(stream);
    let crashed = env.crashed(CrashOpts::tear_last(9));
    let (dev, stream, _) = start(&crashed, &cfg);
    let (got, _) = scan(dev.as_ref(), ScanMode::Strict).unwrap();
    let got: BTreeSet<u64> = got.into_iter().map(|(_, t)| t).collect();
    assert!(acked.iter().all(|t| got.contains(t)));
    assert!(
        !got.contains(&999_999),
        "the record of the failed fsync never became durable"
    );
    stream.close().unwrap();
}

#[test]
fn full_disk_stalls_and_recovers() {
    let env = Env::fault();
    let cfg = env.cfg(0, 4096);
    let (_, stream, _) = start(&env, &cfg);
    let acked = run_writers(&stream, 1, 5, 1);
    // No room for more segments.
    env.ffs().set_space_limit(Some(env.ffs().used_space()));
    let mut w = stream.writer().unwrap();
    let mut txn = 100;
    let err = loop {
        match append(&mut w, txn).and_then(|(_, end)| stream.wait_durable(end)) {
            Ok(()) => txn += 1,
            Err(e) => break e,
        }
        assert!(txn < 1000, "the disk should fill up");
    };
    assert!(matches!(err, WalError::NoSpace { .. }), "{err}");
    env.ffs().set_space_limit(None);
    // Appends work again (possibly after the flusher's retry, whose backoff reaches 100 ms).
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut t = 2000;
    let last = loop {
        match append(&mut w, t) {
            Ok((_, end)) => {
                stream.wait_durable(end).unwrap();
                break t;
            }
            Err(WalError::NoSpace { .. }) => {
                assert!(
                    Instant::now() < deadline,
                    "the stream still refuses appends with NoSpace 30 s after space returned"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => panic!("{e}"),
        }
        t += 1;
    };
    drop(w);
    stream.close().unwrap();
    drop(stream);
    let (dev, stream, _) = start(&env, &cfg);
    let (got, _) = scan(dev.as_ref(), ScanMode::Strict).unwrap();
    let got: BTreeSet<u64> = got.into_iter().map(|(_, t)| t).collect();
    assert!(acked.iter().all(|t| got.contains(t)));
    assert!(got.contains(&last));
    stream.close().unwrap();
}

/// Reserve the record of `txn` as `append` would write it.
fn reserve(w: &mut braid_wal::stream::StreamWriter, txn: u64) -> braid_wal::stream::Reserved {
    with_spec(txn, |spec| w.reserve(spec.check().unwrap()).unwrap())
}

/// Fill `r` with the record of `txn`; returns its end.
fn fill(w: &mut braid_wal::stream::StreamWriter, r: braid_wal::stream::Reserved, txn: u64) -> Lsn {
    with_spec(txn, |spec| {
        w.fill(r, |lsn, synced, salt, out| {
            spec.encode(lsn, synced, salt, out)
        })
        .1
    })
}

/// Space reserved by two writers lies in the order of the reservations whatever the order of
/// the fills, and nothing after an unfilled reservation becomes durable until it is filled.
#[test]
fn reserved_records_lie_in_reservation_order_and_hold_back_what_follows() {
    for env in Env::both() {
        let cfg = env.cfg(0, 8192);
        let (dev, stream, _) = start(&env, &cfg);
        let mut a = stream.writer().unwrap();
        let mut b = stream.writer().unwrap();
        let ra = reserve(&mut a, 1);
        let hole = ra.lsn();
        let rb = reserve(&mut b, 2);
        assert!(hole < rb.lsn(), "{}", env.name);
        let end_b = fill(&mut b, rb, 2);
        // The flusher may run, but it cannot pass the hole `a` still holds.
        std::thread::sleep(Duration::from_millis(20));
        assert!(!stream.check_durable(end_b).unwrap(), "{}", env.name);
        assert!(stream.durable() <= hole, "{}", env.name);
        let end_a = fill(&mut a, ra, 1);
        assert!(end_a <= end_b);
        stream.wait_durable(end_b).unwrap();
        drop((a, b));
        stream.close().unwrap();
        let (got, _) = scan(dev.as_ref(), ScanMode::Strict).unwrap();
        let txns: Vec<u64> = got.into_iter().map(|(_, t)| t).collect();
        assert_eq!(txns, vec![1, 2], "{}", env.name);
    }
}

/// A writer dropped between its reservation and its fill (a thread unwinding there) poisons
/// the stream: nothing after the hole could ever become durable, so every waiter fails.
#[test]
fn a_writer_dropped_with_its_reservation_unfilled_poisons_the_stream() {
    let env = Env::real();
    let cfg = env.cfg(0, 8192);
    let (_, stream, _) = start(&env, &cfg);
    let mut a = stream.writer().unwrap();
    let mut b = stream.writer().unwrap();
    let ra = reserve(&mut a, 1);
    // A second reservation while the first is unfilled is refused.
    assert!(matches!(a.reserve(64), Err(WalError::Internal(_))));
    let hole = ra.lsn();
    // The writer goes while its reservation is unfilled, as when its thread unwinds.
    drop((ra, a));
    let e = stream.wait_durable(hole + 64).unwrap_err();
    assert!(matches!(e, WalError::Poisoned { .. }), "{e}");
    let e = b.reserve(64).unwrap_err();
    assert!(matches!(e, WalError::Poisoned { .. }), "{e}");
    drop(b);
    let _ = stream.close();
}
