//! Crash during recovery (docs/design.md invariant 5, idempotence): a crash at any point of a
//! recovery, then recovery again, gives the state one clean recovery gives.
//!
//! * File device: the crash image of a run (with a torn, unsynced tail) is recovered once on a
//!   `FaultFs` recording its operations; then, for every `k` up to the number of operations
//!   that recovery made, the file system after its first `k` operations is crashed (unsynced
//!   writes dropped, the last one torn, a random subset kept) and recovered again.
//! * Pmem device: the same with `CrashSim` crash points: the durable image of region `i` is
//!   frozen after `k` of its persist events during recovery (the regions before it complete,
//!   the ones after it untouched: devices are reset one after the other), then crashed and
//!   recovered again.
//!
//! For the serial, taurus (two streams), gsn (two logs) and silor (two streams) schemes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use crate::integration::common::*;
use braid_engine::testing::SimPmem;
use braid_engine::*;
use braid_pmem::CrashMode;
use braid_wal::fs::{CrashOpts, FaultFs};

/// Run a short workload, leave a few commits unacknowledged (`before_tail` runs before them),
/// and return the history.
fn workload(db: &Db, before_tail: &dyn Fn()) -> History {
    let mut h = History::default();
    run_clean(db, 0, 12, &mut h, &mut |_| {});
    before_tail();
    let mut ws = [db.worker().unwrap(), db.worker().unwrap()];
    let mut pending = Vec::new();
    for i in 12..16 {
        pending.push(run_txn(&mut ws[(i % 2) as usize], i).unwrap());
        h.installed.push(i);
    }
    h
}

fn file_case(scheme: &'static str) -> usize {
    let dir = Path::new("/db");
    let fs = FaultFs::new();
    let db = open(dir, options(scheme, file_device(), file_env(&fs))).unwrap();
    let h = workload(&db, &|| {});
    let _ = db.close();
    drop(db);
    let mut states = 0;
    // Images with a torn tail (the last unsynced write of each file reached the disk in
    // part), with a random subset of the unsynced writes, and with none of them.
    for first in [
        CrashOpts::tear_last(7),
        CrashOpts::keep_subset(3),
        CrashOpts::drop_unsynced(),
    ] {
        let fs1 = fs.crash(first);
        fs1.set_record_ops(true);
        let db = open(dir, options(scheme, file_device(), file_env(&fs1))).unwrap();
        let ops = fs1.op_count();
        let want = state(&db);
        check(&db, &h).unwrap_or_else(|e| panic!("{scheme}: clean recovery: {e}"));
        db.close().unwrap();
        drop(db);
        assert!(ops > 0, "{scheme}: recovery wrote nothing");
        for k in 0..=ops {
            for opts in [
                CrashOpts::drop_unsynced(),
                CrashOpts::tear_last(k as u64),
                CrashOpts::keep_subset(k as u64),
            ] {
                let fs2 = fs1.crash_after(k, opts).unwrap();
                let db =
                    open(dir, options(scheme, file_device(), file_env(&fs2))).unwrap_or_else(|e| {
                        panic!("{scheme}: {first:?}, then crash after {k} ops ({opts:?}): {e}")
                    });
                assert_eq!(
                    state(&db),
                    want,
                    "{scheme}: {first:?}, then crash after {k} of {ops} recovery ops ({opts:?})"
                );
                db.close().unwrap();
                states += 1;
            }
        }
    }
    eprintln!("recovery crash, {scheme} on files: {states} crash states checked");
    states
}

#[test]
fn file_recovery_crashed_at_every_op_serial() {
    let n = file_case("serial");
    assert!(n > 3);
}

#[test]
fn file_recovery_crashed_at_every_op_taurus() {
    let n = file_case("taurus");
    assert!(n > 3);
}

#[test]
fn file_recovery_crashed_at_every_op_gsn() {
    let n = file_case("gsn");
    assert!(n > 3);
}

fn copy(sim: &SimPmem) -> SimPmem {
    sim.crash(|_| CrashMode::DropUnpersisted).unwrap()
}

fn pmem_case(scheme: &'static str) -> usize {
    let dir = Path::new("/db");
    let fs = FaultFs::new();
    let sim = SimPmem::new();
    let dev = pmem_device(false);
    let db = open(dir, options(scheme, dev.clone(), pmem_env(&fs, &sim))).unwrap();
    // The durable images stop a few cache lines into the unacknowledged records: the rings
    // hold torn records for recovery to trim.
    let h = workload(&db, &|| sim.freeze_after(1).unwrap());
    let sim1 = sim.crash(|_| CrashMode::DropUnpersisted).unwrap();
    let fs1 = fs.crash(CrashOpts::drop_unsynced());
    let _ = db.close();
    drop(db);
    // One clean recovery: the reference state and the persist events of each region.
    let reference = copy(&sim1);
    let db = open(
        dir,
        options(
            scheme,
            dev.clone(),
            pmem_env(&fs1.crash(CrashOpts::drop_unsynced()), &reference),
        ),
    )
    .unwrap();
    let want = state(&db);
    check(&db, &h).unwrap_or_else(|e| panic!("{scheme}: clean recovery: {e}"));
    let events: Vec<u64> = reference
        .regions()
        .iter()
        .map(|r| r.persist_events())
        .collect();
    db.close().unwrap();
    drop(db);
    assert!(
        events.iter().sum::<u64>() > 0,
        "{scheme}: recovery persisted nothing"
    );
    let mut states = 0;
    for (i, &total) in events.iter().enumerate() {
        for k in 0..=total {
            let sim2 = copy(&sim1);
            for (j, r) in sim2.regions().iter().enumerate() {
                if j == i {
                    r.freeze_after(k).unwrap();
                } else if j > i {
                    r.freeze_after(0).unwrap();
                }
            }
            let fs2 = fs1.crash(CrashOpts::drop_unsynced());
            let db = open(dir, options(scheme, dev.clone(), pmem_env(&fs2, &sim2)))
                .unwrap_or_else(|e| panic!("{scheme}: first recovery (region {i}, k {k}): {e}"));
            drop(db);
            let sim3 = copy(&sim2);
            let db = open(dir, options(scheme, dev.clone(), pmem_env(&fs2, &sim3))).unwrap_or_else(
                |e| panic!("{scheme}: recovery after a crash in recovery (region {i}, k {k}): {e}"),
            );
            assert_eq!(
                state(&db),
                want,
                "{scheme}: recovery crashed in region {i} after {k} of {total} persist events"
            );
            db.close().unwrap();
            states += 1;
        }
    }
    eprintln!("recovery crash, {scheme} on pmem: {states} crash states checked");
    states
}

#[test]
fn pmem_recovery_crashed_at_every_persist_serial() {
    assert!(pmem_case("serial") > 1);
}

#[test]
fn pmem_recovery_crashed_at_every_persist_taurus() {
    assert!(pmem_case("taurus") > 1);
}

#[test]
fn pmem_recovery_crashed_at_every_persist_gsn() {
    assert!(pmem_case("gsn") > 1);
}

#[test]
fn file_recovery_crashed_at_every_op_silor() {
    let n = file_case("silor");
    assert!(n > 3);
}

#[test]
fn pmem_recovery_crashed_at_every_persist_silor() {
    assert!(pmem_case("silor") > 1);
}
