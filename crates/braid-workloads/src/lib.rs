//! braid-workloads: the OLTP benchmarks that exercise braid's logging schemes, written against
//! the engine's public API only. Every transaction is a registered stored procedure, so the same
//! workload runs with data logging (its writes are logged) or command logging (the call is
//! logged and re-executed at recovery).
//!
//! A [`Workload`] gives the catalog, the procedures and the initial image for [`Db::builder`], and
//! a [`Client`] per worker thread that generates and runs its transactions:
//!
//! ```
//! use braid_workloads::tpcb::{Tpcb, TpcbConfig};
//! use braid_workloads::{Client, Workload};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let tmp = tempfile::tempdir()?;
//! # let dir = tmp.path();
//! let cfg = TpcbConfig::default().branches(1).accounts_per_branch(1_000);
//! let w = Tpcb::new(cfg)?;
//! // The workload's catalog, procedures and initial rows; the default options.
//! let (db, _) = w.db(dir).open()?;
//! let mut worker = db.worker()?;
//! let mut client = w.client(0, 42);
//! for _ in 0..10 {
//!     client.run_one(&mut worker)?; // durable once this returns
//! }
//! w.check(&db)?;
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]

pub mod client;
mod error;
mod oltp;
pub mod pregenerated;
pub mod tatp;
pub mod tpcb;
pub mod tpcc;
mod util;
mod window;
pub mod ycsb;

use braid_engine::{
    Catalog, Db, EngineError, Loader, OpenBuilder, Procedures, TxError, Worker, log::Ticket,
};

pub use client::{OnConflict, RetryingClient, TxnSource};
pub use error::{ConsistencyError, PregenerateError, UnknownMix};
pub use pregenerated::Pregenerated;

/// A benchmark workload.
pub trait Workload: Send + Sync {
    /// Short name (`ycsb`, `tpcc`, ...).
    fn name(&self) -> &str;
    /// The workload's parameters, for reports.
    fn params(&self) -> serde_json::Value;
    /// The tables, to pass to [`Db::builder`].
    fn catalog(&self) -> Catalog;
    /// The workload's transactions as stored procedures, to pass to [`Db::builder`].
    fn procedures(&self) -> Procedures;
    /// Rows of the initial image (for progress bars).
    fn initial_rows(&self) -> u64;
    /// Build the initial image; deterministic. `progress` is told how many rows were added.
    fn load(&self, loader: &Loader<'_>, progress: &(dyn Fn(u64) + Sync))
    -> Result<(), EngineError>;
    /// A transaction generator for worker thread `index`.
    fn client(&self, index: usize, seed: u64) -> Box<dyn Client>;
    /// Start opening a database of this workload in `dir` ([`Db::builder`] with its catalog,
    /// procedures and loader; give the options, then open).
    fn db(&self, dir: &std::path::Path) -> OpenBuilder<'_> {
        Db::builder(dir)
            .catalog(self.catalog())
            .procedures(self.procedures())
            .loader(|l| self.load(l, &|_| {}))
    }
    /// Consistency conditions that must hold after any run or recovery.
    fn check(&self, _db: &Db) -> Result<(), ConsistencyError> {
        Ok(())
    }
}

/// Generates and runs one transaction at a time on a worker.
pub trait Client: Send {
    /// Run the next transaction ([`Worker::call`]); returns once it is durable.
    fn run_one(&mut self, worker: &mut Worker) -> Result<(), TxError>;
    /// Run the next transaction with a pipelined commit ([`Worker::call_async`]); returns as
    /// soon as its record is in the log buffer, with the ticket that resolves when it is
    /// durable. Until then the transaction is not acknowledged and a crash may lose it.
    fn run_one_async(&mut self, worker: &mut Worker) -> Result<Ticket, TxError>;
    /// Draw the next `n` transactions now, before a timed run, and take them in turn from
    /// then on, starting over at the first once all were taken ([`Pregenerated`]; the
    /// Taurus paper's code draws every query before its run). `n` = 0 draws each
    /// transaction as it runs again. Clients that cannot draw ahead say so (the default).
    fn pregenerate(&mut self, n: usize) -> Result<(), PregenerateError> {
        match n {
            0 => Ok(()),
            _ => Err(PregenerateError::Unsupported),
        }
    }
    /// Announce the rows of the coming transactions (those drawn before the run with
    /// [`Client::pregenerate`], or else the next few, drawn that much ahead) to
    /// [`Worker::prefetch`] in batches of `batch` transactions (0: never, the default), so
    /// their memory misses overlap the transactions that run before them. Set it before the
    /// first transaction. Clients whose transactions' rows cannot be told from their
    /// parameters announce nothing.
    fn prefetch_ahead(&mut self, batch: usize) {
        let _ = batch;
    }
}
