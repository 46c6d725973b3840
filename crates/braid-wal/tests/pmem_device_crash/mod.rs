//! The pmem log device on simulated persistent memory: appends, power failures at every kind of
//! point, reopen and scan. What is recovered must be exactly a prefix of what was appended
//! (in LSN order) and must contain every record acknowledged durable; ring wrap-around never
//! replays a stale record; `reset_tail` removes what lies beyond the recovered end. Also the
//! device on a region file written back with `msync` (`Media::Msync`), and the poisoning of
//! the stream when an `msync` fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use braid_pmem::{CrashMode, CrashSim, Domain, Media, PmemConfig, Region};
use braid_wal::Lsn;
use braid_wal::WalError;
use braid_wal::device::Device;
use braid_wal::device::file::FileDeviceConfig;
use braid_wal::device::pmem::{PmemDevice, PmemDeviceConfig, PmemWrite};
use braid_wal::record::{Kind, RecordSpec, Stamp};
use braid_wal::scan::{EndKind, ScanMode, Scanner, StreamSource};
use braid_wal::stream::{Stream, StreamConfig};

mod destage;
mod msync;
mod ring;

type Expected = BTreeMap<Lsn, (u64, Vec<u8>, Lsn)>;
/// Recovered records: (lsn, txn, payload).
type Recovered = Vec<(Lsn, u64, Vec<u8>)>;

fn pcfg(domain: Domain) -> PmemConfig {
    PmemConfig::default()
        .domain(domain)
        .flush(None)
        .write_delay_ns(0)
}

fn dcfg(write: PmemWrite) -> PmemDeviceConfig {
    PmemDeviceConfig {
        stream: 1,
        write,
        destage: None,
    }
}

fn scfg(writers: usize) -> StreamConfig {
    StreamConfig {
        id: 1,
        max_writers: writers,
        ..StreamConfig::default()
    }
}

fn payload(txn: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (txn as usize * 31 + i * 7) as u8)
        .collect()
}

fn append(
    w: &mut braid_wal::stream::StreamWriter,
    txn: u64,
    len: usize,
    exp: &mut Expected,
) -> (Lsn, Lsn) {
    let p = payload(txn, len);
    let parts: [&[u8]; 1] = [&p];
    let spec = RecordSpec {
        kind: Kind::Redo,
        flags: 1,
        txn,
        stamp: &Stamp::None,
        payload: &parts,
    };
    let (l, e) = w.append(&spec).unwrap();
    exp.insert(l, (txn, p, e));
    (l, e)
}

/// Every valid record (lsn, txn, payload) and the end.
fn scan(src: &dyn StreamSource) -> (Recovered, Lsn, EndKind) {
    let mut s = Scanner::new(src, ScanMode::Strict);
    let mut out = Vec::new();
    while let Some(r) = s.next_record().unwrap() {
        out.push((r.header.lsn, r.header.txn, r.payload.to_vec()));
    }
    let end = s.end().unwrap().clone();
    (out, end.end, end.kind)
}

/// The recovered records are exactly the expected ones from `start`, cut at some point, and
/// include every record ending at or before `acked`.
fn check_prefix(got: &[(Lsn, u64, Vec<u8>)], end: Lsn, exp: &Expected, start: Lsn, acked: Lsn) {
    let want: Vec<_> = exp.range(start..).collect();
    assert!(
        got.len() <= want.len(),
        "recovered {} records, only {} appended",
        got.len(),
        want.len()
    );
    for (g, (l, (txn, p, _))) in got.iter().zip(&want) {
        assert_eq!(g.0, **l, "recovered record at an unexpected LSN");
        assert_eq!(
            g.1, *txn,
            "recovered a record that was not appended there (txn) at {l}"
        );
        assert_eq!(&g.2, p, "payload mismatch at {l}");
    }
    let expected_end = match got.len() {
        0 => start,
        n => want[n - 1].1.2,
    };
    assert_eq!(end, expected_end);
    for (l, (_, _, e)) in &want[got.len()..] {
        assert!(
            *e > acked,
            "record at {l} ending at {e} was acknowledged durable (<= {acked}) but not recovered"
        );
    }
}

fn reopen(img: Region, write: PmemWrite) -> Arc<PmemDevice> {
    Arc::new(PmemDevice::open(img, dcfg(write)).unwrap())
}

#[test]
fn append_wait_crash_recover_all_modes() {
    for domain in [Domain::Adr, Domain::Eadr] {
        for write in [PmemWrite::NonTemporal, PmemWrite::StoreFlush] {
            let region = CrashSim::region(64 << 10, pcfg(domain));
            let dev = reopen(region.clone(), write);
            let stream = Stream::start(dev.clone(), 0, scfg(2)).unwrap();
            let mut w = stream.writer().unwrap();
            let mut exp = Expected::new();
            let mut acked = 0;
            for i in 0..200u64 {
                let (_, e) = append(&mut w, i, 10 + (i as usize * 37) % 200, &mut exp);
                if i % 3 == 0 {
                    stream.wait_durable(e).unwrap();
                    acked = e;
                }
            }
            for mode in [
                CrashMode::DropUnpersisted,
                CrashMode::KeepRandom {
                    seed: 7,
                    keep_probability: 0.5,
                },
            ] {
                let img = region.crash(mode).unwrap();
                let dev2 = reopen(img, write);
                let (got, end, _) = scan(&*dev2);
                check_prefix(&got, end, &exp, 0, acked);
                // Every fill persisted before returning: nothing is lost at all.
                assert_eq!(got.len(), exp.len(), "{domain:?} {write:?} {mode:?}");
            }
            drop(w);
            stream.close().unwrap();
        }
    }
}

