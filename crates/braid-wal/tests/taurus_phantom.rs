//! Taurus range LVs (index locking, Section 3.4): the edges between a range scan and an insert
//! or delete inside its range, which no row connects, driven at the scheme seam with a small
//! fake engine (an ordered key set, table 0, and an output row, table 1, key 0).
//!
//! * WAR, scan then insert (command logging): the insert's record must carry the scan's end in
//!   its LV, and parallel replay must re-execute the scan before the insert (the replayed scan
//!   stalls, so a missing edge lets the insert overtake it and the count comes out wrong).
//! * RAW, delete then scan (data and command logging): the scan's record must carry the
//!   delete's end, and when the delete's stream is lost the scan must not be recovered.
//! * A scan wider than the bucket limit falls back to the table-wide range LVs.
//! * The race: an insert into a range whose scanner is validating waits until the scanner has
//!   logged, then depends on it; an insert next to a read-only scanner does not wait.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeSet, HashMap};
use std::ops::Bound::{self, Included, Unbounded};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use braid_pmem::{CrashMode, CrashSim, Domain, PmemConfig, Region};
use braid_wal::device::Device;
use braid_wal::device::pmem::{PmemDevice, PmemDeviceConfig};
use braid_wal::record::Kind;
use braid_wal::scan::{ScanMode, Scanner};
use braid_wal::scheme::taurus::{LvCompress, TaurusConfig, open_taurus};
use braid_wal::scheme::{
    CommitRequest, LogKind, NoRows, RecoveryPlan, Replay, ReplayError, RowRef, Scheme,
    SchemeConfig, SchemeWorker, Ticket,
};
use parking_lot::Mutex;

const RING: usize = 1 << 20;
const SET: u32 = 0;
const OUT: u32 = 1;

fn pcfg() -> PmemConfig {
    PmemConfig::default()
        .domain(Domain::Adr)
        .flush(None)
        .write_delay_ns(0)
}

fn scfg(logging: LogKind) -> (SchemeConfig, TaurusConfig) {
    (
        SchemeConfig {
            logging,
            max_workers: 4,
            recovery_threads: 2,
            recovery_plan: RecoveryPlan::Parallel,
            ..SchemeConfig::default()
        },
        TaurusConfig {
            compress: LvCompress::Off,
            range_bucket_bits: 8,
            ..TaurusConfig::default()
        },
    )
}

/// Recover and start Taurus over `regions` with `cfg`, replaying into `st`.
fn open(
    cfg: &(SchemeConfig, TaurusConfig),
    regions: &[Region],
    st: &State,
) -> (
    Arc<braid_wal::scheme::taurus::Taurus>,
    braid_wal::scheme::RecoveryReport,
) {
    open_taurus(&cfg.0, &cfg.1, devices(regions), st, &|_| {}).unwrap()
}

fn devices(regions: &[Region]) -> Vec<Arc<dyn Device>> {
    regions
        .iter()
        .enumerate()
        .map(|(i, r)| {
            Arc::new(PmemDevice::open(r.clone(), PmemDeviceConfig::new(i as u32)).unwrap())
                as Arc<dyn Device>
        })
        .collect()
}

/// A transaction's command: scan `[lo, hi]` of the set and store the count in the output row,
/// or insert / delete a key of the set. Data logging logs the same bytes; replay re-executes
/// them either way (the count is what the scan finds at replay).
#[derive(Debug, Clone, Copy)]
enum Op {
    ScanCount { lo: u64, hi: u64 },
    Insert(u64),
    Delete(u64),
}

impl Op {
    fn encode(self) -> Vec<u8> {
        let (tag, a, b) = match self {
            Op::ScanCount { lo, hi } => (0u64, lo, hi),
            Op::Insert(k) => (1, k, 0),
            Op::Delete(k) => (2, k, 0),
        };
        [tag, a, b].iter().flat_map(|x| x.to_le_bytes()).collect()
    }
    fn decode(p: &[u8]) -> Op {
        let w: Vec<u64> = p
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        match w[0] {
            0 => Op::ScanCount { lo: w[1], hi: w[2] },
            1 => Op::Insert(w[1]),
            _ => Op::Delete(w[1]),
        }
    }
}

/// The recovered state: the set and the output row. A replayed scan holds back until an
/// insert or delete has landed (which only one replayed concurrently, a missing edge, can do
/// before the scan ends) or until another replay worker has looked at the final cut and found
/// nothing ready (so nothing can overtake the scan: with every record admitted, a record
/// whose edge to the scan were missing would have been ready, whenever that look began; the
/// worker then waits for a record to finish and does not look again while the scan is held),
/// so a missing edge changes the count.
#[derive(Default)]
struct State {
    set: Mutex<BTreeSet<u64>>,
    out: AtomicU64,
    replayed: Mutex<Vec<u64>>,
    /// Inserts and deletes replayed.
    changes: AtomicU64,
    /// Looks of parallel replay workers that found nothing ready.
    idle_looks: AtomicU64,
}

