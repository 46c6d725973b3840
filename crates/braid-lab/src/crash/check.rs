//! Judging a round: recover the crashed directory twice, check the first recovery (the marked
//! YCSB oracle, or the workload's consistency conditions) and that the second gives the same
//! state (recovery is idempotent).

use std::collections::HashSet;
use std::path::Path;

use anyhow::Context as _;
use braid_engine::Db;
use braid_engine::testing::Env;

use super::args::CrashArgs;
use crate::common::{self, WorkloadKind};
use crate::oracle::{self, Intent, Verdict};

/// Recover the database in `dir` on `env` twice, check it, and compare the two recoveries.
pub(super) fn recover_and_check(
    args: &CrashArgs,
    dir: &Path,
    env: Env,
    intents: &[Intent],
    acked: &HashSet<u64>,
) -> anyhow::Result<Verdict> {
    let cfg = args.ycsb();
    let workload = args.workload()?;
    let mut opts = args.options()?;
    opts.env = env;
    opts.app = common::app_blob(&*workload);
    let open = |opts: braid_engine::Options| {
        workload
            .db(dir)
            .options(opts)
            .open()
            .context("recovery failed")
    };
    let (db, report) = open(opts.clone())?;
    let mut verdict = if args.workload == WorkloadKind::Ycsb {
        oracle::check(&cfg, &db, intents, acked)
    } else {
        let mut v = Verdict {
            acknowledged: acked.len(),
            ..Verdict::default()
        };
        if let Err(e) = workload.check(&db) {
            v.violations
                .push(format!("consistency after recovery: {e}"));
        }
        v
    };
    verdict.from_checkpoint = report.checkpoint.as_ref().is_some_and(|c| c.epoch > 0);
    let digest1 = digest(&db);
    db.close()?;
    drop(db);
    let (db2, _) = open(opts)?;
    if digest(&db2) != digest1 {
        verdict
            .violations
            .push("idempotence: a second recovery gave another state".into());
    }
    let _ = db2.close();
    Ok(verdict)
}

/// An order-independent digest of every row of every table.
fn digest(db: &Db) -> u64 {
    let mut acc = 0u64;
    for (t, _) in db.table_names().iter().enumerate() {
        db.for_each_row(braid_engine::TableId(t as u32), .., |k, img| {
            let mut h = k.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (t as u64) << 56;
            for c in img.chunks(8) {
                let mut b = [0u8; 8];
                b[..c.len()].copy_from_slice(c);
                h = (h ^ u64::from_le_bytes(b)).wrapping_mul(0x100_0000_01B3);
            }
            acc = acc.wrapping_add(h);
        });
    }
    acc
}
