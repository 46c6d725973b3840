//! Checkpoints through the `braid` command: `kill -9` and power failures while checkpoints
//! are taken every few milliseconds (recovery must start from a checkpoint and lose nothing
//! acknowledged), and `braid recover` reporting checkpoint loading and log replay apart.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{braid, run_ok};

/// Power rounds cut within a tenth of `--max-ms`, so they checkpoint more often.
fn crash_with_checkpoints(scheme: &str, device: &str, mode: &str, logging: &str) {
    let interval = if mode == "power" { "0.004" } else { "0.05" };
    let out = run_ok(braid().args([
        "crash-test",
        "--scheme",
        scheme,
        "--device",
        device,
        "--mode",
        mode,
        "--logging",
        logging,
        "--rounds",
        "4",
        "--max-ms",
        "400",
        "--rows",
        "5000",
        "--checkpoint-interval",
        interval,
    ]));
    assert!(out.contains(" 0 violations"), "{out}");
    assert!(
        out.contains("recoveries started from a checkpoint"),
        "no recovery used a checkpoint: {out}"
    );
}

#[test]
fn kill_during_checkpoints_taurus_file() {
    crash_with_checkpoints("taurus", "file", "kill", "data");
}

#[test]
fn kill_during_checkpoints_serial_pmem_command() {
    crash_with_checkpoints("serial", "pmem", "kill", "command");
}

#[test]
fn power_failure_during_checkpoints_gsn_pmem() {
    crash_with_checkpoints("gsn", "pmem", "power", "data");
}

#[test]
fn recover_reports_checkpoint_and_replay() {
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let json = dir.path().join("bench.json");
    run_ok(braid().args([
        "bench",
        "--scheme",
        "taurus",
        "--rows",
        "5000",
        "--threads",
        "2",
        "--seconds",
        "1",
        "--repeat",
        "1",
        "--checkpoint-interval",
        "0.2",
        "--keep",
        "--dir",
        dir.path().to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--csv",
        dir.path().join("bench.csv").to_str().unwrap(),
    ]));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let run = &v["results"][0]["runs"][0];
    assert!(run["checkpoints"].as_u64().unwrap() >= 1, "{run}");
    let db_dir = run["dir"].as_str().unwrap().to_string();
    let out = run_ok(braid().args(["recover", "--dir", &db_dir, "--threads", "2"]));
    assert!(out.contains("checkpoint:"), "{out}");
    assert!(out.contains("already in the checkpoint"), "{out}");
    assert!(!out.contains("FAILED"), "{out}");
}
