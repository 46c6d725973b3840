//! The `braid` command end to end: short forms of the crash tests (kill -9 of a child process
//! and simulated power failures), a tiny bench, recover and inspect.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::{
    braid, crash_ok, kept_db, read_json, recover, result, run_failing, run_ok, small_bench,
    small_bench_printing,
};

#[test]
fn crash_test_serial_file_kill() {
    crash_ok(&[
        "--scheme", "serial", "--device", "file", "--mode", "kill", "--rounds", "3", "--max-ms",
        "150",
    ]);
}

#[test]
fn crash_test_serial_pmem_kill_command_logging() {
    crash_ok(&[
        "--scheme",
        "serial",
        "--device",
        "pmem",
        "--mode",
        "kill",
        "--logging",
        "command",
        "--rounds",
        "3",
        "--max-ms",
        "150",
    ]);
}

#[test]
fn crash_test_serial_pmem_power() {
    let sum = crash_ok(&[
        "--scheme", "serial", "--device", "pmem", "--mode", "power", "--rounds", "40", "--max-ms",
        "30",
    ]);
    assert_eq!(sum["rounds"], 40, "{sum}");
    assert_eq!(
        (&sum["scheme"], &sum["device"], &sum["mode"]),
        (&"serial".into(), &"pmem".into(), &"power".into())
    );
}

#[test]
fn crash_test_serial_file_power_occ() {
    crash_ok(&[
        "--scheme", "serial", "--device", "file", "--mode", "power", "--rounds", "30", "--max-ms",
        "30", "--cc", "occ",
    ]);
}

/// `--round K` runs round K of the `--seed` run alone (what a failure's last line replays).
#[test]
fn crash_test_runs_a_single_round() {
    let sum = crash_ok(&[
        "--scheme", "serial", "--mode", "power", "--seed", "5", "--round", "7", "--max-ms", "30",
    ]);
    assert_eq!(sum["rounds"], 1, "{sum}");
}

#[test]
fn bench_recover_inspect() {
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let v = small_bench(dir.path(), &[]);
    let serial = result(&v, "serial");
    assert!(serial["txn_per_s"].as_f64().unwrap() > 0.0);
    assert!(serial["ratio_to_none"].as_f64().is_some());
    // The binary starts its heap while it has one thread, so mimalloc got the 2 MiB pages asked
    // for (`braid_pmem::heap`), and the result says so.
    assert!(
        v["machine"]["heap"]
            .as_str()
            .is_some_and(|h| h.starts_with("mimalloc, 2 MiB pages asked")),
        "{}",
        v["machine"]
    );
    // The CSV has one line per configuration under the header.
    let csv = std::fs::read_to_string(dir.path().join("bench.csv")).unwrap();
    assert!(
        csv.starts_with("workload,scheme,variant,logging,records,device,threads,"),
        "{csv}"
    );
    assert_eq!(
        csv.lines().count(),
        v["results"].as_array().unwrap().len() + 1,
        "{csv}"
    );
    let db_dir = kept_db(&v, "serial");
    let r = recover(&db_dir, &[]);
    assert_eq!(r["scheme"], "serial", "{r}");
    assert!(r["txns"].as_u64().unwrap() > 0, "{r}");
    assert!(r["consistency"].is_null(), "{r}");
    let out = run_ok(braid().args(["inspect", "--dir", &db_dir, "--limit", "3", "--json"]));
    let i: serde_json::Value = serde_json::from_str(&out).unwrap();
    let streams = i["streams"].as_array().unwrap();
    assert_eq!(streams[0]["stream"], 0, "{i}");
    assert!(streams[0]["records"].as_u64().unwrap() > 0, "{i}");
    assert!(
        streams[0]["first_records"].as_array().unwrap().len() <= 3,
        "{i}"
    );
}

