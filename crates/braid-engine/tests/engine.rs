//! Engine behaviour: transactions under 2PL and OCC, recovery through the serial scheme on
//! pmem and file devices, command logging, and refusals on reopen.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ops::Bound;
use std::path::Path;

use braid_engine::log::*;
use braid_engine::*;

use crate::integration::common;

fn catalog() -> Catalog {
    let mut c = Catalog::new();
    c.add(
        TableDef::new("acct", IndexKind::Hash)
            .column("bal", ColumnType::U64)
            .column("name", ColumnType::Bytes(8)),
    );
    c.add(TableDef::new("hist", IndexKind::Ordered).column("v", ColumnType::U64));
    c
}

const ACCT: TableId = TableId(0);
const HIST: TableId = TableId(1);
const TRANSFER: u32 = 7;

fn procs() -> Procedures {
    let mut p = Procedures::new();
    p.register(TRANSFER, "transfer", |tx, params| {
        let mut r = ParamReader::new(params);
        let (from, to, amount) = (r.get::<u64>()?, r.get::<u64>()?, r.get::<u64>()?);
        let bal = tx.get::<u64>(ACCT, from, 0)?.ok_or(TxError::NotFound {
            table: 0,
            key: from,
        })?;
        if bal < amount {
            return Err(TxError::user_abort("insufficient funds"));
        }
        tx.update(ACCT, from, |w| w.set::<u64>(0, bal - amount))?;
        tx.update(ACCT, to, |w| {
            let b = w.get::<u64>(0);
            w.set::<u64>(0, b + amount)
        })?;
        let id = tx.id();
        let mut img = [0u8; 8];
        img.copy_from_slice(&amount.to_le_bytes());
        tx.insert(HIST, id, &img)?;
        Ok(())
    });
    p
}

fn load(l: &Loader<'_>) -> Result<(), EngineError> {
    for k in 0..10u64 {
        let mut img = vec![0u8; 16];
        img[0..8].copy_from_slice(&100u64.to_le_bytes());
        l.insert(ACCT, k, &img)?;
    }
    Ok(())
}

fn opts(device: DeviceConfig, logging: LogKind, cc: Cc) -> Options {
    Options::default().device(device).logging(logging).cc(cc)
}

fn pmem() -> DeviceConfig {
    common::pmem_ring(1 << 20)
}

fn file() -> DeviceConfig {
    common::roomy_file_device()
}

fn open(dir: &Path, o: Options) -> Db {
    Db::builder(dir)
        .options(o)
        .catalog(catalog())
        .procedures(procs())
        .loader(load)
        .open()
        .unwrap()
        .0
}

fn total(db: &Db) -> u64 {
    let mut sum = 0;
    db.for_each_row(ACCT, .., |_, img| sum += db.schema(ACCT).get::<u64>(img, 0));
    sum
}

fn run_transfers(db: &Db, n: u64) -> u64 {
    let mut w = db.worker().unwrap();
    let mut ok = 0;
    for i in 0..n {
        let mut p = Params::new();
        p.put::<u64>(i % 10)
            .put::<u64>((i * 3 + 1) % 10)
            .put::<u64>(1 + i % 7);
        match w.call(TRANSFER, &p.bytes) {
            Ok(()) => ok += 1,
            Err(e) => assert!(matches!(e, TxError::UserAbort { .. }), "{e}"),
        }
    }
    ok
}

