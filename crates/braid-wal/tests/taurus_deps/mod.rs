//! Taurus at the log level, with a small fake engine (keys holding u64 values, exclusive key
//! locks, early lock release): the true RAW / WAW / WAR dependency graph of a run is recorded
//! while it runs, then the log is crashed and recovered through a recording [`Replay`], and the
//! recovery is checked against the graph:
//!
//! * durability: every transaction acknowledged before the crash point is recovered;
//! * closure: a recovered transaction's predecessors (RAW, WAW; WAR too under command logging)
//!   are recovered;
//! * order: each predecessor finished replaying before its successor started (parallel replay
//!   included);
//! * state: the recovered values equal a serial replay of the recovered set in the run's order
//!   (command logging re-executes, so a WAR violation shows up as a wrong value);
//! * idempotence: recovering the recovered log again gives the same set and state.
//!
//! Crashes: one stream's device (or all) stops persisting at a random point while the run goes
//! on (`freeze_after(0)` on its simulated region), then power fails everywhere.
//!
//! `proptest` runs 48 random schedules by default; `PROPTEST_CASES=1000 cargo test --release -p
//! braid-wal --lib taurus_deps` runs more.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use braid_pmem::{CrashMode, CrashSim, Domain, PmemConfig, Region};
use braid_wal::device::Device;
use braid_wal::device::pmem::{PmemDevice, PmemDeviceConfig};
use braid_wal::scan::{ScanMode, Scanner, StreamSource};
use braid_wal::scheme::registry::SchemeDef;
use braid_wal::scheme::taurus::{TaurusConfig, open_taurus};
use braid_wal::scheme::{
    Access, CommitRequest, LogKind, RecoveryPlan, Replay, ReplayError, RowMeta, RowRef, Scheme,
    SchemeConfig, SchemeWorker, Ticket,
};
use parking_lot::Mutex;

use crate::integration::prefix_source::Prefix;
use proptest::prelude::*;

mod scenarios;

const RING: usize = 1 << 20;

fn pcfg() -> PmemConfig {
    PmemConfig::default()
        .domain(Domain::Adr)
        .flush(None)
        .write_delay_ns(0)
}

/// One transaction of a schedule.
#[derive(Debug, Clone)]
struct Spec {
    worker: usize,
    reads: Vec<u64>,
    writes: Vec<u64>,
}

/// The value a transaction writes to `key`, from what it read.
fn value(txn: u64, key: u64, read_sum: u64) -> u64 {
    (txn.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ key.wrapping_mul(31) ^ read_sum.rotate_left(7)) | 1
}

/// Payload: txn, #reads, reads, #writes, (key, value) writes. Command logging ignores the
/// values and recomputes them from the recovered state.
fn encode(txn: u64, reads: &[u64], writes: &[(u64, u64)]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&txn.to_le_bytes());
    v.extend_from_slice(&(reads.len() as u64).to_le_bytes());
    for r in reads {
        v.extend_from_slice(&r.to_le_bytes());
    }
    v.extend_from_slice(&(writes.len() as u64).to_le_bytes());
    for (k, x) in writes {
        v.extend_from_slice(&k.to_le_bytes());
        v.extend_from_slice(&x.to_le_bytes());
    }
    v
}

type Decoded = (u64, Vec<u64>, Vec<(u64, u64)>);

fn decode(p: &[u8]) -> Decoded {
    let mut w = p
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()));
    let txn = w.next().unwrap();
    let nr = w.next().unwrap() as usize;
    let reads: Vec<u64> = (0..nr).map(|_| w.next().unwrap()).collect();
    let nw = w.next().unwrap() as usize;
    let writes = (0..nw)
        .map(|_| (w.next().unwrap(), w.next().unwrap()))
        .collect();
    (txn, reads, writes)
}

/// The fake engine: values and key locks, and (as braid's engine does) a scheme slot per key,
/// or none (the scheme then keys its LVs by identity).
struct Db {
    values: Vec<AtomicU64>,
    locks: Vec<Mutex<()>>,
    metas: Option<Vec<RowMeta>>,
    /// The run's dependency graph: successor -> predecessors (RAW, WAW, WAR), and the order of
    /// logged transactions.
    graph: Mutex<Graph>,
}

