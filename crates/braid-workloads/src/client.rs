//! The one client every workload runs: a workload-specific [`TxnSource`] chooses the next
//! transaction and encodes its parameters (all random inputs travel as parameters, so command
//! logging can re-execute the call), and [`RetryingClient`] calls it as a stored procedure,
//! resubmitting the same call after a retryable conflict when the workload asks for it.
//!
//! [`RetryingClient::pregenerate`] draws the next transactions before a run
//! ([`Pregenerated`]), so that drawing them is not timed; the client then takes them in turn.
//! With [`RetryingClient::prefetch_ahead`] it announces the rows of the coming transactions
//! ([`TxnSource::rows`]) to [`Worker::prefetch`] a batch at a time: those drawn before the
//! run, or else the source's next few, drawn that much ahead (`window.rs`).
//!
//! There is no backoff and no outcome counting here: a conflicted call is returned to the
//! caller (which counts it) and resubmitted on the caller's next [`Client::run_one`] or
//! [`Client::run_one_async`].

use std::ops::{Deref, DerefMut};

use braid_engine::log::{Prefetch, Ticket};
use braid_engine::{Params, TableId, TxError, Worker};

use crate::Client;
use crate::error::PregenerateError;
use crate::pregenerated::Pregenerated;
use crate::window::Window;

/// Chooses a client's transactions: what differs between the workloads' clients.
pub trait TxnSource: Send {
    /// Choose the next transaction and encode its parameters into `params` (clearing it
    /// first); returns the procedure id to call.
    fn next_txn(&mut self, params: &mut Params) -> u32;

    /// Whether its transactions may be drawn before the run ([`Pregenerated::draw`]): not when
    /// whoever drives the client reads more of the source per transaction than the call
    /// (marked YCSB's written keys, which the crash oracle records as each one is drawn).
    fn check_pregenerate(&self) -> Result<(), PregenerateError> {
        Ok(())
    }

    /// Call `row` with each (table, key) the transaction `proc_id` with `params` will touch
    /// that its parameters name (for [`Worker::prefetch`]); none by default. A hint: keys
    /// missed or extra only cost the prefetch.
    fn rows(&self, proc_id: u32, params: &[u8], row: &mut dyn FnMut(TableId, u64)) {
        let _ = (proc_id, params, row);
    }
}

/// A source for the tests of what draws from sources: transaction `i` (0, 1, ...) is procedure
/// `i % 3` with `i` bytes, each `i`.
#[cfg(test)]
pub(crate) struct Counting(pub(crate) u8);

#[cfg(test)]
impl TxnSource for Counting {
    fn next_txn(&mut self, params: &mut Params) -> u32 {
        params.clear();
        let i = self.0;
        self.0 += 1;
        params.bytes.extend(std::iter::repeat_n(i, usize::from(i)));
        u32::from(i % 3)
    }
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
    /// Transactions drawn before the run, taken in place of the source's.
    ahead: Option<Pregenerated>,
    /// The last attempt failed with a retryable conflict and is to be resubmitted.
    retry: bool,
    /// Transactions per prefetch batch of the drawn-ahead ones (0: none).
    batch: usize,
    /// Without transactions drawn before the run: the source's next ones, drawn three
    /// batches ahead for the prefetch.
    window: Option<Window>,
    /// Transactions taken since the drawn-ahead ones were announced last.
    since: usize,
    /// The rows of the batch being announced (reused).
    rows: Vec<(TableId, u64)>,
}

impl<S: TxnSource> RetryingClient<S> {
    /// A client drawing from `source`.
    pub fn new(source: S, on_conflict: OnConflict) -> RetryingClient<S> {
        RetryingClient {
            source,
            on_conflict,
            params: Params::new(),
            proc_id: 0,
            ahead: None,
            retry: false,
            batch: 0,
            window: None,
            since: 0,
            rows: Vec::new(),
        }
    }

    /// Choose and encode the next transaction (the next one drawn ahead, after
    /// [`RetryingClient::pregenerate`]); returns its procedure id and parameters.
    pub fn generate(&mut self) -> (u32, &[u8]) {
        self.proc_id = match (&mut self.ahead, &mut self.window) {
            (Some(ahead), _) => ahead.next_txn(&mut self.params),
            (None, Some(window)) => window.next_txn(&mut self.source, &mut self.params),
            (None, None) => self.source.next_txn(&mut self.params),
        };
        (self.proc_id, &self.params.bytes)
    }

    /// Draw the source's next `n` transactions now; the client then takes them in turn (a
    /// transaction redrawn after a conflict is the next one), and starts over at the first
    /// once all were taken. `n` = 0 goes back to drawing each transaction as it runs.
    /// Memory: see [`Pregenerated`].
    pub fn pregenerate(&mut self, n: usize) -> Result<(), PregenerateError> {
        self.ahead = match n {
            0 => None,
            n => Some(Pregenerated::draw(&mut self.source, n)?),
        };
        Ok(())
    }

    /// The transactions drawn ahead, if [`RetryingClient::pregenerate`] drew any.
    pub fn pregenerated(&self) -> Option<&Pregenerated> {
        self.ahead.as_ref()
    }

    /// Announce the coming transactions to [`Worker::prefetch`] in batches of `batch` (0:
    /// never). Every `batch` transactions taken, the next batch's rows (located a batch
    /// earlier) start loading ([`Prefetch::Body`]) and the batch after it is located
    /// ([`Prefetch::Locate`]), so that a transaction finds its rows in cache. The coming
    /// transactions are those drawn before the run ([`RetryingClient::pregenerate`]), or else
    /// the source's own, each drawn three batches before it runs (in the source's order, so
    /// the client runs the same transactions); a source that may not be drawn ahead
    /// ([`TxnSource::check_pregenerate`]) is not announced. Set it before the first
    /// transaction.
    pub fn prefetch_ahead(&mut self, batch: usize) {
        self.batch = batch;
        self.since = 0;
        self.window =
            (batch > 0 && self.source.check_pregenerate().is_ok()).then(|| Window::new(3 * batch));
    }

    /// Before the next transaction is taken: at a batch's start, announce the two batches
    /// after it (see [`RetryingClient::prefetch_ahead`]).
    fn announce(&mut self, worker: &Worker) {
        let b = self.batch;
        if b == 0 {
            return;
        }
        if self.since == 0 {
            let (ahead, window) = (&self.ahead, &self.window);
            let peek = |k: usize| match (ahead, window) {
                (Some(ahead), _) => Some(ahead.peek(k)),
                (None, Some(window)) => window.peek(k),
                (None, None) => None,
            };
            let rows = &mut self.rows;
            for (from, step) in [(b, Prefetch::Body), (2 * b, Prefetch::Locate)] {
                rows.clear();
                for (proc_id, params) in (from..from + b).filter_map(peek) {
                    self.source
                        .rows(proc_id, params, &mut |t, key| rows.push((t, key)));
                }
                if !rows.is_empty() {
                    worker.prefetch(&mut rows.iter().copied(), step);
                }
            }
        }
        self.since = (self.since + 1) % b;
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
            .field("ahead", &self.ahead)
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
            self.announce(worker);
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

    fn pregenerate(&mut self, n: usize) -> Result<(), PregenerateError> {
        RetryingClient::pregenerate(self, n)
    }

    fn prefetch_ahead(&mut self, batch: usize) {
        RetryingClient::prefetch_ahead(self, batch)
    }
}
