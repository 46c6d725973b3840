//! Multi-threaded B+-tree logging (REWIND §5.2 "Concurrency", Fig. 9): a B+-tree of 100k
//! 32-byte records, then each of `threads` threads performs `operations_per_thread`
//! operations, each an insert/delete pair (one transaction: insert a key, delete a present
//! one, so the size stays constant) or a lookup, thread `t` with its own lookup ratio spread
//! over the paper's 20%-80% (one thread: 50%; the ratios average 50% at every thread count).
//! The figure is the total duration until every thread has finished, also given as
//! operations per second over all threads and as a ratio to the non-recoverable twin at the
//! same thread count.
//!
//! Concurrency, as the paper's text decides it: "REWIND uses its own library-level concurrency
//! mechanisms. For Stasis and Berkeley DB we let readers progress without locks but use locks
//! for insert/delete pairs" (§5.2), and "REWIND allows low-overhead, fine-grained concurrency
//! ... Thread-safe access to user data by multiple transactions in REWIND is up to the
//! programmer" (§4.7). braid-rewind's B+-tree has no latches of its own, so the program
//! locks as a REWIND programmer would, at the grain of a leaf ([`Locking::Leaf`]): a table of
//! reader-writer locks striped by leaf; a lookup holds its leaf's lock shared, an insert/delete
//! pair holds its one or two leaves' locks exclusively (in stripe order, so two pairs never
//! deadlock) until its transaction has returned (REWIND's undo is physical, so a word written
//! by a running transaction must not be written by another). Inner nodes change only when an
//! insert splits a full leaf: every operation holds a tree-wide lock shared, and a pair whose
//! leaf is full takes it exclusively instead. [`Locking::Global`] is the coarse locking the
//! paper gave Stasis and Berkeley DB (lookups shared, pairs exclusive on the whole tree), kept
//! as the reference. The twin runs the same code with plain persisted stores under the same
//! locks. REWIND runs as Batch no-force with one shared log (`batch`) and with one log per
//! thread (`batch-per-thread-logs`).
//!
//! Keys: thread `t` owns the loaded keys `2k` with `k mod threads == t`; a pair replaces one of
//! its keys `x` by its neighbour `x ^ 1` (insert the neighbour, delete `x`), so inserts land
//! all over the tree (not on its rightmost leaf), no two threads ever touch one key, a key
//! inserted is never present, and the tree holds the same number of keys at every thread
//! count.

use std::time::Instant;

use braid_rewind::btree::BTree;
use braid_rewind::{Layers, LogLayout, LogMode, Policy, Pool, RawMem, RewindError};
use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};
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
    /// Every REWIND system runs under each of these lockings (the twin under the first).
    pub locking: Vec<Locking>,
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
            locking: vec![Locking::Leaf, Locking::Global],
            runs: 3,
            write_delay_ns: super::NVM_WRITE_NS,
        }
    }
}

/// How the threads share the one B+-tree (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Locking {
    /// Reader-writer locks per leaf (striped), a tree-wide lock taken exclusively only to
    /// split: REWIND's fine-grained concurrency.
    Leaf,
    /// One reader-writer lock on the tree: lookups shared, insert/delete pairs exclusive (the
    /// locking the paper gave Stasis and Berkeley DB).
    Global,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThreadsPoint {
    /// The system, with "-global-lock" under [`Locking::Global`].
    pub system: String,
    pub threads: usize,
    pub locking: Locking,
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
    /// The machine's 1-minute load average (`/proc/loadavg`) before and after the runs, where
    /// readable: threads of other processes take the cores a second thread would use.
    pub load_average: Option<(f64, f64)>,
}

/// The 1-minute load average, where `/proc/loadavg` can be read.
fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Thread `t`'s lookup ratio out of `n` threads: 20% to 80% evenly, 50% alone.
pub fn lookup_ratio(t: usize, n: usize) -> f64 {
    if n <= 1 {
        0.5
    } else {
        0.2 + 0.6 * t as f64 / (n - 1) as f64
    }
}

