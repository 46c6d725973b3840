//! The B+-tree mix (REWIND §5.2, Fig. 7): a B+-tree of 100k 32-byte records, then 200k
//! operations of which a given fraction are updates (split between inserts of new keys and
//! deletes of present ones, so the size stays constant) and the rest lookups, for DRAM, the
//! non-recoverable twin on persistent memory, and the tree over REWIND (Simple, Optimized,
//! Batch); every time is also given over the twin's at the same fraction. [`mix_once`] is
//! also the run of the fence experiment (Fig. 10, `fence.rs`).

use std::time::Instant;

use braid_rewind::btree::{BTree, LeafOrder};
use braid_rewind::{Pool, RawMem, RewindError};
use rand::{Rng, SeedableRng, rngs::SmallRng};
use serde::{Deserialize, Serialize};

use super::setup::{Backing, System, fig7_variants, median, pool_bytes, region};

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
    /// Emulated extra latency per fence, ns (Fig. 10).
    #[serde(default)]
    pub fence_delay_ns: u64,
    /// How the tree's leaves keep their slots (Fig. 7: fingerprinted; Fig. 10: sorted).
    #[serde(default = "fingerprinted")]
    pub leaf_order: LeafOrder,
    /// Inserts take random new odd keys (spread over the tree) instead of the next ascending
    /// one (Fig. 10, with sorted leaves, so that inserts move slots as deletes do).
    #[serde(default)]
    pub random_inserts: bool,
}

fn fingerprinted() -> LeafOrder {
    LeafOrder::Fingerprinted
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
            write_delay_ns: super::NVM_WRITE_NS,
            fence_delay_ns: 0,
            leaf_order: LeafOrder::Fingerprinted,
            random_inserts: false,
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
    /// Cache lines persisted per operation (a peer charged the NVM latency: the 64-byte lines
    /// of file data it wrote; NaN where not counted).
    pub lines_per_op: f64,
}

/// What one run of the mix measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MixRun {
    pub seconds: f64,
    pub fences_per_op: f64,
    pub lines_per_op: f64,
    /// Log records (UPDATE and DELETE) per update operation (REWIND systems; 0 otherwise).
    pub records_per_update: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BTreeMixResult {
    pub config: BTreeMixConfig,
    pub points: Vec<MixPoint>,
}

/// Run the mix once on `sys` with update fraction `frac`.
pub fn mix_once(cfg: &BTreeMixConfig, sys: &System, frac: f64) -> Result<MixRun, RewindError> {
    let bytes = pool_bytes(cfg.records, cfg.operations, cfg.value_size);
    let (backing, pcfg) = sys.placement(&cfg.backing);
    let reg = region(&backing, bytes, cfg.write_delay_ns)?;
    reg.region().set_fence_delay_ns(cfg.fence_delay_ns);
    let pool = Pool::create_in(reg.region(), pcfg)?;
    let mut rng = SmallRng::seed_from_u64(42);
    let vs = cfg.value_size;
    let mut val = vec![0u8; vs];
    // Load with plain stores (not measured): keys 0, 2, 4, ... so inserts of odd keys and
    // deletes of present keys keep the size constant.
    let t = {
        let mut m = RawMem::new(&pool);
        let t = BTree::create_ordered(&mut m, cfg.node_bytes, vs, cfg.leaf_order)?;
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
    // Random inserts: odd keys below 2 (records + operations), each inserted once at most.
    let mut inserted = std::collections::HashSet::new();
    let s0 = pool.pmem_stats();
    let r0 = pool.stats().records;
    let mut updates = 0u64;
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
        updates += 1;
        let (k, idx) = if ins && cfg.random_inserts {
            let span = cfg.records + cfg.operations;
            let k = loop {
                let k = 2 * rng.gen_range(0..span) + 1;
                if inserted.insert(k) {
                    break k;
                }
            };
            (k, None)
        } else if ins {
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
    let ops = cfg.operations.max(1) as f64;
    Ok(MixRun {
        seconds: secs,
        fences_per_op: d.fences as f64 / ops,
        lines_per_op: d.lines_flushed as f64 / ops,
        records_per_update: (pool.stats().records - r0) as f64 / updates.max(1) as f64,
    })
}

/// The B+-tree mix of Fig. 7 (see the module docs).
pub fn btree_mix(cfg: &BTreeMixConfig) -> Result<BTreeMixResult, RewindError> {
    let mut points = Vec::new();
    for &frac in &cfg.update_fractions {
        let mut row = Vec::new();
        for sys in &cfg.systems {
            let mut secs = Vec::new();
            let (mut fences, mut lines) = (0.0, 0.0);
            for _ in 0..cfg.runs.max(1) {
                let m = mix_once(cfg, sys, frac)?;
                secs.push(m.seconds);
                (fences, lines) = (m.fences_per_op, m.lines_per_op);
            }
            let s = median(&mut secs);
            row.push(MixPoint {
                system: sys.label(),
                update_fraction: frac,
                seconds: s,
                ops_per_sec: cfg.operations as f64 / s,
                ratio_vs_nvm: None,
                fences_per_op: fences,
                lines_per_op: lines,
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// Runs end to end on a tiny input (figures are not checked).
    #[test]
    fn btree_mix_runs_small() {
        let mix = BTreeMixConfig {
            backing: Backing::Dram,
            records: 500,
            operations: 500,
            update_fractions: vec![0.0, 0.5, 1.0],
            runs: 1,
            ..BTreeMixConfig::default()
        };
        let m = btree_mix(&mix).unwrap();
        assert_eq!(m.points.len(), 3 * mix.systems.len());
        assert!(m.points.iter().all(|p| p.ratio_vs_nvm.is_some()));
    }
}
