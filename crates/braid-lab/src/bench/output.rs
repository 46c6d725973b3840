//! What `braid bench` prints and writes: the results table, and the JSON and CSV files (with
//! the machine and the git revision).

use serde::{Serialize, Serializer};

use super::{BenchArgs, ConfigResult};
use crate::common::NONE;

/// Write the JSON and CSV files, with the machine and the git revision.
pub fn save(args: &BenchArgs, results: &[ConfigResult]) -> anyhow::Result<()> {
    save_quiet(args, results)?;
    println!(
        "results written to {} and {}",
        args.json.display(),
        args.csv_path().display()
    );
    Ok(())
}

/// One line of the CSV file: a configuration's medians and where they were measured.
#[derive(Serialize)]
struct CsvRow<'a> {
    workload: &'a str,
    scheme: &'a str,
    variant: &'a str,
    logging: &'a str,
    records: &'a str,
    device: &'a str,
    threads: usize,
    logs: usize,
    nvm_delay_ns: u64,
    #[serde(serialize_with = "fixed1")]
    txn_per_s: f64,
    #[serde(serialize_with = "fixed1")]
    txn_per_s_min: f64,
    #[serde(serialize_with = "fixed1")]
    txn_per_s_max: f64,
    #[serde(serialize_with = "fixed3_or_empty")]
    ratio_to_none: Option<f64>,
    #[serde(serialize_with = "fixed2")]
    p50_us: f64,
    #[serde(serialize_with = "fixed2")]
    p90_us: f64,
    #[serde(serialize_with = "fixed2")]
    p99_us: f64,
    #[serde(serialize_with = "fixed2")]
    p999_us: f64,
    #[serde(serialize_with = "fixed1")]
    aborts_per_s: f64,
    #[serde(serialize_with = "fixed1")]
    log_bytes_per_s: f64,
    #[serde(serialize_with = "fixed1")]
    bytes_per_row: f64,
    #[serde(serialize_with = "fixed2_or_empty")]
    signals_per_10k_commits: Option<f64>,
    #[serde(serialize_with = "fixed2_or_empty")]
    signals_helped_per_10k_commits: Option<f64>,
    /// gsn with Remote Flush Avoidance: share of commits that needed a remote flush.
    #[serde(serialize_with = "fixed3_or_empty")]
    remote_flush_share: Option<f64>,
    #[serde(serialize_with = "fixed3_or_empty")]
    shared_rmw_per_commit: Option<f64>,
    #[serde(serialize_with = "fixed3_or_empty")]
    global_rmw_per_commit: Option<f64>,
    #[serde(serialize_with = "fixed3_or_empty")]
    shared_lines_per_commit: Option<f64>,
    proxy_lanes: Option<u64>,
    pipeline_full_share: f64,
    #[serde(serialize_with = "fixed1")]
    log_insert_ns: f64,
    #[serde(serialize_with = "fixed1")]
    record_insert_ns: f64,
    #[serde(serialize_with = "fixed1")]
    bytes_per_flush: f64,
    #[serde(serialize_with = "fixed2_or_empty")]
    floor_p50_us: Option<f64>,
    #[serde(serialize_with = "fixed2_or_empty")]
    floor_p99_us: Option<f64>,
    #[serde(serialize_with = "fixed2_or_empty")]
    floor_gap_us: Option<f64>,
    /// CPU ns per committed transaction by thread role, "worker 1234, flusher 56".
    cpu_ns_per_txn: String,
    git: &'a str,
    cores: String,
    cpu: &'a str,
    emulation: &'a str,
    params: String,
}

fn fixed<S: Serializer>(s: S, v: Option<f64>, digits: usize) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => s.serialize_str(&format!("{v:.digits$}")),
        None => s.serialize_str(""),
    }
}

fn fixed1<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    fixed(s, Some(*v), 1)
}

fn fixed2<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    fixed(s, Some(*v), 2)
}

fn fixed2_or_empty<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    fixed(s, *v, 2)
}

fn fixed3_or_empty<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    fixed(s, *v, 3)
}

