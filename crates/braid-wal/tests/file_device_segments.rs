//! SegmentLog: layout, reopen checks, torn and damaged headers, faults, crashes, truncation.
#![allow(clippy::unwrap_used, clippy::expect_used)]


use std::path::Path;
use std::sync::Arc;

use braid_wal::WalError;
use braid_wal::device::file::{SEGMENT_HEADER, SegmentLog, meta_file_name, segment_file_name};
use braid_wal::fs::{CrashOpts, FaultFs, Fs, FsOp, OpenOpts, SyncFault};
use braid_wal::scan::StreamSource;
use crate::file_device_common::{Env, decode_from, encode_record};

fn pattern(from: u64, len: usize) -> Vec<u8> {
    (0..len as u64)
        .map(|i| ((from + i) * 131 % 251) as u8 + 1)
        .collect()
}

/// Compare byte strings, reporting the first difference instead of dumping both.
#[track_caller]
fn assert_bytes(got: &[u8], want: &[u8], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    if let Some(i) = got.iter().zip(want).position(|(a, b)| a != b) {
        panic!(
            "{what}: first difference at byte {i}: {} != {}",
            got[i], want[i]
        );
    }
}

fn read_all(log: &SegmentLog, from: u64, len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len];
    assert_eq!(log.read_at(from, &mut b).unwrap(), len);
    b
}

/// Overwrite bytes of a file through the Fs seam (durably).
fn poke(env: &Env, path: &Path, off: u64, bytes: &[u8]) {
    let f = env.fs.open(path, OpenOpts::existing()).unwrap();
    f.write_all_at(off, bytes).unwrap();
    f.sync_data().unwrap();
}

#[test]
fn round_trip_across_segments() {
    for env in Env::both() {
        for seg in [4096u64, 8192, 65536] {
            let cfg = env.cfg(1, seg);
            let total = (seg * 3 + 1000) as usize;
            {
                let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
                assert_eq!((log.start(), log.limit(), log.sealed()), (0, 0, 0));
                // Uneven pieces, some crossing segment boundaries.
                let mut at = 0usize;
                let mut step = 777usize;
                while at < total {
                    let n = step.min(total - at);
                    log.write(at as u64, &pattern(at as u64, n)).unwrap();
                    at += n;
                    step = step * 3 % 5000 + 1;
                }
                log.sync().unwrap();
                assert_eq!(log.limit(), total as u64);
            }
            let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
            assert_eq!(log.start(), 0, "{}", env.name);
            assert_eq!(log.limit(), total as u64, "{}", env.name);
            assert_eq!(
                log.sealed(),
                3 * seg,
                "every segment before the last is sealed"
            );
            assert_bytes(&read_all(&log, 0, total), &pattern(0, total), "read back");
            // Reads across a boundary and at the limit.
            let mut b = vec![0u8; 100];
            assert_eq!(log.read_at(seg - 50, &mut b).unwrap(), 100);
            assert_bytes(&b, &pattern(seg - 50, 100), "across a boundary");
            assert_eq!(log.read_at(total as u64 - 10, &mut b).unwrap(), 10);
            assert_eq!(log.read_at(total as u64, &mut b).unwrap(), 0);
            let names: Vec<String> = log
                .segments()
                .iter()
                .map(|(_, p)| p.file_name().unwrap().to_str().unwrap().to_string())
                .collect();
            let expect: Vec<String> = (0..4).map(|k| segment_file_name(1, k * seg)).collect();
            assert_eq!(names, expect);
            assert_eq!(
                log.locate(seg + 5),
                (
                    env.dir
                        .join(segment_file_name(1, seg))
                        .display()
                        .to_string(),
                    SEGMENT_HEADER + 5
                )
            );
            assert!(env.fs.exists(&env.dir.join(meta_file_name(1))));
            // Salts differ per segment and are the same after reopening.
            assert_ne!(log.salt_for(0), log.salt_for(seg));
            assert_eq!(log.salt_for(seg + 1), log.salt_for(seg));
            drop(log);
            // Another segment size on the next run needs another directory.
            for (_, p) in SegmentLog::open(env.fs.clone(), &cfg).unwrap().segments() {
                env.fs.remove_file(&p).unwrap();
            }
            env.fs
                .remove_file(&env.dir.join(meta_file_name(1)))
                .unwrap();
        }
    }
}