/// Stripes of the leaf lock table.
const STRIPES: usize = 1024;

/// The stripe of leaf `n` (a multiplicative hash of its offset).
fn stripe(n: u64) -> usize {
    ((n >> 6).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54) as usize % STRIPES
}

/// The locks of one tree (see the module docs).
struct TreeLocks {
    locking: Locking,
    /// Tree-wide: shared by every operation, exclusive to split (Leaf); the lock itself
    /// (Global).
    tree: RwLock<()>,
    leaves: Vec<RwLock<()>>,
}

/// What a pair holds while its transaction runs (released on drop).
enum PairGuard<'a> {
    Leaves {
        _tree: RwLockReadGuard<'a, ()>,
        _first: RwLockWriteGuard<'a, ()>,
        _second: Option<RwLockWriteGuard<'a, ()>>,
    },
    Tree {
        _tree: RwLockWriteGuard<'a, ()>,
    },
}

impl TreeLocks {
    fn new(locking: Locking) -> TreeLocks {
        TreeLocks {
            locking,
            tree: RwLock::new(()),
            leaves: (0..STRIPES).map(|_| RwLock::new(())).collect(),
        }
    }

    /// Run `f` (a lookup of `key`) under the locks a lookup takes.
    fn lookup<R>(&self, t: &BTree, m: &RawMem<'_>, key: u64, f: impl FnOnce() -> R) -> R {
        let _tree = self.tree.read();
        if self.locking == Locking::Global {
            return f();
        }
        let _leaf = self.leaves[stripe(t.leaf_of(m, key))].read();
        f()
    }

