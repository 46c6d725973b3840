//! The taurus scheme end to end through the `braid` command: short crash tests (kill -9 of a
//! child process and simulated power failures) over data and command logging, 2PL, OCC and MVCC,
//! 1, 2 and 4 streams, pmem and file devices, with and without record-LV compression and with
//! both replay plans; and bench --keep followed by recover on 1 and 2 threads.
//!
//! Longer runs: `braid crash-test --scheme taurus --logs 4 --threads 4 --rounds 500 ...`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{braid, run_ok};

/// `braid crash-test --scheme taurus` with `args`; asserts no violation and some commits.
fn crash(args: &[&str], env: &[(&str, &str)]) {
    let mut cmd = braid();
    cmd.args(["crash-test", "--scheme", "taurus"]).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = run_ok(&mut cmd);
    assert!(out.contains(" 0 violations"), "{out}");
    assert!(
        !out.contains(" 0 acknowledged commits"),
        "nothing was acknowledged: {out}"
    );
}

#[test]
fn power_pmem_data_2pl_two_streams() {
    crash(
        &[
            "--device", "pmem", "--mode", "power", "--logs", "2", "--rounds", "30", "--max-ms",
            "40",
        ],
        &[],
    );
}

#[test]
fn power_file_command_occ_four_streams() {
    crash(
        &[
            "--device",
            "file",
            "--mode",
            "power",
            "--logging",
            "command",
            "--cc",
            "occ",
            "--logs",
            "4",
            "--threads",
            "4",
        ],
        &[],
    );
}

/// MVCC (Section 4.4): command logging without write-after-read edges, TPC-C's consistency
/// conditions checked after every power failure.
#[test]
fn power_pmem_command_mvcc_two_streams_tpcc() {
    crash(
        &[
            "--workload",
            "tpcc",
            "--device",
            "pmem",
            "--mode",
            "power",
            "--logging",
            "command",
            "--cc",
            "mvcc",
            "--logs",
            "2",
            "--rounds",
            "12",
        ],
        &[],
    );
}

#[test]
fn kill_file_data_mvcc_two_streams() {
    crash(
        &[
            "--device", "file", "--mode", "kill", "--cc", "mvcc", "--logs", "2", "--rounds", "4",
        ],
        &[],
    );
}

#[test]
fn power_pmem_command_2pl_one_stream() {
    crash(
        &[
            "--device",
            "pmem",
            "--mode",
            "power",
            "--logging",
            "command",
            "--logs",
            "1",
            "--rounds",
            "30",
        ],
        &[],
    );
}

#[test]
fn power_file_data_occ_two_streams_compressed_parallel_replay() {
    crash(
        &[
            "--device",
            "file",
            "--mode",
            "power",
            "--cc",
            "occ",
            "--logs",
            "2",
            "--recovery-threads",
            "2",
            "--rounds",
            "20",
            "--lv-compress",
            "on",
            "--taurus-recovery",
            "parallel",
        ],
        &[],
    );
}

#[test]
fn power_pmem_command_occ_four_streams_compressed_serial_replay() {
    crash(
        &[
            "--device",
            "pmem",
            "--mode",
            "power",
            "--logging",
            "command",
            "--cc",
            "occ",
            "--logs",
            "4",
            "--threads",
            "4",
            "--lv-compress",
            "on",
            "--taurus-recovery",
            "serial",
        ],
        &[],
    );
}

#[test]
fn kill_pmem_command_2pl_two_streams() {
    crash(
        &[
            "--device",
            "pmem",
            "--mode",
            "kill",
            "--logging",
            "command",
            "--logs",
            "2",
            "--rounds",
            "3",
            "--max-ms",
            "150",
        ],
        &[],
    );
}

#[test]
fn kill_file_data_occ_four_streams() {
    crash(
        &[
            "--device",
            "file",
            "--mode",
            "kill",
            "--cc",
            "occ",
            "--logs",
            "4",
            "--threads",
            "4",
            "--rounds",
            "3",
            "--max-ms",
            "150",
        ],
        &[],
    );
}

#[test]
fn bench_keep_then_recover_on_one_and_two_threads() {
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let json = dir.path().join("bench.json");
    run_ok(braid().args([
        "bench",
        "--scheme",
        "taurus",
        "--logs",
        "2",
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
    ]));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let results = v["results"].as_array().unwrap();
    let taurus = results.iter().find(|r| r["scheme"] == "taurus").unwrap();
    assert!(taurus["txn_per_s"].as_f64().unwrap() > 0.0);
    let db_dir = taurus["runs"][0]["dir"].as_str().unwrap().to_string();
    for threads in ["1", "2"] {
        let out = run_ok(braid().args(["recover", "--dir", &db_dir, "--threads", threads]));
        assert!(out.contains("transactions"), "{out}");
    }
}
