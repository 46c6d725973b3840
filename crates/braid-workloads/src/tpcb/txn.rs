//! The TPC-B transaction, Account-Update (TPC-B Clause 1.2), as a stored procedure, and the
//! encoding of its parameters (all its inputs, Clause 5.3, travel as parameters).

use braid_engine::{ParamReader, Params, TxError, Txn};

use super::*;
use crate::util::{Image, missing};

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
        p.put::<u64>(self.account)
            .put::<u64>(self.teller)
            .put::<u64>(self.branch)
            .put::<u64>(self.delta as u64)
            .put::<u64>(self.time);
    }

    /// Decode procedure parameters written by [`AccountUpdateParams::encode`].
    pub fn decode(params: &[u8]) -> Result<AccountUpdateParams, TxError> {
        let mut r = ParamReader::new(params);
        Ok(AccountUpdateParams {
            account: r.get::<u64>()?,
            teller: r.get::<u64>()?,
            branch: r.get::<u64>()?,
            delta: r.get::<u64>()? as i64,
            time: r.get::<u64>()?,
        })
    }
}

/// Account-Update (Clause 1.2.1).
pub(super) fn account_update(tx: &mut Txn<'_>, params: &[u8]) -> Result<(), TxError> {
    let p = AccountUpdateParams::decode(params)?;
    let mut balance = 0;
    if !tx.update(ACCOUNT, p.account, |w| {
        balance = w.get::<i64>(account::A_BALANCE) + p.delta;
        w.set::<i64>(account::A_BALANCE, balance);
    })? {
        return Err(missing(ACCOUNT, p.account));
    }
    std::hint::black_box(balance);
    if !tx.update(TELLER, p.teller, |w| {
        w.set::<i64>(teller::T_BALANCE, w.get::<i64>(teller::T_BALANCE) + p.delta)
    })? {
        return Err(missing(TELLER, p.teller));
    }
    if !tx.update(BRANCH, p.branch, |w| {
        w.set::<i64>(branch::B_BALANCE, w.get::<i64>(branch::B_BALANCE) + p.delta)
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
