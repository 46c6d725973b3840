//! Parallel acknowledgement of a commit that needs a remote flush, by the thread that waits for
//! it: no commit daemon, no group-commit queue (Nguyen et al., SIGMOD 2025, "autonomous
//! commit": each worker acknowledges its own transactions once the logs they depend on are
//! durable).
//!
//! A commit with GSN `g` that touched a row another log wrote and has not yet made durable
//! everywhere (Remote Flush Avoidance's test, `gsn/worker.rs`) is acknowledged once every log
//! is durable up to `g`: that is what recovery's bound needs (`gsn/recovery.rs`: a
//! transaction above the smallest of the logs' largest recovered GSNs is not replayed unless
//! it was local). For each log the commit finds, under that log's insert lock, the first
//! record with a GSN of at least `g` not yet known durable ([`point`]):
//!
//! * none, because the log is durable up to `g` already: nothing to wait for;
//! * none, because the log's clock is below `g` (its worker is idle or behind): a **barrier**,
//!   a clock record stamped `g`, is inserted into that log (the paper's barrier transaction,
//!   which moves an idle worker's GSN forward so that it never holds the others back);
//! * else that record.
//!
//! The points are found when the commit returns its ticket, so that a flush of the other log
//! already under way, or the next one its own worker runs, carries the barrier. Waiting for a
//! point is the stream's ordinary wait: a waiter that finds no flush of that log under way
//! runs the flush itself (`stream/lead.rs`), which is **log stealing**: the committer writes
//! out a peer's buffer rather than wait for the peer. Once every point is durable the
//! acknowledged GSN moves to `g` (`fetch_max`, by the commits that needed a remote flush
//! only), which is what Remote Flush Avoidance's test reads.

use std::sync::Arc;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};

use crate::record::Kind;
use crate::scheme::gsn::shared::Shared;
use crate::scheme::{DurabilityWait, Ticket};
use crate::{Lsn, WalError};

/// The ticket of a commit (or read-only transaction) with GSN `gsn` that needs a remote
/// flush: durable at once if `gsn` is acknowledged already, else a wait for every log's point
/// (see the module doc), barriers inserted now.
pub(crate) fn ticket(s: &Arc<Shared>, gsn: u64) -> Result<Ticket, WalError> {
    if s.acked.load(SeqCst) >= gsn {
        s.fills_ok()?;
        return Ok(Ticket::DURABLE);
    }
    let mut points = Vec::new();
    for l in 0..s.logs.len() {
        if let Some(end) = point(s, l, gsn)? {
            points.push((l, end));
        }
    }
    Ok(Ticket::waiter(Box::new(RemoteWait {
        shared: Arc::clone(s),
        gsn,
        points,
    })))
}

/// Make every log durable up to `gsn` and acknowledge it (a clean close: every commit
/// acknowledged, whatever its path).
pub(crate) fn settle(s: &Arc<Shared>, gsn: u64) -> Result<(), WalError> {
    ticket(s, gsn)?.wait()
}

/// Under log `l`'s insert lock: the end of its first record with a GSN of at least `gsn` not
/// known durable, inserting a barrier if the log's clock is below `gsn`; `None` if the log is
/// durable up to `gsn`.
fn point(s: &Shared, l: usize, gsn: u64) -> Result<Option<Lsn>, WalError> {
    let log = &s.logs[l];
    let mut g = log.inner.lock();
    log.prune(&mut g);
    if g.durable_gsn >= gsn {
        return Ok(None);
    }
    if g.clock < gsn {
        let (_, end) =
            log.insert_locked(&mut g, &s.cfg, gsn - 1, Kind::Checkpoint, 0, 0, &[], true)?;
        s.counters.clock_records.fetch_add(1, Relaxed);
        return Ok(Some(end));
    }
    // Every record above the durable GSN is pending, in GSN order, and the clock (the newest
    // one's GSN) is at least `gsn`: one of them is the point. The last one is a safe answer
    // should that ever not hold.
    Ok(g.pending
        .iter()
        .find(|p| p.1 >= gsn)
        .or(g.pending.back())
        .map(|p| p.0))
}

/// A commit waiting for the points of [`ticket`].
struct RemoteWait {
    shared: Arc<Shared>,
    gsn: u64,
    /// (log, end) to be durable.
    points: Vec<(usize, Lsn)>,
}

impl DurabilityWait for RemoteWait {
    fn wait(&self) -> Result<(), WalError> {
        let s = &*self.shared;
        if s.acked.load(SeqCst) < self.gsn {
            for &(l, end) in &self.points {
                let stream = &s.logs[l].stream;
                if stream.durable() < end {
                    s.counters.log_waits.fetch_add(1, Relaxed);
                    stream.wait_durable(end)?;
                }
            }
            s.acked.fetch_max(self.gsn, SeqCst);
        }
        s.fills_ok()
    }

    fn is_durable(&self) -> Result<bool, WalError> {
        let s = &*self.shared;
        if s.acked.load(SeqCst) < self.gsn {
            for &(l, end) in &self.points {
                if !s.logs[l].stream.check_durable(end)? {
                    return Ok(false);
                }
            }
            s.acked.fetch_max(self.gsn, SeqCst);
        }
        s.fills_ok().map(|()| true)
    }
}
