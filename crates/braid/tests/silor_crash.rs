//! The silor scheme end to end through the `braid` command: crash tests of its recovery of
//! several streams window by window (`braid_wal`'s `scheme/silor/windows.rs`), with short
//! epochs so that each life has many windows: simulated power failures and kill -9 of a child
//! process, on files and pmem, with checkpoints cutting the streams, and the same database
//! recovered again and again (each open voids the epochs the crash lost) under TPC-B's
//! consistency conditions.
//!
//! Longer runs: `braid crash-test --scheme silor --logs 3 --recovery-threads 3 --rounds 500 ...`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::crash_ok_checked;

/// `braid crash-test --scheme silor --logging data` with 2 ms epochs and `args` (split at
/// whitespace); asserts no violation and some commits.
fn crash(args: &str) {
    let args: Vec<&str> = args.split_whitespace().collect();
    let silor = [
        "--scheme",
        "silor",
        "--logging",
        "data",
        "--scheme-opt",
        "silor.epoch_ms=2",
    ];
    crash_ok_checked(&[&silor[..], &args].concat());
}

#[test]
fn power_file_three_streams_three_recovery_threads_with_checkpoints() {
    crash(
        "--device file --mode power --logs 3 --threads 3 --recovery-threads 3 --cc occ \
         --checkpoint-interval 0.01 --rounds 20 --max-ms 150",
    );
}

#[test]
fn kill_pmem_two_streams_one_recovery_thread() {
    crash("--device pmem --mode kill --logs 2 --recovery-threads 1 --rounds 3");
}

#[test]
fn power_file_two_streams_same_db_tpcb() {
    crash(
        "--workload tpcb --device file --mode power --logs 2 --recovery-threads 2 --same-db \
         --rounds 12 --max-ms 150",
    );
}
