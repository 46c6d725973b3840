//! The YCSB workloads. `ycsb-a` and `ycsb-b` are YCSB's core workloads A (update heavy: 50%
//! reads, 50% updates) and B (read mostly: 95% reads, 5% updates) with YCSB's request
//! distribution, Zipf 0.99 ([`YCSB_AB_THETA`]): as YCSB defines them, every operation is a
//! single read or a single update (read the row, write its next version), here one durable
//! transaction each ([`Config::ycsb_a`], [`Config::ycsb_b`]).
//!
//! `ycsb` is the transaction as the Taurus paper runs YCSB and braid's own benchmark does
//! by default (`braid-workloads`' `YcsbConfig`): every transaction makes 2 accesses to
//! distinct rows, each a read with probability 0.5 and otherwise an update (so a quarter of
//! the transactions only read, half read one row and update another, a quarter update two),
//! keys drawn from a Zipf distribution with theta 0.6 over the table (`--ycsb-theta 0` draws
//! them uniformly), rows of one 100-byte value. The Zipf ranks are scattered over the key
//! space by a multiplicative hash, as braid's YCSB does, so the hot rows are not neighbours.
//! Unlike braid's YCSB, a transaction makes its accesses in key order: RocksDB's pessimistic
//! transactions wait for locks, and two transactions locking two rows in opposite orders would
//! wait for each other until the lock time-out. An update reads the row and writes the next
//! version of it ([`ycsb_next`](crate::systems::ycsb_next)); every commit is durable before
//! the thread's next transaction. The table is loaded before the clock starts (`--ycsb-rows`,
//! 100,000 by default; the paper's YCSB has 1M rows of 10 such values).
//!
//! The self-check: every acknowledged update of a row increments the row's version, which is
//! in its value, and the harness counts the acknowledged updates of every row. After the run
//! the store is closed and reopened, and every row must hold exactly the version its count
//! says ([`check`]): a lost update (two transactions that both read version v and wrote v + 1,
//! or an acknowledged commit that recovery dropped) leaves a row behind its count; a torn or
//! misplaced value fails [`ycsb_version`].

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow, bail};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};
use serde::Serialize;

use crate::output::Row;
use crate::systems::{
    Access, Setup, Table, TxnStore, TxnSystem, TxnWorker, YCSB_VALUE_BYTES, ycsb_version,
};
use crate::workload::run_on_store;

/// Accesses per transaction.
pub const ACCESSES: usize = 2;
/// Probability that an access only reads.
pub const READ_FRACTION: f64 = 0.5;
/// The Zipf exponent of the Taurus paper's YCSB (and braid's default).
pub const DEFAULT_THETA: f64 = 0.6;
/// The Zipf exponent of YCSB's `zipfian` request distribution (its `ZIPFIAN_CONSTANT`), which
/// workloads A and B use.
pub const YCSB_AB_THETA: f64 = 0.99;

/// The YCSB workload's parameters, as the report records them.
#[derive(Debug, Clone, Serialize)]
pub struct Config {
    /// Rows of the table, keys `0..rows`.
    pub rows: u64,
    /// Zipf exponent of the key distribution; 0: uniform.
    pub theta: f64,
    /// Accesses per transaction, to distinct rows.
    pub accesses: usize,
    /// Probability that an access only reads (else it updates).
    pub read_fraction: f64,
    /// Bytes of a row's value.
    pub value_bytes: usize,
}

impl Config {
    /// The parameters with the fixed ones filled in.
    pub fn new(rows: u64, theta: f64) -> Config {
        Config {
            rows,
            theta,
            accesses: ACCESSES,
            read_fraction: READ_FRACTION,
            value_bytes: YCSB_VALUE_BYTES,
        }
    }

    /// YCSB's workload A over `rows` rows: one access per transaction, a read with p=0.5 else
    /// an update, keys Zipf 0.99.
    pub fn ycsb_a(rows: u64) -> Config {
        Config {
            accesses: 1,
            read_fraction: 0.5,
            ..Config::new(rows, YCSB_AB_THETA)
        }
    }

