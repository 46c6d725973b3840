//! Run one experiment of `braid_rewind::bench` (or TPC-C) with its default configuration, or
//! a reduced one with `--quick`, and print its result as JSON.
//!
//! usage: figures word-tx|btree-mix|fence|recovery|insert-lookup|tpcc [--quick] [--fractions a,b,..]

use braid_rewind::bench::{self, Backing};
use braid_rewind::tpcc;
use braid_rewind::{LogLayout, LogMode, Policy, PoolConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let what = args.get(1).map(String::as_str).unwrap_or("word-tx");
    let quick = args.iter().any(|a| a == "--quick");
    let fractions: Option<Vec<f64>> = args
        .iter()
        .position(|a| a == "--fractions")
        .and_then(|i| args.get(i + 1))
        .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect());
    let out = match what {
        "word-tx" => serde_json::to_value(bench::word_tx(&bench::WordTxConfig {
            transactions: if quick { 50_000 } else { 200_000 },
            ..Default::default()
        })?)?,
        "btree-mix" => {
            let mut c = bench::BTreeMixConfig::default();
            if let Some(f) = fractions {
                c.update_fractions = f;
            }
            if quick {
                c.operations = 50_000;
                c.runs = 1;
            }
            serde_json::to_value(bench::btree_mix(&c)?)?
        }
        "fence" => serde_json::to_value(bench::fence_sensitivity(&Default::default())?)?,
        "recovery" => serde_json::to_value(bench::rollback_recovery(&Default::default())?)?,
        "insert-lookup" => serde_json::to_value(bench::btree_insert_lookup(&Default::default())?)?,
        "tpcc" => {
            let mut rows = Vec::new();
            let per = if quick { 5_000 } else { 20_000 };
            let batch = |logs| {
                Some(PoolConfig {
                    layout: LogLayout::Batch,
                    policy: Policy::NoForce,
                    logs,
                    ..PoolConfig::default()
                })
            };
            for (label, pool) in [
                ("nvm-twin", None),
                ("rewind-shared-log", batch(LogMode::Shared)),
                ("rewind-per-thread-logs", batch(LogMode::PerThread(2))),
            ] {
                let r = tpcc::run(&tpcc::TpccConfig {
                    backing: Backing::default(),
                    threads: 2,
                    transactions_per_thread: per,
                    pool,
                    ..Default::default()
                })?;
                rows.push(serde_json::json!({"label": label, "tpm": r.tpm,
                    "committed": r.committed, "rolled_back": r.rolled_back, "seconds": r.seconds}));
            }
            serde_json::Value::Array(rows)
        }
        other => return Err(format!("unknown experiment {other}").into()),
    };
    println!("{out}");
    Ok(())
}
