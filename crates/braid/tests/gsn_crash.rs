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
