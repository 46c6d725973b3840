//! Giving space back: `reset_tail`, `remove_before`, and what counts as sealed.

use super::*;

#[test]
fn reset_tail_cuts_stale_bytes_and_later_segments() {
    for env in Env::both() {
        let cfg = env.cfg(0, 4096);
        let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
        log.write(0, &pattern(0, 15_000)).unwrap();
        log.sync().unwrap();
        log.prepare(20_000).unwrap();
        assert_eq!(log.segments().len(), 5);
        log.reset_tail(5000).unwrap();
        assert_eq!(log.limit(), 5000);
        assert_eq!(log.segments().len(), 2);
        let mut b = vec![0u8; 100];
        assert_eq!(log.read_at(4950, &mut b).unwrap(), 50);
        // New bytes after the cut; the gap before them reads as zeros only if written so.
        log.write(5000, &pattern(70_000, 3000)).unwrap();
        log.sync().unwrap();
        drop(log);
        let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
        // Reopened, the limit is the end of the full-size segment holding 8000.
        assert_eq!(log.limit(), 8192);
        assert_bytes(&read_all(&log, 0, 5000), &pattern(0, 5000), "read back");
        assert_bytes(
            &read_all(&log, 5000, 3000),
            &pattern(70_000, 3000),
            "read back",
        );
        for k in 2..5 {
            assert!(!env.fs.exists(&env.dir.join(segment_file_name(0, k * 4096))));
        }
        // Out-of-range cuts are refused.
        assert!(log.reset_tail(9000).is_err());
    }
}

#[test]
fn remove_before_keeps_the_last_segment_and_the_start() {
    for env in Env::both() {
        let cfg = env.cfg(0, 4096);
        let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
        log.write(0, &pattern(0, 14_000)).unwrap();
        log.sync().unwrap();
        log.remove_before(9000).unwrap();
        assert_eq!(log.start(), 9000);
        assert_eq!(log.segments().first().unwrap().0, 8192);
        assert_bytes(
            &read_all(&log, 9000, 5000),
            &pattern(9000, 5000),
            "read back",
        );
        log.remove_before(100_000).unwrap();
        assert_eq!(log.segments().len(), 1, "the last segment stays");
        drop(log);
        let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
        // A release beyond the written extent leaves an empty stream at its end.
        assert_eq!(log.start(), 14_000);
        // The full-size last segment reads as zeros after 14,000.
        assert_eq!(log.limit(), 16_384);
        assert!(!env.fs.exists(&env.dir.join(segment_file_name(0, 0))));
        assert!(
            !env.fs
                .exists(&env.dir.join(format!("{}.tmp", meta_file_name(0))))
        );
    }
}

#[test]
fn sealed_ignores_segments_created_ahead() {
    for env in Env::both() {
        let cfg = env.cfg(0, 4096);
        let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
        log.write(0, &pattern(0, 5000)).unwrap();
        log.sync().unwrap();
        log.prepare(4 * 4096).unwrap();
        drop(log);
        let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
        assert_eq!(log.segments().len(), 4);
        assert_eq!(log.sealed(), 4096);
        assert_eq!(
            log.limit(),
            8192,
            "empty segments created ahead do not extend the extent (the one holding data is \
             full-size)"
        );
        assert_bytes(&read_all(&log, 0, 5000), &pattern(0, 5000), "read back");
    }
}

#[test]
fn fault_fs_is_shareable() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<FaultFs>();
    assert_send_sync::<SegmentLog>();
    let f: Arc<dyn Fs> = Arc::new(FaultFs::new());
    assert!(f.exists(Path::new("/")));
}

#[test]
fn zeros_go_ahead_of_the_writes_and_never_over_written_data() {
    // Segments of 2 MiB, larger than the 1 MiB zero-filled ahead of the writes.
    let seg = 2u64 << 20;
    for env in [Env::real_on_disk(), Env::fault()] {
        let cfg = env.cfg(0, seg);
        {
            let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
            log.prepare(1).unwrap();
            if let Some(f) = &env.fault {
                // From here on: only what the first record's write does.
                f.set_record_ops(false);
                f.set_record_ops(true);
            }
            log.write(0, &pattern(0, 100)).unwrap();
            if let Some(f) = &env.fault {
                // The record's block and the 1 MiB after it are written (as zeros) before
                // the record, so its sync converts no reserved block later writes land in.
                let path = env.dir.join(segment_file_name(0, 0));
                let zeroed: u64 = f
                    .ops()
                    .iter()
                    .filter_map(|op| match op {
                        FsOp::Write { path: p, off, len } if *p == path => {
                            assert!(*off >= SEGMENT_HEADER, "a write into the header");
                            Some(*len)
                        }
                        _ => None,
                    })
                    .sum();
                assert_eq!(zeroed, 4096 + (1 << 20) + 100, "{}", env.name);
                f.set_record_ops(false);
            }
            let mut at = 100u64;
            while at < 300_000 {
                log.write(at, &pattern(at, 4999)).unwrap();
                at += 4999;
            }
            log.sync().unwrap();
        }
        // Reopened, the written extent is only an upper bound (the full segment); cut back
        // into the data and write past the zeros filled before the cut.
        let cut = 250_003u64;
        let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
        log.reset_tail(cut).unwrap();
        let mut at = cut;
        while at < cut + 1_500_000 {
            log.write(at, &pattern(at + 7, 4096)).unwrap();
            at += 4096;
        }
        log.sync().unwrap();
        drop(log);
        let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
        assert_bytes(
            &read_all(&log, 0, cut as usize),
            &pattern(0, cut as usize),
            "kept",
        );
        let n = (at - cut) as usize;
        let got = read_all(&log, cut, n);
        for (i, chunk) in got.chunks(4096).enumerate() {
            let from = cut + i as u64 * 4096;
            assert_bytes(
                chunk,
                &pattern(from + 7, chunk.len()),
                "written after the cut",
            );
        }
        // Past the data: zeros (written or reserved), read as nothing written.
        assert!(
            read_all(&log, at, (seg - at) as usize)
                .iter()
                .all(|&b| b == 0)
        );
    }
}

#[test]
fn data_end_skips_reserved_space_after_the_end() {
    let seg = 4u64 << 20;
    let env = Env::real_on_disk();
    let cfg = env.cfg(0, seg);
    {
        let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
        log.write(0, &pattern(0, 100)).unwrap();
        log.sync().unwrap();
        log.prepare(seg + 1).unwrap();
    }
    // Reopened, the limit is the whole first segment (an upper bound); its first block and
    // the 1 MiB after it were written (the record and the zeros ahead of it), the rest only
    // reserved.
    let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
    assert_eq!(log.limit(), seg);
    let written = 4096 + (1 << 20);
    assert_eq!(log.data_end(0).unwrap(), written);
    assert_eq!(log.data_end(500_000).unwrap(), written);
    assert_eq!(log.data_end(2 << 20).unwrap(), 2 << 20, "nothing after it");
}
