//! Repeats and medians: run every configuration of a sweep `--repeat` times, round-robin, and
//! summarise each as one [`ConfigResult`] with its ratio to `none` at the same thread count.

use std::collections::BTreeMap;
use std::sync::Arc;

use braid_workloads::Workload;
use indicatif::{MultiProgress, ProgressBar};
use serde::Serialize;

use super::{BenchArgs, Point, RunResult, Variant, run_once};
use crate::common::DeviceKind;

/// One configuration: its repeats and their medians.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ConfigResult {
    pub workload: String,
    pub scheme: String,
    /// The [`Variant`] it was measured in (empty for a plain sweep).
    pub variant: String,
    pub logging: String,
    /// One record per transaction (`txn`) or per write (`update`), see `--records`.
    pub records: String,
    pub device: String,
    pub threads: usize,
    pub logs: usize,
    pub txn_per_s: f64,
    pub txn_per_s_min: f64,
    pub txn_per_s_max: f64,
    pub ratio_to_none: Option<f64>,
    pub nvm_delay_ns: u64,
    pub p50_us: f64,
    /// Median over the runs of the commit latency's 90th percentile, us.
    pub p90_us: f64,
    pub p99_us: f64,
    /// Median over the runs of the commit latency's 99.9th percentile, us.
    pub p999_us: f64,
    pub aborts_per_s: f64,
    pub log_bytes_per_s: f64,
    /// Median over the runs of log bytes per device flush: how much group commit gathers per
    /// write (for the nats device, per published message).
    pub bytes_per_flush: f64,
    pub bytes_per_row: f64,
    /// gsn: median over the runs of straggler signals per 10,000 commits.
    pub signals_per_10k_commits: Option<f64>,
    /// gsn: median over the runs of straggler signals that helped per 10,000 commits.
    pub signals_helped_per_10k_commits: Option<f64>,
    /// gsn with Remote Flush Avoidance: median over the runs of the share of commits that
    /// needed a remote flush.
    pub remote_flush_share: Option<f64>,
    /// Median over the runs of shared read-modify-writes per commit ([`braid_wal::scheme::Proxies`]).
    pub shared_rmw_per_commit: Option<f64>,
    /// Median over the runs of global read-modify-writes per commit (on words every worker
    /// writes, whatever the lanes).
    pub global_rmw_per_commit: Option<f64>,
    /// Median over the runs of shared cache lines written per commit.
    pub shared_lines_per_commit: Option<f64>,
    /// Copies (streams, logs) the scheme's shared words come in.
    pub proxy_lanes: Option<u64>,
    /// What the log only emulated (see [`RunResult::emulation`]); `None`: power-safe.
    pub emulation: Option<String>,
    /// The scheme's own options, as the scheme reports them.
    pub scheme_options: BTreeMap<String, String>,
    /// Median over the runs of the share of worker time spent with a full pipeline (see
    /// [`RunResult::pipeline_full_share`]).
    pub pipeline_full_share: f64,
    /// Median over the runs of the mean log insertion latency per transaction, ns
    /// ([`RunResult::log_insert_ns`]).
    pub log_insert_ns: f64,
    /// Median over the runs of the mean latency of one log insertion, ns
    /// ([`RunResult::record_insert_ns`]).
    pub record_insert_ns: f64,
    /// Median over the runs of the disk's commit floor, p50 and p99 in us (file devices on a
    /// disk; see `bench/floor.rs`): a run's commit latency less this is braid's own.
    pub floor_p50_us: Option<f64>,
    pub floor_p99_us: Option<f64>,
    /// Median over the runs of each run's commit p50 less the floor measured just before it,
    /// in us: steadier than the difference of the two medians where the disk's floor moves
    /// from run to run.
    pub floor_gap_us: Option<f64>,
    /// Median over the runs of the sampled commits' time in 2PL locks, ns per transaction
    /// ([`RunResult::lock_ns`]).
    pub lock_ns: f64,
    /// Median over the runs of the sampled commits' time in the scheme's access hooks, ns per
    /// transaction ([`RunResult::access_hook_ns`]).
    pub access_hook_ns: f64,
    /// Median over the runs of Taurus's LV work per sampled committed transaction, ns
    /// ([`RunResult::lv_ns`]; 0 for the other schemes).
    pub lv_ns: f64,
    /// Median over the runs of its part in the scheme's commit, ns
    /// ([`RunResult::lv_commit_ns`]).
    pub lv_commit_ns: f64,
    /// Median over the runs of the share of timed transactions dropped (a stretch over 50 us).
    pub lv_dropped_share: f64,
    /// Median over the runs of the LV work per timed transaction, dropped ones included, ns.
    pub lv_all_ns: f64,
    /// Median over the runs of the workers' time in aborted attempts per committed
    /// transaction, ns.
    pub abort_ns_per_txn: f64,
    /// Median over the runs of the workers' share of their runnable time on a CPU
    /// ([`super::cpu::CpuTime::workers_on_cpu`]): what turns the worker-side timers' wall
    /// time into CPU time.
    pub workers_on_cpu: Option<f64>,
    /// Median over the runs of each thread role's CPU time per committed transaction, ns
    /// (workers, flushers, daemons, ...; see [`super::cpu`]); empty where it was not read.
    pub cpu_ns_per_txn: BTreeMap<String, f64>,
    pub runs: Vec<RunResult>,
    pub params: serde_json::Value,
}