/// On a disk (not tmpfs), a file-device run measures the disk's commit floor first, and the
/// result carries the median of each run's p50 less its own floor.
#[test]
fn bench_on_a_disk_measures_the_floor() {
    let dir = tempfile::tempdir().unwrap();
    let v = small_bench(
        dir.path(),
        &[
            "--scheme",
            "serial",
            "--device",
            "file",
            "--threads",
            "1",
            "--inflight",
            "1",
            "--repeat",
            "3",
            "--seconds",
            "0.2",
        ],
    );
    let r = result(&v, "serial");
    assert!(r["floor_p50_us"].as_f64().unwrap() > 0.0, "{r}");
    let mut gaps: Vec<f64> = r["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| run["p50_us"].as_f64().unwrap() - run["disk_floor"]["p50_us"].as_f64().unwrap())
        .collect();
    assert_eq!(gaps.len(), 3, "{r}");
    gaps.sort_by(f64::total_cmp);
    let gap = r["floor_gap_us"].as_f64().unwrap();
    assert!(
        (gap - gaps[1]).abs() < 1e-6,
        "floor_gap_us {gap}, per-run gaps {gaps:?}"
    );
}

/// Every file below `dir` with its bytes' checksum.
fn checksums(dir: &std::path::Path) -> std::collections::BTreeMap<std::path::PathBuf, u32> {
    let mut out = std::collections::BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.path().is_dir() {
                todo.push(e.path());
            } else {
                out.insert(e.path(), crc32c::crc32c(&std::fs::read(e.path()).unwrap()));
            }
        }
    }
    out
}

/// A database another process holds (here: this test holds its lock, as a writer does):
/// `braid recover` refuses it and names the holder; `--read-only` recovers it and `inspect`
/// reads it, neither changing a byte; once released, it recovers as usual.
#[test]
fn recover_and_inspect_of_a_database_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let v = small_bench(dir.path(), &["--scheme", "serial", "--device", "file"]);
    let db_dir = kept_db(&v, "serial");
    let db = std::path::Path::new(&db_dir);
    let lock = std::fs::File::open(db.join("LOCK")).unwrap();
    lock.try_lock().unwrap();
    let before = checksums(db);
    let out = run_failing(&["recover", "--dir", &db_dir]);
    let err = String::from_utf8_lossy(&out.stderr);
    let me = format!("in use by process {}", std::process::id());
    assert!(err.contains(&me), "{err}");
    assert!(err.contains("`braid recover --read-only`"), "{err}");
    let r = recover(&db_dir, &["--read-only"]);
    assert_eq!(r["read_only"], true, "{r}");
    assert!(r["txns"].as_u64().unwrap() > 0, "{r}");
    assert!(r["consistency"].is_null(), "{r}");
    let out = run_ok(braid().args(["inspect", "--dir", &db_dir, "--json"]));
    let i: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(i["writer_pid"], std::process::id(), "{i}");
    assert!(i["streams"][0]["records"].as_u64().unwrap() > 0, "{i}");
    assert_eq!(
        checksums(db),
        before,
        "reading a database in use changed it"
    );
    drop(lock);
    let r = recover(&db_dir, &[]);
    assert_eq!(r["read_only"], false, "{r}");
}

