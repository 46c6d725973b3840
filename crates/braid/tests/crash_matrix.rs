//! `braid crash-test --all`: the short matrix CI runs — every scheme x logging kind x device
//! the engine accepts, under `kill -9` and simulated power failure, with background
//! checkpoints every 10 ms so crashes also land inside checkpoints and truncations.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::crash_ok;

#[test]
fn crash_test_all_short_matrix() {
    let v = crash_ok(&[
        "--all",
        "--kill-rounds",
        "3",
        "--power-rounds",
        "20",
        "--max-ms",
        "200",
        "--checkpoint-interval",
        "0.01",
    ]);
    let rows = v["combinations"].as_array().unwrap();
    // 28 combinations (with serial on RAID-0, and silor and plover: data logging on pmem and
    // on files), per-update records of every scheme that logs them (serial, aether, baseline
    // and gsn on pmem and files, nvdisk, pertxn), gsn with Remote Flush Avoidance on files
    // (per transaction and per update), and autonomous on files (data per transaction and per
    // update, and command), x kill and power.
    assert_eq!(rows.len(), 86);
    assert!(rows.iter().any(|r| r["logging"] == "data/upd"), "{v}");
    for s in [
        "silor",
        "plover",
        "aether",
        "baseline",
        "gsn+rfa",
        "autonomous",
    ] {
        assert!(rows.iter().any(|r| r["scheme"] == s), "{s}: {v}");
    }
    assert!(rows.iter().any(|r| r["device"] == "raid0x3"), "{v}");
    assert!(
        rows.iter()
            .any(|r| r["scheme"] == "autonomous" && r["logging"] == "command"),
        "{v}"
    );
    for r in rows {
        assert_eq!(r["violations"], 0, "{r}");
        assert!(
            r["acknowledged"].as_u64().unwrap() > 0,
            "nothing checked: {r}"
        );
    }
    let from_ckpt: u64 = rows
        .iter()
        .map(|r| r["from_checkpoint"].as_u64().unwrap())
        .sum();
    assert!(from_ckpt > 0, "no recovery started from a checkpoint");
}

/// The same matrix under the engine's multi-version concurrency control (records carry commit
/// timestamps; gsn, autonomous and plover refuse MVCC and are left out): 44 combinations.
#[test]
fn crash_test_all_short_matrix_mvcc() {
    let v = crash_ok(&[
        "--all",
        "--cc",
        "mvcc",
        "--kill-rounds",
        "2",
        "--power-rounds",
        "5",
        "--max-ms",
        "150",
    ]);
    let rows = v["combinations"].as_array().unwrap();
    assert_eq!(rows.len(), 44);
    assert!(
        rows.iter()
            .all(|r| r["scheme"] != "gsn" && r["scheme"] != "plover"),
        "{v}"
    );
}

/// The matrix recovered by two threads: the central log, Silo-R's and plover's single logs are
/// then read by both threads, each applying its share of the keys (`scheme/shared_scan.rs`),
/// and taurus and gsn replay in parallel.
#[test]
fn crash_test_all_short_matrix_two_recovery_threads() {
    let v = crash_ok(&[
        "--all",
        "--recovery-threads",
        "2",
        "--kill-rounds",
        "1",
        "--power-rounds",
        "5",
        "--max-ms",
        "150",
    ]);
    assert_eq!(v["params"]["recovery_threads"], 2, "{}", v["params"]);
    let rows = v["combinations"].as_array().unwrap();
    assert_eq!(rows.len(), 86);
    for r in rows {
        assert_eq!(r["violations"], 0, "{r}");
        assert!(
            r["acknowledged"].as_u64().unwrap() > 0,
            "nothing checked: {r}"
        );
    }
}
