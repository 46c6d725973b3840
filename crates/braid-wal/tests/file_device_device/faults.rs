//! Injected faults and crashes: failed fsyncs, no space, short writes, a crash during a
//! flush.

use super::*;

#[test]
fn failed_fsync_is_returned_and_nothing_after_it_is_claimed() {
    let env = Env::fault();
    let cfg = env.cfg(0, 8192);
    let dev = open(&env, &cfg);
    let mut w = Writer::new(&dev, 0);
    write_batch(&mut w, 1, 10, 100);
    let good = w.expect.clone();
    env.ffs()
        .inject_sync_fault(SyncFault::next().on_paths("s000-"));
    for txn in 11..=15 {
        w.append(txn, 100).unwrap();
    }
    let e = w.flush().unwrap_err();
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
    // No retry claims success, although the injected fault was one-shot.
    assert!(dev.flush(w.flushed, w.filled).is_err());
    assert!(matches!(
        dev.flush(w.flushed, w.filled),
        Err(WalError::Io { .. })
    ));
    let crashed = env.crashed(CrashOpts::drop_unsynced());
    let dev = open(&crashed, &cfg);
    assert_eq!(decode_from(&dev, 0).0, good);
}

#[test]
fn no_space_for_a_segment_then_space_returns() {
    let env = Env::fault();
    let cfg = env.cfg(0, 4096);
    let dev = open(&env, &cfg);
    let base = env.ffs().used_space();
    // Room for three preallocated segments (each 4 KiB header + 4 KiB data).
    env.ffs().set_space_limit(Some(base + 3 * 8192));
    let mut w = Writer::new(&dev, 0);
    let mut txn = 0;
    let err = loop {
        txn += 1;
        match w.append(txn, 500) {
            Ok(()) => {}
            Err(e) => break e,
        }
        assert!(txn < 100, "NoSpace expected");
    };
    assert!(matches!(err, WalError::NoSpace { .. }), "{err}");
    assert!(w.filled <= 3 * 4096);
    // Flushing what was filled works: those segments were reserved.
    w.flush().unwrap();
    env.ffs().set_space_limit(None);
    w.append(txn, 500).unwrap();
    for t in txn + 1..txn + 20 {
        w.append(t, 500).unwrap();
    }
    w.flush().unwrap();
    let expect = w.expect.clone();
    drop(dev);
    let dev = open(&env, &cfg);
    assert_eq!(decode_from(&dev, 0).0, expect);
}

#[test]
fn no_space_on_flush_is_retryable() {
    let env = Env::fault();
    let mut cfg = env.cfg(0, 65536);
    cfg.preallocate = false;
    let dev = open(&env, &cfg);
    let mut w = Writer::new(&dev, 0);
    w.append(1, 100).unwrap();
    w.flush().unwrap();
    env.ffs()
        .set_space_limit(Some(env.ffs().used_space() + 1000));
    for txn in 2..=10 {
        w.append(txn, 300).unwrap();
    }
    let e = dev.flush(w.flushed, w.filled).unwrap_err();
    assert!(matches!(e, WalError::NoSpace { .. }), "{e}");
    assert_eq!(
        dev.reusable(),
        w.flushed,
        "the ring keeps the unflushed bytes"
    );
    env.ffs().set_space_limit(None);
    w.flush().unwrap();
    let expect = w.expect.clone();
    drop(dev);
    let dev = open(&env, &cfg);
    assert_eq!(decode_from(&dev, 0).0, expect);
}

#[test]
fn short_writes_are_handled() {
    let env = Env::fault();
    env.ffs().set_short_writes(Some(99));
    let cfg = env.cfg(0, 4096);
    let dev = open(&env, &cfg);
    let mut w = Writer::new(&dev, 0);
    write_batch(&mut w, 1, 50, 5);
    let expect = w.expect.clone();
    drop(dev);
    assert!(env.ffs().stats().short_writes > 0);
    let dev = open(&env, &cfg);
    assert_eq!(decode_from(&dev, 0).0, expect);
}

/// Crash after every file-system operation of a flush: the records of earlier flushes are
/// intact and whatever decodes is a prefix of what was written.
#[test]
fn crash_during_flush_keeps_earlier_flushes() {
    for direct in [false, true] {
        let env = Env::fault();
        let mut cfg = env.cfg(0, 4096);
        cfg.direct = direct;
        let dev = open(&env, &cfg);
        let mut w = Writer::new(&dev, 0);
        write_batch(&mut w, 1, 12, 100);
        let before = w.expect.len();
        let ops_before = env.ffs().op_count();
        for txn in 13..=30 {
            w.append(txn, size_of(txn) / 2).unwrap();
        }
        w.flush().unwrap();
        let ops_after = env.ffs().op_count();
        let all = w.expect.clone();
        drop(dev);
        for k in ops_before..=ops_after {
            for opts in [
                CrashOpts::drop_unsynced(),
                CrashOpts::tear_last(k as u64),
                CrashOpts::keep_subset(k as u64),
            ] {
                let e2 = env.with_fs(env.ffs().crash_after(k, opts).unwrap());
                let dev = FileDevice::open(e2.fs.clone(), cfg.clone()).unwrap_or_else(|e| {
                    panic!("direct {direct}, crash after {k} ops ({opts:?}): {e}")
                });
                let (got, _) = decode_from(&dev, 0);
                assert!(
                    got.len() >= before,
                    "direct {direct}, after {k} ops ({opts:?}): {} records",
                    got.len()
                );
                assert_eq!(
                    got[..],
                    all[..got.len()],
                    "direct {direct}, after {k} ops ({opts:?})"
                );
                if k == ops_after {
                    assert_eq!(got, all);
                }
            }
        }
    }
}
