//! The `braid` command end to end: short forms of the crash tests (kill -9 of a child process
//! and simulated power failures), a tiny bench, recover and inspect.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{braid, run_ok};

#[test]
fn crash_test_serial_file_kill() {
    let out = run_ok(braid().args([
        "crash-test",
        "--scheme",
        "serial",
        "--device",
        "file",
        "--mode",
        "kill",
        "--rounds",
        "3",
        "--max-ms",
        "150",
    ]));
    assert!(out.contains("0 violations"), "{out}");
}

#[test]
fn crash_test_serial_pmem_kill_command_logging() {
    let out = run_ok(braid().args([
        "crash-test",
        "--scheme",
        "serial",
        "--device",
        "pmem",
        "--mode",
        "kill",
        "--logging",
        "command",
        "--rounds",
        "3",
        "--max-ms",
        "150",
    ]));
    assert!(out.contains("0 violations"), "{out}");
}

#[test]
fn crash_test_serial_pmem_power() {
    let out = run_ok(braid().args([
        "crash-test",
        "--scheme",
        "serial",
        "--device",
        "pmem",
        "--mode",
        "power",
        "--rounds",
        "40",
        "--max-ms",
        "30",
    ]));
    assert!(out.contains("0 violations"), "{out}");
}

#[test]
fn crash_test_serial_file_power_occ() {
    let out = run_ok(braid().args([
        "crash-test",
        "--scheme",
        "serial",
        "--device",
        "file",
        "--mode",
        "power",
        "--rounds",
        "30",
        "--max-ms",
        "30",
        "--cc",
        "occ",
    ]));
    assert!(out.contains("0 violations"), "{out}");
}

#[test]
fn bench_recover_inspect() {
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let json = dir.path().join("bench.json");
    let out = run_ok(braid().args([
        "bench",
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
        dir.path().join("bench.csv").to_str().unwrap(),
    ]));
    assert!(out.contains("serial"), "{out}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let results = v["results"].as_array().unwrap();
    let serial = results.iter().find(|r| r["scheme"] == "serial").unwrap();
    assert!(serial["txn_per_s"].as_f64().unwrap() > 0.0);
    assert!(serial["ratio_to_none"].as_f64().is_some());
    let db_dir = serial["runs"][0]["dir"].as_str().unwrap().to_string();
    let out = run_ok(braid().args(["recover", "--dir", &db_dir]));
    assert!(out.contains("transactions"), "{out}");
    let out = run_ok(braid().args(["inspect", "--dir", &db_dir, "--limit", "3"]));
    assert!(out.contains("stream 0"), "{out}");
}

#[test]
fn recover_refuses_a_directory_that_is_not_a_database() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("something"), b"x").unwrap();
    let out = braid()
        .args(["recover", "--dir", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a braid database"), "{err}");
}

#[test]
fn bench_rewind_word_transactions() {
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let json = dir.path().join("rewind.json");
    let out = run_ok(braid().args([
        "bench",
        "rewind",
        "--experiment",
        "word-tx",
        "--quick",
        "--runs",
        "1",
        "--json",
        json.to_str().unwrap(),
        "--plot",
        dir.path().to_str().unwrap(),
    ]));
    assert!(out.contains("1-word transactions"), "{out}");
    assert!(dir.path().join("rewind-word-tx.png").exists());
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(
        v["word_tx"]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["tx_per_sec"].as_f64().unwrap() > 0.0)
    );
}

#[test]
fn report_quick_smoke() {
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let out = run_ok(braid().args([
        "report",
        "--quick",
        "--only",
        "wj-fig4",
        "--out",
        dir.path().to_str().unwrap(),
    ]));
    assert!(out.contains("report written"), "{out}");
    let md = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    assert!(
        md.contains("Wang & Johnson") && md.contains("| tpcb |"),
        "{md}"
    );
    assert!(dir.path().join("plots/wj-fig4-tpcb.png").exists());
}

#[test]
fn crash_test_tpcc_consistency_after_power_failures() {
    for scheme in ["serial", "taurus"] {
        let out = run_ok(braid().args([
            "crash-test",
            "--workload",
            "tpcc",
            "--scheme",
            scheme,
            "--logging",
            "command",
            "--device",
            "pmem",
            "--mode",
            "power",
            "--rounds",
            "4",
            "--warehouses",
            "1",
            "--items",
            "2000",
            "--customers",
            "300",
            "--max-ms",
            "40",
        ]));
        assert!(out.contains("0 violations"), "{out}");
    }
}
