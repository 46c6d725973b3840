//! Multi-threaded B+-tree logging (REWIND §5.2 "Concurrency", Fig. 9): a B+-tree of 100k
//! 32-byte records, then each of `threads` threads performs `operations_per_thread`
//! operations, each an insert/delete pair (one transaction: insert a new key, delete a present
//! one, so the size stays constant) or a lookup, thread `t` with its own lookup ratio spread
//! over the paper's 20%-80% (one thread: 50%; the ratios average 50% at every thread count).
//! The figure is the total duration until every thread has finished, also given as
//! operations per second over all threads and as a ratio to the non-recoverable twin at the
//! same thread count.
//!
//! Choices: braid-rewind's B+-tree has no latches of its own (isolation is the user's, as in
//! REWIND), so lookups share a reader-writer lock and insert/delete pairs hold it
//! exclusively, the locking the paper gave Stasis and Berkeley DB; the twin runs the same code
//! with plain persisted stores under the same lock. With `partitions` above 1 the records are
//! spread over that many B+-trees by key, each with its own lock (a pair locks its two trees
//! in order), so transactions on different trees run side by side and only REWIND's log is
//! shared: how far the logging itself lets threads scale. REWIND runs as Batch no-force with
//! one shared log (`batch`) and with one log per thread (`batch-per-thread-logs`). Each thread owns the keys it deletes and
//! looks up (loaded keys `2k` with `k mod threads == t`, new odd keys of its own), so no two
//! threads race for one key and the tree is the same at every thread count.

use std::time::Instant;

use braid_rewind::btree::BTree;
use braid_rewind::{Layers, LogLayout, LogMode, Policy, Pool, RawMem, RewindError};
use parking_lot::RwLock;
use rand::{Rng, SeedableRng, rngs::SmallRng};
use serde::{Deserialize, Serialize};

use super::setup::{Backing, System, median, pool_bytes, region, variant};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BTreeThreadsConfig {
    pub backing: Backing,
    pub records: u64,
    pub operations_per_thread: u64,
    pub threads: Vec<usize>,
    pub value_size: usize,
    pub node_bytes: usize,
    pub systems: Vec<System>,
    /// Every system runs once per tree count here (1: the paper's one B+-tree).
    pub partitions: Vec<usize>,
    pub runs: usize,
    pub write_delay_ns: u64,
}

