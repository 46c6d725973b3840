//! YCSB: whole-row updates (`YcsbUpdate::Row`, as the Taurus paper's own code updates, and
//! `YcsbUpdate::Increment`, its increment of each column's first byte) write and log every
//! column, and recover under data and command logging like one-column updates; a client's
//! transactions drawn before the run are the ones it would have drawn.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use braid_engine::log::LogKind;
use braid_workloads::ycsb::{Ycsb, YcsbConfig, YcsbUpdate, row_image};
use braid_workloads::{PregenerateError, Workload};

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
fn increments_recover_under_data_and_command_logging() {
    for logging in [LogKind::Data, LogKind::Command] {
        let o = recovery_round_trip(&small(YcsbUpdate::Increment), logging, 2, 400);
        assert!(o.committed >= 800, "{logging:?}: {o:?}");
    }
}

/// An increment adds 1 to the first byte of every column of the row as it is and leaves the
/// other bytes: each row differs from its initial image by the same count in every column's
/// first byte, and the counts add up to the updates made.
#[test]
fn increments_add_one_to_each_columns_first_byte() {
    let w = small(YcsbUpdate::Increment);
    let (columns, width) = (w.cfg.columns, w.cfg.column_bytes);
    let base = tempfile::tempdir_in("/dev/shm").unwrap();
    let db = open(&base.path().join("db"), serial_pmem(LogKind::Data), &w);
    // One worker, one update per transaction: every committed transaction is one increment.
    let one = Ycsb::new(w.cfg.clone().read_fraction(0.0).accesses(1));
    let o = run(&db, &one, 1, 300, 5);
    let mut total = 0u64;
    for (key, img) in db_rows(&db) {
        let init = row_image(&w.cfg, 0, key);
        let k = img[0].wrapping_sub(init[0]);
        for c in 0..columns {
            let at = c * width;
            assert_eq!(img[at].wrapping_sub(init[at]), k, "key {key} column {c}");
            assert_eq!(
                img[at + 1..at + width],
                init[at + 1..at + width],
                "key {key}"
            );
        }
        total += u64::from(k);
    }
    assert_eq!(total, o.committed, "{o:?}");
    db.close().unwrap();
}

/// Every row of the table, by key.
fn db_rows(db: &braid_engine::Db) -> Vec<(u64, Vec<u8>)> {
    snapshot(db)
        .remove("usertable")
        .unwrap()
        .into_iter()
        .collect()
}

/// A client whose transactions were drawn before the run commits what the same client
/// drawing as it runs commits: the same rows after the same number of transactions (one
/// worker, so no conflict redraws), also when it announces them to the prefetch (drawn before
/// the run or a few ahead). Marked YCSB, whose drawing the crash oracle watches, refuses.
#[test]
fn pregenerated_transactions_are_the_clients_own() {
    let w = small(YcsbUpdate::Increment);
    let rows_after = |ahead: usize| rows_after_prefetching(&w, ahead, 0);
    // Announcing the coming transactions to the prefetch changes no row.
    assert_eq!(rows_after(250), rows_after_prefetching(&w, 250, 8));
    assert_eq!(rows_after(250), rows_after_prefetching(&w, 250, 1));
    // Without transactions drawn before the run, the prefetch draws each a few ahead: the
    // same transactions.
    assert_eq!(rows_after(0), rows_after_prefetching(&w, 0, 8));
    let live = rows_after(0);
    assert_ne!(
        live,
        rows_after(1),
        "one transaction over and over is another run"
    );
    assert_eq!(live, rows_after(250));
    assert_eq!(live, rows_after(1000));
    let marked = Ycsb::new(w.cfg.clone().marked(true));
    assert!(matches!(
        marked.client(0, 7).pregenerate(10),
        Err(PregenerateError::Refused(_))
    ));
}

/// The rows after 250 transactions of one worker whose client drew `ahead` of them before the
/// run and announces them to the prefetch `batch` at a time.
fn rows_after_prefetching(w: &Ycsb, ahead: usize, batch: usize) -> Vec<(u64, Vec<u8>)> {
    let base = tempfile::tempdir_in("/dev/shm").unwrap();
    let db = open(&base.path().join("db"), serial_pmem(LogKind::Data), w);
    let mut worker = db.worker().unwrap();
    let mut client = w.client(0, 7);
    client.pregenerate(ahead).unwrap();
    client.prefetch_ahead(batch);
    for _ in 0..250 {
        client.run_one(&mut worker).unwrap();
    }
    drop(worker);
    let rows = db_rows(&db);
    db.close().unwrap();
    rows
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
    let increment = per_commit(YcsbUpdate::Increment);
    assert!(
        (increment - row).abs() < 100.0,
        "log bytes per commit: {row:.0} updating the row, {increment:.0} incrementing it"
    );
    assert_eq!("row".parse::<YcsbUpdate>().unwrap(), YcsbUpdate::Row);
    assert_eq!(
        "increment".parse::<YcsbUpdate>().unwrap(),
        YcsbUpdate::Increment
    );
    assert_eq!(YcsbUpdate::Column.to_string(), "column");
}
