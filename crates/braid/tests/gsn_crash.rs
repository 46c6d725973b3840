//! Short forms of `braid crash-test --scheme gsn`: both partitionings, both commit protocols on
//! persistent memory, the per-log watermarks on files, simulated power failures and kill -9.
//! Longer runs: the same commands with more `--rounds`, e.g.
//! `braid crash-test --scheme gsn --device file --mode power --rounds 200 --gsn-partition page`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{braid, run_ok};

fn crash_ok(args: &[&str]) {
    let stdout = run_ok(braid().args(["crash-test", "--scheme", "gsn"]).args(args));
    assert!(stdout.contains(" 0 violations"), "{stdout}");
}

const POWER: [&str; 6] = ["--mode", "power", "--rounds", "12", "--max-ms", "30"];

#[test]
fn gsn_pmem_power_tx_durable() {
    crash_ok(
        &[
            &POWER[..],
            &[
                "--device",
                "pmem",
                "--gsn-partition",
                "tx",
                "--gsn-commit",
                "durable",
            ],
        ]
        .concat(),
    );
}

#[test]
fn gsn_pmem_power_tx_passive() {
    crash_ok(
        &[
            &POWER[..],
            &[
                "--device",
                "pmem",
                "--gsn-partition",
                "tx",
                "--gsn-commit",
                "passive",
            ],
        ]
        .concat(),
    );
}

#[test]
fn gsn_pmem_power_page_durable_occ() {
    crash_ok(
        &[
            &POWER[..],
            &[
                "--device",
                "pmem",
                "--gsn-partition",
                "page",
                "--gsn-commit",
                "durable",
                "--cc",
                "occ",
            ],
        ]
        .concat(),
    );
}

/// Page-level partitioning with passive group commit over three pmem logs: the regions are
/// cut at one instant (`Region::crash_together`), as a real power failure cuts them.
#[test]
fn gsn_pmem_power_page_passive_three_logs() {
    crash_ok(
        &[
            &POWER[..],
            &[
                "--device",
                "pmem",
                "--gsn-partition",
                "page",
                "--gsn-commit",
                "passive",
                "--logs",
                "3",
            ],
        ]
        .concat(),
    );
}

#[test]
fn gsn_file_power_tx() {
    crash_ok(&[&POWER[..], &["--device", "file", "--gsn-partition", "tx"]].concat());
}

#[test]
fn gsn_file_power_page_occ_rows_per_page() {
    crash_ok(
        &[
            &POWER[..],
            &[
                "--device",
                "file",
                "--gsn-partition",
                "page",
                "--cc",
                "occ",
                "--rows-per-page",
                "4",
            ],
        ]
        .concat(),
    );
}

#[test]
fn gsn_pmem_kill_page_passive() {
    crash_ok(&[
        "--mode",
        "kill",
        "--rounds",
        "2",
        "--max-ms",
        "150",
        "--device",
        "pmem",
        "--gsn-partition",
        "page",
    ]);
}

#[test]
fn gsn_file_kill_tx() {
    crash_ok(&[
        "--mode",
        "kill",
        "--rounds",
        "2",
        "--max-ms",
        "150",
        "--device",
        "file",
        "--gsn-partition",
        "tx",
    ]);
}

#[test]
fn gsn_refuses_command_logging_with_the_reason() {
    let out = braid()
        .args([
            "crash-test",
            "--scheme",
            "gsn",
            "--logging",
            "command",
            "--rounds",
            "1",
        ])
        .output()
        .expect("runs");
    assert!(!out.status.success());
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
    let json = dir.path().join("bench.json");
    let csv = dir.path().join("bench.csv");
    run_ok(braid().args([
        "bench",
        "--scheme",
        "gsn,serial",
        "--rows",
        "2000",
        "--threads",
        "2",
        "--seconds",
        "0.3",
        "--repeat",
        "1",
        "--keep",
        "--dir",
        dir.path().to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let results = v["results"].as_array().unwrap();
    let gsn = results.iter().find(|r| r["scheme"] == "gsn").unwrap();
    let serial = results.iter().find(|r| r["scheme"] == "serial").unwrap();
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
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert!(
        csv.lines()
            .next()
            .unwrap()
            .contains(",signals_per_10k_commits,"),
        "{csv}"
    );
    let db = run["dir"].as_str().unwrap().to_string();
    let mut txns = Vec::new();
    for (n, m) in [("1", "1"), ("2", "1"), ("1", "2"), ("2", "2")] {
        let rj = dir.path().join(format!("recover-{n}-{m}.json"));
        let out = run_ok(braid().args([
            "recover",
            "--dir",
            &db,
            "--scan-threads",
            n,
            "--apply-threads",
            m,
            "--json",
            rj.to_str().unwrap(),
        ]));
        assert!(
            out.contains(&format!(
                "gsn pipeline:  {n} scan threads, {m} apply threads"
            )),
            "{out}"
        );
        assert!(
            out.contains("stages:") && out.contains("records/s"),
            "{out}"
        );
        assert!(!out.contains("consistency check FAILED"), "{out}");
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&rj).unwrap()).unwrap();
        assert_eq!(r["scan_threads"].as_u64(), Some(n.parse().unwrap()), "{r}");
        assert_eq!(r["apply_threads"].as_u64(), Some(m.parse().unwrap()), "{r}");
        assert_eq!(r["stages"].as_array().unwrap().len(), 4, "{r}");
        txns.push(r["txns"].as_u64().unwrap());
    }
    assert!(
        txns[0] > 0 && txns.iter().all(|&t| t == txns[0]),
        "{txns:?}"
    );
}