    /// The locks for a pair inserting `new` and deleting `old`.
    fn pair(&self, t: &BTree, m: &RawMem<'_>, new: u64, old: u64) -> PairGuard<'_> {
        if self.locking == Locking::Global {
            return PairGuard::Tree {
                _tree: self.tree.write(),
            };
        }
        let tree = self.tree.read();
        let (a, b) = (stripe(t.leaf_of(m, new)), stripe(t.leaf_of(m, old)));
        let first = self.leaves[a.min(b)].write();
        let second = (a != b).then(|| self.leaves[a.max(b)].write());
        // Under the leaf's lock no other pair changes it: full now means the insert splits.
        if t.leaf_is_full(m, t.leaf_of(m, new)) {
            drop(second);
            drop(first);
            drop(tree);
            return PairGuard::Tree {
                _tree: self.tree.write(),
            };
        }
        PairGuard::Leaves {
            _tree: tree,
            _first: first,
            _second: second,
        }
    }
}

/// One run of `sys` on `n` threads under `locking`: the total seconds. A system with
/// per-thread logs gets one log per thread.
pub fn threads_once(
    cfg: &BTreeThreadsConfig,
    sys: &System,
    n: usize,
    locking: Locking,
) -> anyhow::Result<f64> {
    let n = n.max(1);
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
    let tree = {
        let mut m = RawMem::new(&pool);
        let tree = BTree::create(&mut m, cfg.node_bytes, vs)?;
        let mut keys: Vec<u64> = (0..cfg.records).map(|k| 2 * k).collect();
        for i in (1..keys.len()).rev() {
            keys.swap(i, rng.gen_range(0..=i));
        }
        let mut val = vec![0u8; vs];
        for k in keys {
            val[..8].copy_from_slice(&k.to_le_bytes());
            tree.insert(&mut m, k, &val)?;
        }
        tree
    };
    let recoverable = matches!(sys, System::Rewind(_));
    let locks = TreeLocks::new(locking);
    let start = Instant::now();
    let results: Vec<anyhow::Result<()>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|t| {
                let (pool, locks, tree) = (pool.clone(), &locks, tree);
                s.spawn(move || -> anyhow::Result<()> {
                    let mut rng = SmallRng::seed_from_u64(1000 + t as u64);
                    let lookups = lookup_ratio(t, n);
                    let mut own: Vec<u64> = (0..cfg.records)
                        .filter(|k| k % n as u64 == t as u64)
                        .map(|k| 2 * k)
                        .collect();
                    let mut val = vec![0u8; vs];
                    let mut out = vec![0u8; vs];
                    for _ in 0..ops {
                        if own.is_empty() {
                            anyhow::bail!("thread {t} of {n} owns no key");
                        }
                        let i = rng.gen_range(0..own.len());
                        let m = RawMem::new(&pool);
                        if rng.gen_bool(lookups) {
                            let k = own[i];
                            let found = locks.lookup(&tree, &m, k, || tree.get(&m, k, &mut out));
                            if !found {
                                anyhow::bail!("key {k} of thread {t} not found");
                            }
                            continue;
                        }
                        let (old, new) = (own[i], own[i] ^ 1);
                        val[..8].copy_from_slice(&new.to_le_bytes());
                        let _held = locks.pair(&tree, &m, new, old);
                        if recoverable {
                            pool.transaction(|tx| -> Result<(), RewindError> {
                                tree.insert(tx, new, &val)?;
                                tree.remove(tx, old)?;
                                Ok(())
                            })?;
                        } else {
                            let mut m = RawMem::new(&pool);
                            tree.insert(&mut m, new, &val)?;
                            tree.remove(&mut m, old)?;
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
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a B+-tree thread panicked")))
            })
            .collect()
    });
    let secs = start.elapsed().as_secs_f64();
    for r in results {
        r?;
    }
    let m = RawMem::new(&pool);
    let len = tree.len(&m);
    if len != cfg.records {
        anyhow::bail!("{len} records after the run, {} loaded", cfg.records);
    }
    tree.check(&m)
        .map_err(|e| anyhow::anyhow!("the tree after the run: {e}"))?;
    Ok(secs)
}

/// `sys`'s label under `locking` ("-global-lock" for [`Locking::Global`]).
pub fn label(sys: &System, locking: Locking) -> String {
    match locking {
        Locking::Leaf => sys.label(),
        Locking::Global => format!("{}-global-lock", sys.label()),
    }
}

/// Fig. 9 (see the module docs): every system at every thread count, medians of `runs`.
/// The twin runs under the first locking only (its time is the reference of the same
/// locking's REWIND runs); each other locking's ratio is over its own twin if it ran.
pub fn btree_threads(cfg: &BTreeThreadsConfig) -> anyhow::Result<BTreeThreadsResult> {
    let load_before = load_average();
    let mut points = Vec::new();
    for (li, &locking) in cfg.locking.iter().enumerate() {
        for &n in &cfg.threads {
            let mut row = Vec::new();
            for sys in &cfg.systems {
                if li > 0 && matches!(sys, System::Nvm) {
                    continue;
                }
                let mut secs = Vec::new();
                for _ in 0..cfg.runs.max(1) {
                    secs.push(threads_once(cfg, sys, n, locking)?);
                }
                let s = median(&mut secs);
                row.push(ThreadsPoint {
                    system: label(sys, locking),
                    threads: n,
                    locking,
                    seconds: s,
                    ops_per_sec: (cfg.operations_per_thread * n as u64) as f64 / s,
                    ratio_vs_nvm: None,
                });
            }
            let nvm = label(&System::Nvm, locking);
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
        load_average: load_before.zip(load_average()),
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
            runs: 1,
            write_delay_ns: 0,
            ..BTreeThreadsConfig::default()
        };
        let r = btree_threads(&cfg).unwrap();
        // Leaf locking: every system; global lock: the REWIND systems.
        assert_eq!(r.points.len(), 3 * (2 * cfg.systems.len() - 1));
        assert!(r.points.iter().any(|p| p.system == "batch-global-lock"));
        assert!(
            r.points
                .iter()
                .filter(|p| p.locking == Locking::Leaf)
                .all(|p| p.ratio_vs_nvm.is_some())
        );
    }
}
