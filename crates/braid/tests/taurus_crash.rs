//! The taurus scheme end to end through the `braid` command: short crash tests (kill -9 of a
//! child process and simulated power failures) over data and command logging, 2PL, OCC and MVCC,
//! 1, 2 and 4 streams, pmem and file devices, with and without record-LV compression and with
//! both replay plans; and bench --keep followed by recover on 1 and 2 threads.
//!
//! Longer runs: `braid crash-test --scheme taurus --logs 4 --threads 4 --rounds 500 ...`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::{crash_ok_checked, kept_db, recover, result, small_bench};

/// `braid crash-test --scheme taurus` with `args` (split at whitespace); asserts no violation
/// and some commits.
fn crash(args: &str) {
    let args: Vec<&str> = args.split_whitespace().collect();
    crash_ok_checked(&[&["--scheme", "taurus"][..], &args].concat());
}

#[test]
fn power_pmem_data_2pl_two_streams() {
    crash("--device pmem --mode power --logs 2 --rounds 30 --max-ms 40");
}

#[test]
fn power_file_command_occ_four_streams() {
    crash("--device file --mode power --logging command --cc occ --logs 4 --threads 4");
}

/// MVCC (Section 4.4): command logging without write-after-read edges, TPC-C's consistency
/// conditions checked after every power failure.
#[test]
fn power_pmem_command_mvcc_two_streams_tpcc() {
    crash(
        "--workload tpcc --device pmem --mode power --logging command --cc mvcc --logs 2 --rounds 12",
    );
}

#[test]
fn kill_file_data_mvcc_two_streams() {
    crash("--device file --mode kill --cc mvcc --logs 2 --rounds 4");
}

/// Workers spread over more streams than there are workers, each stream on its own paced
/// device (the I/O-bound regime of the report), and a kill -9 of the same.
#[test]
fn spread_over_four_paced_streams_with_two_workers() {
    let common = "--device file --logs 4 --threads 2 --scheme-opt taurus.spread=on \
                  --device-mbps 50 --device-sync-us 20 --lv-compress on";
    crash(&format!(
        "{common} --mode power --logging command --rounds 12"
    ));
    crash(&format!("{common} --mode kill --logging data --rounds 3"));
}

#[test]
fn power_pmem_command_2pl_one_stream() {
    crash("--device pmem --mode power --logging command --logs 1 --rounds 30");
}

#[test]
fn power_file_data_occ_two_streams_compressed_parallel_replay() {
    crash(
        "--device file --mode power --cc occ --logs 2 --recovery-threads 2 --rounds 20 --lv-compress on --taurus-recovery parallel",
    );
}

#[test]
fn power_file_data_2pl_three_streams_compressed_shares_replay() {
    crash(
        "--device file --mode power --logs 3 --threads 3 --recovery-threads 2 --rounds 20 --lv-compress on --taurus-recovery shares",
    );
}

#[test]
fn kill_pmem_data_occ_two_streams_shares_replay() {
    crash(
        "--device pmem --mode kill --cc occ --logs 2 --recovery-threads 3 --rounds 3 --max-ms 150 --taurus-recovery shares",
    );
}

#[test]
fn power_pmem_command_occ_four_streams_compressed_serial_replay() {
    crash(
        "--device pmem --mode power --logging command --cc occ --logs 4 --threads 4 --lv-compress on --taurus-recovery serial",
    );
}

#[test]
fn kill_pmem_command_2pl_two_streams() {
    crash("--device pmem --mode kill --logging command --logs 2 --rounds 3 --max-ms 150");
}

#[test]
fn kill_file_data_occ_four_streams() {
    crash("--device file --mode kill --cc occ --logs 4 --threads 4 --rounds 3 --max-ms 150");
}

#[test]
fn bench_keep_then_recover_on_one_and_two_threads() {
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let v = small_bench(dir.path(), &["--scheme", "taurus", "--logs", "2"]);
    assert!(result(&v, "taurus")["txn_per_s"].as_f64().unwrap() > 0.0);
    let db_dir = kept_db(&v, "taurus");
    for threads in ["1", "2"] {
        let r = recover(&db_dir, &["--threads", threads]);
        assert_eq!(r["threads"].as_u64(), Some(threads.parse().unwrap()), "{r}");
        assert!(r["txns"].as_u64().unwrap() > 0, "{r}");
    }
}
