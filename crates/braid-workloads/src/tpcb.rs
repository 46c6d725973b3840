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
//!   balances) = sum(history deltas); each branch's balance equals the sum of its tellers'.

use braid_engine::schema::{get_i64, get_u64};
use braid_engine::{
    Catalog, Db, EngineError, Loader, ParamReader, Params, Procedures, TableId, Ticket, TxError,
    Txn, Worker,
};
use rand::Rng;
use rand::rngs::SmallRng;
use serde::{Deserialize, Serialize};

use crate::util::{Image, client_rng, missing, now_secs, run_units, table_schema};
use crate::{Client, Workload};

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

/// TPC-B parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
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
    /// Refuse empty scales, more than 2^48 accounts, and a remote fraction outside 0..=1.
    pub fn validate(&self) -> Result<(), EngineError> {
        if self.branches == 0 || self.tellers_per_branch == 0 || self.accounts_per_branch == 0 {
            return Err(EngineError::Config(
                "tpcb: branches, tellers and accounts per branch must be positive".into(),
            ));
        }
        if self
            .branches
            .checked_mul(self.accounts_per_branch)
            .is_none_or(|n| n >= 1 << 48)
        {
            return Err(EngineError::Config(
                "tpcb: too many accounts (at most 2^48)".into(),
            ));
        }
        if !(0.0..=1.0).contains(&self.remote_fraction) {
            return Err(EngineError::Config(format!(
                "tpcb: remote fraction {} is not in 0..=1",
                self.remote_fraction
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

/// Parameters of Account-Update.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccountUpdateParams {
    /// Account id.
    pub account: u64,
    /// Teller id.
    pub teller: u64,
    /// Branch id (the teller's).
    pub branch: u64,
    /// Amount added to the three balances.
    pub delta: i64,
    /// Timestamp stored in the history row (seconds since the Unix epoch).
    pub time: u64,
}

impl AccountUpdateParams {
    /// Encode into `p` (cleared first), as [`AccountUpdateParams::decode`] reads it.
    pub fn encode(&self, p: &mut Params) {
        p.clear();
        p.u64(self.account)
            .u64(self.teller)
            .u64(self.branch)
            .u64(self.delta as u64)
            .u64(self.time);
    }

    /// Decode procedure parameters written by [`AccountUpdateParams::encode`].
    pub fn decode(params: &[u8]) -> Result<AccountUpdateParams, TxError> {
        let mut r = ParamReader::new(params);
        Ok(AccountUpdateParams {
            account: r.u64()?,
            teller: r.u64()?,
            branch: r.u64()?,
            delta: r.u64()? as i64,
            time: r.u64()?,
        })
    }
}

/// Account-Update (Clause 1.2.1).
fn account_update(tx: &mut Txn<'_>, params: &[u8]) -> Result<(), TxError> {
    let p = AccountUpdateParams::decode(params)?;
    let mut balance = 0;
    if !tx.update(ACCOUNT, p.account, |w| {
        balance = w.get_i64(account::A_BALANCE) + p.delta;
        w.set_i64(account::A_BALANCE, balance);
    })? {
        return Err(missing(ACCOUNT, p.account));
    }
    std::hint::black_box(balance);
    if !tx.update(TELLER, p.teller, |w| {
        w.set_i64(teller::T_BALANCE, w.get_i64(teller::T_BALANCE) + p.delta)
    })? {
        return Err(missing(TELLER, p.teller));
    }
    if !tx.update(BRANCH, p.branch, |w| {
        w.set_i64(branch::B_BALANCE, w.get_i64(branch::B_BALANCE) + p.delta)
    })? {
        return Err(missing(BRANCH, p.branch));
    }
    let mut img = Image::new(tx.schema(HISTORY));
    img.u64(history::H_T_ID, p.teller)
        .u64(history::H_B_ID, p.branch)
        .u64(history::H_A_ID, p.account)
        .i64(history::H_DELTA, p.delta)
        .u64(history::H_TIME, p.time);
    let key = tx.id();
    tx.insert(HISTORY, key, img.as_bytes())
}

/// The TPC-B workload.
#[derive(Debug, Clone)]
pub struct Tpcb {
    cfg: TpcbConfig,
}

const LOAD_CHUNK: u64 = 50_000;

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
        TpcbClient {
            cfg: self.cfg,
            branch: index as u64 % self.cfg.branches + 1,
            rng: client_rng(seed, index),
            params: Params::new(),
            retry: false,
        }
    }
}

impl Workload for Tpcb {
    fn name(&self) -> &str {
        "tpcb"
    }

    fn params(&self) -> serde_json::Value {
        serde_json::to_value(self.cfg).unwrap_or(serde_json::Value::Null)
    }

    fn catalog(&self) -> Catalog {
        let mut c = Catalog::new();
        for def in [branch::def(), teller::def(), account::def(), history::def()] {
            c.add(def);
        }
        c
    }

    fn procedures(&self) -> Procedures {
        let mut p = Procedures::new();
        p.register(ACCOUNT_UPDATE_TXN, "tpcb.account_update", account_update);
        p
    }

    fn initial_rows(&self) -> u64 {
        self.cfg.branches * (1 + self.cfg.tellers_per_branch + self.cfg.accounts_per_branch)
    }

    /// The image has no random content, so the load needs no seed.
    fn load(
        &self,
        loader: &Loader<'_>,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<(), EngineError> {
        self.cfg.validate()?;
        let cfg = self.cfg;
        let chunks = cfg.accounts_per_branch.div_ceil(LOAD_CHUNK);
        run_units((cfg.branches * chunks) as usize, progress, |u| {
            let (b, chunk) = (u as u64 / chunks + 1, u as u64 % chunks);
            let mut rows = 0;
            if chunk == 0 {
                let mut img = Image::new(loader.schema(BRANCH));
                img.u64(branch::B_ID, b);
                loader.insert(BRANCH, b, img.as_bytes())?;
                let mut img = Image::new(loader.schema(TELLER));
                for t in 1..=cfg.tellers_per_branch {
                    let id = cfg.teller_id(b, t);
                    img.u64(teller::T_ID, id).u64(teller::T_B_ID, b);
                    loader.insert(TELLER, id, img.as_bytes())?;
                }
                rows += 1 + cfg.tellers_per_branch;
            }
            let mut img = Image::new(loader.schema(ACCOUNT));
            let lo = chunk * LOAD_CHUNK + 1;
            let hi = ((chunk + 1) * LOAD_CHUNK).min(cfg.accounts_per_branch);
            for a in lo..=hi {
                let id = cfg.account_id(b, a);
                img.u64(account::A_ID, id).u64(account::A_B_ID, b);
                loader.insert(ACCOUNT, id, img.as_bytes())?;
            }
            Ok(rows + hi + 1 - lo)
        })
    }

    fn client(&self, index: usize, seed: u64) -> Box<dyn Client> {
        Box::new(self.tpcb_client(index, seed))
    }

    fn check(&self, db: &Db) -> Result<(), String> {
        let cfg = &self.cfg;
        let mut problems = Vec::new();
        let sum = |table: TableId, col: usize| {
            let s = db.schema(table);
            let mut total = 0i64;
            db.for_each_row(table, |_, img| total += get_i64(s, img, col));
            total
        };
        let accounts = sum(ACCOUNT, account::A_BALANCE);
        let tellers = sum(TELLER, teller::T_BALANCE);
        let branches = sum(BRANCH, branch::B_BALANCE);
        let history = sum(HISTORY, history::H_DELTA);
        if accounts != tellers || tellers != branches || branches != history {
            problems.push(format!(
                "balances differ: accounts {accounts}, tellers {tellers}, branches {branches}, history deltas {history}"
            ));
        }
        let mut per_branch = vec![0i64; cfg.branches as usize + 1];
        let s = db.schema(TELLER);
        db.for_each_row(TELLER, |_, img| {
            if let Some(b) = per_branch.get_mut(get_u64(s, img, teller::T_B_ID) as usize) {
                *b += get_i64(s, img, teller::T_BALANCE);
            }
        });
        for b in 1..=cfg.branches {
            let bal = db
                .peek(BRANCH, b)
                .map(|img| get_i64(db.schema(BRANCH), &img, branch::B_BALANCE));
            if bal != Some(per_branch[b as usize]) {
                problems.push(format!(
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
                problems.push(format!("table {} has {n} rows, expected {want}", t.0));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!("tpcb consistency: {}", problems.join("; ")))
        }
    }
}

/// Generates and runs Account-Update transactions for one terminal.
pub struct TpcbClient {
    cfg: TpcbConfig,
    branch: u64,
    rng: SmallRng,
    params: Params,
    /// The last attempt failed with a retryable conflict: run the same call again.
    retry: bool,
}

impl std::fmt::Debug for TpcbClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TpcbClient")
            .field("branch", &self.branch)
            .finish()
    }
}

impl TpcbClient {
    /// The next transaction's inputs (Clause 5.3).
    pub fn next_params(&mut self) -> AccountUpdateParams {
        let cfg = &self.cfg;
        let b = self.branch;
        let teller = cfg.teller_id(b, self.rng.gen_range(1..=cfg.tellers_per_branch));
        let account_branch = if cfg.branches > 1 && self.rng.gen_bool(cfg.remote_fraction) {
            let o = self.rng.gen_range(1..cfg.branches);
            if o >= b { o + 1 } else { o }
        } else {
            b
        };
        let account = cfg.account_id(
            account_branch,
            self.rng.gen_range(1..=cfg.accounts_per_branch),
        );
        AccountUpdateParams {
            account,
            teller,
            branch: b,
            delta: self.rng.gen_range(-999_999..=999_999),
            time: now_secs(),
        }
    }
}

impl Client for TpcbClient {
    fn run_one(&mut self, worker: &mut Worker) -> Result<Ticket, TxError> {
        if !self.retry {
            let p = self.next_params();
            p.encode(&mut self.params);
        }
        let r = worker.call(ACCOUNT_UPDATE_TXN, &self.params.bytes);
        self.retry = matches!(&r, Err(e) if e.is_retryable());
        r
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

    #[test]
    fn inputs_follow_the_spec() {
        let w = Tpcb::new(TpcbConfig {
            branches: 4,
            accounts_per_branch: 1000,
            ..TpcbConfig::default()
        })
        .unwrap();
        let mut c = w.tpcb_client(6, 1);
        let mut remote = 0;
        for _ in 0..10_000 {
            let p = c.next_params();
            assert_eq!(p.branch, 3);
            assert!((21..=30).contains(&p.teller));
            assert!((1..=4000).contains(&p.account));
            assert!((-999_999..=999_999).contains(&p.delta));
            remote += usize::from((p.account - 1) / 1000 + 1 != 3);
            let mut enc = Params::new();
            p.encode(&mut enc);
            assert_eq!(AccountUpdateParams::decode(&enc.bytes).unwrap(), p);
        }
        assert!((1200..=1800).contains(&remote), "{remote}");
        let one = Tpcb::new(TpcbConfig {
            branches: 1,
            accounts_per_branch: 10,
            ..TpcbConfig::default()
        })
        .unwrap();
        let mut c = one.tpcb_client(5, 2);
        assert!((0..1000).all(|_| c.next_params().account <= 10));
        assert!(
            Tpcb::new(TpcbConfig {
                remote_fraction: 1.5,
                ..TpcbConfig::default()
            })
            .is_err()
        );
    }
}