fn recovery_round_trip(device: DeviceConfig, logging: LogKind, cc: Cc) {
    let base = tempfile::tempdir_in("/dev/shm").unwrap();
    let dir = base.path().join("db");
    let db = open(&dir, opts(device.clone(), logging, cc));
    let ok = run_transfers(&db, 300);
    assert!(ok > 100);
    let before: Vec<Option<Vec<u8>>> = (0..10).map(|k| db.peek(ACCT, k)).collect();
    let hist = db.rows(HIST);
    assert_eq!(hist as u64, ok);
    assert_eq!(total(&db), 1000);
    db.close().unwrap();
    drop(db);
    let (db, report) = Db::builder(&dir)
        .options(opts(device.clone(), logging, cc))
        .catalog(catalog())
        .procedures(procs())
        .loader(load)
        .open()
        .unwrap();
    assert!(!report.created);
    assert_eq!(report.recovery.txns, ok);
    let after: Vec<Option<Vec<u8>>> = (0..10).map(|k| db.peek(ACCT, k)).collect();
    assert_eq!(before, after);
    assert_eq!(db.rows(HIST), hist);
    assert_eq!(total(&db), 1000);
    // Transactions after recovery append after the recovered log and recover in turn.
    let more = run_transfers(&db, 50);
    db.close().unwrap();
    drop(db);
    let (db, report) = Db::builder(&dir)
        .options(opts(device, logging, cc))
        .catalog(catalog())
        .procedures(procs())
        .loader(load)
        .open()
        .unwrap();
    assert_eq!(report.recovery.txns, ok + more);
    assert_eq!(db.rows(HIST) as u64, ok + more);
    assert_eq!(total(&db), 1000);
}

/// A prefetch is a hint: it takes nothing a transaction needs (the rows of both steps, of a
/// hash and an ordered table, stay free to read and write), skips keys and tables it does not
/// find, and changes no row.
#[test]
fn prefetch_leaves_rows_free_and_unchanged() {
    for cc in [Cc::TwoPl, Cc::Occ, Cc::Mvcc] {
        let base = tempfile::tempdir_in("/dev/shm").unwrap();
        let db = open(&base.path().join("db"), opts(pmem(), LogKind::Data, cc));
        let w = db.worker().unwrap();
        let rows = [(ACCT, 0), (ACCT, 3), (ACCT, 99), (HIST, 5), (TableId(9), 1)];
        for step in [Prefetch::Locate, Prefetch::Body] {
            w.prefetch(&mut rows.iter().copied(), step);
        }
        drop(w);
        assert_eq!(total(&db), 1000, "{cc:?}");
        assert_eq!(run_transfers(&db, 20), 20, "{cc:?}");
        assert_eq!(total(&db), 1000, "{cc:?}");
        db.close().unwrap();
    }
}

#[test]
fn serial_pmem_data_recovers() {
    recovery_round_trip(pmem(), LogKind::Data, Cc::TwoPl);
}

#[test]
fn serial_pmem_command_recovers() {
    recovery_round_trip(pmem(), LogKind::Command, Cc::TwoPl);
}

#[test]
fn serial_file_data_occ_recovers() {
    recovery_round_trip(file(), LogKind::Data, Cc::Occ);
}

#[test]
fn serial_file_command_recovers() {
    recovery_round_trip(file(), LogKind::Command, Cc::TwoPl);
}

