//! The TPC-B, account-update, YCSB A/B and kill workloads end to end through the binary, with
//! tiny tables and short runs: every transactional system, in its default and (where it has
//! one) its tuned variant, passes its self-check after a reopen with every measured field in
//! its rows, and the kill workload kills its child under load, reopens and finds every
//! acknowledged transaction.

use std::path::Path;

use anyhow::{Context as _, Result};
use serde_json::Value;

mod common;
use common::{run_peers, scratch};

/// Every transactional system and variant: (name, variant).
const SYSTEMS: [(&str, &str); 10] = [
    ("braid-engine serial", "default"),
    ("braid-engine serial tuned", "tuned"),
    ("braid-engine taurus", "default"),
    ("sqlite", "default"),
    ("sqlite tuned", "tuned"),
    ("redb", "default"),
    ("fjall", "default"),
    ("fjall tuned", "tuned"),
    ("rocksdb", "default"),
    ("rocksdb tuned", "tuned"),
];

/// Run the binary with `args` (data and results under `tmp`) and return its peers.json.
fn peers(tmp: &Path, args: &[&str]) -> Result<Value> {
    Ok(run_peers(tmp, args)?.1)
}

fn rows<'a>(json: &'a Value, array: &str) -> Result<&'a Vec<Value>> {
    json[array]
        .as_array()
        .with_context(|| format!("{array} in {json}"))
}

#[test]
fn tpcb_passes_its_self_check_on_every_system() -> Result<()> {
    let tmp = scratch("tpcb-all")?;
    let json = peers(
        &tmp,
        &[
            "--workloads",
            "tpcb",
            "--threads",
            "1,3",
            "--seconds",
            "0.3",
            "--repeat",
            "1",
            "--accounts-per-branch",
            "100",
        ],
    )?;
    let runs = rows(&json, "runs")?;
    for (system, variant) in SYSTEMS {
        let mine: Vec<_> = runs.iter().filter(|r| r["system"] == system).collect();
        let points: Vec<(u64, u64)> = mine
            .iter()
            .filter_map(|r| Some((r["threads"].as_u64()?, r["branches"].as_u64()?)))
            .collect();
        assert_eq!(points.len(), 3, "{system}: {points:?}");
        for p in [(1, 1), (3, 3), (3, 1)] {
            assert!(
                points.contains(&p),
                "{system}: no point {p:?} in {points:?}"
            );
        }
        for r in mine {
            assert_eq!(r["workload"], "tpcb");
            assert_eq!(r["variant"], variant, "{r}");
            assert_eq!(r["valid"], true, "{r}");
            assert!(r["ops"].as_u64().is_some_and(|n| n > 0), "{r}");
            for field in [
                "per_s",
                "p50_us",
                "p99_us",
                "mean_us",
                "thread_min_per_s",
                "thread_max_per_s",
                "syncs_per_s",
                "aborts_per_s",
                "seconds",
            ] {
                assert!(r[field].as_f64().is_some(), "{system}: no {field} in {r}");
            }
            assert!(r["late_ops"].as_u64().is_some(), "{r}");
            assert!(r["retries"].as_u64().is_some(), "{r}");
            // The threads' rates bound their sum (a thread may get none in: SQLite's busy
            // handler lets one writer starve the others).
            let n = r["threads"].as_f64().unwrap_or(0.0);
            let (lo, hi, all) = (
                r["thread_min_per_s"].as_f64().unwrap_or(f64::NAN),
                r["thread_max_per_s"].as_f64().unwrap_or(f64::NAN),
                r["per_s"].as_f64().unwrap_or(f64::NAN),
            );
            assert!(
                lo * n <= all * (1.0 + 1e-9) && all <= hi * n * (1.0 + 1e-9) && hi > 0.0,
                "{r}"
            );
        }
    }
    assert_eq!(json["failures"].as_array().map(Vec::len), Some(0));
    std::fs::remove_dir_all(&tmp)?;
    Ok(())
}

#[test]
fn account_update_and_ycsb_a_and_b_are_named_rows() -> Result<()> {
    let tmp = scratch("named-rows")?;
    let json = peers(
        &tmp,
        &[
            "--workloads",
            "account-update,ycsb-a,ycsb-b",
            "--systems",
            "braid-engine serial,sqlite",
            "--threads",
            "2",
            "--seconds",
            "0.2",
            "--repeat",
            "1",
            "--accounts",
            "100",
            "--ycsb-rows",
            "100",
        ],
    )?;
    let runs = rows(&json, "runs")?;
    let mut names: Vec<&str> = runs.iter().filter_map(|r| r["workload"].as_str()).collect();
    names.dedup();
    assert_eq!(names, ["account-update", "ycsb-a", "ycsb-b"]);
    // Each workload ran on both systems in both variants.
    for w in ["account-update", "ycsb-a", "ycsb-b"] {
        let mut labels: Vec<(&str, &str)> = runs
            .iter()
            .filter(|r| r["workload"] == w)
            .filter_map(|r| Some((r["system"].as_str()?, r["variant"].as_str()?)))
            .collect();
        labels.sort_unstable();
        assert_eq!(
            labels,
            [
                ("braid-engine serial", "default"),
                ("braid-engine serial tuned", "tuned"),
                ("sqlite", "default"),
                ("sqlite tuned", "tuned")
            ],
            "{w}"
        );
    }
    let described: Vec<&str> = rows(&json, "workloads")?
        .iter()
        .filter_map(|w| w["name"].as_str())
        .collect();
    assert_eq!(described, ["account-update", "ycsb-a", "ycsb-b"]);
    std::fs::remove_dir_all(&tmp)?;
    Ok(())
}

#[test]
fn kill_under_load_loses_nothing_on_braid_and_sqlite_in_both_variants() -> Result<()> {
    let tmp = scratch("kill")?;
    let json = peers(
        &tmp,
        &[
            "--workloads",
            "kill",
            "--systems",
            "braid-engine serial,sqlite",
            "--kill-rounds",
            "2",
            "--kill-threads",
            "4",
            "--kill-after-ms",
            "150,300",
            "--accounts-per-branch",
            "100",
        ],
    )?;
    let kill = rows(&json, "kill")?;
    let systems: Vec<(&str, &str)> = kill
        .iter()
        .filter_map(|r| Some((r["system"].as_str()?, r["variant"].as_str()?)))
        .collect();
    assert_eq!(
        systems,
        [
            ("braid-engine serial", "default"),
            ("braid-engine serial tuned", "tuned"),
            ("sqlite", "default"),
            ("sqlite tuned", "tuned")
        ]
    );
    for k in kill {
        assert_eq!(k["workload"], "kill");
        assert_eq!(k["lost"], 0, "{k}");
        let rounds = k["rounds"].as_array().context("rounds")?;
        assert_eq!(rounds.len(), 2, "{k}");
        for r in rounds {
            // The kill came under load: every round acknowledged transactions.
            assert!(r["acked"].as_u64().is_some_and(|n| n > 0), "{r}");
            assert!(r["reopen_ms"].as_f64().is_some_and(|ms| ms > 0.0), "{r}");
        }
        // The second round's reopen found the first round's transactions too.
        let history = |i: usize| rounds[i]["history"].as_u64().unwrap_or(0);
        assert!(history(1) > history(0), "{k}");
    }
    assert!(tmp.join("out/peers-kill.csv").exists());
    std::fs::remove_dir_all(&tmp)?;
    Ok(())
}
