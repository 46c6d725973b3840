//! The TPC-B consistency check (TPC-B Clause 2: the consistency conditions): sum(account
//! balances) = sum(teller balances) = sum(branch balances) = sum(history deltas), each branch's
//! balance equals the sum of its tellers', and the table cardinalities match the scale.

use braid_engine::Db;

use super::*;
use crate::error::{ConsistencyError, Problems};

/// Check `db` against the conditions above.
pub(super) fn check(cfg: &TpcbConfig, db: &Db) -> Result<(), ConsistencyError> {
    // Every problem is kept.
    let mut problems = Problems::all("tpcb");
    let sum = |table: TableId, col: usize| {
        let s = db.schema(table);
        let mut total = 0i64;
        db.for_each_row(table, .., |_, img| total += s.get::<i64>(img, col));
        total
    };
    let accounts = sum(ACCOUNT, account::A_BALANCE);
    let tellers = sum(TELLER, teller::T_BALANCE);
    let branches = sum(BRANCH, branch::B_BALANCE);
    let history = sum(HISTORY, history::H_DELTA);
    if accounts != tellers || tellers != branches || branches != history {
        problems.add(format!(
            "balances differ: accounts {accounts}, tellers {tellers}, branches {branches}, history deltas {history}"
        ));
    }
    let mut per_branch = vec![0i64; cfg.branches as usize + 1];
    let s = db.schema(TELLER);
    db.for_each_row(TELLER, .., |_, img| {
        if let Some(b) = per_branch.get_mut(s.get::<u64>(img, teller::T_B_ID) as usize) {
            *b += s.get::<i64>(img, teller::T_BALANCE);
        }
    });
    for b in 1..=cfg.branches {
        let bal = db
            .peek(BRANCH, b)
            .map(|img| db.schema(BRANCH).get::<i64>(&img, branch::B_BALANCE));
        if bal != Some(per_branch[b as usize]) {
            problems.add(format!(
                "branch {b}: balance {bal:?}, its tellers sum to {}",
                per_branch[b as usize]
            ));
        }
    }
    let counts = [
        (BRANCH, cfg.branches),
        (TELLER, cfg.branches * cfg.tellers_per_branch),
        (ACCOUNT, cfg.branches * cfg.accounts_per_branch),
    ];
    for (t, want) in counts {
        let n = db.rows(t) as u64;
        if n != want {
            problems.add(format!("table {} has {n} rows, expected {want}", t.0));
        }
    }
    problems.finish()
}
