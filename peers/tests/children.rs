//! The reopen and memory workloads end to end, with tiny counts: the binary starts its child
//! processes, kills the reopen child with SIGKILL, reopens, checks the balances and writes
//! the rows.

use std::process::Command;

use anyhow::{Context as _, Result};

mod common;
use common::{num, run_peers, scratch};

#[test]
fn reopen_after_kill_and_memory_per_row() -> Result<()> {
    let tmp = scratch("children")?;
    let (stdout, json) = run_peers(
        &tmp,
        &[
            "--workloads",
            "reopen,memory",
            "--systems",
            "sqlite,braid-engine serial",
            "--variants",
            "default",
            "--accounts",
            "100",
            "--reopen-txns",
            "300",
            "--reopen-threads",
            "4",
            "--memory-rows",
            "1000",
        ],
    )?;
    assert!(stdout.contains("Reopen after kill -9"), "{stdout}");
    assert!(stdout.contains("Resident memory per row"), "{stdout}");

    let reopen = json["reopen"].as_array().context("reopen")?;
    let systems: Vec<&str> = reopen.iter().filter_map(|r| r["system"].as_str()).collect();
    assert_eq!(systems, ["braid-engine serial", "sqlite"]);
    for r in reopen {
        assert_eq!(r["txns"], 300);
        assert!(num(r, "reopen_ms")? > 0.0, "{r}");
        assert!(num(r, "log_bytes")? > 0.0, "{r}");
    }
    // braid commits durably from --reopen-threads, SQLite under its relaxed setting from one.
    assert_eq!(reopen[0]["load_durable"], true);
    assert_eq!(reopen[0]["threads"], 4);
    assert_eq!(reopen[1]["load_durable"], false);
    assert_eq!(reopen[1]["threads"], 1);
    let memory = json["memory"].as_array().context("memory")?;
    assert_eq!(memory.len(), 2);
    assert_eq!(memory[0]["in_memory"], true);
    assert_eq!(memory[1]["in_memory"], false);
    for m in memory {
        assert_eq!(m["rows"], 1000);
        assert!(num(m, "rss_after_bytes")? > 0.0, "{m}");
    }
    let (data, out) = (tmp.join("data"), tmp.join("out"));
    assert!(out.join("peers-reopen.csv").exists());
    assert!(out.join("peers-memory.csv").exists());
    // Every run removed its directory; the data directory was created, so it went too.
    assert!(!data.exists(), "{} is left", data.display());
    std::fs::remove_dir_all(&tmp)?;
    Ok(())
}

#[test]
fn a_failing_child_is_reported() -> Result<()> {
    let tmp = scratch("failing-child")?;
    let run = Command::new(env!("CARGO_BIN_EXE_peers"))
        .args(["__reopen-child", "--system", "no such system"])
        .arg("--dir")
        .arg(&tmp)
        .args(["--threads", "1", "--accounts", "1", "--txns", "1"])
        .output()?;
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("no transactional system"), "{stderr}");
    std::fs::remove_dir_all(&tmp)?;
    Ok(())
}
