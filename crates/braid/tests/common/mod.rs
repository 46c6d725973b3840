//! Helpers shared by the `braid` command's end-to-end tests: running the binary, and running
//! its subcommands with their machine-readable output (`--json`) to assert on fields.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

/// The `braid` binary under test.
pub fn braid() -> Command {
    Command::new(env!("CARGO_BIN_EXE_braid"))
}

/// Run `cmd`, assert it succeeded (printing both streams if not), and return its stdout.
pub fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        out.status.success(),
        "failed: {cmd:?}\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    stdout
}

/// Run `braid args` expecting it to fail; returns its output.
pub fn run_failing(args: &[&str]) -> Output {
    let out = braid().args(args).output().expect("runs");
    assert!(
        !out.status.success(),
        "succeeded: {args:?}\nstdout:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    out
}

/// The JSON file at `path`.
pub fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `braid crash-test args --json FILE`: asserts the run succeeded and returns its summary.
pub fn crash_test(args: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("crash.json");
    run_ok(
        braid()
            .arg("crash-test")
            .args(args)
            .arg("--json")
            .arg(&json),
    );
    read_json(&json)
}

/// [`crash_test`] asserting that no round found a violation; returns the summary.
pub fn crash_ok(args: &[&str]) -> Value {
    let sum = crash_test(args);
    assert_eq!(sum["violations"], 0, "{sum}");
    if let Some(f) = sum.get("failures") {
        assert_eq!(f.as_array().map(Vec::len), Some(0), "{sum}");
    }
    sum
}

/// [`crash_ok`] asserting also that some commit was acknowledged (and so checked).
pub fn crash_ok_checked(args: &[&str]) -> Value {
    let sum = crash_ok(args);
    assert!(
        sum["acknowledged"].as_u64().unwrap() > 0,
        "nothing checked: {sum}"
    );
    sum
}

/// A short `braid bench` (2,000 YCSB rows, 2 threads, one 0.3 s run per configuration; an
/// option in `extra` replaces its default here) with `extra` options, its databases kept in
/// `dir`; returns the JSON results.
pub fn small_bench(dir: &Path, extra: &[&str]) -> Value {
    small_bench_printing(dir, extra).0
}

/// [`small_bench`], with what it printed.
pub fn small_bench_printing(dir: &Path, extra: &[&str]) -> (Value, String) {
    let json = dir.join("bench.json");
    let csv = dir.join("bench.csv");
    let defaults = [
        ("--rows", "2000"),
        ("--threads", "2"),
        ("--seconds", "0.3"),
        ("--repeat", "1"),
        ("--dir", dir.to_str().unwrap()),
        ("--json", json.to_str().unwrap()),
        ("--csv", csv.to_str().unwrap()),
    ];
    let mut cmd = braid();
    cmd.args(["bench", "--keep"]);
    for (flag, value) in defaults.iter().filter(|(f, _)| !extra.contains(f)) {
        cmd.args([flag, value]);
    }
    let out = run_ok(cmd.args(extra));
    (read_json(&json), out)
}

/// The result of `scheme` among bench results.
pub fn result<'a>(bench: &'a Value, scheme: &str) -> &'a Value {
    bench["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["scheme"] == scheme)
        .unwrap_or_else(|| panic!("no {scheme} result: {bench}"))
}

/// The database directory kept by the first run of `scheme`.
pub fn kept_db(bench: &Value, scheme: &str) -> String {
    result(bench, scheme)["runs"][0]["dir"]
        .as_str()
        .unwrap()
        .to_string()
}

/// `braid recover --dir db extra --json FILE`; returns the JSON report.
pub fn recover(db: &str, extra: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("recover.json");
    run_ok(
        braid()
            .args(["recover", "--dir", db])
            .args(extra)
            .arg("--json")
            .arg(&json),
    );
    read_json(&json)
}
