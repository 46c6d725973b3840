//! The one client every workload runs: a workload-specific [`TxnSource`] chooses the next
//! transaction and encodes its parameters (all random inputs travel as parameters, so command
//! logging can re-execute the call), and [`RetryingClient`] calls it as a stored procedure,
//! resubmitting the same call after a retryable conflict when the workload asks for it.
//!
//! There is no backoff and no outcome counting here: a conflicted call is returned to the
//! caller (which counts it) and resubmitted on the caller's next [`Client::run_one`] or
//! [`Client::run_one_async`].

use std::ops::{Deref, DerefMut};

use braid_engine::{Params, TxError, Worker, log::Ticket};

use crate::Client;

/// Chooses a client's transactions: what differs between the workloads' clients.
pub trait TxnSource: Send {
    /// Choose the next transaction and encode its parameters into `params` (clearing it
    /// first); returns the procedure id to call.
    fn next_txn(&mut self, params: &mut Params) -> u32;
}

/// What a client does after a call fails with a retryable conflict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnConflict {
    /// Resubmit the same call, with the same parameters, on the next run (a terminal retries
    /// its transaction: TPC-C, TATP, TPC-B).
    Resubmit,
    /// Draw a new transaction on the next run (YCSB, as the Taurus paper runs it).
    Redraw,
}

/// A [`Client`] that runs the transactions of a [`TxnSource`]; derefs to the source, so the
/// workload's own input generators stay callable on it.
pub struct RetryingClient<S> {
    source: S,
    on_conflict: OnConflict,
    params: Params,
    proc_id: u32,
    /// The last attempt failed with a retryable conflict and is to be resubmitted.
    retry: bool,
}

impl<S: TxnSource> RetryingClient<S> {
    /// A client drawing from `source`.
    pub fn new(source: S, on_conflict: OnConflict) -> RetryingClient<S> {
        RetryingClient {
            source,
            on_conflict,
            params: Params::new(),
            proc_id: 0,
            retry: false,
        }
    }

    /// Choose and encode the next transaction; returns its procedure id and parameters.
    pub fn generate(&mut self) -> (u32, &[u8]) {
        self.proc_id = self.source.next_txn(&mut self.params);
        (self.proc_id, &self.params.bytes)
    }

    /// Procedure id of the last generated transaction (0 before the first).
    pub fn proc_id(&self) -> u32 {
        self.proc_id
    }

    /// Parameters of the last generated transaction.
    pub fn params(&self) -> &[u8] {
        &self.params.bytes
    }
}

impl<S> Deref for RetryingClient<S> {
    type Target = S;
    fn deref(&self) -> &S {
        &self.source
    }
}

impl<S> DerefMut for RetryingClient<S> {
    fn deref_mut(&mut self) -> &mut S {
        &mut self.source
    }
}

impl<S: std::fmt::Debug> std::fmt::Debug for RetryingClient<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RetryingClient")
            .field("source", &self.source)
            .field("proc_id", &self.proc_id)
            .field("retry", &self.retry)
            .finish()
    }
}

impl<S: TxnSource> RetryingClient<S> {
    /// Run the next transaction (or resubmit the conflicted one) with `call`, and note whether
    /// to resubmit it.
    fn run_with<T>(
        &mut self,
        worker: &mut Worker,
        call: impl FnOnce(&mut Worker, u32, &[u8]) -> Result<T, TxError>,
    ) -> Result<T, TxError> {
        if !self.retry {
            self.generate();
        }
        let r = call(worker, self.proc_id, &self.params.bytes);
        self.retry =
            self.on_conflict == OnConflict::Resubmit && matches!(&r, Err(e) if e.is_retryable());
        r
    }
}

impl<S: TxnSource> Client for RetryingClient<S> {
    fn run_one(&mut self, worker: &mut Worker) -> Result<(), TxError> {
        self.run_with(worker, Worker::call)
    }

    fn run_one_async(&mut self, worker: &mut Worker) -> Result<Ticket, TxError> {
        self.run_with(worker, Worker::call_async)
    }
}