impl State {
    /// Hold a replayed scan back as the type's docs say.
    fn hold_scan(&self) {
        let (changes, looks) = (
            self.changes.load(Ordering::SeqCst),
            self.idle_looks.load(Ordering::SeqCst),
        );
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.changes.load(Ordering::SeqCst) == changes
            && self.idle_looks.load(Ordering::SeqCst) <= looks
        {
            assert!(
                Instant::now() < deadline,
                "a replayed scan saw neither a change land nor another worker go idle"
            );
            std::thread::yield_now();
        }
    }
}

impl Replay for State {
    fn replay_idle(&self) {
        self.idle_looks.fetch_add(1, Ordering::SeqCst);
    }

    fn apply(&self, txn: u64, _kind: LogKind, payload: &[u8]) -> Result<(), ReplayError> {
        match Op::decode(payload) {
            Op::ScanCount { lo, hi } => {
                self.hold_scan();
                let n = self.set.lock().range(lo..=hi).count();
                self.out.store(n as u64, Ordering::SeqCst);
            }
            Op::Insert(k) => {
                self.set.lock().insert(k);
                self.changes.fetch_add(1, Ordering::SeqCst);
            }
            Op::Delete(k) => {
                self.set.lock().remove(&k);
                self.changes.fetch_add(1, Ordering::SeqCst);
            }
        }
        self.replayed.lock().push(txn);
        Ok(())
    }
}

/// The fake engine: the live set.
struct Engine {
    set: Mutex<BTreeSet<u64>>,
    out: AtomicU64,
}

impl Engine {
    fn new(keys: &[u64]) -> Engine {
        Engine {
            set: Mutex::new(keys.iter().copied().collect()),
            out: AtomicU64::new(0),
        }
    }

    fn row(&self, table: u32, key: u64) -> RowRef<'static> {
        RowRef::new(table, key)
    }

    /// Execute `op` on `w` up to (not including) the commit, calling the hooks the engine
    /// calls: a scan writes the output row and is validated (`on_scan`) last.
    fn execute(&self, w: &mut dyn SchemeWorker, op: Op) {
        match op {
            Op::ScanCount { lo, hi } => {
                let n = self.set.lock().range(lo..=hi).count();
                for k in self.set.lock().range(lo..=hi) {
                    w.on_read(self.row(SET, *k));
                }
                w.on_write(self.row(OUT, 0));
                self.out.store(n as u64, Ordering::SeqCst);
                let hi: Bound<u64> = if hi == u64::MAX {
                    Unbounded
                } else {
                    Included(hi)
                };
                w.on_scan(SET, Included(lo), hi);
            }
            Op::Insert(k) => {
                self.set.lock().insert(k);
                w.on_write(self.row(SET, k));
                w.on_insert(SET, k);
            }
            Op::Delete(k) => {
                w.on_write(self.row(SET, k));
                w.on_delete(SET, k);
            }
        }
    }

    fn commit(&self, w: &mut dyn SchemeWorker, txn: u64, op: Op, logging: LogKind) -> Ticket {
        let payload = op.encode();
        let t = w
            .commit(&CommitRequest {
                txn,
                kind: logging,
                payload: &payload,
                read_only: false,
                epoch: 0,
                writes: &[],
                rows: &NoRows,
                updates: 0,
            })
            .unwrap();
        if let Op::Delete(k) = op {
            // Installed after the record is in the log buffer, as the engine does.
            self.set.lock().remove(&k);
        }
        t
    }

    fn run(&self, w: &mut dyn SchemeWorker, txn: u64, op: Op, logging: LogKind) -> Ticket {
        self.execute(w, op);
        self.commit(w, txn, op, logging)
    }
}

/// Every transaction record of every stream: txn -> (stream, end LSN, dense LV).
fn records(regions: &[Region], n: usize) -> HashMap<u64, (usize, u64, Vec<u64>)> {
    let mut out = HashMap::new();
    for (s, dev) in devices(regions).iter().enumerate() {
        let mut sc = Scanner::new(&**dev, ScanMode::Strict);
        while let Some(r) = sc.next_record().unwrap() {
            if !matches!(r.header.kind, Kind::Redo | Kind::Command) {
                continue;
            }
            let mut lv = vec![0u64; n];
            assert_eq!(r.stamp.lv_into(&mut lv), n, "a dense LV");
            let end = r.header.lsn + r.padded_len() as u64;
            out.insert(r.header.txn, (s, end, lv));
        }
    }
    out
}

fn regions(n: usize) -> Vec<Region> {
    (0..n).map(|_| CrashSim::region(RING, pcfg())).collect()
}

