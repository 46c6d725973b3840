//! Inserts and lookups of random keys in the B+-tree, each insert one transaction: the
//! operations `scripts/pmdk-bench.sh` measures against PMDK's libpmemobj (REWIND §5 compares
//! with other persistent-memory libraries; this is braid's own comparison, not a figure of
//! the paper). The non-recoverable twin and REWIND's Sealed, Batch and Optimized logs, with
//! fences and flushed lines per insert.

use std::time::Instant;

use braid_rewind::btree::BTree;
use braid_rewind::{Layers, LogLayout, Policy, Pool, RawMem};
use rand::{Rng, SeedableRng, rngs::SmallRng};
use serde::{Deserialize, Serialize};

use super::setup::{Backing, System, median, pool_bytes, region, variant};

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
                    "sealed-nf",
                    LogLayout::Sealed,
                    Policy::NoForce,
                    Layers::One,
                )),
                System::Rewind(variant(
                    "sealed-f",
                    LogLayout::Sealed,
                    Policy::Force,
                    Layers::One,
                )),
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
    /// Fences and cache lines flushed per insert (the twin persists each store).
    pub fences_per_insert: f64,
    pub lines_flushed_per_insert: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InsertLookupResult {
    pub config: InsertLookupConfig,
    pub rows: Vec<InsertLookupRow>,
}

/// Insert `keys` random keys (one transaction each) and look each up once.
pub fn btree_insert_lookup(cfg: &InsertLookupConfig) -> anyhow::Result<InsertLookupResult> {
    let mut rows = Vec::new();
    for sys in &cfg.systems {
        let mut ins = Vec::new();
        let mut look = Vec::new();
        let (mut fences, mut lines) = (0.0, 0.0);
        for _ in 0..cfg.runs.max(1) {
            let bytes = pool_bytes(cfg.keys, 0, cfg.value_size.max(32)) * 2;
            let (backing, pcfg) = sys.placement(&cfg.backing);
            let reg = region(&backing, bytes, 0)?;
            let pool = Pool::create_in(reg.region(), pcfg)?;
            let t = BTree::create(&mut RawMem::new(&pool), cfg.node_bytes, cfg.value_size)?;
            let mut rng = SmallRng::seed_from_u64(11);
            let keys: Vec<u64> = (0..cfg.keys).map(|_| rng.r#gen::<u64>() >> 1).collect();
            let mut val = vec![0u8; cfg.value_size];
            let s0 = pool.pmem_stats();
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
            let d = pool.pmem_stats().since(&s0);
            fences = d.fences as f64 / cfg.keys as f64;
            lines = d.lines_flushed as f64 / cfg.keys as f64;
            let m = RawMem::new(&pool);
            let s = Instant::now();
            let mut found = 0u64;
            for &k in &keys {
                found += u64::from(t.get(&m, k, &mut val));
            }
            look.push(cfg.keys as f64 / s.elapsed().as_secs_f64());
            anyhow::ensure!(
                found == cfg.keys,
                "{found} of {} inserted keys found",
                cfg.keys
            );
        }
        rows.push(InsertLookupRow {
            system: sys.label(),
            inserts_per_sec: median(&mut ins),
            lookups_per_sec: median(&mut look),
            fences_per_insert: fences,
            lines_flushed_per_insert: lines,
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

    /// Runs end to end on a tiny input (figures are not checked).
    #[test]
    fn insert_lookup_runs_small() {
        let il = btree_insert_lookup(&InsertLookupConfig {
            backing: Backing::Dram,
            keys: 2000,
            runs: 1,
            ..InsertLookupConfig::default()
        })
        .unwrap();
        assert_eq!(il.rows.len(), 6);
    }
}
