//! Durable by default (docs/design.md invariant 1, for a user who changes no option): under
//! `Options::default()` a commit that returned is on stable storage.
//!
//! The database runs on a `FaultFs`, the same file-system seam the real files go through. After
//! every commit that returned, power is cut there and then (the crashed image keeps only what
//! was made durable with fdatasync / fsync; unsynced writes are dropped, or torn), and the
//! database recovered from that image must hold every transaction committed so far.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use crate::integration::common::*;
use braid_engine::*;
use braid_wal::fs::{CrashOpts, FaultFs};

fn defaults_on(fs: &FaultFs) -> Options {
    Options::default().env(file_env(fs))
}

#[test]
fn the_default_device_is_a_file_log() {
    let o = Options::default();
    assert!(
        matches!(o.device, DeviceConfig::File(_)),
        "default device: {:?}",
        o.device
    );
}

#[test]
fn every_commit_returned_under_the_defaults_survives_a_power_cut() {
    let fs = FaultFs::new();
    let db = open(Path::new("/db"), defaults_on(&fs)).unwrap();
    let mut w = db.worker().unwrap();
    let mut installed = Vec::new();
    for i in 0..12u64 {
        // `commit()` returns once the transaction is durable.
        run_txn_durable(&mut w, i).unwrap();
        installed.push(i);
        for (n, opts) in [
            ("dropped", CrashOpts::drop_unsynced()),
            ("torn", CrashOpts::tear_last(i)),
        ] {
            let crashed = fs.crash(opts);
            let back = open(Path::new("/db"), defaults_on(&crashed)).unwrap();
            assert_eq!(
                state(&back),
                model(&installed, installed.len()),
                "power cut after commit {i} returned (unsynced writes {n}): a commit was lost"
            );
            back.close().unwrap();
        }
    }
    drop(w);
    db.close().unwrap();
}
