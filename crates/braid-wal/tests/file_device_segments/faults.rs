//! Injected faults and crashes: failed fsyncs, no space, short writes, power failures at every
//! operation.

use super::*;

#[test]
fn failed_fsync_is_returned_and_latched() {
    let env = Env::fault();
    let cfg = env.cfg(0, 4096);
    let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
    log.write(0, &pattern(0, 1000)).unwrap();
    log.sync().unwrap();
    env.ffs()
        .inject_sync_fault(SyncFault::next().on_paths("s000-"));
    log.write(1000, &pattern(1000, 1000)).unwrap();
    let e = log.sync().unwrap_err();
    assert!(
        matches!(
            &e,
            WalError::Io {
                op: "fdatasync",
                ..
            }
        ),
        "{e}"
    );
    // The fault was one-shot, but the log does not pretend a retry fixed anything.
    assert!(log.sync().is_err());
    assert!(log.write(2000, &[1; 10]).is_err());
    assert!(log.failure().is_some());
    // After a crash the bytes synced before the failure are intact.
    let crashed = env.crashed(CrashOpts::tear_last(1));
    let log = SegmentLog::open(crashed.fs.clone(), &cfg).unwrap();
    assert_bytes(&read_all(&log, 0, 1000), &pattern(0, 1000), "read back");
}

#[test]
fn sealing_a_segment_failure_is_returned() {
    let env = Env::fault();
    let log = SegmentLog::open(env.fs.clone(), &env.cfg(0, 4096)).unwrap();
    log.write(0, &pattern(0, 4000)).unwrap();
    env.ffs()
        .inject_sync_fault(SyncFault::next().on_paths("s000-0000000000000000"));
    // Crossing into the next segment seals the first one: that fdatasync fails.
    assert!(log.write(4000, &pattern(4000, 200)).is_err());
    assert!(log.sync().is_err());
}

#[test]
fn no_space_on_preallocation_then_space_returns() {
    let env = Env::fault();
    let cfg = env.cfg(0, 4096);
    let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
    let used = env.ffs().used_space();
    // Room for two preallocated segments (header + data each) and a little more.
    env.ffs().set_space_limit(Some(used + 2 * 8192 + 100));
    assert_eq!(log.prepare(8192).unwrap(), 8192);
    let e = log.prepare(8193).unwrap_err();
    assert!(matches!(e, WalError::NoSpace { .. }), "{e}");
    assert!(
        !env.fs.exists(&env.dir.join(segment_file_name(0, 8192))),
        "the failed segment is removed"
    );
    // Writes into preallocated segments still work; a write needing segment 3 does not.
    log.write(0, &pattern(0, 8192)).unwrap();
    assert!(matches!(
        log.write(8192, &[1; 10]),
        Err(WalError::NoSpace { .. })
    ));
    log.sync().unwrap();
    env.ffs().set_space_limit(None);
    log.write(8192, &pattern(8192, 100)).unwrap();
    log.sync().unwrap();
    drop(log);
    let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
    assert_bytes(&read_all(&log, 0, 8292), &pattern(0, 8292), "read back");
}

#[test]
fn no_space_without_preallocation_is_retryable() {
    let env = Env::fault();
    let mut cfg = env.cfg(0, 65536);
    cfg.preallocate = false;
    let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
    log.prepare(1).unwrap();
    let used = env.ffs().used_space();
    env.ffs().set_space_limit(Some(used + 3000));
    log.write(0, &pattern(0, 2000)).unwrap();
    assert!(matches!(
        log.write(2000, &pattern(2000, 2000)),
        Err(WalError::NoSpace { .. })
    ));
    env.ffs().set_space_limit(None);
    log.write(2000, &pattern(2000, 2000)).unwrap();
    log.sync().unwrap();
    assert_bytes(&read_all(&log, 0, 4000), &pattern(0, 4000), "read back");
}

#[test]
fn short_writes_are_completed() {
    let env = Env::fault();
    env.ffs().set_short_writes(Some(11));
    let cfg = env.cfg(0, 8192);
    let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
    log.write(0, &pattern(0, 30_000)).unwrap();
    log.sync().unwrap();
    assert!(env.ffs().stats().short_writes > 0);
    drop(log);
    let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
    assert_bytes(&read_all(&log, 0, 30_000), &pattern(0, 30_000), "read back");
}