#[derive(Default)]
struct Graph {
    last_writer: HashMap<u64, u64>,
    readers: HashMap<u64, Vec<u64>>,
    /// txn -> (predecessors by RAW/WAW, predecessors by WAR).
    preds: HashMap<u64, (BTreeSet<u64>, BTreeSet<u64>)>,
    order: Vec<u64>,
    specs: HashMap<u64, (Vec<u64>, Vec<u64>)>,
}

impl Db {
    fn new(keys: u64, slots: bool) -> Db {
        Db {
            values: (0..keys).map(|_| AtomicU64::new(0)).collect(),
            locks: (0..keys).map(|_| Mutex::new(())).collect(),
            metas: slots.then(|| (0..keys).map(|_| RowMeta::default()).collect()),
            graph: Mutex::new(Graph::default()),
        }
    }

    /// Run one transaction on `w` (2PL with blocking exclusive locks in key order, or the OCC
    /// hook order) and return its ticket, or None if it was read-only.
    fn run(
        &self,
        w: &mut dyn SchemeWorker,
        txn: u64,
        s: &Spec,
        logging: LogKind,
        occ: bool,
    ) -> (bool, Ticket) {
        let keys: BTreeSet<u64> = s.reads.iter().chain(&s.writes).copied().collect();
        let guards: Vec<_> = keys
            .iter()
            .map(|&k| self.locks[k as usize].lock())
            .collect();
        let row = |k: u64| RowRef {
            table: 0,
            key: k,
            meta: self.metas.as_ref().map(|m| &m[k as usize]),
        };
        let mut sum = 0u64;
        for &k in &s.reads {
            w.on_read(row(k));
            sum = sum.wrapping_add(self.values[k as usize].load(Ordering::Relaxed));
        }
        for &k in &s.writes {
            w.on_write(row(k));
        }
        // The access set: each key once, read and/or written (empty without slots).
        let access: Vec<Access> = match &self.metas {
            None => Vec::new(),
            Some(_) => keys
                .iter()
                .map(|&k| Access {
                    row: row(k),
                    read: s.reads.contains(&k),
                    write: s.writes.contains(&k),
                })
                .collect(),
        };
        if occ {
            w.before_validate(&access);
        }
        let writes: Vec<(u64, u64)> = s.writes.iter().map(|&k| (k, value(txn, k, sum))).collect();
        let payload = encode(txn, &s.reads, &writes);
        let read_only = writes.is_empty();
        let req = CommitRequest {
            txn,
            kind: logging,
            payload: if read_only { &[] } else { &payload },
            read_only,
            epoch: 0,
            writes: &[],
            rows: &access,
            updates: 0,
        };
        let ticket = w.commit(&req).unwrap();
        {
            let mut g = self.graph.lock();
            let mut raw_waw = BTreeSet::new();
            let mut war = BTreeSet::new();
            for &k in &s.reads {
                if let Some(&p) = g.last_writer.get(&k) {
                    raw_waw.insert(p);
                }
            }
            for &k in &s.writes {
                if let Some(&p) = g.last_writer.get(&k) {
                    raw_waw.insert(p);
                }
                for &r in g.readers.get(&k).into_iter().flatten() {
                    if r != txn {
                        war.insert(r);
                    }
                }
            }
            if !read_only {
                for &k in &s.reads {
                    g.readers.entry(k).or_default().push(txn);
                }
                for &k in &s.writes {
                    g.last_writer.insert(k, txn);
                    g.readers.remove(&k);
                }
                g.preds.insert(txn, (raw_waw, war));
                g.order.push(txn);
                g.specs.insert(txn, (s.reads.clone(), s.writes.clone()));
            }
        }
        for (k, x) in &writes {
            self.values[*k as usize].store(*x, Ordering::Relaxed);
        }
        drop(guards);
        (!read_only, ticket)
    }
}

