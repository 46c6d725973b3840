//! `pertxn` (NV-Logging) and `nvdisk` end to end through the `braid` command: short forms of
//! the crash tests (simulated power failures with both flush policies and both logging kinds,
//! kill -9 of a child process) and a tiny bench of none, nvdisk and pertxn.
//!
//! Longer runs (not part of `cargo test`):
//! `braid crash-test --scheme pertxn --device pmem --mode power --rounds 500 --pertxn-flush commit`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::{crash_ok, crash_ok_checked, result, run_failing, small_bench};

fn power(extra: &[&str]) {
    let base = [
        "--scheme", "pertxn", "--device", "pmem", "--mode", "power", "--rounds", "25", "--max-ms",
        "30",
    ];
    crash_ok_checked(&[&base[..], extra].concat());
}

#[test]
fn crash_test_pertxn_power_flush_on_insert() {
    power(&["--pertxn-flush", "insert"]);
}

#[test]
fn crash_test_pertxn_power_flush_on_commit_command_logging() {
    power(&["--pertxn-flush", "commit", "--logging", "command"]);
}

#[test]
fn crash_test_pertxn_power_occ_small_slots() {
    // 128-byte slots: most transactions span several objects.
    power(&[
        "--cc",
        "occ",
        "--pertxn-slot-bytes",
        "128",
        "--pertxn-truncate",
        "64",
    ]);
}

#[test]
fn crash_test_pertxn_kill() {
    crash_ok(&[
        "--scheme", "pertxn", "--device", "pmem", "--mode", "kill", "--rounds", "3", "--max-ms",
        "150",
    ]);
}

#[test]
fn crash_test_nvdisk_kill_and_power() {
    crash_ok(&[
        "--scheme", "nvdisk", "--device", "pmem", "--mode", "kill", "--rounds", "2", "--max-ms",
        "150",
    ]);
    crash_ok(&[
        "--scheme", "nvdisk", "--mode", "power", "--rounds", "15", "--max-ms", "30",
    ]);
}

#[test]
fn bench_none_nvdisk_pertxn() {
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let v = small_bench(
        dir.path(),
        &[
            "--scheme",
            "none,nvdisk,pertxn",
            "--ring-mb",
            "4",
            "--pertxn-flush",
            "commit",
            "--nvm-delay-ns",
            "100",
        ],
    );
    for scheme in ["nvdisk", "pertxn"] {
        let r = result(&v, scheme);
        assert!(r["txn_per_s"].as_f64().unwrap() > 0.0, "{scheme}: {r}");
        assert!(r["ratio_to_none"].as_f64().is_some(), "{scheme}: {r}");
    }
}

/// A configuration no database can be opened with (pertxn keeps its log in persistent memory)
/// is refused once, before any round, with the reason: not run and counted as violations.
#[test]
fn crash_test_refuses_pertxn_on_files_up_front() {
    let out = run_failing(&[
        "crash-test",
        "--scheme",
        "pertxn",
        "--device",
        "file",
        "--mode",
        "kill",
        "--rounds",
        "8",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot crash-test this configuration")
            && stderr.contains("persistent memory"),
        "{stderr}"
    );
    assert!(!stdout.contains("violations"), "{stdout}");
}

/// A scheme option the scheme does not have is refused, naming the options it has.
#[test]
fn unknown_scheme_option_is_refused_with_the_known_ones() {
    let out = run_failing(&[
        "bench",
        "--scheme",
        "taurus",
        "--scheme-opt",
        "taurus.no_such=1",
        "--seconds",
        "0.1",
        "--repeat",
        "1",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no option \"no_such\"") && stderr.contains("delta_kb"),
        "{stderr}"
    );
}
