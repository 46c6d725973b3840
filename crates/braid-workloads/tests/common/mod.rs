//! Helpers shared by the workload tests: opening a database for a workload, running its
//! clients from several threads, and snapshotting every table for comparison.

#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::collections::BTreeMap;
use std::path::Path;

use braid_engine::{Db, DeviceConfig, Options, PmemOptions, TableId, TxError, log::LogKind};
use braid_workloads::Workload;

/// Scheme none, no device.
pub fn none() -> Options {
    Options::default()
        .scheme("none".parse().unwrap())
        .device(DeviceConfig::Null)
}

/// Scheme serial on a persistent-memory ring (no de-staging).
pub fn serial_pmem(logging: LogKind) -> Options {
    Options::default()
        .scheme("serial".parse().unwrap())
        .logging(logging)
        .device(DeviceConfig::Pmem(
            PmemOptions::default().ring_size(8 << 20).destage(false),
        ))
}

pub fn open(dir: &Path, opts: Options, w: &dyn Workload) -> Db {
    open_report(dir, opts, w).0
}

pub fn open_report(dir: &Path, opts: Options, w: &dyn Workload) -> (Db, braid_engine::OpenReport) {
    w.db(dir).options(opts).open().unwrap()
}

/// What a run did.
#[derive(Debug, Default, Clone, Copy)]
pub struct Outcome {
    pub committed: u64,
    pub user_aborts: u64,
    pub conflicts: u64,
}

/// Run `per_thread` transactions (counting commits and rollbacks; conflicts are retried by the
/// client and not counted as transactions) on each of `threads` threads, waiting for each
/// commit to be durable.
pub fn run(db: &Db, w: &dyn Workload, threads: usize, per_thread: u64, seed: u64) -> Outcome {
    let outcomes: Vec<Outcome> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                s.spawn(move || {
                    let mut worker = db.worker().unwrap();
                    let mut client = w.client(i, seed);
                    let mut o = Outcome::default();
                    // Consecutive conflicts: a retry backs off exponentially (1 us to 1 ms), so
                    // the count measures contention, not how long a lock holder stayed
                    // descheduled on a loaded machine (a NO_WAIT retry without back-off spins
                    // thousands of times meanwhile).
                    let mut streak = 0u32;
                    while o.committed + o.user_aborts < per_thread {
                        match client.run_one(&mut worker) {
                            Ok(()) => {
                                o.committed += 1;
                                streak = 0;
                            }
                            Err(TxError::UserAbort { .. }) => o.user_aborts += 1,
                            Err(e) if e.is_retryable() => {
                                o.conflicts += 1;
                                assert!(o.conflicts < 100 * per_thread, "livelock: {o:?}");
                                std::thread::sleep(std::time::Duration::from_micros(
                                    1 << streak.min(10),
                                ));
                                streak += 1;
                            }
                            Err(e) => panic!("transaction failed: {e}"),
                        }
                    }
                    o
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    outcomes.iter().fold(Outcome::default(), |a, o| Outcome {
        committed: a.committed + o.committed,
        user_aborts: a.user_aborts + o.user_aborts,
        conflicts: a.conflicts + o.conflicts,
    })
}

/// Every live row of every table, by table name.
pub fn snapshot(db: &Db) -> BTreeMap<String, BTreeMap<u64, Vec<u8>>> {
    db.table_names()
        .into_iter()
        .enumerate()
        .map(|(i, name)| {
            let mut rows = BTreeMap::new();
            db.for_each_row(TableId(i as u32), .., |k, img| {
                rows.insert(k, img.to_vec());
            });
            (name, rows)
        })
        .collect()
}

/// Assert two snapshots are equal, naming the first difference.
pub fn assert_same(
    before: &BTreeMap<String, BTreeMap<u64, Vec<u8>>>,
    after: &BTreeMap<String, BTreeMap<u64, Vec<u8>>>,
) {
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>()
    );
    for (name, a) in before {
        let b = &after[name];
        if a == b {
            continue;
        }
        let missing = a.keys().find(|k| !b.contains_key(k));
        let extra = b.keys().find(|k| !a.contains_key(k));
        let changed = a
            .iter()
            .find(|(k, v)| b.get(k).is_some_and(|w| w != *v))
            .map(|(k, _)| k);
        panic!(
            "table {name} differs after recovery: {} rows before, {} after; first missing {missing:?}, first extra {extra:?}, first changed {changed:?}",
            a.len(),
            b.len()
        );
    }
}

/// Run, close, reopen (recovery) and compare: the recovered tables equal the pre-close tables
/// and the workload's consistency conditions hold. Returns the run's outcome.
pub fn recovery_round_trip(
    w: &dyn Workload,
    logging: LogKind,
    threads: usize,
    per_thread: u64,
) -> Outcome {
    let base = tempfile::tempdir_in("/dev/shm").unwrap();
    let dir = base.path().join("db");
    let db = open(&dir, serial_pmem(logging), w);
    let outcome = run(&db, w, threads, per_thread, 11);
    w.check(&db).unwrap();
    let before = snapshot(&db);
    let stats = db.stats().log;
    assert!(
        stats.bytes < 8 << 20,
        "the test's log ({} bytes) must fit the ring",
        stats.bytes
    );
    db.close().unwrap();
    drop(db);

    let (db, report) = open_report(&dir, serial_pmem(logging), w);
    assert!(!report.created);
    w.check(&db).unwrap();
    assert_same(&before, &snapshot(&db));

    // Transactions after recovery append to the log and recover in turn.
    let more = run(&db, w, threads, per_thread / 4 + 1, 12);
    w.check(&db).unwrap();
    let before = snapshot(&db);
    db.close().unwrap();
    drop(db);
    let db = open(&dir, serial_pmem(logging), w);
    w.check(&db).unwrap();
    assert_same(&before, &snapshot(&db));
    Outcome {
        committed: outcome.committed + more.committed,
        user_aborts: outcome.user_aborts + more.user_aborts,
        conflicts: outcome.conflicts + more.conflicts,
    }
}
