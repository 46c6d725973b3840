//! TPC-C (TPC Benchmark C, Standard Specification revision 5.11): the nine tables of Clause 1.3,
//! the five transactions of Clause 2 as stored procedures, the initial population of Clause 4.3
//! and the consistency conditions 1-10 and 12 of Clause 3.3.2.
//!
//! # Tables and key packing
//!
//! Every table has a `u64` primary key; composite keys are packed (ids are 1-based as in the
//! specification; `w` < 2^16, `d` in 1..=10, `c` < 2^12, `o` < 2^32, `ol` in 1..=15, `i` < 2^20):
//!
//! | table | index | key |
//! |---|---|---|
//! | WAREHOUSE | hash | `w` |
//! | DISTRICT | hash | `dk = w << 4 \| d` ([`district_key`]) |
//! | CUSTOMER | hash | `dk << 16 \| c` ([`customer_key`]) |
//! | HISTORY | hash | the inserting transaction's id; `1 << 63 \| customer key` for loaded rows |
//! | NEW-ORDER | ordered | `dk << 32 \| o` ([`order_key`]) |
//! | ORDER | ordered | `dk << 32 \| o` ([`order_key`]) |
//! | ORDER-LINE | ordered | `dk << 36 \| o << 4 \| ol` ([`order_line_key`]) |
//! | ITEM | hash | `i` |
//! | STOCK | hash | `w << 20 \| i` ([`stock_key`]) |
//! | CUSTOMER_BY_NAME | ordered | `dk << 32 \| last << 16 \| c` ([`customer_name_key`]) |
//! | ORDER_BY_CUSTOMER | ordered | `dk << 44 \| c << 32 \| o` ([`order_customer_key`]) |
//!
//! HISTORY has no primary key in the specification (Clause 1.3.1); the transaction id is unique
//! within the database's log and is the same when command logging re-executes the transaction,
//! so it serves as a deterministic surrogate. The last two tables are the secondary indexes the
//! transactions need (customer by last name, Clause 2.5.2.2 / 2.6.2.2; a customer's most recent
//! order, Clause 2.6.2.2); `last` is the number 0..=999 from which C_LAST is built (Clause
//! 4.3.2.3), and the index rows carry C_FIRST so that Payment and Order-Status can sort the
//! matching customers by first name. C_LAST and C_FIRST never change, so CUSTOMER_BY_NAME is
//! written only at load; ORDER_BY_CUSTOMER gets a row in every New-Order transaction.
//!
//! # Choices and simplifications (stated plainly)
//!
//! - Money is stored as integer cents in I64 columns (W_YTD, D_YTD, C_BALANCE, C_YTD_PAYMENT,
//!   C_CREDIT_LIM, H_AMOUNT, OL_AMOUNT, I_PRICE), so the consistency sums are exact; rates
//!   (W_TAX, D_TAX, C_DISCOUNT) are F64. Dates are seconds since the Unix epoch in U64 columns;
//!   "null" (O_CARRIER_ID, OL_DELIVERY_D) is 0.
//! - Scale: `items` (spec 100,000) and `customers_per_district` (spec 3,000) are configurable
//!   downward. Everything derived from them scales: the initial orders per district equal the
//!   customers, the last 30% of them are undelivered (spec: 2,101..=3,000), D_NEXT_O_ID starts
//!   at customers + 1, W_YTD and D_YTD start at 10.00 per customer (spec: 300,000.00 and
//!   30,000.00, the same at full scale) so that conditions 8 and 9 hold at any scale, and the
//!   NURand `A` constants shrink in proportion with their ranges (unchanged at full scale).
//!   With fewer than 1,000 customers per district only last names 0..customers-1 exist, and
//!   the run-time last-name draw is limited to those. Districts per warehouse are always 10.
//! - The transaction mix is drawn at random per transaction with the configured weights
//!   (Full: 45/43/4/4/4) rather than with the deck of Clause 5.2.4.2; there are no keying or
//!   think times.
//! - Delivery runs as an ordinary transaction (not queued, Clause 2.7.2) and processes all ten
//!   districts in one transaction; a district without an outstanding order is skipped.
//! - Every random choice (customer, items, quantities, supply warehouses, amounts, carrier,
//!   threshold, timestamps, and the 1% rollback, which is encoded as the unused item id
//!   `items + 1` on the last line) is made by the client and passed as parameters, so each
//!   procedure is deterministic in its parameters and the state it reads (command logging).
//! - Clients resubmit a transaction that failed with a retryable conflict, with the same
//!   parameters, on their next call (a terminal retries its transaction).
//! - Stock-Level runs at full serializability (Clause 2.8.2.3 would allow less).
//! - Consistency condition 11 (ORDER count - NEW-ORDER count = 2,100 per district) holds only
//!   for the unmodified initial population and is not checked.

