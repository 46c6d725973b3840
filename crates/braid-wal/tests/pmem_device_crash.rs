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

type Expected = BTreeMap<Lsn, (u64, Vec<u8>, Lsn)>;
/// Recovered records: (lsn, txn, payload).
type Recovered = Vec<(Lsn, u64, Vec<u8>)>;

fn pcfg(domain: Domain) -> PmemConfig {
    PmemConfig {
        domain,
        flush: None,
        write_delay_ns: 0,
        ..PmemConfig::default()
    }
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

#[test]
fn full_ring_without_destaging_fails_with_log_full() {
    let region = CrashSim::region(4096 + 4096, pcfg(Domain::Eadr));
    let dev = reopen(region, PmemWrite::NonTemporal);
    let stream = Stream::start(dev.clone(), 0, scfg(1)).unwrap();
    let mut w = stream.writer().unwrap();
    let mut exp = Expected::new();
    let err = loop {
        let p = payload(1, 200);
        let parts: [&[u8]; 1] = [&p];
        let spec = RecordSpec {
            kind: Kind::Redo,
            flags: 1,
            txn: 1,
            stamp: &Stamp::None,
            payload: &parts,
        };
        match w.append(&spec) {
            Ok((l, e)) => {
                exp.insert(l, (1, p, e));
            }
            Err(e) => break e,
        }
    };
    assert!(matches!(err, WalError::LogFull { .. }), "{err:?}");
    assert!(err.to_string().contains("full"));
    assert!(stream.tail() <= 4096);
    // A checkpoint releases space and appends work again.
    let tail = stream.tail();
    stream.wait_durable(tail).unwrap();
    dev.release(tail).unwrap();
    append(&mut w, 2, 200, &mut exp);
}

#[test]
fn reset_tail_zeroes_everything_outside_the_window() {
    let region = CrashSim::region(4096 + 8192, pcfg(Domain::Adr));
    let dev = reopen(region.clone(), PmemWrite::NonTemporal);
    let stream = Stream::start(dev.clone(), 0, scfg(1)).unwrap();
    let mut w = stream.writer().unwrap();
    let mut exp = Expected::new();
    let mut ends = Vec::new();
    for i in 0..30u64 {
        ends.push(append(&mut w, i, 150, &mut exp).1);
    }
    let tail = stream.tail();
    stream.wait_durable(tail).unwrap();
    drop(w);
    stream.close().unwrap();
    // Pretend recovery decided the log ends after record 10.
    let end = ends[10];
    dev.reset_tail(end).unwrap();
    let mut ring = vec![0u8; 8192];
    region.read(4096, &mut ring);
    assert!(
        ring[end as usize..].iter().all(|b| *b == 0),
        "stale bytes beyond the end"
    );
    assert!(ring[..end as usize].iter().any(|b| *b != 0));
    let dev2 = reopen(
        region.crash(CrashMode::DropUnpersisted).unwrap(),
        PmemWrite::NonTemporal,
    );
    let (got, e2, kind) = scan(&*dev2);
    assert_eq!(e2, end);
    assert_eq!(kind, EndKind::Clean);
    assert_eq!(got.len(), 11);
    assert!(dev.reset_tail(end + 8192 + 8).is_err());
}

#[test]
fn open_refuses_other_streams_and_foreign_data() {
    let region = CrashSim::region(16 << 10, pcfg(Domain::Adr));
    let dev = PmemDevice::open(region.clone(), dcfg(PmemWrite::NonTemporal)).unwrap();
    let salt = dev.salt();
    drop(dev);
    // Same stream: the same ring.
    let dev = PmemDevice::open(region.clone(), dcfg(PmemWrite::NonTemporal)).unwrap();
    assert_eq!(dev.salt(), salt);
    drop(dev);
    let other = PmemDeviceConfig {
        stream: 2,
        ..dcfg(PmemWrite::NonTemporal)
    };
    let err = PmemDevice::open(region.clone(), other).unwrap_err();
    assert!(err.to_string().contains("stream 1"), "{err}");
    // Damage the header checksum.
    let img = region.crash(CrashMode::DropUnpersisted).unwrap();
    img.write(12, &[9, 9, 9, 9]);
    let err = PmemDevice::open(img, dcfg(PmemWrite::NonTemporal)).unwrap_err();
    assert!(matches!(err, WalError::BadSegment { .. }), "{err}");
    // Foreign bytes.
    let foreign = CrashSim::region(16 << 10, pcfg(Domain::Adr));
    foreign.write(0, b"something else entirely");
    let err = PmemDevice::open(foreign, dcfg(PmemWrite::NonTemporal)).unwrap_err();
    assert!(err.to_string().contains("not a braid log ring"), "{err}");
    // Too small.
    assert!(
        PmemDevice::open(
            CrashSim::region(4096, pcfg(Domain::Adr)),
            dcfg(PmemWrite::NonTemporal)
        )
        .is_err()
    );
}

#[test]
fn interrupted_format_is_formatted_again() {
    // Crash at every persist event of formatting: the region opens as an empty ring.
    let probe = CrashSim::region(16 << 10, pcfg(Domain::Adr));
    let base = probe.persist_events();
    drop(PmemDevice::open(probe.clone(), dcfg(PmemWrite::NonTemporal)).unwrap());
    let total = probe.persist_events() - base;
    for n in 0..=total {
        let region = CrashSim::region(16 << 10, pcfg(Domain::Adr));
        region.freeze_after(n).unwrap();
        drop(PmemDevice::open(region.clone(), dcfg(PmemWrite::NonTemporal)).unwrap());
        // (KeepRandom on a frozen image would keep stores made after the crash point.)
        let dev = PmemDevice::open(
            region.crash(CrashMode::DropUnpersisted).unwrap(),
            dcfg(PmemWrite::NonTemporal),
        )
        .unwrap();
        let (got, end, _) = scan(&dev);
        assert!(got.is_empty());
        assert_eq!(end, 0);
    }
    // Any subset of the 8-byte words written before the magic (unpersisted lines evicted in
    // any order) also opens as an empty ring.
    let full = CrashSim::region(16 << 10, pcfg(Domain::Adr));
    drop(PmemDevice::open(full.clone(), dcfg(PmemWrite::NonTemporal)).unwrap());
    let mut hdr = [0u8; 40];
    full.read(0, &mut hdr);
    for mask in 0u32..16 {
        let region = CrashSim::region(16 << 10, pcfg(Domain::Adr));
        for w in 1..5 {
            if mask & (1 << (w - 1)) != 0 {
                region.write(w * 8, &hdr[w * 8..w * 8 + 8]);
            }
        }
        let dev = PmemDevice::open(region, dcfg(PmemWrite::NonTemporal)).unwrap();
        assert_eq!(scan(&dev).0.len(), 0);
    }
}

#[test]
fn destaging_to_files_keeps_the_whole_stream() {
    let dir = tempfile::tempdir().unwrap();
    let mut fcfg = FileDeviceConfig::new(dir.path(), 1);
    fcfg.segment_size = 16 << 10;
    fcfg.preallocate = false;
    let cfg = PmemDeviceConfig {
        stream: 1,
        write: PmemWrite::NonTemporal,
        destage: Some(fcfg),
    };
    let region = CrashSim::region(4096 + 4096, pcfg(Domain::Adr));
    let dev = Arc::new(PmemDevice::open(region.clone(), cfg.clone()).unwrap());
    let stream = Stream::start(dev.clone(), 0, scfg(2)).unwrap();
    let mut exp = Expected::new();
    {
        let mut w = stream.writer().unwrap();
        let mut i = 0u64;
        // Ten laps of a 4 KiB ring; every few records wait for durability.
        while stream.tail() < 10 * 4096 {
            let (_, e) = append(&mut w, i, 30 + (i as usize * 41) % 250, &mut exp);
            if i.is_multiple_of(5) {
                stream.wait_durable(e).unwrap();
            }
            i += 1;
        }
    }
    let tail = stream.tail();
    stream.wait_durable(tail).unwrap();
    stream.close().unwrap();
    assert!(dev.head() > 0, "nothing was de-staged");
    // The device as one stream: files then ring. The ring past the end holds records of
    // earlier laps, yet a closed stream ends clean.
    let (got, end, kind) = scan(&*dev);
    check_prefix(&got, end, &exp, 0, tail);
    assert_eq!(got.len(), exp.len());
    assert_eq!(kind, EndKind::Clean, "a cleanly closed ring must end clean");
    drop(stream);
    drop(dev);
    // Power failure, reopen with the same directory: still everything.
    let img = region.crash(CrashMode::DropUnpersisted).unwrap();
    let dev2 = PmemDevice::open(img, cfg).unwrap();
    let (got, end, kind) = scan(&dev2);
    assert_eq!(kind, EndKind::Clean, "the clean end was persisted");
    check_prefix(&got, end, &exp, 0, tail);
    assert_eq!(got.len(), exp.len());
    // Release (checkpoint) part of it: the stream then starts there.
    let mid = *exp.keys().nth(exp.len() / 2).unwrap();
    dev2.reset_tail(end).unwrap();
    dev2.release(mid).unwrap();
    assert_eq!(dev2.start(), mid);
    let (got, end2, _) = scan(&dev2);
    assert_eq!(end2, end);
    check_prefix(&got, end2, &exp, mid, tail);
}

/// A hole (an earlier record lost, later ones persisted, as concurrent writers can leave it):
/// the scan stops at the hole, and once the stream restarts there the records after the hole
/// never come back, even when a new record ends exactly where one of them began.
#[test]
fn records_after_a_hole_never_come_back() {
    let region = CrashSim::region(4096 + 16384, pcfg(Domain::Adr));
    let dev = reopen(region.clone(), PmemWrite::NonTemporal);
    let stream = Stream::start(dev, 0, scfg(1)).unwrap();
    let mut w = stream.writer().unwrap();
    let mut exp = Expected::new();
    let mut recs = Vec::new();
    for i in 0..5u64 {
        recs.push(append(&mut w, i, 100, &mut exp));
    }
    stream.wait_durable(recs[4].1).unwrap();
    // Not waited for: their `synced` stays at or below the hole.
    for i in 5..10u64 {
        recs.push(append(&mut w, i, 100, &mut exp));
    }
    drop(w);
    stream.close().unwrap();
    let img = region.crash(CrashMode::DropUnpersisted).unwrap();
    let (hole, hole_end) = recs[5];
    img.fill(4096 + hole as usize, (hole_end - hole) as usize, 0);
    let dev2 = reopen(img.clone(), PmemWrite::NonTemporal);
    let (got, end, kind) = scan(&*dev2);
    assert_eq!(end, hole);
    assert_eq!(kind, EndKind::TornTail);
    check_prefix(&got, end, &exp, 0, recs[4].1);
    let stream2 = Stream::start(dev2, end, scfg(1)).unwrap();
    let mut w2 = stream2.writer().unwrap();
    let mut exp2: Expected = exp.range(..end).map(|(k, v)| (*k, v.clone())).collect();
    let (_, e2) = append(&mut w2, 500, 100, &mut exp2);
    assert_eq!(e2, recs[6].0, "the new record ends where a lost one began");
    stream2.wait_durable(e2).unwrap();
    drop(w2);
    stream2.close().unwrap();
    let dev3 = reopen(
        img.crash(CrashMode::DropUnpersisted).unwrap(),
        PmemWrite::NonTemporal,
    );
    let (got3, end3, kind3) = scan(&*dev3);
    assert_eq!((end3, kind3), (e2, EndKind::Clean));
    check_prefix(&got3, end3, &exp2, 0, e2);
}

/// De-staging while the power fails: the region and the files are snapshotted (the ring first,
/// so the files may be ahead of the ring's head but never behind it) at several points of a
/// run over many laps; each reopened pair must give a prefix holding every acknowledged record.
#[test]
fn destaging_survives_power_failures() {
    use braid_wal::fs::{CrashOpts, FaultFs};
    let fs = FaultFs::new();
    let mut fcfg = FileDeviceConfig::new("/db/ring", 1);
    fcfg.segment_size = 8192;
    let cfg = PmemDeviceConfig {
        stream: 1,
        write: PmemWrite::NonTemporal,
        destage: Some(fcfg),
    };
    let region = CrashSim::region(4096 + 4096, pcfg(Domain::Adr));
    let dev = Arc::new(
        PmemDevice::open_with_fs(region.clone(), cfg.clone(), Arc::new(fs.clone())).unwrap(),
    );
    let stream = Stream::start(dev.clone(), 0, scfg(1)).unwrap();
    let mut w = stream.writer().unwrap();
    let mut exp = Expected::new();
    let mut snaps = Vec::new();
    let mut i = 0u64;
    while stream.tail() < 12 * 4096 {
        let (_, e) = append(&mut w, i, 20 + (i as usize * 67) % 200, &mut exp);
        if i.is_multiple_of(3) {
            stream.wait_durable(e).unwrap();
        }
        if i % 37 == 36 {
            let acked = stream.durable();
            let img = region.crash(CrashMode::DropUnpersisted).unwrap();
            let files = [
                fs.crash(CrashOpts::drop_unsynced()),
                fs.crash(CrashOpts::tear_last(i)),
            ];
            snaps.push((acked, img, files));
        }
        i += 1;
    }
    drop(w);
    stream.close().unwrap();
    assert!(dev.head() > 0, "nothing was de-staged");
    assert!(snaps.len() > 5);
    for (acked, img, files) in snaps {
        for f in files {
            let dev2 = PmemDevice::open_with_fs(
                img.crash(CrashMode::DropUnpersisted).unwrap(),
                cfg.clone(),
                Arc::new(f),
            )
            .unwrap();
            let (got, end, _) = scan(&dev2);
            check_prefix(&got, end, &exp, 0, acked);
        }
    }
}

/// A ring in a region file on the normal temporary file system, written back with msync:
/// appends are acknowledged, the file holds them after reopening, and every fill msynced.
#[test]
fn msync_region_works_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = PmemConfig {
        media: Media::Msync,
        ..PmemConfig::default()
    };
    for write in [PmemWrite::NonTemporal, PmemWrite::StoreFlush] {
        let path = dir.path().join(format!("ring-{write:?}.region"));
        let region = Region::create(&path, 4096 + 16384, cfg).unwrap();
        assert_eq!(region.media(), Media::Msync);
        assert!(region.is_power_safe());
        let dev = reopen(region.clone(), write);
        let before = region.stats().msyncs;
        let stream = Stream::start(dev.clone(), 0, scfg(2)).unwrap();
        let mut exp = Expected::new();
        let mut w = stream.writer().unwrap();
        let mut last = 0;
        for i in 0..20u64 {
            last = append(&mut w, i, 40 + (i as usize * 37) % 200, &mut exp).1;
            if i % 4 == 0 {
                stream.wait_durable(last).unwrap();
            }
        }
        stream.wait_durable(last).unwrap();
        drop(w);
        stream.close().unwrap();
        let msyncs = region.stats().msyncs - before;
        assert!(msyncs >= 20, "{write:?}: {msyncs} msyncs for 20 fills");
        region.check().unwrap();
        drop(stream);
        drop(dev);
        drop(region);

        let region = Region::open(&path, Some(4096 + 16384), cfg).unwrap();
        let dev = reopen(region, write);
        let (got, end, _) = scan(&*dev);
        check_prefix(&got, end, &exp, 0, last);
        assert_eq!(got.len(), exp.len(), "{write:?}");
    }
}

