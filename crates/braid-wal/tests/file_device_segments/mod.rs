//! SegmentLog: layout, reopen checks, torn and damaged headers, faults, crashes, truncation.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use crate::integration::file_device_common::{Env, decode_from, encode_record};
use braid_wal::device::file::{SEGMENT_HEADER, SegmentLog, meta_file_name, segment_file_name};
use braid_wal::fs::{CrashOpts, FaultFs, Fs, FsOp, OpenOpts, SyncFault};
use braid_wal::scan::StreamSource;
use braid_wal::{SegmentDamage, WalError};

mod damage;
mod faults;
mod truncation;

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

/// Damage the byte at `off` for sure: write its complement (a fixed value would leave it
/// unchanged when the byte, say of a random salt, already had that value).
fn flip(env: &Env, path: &Path, off: u64) {
    let f = env.fs.open(path, OpenOpts::existing()).unwrap();
    let mut b = [0u8; 1];
    assert_eq!(f.read_at(off, &mut b).unwrap(), 1);
    poke(env, path, off, &[!b[0]]);
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
            // The last segment is preallocated to its full size.
            assert_eq!(
                log.limit(),
                (total as u64).div_ceil(seg) * seg,
                "{}",
                env.name
            );
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
            // Past the data, the preallocated segment reads as zeros up to its end.
            let end = (total as u64).div_ceil(seg) * seg;
            assert_eq!(log.read_at(total as u64 - 10, &mut b).unwrap(), 100);
            assert_bytes(&b[..10], &pattern(total as u64 - 10, 10), "at the end");
            assert!(b[10..].iter().all(|&x| x == 0));
            assert_eq!(log.read_at(end - 10, &mut b).unwrap(), 10);
            assert_eq!(log.read_at(end, &mut b).unwrap(), 0);
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
        // The scan ends at the zeros of the preallocated (full-size) last segment.
        assert!(end <= log.limit() && log.limit() <= end.div_ceil(4096) * 4096);
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
            Err(WalError::BadSegment { file, damage }) => {
                assert!(file.ends_with("s003.meta"), "{file}");
                assert_eq!(
                    damage,
                    SegmentDamage::SegmentSize {
                        created: 8192,
                        configured: 4096
                    }
                );
            }
            other => panic!("expected BadSegment, got {:?}", other.map(|_| ())),
        }
        assert!(matches!(
            SegmentLog::open(env.fs.clone(), &env.cfg(3, 1000)),
            Err(WalError::BadSize { .. })
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
        flip(&env, &meta, 17);
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
