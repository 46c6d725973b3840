//! What is refused or reported: damage (never skipped), oversized transactions, a failed
//! msync.

use super::*;

/// Damage below the tail of a cleanly closed log is an error naming the region and offset;
/// salvage mode keeps the valid prefix.
#[test]
fn damage_is_reported_not_skipped() {
    let o = opts(FlushPolicy::Insert, 256, 0);
    let region = CrashSim::region(64 << 10, pcfg(Domain::Adr));
    let fs = FaultFs::new();
    let (log, _) = open(&region, &fs, &o, ScanMode::Strict).unwrap();
    for t in 1..=10 {
        commit(&log, t, 80);
    }
    let layout = log.layout();
    log.close().unwrap();
    drop(log);
    // Flip a payload byte of LSN 4's object.
    let off = layout.slot_off(4) + 40;
    let mut b = [0u8; 1];
    region.read(off, &mut b);
    region.write(off, &[b[0] ^ 0xFF]);
    region.persist(off, 1);
    let err = open(&region, &fs, &o, ScanMode::Strict)
        .err()
        .expect("corruption must be an error");
    match &err {
        WalError::Corrupt { offset, damage, .. } => {
            assert_eq!(*offset, layout.slot_off(4) as u64, "{err}");
            assert!(
                matches!(
                    damage,
                    Corruption::Object { lsn: 4, .. } | Corruption::ObjectLength { lsn: 4, .. }
                ),
                "{err}"
            );
        }
        other => panic!("expected Corrupt, got {other}"),
    }
    let (_l, rec) = open(&region, &fs, &o, ScanMode::Salvage).unwrap();
    // Transactions 1..=10 took LSNs 0..=9: the prefix before LSN 4 is 1..=4.
    assert_eq!(rec.order(), vec![1, 2, 3, 4]);
}

/// A payload too large for a quarter of the index is refused before it takes any LSN.
#[test]
fn oversized_transaction_is_refused() {
    let o = opts(FlushPolicy::Insert, 128, 0);
    let region = CrashSim::region(16 << 10, pcfg(Domain::Adr));
    let (log, _) = open(&region, &FaultFs::new(), &o, ScanMode::Strict).unwrap();
    let mut w = log.writer();
    let before = log.next_lsn();
    let err = w
        .insert(1, Kind::Redo, &vec![7u8; 64 << 10], true)
        .unwrap_err();
    assert!(matches!(err, WalError::RecordTooLarge { .. }), "{err}");
    assert_eq!(log.next_lsn(), before);
    commit(&log, 2, 10);
}

/// On a region file written back with msync: commits are durable and recovered after reopening;
/// once an msync fails, the log is poisoned and nothing persisted after it is acknowledged.
#[test]
fn msync_region_commits_and_a_failed_msync_poisons() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = PmemConfig::default().media(Media::Msync);
    for flush in [FlushPolicy::Insert, FlushPolicy::Commit] {
        let path = dir.path().join(format!("pertxn-{flush:?}.region"));
        let fs = FaultFs::new();
        let o = opts(flush, 256, 0);
        let region = Region::create(&path, 64 << 10, cfg).unwrap();
        {
            let (log, _) = open(&region, &fs, &o, ScanMode::Strict).unwrap();
            for t in 1..=5 {
                commit(&log, t, 60);
            }
            assert!(region.stats().msyncs > 0, "{flush:?}");
            log.close().unwrap();
        }
        drop(region);
        let region = Region::open(&path, None, cfg).unwrap();
        let (log, rec) = open(&region, &fs, &o, ScanMode::Strict).unwrap();
        let got = rec.map();
        for t in 1..=5 {
            assert_eq!(got.get(&t), Some(&payload(t, 60)), "{flush:?}: txn {t}");
        }

        region.inject_msync_failure(5); // EIO
        let mut w = log.writer();
        let end = w.insert(6, Kind::Redo, &payload(6, 60), true).unwrap();
        let e = log.ticket(end).wait().unwrap_err();
        assert!(matches!(e, WalError::Poisoned { .. }), "{flush:?}: {e:?}");
        assert!(e.to_string().contains("msync"), "{e}");
        assert!(w.insert(7, Kind::Redo, &payload(7, 60), true).is_err());
        assert!(log.close().is_err());
    }
}