#[test]
fn streams_share_a_directory() {
    for env in Env::both() {
        let a = SegmentLog::open(env.fs.clone(), &env.cfg(1, 4096)).unwrap();
        let b = SegmentLog::open(env.fs.clone(), &env.cfg(2, 8192)).unwrap();
        a.write(0, &pattern(0, 5000)).unwrap();
        b.write(0, &pattern(9, 9000)).unwrap();
        a.sync().unwrap();
        b.sync().unwrap();
        assert_ne!(a.salt(), b.salt());
        drop((a, b));
        let a = SegmentLog::open(env.fs.clone(), &env.cfg(1, 4096)).unwrap();
        let b = SegmentLog::open(env.fs.clone(), &env.cfg(2, 8192)).unwrap();
        assert_bytes(&read_all(&a, 0, 5000), &pattern(0, 5000), "read back");
        assert_bytes(&read_all(&b, 0, 9000), &pattern(9, 9000), "read back");
        assert_eq!(a.segments().len(), 2);
        assert_eq!(b.segments().len(), 2);
    }
}

#[test]
fn records_spanning_segments_decode_after_reopen() {
    for env in Env::both() {
        let cfg = env.cfg(0, 4096);
        let mut expect = Vec::new();
        {
            let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
            let mut lsn = 0;
            for txn in 1..=40u64 {
                let rec = encode_record(&log, lsn, txn, (txn as usize * 97) % 1500 + 10);
                log.write(lsn, &rec).unwrap();
                expect.push((lsn, txn));
                lsn += rec.len() as u64;
            }
            log.sync().unwrap();
        }
        let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
        let (got, end) = decode_from(&log, 0);
        assert_eq!(got, expect);
        assert_eq!(end, log.limit());
        let spans = got
            .windows(2)
            .filter(|w| w[0].0 / 4096 != (w[1].0 - 1) / 4096)
            .count();
        assert!(spans >= 3, "records span segments: {spans}");
    }
}

#[test]
fn other_segment_size_is_refused() {
    for env in Env::both() {
        let log = SegmentLog::open(env.fs.clone(), &env.cfg(3, 8192)).unwrap();
        log.write(0, &[1; 100]).unwrap();
        log.sync().unwrap();
        drop(log);
        match SegmentLog::open(env.fs.clone(), &env.cfg(3, 4096)) {
            Err(WalError::BadSegment { file, reason }) => {
                assert!(file.ends_with("s003.meta"), "{file}");
                assert!(
                    reason.contains("8192") && reason.contains("4096"),
                    "{reason}"
                );
            }
            other => panic!("expected BadSegment, got {:?}", other.map(|_| ())),
        }
        assert!(matches!(
            SegmentLog::open(env.fs.clone(), &env.cfg(3, 1000)),
            Err(WalError::Config(_))
        ));
        SegmentLog::open(env.fs.clone(), &env.cfg(3, 8192)).unwrap();
    }
}

#[test]
fn damaged_meta_or_missing_meta_is_refused() {
    for env in Env::both() {
        let log = SegmentLog::open(env.fs.clone(), &env.cfg(0, 4096)).unwrap();
        log.write(0, &[1; 10]).unwrap();
        log.sync().unwrap();
        drop(log);
        let meta = env.dir.join(meta_file_name(0));
        poke(&env, &meta, 17, &[0xAA]);
        let e = SegmentLog::open(env.fs.clone(), &env.cfg(0, 4096))
            .err()
            .unwrap();
        assert!(
            matches!(&e, WalError::BadSegment { file, .. } if file.ends_with("s000.meta")),
            "{e}"
        );
        env.fs.remove_file(&meta).unwrap();
        let e = SegmentLog::open(env.fs.clone(), &env.cfg(0, 4096))
            .err()
            .unwrap();
        assert!(e.to_string().contains("missing"), "{e}");
    }
}

#[test]
fn torn_header_at_the_end_is_discarded() {
    for env in Env::both() {
        for how in ["garbled", "short", "empty"] {
            let cfg = env.cfg(4, 4096);
            let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
            log.write(0, &pattern(0, 5000)).unwrap();
            log.sync().unwrap();
            // A third segment created ahead of the data, then torn.
            assert_eq!(log.prepare(3 * 4096).unwrap(), 3 * 4096);
            let torn = env.dir.join(segment_file_name(4, 8192));
            drop(log);
            match how {
                "garbled" => poke(&env, &torn, 20, &[0x5A; 8]),
                "short" => {
                    let f = env.fs.open(&torn, OpenOpts::existing()).unwrap();
                    f.set_len(30).unwrap();
                    f.sync_data().unwrap();
                }
                _ => {
                    let f = env.fs.open(&torn, OpenOpts::existing()).unwrap();
                    f.set_len(0).unwrap();
                    f.sync_data().unwrap();
                }
            }
            let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
            assert!(!env.fs.exists(&torn), "{how}: the torn segment is removed");
            assert_eq!(log.segments().len(), 2);
            assert_eq!(log.limit(), 5000);
            assert_bytes(&read_all(&log, 0, 5000), &pattern(0, 5000), "read back");
            // It is created again when needed.
            log.write(5000, &pattern(5000, 5000)).unwrap();
            log.sync().unwrap();
            drop(log);
            let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
            assert_bytes(&read_all(&log, 0, 10_000), &pattern(0, 10_000), "read back");
            for (_, p) in log.segments() {
                env.fs.remove_file(&p).unwrap();
            }
            env.fs
                .remove_file(&env.dir.join(meta_file_name(4)))
                .unwrap();
        }
    }
}