mod check;
mod client;
mod load;
mod params;
mod txn;

use braid_engine::{BadParameter, Catalog, Db, EngineError, Loader, Procedures, TableId};
use serde::{Deserialize, Serialize};

use crate::client::OnConflict;
use crate::error::{ConsistencyError, UnknownMix};
use crate::oltp;
use crate::util::table_schema;
use crate::{Client, Workload};

pub use client::{TpccClient, TpccSource};
pub use params::{
    CustomerSel, DeliveryParams, NewOrderLine, NewOrderParams, OrderStatusParams, PaymentParams,
    StockLevelParams,
};

/// Procedure id of New-Order.
pub const NEW_ORDER_TXN: u32 = 10;
/// Procedure id of Payment.
pub const PAYMENT_TXN: u32 = 11;
/// Procedure id of Order-Status.
pub const ORDER_STATUS_TXN: u32 = 12;
/// Procedure id of Delivery.
pub const DELIVERY_TXN: u32 = 13;
/// Procedure id of Stock-Level.
pub const STOCK_LEVEL_TXN: u32 = 14;

/// Districts per warehouse (fixed by the specification).
pub const DISTRICTS: u64 = 10;
/// Most order lines in an order.
pub const MAX_OL: usize = 15;

/// Table id of WAREHOUSE.
pub const WAREHOUSE: TableId = TableId(0);
/// Table id of DISTRICT.
pub const DISTRICT: TableId = TableId(1);
/// Table id of CUSTOMER.
pub const CUSTOMER: TableId = TableId(2);
/// Table id of HISTORY.
pub const HISTORY: TableId = TableId(3);
/// Table id of NEW-ORDER.
pub const NEW_ORDER: TableId = TableId(4);
/// Table id of ORDER.
pub const ORDER: TableId = TableId(5);
/// Table id of ORDER-LINE.
pub const ORDER_LINE: TableId = TableId(6);
/// Table id of ITEM.
pub const ITEM: TableId = TableId(7);
/// Table id of STOCK.
pub const STOCK: TableId = TableId(8);
/// Table id of CUSTOMER_BY_NAME, the index of customers by last name (see the module doc).
pub const CUSTOMER_BY_NAME: TableId = TableId(9);
/// Table id of ORDER_BY_CUSTOMER, the index of orders by customer (see the module doc).
pub const ORDER_BY_CUSTOMER: TableId = TableId(10);

table_schema!(warehouse, "warehouse", IndexKind::Hash, {
    W_ID: ColumnType::U64,
    W_NAME: ColumnType::Bytes(10),
    W_STREET_1: ColumnType::Bytes(20),
    W_STREET_2: ColumnType::Bytes(20),
    W_CITY: ColumnType::Bytes(20),
    W_STATE: ColumnType::Bytes(2),
    W_ZIP: ColumnType::Bytes(9),
    W_TAX: ColumnType::F64,
    W_YTD: ColumnType::I64,
});

table_schema!(district, "district", IndexKind::Hash, {
    D_ID: ColumnType::U64,
    D_W_ID: ColumnType::U64,
    D_NAME: ColumnType::Bytes(10),
    D_STREET_1: ColumnType::Bytes(20),
    D_STREET_2: ColumnType::Bytes(20),
    D_CITY: ColumnType::Bytes(20),
    D_STATE: ColumnType::Bytes(2),
    D_ZIP: ColumnType::Bytes(9),
    D_TAX: ColumnType::F64,
    D_YTD: ColumnType::I64,
    D_NEXT_O_ID: ColumnType::U64,
});

table_schema!(customer, "customer", IndexKind::Hash, {
    C_ID: ColumnType::U64,
    C_D_ID: ColumnType::U64,
    C_W_ID: ColumnType::U64,
    C_FIRST: ColumnType::Bytes(16),
    C_MIDDLE: ColumnType::Bytes(2),
    C_LAST: ColumnType::Bytes(16),
    C_STREET_1: ColumnType::Bytes(20),
    C_STREET_2: ColumnType::Bytes(20),
    C_CITY: ColumnType::Bytes(20),
    C_STATE: ColumnType::Bytes(2),
    C_ZIP: ColumnType::Bytes(9),
    C_PHONE: ColumnType::Bytes(16),
    C_SINCE: ColumnType::U64,
    C_CREDIT: ColumnType::Bytes(2),
    C_CREDIT_LIM: ColumnType::I64,
    C_DISCOUNT: ColumnType::F64,
    C_BALANCE: ColumnType::I64,
    C_YTD_PAYMENT: ColumnType::I64,
    C_PAYMENT_CNT: ColumnType::U64,
    C_DELIVERY_CNT: ColumnType::U64,
    C_DATA: ColumnType::Bytes(500),
});

