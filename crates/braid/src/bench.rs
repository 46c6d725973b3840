//! `braid bench`: run a workload under each scheme, thread count and repeat, count commits
//! acknowledged as durable, and report medians with the ratio to no logging from the same run.
//!
//! Workers pipeline their commits: a commit returns a ticket at once (early lock release) and
//! the worker goes on with the next transaction, retiring tickets as they become durable (the
//! Taurus paper's asynchronous commit). A transaction counts, and its latency (commit start to
//! acknowledgement) is recorded, only when its ticket resolves; transactions still in flight when
//! the time is up are waited for and counted, and the elapsed time includes that wait.
//!
//! Each run also records the scheme's own counters ([`Db::scheme_counters`]); for gsn the
//! results carry straggler signals per 10,000 commits of passive group commit (Wang & Johnson
//! Sec. 4.1), counted by that run's scheme instance alone.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use braid_engine::{Db, LogKind};
use braid_workloads::Workload;
use clap::Args;
use hdrhistogram::Histogram;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use serde::Serialize;

use crate::common::{self, DeviceKind, EngineArgs, NONE, OltpArgs, WorkloadKind, YcsbArgs};

#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Workload to run.
    #[arg(long, value_enum, default_value_t = WorkloadKind::Ycsb)]
    pub workload: WorkloadKind,
    /// Schemes to compare, comma-separated (default: every scheme).
    #[arg(long)]
    pub scheme: Option<String>,
    /// Logging kinds, comma-separated: data, command.
    #[arg(long, default_value = "data")]
    pub logging: String,
    /// Log devices, comma-separated: pmem, file.
    #[arg(long, default_value = "pmem")]
    pub device: String,
    /// Parent directory for the databases (default: a temporary directory in /dev/shm, or
    /// /var/tmp for the file device).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Worker thread counts, comma-separated.
    #[arg(long, default_value = "1,2")]
    pub threads: String,
    /// Log stream counts, comma-separated (default: the thread count; serial always uses one).
    #[arg(long)]
    pub logs: Option<String>,
    /// Emulated NVM write delays to sweep, ns per persisted cache line, comma-separated
    /// (overrides --nvm-delay-ns).
    #[arg(long)]
    pub nvm_delays: Option<String>,
    /// Seconds per run (default 5, shortened when the sweep is large so that measuring takes
    /// at most about a minute; loading the tables comes on top).
    #[arg(long)]
    pub seconds: Option<f64>,
    /// Runs per configuration (the table shows the median).
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
    /// Write results as JSON here (the default is untracked; published results are written to
    /// `results/` only when asked for).
    #[arg(long, default_value = "target/braid/bench.json")]
    pub json: PathBuf,
    /// Write results as CSV here (default: the JSON path with a .csv extension).
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Draw plots of the sweep (SVG and PNG) into this directory.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Keep each run's database directory (for `braid recover` / `braid inspect`).
    #[arg(long)]
    pub keep: bool,
    /// Most commits a worker keeps in flight before it waits for the oldest.
    #[arg(long, default_value_t = 256)]
    pub inflight: usize,
    /// Seed of the workload generators.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    #[command(flatten)]
    pub ycsb: YcsbArgs,
    #[command(flatten)]
    pub oltp: OltpArgs,
    #[command(flatten)]
    pub engine: EngineArgs,
}

impl BenchArgs {
    /// Seconds per run.
    /// Where the CSV goes.
    pub fn csv_path(&self) -> PathBuf {
        self.csv
            .clone()
            .unwrap_or_else(|| self.json.with_extension("csv"))
    }

    pub fn seconds(&self) -> f64 {
        self.seconds.unwrap_or(5.0)
    }
}

/// What one worker thread of a run measured: commits, aborts and commit latencies.
type WorkerResult = Result<(u64, u64, Histogram<u64>), String>;

/// One run's measurements.
#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    pub txn_per_s: f64,
    pub commits: u64,
    pub aborts: u64,
    pub seconds: f64,
    pub p50_us: f64,
    pub p99_us: f64,
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
    pub scheme_counters: std::collections::BTreeMap<String, u64>,
    /// gsn: straggler signals per 10,000 update commits in this run.
    pub signals_per_10k_commits: Option<f64>,
    /// What the run's log only emulated ([`Db::emulation`]); `None` if every acknowledged
    /// commit would have survived a power cut on this machine.
    pub emulation: Option<String>,
}