    /// YCSB's workload B over `rows` rows: one access per transaction, a read with p=0.95 else
    /// an update, keys Zipf 0.99.
    pub fn ycsb_b(rows: u64) -> Config {
        Config {
            accesses: 1,
            read_fraction: 0.95,
            ..Config::new(rows, YCSB_AB_THETA)
        }
    }

    /// The distribution of keys, in words.
    pub fn distribution(&self) -> String {
        if self.theta > 0.0 {
            format!("Zipf theta {}", self.theta)
        } else {
            "uniform".into()
        }
    }

    /// The parameters in words.
    pub fn describe(&self) -> String {
        format!(
            "{}, each a read with p={} else an update, keys {} over {} rows of {} B",
            if self.accesses == 1 {
                "1 access per transaction".to_string()
            } else {
                format!("{} accesses", self.accesses)
            },
            self.read_fraction,
            self.distribution(),
            self.rows,
            self.value_bytes
        )
    }
}

/// Draws transactions.
pub struct Draw {
    rows: u64,
    read_fraction: f64,
    accesses: usize,
    zipf: Option<Zipf<f64>>,
}

impl Draw {
    /// For `cfg`, which needs at least one row and a theta of 0 or more.
    pub fn new(cfg: &Config) -> Result<Draw> {
        if cfg.rows == 0 {
            bail!("the YCSB table needs at least one row");
        }
        if !(cfg.theta >= 0.0 && cfg.theta.is_finite()) {
            bail!("the Zipf theta must be 0 (uniform) or more");
        }
        let zipf = if cfg.theta > 0.0 && cfg.rows > 1 {
            Some(Zipf::new(cfg.rows, cfg.theta).map_err(|e| anyhow!("Zipf: {e}"))?)
        } else {
            None
        };
        Ok(Draw {
            rows: cfg.rows,
            read_fraction: cfg.read_fraction,
            accesses: cfg
                .accesses
                .min(usize::try_from(cfg.rows).unwrap_or(usize::MAX)),
            zipf,
        })
    }

    fn key(&self, rng: &mut SmallRng) -> u64 {
        match &self.zipf {
            // Ranks 1..=rows, 1 the most popular, scattered over the key space.
            Some(z) => {
                let rank = (z.sample(rng) as u64).clamp(1, self.rows) - 1;
                rank.wrapping_mul(0x9E37_79B9_7F4A_7C15) % self.rows
            }
            None => rng.gen_range(0..self.rows),
        }
    }

    /// The next transaction's accesses into `out`: distinct rows, in key order.
    pub fn next(&self, rng: &mut SmallRng, out: &mut Vec<Access>) {
        out.clear();
        while out.len() < self.accesses {
            let key = self.key(rng);
            if out.iter().any(|a| a.key == key) {
                continue;
            }
            let update = !rng.gen_bool(self.read_fraction);
            out.push(Access { key, update });
        }
        out.sort_by_key(|a| a.key);
    }
}

struct Handle<'a> {
    w: Box<dyn TxnWorker + 'a>,
    rng: SmallRng,
    accesses: Vec<Access>,
}

/// Load the YCSB table into `sys` in the empty directory `dir`, run `threads` workers for
/// `duration` with the mix `cfg`, then [`check`] the reopened rows; the row is `workload`'s.
pub fn run(
    sys: &dyn TxnSystem,
    dir: &Path,
    threads: usize,
    workload: &str,
    cfg: &Config,
    duration: Duration,
    tick: &dyn Fn(),
) -> Result<Row> {
    let draw = Draw::new(cfg)?;
    let setup = Setup {
        threads,
        table: Table::Ycsb,
        rows: cfg.rows,
        relaxed: false,
    };
    let store = sys.open(dir, &setup).context("open and load")?;
    // Acknowledged updates of every row.
    let committed: Vec<AtomicU64> = (0..cfg.rows).map(|_| AtomicU64::new(0)).collect();
    let make = |t: usize| -> Result<Handle<'_>> {
        Ok(Handle {
            w: store.worker(t)?,
            rng: SmallRng::seed_from_u64(0x7c_0000 + t as u64),
            accesses: Vec::with_capacity(cfg.accesses),
        })
    };
    let op = |h: &mut Handle<'_>, _seq: u64| -> Result<()> {
        draw.next(&mut h.rng, &mut h.accesses);
        h.w.ycsb(&h.accesses)?;
        for a in h.accesses.iter().filter(|a| a.update) {
            // The key was drawn below `rows`, the length of `committed`.
            if let Some(c) = committed.get(a.key as usize) {
                c.fetch_add(1, Relaxed);
            }
        }
        Ok(())
    };
    let m = run_on_store(store.as_ref(), threads, duration, &make, &op, tick)?;
    store.close().context("close")?;
    let committed: Vec<u64> = committed.into_iter().map(AtomicU64::into_inner).collect();
    let store = sys.reopen(dir, &setup).context("reopen")?;
    check(store.as_ref(), &committed).context("self-check after reopen")?;
    store.close().context("close after the self-check")?;
    Ok(Row {
        workload: workload.into(),
        system: sys.name(),
        variant: sys.variant().as_str().into(),
        threads,
        record_bytes: Some(YCSB_VALUE_BYTES),
        version: sys.version(),
        durability: sys.durability(),
        ..Row::measured(&m)
    })
}