impl Default for BTreeThreadsConfig {
    fn default() -> Self {
        let batch = variant("batch", LogLayout::Batch, Policy::NoForce, Layers::One);
        let mut per_thread = variant(
            "batch-per-thread-logs",
            LogLayout::Batch,
            Policy::NoForce,
            Layers::One,
        );
        // One log per thread: threads_once sets the count to the run's threads.
        per_thread.pool.logs = LogMode::PerThread(1);
        let systems = vec![
            System::Nvm,
            System::Rewind(batch),
            System::Rewind(per_thread),
        ];
        BTreeThreadsConfig {
            backing: Backing::default(),
            records: 100_000,
            operations_per_thread: 100_000,
            threads: vec![1, 2],
            value_size: 32,
            node_bytes: 512,
            systems,
            partitions: vec![1, 16],
            runs: 3,
            write_delay_ns: super::NVM_WRITE_NS,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThreadsPoint {
    /// The system, with "-N-trees" when the records are spread over N trees.
    pub system: String,
    pub threads: usize,
    pub partitions: usize,
    /// Median total duration, until the last thread finished.
    pub seconds: f64,
    /// Operations of all threads per second (an insert/delete pair is one operation).
    pub ops_per_sec: f64,
    /// Time over the non-recoverable twin's at the same thread count, if it was run.
    pub ratio_vs_nvm: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BTreeThreadsResult {
    pub config: BTreeThreadsConfig,
    pub points: Vec<ThreadsPoint>,
}

/// Thread `t`'s lookup ratio out of `n` threads: 20% to 80% evenly, 50% alone.
pub fn lookup_ratio(t: usize, n: usize) -> f64 {
    if n <= 1 {
        0.5
    } else {
        0.2 + 0.6 * t as f64 / (n - 1) as f64
    }
}

/// The tree (of `p`) that holds `key`.
fn part(key: u64, p: usize) -> usize {
    ((key >> 1) % p as u64) as usize
}

/// One run of `sys` on `n` threads over `p` trees: the total seconds. A system with
/// per-thread logs gets one log per thread.
pub fn threads_once(
    cfg: &BTreeThreadsConfig,
    sys: &System,
    n: usize,
    p: usize,
) -> Result<f64, RewindError> {
    let (n, p) = (n.max(1), p.max(1));
    let ops = cfg.operations_per_thread;
    let bytes = pool_bytes(cfg.records, ops * n as u64, cfg.value_size);
    let (backing, mut pcfg) = sys.placement(&cfg.backing);
    if let LogMode::PerThread(_) = pcfg.logs {
        pcfg.logs = LogMode::PerThread(n);
    }
    let reg = region(&backing, bytes, cfg.write_delay_ns)?;
    let pool = Pool::create_in(reg.region(), pcfg)?;
    let vs = cfg.value_size;
    let mut rng = SmallRng::seed_from_u64(42);
    let trees = {
        let mut m = RawMem::new(&pool);
        let trees = (0..p)
            .map(|_| BTree::create(&mut m, cfg.node_bytes, vs))
            .collect::<Result<Vec<BTree>, RewindError>>()?;
        let mut keys: Vec<u64> = (0..cfg.records).map(|k| 2 * k).collect();
        for i in (1..keys.len()).rev() {
            keys.swap(i, rng.gen_range(0..=i));
        }
        let mut val = vec![0u8; vs];
        for k in keys {
            val[..8].copy_from_slice(&k.to_le_bytes());
            trees[part(k, p)].insert(&mut m, k, &val)?;
        }
        trees
    };
    let recoverable = matches!(sys, System::Rewind(_));
    let locks: Vec<RwLock<()>> = (0..p).map(|_| RwLock::new(())).collect();
    let start = Instant::now();
    let results: Vec<Result<(), RewindError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|t| {
                let (pool, locks, trees) = (pool.clone(), &locks, &trees);
                s.spawn(move || -> Result<(), RewindError> {
                    let mut rng = SmallRng::seed_from_u64(1000 + t as u64);
                    let lookups = lookup_ratio(t, n);
                    let mut own: Vec<u64> = (0..cfg.records)
                        .filter(|k| k % n as u64 == t as u64)
                        .map(|k| 2 * k)
                        .collect();
                    let mut next = 2 * cfg.records + 1 + 2 * t as u64;
                    let mut val = vec![0u8; vs];
                    let mut out = vec![0u8; vs];
                    for _ in 0..ops {
                        if own.is_empty() {
                            return Err(RewindError::Invalid("a thread owns no key".into()));
                        }
                        let i = rng.gen_range(0..own.len());
                        if rng.gen_bool(lookups) {
                            let k = own[i];
                            let _r = locks[part(k, p)].read();
                            let m = RawMem::new(&pool);
                            std::hint::black_box(trees[part(k, p)].get(&m, k, &mut out));
                            continue;
                        }
                        let (new, old) = (next, own[i]);
                        next += 2 * n as u64;
                        val[..8].copy_from_slice(&new.to_le_bytes());
                        let (a, b) = (part(new, p), part(old, p));
                        let _w1 = locks[a.min(b)].write();
                        let _w2 = (a != b).then(|| locks[a.max(b)].write());
                        let (ta, tb) = (trees[a], trees[b]);
                        if recoverable {
                            pool.transaction(|tx| -> Result<(), RewindError> {
                                ta.insert(tx, new, &val)?;
                                tb.remove(tx, old)?;
                                Ok(())
                            })?;
                        } else {
                            let mut m = RawMem::new(&pool);
                            ta.insert(&mut m, new, &val)?;
                            tb.remove(&mut m, old)?;
                        }
                        own[i] = new;
                    }
                    Ok(())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(RewindError::Invalid("a B+-tree thread panicked".into()))
                })
            })
            .collect()
    });
    let secs = start.elapsed().as_secs_f64();
    for r in results {
        r?;
    }
    let m = RawMem::new(&pool);
    let len: u64 = trees.iter().map(|t| t.len(&m)).sum();
    if len != cfg.records {
        return Err(RewindError::Corrupt(format!(
            "{len} records after the run, {} loaded",
            cfg.records
        )));
    }
    Ok(secs)
}

/// `sys`'s label, with "-N-trees" over `p` trees.
pub fn label(sys: &System, p: usize) -> String {
    if p <= 1 {
        sys.label()
    } else {
        format!("{}-{p}-trees", sys.label())
    }
}

/// Fig. 9 (see the module docs): every system at every thread count, medians of `runs`.
pub fn btree_threads(cfg: &BTreeThreadsConfig) -> Result<BTreeThreadsResult, RewindError> {
    let mut points = Vec::new();
    for &p in &cfg.partitions {
        for &n in &cfg.threads {
            let mut row = Vec::new();
            for sys in &cfg.systems {
                let mut secs = Vec::new();
                for _ in 0..cfg.runs.max(1) {
                    secs.push(threads_once(cfg, sys, n, p)?);
                }
                let s = median(&mut secs);
                row.push(ThreadsPoint {
                    system: label(sys, p),
                    threads: n,
                    partitions: p,
                    seconds: s,
                    ops_per_sec: (cfg.operations_per_thread * n as u64) as f64 / s,
                    ratio_vs_nvm: None,
                });
            }
            let nvm = label(&System::Nvm, p);
            let nvm = row.iter().find(|x| x.system == nvm).map(|x| x.seconds);
            for x in &mut row {
                x.ratio_vs_nvm = nvm.map(|t| x.seconds / t);
            }
            points.extend(row);
        }
    }
    Ok(BTreeThreadsResult {
        config: cfg.clone(),
        points,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn lookup_ratios_span_the_papers_range_and_average_half() {
        assert_eq!(lookup_ratio(0, 1), 0.5);
        assert_eq!(lookup_ratio(0, 2), 0.2);
        assert!((lookup_ratio(1, 2) - 0.8).abs() < 1e-12);
        let avg: f64 = (0..4).map(|t| lookup_ratio(t, 4)).sum::<f64>() / 4.0;
        assert!((avg - 0.5).abs() < 1e-12);
    }

    /// Runs end to end on a tiny input, the tree's size kept (figures are not checked).
    #[test]
    fn btree_threads_runs_small() {
        let cfg = BTreeThreadsConfig {
            backing: Backing::Dram,
            records: 500,
            operations_per_thread: 400,
            threads: vec![1, 2, 3],
            partitions: vec![1, 4],
            runs: 1,
            write_delay_ns: 0,
            ..BTreeThreadsConfig::default()
        };
        let r = btree_threads(&cfg).unwrap();
        assert_eq!(r.points.len(), 2 * 3 * cfg.systems.len());
        assert!(r.points.iter().any(|p| p.system == "batch-4-trees"));
        assert!(r.points.iter().all(|p| p.ratio_vs_nvm.is_some()));
    }
}
