//! TPC-B (TPC Benchmark B, Standard Specification revision 2.0): BRANCH, TELLER (10 per
//! branch), ACCOUNT (100,000 per branch) and HISTORY (Clause 3), and the one transaction,
//! Account-Update (Clause 1.2): add a delta to an account, its teller and its branch, read the
//! account balance, and append a history row. Scale is by branches.
//!
//! Inputs (Clause 5.3): client `i` is attached to branch `i % B + 1` and submits each
//! transaction for a random teller of that branch; the account belongs to the teller's branch
//! 85% of the time and to a random other branch otherwise (when there is more than one); the
//! delta is uniform in -999,999..=+999,999.
//!
//! # Keys
//!
//! Branches are `1..=B`; teller `t` (1..=10) of branch `b` has id `(b - 1) * 10 + t`; account
//! `a` of branch `b` has id `(b - 1) * A + a` (A accounts per branch). HISTORY has no primary key
//! in the specification; its key is the inserting transaction's id (unique in the log, and the
//! same when command logging re-executes the transaction).
//!
//! # Choices and simplifications (stated plainly)
//!
//! - Balances and deltas are integers (I64), all balances start at 0; rows are padded to the
//!   specified 100 bytes (HISTORY to 50) with zero filler.
//! - `accounts_per_branch` and `tellers_per_branch` are configurable (spec: 100,000 and 10).
//! - All random inputs (account, teller, branch, delta, timestamp) are parameters of the
//!   procedure, made by the client (command logging). Clients resubmit a transaction that failed
//!   with a retryable conflict on their next call.
//! - The consistency check: sum(account balances) = sum(teller balances) = sum(branch

mod check;
mod client;
mod load;
mod txn;

use braid_engine::{BadParameter, Catalog, Db, EngineError, Loader, Procedures, TableId};
use serde::{Deserialize, Serialize};

use crate::client::OnConflict;
use crate::error::ConsistencyError;
use crate::oltp;
use crate::util::{client_rng, table_schema};
use crate::{Client, Workload};

pub use client::{TpcbClient, TpcbSource};
pub use txn::AccountUpdateParams;

/// Procedure id of Account-Update.
pub const ACCOUNT_UPDATE_TXN: u32 = 30;

/// Table id of BRANCH.
pub const BRANCH: TableId = TableId(0);
/// Table id of TELLER.
pub const TELLER: TableId = TableId(1);
/// Table id of ACCOUNT.
pub const ACCOUNT: TableId = TableId(2);
/// Table id of HISTORY.
pub const HISTORY: TableId = TableId(3);

table_schema!(branch, "branch", IndexKind::Hash, {
    B_ID: ColumnType::U64,
    B_BALANCE: ColumnType::I64,
    B_FILLER: ColumnType::Bytes(84),
});

table_schema!(teller, "teller", IndexKind::Hash, {
    T_ID: ColumnType::U64,
    T_B_ID: ColumnType::U64,
    T_BALANCE: ColumnType::I64,
    T_FILLER: ColumnType::Bytes(76),
});

table_schema!(account, "account", IndexKind::Hash, {
    A_ID: ColumnType::U64,
    A_B_ID: ColumnType::U64,
    A_BALANCE: ColumnType::I64,
    A_FILLER: ColumnType::Bytes(76),
});

table_schema!(history, "history", IndexKind::Hash, {
    H_T_ID: ColumnType::U64,
    H_B_ID: ColumnType::U64,
    H_A_ID: ColumnType::U64,
    H_DELTA: ColumnType::I64,
    H_TIME: ColumnType::U64,
    H_FILLER: ColumnType::Bytes(10),
});

/// TPC-B parameters. Built from [`TpcbConfig::default`] with the setters (or by assigning
/// fields): `TpcbConfig::default().branches(8).remote_fraction(0.0)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct TpcbConfig {
    /// Branches, B: the scale factor.
    pub branches: u64,
    /// Tellers per branch (spec: 10).
    pub tellers_per_branch: u64,
    /// Accounts per branch (spec: 100,000).
    pub accounts_per_branch: u64,
    /// Fraction of transactions whose account is at another branch (spec: 0.15).
    pub remote_fraction: f64,
}

/// The workload's configuration under its generic name.
pub type Config = TpcbConfig;

impl Default for TpcbConfig {
    fn default() -> Self {
        TpcbConfig {
            branches: 2,
            tellers_per_branch: 10,
            accounts_per_branch: 100_000,
            remote_fraction: 0.15,
        }
    }
}

