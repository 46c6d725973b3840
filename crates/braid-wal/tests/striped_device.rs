//! StripedDevice (RAID-0): records round-trip across units and members, a crash after any
//! file-system operation keeps every flushed record and scans cleanly after the tail is cut,
//! truncation keeps the stream's start, and a log is refused under another shape.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use braid_wal::WalError;
use braid_wal::device::Device;
use braid_wal::device::file::FileDevice;
use braid_wal::device::striped::StripedDevice;
use braid_wal::fs::CrashOpts;
use braid_wal::scan::{EndKind, ScanMode, StreamSource};

use crate::integration::file_device_common::{Env, scan};
use crate::integration::file_device_device::{Writer, size_of};

const UNIT: u64 = 4096;

fn open_shape(env: &Env, members: usize, unit: u64) -> Result<StripedDevice, WalError> {
    let devs = (0..members)
        .map(|k| {
            let mut cfg = env.cfg(0, 16384);
            cfg.dir = env.dir.join(format!("disk-{k}"));
            Ok(Arc::new(FileDevice::open(env.fs.clone(), cfg)?) as Arc<dyn Device>)
        })
        .collect::<Result<Vec<_>, WalError>>()?;
    StripedDevice::open(env.fs.clone(), &env.dir, 0, devs, unit, None)
}

fn open(env: &Env) -> StripedDevice {
    open_shape(env, 3, UNIT).unwrap()
}

#[test]
fn records_round_trip_across_units_and_members() {
    for env in Env::both() {
        let dev = open(&env);
        let mut w = Writer::new(&dev, 0);
        for txn in 1..=200 {
            w.append(txn, size_of(txn)).unwrap();
            if txn % 7 == 0 {
                w.flush().unwrap();
            }
        }
        w.flush().unwrap();
        let expect = w.expect.clone();
        let end = w.filled;
        assert!(end > 20 * UNIT, "the test must cross many units");
        let (got, e) = scan(&dev, ScanMode::Strict).unwrap();
        assert_eq!(got, expect, "{}", env.name);
        assert_eq!((e.kind, e.end), (EndKind::Clean, end), "{}", env.name);
        drop(dev);
        let dev = open(&env);
        let (got, e) = scan(&dev, ScanMode::Strict).unwrap();
        assert_eq!(got, expect, "{}: after reopening", env.name);
        assert_eq!(e.end, end);
    }
}

#[test]
fn a_crash_after_any_operation_keeps_every_flushed_record() {
    let env = Env::fault();
    env.ffs().set_record_ops(true);
    let dev = open(&env);
    let mut w = Writer::new(&dev, 0);
    let mut flushed_at = Vec::new();
    for txn in 1..=40 {
        w.append(txn, size_of(txn) + 1000).unwrap();
        if txn % 4 == 0 {
            w.flush().unwrap();
            flushed_at.push((env.ffs().op_count(), w.expect.len()));
        }
    }
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
            let what = format!("crash after {k} of {ops} ops ({opts:?})");
            let e2 = env.with_fs(env.ffs().crash_after(k, opts).unwrap());
            let dev = open_shape(&e2, 3, UNIT).unwrap_or_else(|e| panic!("{what}: {e}"));
            let (got, end) = scan(&dev, ScanMode::Strict).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(got.len() >= durable, "{what}: {} of {durable}", got.len());
            assert_eq!(got[..], all[..got.len()], "{what}");
            // Recovery cuts the tail on every member and appends; the result scans cleanly.
            dev.reset_tail(end.end).unwrap();
            let mut w2 = Writer::new(&dev, end.end);
            w2.append(777, 5000).unwrap();
            w2.flush().unwrap();
            drop(dev);
            let dev = open(&e2);
            let (again, end2) =
                scan(&dev, ScanMode::Strict).unwrap_or_else(|e| panic!("{what}, rescan: {e}"));
            assert_eq!(again.len(), got.len() + 1, "{what}");
            assert_eq!(end2.kind, EndKind::Clean, "{what}");
        }
    }
}

#[test]
fn truncation_keeps_the_start_at_a_record() {
    let env = Env::fault();
    let dev = open(&env);
    let mut w = Writer::new(&dev, 0);
    for txn in 1..=300 {
        w.append(txn, size_of(txn)).unwrap();
    }
    w.flush().unwrap();
    let (cut_lsn, _) = w.expect[200];
    dev.release(cut_lsn).unwrap();
    assert_eq!(dev.start(), cut_lsn);
    let tail = w.expect[200..].to_vec();
    drop(dev);
    let dev = open(&env);
    assert_eq!(dev.start(), cut_lsn);
    let (got, _) = scan(&dev, ScanMode::Strict).unwrap();
    assert_eq!(got, tail);
}

