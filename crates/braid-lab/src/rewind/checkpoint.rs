//! Checkpoint overhead (REWIND §5.1, "Checkpoint overhead", Fig. 6): log records inserted by
//! transactions of word updates with the three REWIND versions (Simple, Optimized, Batch), one
//! layer, no-force, once without checkpoints and once with a checkpoint every `every` records
//! for each checkpoint interval; the checkpointed run's overhead as a percentage of the
//! non-checkpointed one's time.
//!
//! Every run of a version uses the same log capacity (room for all the records, so the run
//! without checkpoints never needs one); the checkpoint interval is set through the pool's
//! `checkpoint_fraction` (a checkpoint follows the commit that leaves more than `every`
//! records in the log).

use std::time::Instant;

use braid_rewind::{Mem, PPtr, Pool, PoolConfig, RawMem, RewindError};
use rand::{Rng, SeedableRng, rngs::SmallRng};
use serde::{Deserialize, Serialize};

use super::setup::{Backing, Variant, fig7_variants, median, region};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckpointConfig {
    pub backing: Backing,
    /// UPDATE records inserted per run (the paper: ten million).
    pub records: u64,
    /// Word updates (UPDATE records) per transaction.
    pub updates_per_tx: u64,
    /// Words of the array the updates go to (a random one each).
    pub words: usize,
    /// Checkpoint intervals, in log records (one run each, besides the one without).
    pub intervals: Vec<u64>,
    pub variants: Vec<Variant>,
    pub runs: usize,
    pub write_delay_ns: u64,
}