table_schema!(history, "history", IndexKind::Hash, {
    H_C_ID: ColumnType::U64,
    H_C_D_ID: ColumnType::U64,
    H_C_W_ID: ColumnType::U64,
    H_D_ID: ColumnType::U64,
    H_W_ID: ColumnType::U64,
    H_DATE: ColumnType::U64,
    H_AMOUNT: ColumnType::I64,
    H_DATA: ColumnType::Bytes(24),
});

table_schema!(new_order, "new_order", IndexKind::Ordered, {
    NO_O_ID: ColumnType::U64,
    NO_D_ID: ColumnType::U64,
    NO_W_ID: ColumnType::U64,
});

table_schema!(order, "order", IndexKind::Ordered, {
    O_ID: ColumnType::U64,
    O_D_ID: ColumnType::U64,
    O_W_ID: ColumnType::U64,
    O_C_ID: ColumnType::U64,
    O_ENTRY_D: ColumnType::U64,
    O_CARRIER_ID: ColumnType::U64,
    O_OL_CNT: ColumnType::U64,
    O_ALL_LOCAL: ColumnType::U64,
});

table_schema!(order_line, "order_line", IndexKind::Ordered, {
    OL_O_ID: ColumnType::U64,
    OL_D_ID: ColumnType::U64,
    OL_W_ID: ColumnType::U64,
    OL_NUMBER: ColumnType::U64,
    OL_I_ID: ColumnType::U64,
    OL_SUPPLY_W_ID: ColumnType::U64,
    OL_DELIVERY_D: ColumnType::U64,
    OL_QUANTITY: ColumnType::U64,
    OL_AMOUNT: ColumnType::I64,
    OL_DIST_INFO: ColumnType::Bytes(24),
});

table_schema!(item, "item", IndexKind::Hash, {
    I_ID: ColumnType::U64,
    I_IM_ID: ColumnType::U64,
    I_NAME: ColumnType::Bytes(24),
    I_PRICE: ColumnType::I64,
    I_DATA: ColumnType::Bytes(50),
});

table_schema!(stock, "stock", IndexKind::Hash, {
    S_I_ID: ColumnType::U64,
    S_W_ID: ColumnType::U64,
    S_QUANTITY: ColumnType::I64,
    S_DIST_01: ColumnType::Bytes(24),
    S_DIST_02: ColumnType::Bytes(24),
    S_DIST_03: ColumnType::Bytes(24),
    S_DIST_04: ColumnType::Bytes(24),
    S_DIST_05: ColumnType::Bytes(24),
    S_DIST_06: ColumnType::Bytes(24),
    S_DIST_07: ColumnType::Bytes(24),
    S_DIST_08: ColumnType::Bytes(24),
    S_DIST_09: ColumnType::Bytes(24),
    S_DIST_10: ColumnType::Bytes(24),
    S_YTD: ColumnType::U64,
    S_ORDER_CNT: ColumnType::U64,
    S_REMOTE_CNT: ColumnType::U64,
    S_DATA: ColumnType::Bytes(50),
});

table_schema!(customer_by_name, "customer_by_name", IndexKind::Ordered, {
    CN_FIRST: ColumnType::Bytes(16),
    CN_C_ID: ColumnType::U64,
});

table_schema!(order_by_customer, "order_by_customer", IndexKind::Ordered, {
    OC_O_ID: ColumnType::U64,
});

/// District key: `w << 4 | d`.
pub fn district_key(w: u64, d: u64) -> u64 {
    (w << 4) | d
}

/// Customer key: `district_key << 16 | c`.
pub fn customer_key(w: u64, d: u64, c: u64) -> u64 {
    (district_key(w, d) << 16) | c
}

/// CUSTOMER_BY_NAME key: `district_key << 32 | last << 16 | c` (`last` is the 0..=999 number of
/// the last name).
pub fn customer_name_key(w: u64, d: u64, last: u64, c: u64) -> u64 {
    (district_key(w, d) << 32) | (last << 16) | c
}

/// ORDER and NEW-ORDER key: `district_key << 32 | o`.
pub fn order_key(w: u64, d: u64, o: u64) -> u64 {
    (district_key(w, d) << 32) | o
}

/// ORDER-LINE key: `district_key << 36 | o << 4 | ol`.
pub fn order_line_key(w: u64, d: u64, o: u64, ol: u64) -> u64 {
    (district_key(w, d) << 36) | (o << 4) | ol
}

