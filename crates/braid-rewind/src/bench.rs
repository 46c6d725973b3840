//! The experiments of REWIND's evaluation (§5), as library functions the `braid` command
//! calls (`braid bench rewind`): each takes a config struct and returns a serde-serializable
//! result. Timed figures are medians of `runs` runs; every figure is also given as a ratio to
//! the non-recoverable baseline measured in the same run (DESIGN.md, "Measuring").
//!
//! * [`word_tx`]: 1-word transactions per second and fences per transaction for each REWIND
//!   configuration, against non-recoverable persisted stores (§5.1, worst case of Fig. 3).
//! * [`btree_mix`]: the B+-tree mix of Fig. 7 (100k 32-byte records, 200k operations, update
//!   fraction 0-100%, updates split between inserts and deletes) for DRAM, non-recoverable
//!   NVM, Simple, Optimized and Batch.
//! * [`fence_sensitivity`]: Fig. 10, the 100%-update mix with an emulated extra latency per
//!   persisted line (braid-pmem's `write_delay_ns`), Optimized against Batch with groups of
//!   8, 16 and 32.
//! * [`rollback_recovery`]: Fig. 8, rollback time of one transaction of N mixed operations,
//!   and recovery time of N operations in transactions of 200 left unfinished by a crash.
//! * [`btree_insert_lookup`]: inserts and lookups of random keys, each a transaction (the
//!   operations the PMDK comparison measures).
//!
//! Choices: pools live in a region file under `/dev/shm` (DRAM standing in for persistent
//! memory, flushed with CLWB/CLFLUSHOPT and fenced as real persistent memory would be) or in
//! anonymous DRAM for the DRAM baseline; REWIND runs no-force with checkpoints at half the
//! log's capacity (the paper ran without checkpoints; our logs are finite).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use braid_pmem::{Domain, PmemConfig, Region};
use rand::{Rng, SeedableRng, rngs::SmallRng};
use serde::{Deserialize, Serialize};

use crate::btree::BTree;
use crate::tx::{Mem, RawMem};
use crate::{Layers, LogLayout, LogMode, PPtr, Policy, Pool, PoolConfig, RewindError};

/// Where benchmark pools live.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Backing {
    /// Anonymous DRAM: flushes and fences are no-ops.
    Dram,
    /// A region file in this directory (e.g. `/dev/shm`, or a DAX mount).
    Dir(PathBuf),
}

impl Default for Backing {
    fn default() -> Self {
        Backing::Dir(PathBuf::from("/dev/shm"))
    }
}

/// A benchmark region that removes its file when dropped.
#[derive(Debug)]
pub struct BenchRegion {
    region: Region,
    path: Option<PathBuf>,
}

impl Drop for BenchRegion {
    fn drop(&mut self) {
        if let Some(p) = &self.path {
            let _ = std::fs::remove_file(p);
        }
    }
}

impl BenchRegion {
    pub fn region(&self) -> Region {
        self.region.clone()
    }
}

/// A region for a benchmark pool on `backing` (its file, if any, is removed on drop).
pub fn bench_region(backing: &Backing, bytes: usize) -> Result<BenchRegion, RewindError> {
    region(backing, bytes, 0)
}

static FILE_NO: AtomicU64 = AtomicU64::new(0);

