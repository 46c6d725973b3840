//! Multi-version concurrency control: snapshot reads, first-updater-wins, serializable
//! validation, tombstones and their removal, snapshot consistency under concurrent transfers,
//! and multi-versioned recovery (Taurus Section 4.4: command logging without write-after-read
//! edges, replayed in parallel, must still equal the state before the restart).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use braid_engine::log::*;
use braid_engine::*;
use braid_wal::scheme::RecoveryPlan;

const ACCT: TableId = TableId(0);
const COPY: TableId = TableId(1);
const ITEM: TableId = TableId(2);
const ACCOUNTS: u64 = 16;
const TOTAL: u64 = ACCOUNTS * 100;

const TRANSFER: u32 = 1;
/// Reads an account and writes what it read into COPY (a read followed by a write of another
/// row: exactly the pattern whose write-after-read edge MVCC lets Taurus drop).
const AUDIT: u32 = 2;
/// Inserts or deletes an ITEM key, depending on whether it is there.
const TOGGLE: u32 = 3;

fn catalog() -> Catalog {
    let mut c = Catalog::new();
    c.add(TableDef::new("acct", IndexKind::Hash).column("bal", ColumnType::U64));
    c.add(TableDef::new("copy", IndexKind::Hash).column("v", ColumnType::U64));
    c.add(TableDef::new("item", IndexKind::Ordered).column("v", ColumnType::U64));
    c
}

fn procs() -> Procedures {
    let mut p = Procedures::new();
    p.register(TRANSFER, "transfer", |tx, params| {
        let mut r = ParamReader::new(params);
        let (from, to, amount) = (r.get::<u64>()?, r.get::<u64>()?, r.get::<u64>()?);
        let bal = tx.get::<u64>(ACCT, from, 0)?.unwrap_or(0);
        if bal < amount {
            return Err(TxError::user_abort("insufficient funds"));
        }
        tx.update(ACCT, from, |w| w.set::<u64>(0, bal - amount))?;
        tx.update(ACCT, to, |w| {
            let b = w.get::<u64>(0);
            w.set::<u64>(0, b + amount)
        })?;
        Ok(())
    });
    p.register(AUDIT, "audit", |tx, params| {
        let mut r = ParamReader::new(params);
        let (acct, slot) = (r.get::<u64>()?, r.get::<u64>()?);
        let bal = tx.get::<u64>(ACCT, acct, 0)?.unwrap_or(u64::MAX);
        let img = bal.to_le_bytes();
        if !tx.update(COPY, slot, |w| w.set::<u64>(0, bal))? {
            tx.insert(COPY, slot, &img)?;
        }
        Ok(())
    });
    p.register(TOGGLE, "toggle", |tx, params| {
        let mut r = ParamReader::new(params);
        let (key, v) = (r.get::<u64>()?, r.get::<u64>()?);
        if tx.get::<u64>(ITEM, key, 0)?.is_some() {
            tx.delete(ITEM, key)?;
        } else {
            tx.insert(ITEM, key, &v.to_le_bytes())?;
        }
        Ok(())
    });
    p
}

fn load(l: &Loader<'_>) -> Result<(), EngineError> {
    for k in 0..ACCOUNTS {
        l.insert(ACCT, k, &100u64.to_le_bytes())?;
    }
    Ok(())
}

fn opts(scheme: &'static str, logging: LogKind) -> Options {
    Options::default()
        .scheme(scheme.parse().unwrap())
        .logging(logging)
        .cc(Cc::Mvcc)
        .streams(2)
        .recovery_threads(2)
        .recovery_plan(RecoveryPlan::Parallel)
        .device(DeviceConfig::Pmem(
            PmemOptions::default().ring_size(8 << 20).destage(false),
        ))
}

fn open(dir: &Path, o: Options) -> (Db, OpenReport) {
    Db::builder(dir)
        .options(o)
        .catalog(catalog())
        .procedures(procs())
        .loader(load)
        .open()
        .unwrap()
}

fn mem_db() -> (tempfile::TempDir, Db) {
    let d = tempfile::tempdir_in("/dev/shm").unwrap();
    let (db, _) = open(
        &d.path().join("db"),
        Options::default()
            .scheme("none".parse().unwrap())
            .cc(Cc::Mvcc),
    );
    (d, db)
}

fn bal(tx: &mut Txn<'_>, k: u64) -> u64 {
    tx.get::<u64>(ACCT, k, 0).unwrap().unwrap()
}

