//! 1-word transactions (REWIND §5.1, the worst case of Fig. 3): transactions per second and
//! fences per transaction for each REWIND configuration, each transaction writing one random
//! word of a 4096-word array, against non-recoverable persisted stores (store, flush, fence)
//! and plain DRAM stores of the same words.

use std::time::Instant;

use braid_rewind::{Mem, PPtr, Pool, RawMem, RewindError};
use rand::{Rng, SeedableRng, rngs::SmallRng};
use serde::{Deserialize, Serialize};

use super::setup::{Backing, Variant, median, region, standard_variants};

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
            write_delay_ns: super::NVM_WRITE_NS,
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
            let r = reg.region();
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
    let raw_sps = median(&mut raw);
    let mut rows = Vec::new();
    for v in &cfg.variants {
        let mut tps = Vec::new();
        let mut fences = 0.0;
        let mut lines = 0.0;
        for _ in 0..cfg.runs.max(1) {
            let reg = region(&cfg.backing, bytes, cfg.write_delay_ns)?;
            let pool = Pool::create_in(reg.region(), v.pool)?;
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
        let tps = median(&mut tps);
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
        dram_stores_per_sec: median(&mut dram),
        rows,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// Runs end to end on a tiny input (figures are not checked).
    #[test]
    fn word_tx_runs_small() {
        let w = word_tx(&WordTxConfig {
            backing: Backing::Dram,
            transactions: 300,
            words: 64,
            runs: 1,
            ..WordTxConfig::default()
        })
        .unwrap();
        assert_eq!(w.rows.len(), standard_variants().len());
    }
}
