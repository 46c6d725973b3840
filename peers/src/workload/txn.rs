//! The durable-transaction workload: TPC-B's account update (read a balance, write balance +
//! delta, commit durably) from N threads, each commit durable before the thread's next, on a
//! table of `accounts` rows loaded before the clock starts. Accounts are drawn uniformly and
//! deltas from TPC-B's range (-999,999..=999,999). Measures transactions per second and
//! latency (a retried conflict counts within its transaction's latency, and the transaction
//! as aborted once; see [`crate::workload`]).
//!
//! After the timed run the store is closed, reopened, and its balances must sum to the initial
//! total plus every committed delta. Reopen time after a `kill -9` and memory per row are
//! workloads of their own (`reopen`, `memory`).

use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering::Relaxed};
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::output::Row;
use crate::systems::{INITIAL_BALANCE, Setup, Table, TxnStore, TxnSystem, TxnWorker, balance};
use crate::workload::run_on_store;

/// TPC-B's delta bound.
pub const MAX_DELTA: i64 = 999_999;

/// How the TPC-B workload opens a store of `accounts` rows for `threads` threads.
pub fn setup(threads: usize, accounts: u64) -> Setup {
    Setup {
        threads,
        table: Table::Accounts,
        rows: accounts,
        relaxed: false,
    }
}

/// The sum of every balance of `store` (which holds `accounts` accounts), failing if an
/// account is missing.
pub fn sum_balances(store: &dyn TxnStore, accounts: u64) -> Result<i64> {
    let mut sum = 0i64;
    store.scan(accounts, &mut |_, v| {
        sum += balance(v)?;
        Ok(())
    })?;
    Ok(sum)
}

/// Reopen the store in `dir` and sum its balances.
fn reopen_sum(sys: &dyn TxnSystem, dir: &Path, setup: &Setup) -> Result<i64> {
    let store = sys.reopen(dir, setup)?;
    let sum = sum_balances(store.as_ref(), setup.rows)?;
    store.close()?;
    Ok(sum)
}

struct Handle<'a> {
    w: Box<dyn TxnWorker + 'a>,
    rng: SmallRng,
    delta: i64,
    /// What all threads committed, summed as their handles drop.
    total: &'a AtomicI64,
}

impl Drop for Handle<'_> {
    fn drop(&mut self) {
        self.total.fetch_add(self.delta, Relaxed);
    }
}

/// Load `accounts` rows into `sys` in the empty directory `dir`, run `threads` workers for
/// `duration`, then check the reopened balances.
pub fn run(
    sys: &dyn TxnSystem,
    dir: &Path,
    threads: usize,
    accounts: u64,
    duration: Duration,
    tick: &dyn Fn(),
) -> Result<Row> {
    if accounts == 0 {
        bail!("the accounts table needs at least one row");
    }
    let setup = setup(threads, accounts);
    let store = sys.open(dir, &setup).context("open and load")?;
    let total = AtomicI64::new(0);
    let make = |t: usize| -> Result<Handle<'_>> {
        Ok(Handle {
            w: store.worker(t)?,
            rng: SmallRng::seed_from_u64(0x7b_0000 + t as u64),
            delta: 0,
            total: &total,
        })
    };
    let op = |h: &mut Handle<'_>, _seq: u64| -> Result<()> {
        let account = h.rng.gen_range(0..accounts);
        let delta = h.rng.gen_range(-MAX_DELTA..=MAX_DELTA);
        h.w.update(account, delta)?;
        h.delta += delta;
        Ok(())
    };
    let m = run_on_store(store.as_ref(), threads, duration, &make, &op, tick)?;
    store.close().context("close")?;
    let want = INITIAL_BALANCE * accounts as i64 + total.load(Relaxed);
    let got = reopen_sum(sys, dir, &setup).context("self-check after reopen")?;
    if got != want {
        bail!("self-check: balances sum to {got} after reopen, committed updates leave {want}");
    }
    Ok(Row {
        workload: "txn".into(),
        system: sys.name(),
        variant: sys.variant().as_str().into(),
        threads,
        record_bytes: None,
        version: sys.version(),
        durability: sys.durability(),
        ..Row::measured(&m)
    })
}
