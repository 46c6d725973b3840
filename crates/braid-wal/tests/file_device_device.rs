//! FileDevice: the Device contract on segment files, on the real file system and on FaultFs.
#![allow(clippy::unwrap_used, clippy::expect_used)]


use std::sync::Arc;

use braid_wal::device::Device;
use braid_wal::device::file::{FileDevice, FileDeviceConfig, segment_file_name};
use braid_wal::fs::{CrashOpts, SyncFault};
use braid_wal::scan::StreamSource;
use braid_wal::scan::{EndKind, ScanMode};
use braid_wal::{Lsn, WalError};
use crate::file_device_common::{Env, decode_from, encode_record, encode_record_synced, scan};

/// A single-threaded stand-in for a stream: reserve, fill, flush.
struct Writer<'a> {
    dev: &'a FileDevice,
    filled: Lsn,
    flushed: Lsn,
    expect: Vec<(Lsn, u64)>,
}

impl<'a> Writer<'a> {
    fn new(dev: &'a FileDevice, at: Lsn) -> Writer<'a> {
        Writer {
            dev,
            filled: at,
            flushed: at,
            expect: Vec::new(),
        }
    }

    fn append(&mut self, txn: u64, len: usize) -> Result<(), WalError> {
        let rec = encode_record_synced(self.dev, self.filled, self.flushed, txn, len);
        let end = self.filled + rec.len() as u64;
        if end > self.dev.reusable() + self.dev.capacity() {
            self.flush()?;
        }
        assert!(
            end <= self.dev.reusable() + self.dev.capacity(),
            "ring space after a flush"
        );
        self.dev.ensure_space(end)?;
        self.dev.fill(self.filled, &rec);
        self.expect.push((self.filled, txn));
        self.filled = end;
        Ok(())
    }

    fn flush(&mut self) -> Result<(), WalError> {
        self.dev.flush(self.flushed, self.filled)?;
        self.flushed = self.filled;
        Ok(())
    }
}

fn size_of(txn: u64) -> usize {
    (txn as usize * 613) % 2900 + 1
}

fn open(env: &Env, cfg: &FileDeviceConfig) -> FileDevice {
    FileDevice::open(env.fs.clone(), cfg.clone()).unwrap()
}

/// Write `n` records starting at txn `first`, flushing every `every` records and at the end.
fn write_batch(w: &mut Writer<'_>, first: u64, n: u64, every: u64) {
    for txn in first..first + n {
        w.append(txn, size_of(txn)).unwrap();
        if txn % every == 0 {
            w.flush().unwrap();
        }
    }
    w.flush().unwrap();
}

#[test]
fn round_trip_across_small_segments() {
    for env in Env::both() {
        for seg in [4096u64, 16384, 65536] {
            let mut cfg = env.cfg(seg as u32, seg);
            cfg.buffer_size = 12 << 10;
            let expect = {
                let dev = open(&env, &cfg);
                assert_eq!(dev.info().kind, "file");
                assert!(!dev.durable_on_fill());
                assert_eq!(dev.capacity(), 12 << 10);
                let mut w = Writer::new(&dev, 0);
                write_batch(&mut w, 1, 120, 7);
                assert_eq!(dev.reusable(), w.filled);
                assert_eq!(dev.limit(), w.filled);
                w.expect
            };
            let dev = open(&env, &cfg);
            let (got, end) = decode_from(&dev, dev.start());
            assert_eq!(got, expect, "{} seg {seg}", env.name);
            assert_eq!(end, dev.limit());
            assert!(dev.segment_log().segments().len() as u64 >= end / seg);
            // Appending after reopening continues the stream.
            dev.reset_tail(end).unwrap();
            let mut w = Writer::new(&dev, end);
            write_batch(&mut w, 1000, 30, 4);
            let mut all = expect.clone();
            all.extend(w.expect);
            drop(dev);
            let dev = open(&env, &cfg);
            assert_eq!(decode_from(&dev, 0).0, all, "{} seg {seg}", env.name);
        }
    }
}

#[test]
fn concurrent_fills_of_disjoint_ranges() {
    let env = Env::fault();
    let mut cfg = env.cfg(0, 8192);
    cfg.buffer_size = 64 << 10;
    let dev = open(&env, &cfg);
    // Reserve ranges up front (what a stream does), fill them from several threads.
    let mut plan = Vec::new();
    let mut lsn = 0;
    for txn in 1..=40u64 {
        let len = encode_record(&dev, lsn, txn, size_of(txn) / 4).len() as u64;
        plan.push((lsn, txn));
        lsn += len;
    }
    assert!(lsn <= dev.capacity());
    dev.ensure_space(lsn).unwrap();
    std::thread::scope(|s| {
        for t in 0..4 {
            let plan = &plan;
            let dev = &dev;
            s.spawn(move || {
                for (i, &(at, txn)) in plan.iter().enumerate() {
                    if i % 4 == t {
                        dev.fill(at, &encode_record(dev, at, txn, size_of(txn) / 4));
                    }
                }
            });
        }
    });
    dev.flush(0, lsn).unwrap();
    drop(dev);
    let dev = open(&env, &cfg);
    assert_eq!(decode_from(&dev, 0).0, plan);
}

#[test]
fn direct_io_round_trip_on_the_root_file_system() {
    let env = Env::real_on_disk();
    let mut cfg = env.cfg(0, 16384);
    cfg.direct = true;
    let dev = match FileDevice::open(env.fs.clone(), cfg.clone()) {
        Ok(d) => d,
        Err(WalError::Config(m)) if m.contains("O_DIRECT") => {
            println!("note: skipping the O_DIRECT test: {m}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    direct_workload(&env, &cfg, dev);
}

#[test]
fn direct_io_round_trip_on_fault_fs() {
    // FaultFs checks the alignment of every O_DIRECT transfer.
    for short in [None, Some(5)] {
        let env = Env::fault();
        env.ffs().set_short_writes(short);
        let mut cfg = env.cfg(0, 8192);
        cfg.direct = true;
        let dev = open(&env, &cfg);
        direct_workload(&env, &cfg, dev);
    }
}

fn direct_workload(env: &Env, cfg: &FileDeviceConfig, dev: FileDevice) {
    let mut w = Writer::new(&dev, 0);
    for txn in 1..=60u64 {
        w.append(txn, size_of(txn)).unwrap();
        if txn % 3 == 0 {
            w.flush().unwrap();
            // The partial last block stays in the ring: it is written again next time.
            assert_eq!(dev.reusable(), w.filled / 4096 * 4096);
        }
    }
    w.flush().unwrap();
    let expect = w.expect.clone();
    let end = w.filled;
    drop(dev);
    // Readable with and without O_DIRECT.
    let mut plain = cfg.clone();
    plain.direct = false;
    for c in [&plain, cfg] {
        let dev = open(env, c);
        let (got, e) = decode_from(&dev, 0);
        assert_eq!(got, expect);
        assert_eq!(e, end);
    }
    // Reopen with O_DIRECT, cut at the recovered end (unaligned), append, reopen.
    let dev = open(env, cfg);
    dev.reset_tail(end).unwrap();
    assert_eq!(dev.reusable(), end / 4096 * 4096);
    let mut w = Writer::new(&dev, end);
    write_batch(&mut w, 500, 25, 2);
    let mut all = expect;
    all.extend(w.expect);
    drop(dev);
    let dev = open(env, cfg);
    assert_eq!(decode_from(&dev, 0).0, all);
}

#[test]
fn direct_io_refused_is_a_config_error() {
    let env = Env::fault();
    env.ffs().set_direct_refused(true);
    let mut cfg = env.cfg(0, 8192);
    cfg.direct = true;
    match FileDevice::open(env.fs.clone(), cfg.clone()) {
        Err(WalError::Config(m)) => assert!(m.contains("O_DIRECT"), "{m}"),
        other => panic!("expected a Config error, got {:?}", other.map(|_| ())),
    }
    cfg.direct = false;
    open(&env, &cfg);
}

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

#[test]
fn reset_tail_removes_stale_records_for_good() {
    for env in Env::both() {
        for direct in [false, true] {
            if direct && env.name == "real" {
                continue; // tempdir may be tmpfs; the direct path is covered on FaultFs and disk
            }
            let mut cfg = env.cfg(u32::from(direct), 4096);
            cfg.direct = direct;
            let dev = open(&env, &cfg);
            let mut w = Writer::new(&dev, 0);
            write_batch(&mut w, 1, 30, 6);
            let full_end = w.filled;
            // Recovery decided the log ends after record 12 (say txn 13 was torn).
            let (end, _) = w.expect[12];
            let kept = w.expect[..12].to_vec();
            dev.reset_tail(end).unwrap();
            assert_eq!(dev.limit(), end);
            assert_eq!(decode_from(&dev, 0).0, kept);
            for k in (end / 4096 + 1)..=(full_end / 4096) {
                assert!(
                    !env.fs
                        .exists(&env.dir.join(segment_file_name(cfg.stream, k * 4096))),
                    "segment {k} removed"
                );
            }
            drop(dev);
            let dev = open(&env, &cfg);
            assert_eq!(dev.limit(), end, "{} direct {direct}", env.name);
            assert_eq!(decode_from(&dev, 0).0, kept);
            // One short record after the cut: the stale ones that followed never come back.
            dev.reset_tail(end).unwrap();
            let mut w = Writer::new(&dev, end);
            w.append(9001, 10).unwrap();
            w.flush().unwrap();
            let (new_end, new) = (w.filled, w.expect);
            drop(dev);
            let dev = open(&env, &cfg);
            let (got, e) = decode_from(&dev, 0);
            let mut want = kept.clone();
            want.extend(new);
            assert_eq!(got, want, "{} direct {direct}", env.name);
            assert!(e >= new_end && e < full_end);
            let mut rest = vec![0u8; (dev.limit() - e) as usize];
            dev.read_at(e, &mut rest).unwrap();
            assert!(
                rest.iter().all(|&b| b == 0),
                "nothing but zeros after the end"
            );
        }
    }
}

#[test]
fn reset_tail_survives_a_crash_of_the_cut() {
    let env = Env::fault();
    let cfg = env.cfg(0, 4096);
    let dev = open(&env, &cfg);
    let mut w = Writer::new(&dev, 0);
    write_batch(&mut w, 1, 30, 6);
    let (end, _) = w.expect[9];
    let kept = w.expect[..9].to_vec();
    let before = env.ffs().op_count();
    dev.reset_tail(end).unwrap();
    let after = env.ffs().op_count();
    drop(dev);
    for k in before..=after {
        for opts in [CrashOpts::drop_unsynced(), CrashOpts::keep_subset(k as u64)] {
            let e2 = env.with_fs(env.ffs().crash_after(k, opts).unwrap());
            let dev = open(&e2, &cfg);
            let (got, _) = decode_from(&dev, 0);
            assert_eq!(got[..9], kept[..], "after {k} ops");
            if k == after {
                assert_eq!(got, kept);
            }
        }
    }
}

#[test]
fn release_removes_whole_segments_before_a_checkpoint() {
    for env in Env::both() {
        let cfg = env.cfg(0, 4096);
        let dev = open(&env, &cfg);
        let mut w = Writer::new(&dev, 0);
        write_batch(&mut w, 1, 40, 5);
        let (cut, _) = *w.expect.iter().find(|(l, _)| *l > 3 * 4096 + 100).unwrap();
        let rest: Vec<_> = w
            .expect
            .iter()
            .copied()
            .filter(|(l, _)| *l >= cut)
            .collect();
        dev.release(cut).unwrap();
        assert_eq!(dev.start(), cut);
        assert!(!env.fs.exists(&env.dir.join(segment_file_name(0, 0))));
        assert!(!env.fs.exists(&env.dir.join(segment_file_name(0, 2 * 4096))));
        assert!(env.fs.exists(&env.dir.join(segment_file_name(0, 3 * 4096))));
        assert_eq!(decode_from(&dev, dev.start()).0, rest);
        drop(dev);
        let dev = open(&env, &cfg);
        assert_eq!(dev.start(), cut);
        assert_eq!(decode_from(&dev, dev.start()).0, rest);
    }
}

#[test]
fn ensure_space_creates_one_segment_ahead_and_is_cheap_when_done() {
    let env = Env::fault();
    let cfg = env.cfg(0, 4096);
    let dev = open(&env, &cfg);
    dev.ensure_space(5000).unwrap();
    for k in 0..3 {
        assert!(
            env.fs.exists(&env.dir.join(segment_file_name(0, k * 4096))),
            "segment {k}"
        );
    }
    assert!(!env.fs.exists(&env.dir.join(segment_file_name(0, 3 * 4096))));
    let ops = env.ffs().op_count();
    for upto in [1, 100, 4096, 8000] {
        dev.ensure_space(upto).unwrap();
    }
    assert_eq!(
        env.ffs().op_count(),
        ops,
        "nothing to do: no file-system operation"
    );
    dev.ensure_space(8193).unwrap();
    assert!(env.fs.exists(&env.dir.join(segment_file_name(0, 3 * 4096))));
}

#[test]
fn device_is_send_sync_and_usable_as_dyn() {
    let env = Env::fault();
    let dev: Arc<dyn Device> = Arc::new(open(&env, &env.cfg(0, 4096)));
    let rec = encode_record(dev.as_ref(), 0, 1, 10);
    dev.ensure_space(rec.len() as u64).unwrap();
    dev.fill(0, &rec);
    dev.flush(0, rec.len() as u64).unwrap();
    assert_eq!(dev.locate(10).1, 4096 + 10);
    assert_ne!(dev.salt_for(0), dev.salt_for(4096));
    assert_eq!(dev.sealed(), 0);
}

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
