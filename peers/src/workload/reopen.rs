//! The reopen workload: how long a system takes to open again after a `kill -9` with
//! `--reopen-txns` (1,000,000 by default) committed account updates behind it.
//!
//! For each system a child process (this binary, `__reopen-child`) creates a fresh store of
//! `--accounts` accounts and commits the transactions (TPC-B's account update alone, as in the
//! `account-update` workload), then reports through its stdout how many it committed and the
//! sum of their deltas, and waits. The parent measures the store's files (log and data bytes: file
//! lengths, and the disk allocated to them, which counts preallocated space), `kill -9`s the
//! child (SIGKILL: nothing is closed or flushed; what the child wrote to files stays in the
//! page cache, so this is a process crash, not a power cut), and then times
//! [`TxnSystem::reopen`] and a read of one account, until the store answers: `reopen_ms`. The
//! self-check follows: the balances must sum to the initial total plus every delta the child
//! reported.
//!
//! The child commits in each system's durable setting where that fits in about a minute on
//! two cores (braid-engine, RocksDB), from `--reopen-threads` threads (64 by default: their
//! group commit gathers many threads' commits into one sync). SQLite, redb and fjall commit
//! durable transactions at a few thousand per second, minutes for 1,000,000, so their child
//! commits under [`TxnSystem::relaxed_setting`] (each commit written to the operating system,
//! or for redb persisted by a later durable commit; a `kill -9` loses none of it, which the
//! self-check confirms) from `--reopen-relaxed-threads` threads (1 by default: no commit
//! waits for a sync, so more threads only contend for the cores). Every row says which
//! setting and how many threads its child used. One reopen per system (not repeated), with
//! the page cache warm.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use anyhow::{Context as _, Result, bail};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::output::ReopenRow;
use crate::systems::{FileBytes, INITIAL_BALANCE, Setup, TxnSystem, balance, files};
use crate::workload::child::{self, Running};
use crate::workload::txn::{MAX_DELTA, setup, sum_balances};

/// What the child reports once its transactions are committed.
#[derive(Debug, Serialize, Deserialize)]
pub struct ChildReport {
    /// Transactions committed.
    pub txns: u64,
    /// The sum of their deltas.
    pub delta_sum: i64,
    /// Conflicts retried.
    pub retries: u64,
    /// Seconds the transactions took (after the load).
    pub seconds: f64,
}

/// The setup of the child's store: `relaxed` where the system has a relaxed setting.
fn child_setup(sys: &dyn TxnSystem, threads: usize, accounts: u64) -> Setup {
    Setup {
        relaxed: sys.relaxed_setting().is_some(),
        ..setup(threads, accounts)
    }
}

/// The child: create the store in `dir`, commit `txns` account updates from `threads`
/// threads, report, and wait to be killed.
pub fn child(
    sys: &dyn TxnSystem,
    dir: &Path,
    threads: usize,
    accounts: u64,
    txns: u64,
) -> Result<()> {
    child::die_with_parent()?;
    if accounts == 0 || threads == 0 {
        bail!("the reopen child needs accounts and threads");
    }
    let setup = child_setup(sys, threads, accounts);
    let store = sys.open(dir, &setup).context("open and load")?;
    let next = AtomicU64::new(0);
    let start = Instant::now();
    let per_thread: Vec<Result<(i64, u64)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (store, next) = (&store, &next);
                s.spawn(move || -> Result<(i64, u64)> {
                    let mut w = store.worker(t)?;
                    let mut rng = SmallRng::seed_from_u64(0x7d_0000 + t as u64);
                    let (mut delta_sum, mut retries) = (0i64, 0u64);
                    while next.fetch_add(1, Relaxed) < txns {
                        let account = rng.gen_range(0..accounts);
                        let delta = rng.gen_range(-MAX_DELTA..=MAX_DELTA);
                        retries += u64::from(w.update(account, delta)?);
                        delta_sum += delta;
                    }
                    Ok((delta_sum, retries))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a thread panicked")))
            })
            .collect()
    });
    let seconds = start.elapsed().as_secs_f64();
    let mut report = ChildReport {
        txns,
        delta_sum: 0,
        retries: 0,
        seconds,
    };
    for r in per_thread {
        let (d, retries) = r?;
        report.delta_sum += d;
        report.retries += retries;
    }
    store.settle().context("settle")?;
    child::send(&report)?;
    // Keep the store open (never closed) until the kill.
    let _open = store;
    child::wait_to_be_killed()
}

/// The parent: run the child for `sys` in the empty directory `dir` through `exe` (this
/// binary), kill it, time the reopen and check the balances.
pub fn run(
    sys: &dyn TxnSystem,
    exe: &Path,
    dir: &Path,
    threads: usize,
    accounts: u64,
    txns: u64,
    tick: &dyn Fn(),
) -> Result<ReopenRow> {
    let args = [
        "__reopen-child".to_string(),
        "--system".into(),
        sys.name(),
        "--dir".into(),
        dir.display().to_string(),
        "--threads".into(),
        threads.to_string(),
        "--accounts".into(),
        accounts.to_string(),
        "--txns".into(),
        txns.to_string(),
    ];
    let mut c = Running::spawn(exe, &args)?;
    let report: ChildReport = c.report(tick).context("the loading child")?;
    if report.txns != txns {
        bail!(
            "the child committed {} transactions, not {txns}",
            report.txns
        );
    }
    let (mut log, mut data) = (FileBytes::default(), FileBytes::default());
    for (f, n) in files(dir)? {
        let sum = if sys.is_log_file(&f) {
            &mut log
        } else {
            &mut data
        };
        sum.len += n.len;
        sum.allocated += n.allocated;
    }
    let status = c.kill()?;
    use std::os::unix::process::ExitStatusExt as _;
    if status.signal() != Some(libc::SIGKILL) {
        bail!("the child ended ({status}) before the kill");
    }
    drop(c);

    let setup = setup(threads, accounts);
    let t0 = Instant::now();
    let store = sys.reopen(dir, &setup).context("reopen after kill -9")?;
    let first = store.get(0).context("the first read after reopen")?;
    let reopen = t0.elapsed();
    match first {
        Some(v) => {
            balance(&v)?;
        }
        None => bail!("account 0 is missing after reopen"),
    }
    let got = sum_balances(store.as_ref(), accounts).context("self-check after reopen")?;
    store.close().context("close")?;
    let want = INITIAL_BALANCE * accounts as i64 + report.delta_sum;
    if got != want {
        bail!(
            "self-check: balances sum to {got} after kill -9 and reopen, the {txns} committed \
             transactions leave {want}"
        );
    }
    let relaxed = sys.relaxed_setting();
    Ok(ReopenRow {
        workload: "reopen".into(),
        system: sys.name(),
        variant: sys.variant().as_str().into(),
        version: sys.version(),
        load_durable: relaxed.is_none(),
        load_setting: relaxed.unwrap_or_else(|| sys.durability()),
        threads,
        accounts,
        txns,
        load_seconds: report.seconds,
        load_per_s: txns as f64 / report.seconds.max(1e-9),
        retries: report.retries,
        log_bytes: log.len,
        log_allocated_bytes: log.allocated,
        data_bytes: data.len,
        data_allocated_bytes: data.allocated,
        reopen_ms: reopen.as_secs_f64() * 1e3,
        ratio_to_best_peer: None,
    })
}