/// Freeze the durable image after `n` persist events at many points of a single-writer run.
#[test]
fn crash_at_every_kind_of_point_single_writer() {
    for (domain, write) in [
        (Domain::Adr, PmemWrite::NonTemporal),
        (Domain::Adr, PmemWrite::StoreFlush),
        (Domain::Eadr, PmemWrite::NonTemporal),
    ] {
        // Measure the run's persist events once.
        let total = {
            let region = CrashSim::region(32 << 10, pcfg(domain));
            let dev = reopen(region.clone(), write);
            let base = region.persist_events();
            let stream = Stream::start(dev, 0, scfg(1)).unwrap();
            let mut w = stream.writer().unwrap();
            let mut exp = Expected::new();
            for i in 0..40u64 {
                append(&mut w, i, 24 + (i as usize * 13) % 90, &mut exp);
            }
            region.persist_events() - base
        };
        let step = (total / 60).max(1);
        let mut n = 0;
        while n <= total + 1 {
            let region = CrashSim::region(32 << 10, pcfg(domain));
            let dev = reopen(region.clone(), write);
            let stream = Stream::start(dev, 0, scfg(1)).unwrap();
            let base = region.persist_events();
            region.freeze_after(n).unwrap();
            let mut w = stream.writer().unwrap();
            let mut exp = Expected::new();
            let mut acked = 0;
            for i in 0..40u64 {
                let (_, e) = append(&mut w, i, 24 + (i as usize * 13) % 90, &mut exp);
                if i % 2 == 0 {
                    stream.wait_durable(e).unwrap();
                    if region.persist_events() - base <= n {
                        acked = e;
                    }
                }
            }
            for mode in [
                CrashMode::DropUnpersisted,
                CrashMode::KeepRandom {
                    seed: n,
                    keep_probability: 0.3,
                },
            ] {
                let dev2 = reopen(region.crash(mode).unwrap(), write);
                let (got, end, _) = scan(&*dev2);
                check_prefix(&got, end, &exp, 0, acked);
            }
            n += step;
        }
    }
}

/// Two writers persist out of order; a crash leaves holes followed by valid records. Recovery
/// must stop at the first hole (a prefix), keep every acknowledged record, and after
/// `Stream::start` at the recovered end the records past the hole must be gone for good.
///
/// The crash point is a persist event (`freeze_after`), so the image is exact. (KeepRandom on
/// a frozen image would keep stores the program made after the crash point, a state no real
/// crash produces; random eviction is covered by `concurrent_writers_live_crash_prefix`.)
#[test]
fn concurrent_writers_frozen_crash_prefix() {
    for seed in 0..16u64 {
        let region = CrashSim::region(64 << 10, pcfg(Domain::Adr));
        let dev = reopen(region.clone(), PmemWrite::NonTemporal);
        let stream = Stream::start(dev, 0, scfg(2)).unwrap();
        let base = region.persist_events();
        let freeze_at = 40 + seed * 37;
        region.freeze_after(freeze_at).unwrap();
        let handles: Vec<_> = (0..2u64)
            .map(|t| {
                let s = stream.clone();
                let r = region.clone();
                std::thread::spawn(move || {
                    let mut w = s.writer().unwrap();
                    let mut exp = Expected::new();
                    let mut acked = 0;
                    for i in 0..60u64 {
                        let txn = t * 1000 + i;
                        let (_, e) = append(
                            &mut w,
                            txn,
                            8 + ((i * 29 + t * 11) % 120) as usize,
                            &mut exp,
                        );
                        if i % 4 == 3 {
                            s.wait_durable(e).unwrap();
                            if r.persist_events() - base <= freeze_at {
                                acked = acked.max(e);
                            }
                        }
                    }
                    (exp, acked)
                })
            })
            .collect();
        let mut exp = Expected::new();
        let mut acked = 0;
        for h in handles {
            let (e, a) = h.join().unwrap();
            exp.extend(e);
            acked = acked.max(a);
        }
        stream.close().unwrap();
        let img = region.crash(CrashMode::DropUnpersisted).unwrap();
        let dev2 = reopen(img.clone(), PmemWrite::NonTemporal);
        let (got, end, _) = scan(&*dev2);
        check_prefix(&got, end, &exp, 0, acked);
        // Start again at the recovered end, append one record of the size of the first lost
        // one (so it ends exactly where the next lost record began), crash, scan: the lost
        // records after it must not come back.
        let stream2 = Stream::start(dev2.clone(), end, scfg(1)).unwrap();
        let mut w2 = stream2.writer().unwrap();
        let mut exp2: Expected = exp.range(..end).map(|(k, v)| (*k, v.clone())).collect();
        if let Some((_, (_, p, _))) = exp.range(end..).next() {
            let (_, e2) = append(&mut w2, 99_999, p.len(), &mut exp2);
            stream2.wait_durable(e2).unwrap();
            drop(w2);
            stream2.close().unwrap();
            let dev3 = reopen(
                img.crash(CrashMode::DropUnpersisted).unwrap(),
                PmemWrite::NonTemporal,
            );
            let (got3, end3, kind3) = scan(&*dev3);
            assert_eq!(end3, e2, "{kind3:?}");
            check_prefix(&got3, end3, &exp2, 0, e2);
        }
    }
}