/// Recording replay: the recovered values and, per transaction, when its replay started and
/// finished.
struct Rec {
    logging: LogKind,
    values: Mutex<HashMap<u64, u64>>,
    seq: AtomicU64,
    spans: Mutex<HashMap<u64, (u64, u64)>>,
}

impl Rec {
    fn new(logging: LogKind) -> Rec {
        Rec {
            logging,
            values: Mutex::default(),
            seq: AtomicU64::new(0),
            spans: Mutex::default(),
        }
    }
}

impl Replay for Rec {
    fn apply(&self, txn: u64, kind: LogKind, payload: &[u8]) -> Result<(), ReplayError> {
        let start = self.seq.fetch_add(1, Ordering::SeqCst);
        // Stretch the replay so that parallel workers overlap and an order violation shows.
        for _ in 0..(txn % 4) {
            std::thread::yield_now();
        }
        if kind != self.logging {
            return Err(format!("txn {txn} logged as {kind}").into());
        }
        let (t, reads, writes) = decode(payload);
        if t != txn {
            return Err("payload of another transaction".into());
        }
        {
            let mut v = self.values.lock();
            let sum = reads
                .iter()
                .fold(0u64, |a, k| a.wrapping_add(*v.get(k).unwrap_or(&0)));
            for (k, x) in writes {
                let x = match kind {
                    LogKind::Data => x,
                    LogKind::Command => value(txn, k, sum),
                };
                v.insert(k, x);
            }
        }
        let end = self.seq.fetch_add(1, Ordering::SeqCst);
        if self.spans.lock().insert(txn, (start, end)).is_some() {
            return Err(format!("txn {txn} replayed twice").into());
        }
        Ok(())
    }
}