/// [`save`] without telling.
pub fn save_quiet(args: &BenchArgs, results: &[ConfigResult]) -> anyhow::Result<()> {
    crate::output::write_json(
        &args.json,
        &serde_json::json!({
            "command": std::env::args().collect::<Vec<_>>().join(" "),
            "machine": crate::output::machine(),
            "results": results,
        }),
    )?;
    let m = crate::output::machine();
    let mut csv = csv::Writer::from_writer(Vec::new());
    for r in results {
        csv.serialize(CsvRow {
            workload: &r.workload,
            scheme: &r.scheme,
            variant: &r.variant,
            logging: &r.logging,
            records: &r.records,
            device: &r.device,
            threads: r.threads,
            logs: r.logs,
            nvm_delay_ns: r.nvm_delay_ns,
            txn_per_s: r.txn_per_s,
            txn_per_s_min: r.txn_per_s_min,
            txn_per_s_max: r.txn_per_s_max,
            ratio_to_none: r.ratio_to_none,
            p50_us: r.p50_us,
            p90_us: r.p90_us,
            p99_us: r.p99_us,
            p999_us: r.p999_us,
            aborts_per_s: r.aborts_per_s,
            log_bytes_per_s: r.log_bytes_per_s,
            bytes_per_row: r.bytes_per_row,
            signals_per_10k_commits: r.signals_per_10k_commits,
            signals_helped_per_10k_commits: r.signals_helped_per_10k_commits,
            remote_flush_share: r.remote_flush_share,
            shared_rmw_per_commit: r.shared_rmw_per_commit,
            global_rmw_per_commit: r.global_rmw_per_commit,
            shared_lines_per_commit: r.shared_lines_per_commit,
            proxy_lanes: r.proxy_lanes,
            pipeline_full_share: r.pipeline_full_share,
            log_insert_ns: r.log_insert_ns,
            record_insert_ns: r.record_insert_ns,
            bytes_per_flush: r.bytes_per_flush,
            floor_p50_us: r.floor_p50_us,
            floor_p99_us: r.floor_p99_us,
            floor_gap_us: r.floor_gap_us,
            cpu_ns_per_txn: super::cpu::text(&r.cpu_ns_per_txn),
            git: m["git"].as_str().unwrap_or(""),
            cores: m["cores"].to_string(),
            cpu: m["cpu"].as_str().unwrap_or(""),
            emulation: r.emulation.as_deref().unwrap_or(""),
            params: r.params.to_string(),
        })?;
    }
    let text = String::from_utf8(csv.into_inner()?)?;
    crate::output::write_text(&args.csv_path(), &text)?;
    Ok(())
}

/// The transactions drawn before the runs (`--pregenerate`): how many per worker, and the
/// configurations whose workers took them more than once (the most one worker drew).
fn pregenerate_notes(results: &[ConfigResult]) -> Vec<String> {
    let ahead = |r: &ConfigResult| r.params["pregenerate"].as_u64().unwrap_or(0);
    let batch = |r: &ConfigResult| r.params["prefetch_ahead"].as_u64().unwrap_or(0);
    let mut counts: Vec<(u64, u64)> = results
        .iter()
        .map(|r| (ahead(r), batch(r)))
        .filter(|&(n, _)| n > 0)
        .collect();
    counts.dedup();
    let mut notes: Vec<String> = counts
        .iter()
        .map(|&(n, b)| {
            let prefetch = match b {
                0 => "not announced to the engine's prefetch (--prefetch-ahead 0)".to_string(),
                b => format!(
                    "their rows, where the workload names them (YCSB), announced to the engine's \
                     prefetch {b} transactions at a time (--prefetch-ahead {b})"
                ),
            };
            format!(
                "transactions drawn before each run's clock started: {n} per worker, taken in \
                 turn (--pregenerate); {prefetch}"
            )
        })
        .collect();
    for r in results {
        let n = ahead(r);
        let most = r
            .runs
            .iter()
            .map(|x| x.most_drawn_per_worker)
            .max()
            .unwrap_or(0);
        if n > 0 && most > n {
            notes.push(format!(
                "{} {} {} {}t: a worker drew {most} transactions, more than the {n} drawn \
                 before the run: it took them {:.1} times over",
                r.workload,
                r.scheme,
                r.logging,
                r.threads,
                most as f64 / n as f64
            ));
        }
    }
    notes
}

