//! ALICE-style crash-state enumeration for file devices (Pillai et al., OSDI 2014, applied to
//! docs/design.md invariants 1, 2, 4 and 6): the file-system operations of a short run are
//! recorded on a `FaultFs`, and for every prefix of them and every way the unsynced writes of
//! that prefix may have reached the disk (all dropped; the last write of each file torn at a
//! random length, three seeds; a random subset kept, three seeds) the database is recovered and
//! checked:
//!
//! * no panic and no error: every such state is one a power failure can leave;
//! * durability: every transaction acknowledged before the crash point (its ticket's wait
//!   returned while the log held at most that many operations) is recovered;
//! * atomicity and order: the recovered state is exactly a prefix of the installed
//!   transactions (every transaction depends on the one before it);
//! * torn tail trimmed: for the torn states, a transaction committed after recovery is
//!   recovered by the next open, after the prefix (new records after a trimmed tail replay).
//!
//! The workload commits in groups of three before waiting, so group commit writes several
//! records per flush, over the serial, taurus (two streams) and gsn (two logs) schemes with
//! 4 KiB segments, so segment creation and pre-allocation are part of the run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use crate::integration::common::*;
use braid_wal::fs::{CrashOpts, FaultFs};

const TXNS: u64 = 36;
const GROUP: u64 = 3;
/// Seeds per random crash option (torn last write, random subset).
const SEEDS: u64 = 3;

/// The run: history and, per acknowledged position, the operation count when it was acked.
fn record_run(scheme: &'static str, fs: &FaultFs) -> (History, Vec<usize>) {
    let dir = Path::new("/db");
    let db = open(dir, options(scheme, file_device(), file_env(fs))).unwrap();
    let mut h = History::default();
    let mut ack_ops = Vec::new();
    let mut ws = [db.worker().unwrap(), db.worker().unwrap()];
    let mut i = 0;
    while i < TXNS {
        let mut group = Vec::new();
        for j in i..(i + GROUP).min(TXNS) {
            let t = run_txn(&mut ws[(j % 2) as usize], j).unwrap();
            h.installed.push(j);
            group.push((h.installed.len() - 1, t));
        }
        for (pos, t) in group {
            t.wait().unwrap();
            h.acked.push(pos);
            ack_ops.push(fs.op_count());
        }
        i += GROUP;
    }
    drop(ws);
    db.close().unwrap();
    (h, ack_ops)
}

fn alice(scheme: &'static str) -> usize {
    let dir = Path::new("/db");
    let fs = FaultFs::new();
    fs.set_record_ops(true);
    let (h, ack_ops) = record_run(scheme, &fs);
    let total = fs.op_count();
    let mut states = 0;
    for k in 0..=total {
        let hk = History {
            installed: h.installed.clone(),
            acked: h
                .acked
                .iter()
                .zip(&ack_ops)
                .filter(|&(_, &at)| at <= k)
                .map(|(&p, _)| p)
                .collect(),
        };
        let seed = k as u64 * SEEDS * 2;
        let opts = std::iter::once(CrashOpts::drop_unsynced())
            .chain((0..SEEDS).map(|s| CrashOpts::tear_last(seed + s)))
            .chain((0..SEEDS).map(|s| CrashOpts::keep_subset(seed + SEEDS + s)));
        for opts in opts {
            let fs2 = fs.crash_after(k, opts).unwrap();
            let what = || format!("{scheme}: crash after {k} of {total} ops, {opts:?}");
            let db = open(dir, options(scheme, file_device(), file_env(&fs2)))
                .unwrap_or_else(|e| panic!("{}: recovery failed: {e}", what()));
            let p = check(&db, &hk).unwrap_or_else(|e| panic!("{}: {e}", what()));
            states += 1;
            if opts.unsynced != braid_wal::fs::Unsynced::TearLast {
                db.close().unwrap();
                continue;
            }
            // Appending after the trimmed tail, then recovering, keeps the new transaction.
            let mut w = db.worker().unwrap();
            run_txn_durable(&mut w, 1000).unwrap();
            drop(w);
            db.close().unwrap();
            drop(db);
            let db = open(dir, options(scheme, file_device(), file_env(&fs2)))
                .unwrap_or_else(|e| panic!("{}: reopen after a new commit: {e}", what()));
            let mut installed = h.installed[..p].to_vec();
            installed.push(1000);
            assert_eq!(
                state(&db),
                model(&installed, p + 1),
                "{}: the commit after recovery was not recovered after the prefix",
                what()
            );
            db.close().unwrap();
        }
    }
    eprintln!("alice {scheme}: {total} ops, {states} crash states checked");
    states
}

#[test]
fn alice_serial() {
    assert!(alice("serial") > 50);
}

#[test]
fn alice_taurus() {
    assert!(alice("taurus") > 50);
}

#[test]
fn alice_gsn() {
    assert!(alice("gsn") > 50);
}
