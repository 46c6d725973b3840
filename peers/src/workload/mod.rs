//! The workloads. The timed part the append, tpcb, account-update and ycsb workloads share is
//! here: N threads, each with its own handle, doing one operation after another (the next only
//! once the last is durable) until the time is up, with every operation's latency in an HDR
//! histogram. The reopen, kill and memory workloads run once per system, in child processes
//! ([`child`]).

use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow};

use crate::systems::{SyncFigures, SyncStats, TxnStore};
use hdrhistogram::Histogram;

pub mod append;
pub mod child;
pub mod kill;
pub mod memory;
pub mod reopen;
pub mod tpcb;
pub mod txn;
pub mod ycsb;

/// What a timed run measured.
#[derive(Debug)]
pub struct Measured {
    /// Operations completed (durable) per thread.
    pub per_thread: Vec<u64>,
    /// Operations completed in all.
    pub ops: u64,
    /// From the start signal until the last thread stopped.
    pub elapsed: Duration,
    /// Latency of every operation, in nanoseconds.
    pub hist: Histogram<u64>,
}

impl Measured {
    /// Operations per second.
    pub fn per_s(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Latency percentile `q` (0..100) in microseconds.
    pub fn us(&self, q: f64) -> f64 {
        self.hist.value_at_percentile(q) as f64 / 1_000.0
    }
}

fn histogram() -> Result<Histogram<u64>> {
    // 1 ns to 10 minutes, 3 significant digits.
    Histogram::new_with_bounds(1, 600_000_000_000, 3).map_err(|e| anyhow!("histogram: {e}"))
}

/// [`run_threads`] on a transactional store: what the run measured and its sync figures (the
/// store's own statistics where it keeps them, else the process's counts over the run, from
/// before `make` opens the workers).
pub fn run_on_store<H>(
    store: &dyn TxnStore,
    threads: usize,
    duration: Duration,
    make: &(dyn Fn(usize) -> Result<H> + Sync),
    op: &(dyn Fn(&mut H, u64) -> Result<()> + Sync),
    tick: &dyn Fn(),
) -> Result<(Measured, SyncFigures)> {
    let counted0 = SyncStats::counted();
    let own0 = store.own_sync_stats();
    let m = run_threads(threads, duration, make, op, tick)?;
    let sync = SyncFigures::between(
        own0,
        store.own_sync_stats(),
        counted0,
        m.elapsed.as_secs_f64(),
    );
    Ok((m, sync))
}

/// Run `threads` threads for `duration`. Each first makes its handle with `make(thread)`
/// (before the clock starts), then calls `op(&mut handle, seq)` with `seq` 0, 1, 2, ... until
/// the time is up. The first error stops every thread and is returned. `tick` is called about
/// every 100 ms while the threads run.
pub fn run_threads<H>(
    threads: usize,
    duration: Duration,
    make: &(dyn Fn(usize) -> Result<H> + Sync),
    op: &(dyn Fn(&mut H, u64) -> Result<()> + Sync),
    tick: &dyn Fn(),
) -> Result<Measured> {
    let stop = AtomicBool::new(false);
    let start_line = Barrier::new(threads + 1);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (stop, start_line) = (&stop, &start_line);
                s.spawn(move || -> Result<(u64, Histogram<u64>)> {
                    let mut hist = histogram()?;
                    let made = make(t);
                    start_line.wait();
                    let mut h = match made {
                        Ok(h) => h,
                        Err(e) => {
                            stop.store(true, Relaxed);
                            return Err(e.context(format!("thread {t}: opening its handle")));
                        }
                    };
                    let mut seq = 0u64;
                    while !stop.load(Relaxed) {
                        let t0 = Instant::now();
                        if let Err(e) = op(&mut h, seq) {
                            stop.store(true, Relaxed);
                            return Err(e.context(format!("thread {t}, operation {seq}")));
                        }
                        let ns = t0.elapsed().as_nanos().min(u64::MAX as u128) as u64;
                        hist.saturating_record(ns.max(1));
                        seq += 1;
                    }
                    // The handle (and what it borrows) goes before the thread reports.
                    drop(h);
                    Ok((seq, hist))
                })
            })
            .collect();
        start_line.wait();
        let start = Instant::now();
        while start.elapsed() < duration && !stop.load(Relaxed) {
            std::thread::sleep(
                (duration - start.elapsed().min(duration)).min(Duration::from_millis(100)),
            );
            tick();
        }
        stop.store(true, Relaxed);
        let mut per_thread = Vec::with_capacity(threads);
        let mut hist = histogram()?;
        let mut first_err = None;
        for h in handles {
            match h.join() {
                Ok(Ok((n, th))) => {
                    per_thread.push(n);
                    hist.add(&th).map_err(|e| anyhow!("histogram: {e}"))?;
                }
                Ok(Err(e)) => {
                    first_err.get_or_insert(e);
                    per_thread.push(0);
                }
                Err(_) => {
                    first_err.get_or_insert(anyhow!("a benchmark thread panicked"));
                    per_thread.push(0);
                }
            }
        }
        let elapsed = start.elapsed();
        if let Some(e) = first_err {
            return Err(e);
        }
        Ok(Measured {
            ops: per_thread.iter().sum(),
            per_thread,
            elapsed,
            hist,
        })
    })
}