fn scfg(
    logging: LogKind,
    threads: usize,
    plan: RecoveryPlan,
    compress: bool,
) -> (SchemeConfig, TaurusConfig) {
    (
        SchemeConfig {
            logging,
            max_workers: 16,
            recovery_threads: threads,
            recovery_plan: plan,
            ..SchemeConfig::default()
        },
        TaurusConfig {
            delta: 512,
            compress: compress.into(),
            anchor_every: 700,
            ..TaurusConfig::default()
        },
    )
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

/// Check a recovery against the run's graph; returns the recovered set.
fn check(
    db: &Db,
    rec: &Rec,
    acked: &HashSet<u64>,
    logging: LogKind,
) -> Result<BTreeSet<u64>, String> {
    let g = db.graph.lock();
    let spans = rec.spans.lock();
    let recovered: BTreeSet<u64> = spans.keys().copied().collect();
    for t in acked {
        if !recovered.contains(t) {
            return Err(format!(
                "durability: acknowledged transaction {t} was not recovered"
            ));
        }
    }
    for &t in &recovered {
        let Some((hard, war)) = g.preds.get(&t) else {
            return Err(format!("recovered unknown transaction {t}"));
        };
        let preds: Vec<u64> = match logging {
            LogKind::Data => hard.iter().copied().collect(),
            LogKind::Command => hard.iter().chain(war).copied().collect(),
        };
        for p in preds {
            let Some(ps) = spans.get(&p) else {
                return Err(format!(
                    "closure: {t} recovered without its predecessor {p}"
                ));
            };
            if ps.1 >= spans[&t].0 {
                return Err(format!(
                    "order: {t} started replaying before its predecessor {p} finished"
                ));
            }
        }
    }
    // State: a serial replay of the recovered set in the run's order.
    let mut want: HashMap<u64, u64> = HashMap::new();
    for &t in g.order.iter().filter(|t| recovered.contains(t)) {
        let (reads, writes) = &g.specs[&t];
        let sum = reads
            .iter()
            .fold(0u64, |a, k| a.wrapping_add(*want.get(k).unwrap_or(&0)));
        for &k in writes {
            want.insert(k, value(t, k, sum));
        }
    }
    let got = rec.values.lock();
    if *got != want {
        let bad: Vec<_> = want
            .iter()
            .filter(|(k, v)| got.get(k) != Some(v))
            .take(3)
            .collect();
        return Err(format!(
            "state differs from a serial replay of the recovered set: {bad:?}"
        ));
    }
    Ok(recovered)
}

#[derive(Debug, Clone)]
struct Case {
    streams: usize,
    workers: usize,
    logging: LogKind,
    occ: bool,
    compress: bool,
    threads: usize,
    plan: RecoveryPlan,
    /// The engine hands the scheme a slot per row.
    slots: bool,
    txns: Vec<Spec>,
    /// Freeze after this many transactions...
    freeze_at: usize,
    /// ...this stream (None: all streams).
    frozen: Option<usize>,
}

fn run_case(c: &Case) -> Result<(), String> {
    let regions: Vec<Region> = (0..c.streams)
        .map(|_| CrashSim::region(RING, pcfg()))
        .collect();
    // On one data-logged stream `Auto` with several threads replays each thread's share of
    // the keys (`recovery/single.rs`), which needs redo payloads and orders each key, not each
    // transaction; this fake engine's payloads and its order check are per transaction, so
    // that case runs the pipeline's parallel replay here (the shared scan has its own test,
    // `taurus_one_log_shares`).
    let plan = match c.plan {
        RecoveryPlan::Auto if c.streams == 1 && c.threads > 1 && c.logging == LogKind::Data => {
            RecoveryPlan::Parallel
        }
        p => p,
    };
    let cfg = scfg(c.logging, c.threads, plan, c.compress);
    let (scheme, _) = open_taurus(
        &cfg.0,
        &cfg.1,
        devices(&regions),
        &Rec::new(c.logging),
        &|_| {},
    )
    .map_err(|e| e.to_string())?;
    let db = Db::new(32, c.slots);
    let mut workers: Vec<Box<dyn SchemeWorker>> =
        (0..c.workers).map(|w| scheme.worker(w).unwrap()).collect();
    let mut tickets: Vec<(u64, Ticket)> = Vec::new();
    let mut acked = HashSet::new();
    for (i, s) in c.txns.iter().enumerate() {
        if i == c.freeze_at {
            for (t, tk) in &tickets {
                if tk.is_durable().map_err(|e| e.to_string())? {
                    acked.insert(*t);
                }
            }
            for (k, r) in regions.iter().enumerate() {
                if c.frozen.is_none_or(|f| f == k) {
                    r.freeze_after(0).unwrap();
                }
            }
        }
        let txn = i as u64 + 1;
        let (logged, t) = db.run(
            &mut *workers[s.worker % c.workers],
            txn,
            s,
            c.logging,
            c.occ,
        );
        if logged {
            tickets.push((txn, t));
        }
    }
    if c.freeze_at >= c.txns.len() {
        for (t, tk) in &tickets {
            tk.wait().map_err(|e| e.to_string())?;
            acked.insert(*t);
        }
    }
    drop(workers);
    let _ = scheme.close();
    drop(scheme);
    let images: Vec<Region> = regions
        .iter()
        .map(|r| r.crash(CrashMode::DropUnpersisted).unwrap())
        .collect();
    // A standby that read the streams in rounds, before the writer's recovery below trims them.
    let followed = (!c.compress)
        .then(|| follow_in_rounds(&cfg, &images, c.logging, c.txns.len()))
        .transpose()?;
    let rec = Rec::new(c.logging);
    let (s2, rep) =
        open_taurus(&cfg.0, &cfg.1, devices(&images), &rec, &|_| {}).map_err(|e| e.to_string())?;
    let set1 = check(&db, &rec, &acked, c.logging)?;
    if let Some(f) = followed {
        let setf = check(&db, &f, &acked, c.logging).map_err(|e| format!("standby: {e}"))?;
        if setf != set1 || *f.values.lock() != *rec.values.lock() {
            return Err(format!(
                "standby: replayed {} transactions in rounds, recovery {}",
                setf.len(),
                set1.len()
            ));
        }
    }
    if rep.txns as usize != set1.len() {
        return Err(format!(
            "report counts {} transactions, {} were replayed",
            rep.txns,
            set1.len()
        ));
    }
    s2.close().map_err(|e| e.to_string())?;
    drop(s2);
    // Recover what the first recovery left: the same set, the same state.
    let images2: Vec<Region> = images
        .iter()
        .map(|r| r.crash(CrashMode::DropUnpersisted).unwrap())
        .collect();
    let rec2 = Rec::new(c.logging);
    let (s3, _) = open_taurus(&cfg.0, &cfg.1, devices(&images2), &rec2, &|_| {})
        .map_err(|e| e.to_string())?;
    let set2: BTreeSet<u64> = rec2.spans.lock().keys().copied().collect();
    if set2 != set1 || *rec2.values.lock() != *rec.values.lock() {
        return Err("idempotence: a second recovery recovered something else".into());
    }
    let _ = s3.close();
    Ok(())
}

/// Replay the crashed log as a standby does: in rounds over growing prefixes of the streams
/// (cut at uneven points, so records are split between rounds), the last over the whole log.
fn follow_in_rounds(
    cfg: &(SchemeConfig, TaurusConfig),
    images: &[Region],
    logging: LogKind,
    salt: usize,
) -> Result<Rec, String> {
    let devs = devices(images);
    let mut f = cfg
        .1
        .follower(&cfg.0, devs.len())
        .map_err(|e| e.to_string())?;
    let rec = Rec::new(logging);
    // Where each stream's records end (a pmem device's limit is its ring's end).
    let ends: Vec<u64> = devs
        .iter()
        .map(|d| {
            let mut sc = Scanner::new(&**d, ScanMode::Salvage);
            while let Ok(Some(_)) = sc.next_record() {}
            sc.end().map_or(d.start(), |e| e.end)
        })
        .collect();
    const ROUNDS: u64 = 5;
    for r in 1..=ROUNDS {
        let views: Vec<Prefix> = devs
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let len = ends[i] - d.start();
                let jitter = ((i + salt) as u64 * 37) % 61;
                let cut = if r == ROUNDS {
                    u64::MAX
                } else {
                    d.start() + (len * r / ROUNDS).saturating_sub(jitter)
                };
                Prefix {
                    src: d.clone(),
                    cut,
                }
            })
            .collect();
        let srcs: Vec<&(dyn StreamSource + Sync)> = views.iter().map(|v| v as _).collect();
        f.round(&srcs, &rec)
            .map_err(|e| format!("standby round {r}: {e}"))?;
    }
    Ok(rec)
}

