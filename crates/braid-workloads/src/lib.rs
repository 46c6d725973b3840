//! braid-workloads: the OLTP benchmarks that exercise braid's logging schemes, written against
//! the engine's public API only. Every transaction is a registered stored procedure, so the same
//! workload runs with data logging (its writes are logged) or command logging (the call is
//! logged and re-executed at recovery).

pub mod tatp;
pub mod tpcb;
pub mod tpcc;
mod util;
pub mod ycsb;

use braid_engine::{Catalog, Db, EngineError, Loader, Procedures, Ticket, TxError, Worker};

/// A benchmark workload.
pub trait Workload: Send + Sync {
    /// Short name (`ycsb`, `tpcc`, ...).
    fn name(&self) -> &str;
    /// The workload's parameters, for reports.
    fn params(&self) -> serde_json::Value;
    fn catalog(&self) -> Catalog;
    fn procedures(&self) -> Procedures;
    /// Rows of the initial image (for progress bars).
    fn initial_rows(&self) -> u64;
    /// Build the initial image; deterministic. `progress` is told how many rows were added.
    fn load(&self, loader: &Loader<'_>, progress: &(dyn Fn(u64) + Sync))
    -> Result<(), EngineError>;
    /// A transaction generator for worker thread `index`.
    fn client(&self, index: usize, seed: u64) -> Box<dyn Client>;
    /// Consistency conditions that must hold after any run or recovery.
    fn check(&self, _db: &Db) -> Result<(), String> {
        Ok(())
    }
}

/// Generates and runs one transaction at a time on a worker.
pub trait Client: Send {
    /// Run the next transaction; returns its durability ticket.
    fn run_one(&mut self, worker: &mut Worker) -> Result<Ticket, TxError>;
}
