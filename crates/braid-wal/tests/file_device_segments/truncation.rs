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