/// One configuration: its repeats and their medians.
#[derive(Debug, Clone, Serialize)]
pub struct ConfigResult {
    pub workload: String,
    pub scheme: String,
    pub logging: String,
    pub device: String,
    pub threads: usize,
    pub logs: usize,
    pub txn_per_s: f64,
    pub txn_per_s_min: f64,
    pub txn_per_s_max: f64,
    pub ratio_to_none: Option<f64>,
    pub nvm_delay_ns: u64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub aborts_per_s: f64,
    pub log_bytes_per_s: f64,
    pub bytes_per_row: f64,
    /// gsn: median over the runs of straggler signals per 10,000 commits.
    pub signals_per_10k_commits: Option<f64>,
    /// What the log only emulated (see [`RunResult::emulation`]); `None`: power-safe.
    pub emulation: Option<String>,
    /// The scheme's own options, as the scheme reports them.
    pub scheme_options: std::collections::BTreeMap<String, String>,
    pub runs: Vec<RunResult>,
    pub params: serde_json::Value,
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Run one configuration once.
#[allow(clippy::too_many_arguments)]
pub fn run_once(
    args: &BenchArgs,
    workload: &Arc<dyn Workload>,
    point: &Point,
    repeat: usize,
    mp: &MultiProgress,
) -> Result<(RunResult, f64), String> {
    let Point {
        scheme,
        logging,
        device,
        threads,
        logs,
        nvm_delay_ns,
    } = *point;
    let label = format!(
        "{}-{}-{}-{}t",
        scheme,
        logging.name(),
        device.name(),
        threads
    );
    let dir = common::run_dir(args.dir.as_ref(), device, &label)
        .map_err(|e| format!("creating a run directory: {e}"))?;
    let mut engine = args.engine.clone();
    engine.nvm_delay_ns = nvm_delay_ns;
    let mut opts = engine.options(engine.spec(scheme)?, logging, device, logs, threads);
    opts.app = common::app_blob(&**workload);
    let load_bar = mp.add(ProgressBar::new(workload.initial_rows()));
    load_bar.set_style(
        ProgressStyle::with_template("  loading {msg:28} [{bar:30}] {pos}/{len} rows")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    load_bar.set_message(label.clone());
    let lb = load_bar.clone();
    let progress = move |n: u64| lb.inc(n);
    let (db, _report) = Db::open(
        &dir.path().join("db"),
        opts,
        workload.catalog(),
        workload.procedures(),
        &|l| workload.load(l, &progress),
    )
    .map_err(|e| format!("opening the database for {label}: {e}"))?;
    load_bar.finish_and_clear();
    mp.remove(&load_bar);
    let bytes_per_row = {
        let m = db.memory_report();
        m.image_bytes_per_row + m.engine_bytes_per_row + m.scheme_bytes_per_row
    };

    let run_bar = mp.add(ProgressBar::new((args.seconds() * 10.0) as u64));
    run_bar.set_style(
        ProgressStyle::with_template("  running {msg:28} [{bar:30}] {elapsed} {prefix}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    run_bar.set_message(format!("{label} #{}", repeat + 1));
    let stop = Arc::new(AtomicBool::new(false));
    let commits = Arc::new(AtomicU64::new(0));
    let log_before = db.log_stats();
    let start = Instant::now();
    let deadline = Duration::from_secs_f64(args.seconds());
    let results: Vec<WorkerResult> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let db = db.clone();
                let stop = stop.clone();
                let commits = commits.clone();
                let mut client = workload.client(i, args.seed.wrapping_add(repeat as u64 * 1000));
                let inflight = args.inflight.max(1);
                s.spawn(move || -> Result<(u64, u64, Histogram<u64>), String> {
                    let mut worker = db.worker().map_err(|e| e.to_string())?;
                    let mut hist = Histogram::<u64>::new(3).map_err(|e| e.to_string())?;
                    let mut pending: VecDeque<(braid_engine::Ticket, Instant)> =
                        VecDeque::with_capacity(inflight);
                    let (mut done, mut aborts) = (0u64, 0u64);
                    let retire = |pending: &mut VecDeque<(braid_engine::Ticket, Instant)>,
                                  hist: &mut Histogram<u64>,
                                  done: &mut u64,
                                  block: bool|
                     -> Result<(), String> {
                        while let Some((t, at)) = pending.front() {
                            let durable = if block {
                                t.wait().map(|_| true)
                            } else {
                                t.is_durable()
                            };
                            match durable {
                                Ok(true) => {
                                    let _ = hist.record(at.elapsed().as_nanos() as u64);
                                    *done += 1;
                                    pending.pop_front();
                                }
                                Ok(false) => break,
                                Err(e) => return Err(format!("commit failed: {e}")),
                            }
                        }
                        Ok(())
                    };
                    let mut n = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let at = Instant::now();
                        match client.run_one(&mut worker) {
                            Ok(t) => pending.push_back((t, at)),
                            Err(e) if e.is_retryable() => aborts += 1,
                            Err(braid_engine::TxError::UserAbort(_)) => aborts += 1,
                            Err(e) => return Err(format!("transaction failed: {e}")),
                        }
                        retire(&mut pending, &mut hist, &mut done, false)?;
                        if pending.len() >= inflight
                            && let Some((t, at)) = pending.pop_front()
                        {
                            t.wait().map_err(|e| format!("commit failed: {e}"))?;
                            let _ = hist.record(at.elapsed().as_nanos() as u64);
                            done += 1;
                        }
                        n += 1;
                        if n.is_multiple_of(1024) {
                            commits.store(done, Ordering::Relaxed);
                        }
                    }
                    retire(&mut pending, &mut hist, &mut done, true)?;
                    Ok((done, aborts, hist))
                })
            })
            .collect();
        while start.elapsed() < deadline {
            std::thread::sleep(Duration::from_millis(100));
            run_bar.set_position((start.elapsed().as_secs_f64() * 10.0) as u64);
        }
        stop.store(true, Ordering::Relaxed);
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("worker panicked".into())))
            .collect()
    });
    let elapsed = start.elapsed().as_secs_f64();
    run_bar.finish_and_clear();
    mp.remove(&run_bar);
    let mut hist = Histogram::<u64>::new(3).map_err(|e| e.to_string())?;
    let (mut done, mut aborts) = (0, 0);
    for r in results {
        let (d, a, h) = r?;
        done += d;
        aborts += a;
        hist.add(&h).map_err(|e| e.to_string())?;
    }
    let log = db.log_stats();
    let ck = db.checkpoint_stats();
    if let Some(e) = &ck.last_error {
        return Err(format!("{label}: a checkpoint failed: {e}"));
    }
    let max_log_bytes = ck.max_log_bytes.max(db.log_bytes());
    // Every worker is gone (they live in the scoped threads), so the counts are complete.
    let scheme_counters: std::collections::BTreeMap<String, u64> = db
        .scheme_counters()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    let signals_per_10k_commits = signals_per_10k(&scheme_counters);
    // The workload's consistency conditions (TPC-C Clause 3.3.2, ...) must hold after every run.
    workload
        .check(&db)
        .map_err(|e| format!("{label}: consistency check failed after the run: {e}"))?;
    let emulation = db.emulation();
    db.close().map_err(|e| format!("closing: {e}"))?;
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
            p99_us: hist.value_at_quantile(0.99) as f64 / 1000.0,
            log_bytes: log.bytes - log_before.bytes,
            log_flushes: log.flushes - log_before.flushes,
            checkpoints: ck.taken,
            max_log_bytes,
            dir: kept,
            scheme_counters,
            signals_per_10k_commits,
            emulation,
        },
        bytes_per_row,
    ))
}

