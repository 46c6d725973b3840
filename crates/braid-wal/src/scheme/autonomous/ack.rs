//! Parallel acknowledgement by the thread that waits for a commit: no commit daemon, no
//! group-commit queue (Nguyen et al., SIGMOD 2025, "autonomous commit": each worker
//! acknowledges its own transactions once its log is durable past them and, for each
//! dependency (worker `w`, GSN `g`) a transaction recorded, log `w` is durable up to `g`).
//!
//! # Settled GSNs
//!
//! Each log keeps a *settled* GSN (`Log::settled`): every commit of that log up to it is
//! durable, and so is everything it depends on, transitively. A commit of log `x` with GSN
//! `g` is acknowledged once `x` is settled up to `g` ([`settle`]): that covers its own
//! dependencies (it is in `x`'s queue of commits with dependencies, `LogInner::remote`) and
//! every earlier commit of its log, which a transaction may read without recording it. A
//! log's settled GSN moves in GSN order, by whoever needs it, as Taurus's workers help move
//! the committed LSN vector (Xia et al. 2021, Alg. 3), per log:
//!
//! 1. make `x` durable up to `g`: find, under `x`'s insert lock, its first record with a GSN
//!    of at least `g` not known durable ([`point`]), inserting a **barrier** (a clock record
//!    stamped `g`, the paper's barrier transaction) if `x`'s clock is below `g`, and wait for
//!    it; a waiter that finds no flush of `x` under way runs the flush itself
//!    (`stream/lead.rs`): **log stealing**;
//! 2. settle, the same way, every dependency `(y, q)` of `x`'s queued commits up to `g`;
//! 3. advance `x`'s settled GSN to its durable GSN, stopping below the first queued commit
//!    whose dependencies are not all settled ([`advance`]).
//!
//! Every insert into the log runs step 3 as well (under the insert lock it holds anyway), so a
//! log's settled GSN follows its flushes while its worker commits, not only when a commit that
//! depends on it waits: a row whose writer's flush has completed is then no dependency.
//!
//! A dependency's GSN is below its commit's, so step 2 recurses on strictly smaller GSNs and
//! ends; a transitive dependency (log `y`'s commit up to `q` depended on a third log) is
//! settled by the recursion, because `y` is settled up to `q` only once its own queued commits
//! up to `q` are. A commit whose vector would name a page written by several logs (`MULTI`),
//! or a miss over many pages, depends on every log ([`ALL_LOGS`]): every log is settled up to
//! its GSN and the acknowledged GSN moves there (the old "every log" wait, counted as
//! `remote_all_logs`). Recovery decides the same way (`gsn/live.rs`).
//!
//! A commit with no dependency, in a log whose queue was empty when it was inserted, is
//! acknowledged by its own log's flush (a stream ticket, `gsn/worker.rs`).

use std::sync::Arc;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};

use crate::record::Kind;
use crate::scheme::gsn::deps::ALL_LOGS;
use crate::scheme::gsn::log::{Log, LogInner};
use crate::scheme::gsn::shared::Shared;
use crate::scheme::{DurabilityWait, Ticket};
use crate::{Lsn, WalError};

/// The ticket of a commit of log `log` with GSN `gsn` whose acknowledgement needs more than
/// its own record durable: durable once `log` is settled up to `gsn`.
pub(crate) fn commit_ticket(s: &Arc<Shared>, log: usize, gsn: u64) -> Ticket {
    Ticket::waiter(Box::new(SettleWait {
        shared: Arc::clone(s),
        targets: vec![(log as u16, gsn)],
    }))
}

/// The ticket of a read-only transaction of log `log`'s worker with GSN `gsn` and
/// dependencies `deps`: what it read of its own log (up to that log's clock) and what it
/// depends on, settled.
pub(crate) fn read_ticket(
    s: &Arc<Shared>,
    log: usize,
    gsn: u64,
    mut deps: Vec<(u16, u64)>,
) -> Result<Ticket, WalError> {
    let l = &s.logs[log];
    let (own, alone) = {
        let g = l.inner.lock();
        (gsn.min(g.clock), g.remote.is_empty())
    };
    if deps.is_empty() && alone {
        // What it read is in its own log, below the tail, or settled.
        return Ok(Ticket::stream(l.stream.clone(), l.stream.tail()));
    }
    deps.push((log as u16, own));
    Ok(Ticket::waiter(Box::new(SettleWait {
        shared: Arc::clone(s),
        targets: deps,
    })))
}

