//! Helpers the peers binary's integration tests share: a scratch directory per test, a run of
//! the binary, and a numeric field of a result row.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result, bail};
use serde_json::Value;

/// An empty directory `name` under cargo's temporary directory for tests, per process.
pub fn scratch(name: &str) -> Result<PathBuf> {
    let dir =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// Field `field` of row `v` as a number.
pub fn num(v: &Value, field: &str) -> Result<f64> {
    v[field].as_f64().with_context(|| format!("{field} in {v}"))
}

/// Run the binary with `args` (data and results under `tmp`); returns its stdout and its
/// peers.json, or an error with both of its outputs if it failed.
pub fn run_peers(tmp: &Path, args: &[&str]) -> Result<(String, Value)> {
    let (data, out) = (tmp.join("data"), tmp.join("out"));
    let run = Command::new(env!("CARGO_BIN_EXE_peers"))
        .args(args)
        .arg("--dir")
        .arg(&data)
        .arg("--out")
        .arg(&out)
        .output()?;
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&run.stderr);
    if !run.status.success() {
        bail!("peers failed:\n{stdout}\n{stderr}");
    }
    let json = serde_json::from_str(&std::fs::read_to_string(out.join("peers.json"))?)?;
    Ok((stdout, json))
}