fn region(
    backing: &Backing,
    bytes: usize,
    write_delay_ns: u64,
) -> Result<BenchRegion, RewindError> {
    match backing {
        Backing::Dram => Ok(BenchRegion {
            region: Region::anonymous(bytes),
            path: None,
        }),
        Backing::Dir(d) => {
            let path = d.join(format!(
                "braid-rewind-bench-{}-{}",
                std::process::id(),
                FILE_NO.fetch_add(1, Ordering::Relaxed)
            ));
            let cfg = PmemConfig {
                domain: Domain::Adr,
                flush: None,
                write_delay_ns,
                // A benchmark: the backing directory (e.g. /dev/shm) emulates persistent memory.
                media: braid_pmem::Media::Emulated,
            };
            let region = Region::create(&path, bytes, cfg)?;
            Ok(BenchRegion {
                region,
                path: Some(path),
            })
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() { 0.0 } else { v[v.len() / 2] }
}

/// A REWIND configuration with a label.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Variant {
    pub label: String,
    pub pool: PoolConfig,
}

fn variant(label: &str, layout: LogLayout, policy: Policy, layers: Layers) -> Variant {
    Variant {
        label: label.to_string(),
        pool: PoolConfig {
            layout,
            policy,
            layers,
            logs: LogMode::Shared,
            ..PoolConfig::default()
        },
    }
}

/// The configurations of §5.1: Simple, Optimized and Batch, force and no-force, one layer;
/// Optimized with two layers.
pub fn standard_variants() -> Vec<Variant> {
    use Layers::*;
    use LogLayout::*;
    use Policy::*;
    vec![
        variant("simple-1l-nf", Simple, NoForce, One),
        variant("simple-1l-f", Simple, Force, One),
        variant("optimized-1l-nf", Optimized, NoForce, One),
        variant("optimized-1l-f", Optimized, Force, One),
        variant("batch-1l-nf", Batch, NoForce, One),
        variant("batch-1l-f", Batch, Force, One),
        variant("optimized-2l-nf", Optimized, NoForce, Two),
        variant("optimized-2l-f", Optimized, Force, Two),
    ]
}

/// The three versions of Fig. 7 (no-force, one layer).
pub fn fig7_variants() -> Vec<Variant> {
    use LogLayout::*;
    vec![
        variant("simple", Simple, Policy::NoForce, Layers::One),
        variant("optimized", Optimized, Policy::NoForce, Layers::One),
        variant("batch", Batch, Policy::NoForce, Layers::One),
    ]
}

// ---------------------------------------------------------------------------------------
// 1-word transactions
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WordTxConfig {
    pub backing: Backing,
    /// Transactions per run.
    pub transactions: u64,
    /// Words of the array the transactions update (a random one each).
    pub words: usize,
    pub variants: Vec<Variant>,
    pub runs: usize,
    pub write_delay_ns: u64,
}

impl Default for WordTxConfig {
    fn default() -> Self {
        WordTxConfig {
            backing: Backing::default(),
            transactions: 200_000,
            words: 4096,
            variants: standard_variants(),
            runs: 3,
            write_delay_ns: 0,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WordTxRow {
    pub label: String,
    pub tx_per_sec: f64,
    pub ns_per_tx: f64,
    pub fences_per_tx: f64,
    pub lines_flushed_per_tx: f64,
    /// Time per transaction over the time of one persisted non-recoverable store.
    pub slowdown_vs_raw: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WordTxResult {
    pub config: WordTxConfig,
    /// Non-recoverable stores (store + flush + fence) per second.
    pub raw_stores_per_sec: f64,
    /// Plain stores per second (DRAM, nothing persisted).
    pub dram_stores_per_sec: f64,
    pub rows: Vec<WordTxRow>,
}

/// 1-word transactions per second and fences per transaction (see the module docs).
pub fn word_tx(cfg: &WordTxConfig) -> Result<WordTxResult, RewindError> {
    let bytes = 64 << 20;
    let mut raw = Vec::new();
    let mut dram = Vec::new();
    for _ in 0..cfg.runs.max(1) {
        for (backing, out) in [(&cfg.backing, &mut raw), (&Backing::Dram, &mut dram)] {
            let reg = region(backing, bytes, cfg.write_delay_ns)?;
            let r = &reg.region;
            let mut rng = SmallRng::seed_from_u64(1);
            let t = Instant::now();
            for i in 0..cfg.transactions {
                let off = 4096 + 8 * rng.gen_range(0..cfg.words);
                r.store_u64(off, i);
                r.persist(off, 8);
            }
            out.push(cfg.transactions as f64 / t.elapsed().as_secs_f64());
        }
    }
    let raw_sps = median(raw);
    let mut rows = Vec::new();
    for v in &cfg.variants {
        let mut tps = Vec::new();
        let mut fences = 0.0;
        let mut lines = 0.0;
        for _ in 0..cfg.runs.max(1) {
            let reg = region(&cfg.backing, bytes, cfg.write_delay_ns)?;
            let pool = Pool::create_in(reg.region.clone(), v.pool)?;
            let arr: PPtr<u64> = {
                let mut m = RawMem::new(&pool);
                let a = m.alloc(8 * cfg.words)?;
                m.write_bytes(a, &vec![0u8; 8 * cfg.words])?;
                PPtr::from_offset(a)
            };
            let mut rng = SmallRng::seed_from_u64(1);
            let s0 = pool.pmem_stats();
            let t = Instant::now();
            for i in 0..cfg.transactions {
                let w = rng.gen_range(0..cfg.words) as u64;
                pool.transaction(|tx| tx.write(arr.field::<u64>(8 * w), i + 1))?;
            }
            tps.push(cfg.transactions as f64 / t.elapsed().as_secs_f64());
            let d = pool.pmem_stats().since(&s0);
            fences = d.fences as f64 / cfg.transactions as f64;
            lines = d.lines_flushed as f64 / cfg.transactions as f64;
        }
        let tps = median(tps);
        rows.push(WordTxRow {
            label: v.label.clone(),
            tx_per_sec: tps,
            ns_per_tx: 1e9 / tps,
            fences_per_tx: fences,
            lines_flushed_per_tx: lines,
            slowdown_vs_raw: raw_sps / tps,
        });
    }
    Ok(WordTxResult {
        config: cfg.clone(),
        raw_stores_per_sec: raw_sps,
        dram_stores_per_sec: median(dram),
        rows,
    })
}

// ---------------------------------------------------------------------------------------
// B+-tree mix (Fig. 7) and fence sensitivity (Fig. 10)
// ---------------------------------------------------------------------------------------

/// A system of Fig. 7.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum System {
    /// The tree in anonymous DRAM, plain stores.
    Dram,
    /// The non-recoverable twin on persistent memory (stores persisted, no log).
    Nvm,
    /// The tree over REWIND.
    Rewind(Variant),
}

impl System {
    pub fn label(&self) -> String {
        match self {
            System::Dram => "dram".into(),
            System::Nvm => "nvm".into(),
            System::Rewind(v) => v.label.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BTreeMixConfig {
    pub backing: Backing,
    pub records: u64,
    pub operations: u64,
    pub update_fractions: Vec<f64>,
    pub value_size: usize,
    pub node_bytes: usize,
    pub systems: Vec<System>,
    pub runs: usize,
    pub write_delay_ns: u64,
}

impl Default for BTreeMixConfig {
    fn default() -> Self {
        let mut systems = vec![System::Dram, System::Nvm];
        systems.extend(fig7_variants().into_iter().map(System::Rewind));
        BTreeMixConfig {
            backing: Backing::default(),
            records: 100_000,
            operations: 200_000,
            update_fractions: (0..=10).map(|i| i as f64 / 10.0).collect(),
            value_size: 32,
            node_bytes: 512,
            systems,
            runs: 3,
            write_delay_ns: 0,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MixPoint {
    pub system: String,
    pub update_fraction: f64,
    pub seconds: f64,
    pub ops_per_sec: f64,
    /// Time over the non-recoverable twin's (Nvm) at the same fraction, if it was run.
    pub ratio_vs_nvm: Option<f64>,
    pub fences_per_op: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BTreeMixResult {
    pub config: BTreeMixConfig,
    pub points: Vec<MixPoint>,
}

fn pool_bytes(records: u64, operations: u64, value_size: usize) -> usize {
    let data = (records + operations) as usize * (value_size + 8) * 3;
    (data + (256 << 20)).next_multiple_of(1 << 20)
}

/// Run the mix once on `sys`; returns (seconds, fences per op).
fn mix_once(cfg: &BTreeMixConfig, sys: &System, frac: f64) -> Result<(f64, f64), RewindError> {
    let bytes = pool_bytes(cfg.records, cfg.operations, cfg.value_size);
    let (backing, pcfg) = match sys {
        System::Dram => (Backing::Dram, PoolConfig::default()),
        System::Nvm => (cfg.backing.clone(), PoolConfig::default()),
        System::Rewind(v) => (cfg.backing.clone(), v.pool),
    };
    let reg = region(&backing, bytes, cfg.write_delay_ns)?;
    let pool = Pool::create_in(reg.region.clone(), pcfg)?;
    let mut rng = SmallRng::seed_from_u64(42);
    let vs = cfg.value_size;
    let mut val = vec![0u8; vs];
    // Load with plain stores (not measured): keys 0, 2, 4, ... so inserts of odd keys and
    // deletes of present keys keep the size constant.
    let t = {
        let mut m = RawMem::new(&pool);
        let t = BTree::create(&mut m, cfg.node_bytes, vs)?;
        let mut keys: Vec<u64> = (0..cfg.records).map(|k| 2 * k).collect();
        for i in (1..keys.len()).rev() {
            keys.swap(i, rng.gen_range(0..=i));
        }
        for k in keys {
            val[..8].copy_from_slice(&k.to_le_bytes());
            t.insert(&mut m, k, &val)?;
        }
        t
    };
    let mut present: Vec<u64> = (0..cfg.records).map(|k| 2 * k).collect();
    let mut next_new = 2 * cfg.records + 1;
    let s0 = pool.pmem_stats();
    let start = Instant::now();
    let mut insert_next = true;
    for _ in 0..cfg.operations {
        let is_update = rng.gen_bool(frac.clamp(0.0, 1.0));
        if !is_update {
            let k = present[rng.gen_range(0..present.len())];
            let m = RawMem::new(&pool);
            let mut out = [0u8; 256];
            std::hint::black_box(t.get(&m, k, &mut out[..vs]));
            continue;
        }
        let ins = insert_next;
        insert_next = !insert_next;
        let (k, idx) = if ins {
            next_new += 2;
            (next_new, None)
        } else {
            let i = rng.gen_range(0..present.len());
            (present[i], Some(i))
        };
        val[..8].copy_from_slice(&k.to_le_bytes());
        match sys {
            System::Rewind(_) => pool.transaction(|tx| -> Result<(), RewindError> {
                if ins {
                    t.insert(tx, k, &val)?;
                } else {
                    t.remove(tx, k)?;
                }
                Ok(())
            })?,
            _ => {
                let mut m = RawMem::new(&pool);
                if ins {
                    t.insert(&mut m, k, &val)?;
                } else {
                    t.remove(&mut m, k)?;
                }
            }
        }
        match idx {
            None => present.push(k),
            Some(i) => {
                present.swap_remove(i);
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let d = pool.pmem_stats().since(&s0);
    Ok((secs, d.fences as f64 / cfg.operations as f64))
}

/// The B+-tree mix of Fig. 7 (see the module docs).
pub fn btree_mix(cfg: &BTreeMixConfig) -> Result<BTreeMixResult, RewindError> {
    let mut points = Vec::new();
    for &frac in &cfg.update_fractions {
        let mut row = Vec::new();
        for sys in &cfg.systems {
            let mut secs = Vec::new();
            let mut fences = 0.0;
            for _ in 0..cfg.runs.max(1) {
                let (s, f) = mix_once(cfg, sys, frac)?;
                secs.push(s);
                fences = f;
            }
            let s = median(secs);
            row.push(MixPoint {
                system: sys.label(),
                update_fraction: frac,
                seconds: s,
                ops_per_sec: cfg.operations as f64 / s,
                ratio_vs_nvm: None,
                fences_per_op: fences,
            });
        }
        let nvm = row.iter().find(|p| p.system == "nvm").map(|p| p.seconds);
        for p in &mut row {
            p.ratio_vs_nvm = nvm.map(|n| p.seconds / n);
        }
        points.extend(row);
    }
    Ok(BTreeMixResult {
        config: cfg.clone(),
        points,
    })
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FenceConfig {
    pub mix: BTreeMixConfig,
    /// Emulated extra latency per persisted line, nanoseconds.
    pub delays_ns: Vec<u64>,
    /// Batch group sizes to compare with Optimized.
    pub groups: Vec<usize>,
}

impl Default for FenceConfig {
    fn default() -> Self {
        FenceConfig {
            mix: BTreeMixConfig {
                update_fractions: vec![1.0],
                records: 100_000,
                operations: 50_000,
                runs: 3,
                ..BTreeMixConfig::default()
            },
            delays_ns: vec![0, 150, 300, 600],
            groups: vec![8, 16, 32],
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FencePoint {
    pub system: String,
    pub delay_ns: u64,
    pub seconds: f64,
    /// Time over the same system's time without added latency.
    pub slowdown: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FenceResult {
    pub config: FenceConfig,
    pub points: Vec<FencePoint>,
}

/// Fig. 10: the 100%-update mix under emulated persist latency (see the module docs).
pub fn fence_sensitivity(cfg: &FenceConfig) -> Result<FenceResult, RewindError> {
    let mut systems = vec![variant(
        "optimized",
        LogLayout::Optimized,
        Policy::NoForce,
        Layers::One,
    )];
    for &g in &cfg.groups {
        let mut v = variant(
            &format!("batch-{g}"),
            LogLayout::Batch,
            Policy::NoForce,
            Layers::One,
        );
        v.pool.batch_group = g;
        systems.push(v);
    }
    let mut points = Vec::new();
    for v in systems {
        let mut base = None;
        for &d in &cfg.delays_ns {
            let mut mix = cfg.mix.clone();
            mix.write_delay_ns = d;
            let sys = System::Rewind(v.clone());
            let mut secs = Vec::new();
            for _ in 0..mix.runs.max(1) {
                secs.push(mix_once(&mix, &sys, *mix.update_fractions.first().unwrap_or(&1.0))?.0);
            }
            let s = median(secs);
            let b = *base.get_or_insert(s);
            points.push(FencePoint {
                system: v.label.clone(),
                delay_ns: d,
                seconds: s,
                slowdown: s / b,
            });
        }
    }
    Ok(FenceResult {
        config: cfg.clone(),
        points,
    })
}

// ---------------------------------------------------------------------------------------
// Rollback and recovery (Fig. 8)
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecoveryConfig {
    pub backing: Backing,
    pub records: u64,
    /// Numbers of operations (insert/delete pairs count as two).
    pub operations: Vec<u64>,
    /// Operations per transaction in the recovery experiment (the paper: 200).
    pub ops_per_tx: u64,
    pub variants: Vec<Variant>,
    pub value_size: usize,
    pub node_bytes: usize,
}

impl Default for RecoveryConfig {
    fn default() -> Self {
        let mut variants = fig7_variants();
        variants.push(variant(
            "optimized-2l",
            LogLayout::Optimized,
            Policy::NoForce,
            Layers::Two,
        ));
        variants.push(variant(
            "batch-force",
            LogLayout::Batch,
            Policy::Force,
            Layers::One,
        ));
        RecoveryConfig {
            backing: Backing::default(),
            records: 100_000,
            operations: vec![10_000, 40_000, 80_000],
            ops_per_tx: 200,
            variants,
            value_size: 32,
            node_bytes: 512,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecoveryPoint {
    pub variant: String,
    pub operations: u64,
    /// Rolling back one transaction of `operations` operations.
    pub rollback_ms: f64,
    /// Recovering `operations` operations in unfinished transactions of `ops_per_tx`.
    pub recovery_ms: f64,
    pub recovered_transactions: usize,
    pub undone_records: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecoveryResult {
    pub config: RecoveryConfig,
    pub points: Vec<RecoveryPoint>,
}

fn loaded_tree(pool: &Pool, records: u64, node: usize, vs: usize) -> Result<BTree, RewindError> {
    let mut m = RawMem::new(pool);
    let t = BTree::create(&mut m, node, vs)?;
    pool.raw_set_root(PPtr::<u8>::from_offset(t.header()));
    let mut rng = SmallRng::seed_from_u64(3);
    let mut keys: Vec<u64> = (0..records).map(|k| 2 * k).collect();
    for i in (1..keys.len()).rev() {
        keys.swap(i, rng.gen_range(0..=i));
    }
    let val = vec![7u8; vs];
    for k in keys {
        t.insert(&mut m, k, &val)?;
    }
    Ok(t)
}

/// `n` operations alternating inserts of new keys and deletes of random present ones.
fn mixed_ops(
    m: &mut impl Mem,
    t: &BTree,
    n: u64,
    rng: &mut SmallRng,
    records: u64,
    next: &mut u64,
) -> Result<(), RewindError> {
    let val = vec![9u8; t.value_size()];
    for i in 0..n {
        if i % 2 == 0 {
            *next += 2;
            t.insert(m, *next, &val)?;
        } else {
            t.remove(m, 2 * rng.gen_range(0..records))?;
        }
    }
    Ok(())
}

/// Fig. 8: rollback and recovery time (see the module docs).
pub fn rollback_recovery(cfg: &RecoveryConfig) -> Result<RecoveryResult, RewindError> {
    let mut points = Vec::new();
    for v in &cfg.variants {
        for &n in &cfg.operations {
            let mut pc = v.pool;
            pc.log_capacity = ((n * 12) as usize + 4096).next_multiple_of(1024);
            pc.checkpoint_fraction = 1.0;
            let bytes = pool_bytes(cfg.records, n, cfg.value_size) + pc.log_capacity * 128;
            // Rollback of one big transaction.
            let reg = region(&cfg.backing, bytes, 0)?;
            let pool = Pool::create_in(reg.region.clone(), pc)?;
            let t = loaded_tree(&pool, cfg.records, cfg.node_bytes, cfg.value_size)?;
            let mut rng = SmallRng::seed_from_u64(5);
            let mut next = 2 * cfg.records + 1;
            let mut rollback_ms = f64::NAN;
            let start = std::cell::Cell::new(None);
            let res = pool.transaction(|tx| -> Result<(), RewindError> {
                mixed_ops(tx, &t, n, &mut rng, cfg.records, &mut next)?;
                start.set(Some(Instant::now()));
                Err(RewindError::Invalid("roll back".into()))
            });
            if let (Err(RewindError::Invalid(_)), Some(s)) = (res, start.get()) {
                rollback_ms = s.elapsed().as_secs_f64() * 1e3;
            }
            drop(pool);
            // Recovery of unfinished transactions.
            let (pool, _) = Pool::open_in(reg.region.clone())?;
            let mut left = n;
            while left > 0 {
                let k = left.min(cfg.ops_per_tx);
                pool.abandon_transaction(|tx| {
                    mixed_ops(tx, &t, k, &mut rng, cfg.records, &mut next)
                })?;
                left -= k;
            }
            drop(pool);
            let s = Instant::now();
            let (pool, rep) = Pool::open_in(reg.region.clone())?;
            let recovery_ms = s.elapsed().as_secs_f64() * 1e3;
            t.check(&RawMem::new(&pool))
                .map_err(|e| RewindError::Corrupt(format!("{}: {e}", v.label)))?;
            points.push(RecoveryPoint {
                variant: v.label.clone(),
                operations: n,
                rollback_ms,
                recovery_ms,
                recovered_transactions: rep.undone,
                undone_records: rep.undone_records,
            });
        }
    }
    Ok(RecoveryResult {
        config: cfg.clone(),
        points,
    })
}

// ---------------------------------------------------------------------------------------
// Inserts and lookups of random keys (PMDK comparison)
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InsertLookupConfig {
    pub backing: Backing,
    pub keys: u64,
    pub value_size: usize,
    pub node_bytes: usize,
    pub systems: Vec<System>,
    pub runs: usize,
}

impl Default for InsertLookupConfig {
    fn default() -> Self {
        InsertLookupConfig {
            backing: Backing::default(),
            keys: 1_000_000,
            value_size: 8,
            node_bytes: 512,
            systems: vec![
                System::Nvm,
                System::Rewind(variant(
                    "batch-nf",
                    LogLayout::Batch,
                    Policy::NoForce,
                    Layers::One,
                )),
                System::Rewind(variant(
                    "batch-f",
                    LogLayout::Batch,
                    Policy::Force,
                    Layers::One,
                )),
                System::Rewind(variant(
                    "optimized-nf",
                    LogLayout::Optimized,
                    Policy::NoForce,
                    Layers::One,
                )),
            ],
            runs: 3,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InsertLookupRow {
    pub system: String,
    pub inserts_per_sec: f64,
    pub lookups_per_sec: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InsertLookupResult {
    pub config: InsertLookupConfig,
    pub rows: Vec<InsertLookupRow>,
}

/// Insert `keys` random keys (one transaction each) and look each up once.
pub fn btree_insert_lookup(cfg: &InsertLookupConfig) -> Result<InsertLookupResult, RewindError> {
    let mut rows = Vec::new();
    for sys in &cfg.systems {
        let mut ins = Vec::new();
        let mut look = Vec::new();
        for _ in 0..cfg.runs.max(1) {
            let bytes = pool_bytes(cfg.keys, 0, cfg.value_size.max(32)) * 2;
            let (backing, pcfg) = match sys {
                System::Dram => (Backing::Dram, PoolConfig::default()),
                System::Nvm => (cfg.backing.clone(), PoolConfig::default()),
                System::Rewind(v) => (cfg.backing.clone(), v.pool),
            };
            let reg = region(&backing, bytes, 0)?;
            let pool = Pool::create_in(reg.region.clone(), pcfg)?;
            let t = BTree::create(&mut RawMem::new(&pool), cfg.node_bytes, cfg.value_size)?;
            let mut rng = SmallRng::seed_from_u64(11);
            let keys: Vec<u64> = (0..cfg.keys).map(|_| rng.r#gen::<u64>() >> 1).collect();
            let mut val = vec![0u8; cfg.value_size];
            let s = Instant::now();
            for &k in &keys {
                val[..8].copy_from_slice(&k.to_le_bytes());
                match sys {
                    System::Rewind(_) => {
                        pool.transaction(|tx| t.insert(tx, k, &val).map(drop))?;
                    }
                    _ => {
                        t.insert(&mut RawMem::new(&pool), k, &val)?;
                    }
                }
            }
            ins.push(cfg.keys as f64 / s.elapsed().as_secs_f64());
            let m = RawMem::new(&pool);
            let s = Instant::now();
            let mut found = 0u64;
            for &k in &keys {
                found += u64::from(t.get(&m, k, &mut val));
            }
            look.push(cfg.keys as f64 / s.elapsed().as_secs_f64());
            if found != cfg.keys {
                return Err(RewindError::Corrupt(format!(
                    "{found} of {} inserted keys found",
                    cfg.keys
                )));
            }
        }
        rows.push(InsertLookupRow {
            system: sys.label(),
            inserts_per_sec: median(ins),
            lookups_per_sec: median(look),
        });
    }
    Ok(InsertLookupResult {
        config: cfg.clone(),
        rows,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// Every experiment runs end to end on tiny inputs (figures are not checked here).
    #[test]
    fn experiments_run_small() {
        let backing = Backing::Dram;
        let w = word_tx(&WordTxConfig {
            backing: backing.clone(),
            transactions: 300,
            words: 64,
            runs: 1,
            ..WordTxConfig::default()
        })
        .unwrap();
        assert_eq!(w.rows.len(), standard_variants().len());
        let mix = BTreeMixConfig {
            backing: backing.clone(),
            records: 500,
            operations: 500,
            update_fractions: vec![0.0, 0.5, 1.0],
            runs: 1,
            ..BTreeMixConfig::default()
        };
        let m = btree_mix(&mix).unwrap();
        assert_eq!(m.points.len(), 3 * mix.systems.len());
        assert!(m.points.iter().all(|p| p.ratio_vs_nvm.is_some()));
        let f = fence_sensitivity(&FenceConfig {
            mix: BTreeMixConfig {
                operations: 200,
                records: 300,
                update_fractions: vec![1.0],
                runs: 1,
                ..mix.clone()
            },
            delays_ns: vec![0, 10],
            groups: vec![8],
        })
        .unwrap();
        assert_eq!(f.points.len(), 4);
        let r = rollback_recovery(&RecoveryConfig {
            backing: backing.clone(),
            records: 300,
            operations: vec![400],
            ops_per_tx: 100,
            ..RecoveryConfig::default()
        })
        .unwrap();
        assert!(r.points.iter().all(|p| p.recovered_transactions == 4));
        let il = btree_insert_lookup(&InsertLookupConfig {
            backing,
            keys: 2000,
            runs: 1,
            ..InsertLookupConfig::default()
        })
        .unwrap();
        assert_eq!(il.rows.len(), 4);
    }
}
