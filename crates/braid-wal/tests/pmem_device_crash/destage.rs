//! De-staging the ring to segment files, with and without power failures.

use super::*;

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