/// Commits over log flushes (durable-point advances) over every run of `r`.
fn commits_per_flush(r: &ConfigResult) -> f64 {
    let (commits, flushes) = r
        .runs
        .iter()
        .fold((0u64, 0u64), |(c, f), x| (c + x.commits, f + x.log_flushes));
    commits as f64 / flushes.max(1) as f64
}

/// Commits `r`'s workers keep in flight together (threads x `--inflight`).
fn in_flight(r: &ConfigResult) -> u64 {
    r.params["inflight"].as_u64().unwrap_or(0) * r.threads as u64
}

/// Whether the log's flushes are what acknowledges `r`'s commits: a flush that does can
/// cover at most the commits in flight, so more commits per flush than that means the
/// commits were acknowledged otherwise (and bytes per flush says nothing of group commit).
fn acknowledged_by_flushes(r: &ConfigResult) -> bool {
    let window = in_flight(r);
    window == 0 || commits_per_flush(r) <= window as f64
}

pub fn print_table(results: &[ConfigResult]) {
    println!(
        "{:<9} {:<10} {:<8} {:<12} {:>3} {:>4} {:>6} {:>12} {:>21} {:>7} {:>9} {:>9} {:>9} {:>9} {:>10} {:>9} {:>9}",
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
        "p90 us",
        "p99 us",
        "p99.9 us",
        "aborts/s",
        "log MB/s",
        "B/flush"
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
            "{:<9} {:<10} {:<8} {:<12} {:>3} {:>4} {:>6} {:>12.0} {:>21} {:>7} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>10.0} {:>9.1} {:>9}",
            r.workload,
            r.scheme,
            if r.records == "update" {
                format!("{}/upd", r.logging)
            } else {
                r.logging.clone()
            },
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
            r.p90_us,
            r.p99_us,
            r.p999_us,
            r.aborts_per_s,
            r.log_bytes_per_s / 1e6,
            if acknowledged_by_flushes(r) {
                format!("{:.0}", r.bytes_per_flush)
            } else {
                "-".into()
            },
        );
    }
    for (i, n) in notes.iter().enumerate() {
        println!("{} {n}", "*".repeat(i + 1));
    }
    for r in results {
        if let Some(s) = r.signals_per_10k_commits {
            let helped = r
                .signals_helped_per_10k_commits
                .map(|h| format!(" ({h:.2} helped)"))
                .unwrap_or_default();
            println!(
                "{} {} {} {}t {} logs: {s:.2} straggler signals per 10,000 commits{helped}",
                r.workload, r.scheme, r.device, r.threads, r.logs
            );
        }
    }
    for r in results {
        if let Some(share) = r.remote_flush_share {
            println!(
                "{} {} {} {}t {} logs: {:.1}% of commits needed a remote flush (Remote Flush \
                 Avoidance; the rest were acknowledged by their own log's flush)",
                r.workload,
                r.scheme,
                r.device,
                r.threads,
                r.logs,
                share * 100.0
            );
        }
    }
    // The disk's own floor beside the commit latency: what lies above it is braid's.
    for r in results {
        if let Some(floor) = r.floor_p50_us.filter(|_| r.scheme != NONE) {
            println!(
                "{} {} {} {}t: commit p50 {:.1} us against the disk's floor of {floor:.1} us \
                 (one {}-byte pwrite + fdatasync into a preallocated file, measured in the run's \
                 directory before each run): {:+.1} us (medians); each run's p50 less its own \
                 floor: {:+.1} us (median over {} runs)",
                r.workload,
                r.scheme,
                r.device,
                r.threads,
                r.p50_us,
                super::floor::FLOOR_WRITE_BYTES,
                r.p50_us - floor,
                r.floor_gap_us.unwrap_or(f64::NAN),
                r.runs.len()
            );
        }
    }
    // Bytes per flush measures group commit only where flushes acknowledge the commits.
    for r in results
        .iter()
        .filter(|r| r.scheme != NONE && !acknowledged_by_flushes(r))
    {
        println!(
            "{} {} {} {}t: B/flush not shown: {:.0} commits per advance of the log's durable \
             point, more than the {} its workers keep in flight, so its commits are \
             acknowledged without waiting for a flush (at the insert's fence on a durable \
             cache, or persisted on insert)",
            r.workload,
            r.scheme,
            r.device,
            r.threads,
            commits_per_flush(r),
            in_flight(r)
        );
    }
    // A client that spent most of its time waiting with `--inflight` commits pending measured
    // the acknowledgement rate (a saturated device, or a scheme acknowledging in batches, as
    // Silo-R's epochs), not the scheme's speed alone: say so where the figure is read.
    for r in results.iter().filter(|r| r.pipeline_full_share > 0.5) {
        println!(
            "{} {} {} {}t: workers waited with a full pipeline {:.0}% of the time: the \
             throughput is set by how fast commits are acknowledged (p50 {:.0} us) with \
             --inflight {} in flight (a saturated log device, or a scheme acknowledging in \
             batches; raising --inflight tells them apart)",
            r.workload,
            r.scheme,
            r.logging,
            r.threads,
            r.pipeline_full_share * 100.0,
            r.p50_us,
            r.params["inflight"]
        );
    }
    for line in pregenerate_notes(results) {
        println!("{line}");
    }
    // Scalability proxies (braid_wal::proxy): what each commit does to memory other workers
    // also write, which is what limits a scheme on many cores.
    for r in results {
        if let (Some(rmw), Some(lines)) = (r.shared_rmw_per_commit, r.shared_lines_per_commit) {
            println!(
                "{} {} {} {}t {} logs: {rmw:.2} shared RMWs ({:.2} global), {lines:.2} shared \
                 lines per commit over {} lane(s)",
                r.workload,
                r.scheme,
                r.device,
                r.threads,
                r.logs,
                r.global_rmw_per_commit.unwrap_or(0.0),
                r.proxy_lanes.unwrap_or(0)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::RunResult;

    fn result(threads: usize, inflight: u64, commits: u64, flushes: u64) -> ConfigResult {
        ConfigResult {
            scheme: "serial".into(),
            threads,
            params: serde_json::json!({ "inflight": inflight }),
            runs: vec![RunResult {
                commits,
                log_flushes: flushes,
                ..RunResult::default()
            }],
            ..ConfigResult::default()
        }
    }

    /// `--pregenerate` is said once per count, and a configuration whose worker drew more
    /// transactions than were drawn ahead is named.
    #[test]
    fn pregenerated_transactions_are_noted_and_cycling_named() {
        let with = |n: u64, drawn: u64| ConfigResult {
            scheme: "serial".into(),
            params: serde_json::json!({ "pregenerate": n }),
            runs: vec![RunResult {
                most_drawn_per_worker: drawn,
                ..RunResult::default()
            }],
            ..ConfigResult::default()
        };
        assert!(pregenerate_notes(&[with(0, 5000)]).is_empty());
        let notes = pregenerate_notes(&[with(1000, 900), with(1000, 2500)]);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].contains("1000 per worker"), "{notes:?}");
        assert!(notes[0].contains("--prefetch-ahead 0"), "{notes:?}");
        assert!(
            notes[1].contains("2500") && notes[1].contains("2.5 times"),
            "{notes:?}"
        );
    }

    /// A flush can acknowledge at most the commits in flight: 512 per flush with 2 x 256 in
    /// flight is group commit, 100,000 per flush is not (the flushes did not acknowledge).
    #[test]
    fn bytes_per_flush_is_shown_only_where_flushes_acknowledge_commits() {
        assert!(acknowledged_by_flushes(&result(2, 256, 512_000, 1_000)));
        assert!(!acknowledged_by_flushes(&result(2, 256, 1_000_000, 10)));
        assert!(acknowledged_by_flushes(&result(1, 0, 1_000_000, 1)));
    }
}
