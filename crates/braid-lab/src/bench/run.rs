//! One measured run of one configuration: open (load) the database, let the workers commit
//! for the given time with their tickets pipelined, then count, check and close. With
//! `--pregenerate N` each worker's client draws its next N transactions before the clock
//! starts ([`Client::pregenerate`]) and takes them in turn in the timed loop.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use braid_engine::{Db, TxError, log::Ticket};
use braid_workloads::{Client, Workload};
use hdrhistogram::Histogram;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use serde::Serialize;

use super::{BenchArgs, Point};
use crate::common;

/// What one worker thread of a run measured.
struct Worked {
    /// Commits acknowledged.
    done: u64,
    aborts: u64,
    /// Commit latencies.
    hist: Histogram<u64>,
    /// Time waited with a full pipeline.
    full: Duration,
    /// Its own CPU time and run-queue wait over its work (`None` off Linux).
    cpu: Option<super::cpu::ThreadTimes>,
    /// Time spent in attempts that aborted.
    aborted: Duration,
    /// Transactions attempted (drawn): commits and aborts.
    attempts: u64,
}

/// A worker's measurements, or why it failed.
type WorkerResult = anyhow::Result<Worked>;

/// One run's measurements.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunResult {
    pub txn_per_s: f64,
    pub commits: u64,
    pub aborts: u64,
    pub seconds: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub log_bytes: u64,
    pub log_flushes: u64,
    /// Checkpoints taken during the run.
    pub checkpoints: u64,
    /// Most log bytes held on the log devices during the run (sampled by the checkpoint
    /// thread; the held bytes at the end otherwise).
    pub max_log_bytes: u64,
    pub dir: Option<String>,
    /// The scheme's counters at the end of the run (gsn: commits, signals, daemon_rounds,
    /// clock_records); empty for schemes without any.
    pub scheme_counters: BTreeMap<String, u64>,
    /// gsn: straggler signals per 10,000 update commits in this run.
    pub signals_per_10k_commits: Option<f64>,
    /// gsn with Remote Flush Avoidance: the share of commits that needed a remote flush
    /// (waited until every log was durable up to their GSN) in this run.
    pub remote_flush_share: Option<f64>,
    /// gsn: straggler signals that helped (the handler published and the daemon then advanced)
    /// per 10,000 update commits in this run.
    pub signals_helped_per_10k_commits: Option<f64>,
    /// The scheme's workers' atomic read-modify-writes on words other workers also write, per
    /// commit in this run ([`braid_wal::scheme::Proxies`]); `None` if the scheme does not count.
    pub shared_rmw_per_commit: Option<f64>,
    /// Cache lines written that other workers also write, per commit in this run.
    pub shared_lines_per_commit: Option<f64>,
    /// Of the shared read-modify-writes, those on words every worker writes (a central
    /// tail, a global counter), per commit in this run.
    pub global_rmw_per_commit: Option<f64>,
    /// Copies (streams, logs) the scheme's shared words come in.
    pub proxy_lanes: Option<u64>,
    /// What the run's log only emulated ([`Db::emulation`]); `None` if every acknowledged
    /// commit would have survived a power cut on this machine.
    pub emulation: Option<String>,
    /// Share of the workers' time spent waiting for an acknowledgement with `--inflight`
    /// commits pending: near 1, the client's bound, not the scheme, set the throughput.
    pub pipeline_full_share: f64,
    /// Mean log insertion latency per transaction, ns: the time a transaction spends putting
    /// its records into the log (sampled; [`braid_engine::LogInsertStats`]), not its wait for
    /// durability.
    pub log_insert_ns: f64,
    /// Mean latency of one log insertion, ns: the same time per record inserted (each update
    /// record and each commit record; [`braid_engine::LogInsertStats::records`]), the unit of
    /// NV-Logging's Fig. 11.
    pub record_insert_ns: f64,
    /// The disk's commit floor measured in the run's directory right before the run (file
    /// devices on a disk only; see [`super::floor`]).
    pub disk_floor: Option<super::floor::Floor>,
    /// Every thread's CPU time over the run by role (workers, the log's flushers and daemons,
    /// ...; see [`super::cpu`]); `None` where `/proc` cannot be read.
    pub cpu: Option<super::cpu::CpuTime>,
    /// The same per committed transaction, ns by role.
    pub cpu_ns_per_txn: BTreeMap<String, f64>,
    /// Mean time per sampled committed transaction in 2PL locks (taking and releasing), ns
    /// ([`braid_engine::AccessStats`]; sampled with [`Self::log_insert_ns`]).
    pub lock_ns: f64,
    /// Mean time per sampled committed transaction in the scheme's access hooks, ns (Taurus:
    /// the LSN-vector merges of rows kept outside a slot; rows with a slot are merged at
    /// commit, see [`Self::lv_ns`]).
    pub access_hook_ns: f64,
    /// Taurus: mean LV work per sampled committed transaction, ns, timed by the scheme (its
    /// access hooks, and at commit merging the rows' LVs into the transaction's and stamping
    /// its record, raising the rows' LVs, comparing with the committed vector; the scheme
    /// counters `lv_samples` and `lv_ns`); 0 for the other schemes.
    pub lv_ns: f64,
    /// Taurus: the part of [`Self::lv_ns`] in the scheme's `commit` (inside
    /// [`Self::log_insert_ns`]), ns.
    pub lv_commit_ns: f64,
    /// Taurus: share of the timed transactions dropped because a timed stretch took over
    /// 50 us (the worker descheduled, or waiting for a lock-table shard whose holder was;
    /// counter `lv_dropped`).
    pub lv_dropped_share: f64,
    /// Taurus: the mean LV work per timed transaction with the dropped ones counted too, ns.
    pub lv_all_ns: f64,
    /// The workers' time in attempts that aborted, per committed transaction, ns.
    pub abort_ns_per_txn: f64,
    /// Most transactions one worker drew in the run (its commits and aborts): above
    /// `--pregenerate`, that worker took its transactions drawn before the run more than once.
    pub most_drawn_per_worker: u64,
}