#[test]
fn crash_keeps_everything_before_the_last_sync() {
    for seed in 0..12u64 {
        for opts in [
            CrashOpts::drop_unsynced(),
            CrashOpts::tear_last(seed),
            CrashOpts::keep_subset(seed),
        ] {
            let env = Env::fault();
            let cfg = env.cfg(0, 4096);
            let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
            log.write(0, &pattern(0, 6000)).unwrap();
            log.sync().unwrap();
            // Unsynced: the rest of segment 1 and into segment 2 (which seals segment 1).
            log.write(6000, &pattern(6000, 1500)).unwrap();
            log.write(7500, &pattern(7500, 3000)).unwrap();
            log.write(10_500, &pattern(10_500, 700)).unwrap();
            let crashed = env.crashed(opts);
            let log = SegmentLog::open(crashed.fs.clone(), &cfg).unwrap();
            let limit = log.limit();
            assert!(limit >= 6000, "{opts:?}: limit {limit}");
            let got = read_all(&log, 0, limit as usize);
            assert_bytes(&got[..6000], &pattern(0, 6000), &format!("{opts:?}"));
            // Whatever survived beyond is either the written bytes or zeros.
            let want = pattern(0, 11_200);
            for (i, &b) in got.iter().enumerate().skip(6000) {
                assert!(b == 0 || b == want[i], "{opts:?}: byte {i}");
            }
            // Segment 1 was sealed before segment 2 got a byte.
            if log.segments().len() == 3 && log.sealed() == 8192 {
                assert_bytes(&got[..8192], &want[..8192], &format!("{opts:?}"));
            }
        }
    }
}

/// Crash after every single file-system operation of a run that creates segments, writes,
/// syncs, truncates and releases: opening always works and every synced byte is there.
#[test]
fn crash_at_every_operation() {
    let env = Env::fault();
    let cfg = env.cfg(2, 4096);
    let mut synced_at: Vec<(usize, u64)> = Vec::new(); // (op count, synced LSN)
    {
        let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
        let mut lsn = 0u64;
        for (i, n) in [3000usize, 3000, 5000, 100, 9000].into_iter().enumerate() {
            log.write(lsn, &pattern(lsn, n)).unwrap();
            lsn += n as u64;
            if i % 2 == 0 {
                log.prepare(lsn + 4096).unwrap();
            }
            log.sync().unwrap();
            synced_at.push((env.ffs().op_count(), lsn));
        }
        log.remove_before(4096 * 2).unwrap();
        synced_at.push((env.ffs().op_count(), lsn));
        // From the first operation of the cut on, only the prefix before it is promised.
        synced_at.push((env.ffs().op_count() + 1, lsn - 2000));
        log.reset_tail(lsn - 2000).unwrap();
    }
    let ops = env.ffs().op_count();
    assert!(
        env.ffs()
            .ops()
            .iter()
            .any(|o| matches!(o, FsOp::Remove { .. }))
    );
    for k in 0..=ops {
        for opts in [
            CrashOpts::drop_unsynced(),
            CrashOpts::tear_last(k as u64),
            CrashOpts::keep_subset(k as u64),
        ] {
            let fs = env.ffs().crash_after(k, opts).unwrap();
            let e2 = env.with_fs(fs);
            let log = match SegmentLog::open(e2.fs.clone(), &cfg) {
                Ok(l) => l,
                Err(e) => panic!("open after {k} ops ({opts:?}): {e}"),
            };
            let durable = synced_at
                .iter()
                .filter(|(c, _)| *c <= k)
                .map(|(_, l)| *l)
                .next_back()
                .unwrap_or(0);
            let start = log.start();
            assert!(
                log.limit() >= durable,
                "after {k} ops: limit {} < synced {durable}",
                log.limit()
            );
            if durable > start {
                let got = read_all(&log, start, (durable - start) as usize);
                assert_bytes(
                    &got,
                    &pattern(start, (durable - start) as usize),
                    &format!("after {k} ops ({opts:?})"),
                );
            }
            // Everything before the sealed point is exactly what was written.
            let sealed = log.sealed();
            if sealed > start {
                let got = read_all(&log, start, (sealed - start) as usize);
                assert_bytes(
                    &got,
                    &pattern(start, (sealed - start) as usize),
                    &format!("sealed part after {k} ops ({opts:?})"),
                );
            }
            // A reopened log can always be appended to.
            let end = log.limit();
            log.reset_tail(end).unwrap();
            log.write(end, &[9; 10]).unwrap();
            log.sync().unwrap();
        }
    }
}
