//! The workloads on the command line (YCSB, TPC-C, TATP, TPC-B), their parameters, and the
//! `app` blob a database records so `braid recover` can rebuild the workload it was made with.

use std::sync::Arc;

use braid_workloads::Workload;
use braid_workloads::tatp::TatpConfig;
use braid_workloads::tpcb::TpcbConfig;
use braid_workloads::tpcc::TpccConfig;
use braid_workloads::ycsb::{Ycsb, YcsbConfig, YcsbUpdate};
use clap::{Args, ValueEnum};

/// YCSB parameters (Taurus defaults).
#[derive(Debug, Clone, Args)]
pub struct YcsbArgs {
    /// Rows in the YCSB table.
    #[arg(long, default_value_t = YcsbConfig::default().rows)]
    pub rows: u64,
    /// Zipf skew of key popularity (0 = uniform).
    #[arg(long, default_value_t = YcsbConfig::default().theta)]
    pub theta: f64,
    /// Fraction of accesses that are reads.
    #[arg(long, default_value_t = YcsbConfig::default().read_fraction)]
    pub read_fraction: f64,
    /// Row accesses per transaction.
    #[arg(long, default_value_t = YcsbConfig::default().accesses)]
    pub accesses: usize,
    /// Columns per row.
    #[arg(long, default_value_t = YcsbConfig::default().columns)]
    pub columns: usize,
    /// Bytes per column.
    #[arg(long, default_value_t = YcsbConfig::default().column_bytes)]
    pub column_bytes: usize,
    /// What a YCSB update writes and logs: one column (the Taurus paper's text), the whole
    /// row with new bytes in every column (row), or the whole row with 1 added to each
    /// column's first byte (increment: its code, DBx1000_logging's run_txn); recorded with
    /// every result.
    #[arg(long = "ycsb-update", default_value_t = YcsbConfig::default().update)]
    pub update: YcsbUpdate,
}

impl YcsbArgs {
    pub fn config(&self, marked: bool) -> YcsbConfig {
        YcsbConfig::default()
            .rows(self.rows)
            .columns(self.columns)
            .column_bytes(self.column_bytes)
            .theta(self.theta)
            .accesses(self.accesses)
            .read_fraction(self.read_fraction)
            .update(self.update)
            .marked(marked)
    }
}

/// The workloads the command knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WorkloadKind {
    Ycsb,
    Tpcc,
    Tatp,
    Tpcb,
}

/// TPC-C, TATP and TPC-B parameters.
#[derive(Debug, Clone, Args)]
pub struct OltpArgs {
    /// TPC-C warehouses.
    #[arg(long, default_value_t = TpccConfig::default().warehouses)]
    pub warehouses: u64,
    /// TPC-C mix: full, payment-only, new-order-only.
    #[arg(long, default_value_t = TpccConfig::default().mix.to_string())]
    pub tpcc_mix: String,
    /// TPC-C items (and stock rows per warehouse; the specification says 100,000).
    #[arg(long, default_value_t = TpccConfig::default().items)]
    pub items: u64,
    /// TPC-C customers per district (the specification says 3,000).
    #[arg(long, default_value_t = TpccConfig::default().customers_per_district)]
    pub customers: u64,
    /// TATP subscribers.
    #[arg(long, default_value_t = TatpConfig::default().subscribers)]
    pub subscribers: u64,
    /// TATP mix: standard, update-location-only.
    #[arg(long, default_value_t = TatpConfig::default().mix.to_string())]
    pub tatp_mix: String,
    /// TPC-B branches.
    #[arg(long, default_value_t = TpcbConfig::default().branches)]
    pub branches: u64,
    /// TPC-B accounts per branch.
    #[arg(long, default_value_t = TpcbConfig::default().accounts_per_branch)]
    pub accounts_per_branch: u64,
}

/// Build a workload from its kind and parameters.
pub fn workload(
    kind: WorkloadKind,
    ycsb: &YcsbArgs,
    oltp: &OltpArgs,
    marked: bool,
) -> anyhow::Result<Arc<dyn Workload>> {
    use braid_workloads::{tatp, tpcb, tpcc};
    Ok(match kind {
        WorkloadKind::Ycsb => Arc::new(Ycsb::new(ycsb.config(marked))),
        WorkloadKind::Tpcc => Arc::new(tpcc::Tpcc::new(
            tpcc::TpccConfig::default()
                .warehouses(oltp.warehouses)
                .items(oltp.items)
                .customers_per_district(oltp.customers)
                .mix(oltp.tpcc_mix.parse().map_err(anyhow::Error::msg)?),
        )?),
        WorkloadKind::Tatp => Arc::new(tatp::Tatp::new(
            tatp::TatpConfig::default()
                .subscribers(oltp.subscribers)
                .mix(oltp.tatp_mix.parse().map_err(anyhow::Error::msg)?),
        )?),
        WorkloadKind::Tpcb => Arc::new(tpcb::Tpcb::new(
            tpcb::TpcbConfig::default()
                .branches(oltp.branches)
                .accounts_per_branch(oltp.accounts_per_branch),
        )?),
    })
}

/// Rebuild the workload recorded in a database's `braid.json`.
pub fn workload_from_app(app: &serde_json::Value) -> anyhow::Result<Arc<dyn Workload>> {
    use braid_workloads::{tatp, tpcb, tpcc};
    let name = app.get("workload").and_then(|v| v.as_str()).unwrap_or("");
    let params = app.get("params").cloned().unwrap_or_default();
    let bad = |e: serde_json::Error| {
        anyhow::Error::new(e).context(format!(
            "the database records {name} parameters braid cannot read"
        ))
    };
    match name {
        "ycsb" => Ok(Arc::new(Ycsb::new(
            serde_json::from_value::<YcsbConfig>(params).map_err(bad)?,
        ))),
        "tpcc" => Ok(Arc::new(tpcc::Tpcc::new(
            serde_json::from_value(params).map_err(bad)?,
        )?)),
        "tatp" => Ok(Arc::new(tatp::Tatp::new(
            serde_json::from_value(params).map_err(bad)?,
        )?)),
        "tpcb" => Ok(Arc::new(tpcb::Tpcb::new(
            serde_json::from_value(params).map_err(bad)?,
        )?)),
        _ => Err(anyhow::anyhow!(
            "the database does not record a workload braid knows ({app}); it was not created by the braid command"
        )),
    }
}

/// The `app` blob stored in `braid.json` for a workload.
pub fn app_blob(w: &dyn Workload) -> serde_json::Value {
    serde_json::json!({ "workload": w.name(), "params": w.params() })
}
