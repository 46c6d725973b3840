//! The account-update workload: a single-row read-modify-write, TPC-B's account update alone
//! (read a balance, write balance + delta, commit durably; no teller, branch or history: that
//! is the `tpcb` workload), from N threads, each commit durable before the thread's next, on a
//! table of `accounts` rows loaded before the clock starts. Accounts are drawn uniformly and
//! deltas from TPC-B's range (-999,999..=999,999). Measures transactions per second and
//! latency (a retried conflict counts within its transaction's latency, and the transaction
//! as aborted once; see [`crate::workload`]).
//!
//! After the timed run the store is closed and reopened, and every account's balance must be
//! its initial balance plus the deltas acknowledged for it. Reopen time after a `kill -9` and
//! memory per row are workloads of their own (`reopen`, `memory`).

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

/// What all threads committed: the acknowledged deltas of every account.
struct Totals {
    delta: Vec<AtomicI64>,
}

struct Handle<'a> {
    w: Box<dyn TxnWorker + 'a>,
    rng: SmallRng,
    totals: &'a Totals,
}

/// Check that every account of `store` holds its initial balance plus `delta[account]`.
fn check(store: &dyn TxnStore, delta: &[i64]) -> Result<()> {
    let (mut wrong, mut example) = (0u64, None);
    store.scan(delta.len() as u64, &mut |key, v| {
        let got = balance(v)?;
        // `scan` only visits keys below `delta.len()`.
        let want = INITIAL_BALANCE + delta.get(key as usize).copied().unwrap_or(0);
        if got != want {
            wrong += 1;
            example.get_or_insert((key, got, want));
        }
        Ok(())
    })?;
    if let Some((key, got, want)) = example {
        bail!(
            "{wrong} account(s) differ from their acknowledged updates; e.g. account {key} \
             holds {got}, its acknowledged updates make {want}"
        );
    }
    Ok(())
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
    let totals = Totals {
        delta: (0..accounts).map(|_| AtomicI64::new(0)).collect(),
    };
    let make = |t: usize| -> Result<Handle<'_>> {
        Ok(Handle {
            w: store.worker(t)?,
            rng: SmallRng::seed_from_u64(0x7b_0000 + t as u64),
            totals: &totals,
        })
    };
    let op = |h: &mut Handle<'_>, _seq: u64| -> Result<()> {
        let account = h.rng.gen_range(0..accounts);
        let delta = h.rng.gen_range(-MAX_DELTA..=MAX_DELTA);
        // Its retries are counted by `retry` on this thread (see `crate::workload`).
        h.w.update(account, delta)?;
        // The account was drawn below `accounts`, the length of `delta`.
        if let Some(d) = h.totals.delta.get(account as usize) {
            d.fetch_add(delta, Relaxed);
        }
        Ok(())
    };
    let m = run_on_store(store.as_ref(), threads, duration, &make, &op, tick)?;
    store.close().context("close")?;
    let delta: Vec<i64> = totals.delta.iter().map(|d| d.load(Relaxed)).collect();
    let store = sys.reopen(dir, &setup).context("reopen")?;
    check(store.as_ref(), &delta).context("self-check after reopen")?;
    store.close().context("close after the self-check")?;
    Ok(Row {
        workload: "account-update".into(),
        system: sys.name(),
        variant: sys.variant().as_str().into(),
        threads,
        record_bytes: None,
        version: sys.version(),
        durability: sys.durability(),
        ..Row::measured(&m)
    })
}
