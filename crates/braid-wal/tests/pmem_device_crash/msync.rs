//! Region files written back with msync: end to end, and a failed msync poisoning the stream.

use super::*;

/// A ring in a region file on the normal temporary file system, written back with msync:
/// appends are acknowledged, the file holds them after reopening, and every fill msynced.
#[test]
fn msync_region_works_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = PmemConfig::default().media(Media::Msync);
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
    let cfg = PmemConfig::default().media(Media::Msync);
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