/// Scan then insert into the scanned range, on two streams: the insert follows the scan.
#[test]
fn an_insert_into_a_scanned_range_follows_the_scan() {
    let regions = regions(2);
    let cfg = scfg(LogKind::Command);
    let (s, _) = open(&cfg, &regions, &State::default());
    let e = Engine::new(&[]);
    let (mut w0, mut w1) = (s.worker(0).unwrap(), s.worker(1).unwrap());
    e.run(
        &mut *w0,
        1,
        Op::ScanCount { lo: 0, hi: 100 },
        LogKind::Command,
    )
    .wait()
    .unwrap();
    assert_eq!(e.out.load(Ordering::SeqCst), 0);
    e.run(&mut *w1, 2, Op::Insert(50), LogKind::Command)
        .wait()
        .unwrap();
    drop((w0, w1));
    s.close().unwrap();
    drop(s);
    let recs = records(&regions, 2);
    let (scan_stream, scan_end, _) = recs[&1];
    let (ins_stream, _, ins_lv) = &recs[&2];
    assert_eq!((scan_stream, *ins_stream), (0, 1));
    assert!(
        ins_lv[0] >= scan_end,
        "WAR: the insert's LV {ins_lv:?} does not cover the scan (stream 0, end {scan_end})"
    );
    // Parallel replay re-executes the scan first: it still counts nothing.
    let st = State::default();
    let (s2, rep) = open(&cfg, &regions, &st);
    assert_eq!(rep.txns, 2);
    assert_eq!(*st.replayed.lock(), vec![1, 2]);
    assert_eq!(
        st.out.load(Ordering::SeqCst),
        0,
        "the re-executed scan saw the insert"
    );
    assert!(st.set.lock().contains(&50));
    s2.close().unwrap();
}

/// Delete then scan (the scan no longer finds the key): the scan depends on the delete, under
/// data and command logging, and is cut when the delete's stream is lost.
#[test]
fn a_scan_that_misses_a_deleted_key_depends_on_the_delete() {
    for logging in [LogKind::Data, LogKind::Command] {
        let regions = regions(2);
        let cfg = scfg(logging);
        let (s, _) = open(&cfg, &regions, &State::default());
        let e = Engine::new(&[50]);
        let (mut w0, mut w1) = (s.worker(0).unwrap(), s.worker(1).unwrap());
        e.run(&mut *w1, 1, Op::Delete(50), logging).wait().unwrap();
        e.run(&mut *w0, 2, Op::ScanCount { lo: 0, hi: 100 }, logging)
            .wait()
            .unwrap();
        assert_eq!(e.out.load(Ordering::SeqCst), 0);
        drop((w0, w1));
        s.close().unwrap();
        drop(s);
        let recs = records(&regions, 2);
        let (_, del_end, _) = recs[&1];
        let (_, _, scan_lv) = &recs[&2];
        assert!(
            scan_lv[1] >= del_end,
            "{logging}: RAW: the scan's LV {scan_lv:?} does not cover the delete (stream 1, end {del_end})"
        );
    }
    // The delete's stream stops persisting before the delete: the scan, which did not find the
    // key, must not survive without it.
    for logging in [LogKind::Data, LogKind::Command] {
        let regions = regions(2);
        let cfg = scfg(logging);
        let (s, _) = open(&cfg, &regions, &State::default());
        let e = Engine::new(&[50]);
        let (mut w0, mut w1) = (s.worker(0).unwrap(), s.worker(1).unwrap());
        regions[1].freeze_after(0).unwrap();
        // (The frozen device claims to persist, so acknowledgements mean nothing from here.)
        let _lost = e.run(&mut *w1, 1, Op::Delete(50), logging);
        let _scan = e.run(&mut *w0, 2, Op::ScanCount { lo: 0, hi: 100 }, logging);
        drop((w0, w1));
        let _ = s.close();
        drop(s);
        let images: Vec<Region> = regions
            .iter()
            .map(|r| r.crash(CrashMode::DropUnpersisted).unwrap())
            .collect();
        let st = State::default();
        let (s2, _) = open(&cfg, &images, &st);
        assert!(
            st.replayed.lock().is_empty(),
            "{logging}: recovered {:?} without the delete it depends on",
            st.replayed.lock()
        );
        s2.close().unwrap();
    }
}

