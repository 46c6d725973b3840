//! The memory workload: resident memory per row. For each system a child process (this
//! binary, `__memory-child`) reads its resident set size (`VmRSS`), creates a store in a fresh
//! directory and loads `--memory-rows` rows of TPC-B's accounts table (1,000,000 by default; a
//! row is an 8-byte key and an 8-byte balance), reads its RSS again, and reports both:
//! `bytes_per_row` = (RSS after the load - RSS before the open) / rows.
//!
//! The figures are not like for like, and the output says so: braid-engine is an in-memory
//! engine, every row resident for as long as the database is open, while the others keep
//! their tables on disk and page them through caches, so their RSS is what their caches and
//! write buffers hold after the load (each row records its system's cache setting).

use std::path::Path;

use anyhow::{Context as _, Result, bail};
use serde::{Deserialize, Serialize};

use crate::output::MemoryRow;
use crate::systems::{Setup, Table, TxnSystem};
use crate::workload::child::{self, Running};

/// What the child reports.
#[derive(Debug, Serialize, Deserialize)]
pub struct ChildReport {
    /// VmRSS before the store was opened, bytes.
    pub rss_before: u64,
    /// VmRSS once the rows were loaded, bytes.
    pub rss_after: u64,
}

fn setup(rows: u64) -> Setup {
    Setup {
        threads: 1,
        table: Table::Accounts,
        rows,
        relaxed: false,
    }
}

/// The child: load `rows` rows into a store in `dir`, report the RSS before and after, close.
pub fn child(sys: &dyn TxnSystem, dir: &Path, rows: u64) -> Result<()> {
    child::die_with_parent()?;
    if rows == 0 {
        bail!("the memory workload needs at least one row");
    }
    let rss_before = child::rss_bytes()?;
    let store = sys.open(dir, &setup(rows)).context("open and load")?;
    let rss_after = child::rss_bytes()?;
    child::send(&ChildReport {
        rss_before,
        rss_after,
    })?;
    store.close().context("close")?;
    Ok(())
}

/// The parent: run the child for `sys` in the empty directory `dir` through `exe`.
pub fn run(
    sys: &dyn TxnSystem,
    exe: &Path,
    dir: &Path,
    rows: u64,
    tick: &dyn Fn(),
) -> Result<MemoryRow> {
    let args = [
        "__memory-child".to_string(),
        "--system".into(),
        sys.name(),
        "--dir".into(),
        dir.display().to_string(),
        "--rows".into(),
        rows.to_string(),
    ];
    let mut c = Running::spawn(exe, &args)?;
    let r: ChildReport = c.report(tick).context("the loading child")?;
    c.finish()?;
    Ok(MemoryRow {
        system: sys.name(),
        variant: sys.variant().as_str().into(),
        version: sys.version(),
        in_memory: sys.in_memory(),
        cache_setting: sys.cache_setting(),
        rows,
        rss_before_bytes: r.rss_before,
        rss_after_bytes: r.rss_after,
        bytes_per_row: (r.rss_after as f64 - r.rss_before as f64) / rows as f64,
    })
}
