//! YCSB: whole-row updates (`YcsbUpdate::Row`, as the Taurus paper's own code updates) write and
//! log every column, and recover under data and command logging like one-column updates.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use braid_engine::log::LogKind;
use braid_workloads::ycsb::{Ycsb, YcsbConfig, YcsbUpdate};

fn small(update: YcsbUpdate) -> Ycsb {
    Ycsb::new(YcsbConfig::default().rows(2000).update(update))
}

#[test]
fn whole_row_updates_recover_under_data_and_command_logging() {
    for logging in [LogKind::Data, LogKind::Command] {
        let o = recovery_round_trip(&small(YcsbUpdate::Row), logging, 2, 400);
        assert!(o.committed >= 800, "{logging:?}: {o:?}");
    }
}

#[test]
fn whole_row_updates_log_every_column() {
    let per_commit = |update| {
        let w = small(update);
        let base = tempfile::tempdir_in("/dev/shm").unwrap();
        let db = open(&base.path().join("db"), serial_pmem(LogKind::Data), &w);
        let o = run(&db, &w, 1, 1000, 3);
        let bytes = db.stats().log.bytes as f64 / o.committed as f64;
        db.close().unwrap();
        bytes
    };
    let (column, row) = (per_commit(YcsbUpdate::Column), per_commit(YcsbUpdate::Row));
    // One access in two updates (of 2 per transaction): about 100 B of image per column, 1 KB
    // per row, plus the same framing.
    assert!(
        row > column + 600.0,
        "log bytes per commit: {column:.0} updating a column, {row:.0} updating the row"
    );
    assert_eq!("row".parse::<YcsbUpdate>().unwrap(), YcsbUpdate::Row);
    assert_eq!(YcsbUpdate::Column.to_string(), "column");
}
