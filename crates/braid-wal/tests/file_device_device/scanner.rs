//! The scanner on the device: across segments, after a crash at every operation, corruption
//! named by file and offset, a clean stop after `reset_tail`.

use super::*;

#[test]
fn scanner_reads_the_device_across_segments() {
    for env in Env::both() {
        let cfg = env.cfg(0, 4096);
        let dev = open(&env, &cfg);
        let mut w = Writer::new(&dev, 0);
        write_batch(&mut w, 1, 60, 4);
        let expect = w.expect.clone();
        let end = w.filled;
        drop(dev);
        let dev = open(&env, &cfg);
        let (got, e) = scan(&dev, ScanMode::Strict).unwrap();
        assert_eq!(got, expect, "{}", env.name);
        assert_eq!((e.end, e.kind), (end, EndKind::Clean), "{}", env.name);
    }
}

/// The scanner must never report corruption after a power failure at any point of a run of
/// flushes (segments created ahead, sealed, written, torn), and must find every record of
/// every completed flush.
#[test]
fn scanner_after_a_crash_at_every_operation() {
    for direct in [false, true] {
        let env = Env::fault();
        let mut cfg = env.cfg(0, 4096);
        cfg.direct = direct;
        cfg.buffer_size = 8192;
        let mut flushed_at: Vec<(usize, usize)> = Vec::new(); // (op count, records durable)
        {
            let dev = open(&env, &cfg);
            let mut w = Writer::new(&dev, 0);
            for txn in 1..=36u64 {
                w.append(txn, size_of(txn) / 3).unwrap();
                if txn % 5 == 0 {
                    w.flush().unwrap();
                    flushed_at.push((env.ffs().op_count(), w.expect.len()));
                }
            }
            w.flush().unwrap();
            flushed_at.push((env.ffs().op_count(), w.expect.len()));
            let all = w.expect.clone();
            let ops = env.ffs().op_count();
            drop(dev);
            for k in 0..=ops {
                let durable = flushed_at
                    .iter()
                    .filter(|(c, _)| *c <= k)
                    .map(|(_, n)| *n)
                    .next_back()
                    .unwrap_or(0);
                for opts in [
                    CrashOpts::drop_unsynced(),
                    CrashOpts::tear_last(k as u64),
                    CrashOpts::keep_subset(k as u64),
                ] {
                    let e2 = env.with_fs(env.ffs().crash_after(k, opts).unwrap());
                    let what = format!("direct {direct}, crash after {k} ops ({opts:?})");
                    let dev = FileDevice::open(e2.fs.clone(), cfg.clone())
                        .unwrap_or_else(|e| panic!("{what}: {e}"));
                    let (got, end) =
                        scan(&dev, ScanMode::Strict).unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert!(
                        got.len() >= durable,
                        "{what}: {} records, {durable} were durable",
                        got.len()
                    );
                    assert_eq!(got[..], all[..got.len()], "{what}");
                    // Recovery then cuts the tail and appends; the result scans cleanly.
                    dev.reset_tail(end.end).unwrap();
                    let mut w2 = Writer::new(&dev, end.end);
                    w2.append(777, 50).unwrap();
                    w2.flush().unwrap();
                    drop(dev);
                    let dev = open(&e2, &cfg);
                    let (again, end2) = scan(&dev, ScanMode::Strict)
                        .unwrap_or_else(|e| panic!("{what}, rescan: {e}"));
                    assert_eq!(again.len(), got.len() + 1, "{what}");
                    assert_eq!(end2.kind, EndKind::Clean, "{what}");
                }
            }
        }
    }
}

#[test]
fn scanner_reports_corruption_in_a_sealed_segment_by_file_and_offset() {
    let env = Env::fault();
    let cfg = env.cfg(0, 4096);
    let dev = open(&env, &cfg);
    let mut w = Writer::new(&dev, 0);
    write_batch(&mut w, 1, 40, 3);
    let expect = w.expect;
    let (victim, _) = expect[2];
    drop(dev);
    let seg0 = env.dir.join(segment_file_name(0, 0));
    env.ffs()
        .corrupt(&seg0, 4096 + victim + 40, &[0xEE, 0xEE])
        .unwrap();
    let dev = open(&env, &cfg);
    match scan(&dev, ScanMode::Strict) {
        Err(WalError::Corrupt { file, offset, .. }) => {
            assert!(file.ends_with(&segment_file_name(0, 0)), "{file}");
            assert_eq!(offset, 4096 + victim);
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    let (got, end) = scan(&dev, ScanMode::Salvage).unwrap();
    assert_eq!(got, expect[..2]);
    assert_eq!(end.kind, EndKind::Salvaged);
}

#[test]
fn scanner_stops_cleanly_after_reset_tail() {
    for env in Env::both() {
        let cfg = env.cfg(0, 4096);
        let dev = open(&env, &cfg);
        let mut w = Writer::new(&dev, 0);
        write_batch(&mut w, 1, 30, 6);
        let expect = w.expect;
        let (end, _) = expect[17];
        dev.reset_tail(end).unwrap();
        let (got, e) = scan(&dev, ScanMode::Strict).unwrap();
        assert_eq!(got, expect[..17]);
        assert_eq!((e.end, e.kind), (end, EndKind::Clean));
        drop(dev);
        let dev = open(&env, &cfg);
        let (got, e) = scan(&dev, ScanMode::Strict).unwrap();
        assert_eq!(got, expect[..17]);
        assert_eq!((e.end, e.kind), (end, EndKind::Clean));
    }
}
