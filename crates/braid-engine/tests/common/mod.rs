//! Shared by the fault tests (`faults.rs`, `recovery_crash.rs`, `alice.rs`): a counter workload
//! whose every transaction depends on the one before it, so the set a recovery may keep is a
//! prefix of the installed transactions (docs/design.md invariants 1-4), and the checker of a
//! recovered database against that prefix.
//!
//! Transaction `i` (its logical number, counted over attempts) reads and increments row 0 of
//! `ctr` (the number of transactions applied), sets row `1 + i % 5` of `ctr` to `i`, and
//! inserts `i` into `hist`. Two workers alternate (worker `i % 2`), so multi-stream schemes
//! spread consecutive transactions over two streams while the chain through row 0 keeps them
//! ordered.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use braid_engine::log::*;
use braid_engine::testing::{Env, PmemEnv, SimPmem};
use braid_engine::*;
use braid_wal::fs::FaultFs;

pub const CTR: TableId = TableId(0);
pub const HIST: TableId = TableId(1);
/// Rows of `ctr` besides row 0.
pub const SLOTS: u64 = 5;

pub fn catalog() -> Catalog {
    let mut c = Catalog::new();
    c.add(TableDef::new("ctr", IndexKind::Hash).column("v", ColumnType::U64));
    c.add(TableDef::new("hist", IndexKind::Ordered).column("v", ColumnType::U64));
    c
}

pub fn load(l: &Loader<'_>) -> Result<(), EngineError> {
    for k in 0..=SLOTS {
        l.insert(CTR, k, &0u64.to_le_bytes())?;
    }
    Ok(())
}

/// Small files, so a short run crosses several segments.
pub fn file_device() -> DeviceConfig {
    DeviceConfig::File(
        FileOptions::default()
            .segment_size(4096)
            .buffer_size(64 << 10)
            .direct(false),
    )
}

/// Files with room for a whole test's log in a few segments (64 KiB segments, 256 KiB buffer).
pub fn roomy_file_device() -> DeviceConfig {
    DeviceConfig::File(
        FileOptions::default()
            .segment_size(64 << 10)
            .buffer_size(256 << 10)
            .direct(false),
    )
}

/// A pmem ring of `ring_size` bytes, not de-staged.
pub fn pmem_ring(ring_size: usize) -> DeviceConfig {
    DeviceConfig::Pmem(PmemOptions::default().ring_size(ring_size).destage(false))
}

pub fn pmem_device(destage: bool) -> DeviceConfig {
    DeviceConfig::Pmem(
        PmemOptions::default()
            .ring_size(16 << 10)
            .destage(destage)
            .destage_segment_size(4096),
    )
}

/// Two streams for the schemes that use several.
pub fn options(scheme: &'static str, device: DeviceConfig, env: Env) -> Options {
    Options::default()
        .scheme(scheme.parse().unwrap())
        .logging(LogKind::Data)
        .device(device)
        .streams(2)
        .max_workers(4)
        .env(env)
}

pub fn file_env(fs: &FaultFs) -> Env {
    Env {
        fs: Arc::new(fs.clone()),
        pmem: PmemEnv::Files,
    }
}

pub fn pmem_env(fs: &FaultFs, sim: &SimPmem) -> Env {
    Env {
        fs: Arc::new(fs.clone()),
        pmem: PmemEnv::Sim(sim.clone()),
    }
}

pub fn open(dir: &Path, o: Options) -> Result<Db, EngineError> {
    Db::builder(dir)
        .options(o)
        .catalog(catalog())
        .loader(load)
        .open()
        .map(|(db, _)| db)
}

/// Transaction `i` on `w`, its writes made and not yet committed.
fn txn(w: &mut Worker, i: u64) -> Result<Txn<'_>, TxError> {
    let mut t = w.begin();
    let n = t.get::<u64>(CTR, 0, 0)?.unwrap_or(0);
    t.update(CTR, 0, |r| r.set::<u64>(0, n + 1))?;
    t.update(CTR, 1 + i % SLOTS, |r| r.set::<u64>(0, i))?;
    t.insert(HIST, i, &i.to_le_bytes())?;
    Ok(t)
}

/// Run transaction `i` on `w` with a pipelined commit; the ticket if it was installed (the
/// histories here tell installed from acknowledged commits).
pub fn run_txn(w: &mut Worker, i: u64) -> Result<Ticket, TxError> {
    txn(w, i)?.commit_async()
}

/// Run transaction `i` on `w`; returns once it is durable.
pub fn run_txn_durable(w: &mut Worker, i: u64) -> Result<(), TxError> {
    txn(w, i)?.commit()
}

/// What a run did: the installed transactions in order and which of them were acknowledged.
#[derive(Debug, Default, Clone)]
pub struct History {
    /// Logical numbers of the installed transactions, in commit order.
    pub installed: Vec<u64>,
    /// Positions in `installed` that were acknowledged.
    pub acked: Vec<usize>,
}

impl History {
    /// The number of installed transactions every recovery must keep.
    pub fn must_keep(&self) -> usize {
        self.acked.iter().map(|&p| p + 1).max().unwrap_or(0)
    }
}

/// The database state as (ctr values, hist keys).
pub type State = (Vec<u64>, Vec<u64>);

pub fn state(db: &Db) -> State {
    let ctr = (0..=SLOTS)
        .map(|k| {
            db.peek(CTR, k)
                .map(|img| db.schema(CTR).get::<u64>(&img, 0))
                .unwrap_or(u64::MAX)
        })
        .collect();
    let mut hist = Vec::new();
    db.for_each_row(HIST, .., |k, _| hist.push(k));
    hist.sort_unstable();
    (ctr, hist)
}

/// The state after the first `p` installed transactions.
pub fn model(installed: &[u64], p: usize) -> State {
    let mut ctr = vec![0u64; SLOTS as usize + 1];
    ctr[0] = p as u64;
    for &i in &installed[..p] {
        ctr[1 + (i % SLOTS) as usize] = i;
    }
    let mut hist = installed[..p].to_vec();
    hist.sort_unstable();
    (ctr, hist)
}

/// Check a recovered database against `h`: it holds a prefix of the installed transactions
/// (atomicity, order, closure) that covers every acknowledged one (durability). Returns the
/// prefix length, or a description of the violation.
pub fn check(db: &Db, h: &History) -> Result<usize, String> {
    let s = state(db);
    let p = s.0[0] as usize;
    if p > h.installed.len() {
        return Err(format!(
            "recovered {p} transactions but only {} were installed",
            h.installed.len()
        ));
    }
    let want = model(&h.installed, p);
    if s != want {
        return Err(format!(
            "recovered state is not the prefix of {p} transactions: got {s:?}, want {want:?}"
        ));
    }
    if p < h.must_keep() {
        return Err(format!(
            "durability: {} acknowledged transactions needed, only {p} recovered",
            h.must_keep()
        ));
    }
    Ok(p)
}

/// Run `n` transactions on two alternating workers, waiting for each ticket; `on_ack` is
/// called after each acknowledgement (to note when it happened). Panics on any failure.
pub fn run_clean(db: &Db, from: u64, n: u64, h: &mut History, on_ack: &mut dyn FnMut(usize)) {
    let mut ws = [db.worker().unwrap(), db.worker().unwrap()];
    for i in from..from + n {
        let t = run_txn(&mut ws[(i % 2) as usize], i).unwrap();
        h.installed.push(i);
        let pos = h.installed.len() - 1;
        t.wait().unwrap();
        h.acked.push(pos);
        on_ack(pos);
    }
}