/// A progress bar with `template`, added to `mp`.
fn bar(mp: &MultiProgress, len: u64, template: &str, msg: String) -> ProgressBar {
    let b = mp.add(ProgressBar::new(len));
    b.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    b.set_message(msg);
    b
}

/// Pipelined tickets of one worker and what they measured once durable.
struct Pipeline {
    pending: VecDeque<(Ticket, Instant)>,
    hist: Histogram<u64>,
    done: u64,
    /// Time spent waiting in [`Pipeline::bound`].
    full: Duration,
}

impl Pipeline {
    /// Count the tickets at the front that are durable; with `block`, wait for all of them.
    fn retire(&mut self, block: bool) -> anyhow::Result<()> {
        while let Some((t, at)) = self.pending.front() {
            let durable = if block {
                t.wait().map(|_| true)
            } else {
                t.is_durable()
            };
            match durable.context("commit failed")? {
                true => {
                    let _ = self.hist.record(at.elapsed().as_nanos() as u64);
                    self.done += 1;
                    self.pending.pop_front();
                }
                false => break,
            }
        }
        Ok(())
    }

    /// Wait for the oldest ticket once `inflight` are pending.
    fn bound(&mut self, inflight: usize) -> anyhow::Result<()> {
        if self.pending.len() >= inflight
            && let Some((t, at)) = self.pending.pop_front()
        {
            let waited = Instant::now();
            t.wait().context("commit failed")?;
            self.full += waited.elapsed();
            let _ = self.hist.record(at.elapsed().as_nanos() as u64);
            self.done += 1;
        }
        Ok(())
    }
}

/// One worker: run transactions until `stop` or until `quota` committed, keeping at most
/// `inflight` commits in flight (each one durable before the next with `sync_commit`).
#[allow(clippy::too_many_arguments)]
fn work(
    db: &Db,
    mut client: Box<dyn Client>,
    sync_commit: bool,
    inflight: usize,
    quota: u64,
    open_loop: Option<(f64, u64)>,
    stop: &AtomicBool,
    commits: &AtomicU64,
) -> WorkerResult {
    // Open loop: this worker's rate and seed (see `super::arrivals`).
    let mut arrivals = open_loop.map(|(rate, seed)| super::arrivals::Arrivals::new(rate, seed));
    // The scheduled arrival of the transaction under way (kept across its retries).
    let mut arrival: Option<Instant> = None;
    let cpu_start = super::cpu::this_thread();
    let mut worker = db.worker()?;
    let mut p = Pipeline {
        pending: VecDeque::with_capacity(inflight),
        hist: Histogram::<u64>::new(3)?,
        done: 0,
        full: Duration::ZERO,
    };
    let mut aborts = 0u64;
    let mut aborted = Duration::ZERO;
    let mut n = 0u64;
    let mut committed = 0u64;
    while committed < quota && !stop.load(Ordering::Relaxed) {
        // Closed loop: the transaction arrives as it starts (one clock read for both).
        let (at, started) = match &mut arrivals {
            Some(a) => (
                *arrival.get_or_insert_with(|| a.wait_next()),
                Instant::now(),
            ),
            None => {
                let now = Instant::now();
                (now, now)
            }
        };
        match common::run_client(&mut *client, &mut worker, sync_commit) {
            Ok(t) => {
                p.pending.push_back((t, at));
                committed += 1;
                arrival = None;
            }
            Err(e) if e.is_retryable() => {
                aborts += 1;
                aborted += started.elapsed();
            }
            Err(TxError::UserAbort { .. }) => {
                aborts += 1;
                aborted += started.elapsed();
            }
            Err(e) => return Err(e).context("transaction failed"),
        }
        // Wait for the oldest first when the window is full: a check of a commit not yet
        // durable wakes the log's flusher, where its waiter would rather flush it itself
        // (leader-based group commit on file devices).
        p.bound(inflight)?;
        p.retire(false)?;
        n += 1;
        if n.is_multiple_of(1024) {
            commits.store(p.done, Ordering::Relaxed);
        }
    }
    p.retire(true)?;
    // The worker's scheme handle goes (and may hand its last records on) before the clock stops.
    drop(worker);
    let cpu = super::cpu::this_thread()
        .zip(cpu_start)
        .map(|(end, start)| end.since(start));
    Ok(Worked {
        done: p.done,
        aborts,
        hist: p.hist,
        full: p.full,
        cpu,
        aborted,
        attempts: n,
    })
}