/// Settle every log up to `gsn` and acknowledge it (a clean close: every commit
/// acknowledged, whatever its path).
pub(crate) fn settle_all(s: &Shared, gsn: u64) -> Result<(), WalError> {
    settle(s, ALL_LOGS, gsn)?;
    s.fills_ok()
}

/// Block until log `l` ([`ALL_LOGS`]: every log) is settled up to `gsn` (see the module doc).
pub(crate) fn settle(s: &Shared, l: u16, gsn: u64) -> Result<(), WalError> {
    if l == ALL_LOGS {
        if s.acked.load(SeqCst) >= gsn {
            return Ok(());
        }
        for y in 0..s.logs.len() {
            settle(s, y as u16, gsn)?;
        }
        s.acked.fetch_max(gsn, SeqCst);
        return Ok(());
    }
    let log = &s.logs[usize::from(l)];
    while s.settled_of(l) < gsn {
        if let Some(end) = point(s, usize::from(l), gsn)?
            && log.stream.durable() < end
        {
            s.counters.log_waits.fetch_add(1, Relaxed);
            log.stream.wait_durable(end)?;
        }
        for (y, q) in queued_deps(s, usize::from(l), gsn) {
            settle(s, y, q)?;
        }
        advance(s, usize::from(l));
    }
    Ok(())
}

/// Non-blocking [`settle`]: moves what can move now (inserting barriers, waking flushes) and
/// says whether log `l` is settled up to `gsn`.
fn try_settle(s: &Shared, l: u16, gsn: u64) -> Result<bool, WalError> {
    if l == ALL_LOGS {
        if s.acked.load(SeqCst) >= gsn {
            return Ok(true);
        }
        for y in 0..s.logs.len() {
            if !try_settle(s, y as u16, gsn)? {
                return Ok(false);
            }
        }
        s.acked.fetch_max(gsn, SeqCst);
        return Ok(true);
    }
    if s.settled_of(l) >= gsn {
        return Ok(true);
    }
    let x = usize::from(l);
    if let Some(end) = point(s, x, gsn)?
        && !s.logs[x].stream.check_durable(end)?
    {
        return Ok(false);
    }
    for (y, q) in queued_deps(s, x, gsn) {
        if !try_settle(s, y, q)? {
            return Ok(false);
        }
    }
    advance(s, x);
    Ok(s.settled_of(l) >= gsn)
}

/// The dependencies of log `l`'s queued commits with a GSN up to `gsn`.
fn queued_deps(s: &Shared, l: usize, gsn: u64) -> Vec<(u16, u64)> {
    let g = s.logs[l].inner.lock();
    g.remote
        .iter()
        .take_while(|e| e.0 <= gsn)
        .flat_map(|e| e.1.iter().copied())
        .collect()
}

/// Move log `l`'s settled GSN to its durable GSN, or below the first queued commit whose
/// dependencies are not all settled, dropping the queued commits now settled.
fn advance(s: &Shared, l: usize) {
    let log = &s.logs[l];
    advance_locked(s, log, &mut log.inner.lock());
}

/// [`advance`] under the log's insert lock. Every insert into an autonomous log runs it too
/// (`gsn/worker.rs`), so a log's settled GSN follows its flushes while its worker commits,
/// not only when some commit waits for it: a page whose last writer's flush has completed
/// then makes no dependency of the next transaction that touches it (fewer remote commits,
/// fewer that wait for every log).
pub(crate) fn advance_locked(s: &Shared, log: &Log, g: &mut LogInner) {
    log.prune(g);
    let durable = g.durable_gsn;
    let mut to = durable;
    while let Some((c, deps)) = g.remote.front() {
        if *c > durable {
            break;
        }
        if !deps.iter().all(|&(y, q)| s.settled_of(y) >= q) {
            to = c - 1;
            break;
        }
        g.remote.pop_front();
    }
    // Most calls move nothing: a load first keeps the line shared with the logs' readers.
    if log.settled.load(SeqCst) < to {
        log.settled.fetch_max(to, SeqCst);
    }
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

/// A commit or read-only transaction waiting for logs to be settled: (log, GSN) targets.
struct SettleWait {
    shared: Arc<Shared>,
    targets: Vec<(u16, u64)>,
}

impl DurabilityWait for SettleWait {
    fn wait(&self) -> Result<(), WalError> {
        let s = &*self.shared;
        for &(l, g) in &self.targets {
            settle(s, l, g)?;
        }
        s.fills_ok()
    }

    fn is_durable(&self) -> Result<bool, WalError> {
        let s = &*self.shared;
        for &(l, g) in &self.targets {
            if !try_settle(s, l, g)? {
                return Ok(false);
            }
        }
        s.fills_ok().map(|()| true)
    }
}