/// The self-check: `store` holds `committed.len()` rows and row `k` holds version
/// `committed[k]` (the acknowledged updates of it) of its value.
pub fn check(store: &dyn TxnStore, committed: &[u64]) -> Result<()> {
    let mut behind = 0u64;
    let mut ahead = 0u64;
    let mut example = None;
    store.scan(committed.len() as u64, &mut |key, v| {
        let version = ycsb_version(key, v)?;
        // `scan` only visits keys below `committed.len()`.
        let want = committed.get(key as usize).copied().unwrap_or(0);
        if version != want {
            if version < want {
                behind += 1;
            } else {
                ahead += 1;
            }
            example.get_or_insert((key, version, want));
        }
        Ok(())
    })?;
    if let Some((key, version, want)) = example {
        bail!(
            "{behind} row(s) miss acknowledged updates (lost updates) and {ahead} row(s) have \
             more updates than were acknowledged; e.g. row {key} is at version {version}, \
             {want} update(s) of it were acknowledged"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::systems::{ycsb_value, ycsb_version};

    #[test]
    fn ycsb_a_and_b_make_one_access_with_their_read_share() -> Result<()> {
        for (cfg, reads) in [
            (Config::ycsb_a(10_000), 4_700..=5_300),
            (Config::ycsb_b(10_000), 9_400..=9_600),
        ] {
            let d = Draw::new(&cfg)?;
            let mut rng = SmallRng::seed_from_u64(3);
            let mut out = Vec::new();
            let mut n = 0;
            for _ in 0..10_000 {
                d.next(&mut rng, &mut out);
                assert_eq!(out.len(), 1);
                n += usize::from(!out[0].update);
            }
            assert!(
                reads.contains(&n),
                "{n} reads of 10,000 at p={}",
                cfg.read_fraction
            );
        }
        Ok(())
    }

    /// A store of YCSB values in memory, for the self-check alone.
    struct Rows(Vec<Vec<u8>>);

    impl TxnStore for Rows {
        fn worker(&self, _thread: usize) -> Result<Box<dyn TxnWorker + '_>> {
            bail!("no workers")
        }
        fn get(&self, key: u64) -> Result<Option<Vec<u8>>> {
            Ok(self.0.get(key as usize).cloned())
        }
        fn close(self: Box<Self>) -> Result<()> {
            Ok(())
        }
    }

    fn rows(versions: &[u64]) -> Rows {
        Rows(
            versions
                .iter()
                .enumerate()
                .map(|(k, &v)| ycsb_value(k as u64, v).to_vec())
                .collect(),
        )
    }

    #[test]
    fn check_passes_when_every_row_has_its_updates() -> Result<()> {
        check(&rows(&[0, 2, 1, 0]), &[0, 2, 1, 0])
    }

    #[test]
    fn check_detects_a_lost_update() {
        // Two updates of row 1 were acknowledged; the store holds version 2 where 3 are.
        let Err(e) = check(&rows(&[0, 2, 1, 0]), &[0, 3, 1, 0]) else {
            panic!("a lost update must fail the check");
        };
        let msg = format!("{e:#}");
        assert!(msg.contains("1 row(s) miss acknowledged updates"), "{msg}");
        assert!(msg.contains("row 1 is at version 2"), "{msg}");
    }

    #[test]
    fn check_detects_an_update_never_acknowledged() {
        assert!(check(&rows(&[0, 1]), &[0, 0]).is_err());
    }

    #[test]
    fn check_detects_a_missing_row_and_a_foreign_value() {
        assert!(check(&rows(&[0, 0]), &[0, 0, 0]).is_err());
        let mut r = rows(&[0, 0, 0]);
        r.0[2] = ycsb_value(1, 0).to_vec();
        assert!(check(&r, &[0, 0, 0]).is_err());
        r.0[2] = ycsb_value(2, 0).to_vec();
        r.0[2][50] ^= 1;
        assert!(check(&r, &[0, 0, 0]).is_err());
    }

    #[test]
    fn draws_distinct_sorted_keys_with_half_of_the_accesses_updates() -> Result<()> {
        for theta in [0.0, DEFAULT_THETA] {
            let d = Draw::new(&Config::new(1_000, theta))?;
            let mut rng = SmallRng::seed_from_u64(1);
            let mut out = Vec::new();
            let mut updates = 0;
            for _ in 0..10_000 {
                d.next(&mut rng, &mut out);
                assert_eq!(out.len(), 2);
                assert!(out[0].key < out[1].key && out[1].key < 1_000);
                updates += out.iter().filter(|a| a.update).count();
            }
            assert!((9_000..11_000).contains(&updates), "{updates} updates");
        }
        // A one-row table: one access.
        let d = Draw::new(&Config::new(1, DEFAULT_THETA))?;
        let mut out = Vec::new();
        d.next(&mut SmallRng::seed_from_u64(1), &mut out);
        assert_eq!(out.len(), 1);
        Ok(())
    }

    #[test]
    fn zipf_keys_are_skewed() -> Result<()> {
        let d = Draw::new(&Config::new(10_000, DEFAULT_THETA))?;
        let mut rng = SmallRng::seed_from_u64(2);
        let mut hits = vec![0u32; 10_000];
        for _ in 0..100_000 {
            hits[d.key(&mut rng) as usize] += 1;
        }
        hits.sort_unstable_by(|a, b| b.cmp(a));
        let top: u32 = hits[..100].iter().sum();
        // Uniform: about 1,000 of 100,000 draws in the top 1% of rows; Zipf 0.6: several times.
        assert!(top > 4_000, "the hottest 1% of rows got {top} draws");
        Ok(())
    }

    /// Updates through a real system (SQLite, on disk, in both variants), a reopen, and the
    /// check: it passes with the true counts and fails with one acknowledged update too many.
    #[test]
    fn sqlite_updates_survive_a_reopen_and_a_lost_one_is_caught() -> Result<()> {
        use crate::systems::Variant;
        for variant in [Variant::Default, Variant::Tuned] {
            let dir = crate::tests::scratch(&format!("ycsb-sqlite-{}", variant.as_str()))?;
            let sys = crate::systems::sqlite::Sqlite(variant);
            let setup = Setup {
                threads: 1,
                table: Table::Ycsb,
                rows: 8,
                relaxed: false,
            };
            let store = sys.open(&dir, &setup)?;
            {
                let mut w = store.worker(0)?;
                let up = |key| Access { key, update: true };
                let read = |key| Access { key, update: false };
                w.ycsb(&[up(1), read(3)])?;
                w.ycsb(&[up(1), up(5)])?;
                w.ycsb(&[read(1), read(5)])?;
            }
            store.close()?;
            let store = sys.reopen(&dir, &setup)?;
            let v = store.get(1)?.context("row 1")?;
            assert_eq!(ycsb_version(1, &v)?, 2);
            check(store.as_ref(), &[0, 2, 0, 0, 0, 1, 0, 0])?;
            assert!(check(store.as_ref(), &[0, 3, 0, 0, 0, 1, 0, 0]).is_err());
            store.close()?;
            std::fs::remove_dir_all(&dir)?;
        }
        Ok(())
    }
}