/// Straggler signals per 10,000 commits from a scheme's counters, if it counts signals.
pub fn signals_per_10k(c: &std::collections::BTreeMap<String, u64>) -> Option<f64> {
    let signals = *c.get("signals")?;
    let commits = *c.get("commits")?;
    Some(if commits == 0 {
        0.0
    } else {
        signals as f64 * 10_000.0 / commits as f64
    })
}

/// One configuration of a sweep.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// A registered scheme's name.
    pub scheme: &'static str,
    pub logging: LogKind,
    pub device: DeviceKind,
    pub threads: usize,
    pub logs: usize,
    pub nvm_delay_ns: u64,
}

/// Expand the command line into the configurations to run, `none` first for each thread
/// count (its ratio base), logging schemes after.
pub fn sweep_points(args: &BenchArgs) -> Result<Vec<Point>, String> {
    let schemes = common::scheme_names(args.scheme.as_deref())?;
    let loggings: Vec<LogKind> = common::parse_list(&args.logging)?;
    let threads: Vec<usize> = common::parse_list(&args.threads)?;
    if threads.is_empty() || threads.contains(&0) {
        return Err("--threads needs positive thread counts".into());
    }
    let devices: Vec<DeviceKind> = args
        .device
        .split(',')
        .filter(|d| !d.is_empty())
        .map(|d| {
            <DeviceKind as clap::ValueEnum>::from_str(d.trim(), true)
                .map_err(|e| format!("--device: {e}"))
        })
        .collect::<Result<_, _>>()?;
    let delays: Vec<u64> = match &args.nvm_delays {
        Some(d) => common::parse_list(d)?,
        None => vec![args.engine.nvm_delay_ns],
    };
    let logs: Option<Vec<usize>> = args.logs.as_deref().map(common::parse_list).transpose()?;
    let mut out = Vec::new();
    for &t in &threads {
        if schemes.contains(&NONE) {
            out.push(Point {
                scheme: NONE,
                logging: LogKind::Data,
                device: DeviceKind::Null,
                threads: t,
                logs: 0,
                nvm_delay_ns: 0,
            });
        }
        for &device in &devices {
            for &delay in &delays {
                for &scheme in schemes.iter().filter(|s| **s != NONE) {
                    let spec = args.engine.spec(scheme)?;
                    for &logging in &loggings {
                        if logging == LogKind::Command && spec.command_logging_refusal().is_some() {
                            continue;
                        }
                        let counts = logs.clone().unwrap_or_else(|| vec![t]);
                        let mut seen = Vec::new();
                        for l in counts {
                            let l = spec.streams_for(l);
                            if seen.contains(&l) {
                                continue;
                            }
                            seen.push(l);
                            out.push(Point {
                                scheme,
                                logging,
                                device,
                                threads: t,
                                logs: l,
                                nvm_delay_ns: delay,
                            });
                        }
                    }
                }
            }
        }
    }
    Ok(out)
}

