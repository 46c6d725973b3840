//! Phantoms under command logging, end to end through the engine and the taurus scheme (index
//! locking, Taurus Sec. 3.4): a stored procedure counts the keys of a range and stores the
//! count; another inserts (or deletes) a key inside the range. Run on two workers, hence two
//! log streams, one after the other, then recovered with parallel replay on two threads. The
//! replayed procedures stall (in replay mode only) so that, if recovery had no edge between
//! them, the one logged second would overtake the first and the recovered count would differ
//! from the count the run stored. The stall is a gate, not a sleep: the stalled procedure
//! waits until the other one has been re-executed, so without the edge the overtaking is
//! certain; with it the other one cannot run first, and the stall ends after a bound.
//!
//! * scan, then insert into the range (WAR): the count must stay what the scan saw;
//! * delete, then scan (RAW): the count must not see the deleted key again.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ops::Bound::Included;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use braid_engine::log::*;
use braid_engine::*;
use braid_wal::scheme::RecoveryPlan;

const SET: TableId = TableId(0);
const OUT: TableId = TableId(1);
const COUNT: u32 = 1;
const INSERT: u32 = 2;
const DELETE: u32 = 3;

fn catalog() -> Catalog {
    let mut c = Catalog::new();
    c.add(TableDef::new("set", IndexKind::Ordered).column("v", ColumnType::U64));
    c.add(TableDef::new("out", IndexKind::Hash).column("count", ColumnType::U64));
    c
}

/// Opened by the replay of the procedure that does not stall.
#[derive(Default)]
struct Gate {
    open: parking_lot::Mutex<bool>,
    opened: parking_lot::Condvar,
}

impl Gate {
    /// A replay with a stall bound of `ms` waits until the gate opens or the bound passes.
    fn stall(&self, tx: &Txn<'_>, ms: u64) {
        if tx.is_replay() && ms > 0 {
            let until = std::time::Instant::now() + Duration::from_millis(ms);
            let mut open = self.open.lock();
            while !*open && !self.opened.wait_until(&mut open, until).timed_out() {}
        }
    }

    /// A replay without a stall opens the gate once it has run.
    fn done(&self, tx: &Txn<'_>, ms: u64) {
        if tx.is_replay() && ms == 0 {
            *self.open.lock() = true;
            self.opened.notify_all();
        }
    }
}

/// Parameters: the replay stall bound in ms (0: no stall), then the procedure's own. A stalled
/// replay waits until the other procedure's replay has run, or the bound has passed: with the
/// recovery edge in place the other one can only run after it, so the bound is what ends it.
fn procs() -> Procedures {
    let gate = Arc::new(Gate::default());
    let mut p = Procedures::new();
    let g = Arc::clone(&gate);
    p.register(COUNT, "count", move |tx, params| {
        let mut r = ParamReader::new(params);
        let (ms, lo, hi) = (r.get::<u64>()?, r.get::<u64>()?, r.get::<u64>()?);
        g.stall(tx, ms);
        let n = tx.scan(SET, Included(lo), Included(hi), usize::MAX, |_, _| true)?;
        tx.update(OUT, 0, |w| w.set::<u64>(0, n as u64))?;
        g.done(tx, ms);
        Ok(())
    });
    let g = Arc::clone(&gate);
    p.register(INSERT, "insert", move |tx, params| {
        let mut r = ParamReader::new(params);
        let (ms, key) = (r.get::<u64>()?, r.get::<u64>()?);
        g.stall(tx, ms);
        tx.insert(SET, key, &key.to_le_bytes())?;
        g.done(tx, ms);
        Ok(())
    });
    p.register(DELETE, "delete", move |tx, params| {
        let g = &gate;
        let mut r = ParamReader::new(params);
        let (ms, key) = (r.get::<u64>()?, r.get::<u64>()?);
        g.stall(tx, ms);
        tx.delete(SET, key)?;
        g.done(tx, ms);
        Ok(())
    });
    p
}

fn load(l: &Loader<'_>) -> Result<(), EngineError> {
    l.insert(OUT, 0, &u64::MAX.to_le_bytes())?;
    l.insert(SET, 50, &50u64.to_le_bytes())
}

fn opts(cc: Cc) -> Options {
    Options::default()
        .scheme("taurus".parse().unwrap())
        .logging(LogKind::Command)
        .cc(cc)
        .streams(2)
        .recovery_threads(2)
        .recovery_plan(RecoveryPlan::Parallel)
        .device(DeviceConfig::Pmem(
            PmemOptions::default().ring_size(1 << 20).destage(false),
        ))
}

fn call(w: &mut Worker, proc_id: u32, args: &[u64]) {
    let mut p = Params::new();
    for &a in args {
        p.put::<u64>(a);
    }
    w.call(proc_id, &p.bytes).unwrap();
}

fn count(db: &Db) -> u64 {
    u64::from_le_bytes(db.peek(OUT, 0).unwrap()[..8].try_into().unwrap())
}

/// Open (create or recover) the database in `dir` under `cc`.
fn open(dir: &Path, cc: Cc) -> (Db, OpenReport) {
    Db::builder(dir)
        .options(opts(cc))
        .catalog(catalog())
        .procedures(procs())
        .loader(load)
        .open()
        .unwrap()
}

/// Run `first` on worker 0 (stream 0) and `second` on worker 1 (stream 1), recover, and return
/// the count the run stored and the count recovery stored.
fn run_and_recover(dir: &Path, cc: Cc, first: (u32, &[u64]), second: (u32, &[u64])) -> (u64, u64) {
    let (db, _) = open(dir, cc);
    let mut w0 = db.worker().unwrap();
    let mut w1 = db.worker().unwrap();
    call(&mut w0, first.0, first.1);
    call(&mut w1, second.0, second.1);
    let ran = count(&db);
    drop((w0, w1));
    db.close().unwrap();
    drop(db);
    let (db, report) = open(dir, cc);
    assert_eq!(report.recovery.txns, 2);
    let recovered = count(&db);
    db.close().unwrap();
    (ran, recovered)
}

#[test]
fn scan_then_insert_into_its_range_replays_in_order() {
    for cc in [Cc::TwoPl, Cc::Occ, Cc::Mvcc] {
        let base = tempfile::tempdir_in("/dev/shm").unwrap();
        // The scan counts {50}; the insert of 60 comes after it. Replayed, the scan stalls.
        let (ran, recovered) = run_and_recover(
            &base.path().join("db"),
            cc,
            (COUNT, &[200, 0, 100]),
            (INSERT, &[0, 60]),
        );
        assert_eq!(ran, 1);
        assert_eq!(
            recovered, ran,
            "{cc:?}: the re-executed scan saw an insert that followed it"
        );
    }
}

#[test]
fn delete_then_scan_of_its_range_replays_in_order() {
    for cc in [Cc::TwoPl, Cc::Occ, Cc::Mvcc] {
        let base = tempfile::tempdir_in("/dev/shm").unwrap();
        // The delete of 50 comes first (and stalls when replayed); the scan then counts nothing.
        let (ran, recovered) = run_and_recover(
            &base.path().join("db"),
            cc,
            (DELETE, &[200, 50]),
            (COUNT, &[0, 0, 100]),
        );
        assert_eq!(ran, 0);
        assert_eq!(
            recovered, ran,
            "{cc:?}: the re-executed scan ran before the delete it followed"
        );
    }
}