/// A failed msync poisons the stream: the commits that were durable before it stay
/// acknowledged, the one whose fill failed to write back and every later one fail.
#[test]
fn failed_msync_poisons_the_stream() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = PmemConfig {
        media: Media::Msync,
        ..PmemConfig::default()
    };
    let region = Region::create(&dir.path().join("ring.region"), 4096 + 16384, cfg).unwrap();
    let dev = reopen(region.clone(), PmemWrite::StoreFlush);
    let stream = Stream::start(dev, 0, scfg(1)).unwrap();
    let mut exp = Expected::new();
    let mut w = stream.writer().unwrap();
    let (_, first) = append(&mut w, 1, 100, &mut exp);
    stream.wait_durable(first).unwrap();

    region.inject_msync_failure(5); // EIO
    let (_, second) = append(&mut w, 2, 100, &mut exp);
    let e = stream.wait_durable(second).unwrap_err();
    assert!(matches!(e, WalError::Poisoned { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains("msync"), "{msg}");
    assert!(
        stream.durable() < second,
        "nothing after the failure is published"
    );
    // Acknowledged before the failure: still acknowledged.
    stream.wait_durable(first).unwrap();
    // Later appends are refused.
    let p = payload(3, 10);
    let parts: [&[u8]; 1] = [&p];
    let spec = RecordSpec {
        kind: Kind::Redo,
        flags: 1,
        txn: 3,
        stamp: &Stamp::None,
        payload: &parts,
    };
    assert!(matches!(w.append(&spec), Err(WalError::Poisoned { .. })));
    drop(w);
    assert!(stream.close().is_err());
}
