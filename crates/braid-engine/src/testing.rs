//! Test machinery for the project's own crash tests and benches (the `testing` cargo
//! feature): simulated persistent memory that power failures crash, and the tables and rows
//! the ordered-index bench drives without a transaction. Not part of the API a user holds.

pub use crate::env::{Env, PmemEnv, SimPmem};
pub use crate::row::{Row, RowState};
pub use crate::table::Table;
