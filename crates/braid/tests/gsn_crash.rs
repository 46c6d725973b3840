//! Short forms of `braid crash-test --scheme gsn`: both partitionings, both commit protocols on
//! persistent memory, the per-log watermarks on files, simulated power failures and kill -9.
//! Longer runs: the same commands with more `--rounds`, e.g.
//! `braid crash-test --scheme gsn --device file --mode power --rounds 200 --gsn-partition page`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::{crash_ok, kept_db, recover, result, run_failing, small_bench};

/// `braid crash-test --scheme gsn` with `base` and `args` (split at whitespace).
fn gsn_ok(base: &str, args: &str) {
    let args: Vec<&str> = ["--scheme gsn", base, args]
        .iter()
        .flat_map(|a| a.split_whitespace())
        .collect();
    crash_ok(&args);
}

/// Power rounds of gsn with `args`.
fn power(args: &str) {
    gsn_ok("--mode power --rounds 12 --max-ms 30", args);
}

/// Kill rounds of gsn with `args`.
fn kill(args: &str) {
    gsn_ok("--mode kill --rounds 2 --max-ms 150", args);
}

#[test]
fn gsn_pmem_power_tx_durable() {
    power("--device pmem --gsn-partition tx --gsn-commit durable");
}

#[test]
fn gsn_pmem_power_tx_passive() {
    power("--device pmem --gsn-partition tx --gsn-commit passive");
}

#[test]
fn gsn_pmem_power_page_durable_occ() {
    power("--device pmem --gsn-partition page --gsn-commit durable --cc occ");
}

/// Page-level partitioning with passive group commit over three pmem logs: the regions are
/// cut at one instant (`Region::crash_together`), as a real power failure cuts them.
#[test]
fn gsn_pmem_power_page_passive_three_logs() {
    power("--device pmem --gsn-partition page --gsn-commit passive --logs 3");
}

#[test]
fn gsn_file_power_tx() {
    power("--device file --gsn-partition tx");
}

#[test]
fn gsn_file_power_page_occ_rows_per_page() {
    power("--device file --gsn-partition page --cc occ --rows-per-page 4");
}

#[test]
fn gsn_pmem_kill_page_passive() {
    kill("--device pmem --gsn-partition page");
}

#[test]
fn gsn_file_kill_tx() {
    kill("--device file --gsn-partition tx");
}

#[test]
fn gsn_refuses_command_logging_with_the_reason() {
    let out = run_failing(&[
        "crash-test",
        "--scheme",
        "gsn",
        "--logging",
        "command",
        "--rounds",
        "1",
    ]);
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(all.contains("write-after-read"), "{all}");
}

/// `braid bench` reports straggler signals per 10,000 commits for gsn (its own instance's
/// counters, no environment variable) in JSON and CSV, and `braid recover` takes the pipeline's
/// N and M, reports them and times its stages; every (N, M) recovers the same transactions.
#[test]
fn gsn_bench_reports_signals_and_recover_takes_scan_and_apply_threads() {
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let v = small_bench(dir.path(), &["--scheme", "gsn,serial"]);
    let gsn = result(&v, "gsn");
    let serial = result(&v, "serial");
    assert!(
        gsn["signals_per_10k_commits"].as_f64().unwrap() >= 0.0,
        "{gsn}"
    );
    assert!(serial["signals_per_10k_commits"].is_null(), "{serial}");
    let run = &gsn["runs"][0];
    assert!(
        run["scheme_counters"]["commits"].as_u64().unwrap() > 0,
        "{run}"
    );
    assert!(run["scheme_counters"]["signals"].is_u64(), "{run}");
    let csv = std::fs::read_to_string(dir.path().join("bench.csv")).unwrap();
    assert!(
        csv.lines()
            .next()
            .unwrap()
            .contains(",signals_per_10k_commits,"),
        "{csv}"
    );
    let db = kept_db(&v, "gsn");
    let mut txns = Vec::new();
    for (n, m) in [("1", "1"), ("2", "1"), ("1", "2"), ("2", "2")] {
        let r = recover(&db, &["--scan-threads", n, "--apply-threads", m]);
        assert_eq!(r["scan_threads"].as_u64(), Some(n.parse().unwrap()), "{r}");
        assert_eq!(r["apply_threads"].as_u64(), Some(m.parse().unwrap()), "{r}");
        let stages = r["stages"].as_array().unwrap();
        assert_eq!(stages.len(), 4, "{r}");
        assert!(stages.iter().all(|s| s["seconds"].is_f64()), "{r}");
        assert!(r["records_per_s"].as_f64().is_some(), "{r}");
        assert!(r["consistency"].is_null(), "{r}");
        txns.push(r["txns"].as_u64().unwrap());
    }
    assert!(
        txns[0] > 0 && txns.iter().all(|&t| t == txns[0]),
        "{txns:?}"
    );
}