fn spec_strategy(workers: usize) -> impl Strategy<Value = Spec> {
    (
        0..workers,
        prop::collection::vec(0u64..12, 0..3),
        prop::collection::vec(0u64..12, 0..3),
    )
        .prop_map(|(worker, reads, writes)| {
            let reads: Vec<u64> = reads
                .into_iter()
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            let writes: Vec<u64> = writes
                .into_iter()
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            Spec {
                worker,
                reads,
                writes,
            }
        })
}

fn case_strategy() -> impl Strategy<Value = Case> {
    (
        1usize..=4,
        1usize..=6,
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        1usize..=3,
        0u8..3,
        any::<bool>(),
    )
        .prop_flat_map(
            |(streams, workers, command, occ, compress, threads, plan, slots)| {
                let workers = workers.max(streams);
                (
                    prop::collection::vec(spec_strategy(workers), 1..120),
                    0usize..130,
                    prop::option::of(0..streams),
                )
                    .prop_map(move |(txns, freeze_at, frozen)| Case {
                        streams,
                        workers,
                        logging: if command {
                            LogKind::Command
                        } else {
                            LogKind::Data
                        },
                        occ,
                        compress,
                        threads,
                        plan: [
                            RecoveryPlan::Auto,
                            RecoveryPlan::Parallel,
                            RecoveryPlan::Serial,
                        ][plan as usize],
                        slots,
                        txns,
                        freeze_at,
                        frozen,
                    })
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn recovery_respects_the_dependency_graph(c in case_strategy()) {
        if let Err(e) = run_case(&c) {
            prop_assert!(false, "{e}\ncase: {c:?}");
        }
    }
}