#[test]
fn another_shape_is_refused_with_what_to_do() {
    let env = Env::fault();
    drop(open(&env));
    let e = open_shape(&env, 4, UNIT).unwrap_err();
    assert!(
        matches!(
            e,
            WalError::WrongLog(braid_wal::WrongLog::Striping {
                members: 3,
                unit_kib: 4,
                ..
            })
        ),
        "{e}"
    );
    assert!(
        e.to_string()
            .contains("striped over 3 devices in units of 4 KiB"),
        "{e}"
    );
    let e = open_shape(&env, 3, 2 * UNIT).unwrap_err();
    assert!(
        matches!(
            e,
            WalError::WrongLog(braid_wal::WrongLog::Striping { members: 3, .. })
        ),
        "{e}"
    );
}

/// A member whose last write was lost while a later member's was kept reads as zeros up to
/// the later bytes; when recovery's valid end lies in that gap, `reset_tail` writes the zeros
/// into the member (before, it refused the end as outside the member's extent).
#[test]
fn reset_tail_into_a_member_that_lost_its_last_write() {
    let env = Env::real();
    let dev = open(&env);
    let data: Vec<u8> = (0..2 * UNIT + 100).map(|i| (i % 251) as u8 + 1).collect();
    dev.fill(0, &data);
    dev.flush(0, data.len() as u64).unwrap();
    drop(dev);
    // Member 1 holds unit 1: zero its second half, as a lost write into the preallocated
    // (full-size) segment would leave it.
    let member = env.dir.join("disk-1");
    let seg = std::fs::read_dir(&member)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "log"))
        .unwrap_or_else(|| panic!("no segment file in {}", member.display()));
    use std::os::unix::fs::FileExt as _;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&seg)
        .unwrap()
        .write_all_at(&[0u8; (UNIT / 2) as usize], 4096 + UNIT / 2)
        .unwrap();
    let dev = open(&env);
    assert!(
        dev.limit() >= 2 * UNIT + 100,
        "member 2's bytes still end the stream"
    );
    let end = UNIT + UNIT / 2 + 8;
    dev.reset_tail(end).unwrap();
    let mut back = vec![0xffu8; (end - UNIT) as usize];
    let n = dev.read_at(UNIT, &mut back).unwrap();
    assert_eq!(n, back.len());
    assert_eq!(
        &back[..(UNIT / 2) as usize],
        &data[UNIT as usize..(UNIT + UNIT / 2) as usize]
    );
    assert!(
        back[(UNIT / 2) as usize..].iter().all(|&b| b == 0),
        "the gap is not zeros"
    );
    drop(dev);
    let dev = open(&env);
    // Member 2's bytes after the end are gone for good (its segment reads as zeros now).
    let mut rest = vec![0xffu8; (2 * UNIT + 100 - end) as usize];
    let n = dev.read_at(end, &mut rest).unwrap();
    assert!(
        rest[..n].iter().all(|&b| b == 0),
        "the tail was not reset durably"
    );
}

#[test]
fn data_end_skips_the_members_reserved_space() {
    // Members with 4 MiB preallocated segments: after a reopen each member's limit is its
    // whole segment, and a scan past the stream's end would read all of it.
    let env = Env::real_on_disk();
    let seg = 4u64 << 20;
    let open = || {
        let devs = (0..2)
            .map(|k| {
                let mut cfg = env.cfg(0, seg);
                cfg.dir = env.dir.join(format!("disk-{k}"));
                Arc::new(FileDevice::open(env.fs.clone(), cfg).unwrap()) as Arc<dyn Device>
            })
            .collect::<Vec<_>>();
        StripedDevice::open(env.fs.clone(), &env.dir, 0, devs, UNIT, None).unwrap()
    };
    let end = {
        let dev = open();
        let mut w = Writer::new(&dev, 0);
        for txn in 1..=60 {
            w.append(txn, size_of(txn)).unwrap();
        }
        w.flush().unwrap();
        w.filled
    };
    let dev = open();
    let limit = dev.limit();
    let data_end = dev.data_end(0).unwrap();
    assert!(
        limit >= 2 * seg - 2 * UNIT,
        "reopened, the limit is the segments' size: {limit}"
    );
    assert!(
        data_end >= end,
        "every record lies before the data end: {data_end} < {end}"
    );
    assert!(
        data_end < limit / 2,
        "the reserved space is not data: data end {data_end} of limit {limit}"
    );
    assert_eq!(
        dev.data_end(data_end).unwrap(),
        data_end,
        "nothing after it"
    );
    let (_, e) = scan(&dev, ScanMode::Strict).unwrap();
    assert_eq!((e.kind, e.end), (EndKind::Clean, end));
}