/// ORDER_BY_CUSTOMER key: `district_key << 44 | c << 32 | o`.
pub fn order_customer_key(w: u64, d: u64, c: u64, o: u64) -> u64 {
    (district_key(w, d) << 44) | (c << 32) | o
}

/// STOCK key: `w << 20 | i`.
pub fn stock_key(w: u64, i: u64) -> u64 {
    (w << 20) | i
}

/// Which transactions a client runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mix {
    /// New-Order 45%, Payment 43%, Order-Status 4%, Delivery 4%, Stock-Level 4% (Clause 5.2.3).
    Full,
    /// Payment only.
    PaymentOnly,
    /// New-Order only.
    NewOrderOnly,
}

impl std::fmt::Display for Mix {
    /// The name [`Mix`]'s `FromStr` reads back.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mix::Full => "full",
            Mix::PaymentOnly => "payment-only",
            Mix::NewOrderOnly => "new-order-only",
        })
    }
}

impl std::str::FromStr for Mix {
    type Err = UnknownMix;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "full" => Ok(Mix::Full),
            "payment-only" | "payment" => Ok(Mix::PaymentOnly),
            "new-order-only" | "new-order" | "neworder" => Ok(Mix::NewOrderOnly),
            _ => Err(UnknownMix {
                workload: "TPC-C",
                given: s.to_string(),
                choices: "full, payment-only or new-order-only",
            }),
        }
    }
}

/// TPC-C parameters. Built from [`TpccConfig::default`] with the setters (or by assigning
/// fields): `TpccConfig::default().warehouses(4).mix(Mix::PaymentOnly)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct TpccConfig {
    /// Warehouses (1..65535); the database scales with them.
    pub warehouses: u64,
    /// Items in the catalogue (spec: 100,000); also the stock rows per warehouse.
    pub items: u64,
    /// Customers per district (spec: 3,000); also the initial orders per district.
    pub customers_per_district: u64,
    /// Which transactions clients run.
    pub mix: Mix,
    /// Seed of the initial population.
    pub seed: u64,
}

/// The workload's configuration under its generic name.
pub type Config = TpccConfig;

impl Default for TpccConfig {
    fn default() -> Self {
        TpccConfig {
            warehouses: 2,
            items: 100_000,
            customers_per_district: 3_000,
            mix: Mix::Full,
            seed: 0x7C0C_2024,
        }
    }
}

impl TpccConfig {
    /// [`TpccConfig::warehouses`] set to `warehouses`.
    pub fn warehouses(mut self, warehouses: u64) -> TpccConfig {
        self.warehouses = warehouses;
        self
    }
    /// [`TpccConfig::items`] set to `items`.
    pub fn items(mut self, items: u64) -> TpccConfig {
        self.items = items;
        self
    }
    /// [`TpccConfig::customers_per_district`] set to `customers`.
    pub fn customers_per_district(mut self, customers: u64) -> TpccConfig {
        self.customers_per_district = customers;
        self
    }
    /// [`TpccConfig::mix`] set to `mix`.
    pub fn mix(mut self, mix: Mix) -> TpccConfig {
        self.mix = mix;
        self
    }
    /// [`TpccConfig::seed`] set to `seed`.
    pub fn seed(mut self, seed: u64) -> TpccConfig {
        self.seed = seed;
        self
    }

    /// Refuse scales the key packing cannot represent.
    pub fn validate(&self) -> Result<(), EngineError> {
        let bad = |name, value: u64, accepted| {
            Err(EngineError::BadOption(BadParameter::new(
                "tpcc", name, value, accepted,
            )))
        };
        if self.warehouses == 0 || self.warehouses >= 1 << 16 {
            return bad("warehouses", self.warehouses, "1..=65535");
        }
        if self.items == 0 || self.items + 1 >= 1 << 20 {
            return bad("items", self.items, "1..=1048574");
        }
        if self.customers_per_district < 10 || self.customers_per_district >= 1 << 12 {
            return bad(
                "customers per district",
                self.customers_per_district,
                "10..=4095",
            );
        }
        Ok(())
    }

    /// First undelivered order of the initial population (spec: 2,101).
    pub fn first_undelivered(&self) -> u64 {
        self.customers_per_district - self.customers_per_district * 3 / 10 + 1
    }

    /// Number of distinct last names (0..n) in the initial population.
    pub fn last_names(&self) -> u64 {
        self.customers_per_district.min(1000)
    }
}

/// The TPC-C workload.
#[derive(Debug, Clone)]
pub struct Tpcc {
    cfg: TpccConfig,
}

