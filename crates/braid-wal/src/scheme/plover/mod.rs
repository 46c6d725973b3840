//! `plover`: parallel data logging partitioned by the data accessed, with per-log sequence
//! numbers (Zhou et al., "Plover: parallel logging for replication systems", Frontiers of
//! Computer Science 2020), as the Taurus paper describes and measures it (Xia et al., VLDB
//! 2021, Sec. 5 "Plover: This parallel data logging scheme partitions log records based on
//! data accesses. It uses per-log sequence numbers to enforce a total order among
//! transactions. Each transaction generates multiple log entries", and Sec. 5.2).
//!
//! * **Partitions** (`partition.rs`): `n` logs, one per partition; a row's partition is a hash
//!   of (table, key) mod `n`, so a row lives in exactly one partition.
//! * **Records** (`record.rs`): a transaction writes one record to each partition it
//!   accessed, holding its redo images of the rows it wrote there, stamped with the
//!   transaction's global sequence number and its number of records.
//! * **Sequence numbers** (`seq.rs`): the transaction latches the per-log counters of its
//!   partitions in partition order, takes `max + 1` as its global number, sets those
//!   counters to it and reserves its records' space while it holds the latches, so each log
//!   is totally ordered by sequence number (and by position, the same order); it encodes and
//!   copies the records into the reserved space after releasing them.
//! * **Commit** (`worker.rs`): acknowledged only once all of its records are durable, and
//!   (see below) everything before them that recovery could cut them with.
//! * **Recovery** (`recovery.rs`, the cut in `cut.rs`): read every log's valid prefix, keep a
//!   transaction only if all of its records are there, cutting each log at its first
//!   incomplete transaction to a fixpoint, and replay each log independently, in one pass:
//!   `min(logs, recovery_threads)` threads each read and replay whole logs, replaying a
//!   record as soon as every log has been read past its sequence number and every
//!   transaction up to it was found whole (those records are in the cut whatever the rest
//!   of the logs holds); the cut proper runs only on what follows the first incomplete one.
//!
//! Why independent per-log replay is correct: two transactions that conflict on a row both
//! log to that row's partition (the writer its images, the reader an empty record, below),
//! and they append there in the order they held the row, since a transaction appends before
//! it releases its locks. So every write-write and write-read order between two transactions
//! is the order of their records in one log, and replaying each log in its own order, logs
//! in any interleaving, installs every row's images in the order its writers held it.
//!
//! Choices where the paper is vague:
//!
//! * **Partitions only read.** The Taurus paper says Plover "generates a log record for each
//!   accessed partition". We do write one for a partition the transaction only read: an
//!   empty record, which orders the reader after the writers it read in that log. Without it
//!   a transaction that read a row of partition `p` and wrote only partition `q` could be
//!   recovered while the writer it read from, lost from `p`, is not (early lock release lets
//!   it read a write that is not durable yet): closure would fail. A range scan reads every
//!   partition (hashing spreads a key range over all of them), so a scanning transaction
//!   writes a record to every log; this also orders it after a delete whose absence it
//!   observed. Read-only transactions write nothing.
//! * **What an acknowledgement waits for.** The paper acknowledges a transaction once its
//!   records are durable. That is not enough: if `A` writes partitions `p` and `r` and `B`
//!   then overwrites `A`'s row in `p`, `B`'s records can all be durable while `A`'s record in
//!   `r` is lost; recovery must then drop `A` and, because `B` follows `A` in `p` and may
//!   depend on it, `B` too, losing an acknowledged commit. So a ticket waits for its own
//!   records and, in every other log, for everything appended before the transaction took
//!   its latches (each log's reserved end then): every transaction that precedes it in one of
//!   its logs, transitively, had reserved the space of all of its records by then, and a
//!   log is durable up to a point only once every byte before it is filled.
//! * **Incomplete transactions.** A transaction missing a record is dropped from every log,
//!   and so is everything after its first record in each log (see `cut.rs`); the logs
//!   restart at the cut (`Stream::start` resets each device's tail there), so nothing dropped
//!   can come back in a later recovery once the logs grow again. New sequence numbers start
//!   above every number found, kept or not.
//! * **Checkpoints and truncation**: the seam's defaults (each log's reserved end for the
//!   checkpoint's cut; truncation releases each log up to the checkpoint, as `serial` and
//!   `taurus` do). A transaction's records all carry its epoch bit, and records of the new
//!   epoch are all reserved after the cut's start on every log, so a transaction is covered by
//!   the checkpoint on all of its logs or on none.
//! * **Command logging is refused**: a command cannot be split by partition and re-executing
//!   it in one partition's log order would need the other partitions' state at that point.
//! * **MVCC is refused**: records are split by partition, without the per-transaction commit
//!   timestamp envelope MVCC replay reads.
//! * A record whose append fails after others of its transaction went in breaks the scheme:
//!   nothing is acknowledged any more (its partial records would cut later ones).

mod cut;
mod merge;
mod partition;
mod record;
mod recovery;
mod seq;
mod worker;