#[test]
fn reopen_refusals_say_what_to_do() {
    let base = tempfile::tempdir_in("/dev/shm").unwrap();
    let dir = base.path().join("db");
    let db = open(&dir, opts(pmem(), LogKind::Data, Cc::TwoPl));
    db.close().unwrap();
    drop(db);
    let err = |o: Options, c: Catalog| {
        Db::builder(&dir)
            .options(o)
            .catalog(c)
            .procedures(procs())
            .loader(load)
            .open()
            .expect_err("refused")
    };
    let e = err(
        opts(pmem(), LogKind::Data, Cc::TwoPl).scheme("none".parse().unwrap()),
        catalog(),
    );
    assert!(
        matches!(
            e,
            EngineError::Mismatch {
                mismatch: Mismatch::Scheme { .. },
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("Options::scheme serial"), "{e}");
    let e = err(opts(file(), LogKind::Data, Cc::TwoPl), catalog());
    assert!(
        matches!(
            e,
            EngineError::Mismatch {
                mismatch: Mismatch::Device { .. },
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .contains("reopen it with an Options::device of kind pmem"),
        "{e}"
    );
    let mut other = catalog();
    other.tables[0].columns.pop();
    let e = err(opts(pmem(), LogKind::Data, Cc::TwoPl), other);
    assert!(
        matches!(
            e,
            EngineError::Mismatch {
                mismatch: Mismatch::Catalog { .. },
                ..
            }
        ),
        "{e:?}"
    );
    let e = e.to_string();
    assert!(e.contains("schema mismatch") && e.contains("acct"), "{e}");
    let junk = base.path().join("junk");
    std::fs::create_dir_all(&junk).unwrap();
    std::fs::write(junk.join("x"), b"x").unwrap();
    let e = Db::builder(&junk)
        .options(opts(pmem(), LogKind::Data, Cc::TwoPl))
        .catalog(catalog())
        .procedures(procs())
        .loader(load)
        .open()
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("not a braid database"), "{e}");
}

#[test]
fn unknown_procedure_in_command_log_is_refused() {
    let base = tempfile::tempdir_in("/dev/shm").unwrap();
    let dir = base.path().join("db");
    let db = open(&dir, opts(pmem(), LogKind::Command, Cc::TwoPl));
    assert!(run_transfers(&db, 5) > 0);
    db.close().unwrap();
    drop(db);
    let e = Db::builder(&dir)
        .options(opts(pmem(), LogKind::Command, Cc::TwoPl))
        .catalog(catalog())
        .loader(load)
        .open()
        .expect_err("refused")
        .to_string();
    assert!(
        e.contains("procedure 7") && e.contains("not registered"),
        "{e}"
    );
}

fn mem_db(cc: Cc) -> (tempfile::TempDir, Db) {
    let base = tempfile::tempdir_in("/dev/shm").unwrap();
    let db = open(
        &base.path().join("db"),
        opts(DeviceConfig::Null, LogKind::Data, cc).scheme("none".parse().unwrap()),
    );
    (base, db)
}

#[test]
fn two_phase_locking_is_no_wait() {
    let (_d, db) = mem_db(Cc::TwoPl);
    let mut a = db.worker().unwrap();
    let mut b = db.worker().unwrap();
    let mut ta = a.begin();
    assert!(ta.update(ACCT, 1, |w| w.set::<u64>(0, 5)).unwrap());
    let mut tb = b.begin();
    assert!(matches!(
        tb.read(ACCT, 1, |_| ()),
        Err(TxError::Conflict { .. })
    ));
    // A shared lock blocks writers but not readers.
    assert_eq!(tb.get::<u64>(ACCT, 2, 0).unwrap(), Some(100));
    drop(tb);
    ta.commit().unwrap();
    let mut tb = b.begin();
    assert_eq!(tb.get::<u64>(ACCT, 1, 0).unwrap(), Some(5));
    let mut ta = a.begin();
    assert_eq!(ta.get::<u64>(ACCT, 1, 0).unwrap(), Some(5));
    assert!(matches!(
        ta.update(ACCT, 1, |w| w.set::<u64>(0, 6)),
        Err(TxError::Conflict { .. })
    ));
    drop(ta);
    tb.commit().unwrap();
    // Aborted writes and inserts leave nothing behind.
    let mut ta = a.begin();
    ta.update(ACCT, 3, |w| w.set::<u64>(0, 0)).unwrap();
    ta.insert(HIST, 99, &[1; 8]).unwrap();
    ta.abort();
    assert_eq!(
        db.schema(ACCT).get::<u64>(&db.peek(ACCT, 3).unwrap(), 0),
        100
    );
    assert!(db.peek(HIST, 99).is_none());
}

#[test]
fn occ_validation_catches_a_changed_read() {
    let (_d, db) = mem_db(Cc::Occ);
    let mut a = db.worker().unwrap();
    let mut b = db.worker().unwrap();
    let mut ta = a.begin();
    let v = ta.get::<u64>(ACCT, 1, 0).unwrap().unwrap();
    ta.update(ACCT, 2, |w| w.set::<u64>(0, v)).unwrap();
    let mut tb = b.begin();
    tb.update(ACCT, 1, |w| w.set::<u64>(0, 1)).unwrap();
    tb.commit().unwrap();
    assert!(matches!(ta.commit(), Err(TxError::Conflict { .. })));
    assert_eq!(
        db.schema(ACCT).get::<u64>(&db.peek(ACCT, 2).unwrap(), 0),
        100
    );
}

#[test]
fn scans_see_own_writes_and_catch_phantoms() {
    for cc in [Cc::TwoPl, Cc::Occ, Cc::Mvcc] {
        let (_d, db) = mem_db(cc);
        let mut a = db.worker().unwrap();
        let mut t = a.begin();
        for k in [10u64, 20, 30] {
            let mut img = [0u8; 8];
            img.copy_from_slice(&k.to_le_bytes());
            t.insert(HIST, k, &img).unwrap();
        }
        t.commit().unwrap();
        let mut t = a.begin();
        let mut seen = Vec::new();
        let n = t
            .scan(HIST, Bound::Included(0), Bound::Included(25), 10, |k, _| {
                seen.push(k);
                true
            })
            .unwrap();
        assert_eq!((n, seen.clone()), (2, vec![10, 20]));
        // An updating scanner (a read-only one under MVCC read one snapshot and needs no
        // check).
        t.insert(HIST, 99, &[0; 8]).unwrap();
        // Another transaction inserts into the scanned range: the scanner must abort.
        let mut b = db.worker().unwrap();
        let mut tb = b.begin();
        tb.insert(HIST, 15, &[0; 8]).unwrap();
        tb.commit().unwrap();
        assert!(
            matches!(t.commit(), Err(TxError::Conflict { .. })),
            "{cc:?}"
        );
        // A delete then a scan in one transaction does not see the deleted row.
        let mut t = a.begin();
        assert!(t.delete(HIST, 10).unwrap());
        let mut seen = Vec::new();
        t.scan(HIST, Bound::Unbounded, Bound::Unbounded, 100, |k, _| {
            seen.push(k);
            true
        })
        .unwrap();
        assert_eq!(seen, vec![15, 20, 30]);
        t.commit().unwrap();
        assert!(db.peek(HIST, 10).is_none());
        let mut img = vec![0u8; 16];
        db.schema(ACCT).set::<u64>(&mut img, 0, 1);
        let mut t = a.begin();
        assert!(matches!(
            t.insert(ACCT, 1, &img),
            Err(TxError::DuplicateKey { .. })
        ));
    }
}

#[test]
fn pipelined_calls_return_a_ticket_that_resolves() {
    let base = tempfile::tempdir_in("/dev/shm").unwrap();
    let db = open(
        &base.path().join("db"),
        opts(file(), LogKind::Data, Cc::TwoPl),
    );
    let mut w = db.worker().unwrap();
    let mut p = Params::new();
    p.put::<u64>(1).put::<u64>(2).put::<u64>(3);
    let t = w.call_async(TRANSFER, &p.bytes).unwrap();
    t.wait().unwrap();
    assert!(t.is_durable().unwrap());
    w.call(TRANSFER, &p.bytes).unwrap();
    let balance = |k| db.schema(ACCT).get::<u64>(&db.peek(ACCT, k).unwrap(), 0);
    assert_eq!((balance(1), balance(2)), (94, 106));
}

/// The per-row scheme figure of the memory report is the scheme's own metadata
/// (`Scheme::metadata_bytes`) over the rows: nothing for serial, the page clocks for gsn, the
/// row and range LV table for taurus (which grows with what transactions touch).
#[test]
fn memory_report_counts_the_schemes_metadata() {
    let base = tempfile::tempdir_in("/dev/shm").unwrap();
    let db = open(
        &base.path().join("serial"),
        opts(pmem(), LogKind::Data, Cc::TwoPl),
    );
    let m = db.memory_report();
    assert_eq!(m.rows, 10);
    assert_eq!(m.scheme_bytes_per_row, 0.0);
    assert!(m.engine_bytes_per_row > 0.0);
    db.close().unwrap();

    let gsn = opts(pmem(), LogKind::Data, Cc::TwoPl).scheme("gsn".parse().unwrap());
    let db = open(&base.path().join("gsn"), gsn.clone());
    let slots = GsnConfig::default().page_slots.next_power_of_two() as f64;
    assert_eq!(db.memory_report().scheme_bytes_per_row, slots * 8.0 / 10.0);
    db.close().unwrap();

    let taurus = opts(pmem(), LogKind::Command, Cc::TwoPl)
        .scheme("taurus".parse().unwrap())
        .streams(2);
    let db = open(&base.path().join("taurus"), taurus);
    let total = |m: MemoryReport| m.scheme_bytes_per_row * m.rows as f64;
    let before = total(db.memory_report());
    assert!(before > 0.0, "the lock table's shards are counted");
    run_transfers(&db, 50);
    let after = total(db.memory_report());
    assert!(
        after > before,
        "row and range LVs of what the transfers touched: {before} -> {after} bytes"
    );
    db.close().unwrap();
}

/// `nvdisk` keeps its log in files on (emulated) NVRAM and pays the NVM write latency the
/// pmem device was given, like the schemes logging to persistent memory, and says so: per
/// line written (Setup-A), or per write, the barrier a PMFS write ends with (PMEP's latency
/// per barrier).
#[test]
fn nvdisk_pays_the_pmem_devices_nvm_delay() {
    let base = tempfile::tempdir_in("/dev/shm").unwrap();
    for (delay, fence, want) in [
        (0u64, 0u64, None),
        (300, 0, Some("+300 ns per 64-byte line written")),
        (0, 500, Some("+500 ns per write (its persistent barrier)")),
    ] {
        let device = DeviceConfig::Pmem(
            PmemOptions::default()
                .ring_size(1 << 20)
                .destage(false)
                .write_delay_ns(delay)
                .fence_delay_ns(fence),
        );
        let o = opts(device, LogKind::Data, Cc::TwoPl).scheme("nvdisk".parse().unwrap());
        let db = open(&base.path().join(format!("d{delay}-{fence}")), o);
        let e = db.emulation().unwrap_or_default();
        match want {
            Some(w) => assert!(e.contains(w), "{e}"),
            None => assert!(
                !e.contains("per 64-byte line") && !e.contains("per write"),
                "{e}"
            ),
        }
        db.close().unwrap();
    }
}

/// Log insertion latency is sampled on one commit in 16 and counted once the worker is gone,
/// per transaction and per record inserted (NV-Logging's Fig. 11 unit): one record per
/// transaction by default, with per-update records each write's record and the commit record;
/// with the same commits' time in their 2PL locks.
#[test]
fn log_insertion_latency_is_sampled_and_counted_when_a_worker_is_dropped() {
    for (records, per_txn) in [(Records::Txn, 1), (Records::Update, 4)] {
        let fs = braid_wal::fs::FaultFs::new();
        let db = common::open(
            Path::new("/db"),
            common::options("serial", common::file_device(), common::file_env(&fs))
                .records(records),
        )
        .unwrap();
        let (before, access) = (db.stats().log_insert, db.stats().access);
        let mut w = db.worker().unwrap();
        for i in 0..64u64 {
            common::run_txn_durable(&mut w, i).unwrap();
        }
        // Read-only transactions put no record into the log: timed, not counted as insertions.
        for _ in 0..16 {
            let mut t = w.begin();
            t.get::<u64>(common::CTR, 0, 0).unwrap();
            t.commit().unwrap();
        }
        assert_eq!(
            db.stats().log_insert.samples - before.samples,
            0,
            "a live worker's timings are not in yet"
        );
        assert_eq!(db.stats().access, access);
        drop(w);
        let s = db.stats().log_insert;
        assert_eq!(s.samples - before.samples, 5, "80 commits, one in 16 timed");
        // run_txn writes three rows: per update, three update records and a commit record.
        assert_eq!(s.records - before.records, 4 * per_txn, "{records:?}");
        assert!(s.ns > before.ns);
        assert!(s.record_ns > before.record_ns && s.record_ns <= s.ns);
        // The same commits timed their 2PL locks: three rows locked and released each.
        assert!(db.stats().access.lock_ns > access.lock_ns);
        db.close().unwrap();
    }
}

#[test]
fn for_each_row_visits_the_keys_in_range_on_hash_and_ordered_tables() {
    let mut catalog = Catalog::new();
    let hash = catalog.add(TableDef::new("h", IndexKind::Hash).column("v", ColumnType::U64));
    let ordered = catalog.add(TableDef::new("o", IndexKind::Ordered).column("v", ColumnType::U64));
    let base = tempfile::tempdir_in("/dev/shm").unwrap();
    let (db, _) = Db::builder(base.path().join("db"))
        .options(
            Options::default()
                .scheme("none".parse().unwrap())
                .device(DeviceConfig::Null),
        )
        .catalog(catalog)
        .loader(|l| {
            for k in 0..10u64 {
                l.insert(hash, k, &(k * 10).to_le_bytes())?;
                l.insert(ordered, k, &(k * 10).to_le_bytes())?;
            }
            Ok(())
        })
        .open()
        .unwrap();
    for t in [hash, ordered] {
        let mut seen = Vec::new();
        db.for_each_row(t, 3..6, |k, img| seen.push((k, img.to_vec())));
        if t == hash {
            seen.sort();
        }
        let want: Vec<(u64, Vec<u8>)> = (3..6u64)
            .map(|k| (k, (k * 10).to_le_bytes().to_vec()))
            .collect();
        assert_eq!(seen, want, "table {t:?}");
        let mut all = 0;
        db.for_each_row(t, .., |_, _| all += 1);
        assert_eq!(all, 10);
    }
}

/// Under the central log a read-only transaction waits for the writers of the rows it read,
/// and for the log's tail once it found no row where it looked (the missing key's delete may
/// not be durable yet): the engine tells the scheme of every miss and scan
/// (`SchemeWorker::on_absent`). Seen through the ticket's kind, which does not depend on how
/// fast the flusher is: nothing to wait for, or a wait on the stream.
#[test]
fn read_only_tickets_wait_for_what_was_read_and_after_a_miss_for_the_tail() {
    for cc in [Cc::TwoPl, Cc::Occ, Cc::Mvcc] {
        let base = tempfile::tempdir_in("/dev/shm").unwrap();
        let db = open(&base.path().join("db"), opts(file(), LogKind::Data, cc));
        let mut w = db.worker().unwrap();
        let kind = |t: &Ticket| format!("{t:?}");
        let read = |w: &mut Worker, f: &dyn Fn(&mut Txn<'_>)| {
            let mut t = w.begin();
            f(&mut t);
            t.commit_async().unwrap()
        };
        // Loaded rows and rows no commit of this run wrote: durable, nothing to wait for.
        let t = read(&mut w, &|t| {
            assert!(t.get::<u64>(ACCT, 1, 0).unwrap().is_some())
        });
        assert_eq!(kind(&t), "Ticket::DURABLE", "{cc:?}");
        let mut t = w.begin();
        t.update(ACCT, 2, |r| r.set::<u64>(0, 7)).unwrap();
        t.delete(ACCT, 3).unwrap();
        t.commit().unwrap();
        let t = read(&mut w, &|t| {
            assert!(t.get::<u64>(ACCT, 1, 0).unwrap().is_some())
        });
        assert_eq!(
            kind(&t),
            "Ticket::DURABLE",
            "{cc:?}: a read waited for another row's writer"
        );
        let t = read(&mut w, &|t| {
            assert_eq!(t.get::<u64>(ACCT, 2, 0).unwrap(), Some(7))
        });
        assert!(kind(&t).starts_with("Ticket(stream"), "{cc:?}: {t:?}");
        t.wait().unwrap();
        let t = read(&mut w, &|t| {
            assert_eq!(t.get::<u64>(ACCT, 3, 0).unwrap(), None)
        });
        assert!(
            kind(&t).starts_with("Ticket(stream"),
            "{cc:?}: a miss did not wait: {t:?}"
        );
        let t = read(&mut w, &|t| {
            t.scan(HIST, Bound::Unbounded, Bound::Unbounded, 10, |_, _| true)
                .unwrap();
        });
        assert!(
            kind(&t).starts_with("Ticket(stream"),
            "{cc:?}: a scan did not wait: {t:?}"
        );
        let t = read(&mut w, &|t| {
            assert!(t.get::<u64>(ACCT, 1, 0).unwrap().is_some())
        });
        assert_eq!(
            kind(&t),
            "Ticket::DURABLE",
            "{cc:?}: the miss outlived its transaction"
        );
    }
}