/// A scan over more buckets than the limit uses the table-wide range LVs: an insert far from
/// where the scan started still follows it.
#[test]
fn a_wide_scan_orders_inserts_anywhere_in_the_table() {
    let regions = regions(2);
    let cfg = scfg(LogKind::Command);
    let (s, _) = open(&cfg, &regions, &State::default());
    let e = Engine::new(&[3]);
    let (mut w0, mut w1) = (s.worker(0).unwrap(), s.worker(1).unwrap());
    e.run(
        &mut *w0,
        1,
        Op::ScanCount {
            lo: 0,
            hi: u64::MAX,
        },
        LogKind::Command,
    )
    .wait()
    .unwrap();
    e.run(&mut *w1, 2, Op::Insert(1 << 40), LogKind::Command)
        .wait()
        .unwrap();
    // And an insert outside a narrow scan's buckets stays independent of it.
    e.run(
        &mut *w0,
        3,
        Op::ScanCount { lo: 0, hi: 10 },
        LogKind::Command,
    )
    .wait()
    .unwrap();
    e.run(&mut *w1, 4, Op::Insert(1 << 20), LogKind::Command)
        .wait()
        .unwrap();
    drop((w0, w1));
    s.close().unwrap();
    drop(s);
    let recs = records(&regions, 2);
    let (_, wide_end, _) = recs[&1];
    assert!(recs[&2].2[0] >= wide_end, "{:?}", recs[&2]);
    let (_, narrow_end, _) = recs[&3];
    assert!(
        recs[&4].2[0] < narrow_end,
        "an insert 2^20 keys away picked up the narrow scan: {:?}",
        recs[&4]
    );
}

/// An insert into the range of a scanner that is validating (between `on_scan` and its commit)
/// waits for the scanner's record and then depends on it; next to a read-only scanner (never
/// replayed) it does not wait.
#[test]
fn an_insert_waits_for_a_validating_scanner() {
    let regions = regions(2);
    let cfg = scfg(LogKind::Command);
    let (s, _) = open(&cfg, &regions, &State::default());
    let e = Engine::new(&[]);
    let (mut w0, mut w1) = (s.worker(0).unwrap(), s.worker(1).unwrap());
    // The scanner validated (its recount found nothing new) but has not logged yet.
    e.execute(&mut *w0, Op::ScanCount { lo: 0, hi: 100 });
    let done = AtomicBool::new(false);
    std::thread::scope(|sc| {
        let h = sc.spawn(|| {
            e.execute(&mut *w1, Op::Insert(50));
            done.store(true, Ordering::SeqCst);
            e.commit(&mut *w1, 2, Op::Insert(50), LogKind::Command)
        });
        // Until the insert either waits for the scanner (the scheme counts it) or goes ahead.
        let deadline = Instant::now() + Duration::from_secs(30);
        while s.range_waits() == 0 && !done.load(Ordering::SeqCst) {
            assert!(
                Instant::now() < deadline,
                "the insert neither waited nor went ahead"
            );
            std::thread::yield_now();
        }
        assert!(
            !done.load(Ordering::SeqCst),
            "the insert went ahead while the scanner of its range was validating"
        );
        e.commit(
            &mut *w0,
            1,
            Op::ScanCount { lo: 0, hi: 100 },
            LogKind::Command,
        )
        .wait()
        .unwrap();
        h.join().unwrap().wait().unwrap();
    });
    // A read-only scanner (nothing written) is not replayed and holds nobody up.
    w0.on_scan(SET, Included(0), Included(100));
    let finished = AtomicBool::new(false);
    let waits = s.range_waits();
    let finished_first = std::thread::scope(|sc| {
        sc.spawn(|| {
            e.execute(&mut *w1, Op::Insert(60));
            finished.store(true, Ordering::SeqCst);
        });
        // The insert must finish on its own. One that waits for the scanner (the scheme
        // counts the wait) would wait until the scanner's commit: commit it then, so the
        // insert is released and the verdict comes after the scope.
        let deadline = Instant::now() + Duration::from_secs(30);
        while !finished.load(Ordering::SeqCst) && s.range_waits() == waits {
            assert!(
                Instant::now() < deadline,
                "an insert next to a read-only scanner neither finished nor waited"
            );
            std::thread::yield_now();
        }
        let finished_first = finished.load(Ordering::SeqCst);
        w0.commit(&CommitRequest {
            txn: 3,
            kind: LogKind::Command,
            payload: &[],
            read_only: true,
            epoch: 0,
            writes: &[],
            rows: &NoRows,
            updates: 0,
        })
        .unwrap()
        .wait()
        .unwrap();
        finished_first
    });
    assert!(finished_first, "an insert waited for a read-only scanner");
    assert_eq!(
        s.range_waits(),
        waits,
        "an insert waited for a read-only scanner"
    );
    e.commit(&mut *w1, 4, Op::Insert(60), LogKind::Command)
        .wait()
        .unwrap();
    drop((w0, w1));
    s.close().unwrap();
    drop(s);
    let recs = records(&regions, 2);
    let (_, scan_end, _) = recs[&1];
    assert!(
        recs[&2].2[0] >= scan_end,
        "the insert does not depend on the scanner it waited for: {:?}",
        recs[&2]
    );
}
