//! The workloads. The timed part the append, tpcb, account-update and ycsb workloads share
//! is here: N threads, each with its own handle, doing one operation after another (the next
//! only once the last is durable) until the time is up. The reopen, kill and memory workloads
//! run once per system, in child processes ([`child`]).
//!
//! How a timed run counts ([`run_threads`]):
//! * The window is the `duration` from the start signal. Every completion is stamped, and only
//!   operations that finished inside the window count (`ops`, per thread and in all) and go
//!   into the latency histogram; throughput is `ops` over the window. When the time is up the
//!   threads finish the operation they are in: those operations are `late_ops`, and the time
//!   from the end of the window until the last thread stopped is the drain (`drain`),
//!   reported on its own (a system whose threads sleep in a busy handler drains for seconds).
//! * Syncs and bytes written are read at the start and at the end of the window (the
//!   process-wide counts of [`crate::synccount`], and a system's own statistics where it keeps
//!   them), so they cover the same span as `ops`.
//! * A transaction that hit a conflict is retried by [`crate::systems::retry`], which counts
//!   every conflict on its thread; an operation of the window during which the count moved is
//!   an aborted transaction (`aborted`, each counted once however often it was retried), and
//!   the moves add up to `retries`.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Barrier, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow};

use crate::systems::{SyncFigures, SyncSample, SyncStats, TxnStore, conflicts_here};
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
    /// Operations each thread completed (durable) inside the window.
    pub per_thread: Vec<u64>,
    /// Operations each thread completed in all, the late ones included (what a self-check
    /// must find).
    pub completed: Vec<u64>,
    /// Operations completed inside the window, in all threads.
    pub ops: u64,
    /// Operations that finished after the window (each thread's last, at most).
    pub late_ops: u64,
    /// The window: from the start signal for the run's duration.
    pub window: Duration,
    /// From the end of the window until the last thread stopped.
    pub drain: Duration,
    /// Latency of every operation that finished inside the window, in nanoseconds.
    pub hist: Histogram<u64>,
    /// Operations of the window that were retried after a conflict at least once.
    pub aborted: u64,
    /// Conflicts retried by the operations of the window.
    pub retries: u64,
    /// Syncs and bytes written over the window.
    pub sync: SyncFigures,
}

impl Measured {
    /// Operations per second of the window.
    pub fn per_s(&self) -> f64 {
        self.ops as f64 / self.secs()
    }

    fn secs(&self) -> f64 {
        self.window.as_secs_f64().max(1e-9)
    }

    /// The slowest thread's operations per second (`None` without threads).
    pub fn thread_min_per_s(&self) -> Option<f64> {
        self.per_thread
            .iter()
            .min()
            .map(|&n| n as f64 / self.secs())
    }

    /// The fastest thread's operations per second.
    pub fn thread_max_per_s(&self) -> Option<f64> {
        self.per_thread
            .iter()
            .max()
            .map(|&n| n as f64 / self.secs())
    }

    /// Aborted transactions (retried at least once) per second of the window.
    pub fn aborts_per_s(&self) -> f64 {
        self.aborted as f64 / self.secs()
    }

    /// Latency percentile `q` (0..100) in microseconds.
    pub fn us(&self, q: f64) -> f64 {
        self.hist.value_at_percentile(q) as f64 / 1_000.0
    }

    /// Mean latency in microseconds.
    pub fn mean_us(&self) -> f64 {
        self.hist.mean() / 1_000.0
    }
}

fn histogram() -> Result<Histogram<u64>> {
    // 1 ns to 10 minutes, 3 significant digits.
    Histogram::new_with_bounds(1, 600_000_000_000, 3).map_err(|e| anyhow!("histogram: {e}"))
}

/// [`run_threads`] on a transactional store, its own sync statistics (braid's) read beside the
/// process's counts.
pub fn run_on_store<H>(
    store: &dyn TxnStore,
    threads: usize,
    duration: Duration,
    make: &(dyn Fn(usize) -> Result<H> + Sync),
    op: &(dyn Fn(&mut H, u64) -> Result<()> + Sync),
    tick: &dyn Fn(),
) -> Result<Measured> {
    let own = || store.own_sync_stats();
    run_threads(threads, duration, make, op, tick, &own)
}

/// What one thread did.
struct ThreadRun {
    in_window: u64,
    late: u64,
    aborted: u64,
    retries: u64,
    hist: Histogram<u64>,
}