/// The workers' clients, each drawing its next `ahead` transactions now (in parallel, before
/// the clock starts; none with 0) and announcing them to the engine's prefetch `batch` at a
/// time.
fn clients(
    workload: &Arc<dyn Workload>,
    threads: usize,
    seed: u64,
    ahead: usize,
    batch: usize,
) -> anyhow::Result<Vec<Box<dyn Client>>> {
    let client = |i: usize| -> anyhow::Result<Box<dyn Client>> {
        let mut c = workload.client(i, seed);
        c.pregenerate(ahead).with_context(|| {
            format!(
                "--pregenerate {ahead} with the {} workload",
                workload.name()
            )
        })?;
        c.prefetch_ahead(batch);
        Ok(c)
    };
    if ahead == 0 {
        return (0..threads).map(client).collect();
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads).map(|i| s.spawn(move || client(i))).collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("drawing transactions panicked")))
            })
            .collect()
    })
}

/// Run one configuration once; returns its measurements and the bytes per row it used.
pub fn run_once(
    args: &BenchArgs,
    workload: &Arc<dyn Workload>,
    point: &Point,
    repeat: usize,
    mp: &MultiProgress,
) -> anyhow::Result<(RunResult, f64)> {
    let Point {
        scheme,
        logging,
        device,
        threads,
        logs,
        nvm_delay_ns,
        ..
    } = *point;
    let label = format!(
        "{}-{}-{}-{}t",
        scheme,
        logging.name(),
        device.name(),
        threads
    );
    let dir =
        common::run_dir(args.dir.as_ref(), device, &label).context("creating a run directory")?;
    let mut engine = args.engine.clone();
    engine.nvm_delay_ns = nvm_delay_ns;
    let spec = engine.spec(scheme)?;
    let inflight = args.inflight(&spec);
    let mut opts = engine.options(spec, logging, device, logs, threads);
    opts.app = common::app_blob(&**workload);
    let load_bar = bar(
        mp,
        workload.initial_rows(),
        "  loading {msg:28} [{bar:30}] {pos}/{len} rows",
        label.clone(),
    );
    let lb = load_bar.clone();
    let progress = move |n: u64| lb.inc(n);
    let (db, _report) = workload
        .db(&dir.path().join("db"))
        .options(opts)
        .loader(|l| workload.load(l, &progress))
        .open()
        .with_context(|| format!("opening the database for {label}"))?;
    load_bar.finish_and_clear();
    mp.remove(&load_bar);
    let bytes_per_row = {
        let m = db.memory_report();
        m.image_bytes_per_row + m.engine_bytes_per_row + m.scheme_bytes_per_row
    };

    let disk_floor = match device {
        common::DeviceKind::File => super::floor::measure(dir.path())
            .with_context(|| format!("{label}: measuring the disk's commit floor"))?,
        _ => None,
    };
    let run_bar = bar(
        mp,
        (args.seconds() * 10.0) as u64,
        "  running {msg:28} [{bar:30}] {elapsed} {prefix}",
        format!("{label} #{}", repeat + 1),
    );
    let stop = AtomicBool::new(false);
    let commits = AtomicU64::new(0);
    let before = db.stats();
    let (log_before, inserts_before, access_before, proxies_before) =
        (before.log, before.log_insert, before.access, before.proxies);
    let counter = |c: &[(&'static str, u64)], name: &str| {
        c.iter().find(|(k, _)| *k == name).map_or(0, |(_, v)| *v)
    };
    let lv_before: Vec<u64> = LV_COUNTERS
        .iter()
        .map(|c| counter(&before.scheme_counters, c))
        .collect();
    let seed = args.seed.wrapping_add(repeat as u64 * 1000);
    let clients = clients(
        workload,
        threads,
        seed,
        args.pregenerate,
        args.prefetch_ahead,
    )?;
    let start = Instant::now();
    let deadline = Duration::from_secs_f64(args.seconds());
    let quota = args
        .commits
        .map_or(u64::MAX, |n| n.div_ceil(threads as u64));
    // With a quota the run ends when its workers do: look often, so the time is close.
    let tick = Duration::from_millis(if args.commits.is_some() { 2 } else { 100 });
    // Every thread's CPU time from here to the end of the workers (see `super::cpu`).
    let cpu_before = super::cpu::Snapshot::take();
    let results: Vec<WorkerResult> = std::thread::scope(|s| {
        let spawned: Vec<_> = clients
            .into_iter()
            .enumerate()
            .map(|(i, client)| {
                let (db, stop, commits) = (&db, &stop, &commits);
                let sync_commit = args.engine.sync_commit;
                let open_loop = args.offered_rate.map(|r| {
                    (
                        r / threads as f64,
                        args.seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                    )
                });
                // Named, so that its CPU time counts as a worker's (see `super::cpu`).
                std::thread::Builder::new()
                    .name(super::cpu::worker_name(i))
                    .spawn_scoped(s, move || {
                        work(
                            db,
                            client,
                            sync_commit,
                            inflight,
                            quota,
                            open_loop,
                            stop,
                            commits,
                        )
                    })
            })
            .collect();
        let failed = spawned.iter().any(|h| h.is_err());
        let handles: Vec<_> = spawned.into_iter().filter_map(Result::ok).collect();
        while !failed && start.elapsed() < deadline && !handles.iter().all(|h| h.is_finished()) {
            std::thread::sleep(tick);
            run_bar.set_position((start.elapsed().as_secs_f64() * 10.0) as u64);
        }
        stop.store(true, Ordering::Relaxed);
        let mut out: Vec<WorkerResult> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("worker panicked")))
            })
            .collect();
        if failed {
            out.push(Err(anyhow::anyhow!(
                "{label}: cannot start a worker thread"
            )));
        }
        out
    });
    let elapsed = start.elapsed().as_secs_f64();
    let cpu_after = super::cpu::Snapshot::take();
    run_bar.finish_and_clear();
    mp.remove(&run_bar);
    let mut hist = Histogram::<u64>::new(3)?;
    let (mut done, mut aborts, mut full, mut aborted) = (0, 0, Duration::ZERO, Duration::ZERO);
    let mut most_drawn_per_worker = 0;
    let mut worker_times = Vec::new();
    for r in results {
        let w = r?;
        done += w.done;
        aborts += w.aborts;
        full += w.full;
        aborted += w.aborted;
        most_drawn_per_worker = most_drawn_per_worker.max(w.attempts);
        hist.add(&w.hist)?;
        worker_times.extend(w.cpu);
    }
    // Every worker's own time, or none (a part would pass for the whole).
    let cpu = (worker_times.len() == threads)
        .then(|| super::cpu::CpuTime::between(&cpu_before, &cpu_after, &worker_times));
    // Every worker is gone (each was dropped in its scoped thread), so its insertion timings
    // and the scheme's counts are complete.
    let stats = db.stats();
    let log = stats.log;
    let (insert_samples, insert_ns) = (
        stats.log_insert.samples - inserts_before.samples,
        stats.log_insert.ns - inserts_before.ns,
    );
    let per_sample = |ns: u64| {
        if insert_samples == 0 {
            0.0
        } else {
            ns as f64 / insert_samples as f64
        }
    };
    let lock_ns = per_sample(stats.access.lock_ns - access_before.lock_ns);
    let access_hook_ns = per_sample(stats.access.hook_ns - access_before.hook_ns);
    let (insert_records, record_ns) = (
        stats.log_insert.records - inserts_before.records,
        stats.log_insert.record_ns - inserts_before.record_ns,
    );
    let [samples, lv_ns, lv_commit_ns, dropped, dropped_ns] = std::array::from_fn(|i| {
        counter(&stats.scheme_counters, LV_COUNTERS[i]).saturating_sub(lv_before[i]) as f64
    });
    let lv_all_ns = (lv_ns + dropped_ns) / (samples + dropped).max(1.0);
    let (lv_ns, lv_commit_ns) = (lv_ns / samples.max(1.0), lv_commit_ns / samples.max(1.0));
    let lv_dropped_share = dropped / (samples + dropped).max(1.0);
    let ck = stats.checkpoints;
    if let Some(e) = &ck.last_error {
        bail!("{label}: a checkpoint failed: {e}");
    }
    let max_log_bytes = ck.max_log_bytes.max(stats.log_bytes);
    let scheme_counters: BTreeMap<String, u64> = stats
        .scheme_counters
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    let signals_per_10k_commits = signals_per_10k(&scheme_counters);
    let signals_helped_per_10k_commits = per_10k(&scheme_counters, "signals_helped");
    let remote_flush_share = remote_flush_share(&scheme_counters);
    let proxies = stats
        .proxies
        .zip(proxies_before)
        .map(|(after, before)| after.since(&before));
    let per_commit = proxies.and_then(|p| p.per_commit());
    // The workload's consistency conditions (TPC-C Clause 3.3.2, ...) must hold after every run.
    workload
        .check(&db)
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("{label}: consistency check failed after the run"))?;
    let emulation = db.emulation();
    db.close().context("closing")?;
    drop(db);
    let kept = if args.keep {
        let p = dir.keep();
        Some(p.join("db").display().to_string())
    } else {
        None
    };
    Ok((
        RunResult {
            txn_per_s: done as f64 / elapsed,
            commits: done,
            aborts,
            seconds: elapsed,
            p50_us: hist.value_at_quantile(0.5) as f64 / 1000.0,
            p90_us: hist.value_at_quantile(0.9) as f64 / 1000.0,
            p99_us: hist.value_at_quantile(0.99) as f64 / 1000.0,
            p999_us: hist.value_at_quantile(0.999) as f64 / 1000.0,
            log_bytes: log.bytes - log_before.bytes,
            log_flushes: log.flushes - log_before.flushes,
            checkpoints: ck.taken,
            max_log_bytes,
            dir: kept,
            scheme_counters,
            signals_per_10k_commits,
            signals_helped_per_10k_commits,
            remote_flush_share,
            shared_rmw_per_commit: per_commit.map(|p| p.0),
            global_rmw_per_commit: proxies.and_then(|p| p.global_per_commit()),
            shared_lines_per_commit: per_commit.map(|p| p.1),
            proxy_lanes: proxies.map(|p| p.lanes),
            emulation,
            pipeline_full_share: full.as_secs_f64() / (elapsed * threads.max(1) as f64),
            log_insert_ns: per_sample(insert_ns),
            record_insert_ns: if insert_records == 0 {
                0.0
            } else {
                record_ns as f64 / insert_records as f64
            },
            disk_floor,
            cpu_ns_per_txn: cpu.as_ref().map(|c| c.per_txn_ns(done)).unwrap_or_default(),
            cpu,
            lock_ns,
            access_hook_ns,
            lv_ns,
            lv_commit_ns,
            lv_dropped_share,
            lv_all_ns,
            abort_ns_per_txn: aborted.as_nanos() as f64 / done.max(1) as f64,
            most_drawn_per_worker,
        },
        bytes_per_row,
    ))
}