impl Default for CheckpointConfig {
    fn default() -> Self {
        CheckpointConfig {
            backing: Backing::default(),
            records: 400_000,
            updates_per_tx: 10,
            words: 4096,
            intervals: vec![1_000, 4_000, 16_000, 64_000],
            variants: fig7_variants(),
            runs: 3,
            write_delay_ns: super::NVM_WRITE_NS,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckpointPoint {
    /// The REWIND version (simple, optimized, batch).
    pub variant: String,
    /// Log records between checkpoints.
    pub interval: u64,
    /// Checkpoints taken in one run.
    pub checkpoints: u64,
    /// Median time of the checkpointed run.
    pub seconds: f64,
    /// Median time of the run without checkpoints.
    pub seconds_without: f64,
    /// (checkpointed / non-checkpointed - 1) x 100.
    pub overhead_pct: f64,
    /// Cache lines flushed per UPDATE record with checkpoints (last run).
    pub lines_per_record: f64,
    /// Cache lines flushed per UPDATE record without checkpoints (last run).
    pub lines_per_record_without: f64,
    /// Fences per UPDATE record with checkpoints (last run).
    pub fences_per_record: f64,
    /// Fences per UPDATE record without checkpoints (last run).
    pub fences_per_record_without: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckpointResult {
    pub config: CheckpointConfig,
    /// Log records per transaction (the UPDATEs and the END).
    pub records_per_tx: f64,
    pub points: Vec<CheckpointPoint>,
}

/// One timed run's figures.
struct Run {
    seconds: f64,
    checkpoints: u64,
    /// Records per transaction left in the log (NaN if checkpoints removed some).
    records_per_tx: f64,
    lines_per_record: f64,
    fences_per_record: f64,
}

/// One timed run: `cfg.records` UPDATE records in transactions of `cfg.updates_per_tx` with
/// pool configuration `pool`.
fn one_run(cfg: &CheckpointConfig, pool_cfg: PoolConfig) -> Result<Run, RewindError> {
    let bytes = (pool_cfg.min_region_size() + 16 * cfg.words + (8 << 20)).next_multiple_of(1 << 20);
    let reg = region(&cfg.backing, bytes, cfg.write_delay_ns)?;
    let pool = Pool::create_in(reg.region(), pool_cfg)?;
    let arr: PPtr<u64> = {
        let mut m = RawMem::new(&pool);
        let a = m.alloc(8 * cfg.words)?;
        m.write_bytes(a, &vec![0u8; 8 * cfg.words])?;
        PPtr::from_offset(a)
    };
    let mut rng = SmallRng::seed_from_u64(1);
    let per = cfg.updates_per_tx.max(1);
    let txs = cfg.records.div_ceil(per);
    let s0 = pool.stats();
    let p0 = pool.pmem_stats();
    let t = Instant::now();
    for i in 0..txs {
        pool.transaction(|tx| {
            for _ in 0..per {
                let w = rng.gen_range(0..cfg.words) as u64;
                tx.write(arr.field::<u64>(8 * w), i + 1)?;
            }
            Ok::<(), RewindError>(())
        })?;
    }
    let secs = t.elapsed().as_secs_f64();
    let d = pool.pmem_stats().since(&p0);
    let s = pool.stats();
    let ckpts = s.checkpoints - s0.checkpoints;
    let per_tx = if ckpts == 0 {
        s.live_records as f64 / txs as f64
    } else {
        f64::NAN
    };
    let recs = (txs * per) as f64;
    Ok(Run {
        seconds: secs,
        checkpoints: ckpts,
        records_per_tx: per_tx,
        lines_per_record: d.lines_flushed as f64 / recs,
        fences_per_record: d.fences as f64 / recs,
    })
}

/// The overhead of checkpoints for each version and interval (see the module docs).
pub fn checkpoint_overhead(cfg: &CheckpointConfig) -> anyhow::Result<CheckpointResult> {
    let per = cfg.updates_per_tx.max(1);
    // Every record of the run (the UPDATEs, an END per transaction, room to spare).
    let capacity = (cfg.records + 2 * cfg.records.div_ceil(per) + 4096) as usize;
    let mut points = Vec::new();
    let mut records_per_tx = f64::NAN;
    for v in &cfg.variants {
        let base = v.pool.log_capacity(capacity).checkpoint_fraction(1.0);
        let mut without = Vec::new();
        let mut last = None;
        for _ in 0..cfg.runs.max(1) {
            let r = one_run(cfg, base)?;
            if r.checkpoints != 0 {
                anyhow::bail!(
                    "the run without checkpoints took {} checkpoints",
                    r.checkpoints
                );
            }
            records_per_tx = r.records_per_tx;
            without.push(r.seconds);
            last = Some(r);
        }
        let (lines0, fences0) = last.map_or((f64::NAN, f64::NAN), |r| {
            (r.lines_per_record, r.fences_per_record)
        });
        let without = median(&mut without);
        for &every in &cfg.intervals {
            let pool = base.checkpoint_fraction((every as f64 / capacity as f64).min(1.0));
            let mut times = Vec::new();
            let mut last = None;
            for _ in 0..cfg.runs.max(1) {
                let r = one_run(cfg, pool)?;
                times.push(r.seconds);
                last = Some(r);
            }
            let (ckpts, lines, fences) = last.map_or((0, f64::NAN, f64::NAN), |r| {
                (r.checkpoints, r.lines_per_record, r.fences_per_record)
            });
            let seconds = median(&mut times);
            points.push(CheckpointPoint {
                variant: v.label.clone(),
                interval: every,
                checkpoints: ckpts,
                seconds,
                seconds_without: without,
                overhead_pct: (seconds / without - 1.0) * 100.0,
                lines_per_record: lines,
                lines_per_record_without: lines0,
                fences_per_record: fences,
                fences_per_record_without: fences0,
            });
        }
    }
    Ok(CheckpointResult {
        config: cfg.clone(),
        records_per_tx,
        points,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// Runs end to end on a tiny input (figures are not checked); the rarer checkpoints are
    /// fewer and the versions are Simple, Optimized and Batch.
    #[test]
    fn checkpoint_runs_small() {
        let r = checkpoint_overhead(&CheckpointConfig {
            backing: Backing::Dram,
            records: 3_000,
            words: 64,
            intervals: vec![100, 1_000],
            runs: 1,
            ..CheckpointConfig::default()
        })
        .unwrap();
        assert_eq!(r.points.len(), 6);
        for v in r.points.chunks(2) {
            assert!(v[0].checkpoints > v[1].checkpoints, "{v:?}");
        }
        use braid_rewind::LogLayout::*;
        let layouts: Vec<_> = r.config.variants.iter().map(|v| v.pool.layout).collect();
        assert_eq!(layouts, [Simple, Optimized, Batch]);
        assert!(
            (r.records_per_tx - 11.0).abs() < 1.5,
            "{}",
            r.records_per_tx
        );
    }
}