/// Run `threads` threads for `duration`. Each first makes its handle with `make(thread)`
/// (before the clock starts), then calls `op(&mut handle, seq)` with `seq` 0, 1, 2, ... until
/// the time is up. The first error stops every thread and is returned. `tick` is called about
/// every 100 ms while the threads run; `own` reads the system's own sync statistics, if it
/// keeps them, at both ends of the window.
pub fn run_threads<H>(
    threads: usize,
    duration: Duration,
    make: &(dyn Fn(usize) -> Result<H> + Sync),
    op: &(dyn Fn(&mut H, u64) -> Result<()> + Sync),
    tick: &dyn Fn(),
    own: &(dyn Fn() -> Option<SyncStats> + Sync),
) -> Result<Measured> {
    let stop = AtomicBool::new(false);
    let start_line = Barrier::new(threads + 1);
    let started: OnceLock<Instant> = OnceLock::new();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (stop, start_line, started) = (&stop, &start_line, &started);
                s.spawn(move || -> Result<ThreadRun> {
                    let mut run = ThreadRun {
                        in_window: 0,
                        late: 0,
                        aborted: 0,
                        retries: 0,
                        hist: histogram()?,
                    };
                    let made = make(t);
                    start_line.wait();
                    let mut h = match made {
                        Ok(h) => h,
                        Err(e) => {
                            stop.store(true, Relaxed);
                            return Err(e.context(format!("thread {t}: opening its handle")));
                        }
                    };
                    // Set before the start line was passed (see below).
                    let Some(&start) = started.get() else {
                        stop.store(true, Relaxed);
                        return Err(anyhow!("thread {t}: the run has no start time"));
                    };
                    let deadline = start + duration;
                    let mut seq = 0u64;
                    while !stop.load(Relaxed) {
                        let conflicts0 = conflicts_here();
                        let t0 = Instant::now();
                        if let Err(e) = op(&mut h, seq) {
                            stop.store(true, Relaxed);
                            return Err(e.context(format!("thread {t}, operation {seq}")));
                        }
                        let done = Instant::now();
                        seq += 1;
                        if done > deadline {
                            run.late += 1;
                            continue;
                        }
                        let ns = done.duration_since(t0).as_nanos().min(u64::MAX as u128) as u64;
                        run.hist.saturating_record(ns.max(1));
                        run.in_window += 1;
                        let conflicts = conflicts_here().saturating_sub(conflicts0);
                        run.retries += conflicts;
                        run.aborted += u64::from(conflicts > 0);
                    }
                    // The handle (and what it borrows) goes before the thread reports.
                    drop(h);
                    Ok(run)
                })
            })
            .collect();
        let first = SyncSample::take(own());
        let start = first.at;
        // The threads read the start once they pass the start line, which orders this store
        // before their loads.
        let _ = started.set(start);
        start_line.wait();
        while start.elapsed() < duration && !stop.load(Relaxed) {
            std::thread::sleep(
                (duration - start.elapsed().min(duration)).min(Duration::from_millis(100)),
            );
            tick();
        }
        let last = SyncSample::take(own());
        stop.store(true, Relaxed);
        let mut per_thread = Vec::with_capacity(threads);
        let mut completed = Vec::with_capacity(threads);
        let mut hist = histogram()?;
        let (mut late_ops, mut aborted, mut retries) = (0, 0, 0);
        let mut first_err = None;
        for h in handles {
            match h.join() {
                Ok(Ok(run)) => {
                    per_thread.push(run.in_window);
                    completed.push(run.in_window + run.late);
                    late_ops += run.late;
                    aborted += run.aborted;
                    retries += run.retries;
                    hist.add(&run.hist).map_err(|e| anyhow!("histogram: {e}"))?;
                }
                Ok(Err(e)) => {
                    first_err.get_or_insert(e);
                }
                Err(_) => {
                    first_err.get_or_insert(anyhow!("a benchmark thread panicked"));
                }
            }
        }
        let drain = start.elapsed().saturating_sub(duration);
        if let Some(e) = first_err {
            return Err(e);
        }
        Ok(Measured {
            ops: per_thread.iter().sum(),
            per_thread,
            completed,
            late_ops,
            window: duration,
            drain,
            hist,
            aborted,
            retries,
            sync: SyncFigures::between(&first, &last),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::systems::retry;

    /// Only operations finished inside the window count: an operation that sleeps past the
    /// deadline is late (completed, so a self-check expects it, but neither in `ops` nor in
    /// the histogram), the drain after the window is reported, and a transaction retried after
    /// a conflict counts as one abort (the late one's conflict not at all).
    #[test]
    fn late_operations_and_their_aborts_do_not_count() -> Result<()> {
        let window = Duration::from_millis(300);
        let make = |_t: usize| -> Result<()> { Ok(()) };
        let op = |_h: &mut (), seq: u64| -> Result<()> {
            let mut tries = 0;
            // Conflicts once, then commits.
            retry(|| {
                tries += 1;
                Ok((tries > 1).then_some(()))
            })?;
            if seq == 1 {
                // Starts inside the window and ends after it.
                std::thread::sleep(window + Duration::from_millis(200));
            }
            Ok(())
        };
        let m = run_threads(1, window, &make, &op, &|| {}, &|| None)?;
        assert_eq!(m.ops, 1, "{m:?}");
        assert_eq!(m.per_thread, [1]);
        assert_eq!(m.completed, [2]);
        assert_eq!(m.late_ops, 1);
        assert_eq!(m.hist.len(), 1);
        assert_eq!((m.aborted, m.retries), (1, 1));
        assert!(m.drain > Duration::ZERO, "{m:?}");
        assert_eq!(m.window, window);
        Ok(())
    }

    /// The first error of any thread ends the run and is returned.
    #[test]
    fn an_error_stops_the_run() {
        let make = |_t: usize| -> Result<()> { Ok(()) };
        let op = |_h: &mut (), seq: u64| -> Result<()> {
            if seq == 3 {
                anyhow::bail!("injected");
            }
            Ok(())
        };
        let r = run_threads(2, Duration::from_secs(60), &make, &op, &|| {}, &|| None);
        let Err(e) = r else {
            panic!("the run must fail");
        };
        assert!(format!("{e:#}").contains("injected"), "{e:#}");
    }
}