/// Taurus's counters of its sampled LV work (see `braid_wal::scheme::TaurusConfig::simd`):
/// timed transactions, their LV ns, the part in commit, dropped samples.
const LV_COUNTERS: [&str; 5] = [
    "lv_samples",
    "lv_ns",
    "lv_commit_ns",
    "lv_dropped",
    "lv_dropped_ns",
];

/// Straggler signals per 10,000 commits from a scheme's counters, if it counts signals.
pub(super) fn signals_per_10k(c: &BTreeMap<String, u64>) -> Option<f64> {
    per_10k(c, "signals")
}

/// gsn with Remote Flush Avoidance: the share of its commits (read-only ones included) that
/// needed a remote flush, from its counters, if it counts them.
pub(super) fn remote_flush_share(c: &BTreeMap<String, u64>) -> Option<f64> {
    let remote = *c.get("rfa_remote_commits")?;
    let local = *c.get("rfa_local_commits")?;
    Some(remote as f64 / (remote + local).max(1) as f64)
}

/// Counter `name` per 10,000 commits from a scheme's counters, if it has both.
pub(super) fn per_10k(c: &BTreeMap<String, u64>, name: &str) -> Option<f64> {
    let signals = *c.get(name)?;
    let commits = *c.get("commits")?;
    Some(if commits == 0 {
        0.0
    } else {
        signals as f64 * 10_000.0 / commits as f64
    })
}
