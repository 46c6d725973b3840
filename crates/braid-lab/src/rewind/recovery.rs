//! Rollback and recovery time (REWIND §5.2, Fig. 8): the time to roll back one transaction of
//! N mixed B+-tree operations (inserts of new keys alternating with deletes of present ones),
//! and the time to reopen a pool, that is to recover it, after a crash left N such
//! operations in unfinished transactions of 200 operations each (`Pool::abandon_transaction`
//! leaves a transaction as a crash would). The tree is checked after recovery.

use std::time::Instant;

use braid_rewind::btree::BTree;
use braid_rewind::{Layers, LogLayout, Mem, PPtr, Policy, Pool, RawMem, RewindError};
use rand::{Rng, SeedableRng, rngs::SmallRng};
use serde::{Deserialize, Serialize};

use super::setup::{Backing, Variant, fig7_variants, pool_bytes, region, variant};

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
    /// Emulated NVM write latency per persisted line, ns.
    pub write_delay_ns: u64,
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
            write_delay_ns: super::NVM_WRITE_NS,
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
    /// UPDATE records undone (`None` for a peer, which does not say).
    pub undone_records: Option<usize>,
    /// Cache lines persisted by the rollback (a peer: lines of file data written; `None`
    /// where not counted).
    pub rollback_lines: Option<u64>,
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
pub fn rollback_recovery(cfg: &RecoveryConfig) -> anyhow::Result<RecoveryResult> {
    let mut points = Vec::new();
    for v in &cfg.variants {
        for &n in &cfg.operations {
            let mut pc = v.pool;
            pc.log_capacity = ((n * 12) as usize + 4096).next_multiple_of(1024);
            pc.checkpoint_fraction = 1.0;
            let bytes = pool_bytes(cfg.records, n, cfg.value_size) + pc.log_capacity * 128;
            // Rollback of one big transaction.
            let reg = region(&cfg.backing, bytes, cfg.write_delay_ns)?;
            let pool = Pool::create_in(reg.region(), pc)?;
            let t = loaded_tree(&pool, cfg.records, cfg.node_bytes, cfg.value_size)?;
            let mut rng = SmallRng::seed_from_u64(5);
            let mut next = 2 * cfg.records + 1;
            let mut rollback_ms = f64::NAN;
            let start = std::cell::Cell::new(None);
            let res = pool.transaction(|tx| -> Result<(), RewindError> {
                mixed_ops(tx, &t, n, &mut rng, cfg.records, &mut next)?;
                start.set(Some((Instant::now(), pool.pmem_stats())));
                Err(RewindError::user_abort("roll back"))
            });
            let mut rollback_lines = None;
            if let (Err(RewindError::UserAbort { .. }), Some((s, p0))) = (res, start.get()) {
                rollback_ms = s.elapsed().as_secs_f64() * 1e3;
                rollback_lines = Some(pool.pmem_stats().since(&p0).lines_flushed);
            }
            drop(pool);
            // Recovery of unfinished transactions.
            let (pool, _) = Pool::open_in(reg.region())?;
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
            let (pool, rep) = Pool::open_in(reg.region())?;
            let recovery_ms = s.elapsed().as_secs_f64() * 1e3;
            t.check(&RawMem::new(&pool))
                .map_err(|e| anyhow::anyhow!("{}: {e}", v.label))?;
            points.push(RecoveryPoint {
                variant: v.label.clone(),
                operations: n,
                rollback_ms,
                recovery_ms,
                recovered_transactions: rep.undone,
                undone_records: Some(rep.undone_records),
                rollback_lines,
            });
        }
    }
    Ok(RecoveryResult {
        config: cfg.clone(),
        points,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// Runs end to end on a tiny input; every abandoned transaction is undone by recovery.
    #[test]
    fn recovery_runs_small() {
        let r = rollback_recovery(&RecoveryConfig {
            backing: Backing::Dram,
            records: 300,
            operations: vec![400],
            ops_per_tx: 100,
            ..RecoveryConfig::default()
        })
        .unwrap();
        assert!(r.points.iter().all(|p| p.recovered_transactions == 4));
    }
}
