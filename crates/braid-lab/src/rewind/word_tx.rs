//! 1-word transactions (REWIND §5.1, the worst case of Fig. 3): transactions per second and
//! fences per transaction for each REWIND configuration, each transaction writing one random
//! word of a 4096-word array, against non-recoverable persisted stores (store, flush, fence)
//! and plain DRAM stores of the same words. Then the update intensity of Fig. 3 left: after
//! each transaction a computation (a busy-wait) of `(1 - i) / i` times one persisted
//! non-recoverable store, so that updates take the fraction `i` of the non-recoverable
//! program's time, for the Optimized configurations, against the same program of
//! non-recoverable stores.

use std::time::{Duration, Instant};

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
    /// Update intensities below 1 (Fig. 3 left), each run for the Optimized variants.
    pub intensities: Vec<f64>,
    /// Transactions per run at each intensity.
    pub intensity_transactions: u64,
}

impl Default for WordTxConfig {
    fn default() -> Self {
        WordTxConfig {
            backing: Backing::default(),
            transactions: 100_000,
            words: 4096,
            variants: standard_variants(),
            runs: 3,
            write_delay_ns: super::NVM_WRITE_NS,
            intensities: vec![0.5, 0.25, 0.1],
            intensity_transactions: 20_000,
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
    /// Fig. 3 left: overhead at each update intensity below 1.
    pub intensity: Vec<IntensityPoint>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IntensityPoint {
    pub label: String,
    /// Fraction of the non-recoverable program's time spent on updates.
    pub intensity: f64,
    /// The computation after each transaction, ns.
    pub compute_ns: u64,
    /// Time over the non-recoverable program with the same computation.
    pub overhead: f64,
}

/// Busy-wait `ns` nanoseconds (the micro benchmark's computation between updates).
fn compute(ns: u64) {
    if ns == 0 {
        return;
    }
    let until = Instant::now() + Duration::from_nanos(ns);
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// Seconds of `n` 1-word transactions of `v` (REWIND) or of persisted non-recoverable
/// stores (`None`), each followed by `compute_ns` of computation.
fn timed(
    cfg: &WordTxConfig,
    v: Option<&Variant>,
    n: u64,
    compute_ns: u64,
) -> Result<f64, RewindError> {
    let bytes = 64 << 20;
    let reg = region(&cfg.backing, bytes, cfg.write_delay_ns)?;
    let mut rng = SmallRng::seed_from_u64(1);
    let Some(v) = v else {
        let r = reg.region();
        let t = Instant::now();
        for i in 0..n {
            let off = 4096 + 8 * rng.gen_range(0..cfg.words);
            r.store_u64(off, i);
            r.persist(off, 8);
            compute(compute_ns);
        }
        return Ok(t.elapsed().as_secs_f64());
    };
    let pool = Pool::create_in(reg.region(), v.pool)?;
    let arr = words_array(&pool, cfg.words)?;
    let t = Instant::now();
    for i in 0..n {
        let w = rng.gen_range(0..cfg.words) as u64;
        pool.transaction(|tx| tx.write(arr.field::<u64>(8 * w), i + 1))?;
        compute(compute_ns);
    }
    Ok(t.elapsed().as_secs_f64())
}

/// A zeroed array of `words` words in `pool`.
fn words_array(pool: &Pool, words: usize) -> Result<PPtr<u64>, RewindError> {
    let mut m = RawMem::new(pool);
    let a = m.alloc(8 * words)?;
    m.write_bytes(a, &vec![0u8; 8 * words])?;
    Ok(PPtr::from_offset(a))
}

/// Fig. 3 left: the Optimized variants' overhead at each intensity below 1.
fn intensity(cfg: &WordTxConfig, raw_sps: f64) -> Result<Vec<IntensityPoint>, RewindError> {
    let n = cfg.intensity_transactions;
    let mut out = Vec::new();
    for &i in &cfg.intensities {
        let compute_ns = (1e9 / raw_sps * (1.0 - i) / i).round() as u64;
        let mut raw: Vec<f64> = (0..cfg.runs.max(1))
            .map(|_| timed(cfg, None, n, compute_ns))
            .collect::<Result<_, _>>()?;
        let raw = median(&mut raw);
        for v in cfg
            .variants
            .iter()
            .filter(|v| v.label.starts_with("optimized"))
        {
            let mut t: Vec<f64> = (0..cfg.runs.max(1))
                .map(|_| timed(cfg, Some(v), n, compute_ns))
                .collect::<Result<_, _>>()?;
            out.push(IntensityPoint {
                label: v.label.clone(),
                intensity: i,
                compute_ns,
                overhead: median(&mut t) / raw,
            });
        }
    }
    Ok(out)
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
            let arr = words_array(&pool, cfg.words)?;
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
        intensity: intensity(cfg, raw_sps)?,
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
            intensity_transactions: 200,
            ..WordTxConfig::default()
        })
        .unwrap();
        assert_eq!(w.rows.len(), standard_variants().len());
        // Four Optimized variants at each of three intensities, each with computation.
        assert_eq!(w.intensity.len(), 12);
        assert!(
            w.intensity
                .iter()
                .all(|p| p.compute_ns > 0 && p.overhead > 0.0)
        );
    }
}