pub fn run(mut args: BenchArgs) -> Result<(), String> {
    let workload = common::workload(args.workload, &args.ycsb, &args.oltp, false)?;
    let points = sweep_points(&args)?;
    if args.seconds.is_none() {
        let runs = (points.len() * args.repeat.max(1)) as f64;
        args.seconds = Some((60.0 / runs).clamp(1.0, 5.0));
    }
    let mp = MultiProgress::new();
    let total = (points.len() * args.repeat.max(1)) as u64;
    let overall = mp.add(ProgressBar::new(total));
    overall.set_style(
        ProgressStyle::with_template("bench {wide_msg} [{bar:30}] {pos}/{len} runs, {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    overall.set_message(workload.name().to_string());
    let results = measure(&args, &workload, &points, &mp, &overall)?;
    overall.finish_and_clear();
    print_table(&results);
    save(&args, &results)?;
    if let Some(dir) = &args.plot {
        let files = crate::plot::bench_plots(dir, &results)?;
        for f in files {
            println!("plot written to {}", f.display());
        }
    }
    Ok(())
}

/// Run every point `--repeat` times and summarise. The repeats go round the points (every
/// point once, then every point again): a machine whose speed drifts during the sweep then
/// shifts every configuration alike, and the ratios to `none` stay fair.
pub fn measure(
    args: &BenchArgs,
    workload: &Arc<dyn Workload>,
    points: &[Point],
    mp: &MultiProgress,
    overall: &ProgressBar,
) -> Result<Vec<ConfigResult>, String> {
    let mut all: Vec<(Vec<RunResult>, f64)> = points.iter().map(|_| (Vec::new(), 0.0)).collect();
    for r in 0..args.repeat.max(1) {
        for (p, (runs, bpr)) in points.iter().zip(all.iter_mut()) {
            let (res, b) = run_once(args, workload, p, r, mp)?;
            *bpr = b;
            runs.push(res);
            overall.inc(1);
        }
    }
    let mut results: Vec<ConfigResult> = Vec::new();
    for (p, (runs, bpr)) in points.iter().zip(all) {
        let mut tps: Vec<f64> = runs.iter().map(|r| r.txn_per_s).collect();
        let min = tps.iter().cloned().fold(f64::INFINITY, f64::min);
        let max = tps.iter().cloned().fold(0.0, f64::max);
        let med = median(&mut tps);
        let p50 = median(&mut runs.iter().map(|r| r.p50_us).collect::<Vec<_>>());
        let p99 = median(&mut runs.iter().map(|r| r.p99_us).collect::<Vec<_>>());
        let aborts = median(
            &mut runs
                .iter()
                .map(|r| r.aborts as f64 / r.seconds)
                .collect::<Vec<_>>(),
        );
        let logbps = median(
            &mut runs
                .iter()
                .map(|r| r.log_bytes as f64 / r.seconds)
                .collect::<Vec<_>>(),
        );
        let mut sig: Vec<f64> = runs
            .iter()
            .filter_map(|r| r.signals_per_10k_commits)
            .collect();
        let signals = (!sig.is_empty()).then(|| median(&mut sig));
        let ratio = results
            .iter()
            .find(|c| c.scheme == "none" && c.threads == p.threads)
            .map(|none| {
                if none.txn_per_s > 0.0 {
                    med / none.txn_per_s
                } else {
                    0.0
                }
            });
        results.push(ConfigResult {
            workload: workload.name().to_string(),
            scheme: p.scheme.to_string(),
            logging: p.logging.name().to_string(),
            device: p.device.name().to_string(),
            threads: p.threads,
            logs: p.logs,
            txn_per_s: med,
            txn_per_s_min: min,
            txn_per_s_max: max,
            ratio_to_none: ratio,
            nvm_delay_ns: p.nvm_delay_ns,
            p50_us: p50,
            p99_us: p99,
            aborts_per_s: aborts,
            log_bytes_per_s: logbps,
            bytes_per_row: bpr,
            signals_per_10k_commits: signals,
            emulation: runs.first().and_then(|r| r.emulation.clone()),
            scheme_options: args
                .engine
                .spec(p.scheme)?
                .options()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            runs,
            params: serde_json::json!({
                "workload": workload.params(),
                "seconds": args.seconds(),
                "repeat": args.repeat,
                "inflight": args.inflight,
                "seed": args.seed,
                "cc": args.engine.cc.name(),
                "group_delay_us": args.engine.group_delay_us,
                "group_kb": args.engine.group_kb,
                "ring_mb": args.engine.ring_mb,
                "domain": format!("{:?}", args.engine.domain).to_lowercase(),
                "pmem_write": format!("{:?}", args.engine.pmem_write).to_lowercase(),
                "destage": !args.engine.no_destage,
                "segment_mb": args.engine.segment_mb,
                "pmem_media": format!("{:?}", args.engine.pmem_media).to_lowercase(),
                "direct": args.engine.direct,
                "sync_commit": args.engine.sync_commit,
                "lv_compress": format!("{:?}", args.engine.lv_compress).to_lowercase(),
                "taurus_recovery": format!("{:?}", args.engine.taurus_recovery).to_lowercase(),
            }),
        });
    }
    Ok(results)
}

/// Write the JSON and CSV files, with the machine and the git revision.
pub fn save(args: &BenchArgs, results: &[ConfigResult]) -> Result<(), String> {
    save_quiet(args, results)?;
    println!(
        "results written to {} and {}",
        args.json.display(),
        args.csv_path().display()
    );
    Ok(())
}

/// [`save`] without telling.
pub fn save_quiet(args: &BenchArgs, results: &[ConfigResult]) -> Result<(), String> {
    crate::output::write_json(
        &args.json,
        &serde_json::json!({
            "command": std::env::args().collect::<Vec<_>>().join(" "),
            "machine": crate::output::machine(),
            "results": results,
        }),
    )?;
    let mut csv = String::from(
        "workload,scheme,logging,device,threads,logs,nvm_delay_ns,txn_per_s,txn_per_s_min,txn_per_s_max,ratio_to_none,p50_us,p99_us,aborts_per_s,log_bytes_per_s,bytes_per_row,signals_per_10k_commits,git,cores,cpu,emulation,params\n",
    );
    let m = crate::output::machine();
    for r in results {
        csv.push_str(&format!(
            "{},{},{},{},{},{},{},{:.1},{:.1},{:.1},{},{:.2},{:.2},{:.1},{:.1},{:.1},{},{},{},\"{}\",\"{}\",\"{}\"\n",
            r.workload,
            r.scheme,
            r.logging,
            r.device,
            r.threads,
            r.logs,
            r.nvm_delay_ns,
            r.txn_per_s,
            r.txn_per_s_min,
            r.txn_per_s_max,
            r.ratio_to_none.map(|x| format!("{x:.3}")).unwrap_or_default(),
            r.p50_us,
            r.p99_us,
            r.aborts_per_s,
            r.log_bytes_per_s,
            r.bytes_per_row,
            r.signals_per_10k_commits
                .map(|x| format!("{x:.2}"))
                .unwrap_or_default(),
            m["git"].as_str().unwrap_or(""),
            m["cores"],
            m["cpu"].as_str().unwrap_or("").replace('"', "'"),
            r.emulation.clone().unwrap_or_default().replace('"', "'"),
            r.params.to_string().replace('"', "'"),
        ));
    }
    crate::output::write_text(&args.csv_path(), &csv)?;
    Ok(())
}

fn print_table(results: &[ConfigResult]) {
    println!(
        "{:<9} {:<7} {:<8} {:<8} {:>3} {:>4} {:>6} {:>12} {:>21} {:>7} {:>9} {:>9} {:>10} {:>9}",
        "workload",
        "scheme",
        "logging",
        "device",
        "thr",
        "logs",
        "nvm ns",
        "txn/s",
        "(min-max)",
        "x none",
        "p50 us",
        "p99 us",
        "aborts/s",
        "log MB/s"
    );
    // Devices that only emulate durable storage are marked, and what they emulate is said
    // below the table (the no-logging baseline needs no mark).
    let mut notes: Vec<String> = Vec::new();
    for r in results {
        let mut device = r.device.clone();
        if let Some(e) = r.emulation.as_ref().filter(|_| r.scheme != NONE) {
            let i = match notes.iter().position(|n| n == e) {
                Some(i) => i,
                None => {
                    notes.push(e.clone());
                    notes.len() - 1
                }
            };
            device.push_str(&"*".repeat(i + 1));
        }
        println!(
            "{:<9} {:<7} {:<8} {:<8} {:>3} {:>4} {:>6} {:>12.0} {:>21} {:>7} {:>9.1} {:>9.1} {:>10.0} {:>9.1}",
            r.workload,
            r.scheme,
            r.logging,
            device,
            r.threads,
            r.logs,
            r.nvm_delay_ns,
            r.txn_per_s,
            format!("({:.0}-{:.0})", r.txn_per_s_min, r.txn_per_s_max),
            r.ratio_to_none
                .map(|x| format!("{x:.2}"))
                .unwrap_or_else(|| "-".into()),
            r.p50_us,
            r.p99_us,
            r.aborts_per_s,
            r.log_bytes_per_s / 1e6,
        );
    }
    for (i, n) in notes.iter().enumerate() {
        println!("{} {n}", "*".repeat(i + 1));
    }
    for r in results {
        if let Some(s) = r.signals_per_10k_commits {
            println!(
                "{} {} {} {}t {} logs: {s:.2} straggler signals per 10,000 commits",
                r.workload, r.scheme, r.device, r.threads, r.logs
            );
        }
    }
}