/// The median of `v` (sorted in place); 0 for none.
pub(crate) fn median(v: &mut [f64]) -> f64 {
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

/// The median over `runs` (those whose CPU time was read) of each role's CPU time per
/// committed transaction, a role a run did not see counting 0 in it.
fn cpu_medians(runs: &[RunResult]) -> BTreeMap<String, f64> {
    let read: Vec<&RunResult> = runs.iter().filter(|r| r.cpu.is_some()).collect();
    let roles: std::collections::BTreeSet<&String> =
        read.iter().flat_map(|r| r.cpu_ns_per_txn.keys()).collect();
    roles
        .into_iter()
        .map(|role| {
            let mut v: Vec<f64> = read
                .iter()
                .map(|r| r.cpu_ns_per_txn.get(role).copied().unwrap_or(0.0))
                .collect();
            (role.clone(), median(&mut v))
        })
        .collect()
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
) -> anyhow::Result<Vec<ConfigResult>> {
    let variants = [Variant {
        label: String::new(),
        args: args.clone(),
    }];
    measure_variants(&variants, workload, points, mp, overall)
}

/// [`measure`] for the points of several [`Variant`]s ([`super::variant_points`]); the
/// repeats are the first variant's.
pub fn measure_variants(
    variants: &[Variant],
    workload: &Arc<dyn Workload>,
    points: &[Point],
    mp: &MultiProgress,
    overall: &ProgressBar,
) -> anyhow::Result<Vec<ConfigResult>> {
    let Some(first) = variants.first() else {
        return Ok(Vec::new());
    };
    let mut all: Vec<(Vec<RunResult>, f64)> = points.iter().map(|_| (Vec::new(), 0.0)).collect();
    for r in 0..first.args.repeat.max(1) {
        for (p, (runs, bpr)) in points.iter().zip(all.iter_mut()) {
            let (res, b) = run_once(&variants[p.variant].args, workload, p, r, mp)?;
            *bpr = b;
            runs.push(res);
            overall.inc(1);
        }
    }
    let mut results: Vec<ConfigResult> = Vec::new();
    for (p, (runs, bpr)) in points.iter().zip(all) {
        let Variant { label, args } = &variants[p.variant];
        let mut tps: Vec<f64> = runs.iter().map(|r| r.txn_per_s).collect();
        let min = tps.iter().cloned().fold(f64::INFINITY, f64::min);
        let max = tps.iter().cloned().fold(0.0, f64::max);
        let med = median(&mut tps);
        let p50 = median(&mut runs.iter().map(|r| r.p50_us).collect::<Vec<_>>());
        let p99 = median(&mut runs.iter().map(|r| r.p99_us).collect::<Vec<_>>());
        let p90 = median(&mut runs.iter().map(|r| r.p90_us).collect::<Vec<_>>());
        let p999 = median(&mut runs.iter().map(|r| r.p999_us).collect::<Vec<_>>());
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
        let per_flush = median(
            &mut runs
                .iter()
                .filter(|r| r.log_flushes > 0)
                .map(|r| r.log_bytes as f64 / r.log_flushes as f64)
                .collect::<Vec<_>>(),
        );
        let mut sig: Vec<f64> = runs
            .iter()
            .filter_map(|r| r.signals_per_10k_commits)
            .collect();
        let signals = (!sig.is_empty()).then(|| median(&mut sig));
        let mut helped: Vec<f64> = runs
            .iter()
            .filter_map(|r| r.signals_helped_per_10k_commits)
            .collect();
        let helped = (!helped.is_empty()).then(|| median(&mut helped));
        let median_of = |f: fn(&RunResult) -> Option<f64>| {
            let mut v: Vec<f64> = runs.iter().filter_map(f).collect();
            (!v.is_empty()).then(|| median(&mut v))
        };
        let remote_flush = median_of(|r| r.remote_flush_share);
        let shared_rmw = median_of(|r| r.shared_rmw_per_commit);
        let global_rmw = median_of(|r| r.global_rmw_per_commit);
        let shared_lines = median_of(|r| r.shared_lines_per_commit);
        let full = median_of(|r| Some(r.pipeline_full_share)).unwrap_or(0.0);
        let insert_ns = median_of(|r| Some(r.log_insert_ns)).unwrap_or(0.0);
        let record_ns = median_of(|r| Some(r.record_insert_ns)).unwrap_or(0.0);
        let floor_p50 = median_of(|r| r.disk_floor.map(|f| f.p50_us));
        let floor_p99 = median_of(|r| r.disk_floor.map(|f| f.p99_us));
        let floor_gap = median_of(|r| r.disk_floor.map(|f| r.p50_us - f.p50_us));
        let cpu_ns_per_txn = cpu_medians(&runs);
        let workers_on_cpu = median_of(|r| r.cpu.as_ref().and_then(|c| c.workers_on_cpu));
        let lock_ns = median_of(|r| Some(r.lock_ns)).unwrap_or(0.0);
        let access_hook_ns = median_of(|r| Some(r.access_hook_ns)).unwrap_or(0.0);
        let lv_ns = median_of(|r| Some(r.lv_ns)).unwrap_or(0.0);
        let lv_commit_ns = median_of(|r| Some(r.lv_commit_ns)).unwrap_or(0.0);
        let lv_dropped_share = median_of(|r| Some(r.lv_dropped_share)).unwrap_or(0.0);
        let lv_all_ns = median_of(|r| Some(r.lv_all_ns)).unwrap_or(0.0);
        let abort_ns_per_txn = median_of(|r| Some(r.abort_ns_per_txn)).unwrap_or(0.0);
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
            variant: label.clone(),
            logging: p.logging.name().to_string(),
            records: args.engine.records.name().to_string(),
            device: match p.device {
                // nvdisk keeps its log in files in /dev/shm whatever device was asked for.
                _ if args.engine.spec(p.scheme)?.log_place()
                    == braid_engine::log::LogPlace::NvramFiles =>
                {
                    "nvram-file".to_string()
                }
                // RAID-0 (see `--stripe`): named in the device column of every output.
                DeviceKind::File if args.engine.stripe > 1 => {
                    format!("raid0x{}", args.engine.stripe)
                }
                d => d.name().to_string(),
            },
            threads: p.threads,
            logs: p.logs,
            txn_per_s: med,
            txn_per_s_min: min,
            txn_per_s_max: max,
            ratio_to_none: ratio,
            nvm_delay_ns: p.nvm_delay_ns,
            p50_us: p50,
            p90_us: p90,
            p99_us: p99,
            p999_us: p999,
            aborts_per_s: aborts,
            log_bytes_per_s: logbps,
            bytes_per_flush: per_flush,
            bytes_per_row: bpr,
            signals_per_10k_commits: signals,
            signals_helped_per_10k_commits: helped,
            remote_flush_share: remote_flush,
            shared_rmw_per_commit: shared_rmw,
            global_rmw_per_commit: global_rmw,
            shared_lines_per_commit: shared_lines,
            proxy_lanes: runs.first().and_then(|r| r.proxy_lanes),
            emulation: runs.first().and_then(|r| r.emulation.clone()),
            scheme_options: args
                .engine
                .spec(p.scheme)?
                .options()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            pipeline_full_share: full,
            log_insert_ns: insert_ns,
            record_insert_ns: record_ns,
            floor_p50_us: floor_p50,
            floor_p99_us: floor_p99,
            floor_gap_us: floor_gap,
            lock_ns,
            access_hook_ns,
            lv_ns,
            lv_commit_ns,
            lv_dropped_share,
            lv_all_ns,
            abort_ns_per_txn,
            workers_on_cpu,
            cpu_ns_per_txn,
            runs,
            params: serde_json::json!({
                "workload": workload.params(),
                "seconds": args.seconds(),
                "repeat": args.repeat,
                "inflight": args.inflight(&args.engine.spec(p.scheme)?),
                "commits": args.commits,
                "offered_rate": args.offered_rate,
                "pregenerate": args.pregenerate,
                "prefetch_ahead": args.prefetch_ahead,
                "seed": args.seed,
                "cc": args.engine.cc.to_string(),
                "records": args.engine.records.name(),
                "nvm_delay_per": args.engine.nvm_delay_per.name(),
                "group_delay_us": args.engine.group_delay_us,
                "group_kb": args.engine.group_kb,
                "ring_mb": args.engine.ring_mb,
                "domain": args.engine.domain.to_string(),
                "pmem_write": args.engine.pmem_write.to_string(),
                "destage": !args.engine.no_destage,
                "segment_mb": args.engine.segment_mb,
                "pmem_media": args.engine.pmem_media.to_string(),
                "direct": args.engine.direct,
                "stripe": args.engine.stripe,
                "stripe_kb": args.engine.stripe_kb,
                "device_mbps": args.engine.device_mbps.unwrap_or(0.0),
                "device_sync_us": args.engine.device_sync_us.unwrap_or(0),
                "commit": args.engine.commit_mode(),
                "sync_commit": args.engine.sync_commit,
                "lv_compress": args.engine.taurus.compress.to_string(),
                "lv_simd": args.engine.taurus.simd.to_string(),
                "taurus_recovery": args.engine.taurus_recovery.to_string(),
            }),
        });
    }
    Ok(results)
}