impl Tpcc {
    /// The workload, once `cfg` is validated.
    pub fn new(cfg: TpccConfig) -> Result<Tpcc, EngineError> {
        cfg.validate()?;
        Ok(Tpcc { cfg })
    }

    /// The (validated) configuration.
    pub fn config(&self) -> &TpccConfig {
        &self.cfg
    }

    /// A concrete client (tests drive it directly).
    pub fn tpcc_client(&self, index: usize, seed: u64) -> TpccClient {
        TpccClient::new(TpccSource::new(self.cfg, index, seed), OnConflict::Resubmit)
    }
}

impl Workload for Tpcc {
    fn name(&self) -> &str {
        "tpcc"
    }

    fn params(&self) -> serde_json::Value {
        oltp::params_json(&self.cfg)
    }

    fn catalog(&self) -> Catalog {
        oltp::catalog([
            warehouse::def(),
            district::def(),
            customer::def(),
            history::def(),
            new_order::def(),
            order::def(),
            order_line::def(),
            item::def(),
            stock::def(),
            customer_by_name::def(),
            order_by_customer::def(),
        ])
    }

    fn procedures(&self) -> Procedures {
        oltp::procedures(&[
            (NEW_ORDER_TXN, "tpcc.new_order", txn::new_order),
            (PAYMENT_TXN, "tpcc.payment", txn::payment),
            (ORDER_STATUS_TXN, "tpcc.order_status", txn::order_status),
            (DELIVERY_TXN, "tpcc.delivery", txn::delivery),
            (STOCK_LEVEL_TXN, "tpcc.stock_level", txn::stock_level),
        ])
    }

    fn initial_rows(&self) -> u64 {
        load::initial_rows(&self.cfg)
    }

    fn load(
        &self,
        loader: &Loader<'_>,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<(), EngineError> {
        self.cfg.validate()?;
        load::load(&self.cfg, loader, progress)
    }

    fn client(&self, index: usize, seed: u64) -> Box<dyn Client> {
        Box::new(self.tpcc_client(index, seed))
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
    fn keys_are_unique_and_ordered_within_a_district() {
        // Orders of one district are contiguous and ordered by o_id; lines by (o_id, ol).
        assert!(order_key(1, 10, u32::MAX as u64) < order_key(2, 1, 0));
        assert!(order_key(1, 2, 5) < order_key(1, 2, 6));
        assert!(order_line_key(1, 2, 5, 15) < order_line_key(1, 2, 6, 1));
        assert!(order_line_key(65535, 10, u32::MAX as u64, 15) > order_line_key(65534, 10, 0, 1));
        assert!(order_customer_key(3, 4, 4095, 1) < order_customer_key(3, 5, 1, 1));
        assert!(
            order_customer_key(65535, 10, 4095, u32::MAX as u64)
                > order_customer_key(65535, 10, 4094, 1)
        );
        assert!(customer_name_key(1, 1, 999, 4095) < customer_name_key(1, 2, 0, 0));
        assert_ne!(stock_key(1, (1 << 20) - 1), stock_key(2, 0));
        assert_ne!(customer_key(1, 10, 4095), customer_key(2, 1, 0));
    }

    #[test]
    fn column_constants_match_the_catalog() {
        let w = Tpcc::new(TpccConfig::default()).unwrap();
        let c = w.catalog();
        assert_eq!(c.tables.len(), 11);
        assert_eq!(
            c.tables[CUSTOMER.0 as usize].columns[customer::C_DATA].name,
            "c_data"
        );
        assert_eq!(
            c.tables[STOCK.0 as usize].columns[stock::S_DIST_10].name,
            "s_dist_10"
        );
        assert_eq!(
            c.tables[ORDER_BY_CUSTOMER.0 as usize].name,
            "order_by_customer"
        );
    }

    #[test]
    fn config_validation_and_json_round_trip() {
        assert!(
            Tpcc::new(TpccConfig {
                warehouses: 0,
                ..TpccConfig::default()
            })
            .is_err()
        );
        assert!(
            Tpcc::new(TpccConfig {
                customers_per_district: 5000,
                ..TpccConfig::default()
            })
            .is_err()
        );
        let cfg = TpccConfig {
            warehouses: 3,
            mix: Mix::PaymentOnly,
            ..TpccConfig::default()
        };
        let v = Tpcc::new(cfg).unwrap().params();
        let back: TpccConfig = serde_json::from_value(v).unwrap();
        assert_eq!(back, cfg);
        assert_eq!(TpccConfig::default().first_undelivered(), 2101);
        assert_eq!("payment-only".parse::<Mix>().unwrap(), Mix::PaymentOnly);
    }
}