fn set(tx: &mut Txn<'_>, k: u64, v: u64) {
    assert!(tx.update(ACCT, k, |w| w.set::<u64>(0, v)).unwrap());
}

#[test]
fn snapshot_reads_ignore_later_commits() {
    let (_d, db) = mem_db();
    let (mut a, mut b) = (db.worker().unwrap(), db.worker().unwrap());
    let mut ta = a.begin();
    assert_eq!(bal(&mut ta, 1), 100);
    {
        let mut tb = b.begin();
        set(&mut tb, 1, 7);
        set(&mut tb, 2, 193);
        tb.commit().unwrap();
    }
    // Both the row read before and a row first read after the commit are as of the snapshot.
    assert_eq!(bal(&mut ta, 1), 100);
    assert_eq!(bal(&mut ta, 2), 100);
    // Read-only: commits without validation although what it read is now stale.
    ta.commit().unwrap();
    let mut ta = a.begin();
    assert_eq!((bal(&mut ta, 1), bal(&mut ta, 2)), (7, 193));
    ta.commit().unwrap();
}

#[test]
fn first_updater_wins_and_stale_reads_fail_validation() {
    let (_d, db) = mem_db();
    let (mut a, mut b) = (db.worker().unwrap(), db.worker().unwrap());
    // A write to a row committed after the snapshot aborts at once.
    let mut ta = a.begin();
    {
        let mut tb = b.begin();
        set(&mut tb, 3, 1);
        tb.commit().unwrap();
    }
    let e = ta.update(ACCT, 3, |w| w.set::<u64>(0, 2)).unwrap_err();
    assert!(matches!(e, TxError::Conflict { .. }), "{e}");
    ta.abort();
    // An updating transaction that read a version replaced before it commits fails
    // validation (it would not be serializable at its commit timestamp).
    let mut ta = a.begin();
    assert_eq!(bal(&mut ta, 4), 100);
    {
        let mut tb = b.begin();
        set(&mut tb, 4, 50);
        tb.commit().unwrap();
    }
    set(&mut ta, 5, 0);
    assert!(matches!(ta.commit(), Err(TxError::Conflict { .. })));
    let mut t = a.begin();
    assert_eq!((bal(&mut t, 4), bal(&mut t, 5)), (50, 100));
    t.commit().unwrap();
}

#[test]
fn deletes_leave_tombstones_until_no_snapshot_needs_them() {
    let (_d, db) = mem_db();
    let (mut a, mut b) = (db.worker().unwrap(), db.worker().unwrap());
    {
        let mut t = b.begin();
        t.insert(ITEM, 10, &5u64.to_le_bytes()).unwrap();
        t.commit().unwrap();
    }
    let mut old = a.begin();
    assert_eq!(old.get::<u64>(ITEM, 10, 0).unwrap(), Some(5));
    {
        let mut t = b.begin();
        assert!(t.delete(ITEM, 10).unwrap());
        t.commit().unwrap();
    }
    // The old snapshot still sees the row, a new one does not; the key stays in the index.
    assert_eq!(old.get::<u64>(ITEM, 10, 0).unwrap(), Some(5));
    assert_eq!(db.peek(ITEM, 10), None);
    assert_eq!(db.rows(ITEM), 1);
    {
        let mut t = b.begin();
        assert_eq!(t.get::<u64>(ITEM, 10, 0).unwrap(), None);
        t.commit().unwrap();
    }
    // Insert over the tombstone: a new version of the same row.
    {
        let mut t = b.begin();
        t.insert(ITEM, 10, &6u64.to_le_bytes()).unwrap();
        t.commit().unwrap();
    }
    assert_eq!(old.get::<u64>(ITEM, 10, 0).unwrap(), Some(5));
    old.commit().unwrap();
    {
        let mut t = b.begin();
        assert_eq!(t.get::<u64>(ITEM, 10, 0).unwrap(), Some(6));
        assert!(t.delete(ITEM, 10).unwrap());
        t.commit().unwrap();
    }
    // No snapshot is running: the next commit of that worker sweeps the tombstone.
    {
        let mut t = b.begin();
        set(&mut t, 0, 100);
        t.commit().unwrap();
    }
    assert_eq!(db.rows(ITEM), 0);
    // A key inserted after a snapshot is invisible to it, and so is an uncommitted insert.
    let mut old = a.begin();
    let mut t = b.begin();
    t.insert(ITEM, 11, &1u64.to_le_bytes()).unwrap();
    assert_eq!(old.get::<u64>(ITEM, 11, 0).unwrap(), None);
    t.commit().unwrap();
    assert_eq!(old.get::<u64>(ITEM, 11, 0).unwrap(), None);
    let mut n = 0;
    old.scan(
        ITEM,
        std::ops::Bound::Unbounded,
        std::ops::Bound::Unbounded,
        100,
        |_, _| {
            n += 1;
            true
        },
    )
    .unwrap();
    assert_eq!(n, 0);
    old.commit().unwrap();
}

