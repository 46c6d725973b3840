//! Checkpoints through the `braid` command: `kill -9` and power failures while checkpoints
//! are taken every few milliseconds (recovery must start from a checkpoint and lose nothing
//! acknowledged), and `braid recover` reporting checkpoint loading and log replay apart.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::{crash_ok, kept_db, recover, small_bench};

/// Power rounds cut within a tenth of `--max-ms`, so they checkpoint more often.
fn crash_with_checkpoints(scheme: &str, device: &str, mode: &str, logging: &str) {
    let interval = if mode == "power" { "0.004" } else { "0.05" };
    let sum = crash_ok(&[
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
    ]);
    assert!(
        sum["from_checkpoint"].as_u64().unwrap() > 0,
        "no recovery used a checkpoint: {sum}"
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
    let v = small_bench(
        dir.path(),
        &[
            "--scheme",
            "taurus",
            "--rows",
            "5000",
            "--seconds",
            "1",
            "--checkpoint-interval",
            "0.2",
        ],
    );
    let run = &v["results"][0]["runs"][0];
    assert!(run["checkpoints"].as_u64().unwrap() >= 1, "{run}");
    let r = recover(&kept_db(&v, "taurus"), &["--threads", "2"]);
    assert!(r["checkpoint"]["epoch"].as_u64().unwrap() > 0, "{r}");
    assert!(r["covered"].is_u64(), "{r}");
    assert!(r["consistency"].is_null(), "{r}");
}

/// `kill -9` in the middle of automatic checkpoints triggered by log size, as the library's
/// default takes them (`--checkpoint-log-ratio 1`, with a 1 MiB threshold instead of 16 MiB so
/// a short run crosses it): every round waits until the child is writing a checkpoint file and
/// kills it then; recovery loses nothing acknowledged.
#[test]
fn kill_in_the_middle_of_log_size_checkpoints() {
    let sum = crash_ok(&[
        "--scheme",
        "serial",
        "--device",
        "file",
        "--mode",
        "kill",
        "--rounds",
        "3",
        "--min-ms",
        "100",
        "--max-ms",
        "300",
        "--rows",
        "20000",
        "--checkpoint-log-mb",
        "1",
        "--checkpoint-log-ratio",
        "1",
        "--kill-in-checkpoint",
    ]);
    assert!(sum["acknowledged"].as_u64().unwrap() > 0, "{sum}");
    assert_eq!(sum["rounds"].as_u64(), Some(3), "{sum}");
    // Each kill waits for a checkpoint being written beside a complete one: every recovery
    // starts from a checkpoint and passes over the half-written one.
    assert_eq!(
        sum["from_checkpoint"].as_u64(),
        Some(3),
        "a recovery did not start from a checkpoint: {sum}"
    );
}