/// Power failures taken while two writers run (both crash modes): a prefix containing every
/// record acknowledged before the crash.
#[test]
fn concurrent_writers_live_crash_prefix() {
    for seed in 0..8u64 {
        let region = CrashSim::region(64 << 10, pcfg(Domain::Adr));
        let dev = reopen(region.clone(), PmemWrite::NonTemporal);
        let stream = Stream::start(dev, 0, scfg(2)).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let handles: Vec<_> = (0..2u64)
            .map(|t| {
                let s = stream.clone();
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut w = s.writer().unwrap();
                    let mut exp = Expected::new();
                    let mut i = 0u64;
                    while !stop.load(Ordering::SeqCst) && s.tail() < 56 << 10 {
                        let txn = t * 100_000 + i;
                        let (_, e) = append(
                            &mut w,
                            txn,
                            8 + ((i * 29 + t * 11) % 120) as usize,
                            &mut exp,
                        );
                        if i % 3 == 2 {
                            s.wait_durable(e).unwrap();
                        }
                        i += 1;
                    }
                    exp
                })
            })
            .collect();
        let threshold = 4096 + seed * 5000;
        while stream.tail() < threshold && !handles.iter().all(|h| h.is_finished()) {
            std::thread::yield_now();
        }
        // Acknowledged before the crash: read the durable point first.
        let acked1 = stream.durable();
        let img1 = region.crash(CrashMode::DropUnpersisted).unwrap();
        let acked2 = stream.durable();
        let img2 = region
            .crash(CrashMode::KeepRandom {
                seed,
                keep_probability: 0.5,
            })
            .unwrap();
        stop.store(true, Ordering::SeqCst);
        let mut exp = Expected::new();
        for h in handles {
            exp.extend(h.join().unwrap());
        }
        for (img, acked) in [(img1, acked1), (img2, acked2)] {
            let dev2 = reopen(img, PmemWrite::NonTemporal);
            let (got, end, _) = scan(&*dev2);
            check_prefix(&got, end, &exp, 0, acked);
        }
    }
}

/// A tiny ring wrapped many times: checkpoints release space; after a crash the scan finds
/// exactly the records after the last release, never a stale record of an earlier lap.
#[test]
fn wrap_around_many_laps_never_replays_stale() {
    for write in [PmemWrite::NonTemporal, PmemWrite::StoreFlush] {
        let region = CrashSim::region(4096 + 4096, pcfg(Domain::Adr));
        let dev = reopen(region.clone(), write);
        assert_eq!(dev.capacity(), 4096);
        let stream = Stream::start(dev.clone(), 0, scfg(1)).unwrap();
        let mut w = stream.writer().unwrap();
        let mut exp = Expected::new();
        let mut released = 0;
        let mut i = 0u64;
        while stream.tail() < 6 * 4096 {
            let len = 40 + (i as usize * 53) % 300;
            let p = payload(i, len);
            let parts: [&[u8]; 1] = [&p];
            let spec = RecordSpec {
                kind: Kind::Redo,
                flags: 1,
                txn: i,
                stamp: &Stamp::None,
                payload: &parts,
            };
            match w.append(&spec) {
                Ok((l, e)) => {
                    exp.insert(l, (i, p, e));
                    i += 1;
                }
                Err(WalError::LogFull { .. }) => panic!("released space should suffice"),
                Err(e) => panic!("{e}"),
            }
            // Checkpoint: keep only the last ~2 KiB.
            let tail = stream.tail();
            if tail - released > 3000 {
                stream.wait_durable(tail).unwrap();
                let upto = *exp
                    .range(..tail - 2048)
                    .next_back()
                    .map(|(_, (_, _, e))| e)
                    .unwrap_or(&released);
                if upto > released {
                    dev.release(upto).unwrap();
                    released = upto;
                }
            }
        }
        let tail = stream.tail();
        stream.wait_durable(tail).unwrap();
        for mode in [
            CrashMode::DropUnpersisted,
            CrashMode::KeepRandom {
                seed: 3,
                keep_probability: 0.7,
            },
        ] {
            let dev2 = reopen(region.crash(mode).unwrap(), write);
            assert_eq!(dev2.start(), released);
            let (got, end, _) = scan(&*dev2);
            check_prefix(&got, end, &exp, released, tail);
            assert_eq!(end, tail);
        }
    }
}
