//! The ring's own rules: backpressure when it cannot drain, `reset_tail` zeroing, refusing
//! foreign data, re-formatting after an interrupted format, and holes that never come back.

use super::*;

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
