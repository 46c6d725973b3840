//! The parts of a [`Workload`](crate::Workload) impl the OLTP workloads (TPC-C, TATP, TPC-B)
//! share: their parameters as JSON, a catalog from table definitions, and the procedure
//! registry from a table of `(id, name, procedure)`.

use braid_engine::TableDef;
use braid_engine::{Catalog, Procedures, TxError, Txn};
use serde::Serialize;

/// A workload's stored procedure.
pub(crate) type Procedure = fn(&mut Txn<'_>, &[u8]) -> Result<(), TxError>;

/// A configuration as the JSON reports record (`null` if it cannot be represented, which the
/// plain-data configurations never are).
pub(crate) fn params_json(cfg: &impl Serialize) -> serde_json::Value {
    serde_json::to_value(cfg).unwrap_or(serde_json::Value::Null)
}

/// The catalog of these tables, in order (the first is table 0).
pub(crate) fn catalog(defs: impl IntoIterator<Item = TableDef>) -> Catalog {
    let mut c = Catalog::new();
    for def in defs {
        c.add(def);
    }
    c
}

/// The registry of these procedures.
pub(crate) fn procedures(list: &[(u32, &str, Procedure)]) -> Procedures {
    let mut p = Procedures::new();
    for &(id, name, f) in list {
        p.register(id, name, f);
    }
    p
}