#[cfg(test)]
pub(crate) use partition::partition_of;
pub(crate) use seq::MAX_LOGS;

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use super::registry::{Registration, SchemeDef};
use super::{RecoveryReport, Replay, Scheme, SchemeConfig, SchemeWorker, Storage};
use crate::WalError;
use crate::device::Device;
use crate::stream::Stream;
use seq::SeqCounters;
use worker::PloverWorker;

/// The scheme's name.
pub(crate) const NAME: &str = "plover";

/// The scheme's registration (see [`super::SCHEMES`]).
pub(crate) const REGISTRATION: Registration = Registration {
    name: NAME,
    about: "Plover: data logging partitioned by rows accessed, per-log sequence numbers",
    default: || Box::new(PloverConfig),
};

/// Why Plover refuses command logging.
pub(crate) const NO_COMMAND_LOGGING: &str = "the plover scheme cannot log commands: it splits a \
    transaction's log into one record per partition accessed, and a partitioned command \
    record cannot be re-executed per partition; use data logging (LogKind::Data)";

/// Why Plover refuses the engine's multi-version concurrency control.
pub(crate) const NO_MVCC: &str = "the plover scheme cannot recover a multi-versioned database: its \
    records split a transaction's redo images by partition, without the commit timestamps \
    MVCC records carry; use the 2PL or OCC concurrency control with plover";

/// The `plover` scheme's configuration (it has no options of its own).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PloverConfig;

impl SchemeDef for PloverConfig {
    fn name(&self) -> &'static str {
        NAME
    }
    fn streams_for(&self, requested: usize) -> usize {
        requested.clamp(1, MAX_LOGS)
    }
    fn command_logging_refusal(&self) -> Option<&'static str> {
        Some(NO_COMMAND_LOGGING)
    }
    fn mvcc_refusal(&self) -> Option<&'static str> {
        Some(NO_MVCC)
    }
    fn open(
        &self,
        cfg: &SchemeConfig,
        storage: Storage,
        replay: &dyn Replay,
        progress: &dyn Fn(u64),
    ) -> Result<(Arc<dyn Scheme>, RecoveryReport), WalError> {
        let (p, r) = open_plover(cfg, storage.devices(NAME)?, replay, progress)?;
        Ok((p, r))
    }
    fn clone_def(&self) -> Box<dyn SchemeDef> {
        Box::new(*self)
    }
}

/// What every worker and ticket shares.
pub(crate) struct Shared {
    pub(crate) streams: Vec<Stream>,
    pub(crate) seqs: SeqCounters,
    /// Set when a transaction's records went only partly into their logs.
    broken: OnceLock<WalError>,
    /// The workers' scalability proxies ([`crate::proxy`]); lanes: the logs.
    pub(crate) board: crate::proxy::ProxyBoard,
}

impl Shared {
    /// The error that keeps anything from being acknowledged, if any.
    pub(crate) fn check(&self) -> Result<(), WalError> {
        match self.broken.get() {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    pub(crate) fn break_with(&self, e: &WalError) {
        let _ = self.broken.set(e.clone());
    }
}

/// The running Plover scheme.
pub(crate) struct Plover {
    sh: Arc<Shared>,
}

impl Plover {
    /// The sequence number of log `p`'s newest record (for tests and inspection).
    #[cfg(test)]
    pub(crate) fn log_seq(&self, p: usize) -> u64 {
        self.sh.seqs.current(p)
    }
}

impl Scheme for Plover {
    fn name(&self) -> &'static str {
        NAME
    }
    fn worker(&self, _worker: usize) -> Result<Box<dyn SchemeWorker>, WalError> {
        Ok(Box::new(PloverWorker::new(Arc::clone(&self.sh))?))
    }
    fn streams(&self) -> &[Stream] {
        &self.sh.streams
    }
    fn close(&self) -> Result<(), WalError> {
        let mut first = Ok(());
        for s in &self.sh.streams {
            if let Err(e) = s.close()
                && first.is_ok()
            {
                first = Err(e);
            }
        }
        first
    }
    fn proxies(&self) -> Option<crate::proxy::Proxies> {
        Some(self.sh.board.sum())
    }
}

/// Recover the logs and start them; the concrete type (for tests and tools).
pub(crate) fn open_plover(
    cfg: &SchemeConfig,
    devices: Vec<Arc<dyn Device>>,
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
) -> Result<(Arc<Plover>, RecoveryReport), WalError> {
    let n = devices.len();
    if n == 0 || n > MAX_LOGS {
        return Err(WalError::StreamCount {
            scheme: NAME.to_string(),
            given: n,
            min: 1,
            max: MAX_LOGS,
        });
    }
    let started = Instant::now();
    let out = recovery::recover(cfg, &devices, replay, progress)?;
    let mut report = out.report;
    report.seconds = started.elapsed().as_secs_f64();
    let streams = cfg.start_streams(devices, &out.ends)?;
    let sh = Shared {
        streams,
        seqs: SeqCounters::new(n, out.max_seq),
        broken: OnceLock::new(),
        board: crate::proxy::ProxyBoard::new(n),
    };
    Ok((Arc::new(Plover { sh: Arc::new(sh) }), report))
}