#[test]
fn recover_refuses_a_directory_that_is_not_a_database() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("something"), b"x").unwrap();
    let out = run_failing(&["recover", "--dir", dir.path().to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a braid database"), "{err}");
}

#[test]
fn bench_rewind_word_transactions() {
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let json = dir.path().join("rewind.json");
    run_ok(braid().args([
        "bench",
        "rewind",
        "--experiment",
        "word-tx",
        "--quick",
        "--runs",
        "1",
        "--json",
        json.to_str().unwrap(),
        "--plot",
        dir.path().to_str().unwrap(),
    ]));
    assert!(dir.path().join("rewind-word-tx.png").exists());
    let v = read_json(&json);
    let rows = v["word_tx"]["rows"].as_array().unwrap();
    assert!(!rows.is_empty(), "{v}");
    assert!(rows.iter().all(|r| r["tx_per_sec"].as_f64().unwrap() > 0.0));
}

/// `report --scaling` prints its plan before running, runs only the subset's figures (here
/// one of them, by `--only`), and says in the summary and the JSON that it was the subset.
#[test]
fn report_scaling_prints_its_plan_and_runs_only_its_figures() {
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let out = run_ok(braid().args([
        "report",
        "--quick",
        "--scaling",
        "--only",
        "taurus-fig6",
        "--out",
        dir.path().to_str().unwrap(),
    ]));
    assert!(
        out.starts_with("Scaling subset on") && out.contains("(taurus-fig6 "),
        "{out}"
    );
    let all = read_json(&dir.path().join("data/all.json"));
    assert!(
        all["scaling"].as_str().unwrap().contains("estimated"),
        "{all}"
    );
    let figures: Vec<&str> = all["experiments"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["experiment"].as_str())
        .collect();
    assert_eq!(figures, ["taurus-fig6"]);
    let summary = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    assert!(
        summary.contains("`braid report --quick --scaling`"),
        "{summary}"
    );
}

#[test]
fn report_quick_smoke() {
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    run_ok(braid().args([
        "report",
        "--quick",
        "--only",
        "wj-fig4",
        "--out",
        dir.path().to_str().unwrap(),
    ]));
    let all = read_json(&dir.path().join("data/all.json"));
    let entries = all["experiments"].as_array().unwrap();
    let runs: Vec<&str> = entries.iter().filter_map(|e| e["run"].as_str()).collect();
    assert_eq!(runs, ["wj-fig4-tatp", "wj-fig4-tpcb", "wj-fig4-payment"]);
    // One verdict for the figure: a level computed from the claim's parts, each measured.
    let verdicts: Vec<&serde_json::Value> = entries
        .iter()
        .filter(|e| e["experiment"] == "wj-fig4")
        .collect();
    assert_eq!(verdicts.len(), 1, "{all}");
    let v = &verdicts[0]["verdict"];
    let levels = ["agrees", "agrees_in_direction", "differs", "not_measured"];
    assert!(levels.contains(&v["level"].as_str().unwrap()), "{v}");
    let parts = v["parts"].as_array().unwrap();
    assert!(
        parts
            .iter()
            .any(|p| p["claim"].as_str().unwrap().contains("TX-D")
                && p["measured"].as_str().is_some()
                && p["holds"].is_boolean()),
        "{v}"
    );
    let tpcb = read_json(&dir.path().join("data/wj-fig4-tpcb.json"));
    let configs: Vec<(&str, &str)> = tpcb["results"]
        .as_array()
        .unwrap()
        .iter()
        .inspect(|r| assert_eq!(r["workload"], "tpcb", "{r}"))
        .map(|r| {
            (
                r["scheme"].as_str().unwrap(),
                r["variant"].as_str().unwrap(),
            )
        })
        .collect();
    for want in [
        ("none", ""),
        ("baseline", ""),
        ("aether", ""),
        ("gsn", "TX-D"),
        ("gsn", "PG-D 1.2us"),
    ] {
        assert!(configs.contains(&want), "{want:?} not in {configs:?}");
    }
    // Shore-MT's log: every scheme of Fig. 4 logs per update.
    for r in tpcb["results"].as_array().unwrap() {
        assert_eq!(r["records"], "update", "{r}");
    }
    let summary = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    assert!(summary.contains("**Verdict:**"), "{summary}");
    assert!(dir.path().join("summary.md").exists());
    assert!(dir.path().join("plots/wj-fig4-tpcb.png").exists());
}

#[test]
fn crash_test_tpcc_consistency_after_power_failures() {
    for scheme in ["serial", "taurus"] {
        crash_ok(&[
            "--workload",
            "tpcc",
            "--scheme",
            scheme,
            "--logging",
            "command",
            "--device",
            "pmem",
            "--mode",
            "power",
            "--rounds",
            "4",
            "--warehouses",
            "1",
            "--items",
            "2000",
            "--customers",
            "300",
            "--max-ms",
            "40",
        ]);
    }
}

/// The default window is 256 commits, widened for Silo-R to cover two of its epochs at a
/// million commits per second per worker; `--inflight` overrides both. The value used is in
/// each result's parameters.
#[test]
fn bench_sizes_the_window_to_how_a_scheme_acknowledges() {
    let dir = tempfile::tempdir().unwrap();
    let common = [
        "--scheme",
        "serial,silor",
        "--cc",
        "occ",
        "--threads",
        "1",
        "--seconds",
        "0.2",
        "--scheme-opt",
        "silor.epoch_ms=5",
    ];
    let v = small_bench(dir.path(), &common);
    assert_eq!(result(&v, "serial")["params"]["inflight"], 256, "{v}");
    assert_eq!(result(&v, "silor")["params"]["inflight"], 10_000, "{v}");
    let dir = tempfile::tempdir().unwrap();
    let mut args = common.to_vec();
    args.extend(["--inflight", "7"]);
    let v = small_bench(dir.path(), &args);
    assert_eq!(result(&v, "serial")["params"]["inflight"], 7, "{v}");
    assert_eq!(result(&v, "silor")["params"]["inflight"], 7, "{v}");
}

/// `--commits N` ends a run once its workers committed their shares of N (rounded up), long
/// before `--seconds`: the log recovery replays holds exactly that many transactions (TPC-B:
/// every transaction writes), and the limit is recorded; so with the transactions drawn
/// before the run (`--pregenerate`, fewer than a worker commits, so taken again).
#[test]
fn bench_commits_bounds_the_transactions_in_the_log() {
    for (scheme, extra) in [
        ("serial", &[][..]),
        ("silor", &["--cc", "occ"][..]),
        ("serial", &["--pregenerate", "100"][..]),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut args = vec![
            "--workload",
            "tpcb",
            "--scheme",
            scheme,
            "--device",
            "file",
            "--threads",
            "3",
            "--commits",
            "1001",
            "--seconds",
            "60",
        ];
        args.extend(extra);
        let v = small_bench(dir.path(), &args);
        let r = result(&v, scheme);
        assert_eq!(r["params"]["commits"], 1001, "{v}");
        let run = &r["runs"][0];
        assert_eq!(run["commits"], 1002, "{scheme}: 3 workers of 334: {run}");
        assert!(run["seconds"].as_f64().unwrap() < 30.0, "{scheme}: {run}");
        let rec = recover(&kept_db(&v, scheme), &["--read-only"]);
        assert_eq!(rec["txns"], 1002, "{scheme}: {rec}");
    }
}

/// A database benched on a paced device records its pace, and `braid recover` reads the log
/// back at that speed (a lower bound a paced device cannot beat), naming the emulation; asked
/// for `--device-mbps 0` it recovers at the devices' own speed.
#[test]
fn recover_reads_a_paced_log_at_the_device_speed() {
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let v = small_bench(
        dir.path(),
        &[
            "--workload",
            "tpcb",
            "--scheme",
            "serial",
            "--device",
            "file",
            "--device-mbps",
            "2",
            "--branches",
            "1",
            "--accounts-per-branch",
            "1000",
            "--threads",
            "1",
            "--commits",
            "3000",
            "--seconds",
            "30",
        ],
    );
    let db_dir = kept_db(&v, "serial");
    let r = recover(&db_dir, &[]);
    let bytes = r["bytes"].as_f64().unwrap();
    let secs = r["seconds"].as_f64().unwrap();
    assert!(bytes > 50_000.0, "{r}");
    assert!(
        secs >= bytes / 2e6,
        "{bytes} bytes recovered in {secs} s, faster than 2 MB/s: {r}"
    );
    let e = r["emulation"].as_str().unwrap_or_default();
    assert!(e.contains("device speed emulated: 2 MB/s"), "{r}");
    let free = recover(&db_dir, &["--read-only", "--device-mbps", "0"]);
    let e = free["emulation"].as_str().unwrap_or_default();
    assert!(!e.contains("device speed"), "{free}");
}

/// `--pregenerate N` draws N transactions per worker before each run's clock starts and
/// takes them in turn, cycling when the run outlasts them (said under the table); N is in
/// each result's parameters (and the CSV's), beside YCSB's update mode, and the log of such a
/// run recovers (YCSB's increments under command logging; TPC-B's in
/// `bench_commits_bounds_the_transactions_in_the_log`).
#[test]
fn bench_pregenerate_draws_before_the_clock_and_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let (v, out) = small_bench_printing(
        dir.path(),
        &[
            "--scheme",
            "serial",
            "--device",
            "file",
            "--logging",
            "command",
            "--ycsb-update",
            "increment",
            "--pregenerate",
            "50",
        ],
    );
    let r = result(&v, "serial");
    assert_eq!(r["params"]["pregenerate"], 50, "{r}");
    assert_eq!(r["params"]["workload"]["update"], "increment", "{r}");
    let drawn = r["runs"][0]["most_drawn_per_worker"].as_u64().unwrap();
    assert!(drawn > 50, "{r}");
    assert!(out.contains("50 per worker"), "{out}");
    assert!(out.contains("times over"), "{out}");
    let csv = std::fs::read_to_string(dir.path().join("bench.csv")).unwrap();
    assert!(
        csv.contains("\"\"pregenerate\"\":50"),
        "the CSV's params: {csv}"
    );
    let rec = recover(&kept_db(&v, "serial"), &["--read-only"]);
    assert!(rec["txns"].as_u64().unwrap() > 0, "{rec}");
}