impl TpcbConfig {
    /// [`TpcbConfig::branches`] set to `branches`.
    pub fn branches(mut self, branches: u64) -> TpcbConfig {
        self.branches = branches;
        self
    }
    /// [`TpcbConfig::tellers_per_branch`] set to `tellers`.
    pub fn tellers_per_branch(mut self, tellers: u64) -> TpcbConfig {
        self.tellers_per_branch = tellers;
        self
    }
    /// [`TpcbConfig::accounts_per_branch`] set to `accounts`.
    pub fn accounts_per_branch(mut self, accounts: u64) -> TpcbConfig {
        self.accounts_per_branch = accounts;
        self
    }
    /// [`TpcbConfig::remote_fraction`] set to `fraction`.
    pub fn remote_fraction(mut self, fraction: f64) -> TpcbConfig {
        self.remote_fraction = fraction;
        self
    }

    /// Refuse empty scales, more than 2^48 accounts, and a remote fraction outside 0..=1.
    pub fn validate(&self) -> Result<(), EngineError> {
        if self.branches == 0 || self.tellers_per_branch == 0 || self.accounts_per_branch == 0 {
            return Err(EngineError::BadOption(BadParameter::new(
                "tpcb",
                "branches, tellers or accounts per branch",
                0,
                "1 or more of each",
            )));
        }
        if self
            .branches
            .checked_mul(self.accounts_per_branch)
            .is_none_or(|n| n >= 1 << 48)
        {
            return Err(EngineError::BadOption(BadParameter::new(
                "tpcb",
                "accounts (branches times accounts per branch)",
                u128::from(self.branches) * u128::from(self.accounts_per_branch),
                "at most 2^48",
            )));
        }
        if !(0.0..=1.0).contains(&self.remote_fraction) {
            return Err(EngineError::BadOption(BadParameter::new(
                "tpcb",
                "remote fraction",
                self.remote_fraction,
                "0..=1",
            )));
        }
        Ok(())
    }

    /// Id (and key) of teller `t` (1-based) of branch `b` (1-based).
    pub fn teller_id(&self, b: u64, t: u64) -> u64 {
        (b - 1) * self.tellers_per_branch + t
    }

    /// Id (and key) of account `a` (1-based) of branch `b` (1-based).
    pub fn account_id(&self, b: u64, a: u64) -> u64 {
        (b - 1) * self.accounts_per_branch + a
    }
}

/// The TPC-B workload.
#[derive(Debug, Clone)]
pub struct Tpcb {
    cfg: TpcbConfig,
}

impl Tpcb {
    /// The workload, once `cfg` is validated.
    pub fn new(cfg: TpcbConfig) -> Result<Tpcb, EngineError> {
        cfg.validate()?;
        Ok(Tpcb { cfg })
    }

    /// The (validated) configuration.
    pub fn config(&self) -> &TpcbConfig {
        &self.cfg
    }

    /// A concrete client.
    pub fn tpcb_client(&self, index: usize, seed: u64) -> TpcbClient {
        let source = TpcbSource {
            cfg: self.cfg,
            branch: index as u64 % self.cfg.branches + 1,
            rng: client_rng(seed, index),
        };
        TpcbClient::new(source, OnConflict::Resubmit)
    }
}

impl Workload for Tpcb {
    fn name(&self) -> &str {
        "tpcb"
    }

    fn params(&self) -> serde_json::Value {
        oltp::params_json(&self.cfg)
    }

    fn catalog(&self) -> Catalog {
        oltp::catalog([branch::def(), teller::def(), account::def(), history::def()])
    }

    fn procedures(&self) -> Procedures {
        oltp::procedures(&[(
            ACCOUNT_UPDATE_TXN,
            "tpcb.account_update",
            txn::account_update,
        )])
    }

    fn initial_rows(&self) -> u64 {
        self.cfg.branches * (1 + self.cfg.tellers_per_branch + self.cfg.accounts_per_branch)
    }

    fn load(
        &self,
        loader: &Loader<'_>,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<(), EngineError> {
        load::load(&self.cfg, loader, progress)
    }

    fn client(&self, index: usize, seed: u64) -> Box<dyn Client> {
        Box::new(self.tpcb_client(index, seed))
    }

    fn check(&self, db: &Db) -> Result<(), ConsistencyError> {
        check::check(&self.cfg, db)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn rows_have_the_specified_widths() {
        let c = Tpcb::new(TpcbConfig::default()).unwrap().catalog();
        let width = |i: usize| {
            c.tables[i]
                .columns
                .iter()
                .map(|c| c.ty.width())
                .sum::<usize>()
        };
        assert_eq!(
            (width(0), width(1), width(2), width(3)),
            (100, 100, 100, 50)
        );
    }
}
