//! Helpers the peers binary's integration tests share: a scratch directory per test and a
//! numeric field of a result row.
#![allow(dead_code)]

use std::path::PathBuf;

use anyhow::{Context as _, Result};
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