/// Two workers transfer between accounts while a third sums them all in read-only
/// transactions: every sum sees one consistent snapshot, and no reader ever aborts.
#[test]
fn concurrent_snapshots_are_consistent() {
    let (_d, db) = mem_db();
    let stop = AtomicBool::new(false);
    let sums = AtomicU64::new(0);
    let transfers = AtomicU64::new(0);
    std::thread::scope(|s| {
        for w in 0..2u64 {
            let (db, stop, transfers) = (&db, &stop, &transfers);
            s.spawn(move || {
                let mut wk = db.worker().unwrap();
                let mut i = w;
                while !stop.load(Ordering::Relaxed) {
                    i = i
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let mut p = Params::new();
                    p.put::<u64>((i >> 33) % ACCOUNTS)
                        .put::<u64>((i >> 17) % ACCOUNTS)
                        .put::<u64>(1 + (i >> 40) % 9);
                    if wk.call(TRANSFER, &p.bytes).is_ok() {
                        transfers.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
        let (db, stop, sums, transfers) = (&db, &stop, &sums, &transfers);
        s.spawn(move || {
            let mut wk = db.worker().unwrap();
            // Enough snapshots, and enough transfers beside them (on a loaded machine the
            // writers may be scheduled late); a minute at most.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while (sums.load(Ordering::Relaxed) < 3000 || transfers.load(Ordering::Relaxed) < 200)
                && std::time::Instant::now() < deadline
            {
                let mut t = wk.begin();
                let sum: u64 = (0..ACCOUNTS).map(|k| bal(&mut t, k)).sum();
                assert_eq!(sum, TOTAL, "a snapshot saw a transfer half done");
                t.commit()
                    .expect("a read-only MVCC transaction never aborts");
                sums.fetch_add(1, Ordering::Relaxed);
            }
            stop.store(true, Ordering::Relaxed);
        });
    });
    assert!(transfers.load(Ordering::Relaxed) > 100);
}

fn state(db: &Db) -> Vec<(u32, u64, Vec<u8>)> {
    let mut out = Vec::new();
    for t in [ACCT, COPY, ITEM] {
        db.for_each_row(t, .., |k, img| out.push((t.0, k, img.to_vec())));
    }
    out.sort();
    out
}

/// Recovery of a multi-versioned database, replayed in parallel from two streams: the state
/// equals the one before the restart. Audits read an account and write another row, so under
/// command logging a later transfer of that account is free to replay first; the audit must
/// still read the balance of its own timestamp.
fn round_trip(scheme: &'static str, logging: LogKind) {
    let base = tempfile::tempdir_in("/dev/shm").unwrap();
    let dir = base.path().join("db");
    let (db, _) = open(&dir, opts(scheme, logging));
    let committed = AtomicU64::new(0);
    std::thread::scope(|s| {
        for w in 0..2u64 {
            let (db, committed) = (&db, &committed);
            s.spawn(move || {
                let mut wk = db.worker().unwrap();
                let mut i = w + 1;
                for n in 0..1500u64 {
                    i = i
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let a = (i >> 33) % ACCOUNTS;
                    let mut p = Params::new();
                    let proc_id = match n % 3 {
                        0 => {
                            p.put::<u64>(a)
                                .put::<u64>((i >> 17) % ACCOUNTS)
                                .put::<u64>(1 + (i >> 40) % 30);
                            TRANSFER
                        }
                        1 => {
                            p.put::<u64>(a).put::<u64>(w * 8 + (i >> 20) % 8);
                            AUDIT
                        }
                        _ => {
                            p.put::<u64>((i >> 24) % 24).put::<u64>(n);
                            TOGGLE
                        }
                    };
                    if wk.call(proc_id, &p.bytes).is_ok() {
                        committed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let before = state(&db);
    let sum: u64 = before
        .iter()
        .filter(|(t, _, _)| *t == ACCT.0)
        .map(|(_, _, img)| db.schema(ACCT).get::<u64>(img, 0))
        .sum();
    assert_eq!(sum, TOTAL);
    db.close().unwrap();
    drop(db);
    let (db, report) = open(&dir, opts(scheme, logging));
    assert!(report.recovery.txns > 1000, "{}", report.recovery.txns);
    assert_eq!(state(&db), before, "recovered state differs");
    // Work goes on after recovery, and recovers in turn.
    let mut wk = db.worker().unwrap();
    for k in 0..ACCOUNTS {
        let mut p = Params::new();
        p.put::<u64>(k).put::<u64>(k + 100);
        wk.call(AUDIT, &p.bytes).unwrap();
    }
    let again = state(&db);
    drop(wk);
    db.close().unwrap();
    drop(db);
    let (db, _) = open(&dir, opts(scheme, logging));
    assert_eq!(state(&db), again);
}

/// A deterministic write-after-read: an audit of account 0 commits on stream 0 behind a long
/// run of unrelated audits, then a transfer from account 0 commits on stream 1. Taurus under
/// MVCC records no edge between them, so parallel recovery replays the transfer early; the
/// audit must still copy the balance it saw.
#[test]
fn replayed_reads_see_their_own_timestamp() {
    let base = tempfile::tempdir_in("/dev/shm").unwrap();
    let dir = base.path().join("db");
    let o = opts("taurus", LogKind::Command);
    let (db, _) = open(&dir, o.clone());
    let (mut w0, mut w1) = (db.worker().unwrap(), db.worker().unwrap());
    let call = |w: &mut Worker, proc_id: u32, args: &[u64]| {
        let mut p = Params::new();
        for a in args {
            p.put::<u64>(*a);
        }
        w.call(proc_id, &p.bytes).unwrap()
    };
    for _ in 0..3000 {
        call(&mut w0, AUDIT, &[5, 1]);
    }
    call(&mut w0, AUDIT, &[0, 2]);
    call(&mut w1, TRANSFER, &[0, 1, 60]);
    call(&mut w0, AUDIT, &[6, 3]);
    assert_eq!(db.peek(COPY, 2), Some(100u64.to_le_bytes().to_vec()));
    drop((w0, w1));
    db.close().unwrap();
    drop(db);
    for _ in 0..5 {
        let (db, r) = open(&dir, o.clone());
        assert_eq!(r.recovery.txns, 3003);
        assert_eq!(db.peek(COPY, 2), Some(100u64.to_le_bytes().to_vec()));
        assert_eq!(db.peek(ACCT, 0), Some(40u64.to_le_bytes().to_vec()));
        db.close().unwrap();
    }
}

#[test]
fn taurus_command_logging_recovers_without_war_edges() {
    round_trip("taurus", LogKind::Command);
}

#[test]
fn taurus_data_logging_recovers() {
    round_trip("taurus", LogKind::Data);
}

#[test]
fn serial_command_logging_recovers() {
    round_trip("serial", LogKind::Command);
}

#[test]
fn reopening_with_other_concurrency_control_is_refused() {
    let base = tempfile::tempdir_in("/dev/shm").unwrap();
    let dir = base.path().join("db");
    let (db, _) = open(&dir, opts("taurus", LogKind::Data));
    db.close().unwrap();
    drop(db);
    let e = Db::builder(&dir)
        .options(opts("taurus", LogKind::Data).cc(Cc::Occ))
        .catalog(catalog())
        .procedures(procs())
        .loader(load)
        .open()
        .unwrap_err();
    assert!(
        matches!(
            e,
            EngineError::Mismatch {
                mismatch: Mismatch::Mvcc { found: true },
                ..
            }
        ),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(msg.contains("reopen it with Options::cc Cc::Mvcc"), "{msg}");
}

#[test]
fn gsn_refuses_mvcc_and_says_what_to_use() {
    let base = tempfile::tempdir_in("/dev/shm").unwrap();
    let dir = base.path().join("db");
    let e = Db::builder(&dir)
        .options(opts("gsn", LogKind::Data))
        .catalog(catalog())
        .procedures(procs())
        .loader(load)
        .open()
        .unwrap_err();
    assert!(
        matches!(
            &e,
            EngineError::Unsupported(Unsupported::Log(braid_wal::Unsupported::Scheme {
                scheme: "gsn",
                refused: braid_wal::Refused::Mvcc,
                ..
            }))
        ),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains("use the 2PL or OCC concurrency control"),
        "{msg}"
    );
}