#[test]
fn damaged_header_in_the_middle_or_with_data_is_refused() {
    for env in Env::both() {
        let cfg = env.cfg(5, 4096);
        let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
        log.write(0, &pattern(0, 10_000)).unwrap();
        log.sync().unwrap();
        drop(log);
        let mid = env.dir.join(segment_file_name(5, 4096));
        poke(&env, &mid, 17, &[0xFF]);
        match SegmentLog::open(env.fs.clone(), &cfg) {
            Err(WalError::BadSegment { file, .. }) => {
                assert!(file.ends_with(&segment_file_name(5, 4096)), "{file}")
            }
            other => panic!("expected BadSegment, got {:?}", other.map(|_| ())),
        }
        // Repair it; damage the last one, which holds data: refused as well.
        let hdr = {
            let f = env
                .fs
                .open(&env.dir.join(segment_file_name(5, 0)), OpenOpts::existing())
                .unwrap();
            let mut h = vec![0u8; 40];
            f.read_at(0, &mut h).unwrap();
            h
        };
        assert_eq!(&hdr[..8], b"BRAIDSEG");
        let last = env.dir.join(segment_file_name(5, 8192));
        poke(&env, &last, 0, b"XXXX");
        let e = SegmentLog::open(env.fs.clone(), &cfg).err().unwrap();
        assert!(
            matches!(&e, WalError::BadSegment { file, .. } if file.ends_with(&segment_file_name(5, 4096))),
            "{e}"
        );
    }
}

#[test]
fn damaged_last_header_with_data_is_refused() {
    for env in Env::both() {
        let cfg = env.cfg(6, 4096);
        let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
        log.write(0, &pattern(0, 6000)).unwrap();
        log.sync().unwrap();
        drop(log);
        let last = env.dir.join(segment_file_name(6, 4096));
        poke(&env, &last, 30, &[0x77]);
        let e = SegmentLog::open(env.fs.clone(), &cfg).err().unwrap();
        assert!(
            matches!(&e, WalError::BadSegment { file, reason } if file.ends_with(&segment_file_name(6, 4096)) && reason.contains("data")),
            "{e}"
        );
        assert!(env.fs.exists(&last), "a segment with data is never removed");
    }
}

#[test]
fn foreign_segment_and_gap_are_refused() {
    for env in Env::both() {
        let other_dir = env.dir.join("other");
        let mut ocfg = env.cfg(7, 4096);
        ocfg.dir = other_dir.clone();
        let other = SegmentLog::open(env.fs.clone(), &ocfg).unwrap();
        other.write(0, &pattern(0, 9000)).unwrap();
        other.sync().unwrap();
        let cfg = env.cfg(7, 4096);
        let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
        log.write(0, &pattern(0, 5000)).unwrap();
        log.sync().unwrap();
        drop(log);
        // Copy the other incarnation's third segment in as ours: different salt.
        let src = env
            .fs
            .open(
                &other_dir.join(segment_file_name(7, 8192)),
                OpenOpts::existing(),
            )
            .unwrap();
        let mut bytes = vec![0u8; src.len().unwrap() as usize];
        src.read_at(0, &mut bytes).unwrap();
        let dst_path = env.dir.join(segment_file_name(7, 8192));
        let dst = env.fs.open(&dst_path, OpenOpts::create()).unwrap();
        dst.write_all_at(0, &bytes).unwrap();
        dst.sync_data().unwrap();
        env.fs.sync_dir(&env.dir).unwrap();
        let e = SegmentLog::open(env.fs.clone(), &cfg).err().unwrap();
        assert!(
            matches!(&e, WalError::BadSegment { file, reason } if file.ends_with(&segment_file_name(7, 8192)) && reason.contains("salt")),
            "{e}"
        );
        env.fs.remove_file(&dst_path).unwrap();
        // A gap: segment 1 missing, segment 2 present.
        let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
        log.write(5000, &pattern(5000, 5000)).unwrap();
        log.sync().unwrap();
        drop(log);
        env.fs
            .remove_file(&env.dir.join(segment_file_name(7, 4096)))
            .unwrap();
        let e = SegmentLog::open(env.fs.clone(), &cfg).err().unwrap();
        assert!(e.to_string().contains("missing"), "{e}");
    }
}

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
        assert_eq!(log.limit(), 8000);
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
        assert_eq!(log.limit(), 14_000);
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
            5000,
            "empty segments created ahead do not extend the extent"
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
