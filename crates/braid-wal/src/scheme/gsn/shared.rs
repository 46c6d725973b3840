//! What the gsn scheme's workers, its commit daemon and its tickets share: the logs, the page
//! clocks, the acknowledged GSN, the commit queue and the failure state. Commits are
//! acknowledged once `acked` reaches their GSN (passive group commit, Wang & Johnson Section
//! 4.1; file devices: durable GSN watermarks, see `commit.rs`).
//!
//! The commit queue is one [`Lane`] per worker, beside the worker's `dgsn` cell that the
//! daemon already visits: the worker *stores* the largest GSN it waits for in its own lane (a
//! worker's GSNs only grow), and the daemon's target is the largest over the lanes
//! ([`super::commit::queue_target`]). So a commit writes no word that other workers write: no
//! read-modify-write on a global word, however many workers commit. The worker's statistics
//! (its commit count) live in its lane too. A worker that goes away folds its lane into
//! `retired` (a `fetch_max`, off the commit path) before leaving the list, so a ticket it
//! left behind is still waited for.

use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, OnceLock};

use braid_pmem::signal::PublishCell;
use crossbeam_utils::CachePadded;
use parking_lot::Mutex;

use super::commit::{GsnWait, Link};
use super::config::GsnConfig;
use super::counters::GsnCounters;
use super::log::{Log, Mode};
use super::pages::PageTable;
use crate::WalError;
use crate::scheme::Ticket;
use crate::wait::Progress;

/// What the workers, the commit daemon and the tickets share.
pub(crate) struct Shared {
    pub cfg: GsnConfig,
    pub mode: Mode,
    /// Autonomous commit (`crate::scheme::autonomous`): no commit daemon; a commit that
    /// needs other logs durable makes them durable itself (`autonomous/ack.rs`).
    pub autonomous: bool,
    pub logs: Vec<Log>,
    pub pages: PageTable,
    /// Command logging: the pages' read GSNs (`reads.rs`); `None` under data logging.
    pub reads: Option<super::reads::ReadClocks>,
    /// Every commit with a GSN up to this is acknowledged.
    pub acked: CachePadded<AtomicU64>,
    /// The commit queue: each worker's lane (see the module doc).
    pub lanes: Mutex<Vec<Arc<Lane>>>,
    /// What workers that went away left in their lanes.
    pub retired: Lane,
    /// Tickets wait here for `acked`; notified when it moves and when a failure or the
    /// close makes a wait hopeless.
    pub acked_wait: Progress,
    /// The commit daemon waits here for work (a commit joining the queue) and, between
    /// rounds of passive group commit, for a worker's publication; notified by every commit
    /// and abort after its worker published, and by the stop.
    pub daemon_wait: Progress,
    pub cells: Mutex<Vec<Arc<PublishCell>>>,
    pub stop: AtomicBool,
    pub closed: AtomicBool,
    pub poison: OnceLock<WalError>,
    /// A transient failure (out of space) for commits up to the GSN.
    pub failed: Mutex<Option<(u64, WalError)>>,
    /// `failed` was set (so a commit that polls its ticket takes no lock otherwise).
    pub any_failed: AtomicBool,
    /// This instance's event counters.
    pub counters: GsnCounters,
    /// The workers' scalability proxies ([`crate::proxy`]); lanes: the logs.
    pub board: crate::proxy::ProxyBoard,
    /// Where open transactions' update records begin, one stream per log.
    pub open: Arc<crate::scheme::open_txns::OpenTxns>,
}

/// One worker's share of the commit queue and of the statistics: written by the worker only
/// (loads and stores), read by the daemon and by [`Shared::commits`].
#[derive(Debug, Default)]
pub(crate) struct Lane {
    /// The largest GSN this worker's commits wait for.
    pub want: CachePadded<AtomicU64>,
    /// Update commits this worker made.
    pub commits: AtomicU64,
    /// RFA: commits (read-only ones included) acknowledged by the worker's own log's flush.
    pub rfa_local: AtomicU64,
    /// RFA: commits that needed a remote flush (gsn: waited until every log was durable up
    /// to their GSN; autonomous commit: until the logs they depend on were settled).
    pub rfa_remote: AtomicU64,
    /// Autonomous commit: the logs named by the dependencies of those commits, summed (every
    /// log but its own for a fallback entry).
    pub dep_logs: AtomicU64,
    /// Autonomous commit: those commits that fell back to waiting for every log.
    pub all_logs: AtomicU64,
}

impl Lane {
    /// Owner only: wait for `gsn` too (a store: nobody else writes the word).
    #[inline]
    pub(crate) fn wait_for(&self, gsn: u64) {
        if self.want.load(SeqCst) < gsn {
            self.want.store(gsn, SeqCst);
        }
    }

    /// Owner only: one more commit.
    #[inline]
    pub(crate) fn count_commit(&self) {
        self.commits.store(self.commits.load(Relaxed) + 1, Relaxed);
    }

    /// Owner only: a commit that needed a remote flush waits for `logs` logs (`all`: every
    /// log, the fallback).
    #[inline]
    pub(crate) fn count_deps(&self, logs: u64, all: bool) {
        self.dep_logs
            .store(self.dep_logs.load(Relaxed) + logs, Relaxed);
        if all {
            self.all_logs
                .store(self.all_logs.load(Relaxed) + 1, Relaxed);
        }
    }

    /// Owner only: one more RFA decision, local or remote.
    #[inline]
    pub(crate) fn count_rfa(&self, local: bool) {
        let c = if local {
            &self.rfa_local
        } else {
            &self.rfa_remote
        };
        c.store(c.load(Relaxed) + 1, Relaxed);
    }
}

impl Shared {
    /// A lane for a new worker.
    pub(crate) fn lane(&self) -> Arc<Lane> {
        let l = Arc::new(Lane::default());
        self.lanes.lock().push(Arc::clone(&l));
        l
    }

    /// Whether commits use Remote Flush Avoidance: asked for, and on file logs (on persistent
    /// memory a commit never waits for another log's flush to begin with).
    #[inline]
    pub(crate) fn rfa(&self) -> bool {
        self.cfg.rfa && self.mode == Mode::Watermark
    }

    /// RFA: a GSN up to which the writes of log `w` are settled (durable, and everything they
    /// depend on too): the acknowledged GSN (every log durable up to it), or under autonomous
    /// commit the larger of that and the log's own settled GSN (`autonomous/ack.rs`).
    /// [`super::pages::MULTI`] (several logs): the acknowledged GSN.
    #[inline]
    pub(crate) fn settled_of(&self, w: u16) -> u64 {
        let acked = self.acked.load(SeqCst);
        match self.logs.get(usize::from(w)) {
            Some(log) if self.autonomous => acked.max(log.settled.load(SeqCst)),
            _ => acked,
        }
    }

    /// The largest GSN any log has stamped so far (each log's clock, read under its insert
    /// lock): every record inserted before this call is at or below it.
    pub(crate) fn max_clock(&self) -> u64 {
        self.logs
            .iter()
            .map(|l| l.inner.lock().clock)
            .max()
            .unwrap_or(0)
    }

    /// RFA decisions so far, every worker's: (local, remote, the logs remote ones depended
    /// on, those that fell back to every log).
    pub(crate) fn rfa_counts(&self) -> (u64, u64, u64, u64) {
        let lanes = self.lanes.lock();
        let sum = |f: fn(&Lane) -> &AtomicU64| {
            lanes.iter().map(|l| f(l).load(Relaxed)).sum::<u64>() + f(&self.retired).load(Relaxed)
        };
        (
            sum(|l| &l.rfa_local),
            sum(|l| &l.rfa_remote),
            sum(|l| &l.dep_logs),
            sum(|l| &l.all_logs),
        )
    }

    /// Worker gone: fold its lane into `retired` and drop it from the list.
    pub(crate) fn retire(&self, lane: &Arc<Lane>) {
        self.retired.want.fetch_max(lane.want.load(SeqCst), SeqCst);
        self.retired
            .commits
            .fetch_add(lane.commits.load(Relaxed), Relaxed);
        self.retired
            .rfa_local
            .fetch_add(lane.rfa_local.load(Relaxed), Relaxed);
        self.retired
            .rfa_remote
            .fetch_add(lane.rfa_remote.load(Relaxed), Relaxed);
        self.retired
            .dep_logs
            .fetch_add(lane.dep_logs.load(Relaxed), Relaxed);
        self.retired
            .all_logs
            .fetch_add(lane.all_logs.load(Relaxed), Relaxed);
        self.lanes.lock().retain(|x| !Arc::ptr_eq(x, lane));
    }

    /// The commit queue's target: the largest GSN any commit waits for.
    pub(crate) fn target(&self) -> u64 {
        let lanes = self.lanes.lock();
        super::commit::queue_target(
            lanes
                .iter()
                .map(|l| &*l.want)
                .chain(std::iter::once(&*self.retired.want)),
        )
    }

    /// Update commits so far (every worker's, exact once they are dropped).
    pub(crate) fn commits(&self) -> u64 {
        let lanes = self.lanes.lock();
        lanes.iter().map(|l| l.commits.load(Relaxed)).sum::<u64>()
            + self.retired.commits.load(Relaxed)
    }

    /// The error that keeps `gsn` from being acknowledged, if any.
    pub(crate) fn blocked(&self, gsn: u64) -> Result<(), WalError> {
        if let Some(e) = self.poison.get() {
            return Err(e.clone());
        }
        if self.any_failed.load(SeqCst)
            && let Some((upto, e)) = &*self.failed.lock()
            && gsn <= *upto
        {
            return Err(e.clone());
        }
        if self.closed.load(SeqCst) && self.acked.load(SeqCst) < gsn {
            return Err(WalError::Closed(0));
        }
        Ok(())
    }

    /// Whether the logs' persistence can still be trusted: on pmem the committing thread's
    /// own flush makes a record durable (no stream watermark is involved), so an msync that
    /// failed on the way ([`crate::device::Device::check_fills`]) must keep it from being
    /// acknowledged.
    pub(crate) fn fills_ok(&self) -> Result<(), WalError> {
        for log in self.logs.iter() {
            log.stream.device().check_fills()?;
        }
        Ok(())
    }

    pub(crate) fn advance(&self, to: u64) {
        self.acked.fetch_max(to, SeqCst);
        self.acked_wait.notify();
    }

    pub(crate) fn fail(&self, e: WalError, upto: u64) {
        match e {
            WalError::NoSpace { .. } => {
                *self.failed.lock() = Some((upto, e));
                self.any_failed.store(true, SeqCst);
            }
            e => {
                let _ = self.poison.set(e);
            }
        }
        self.acked_wait.notify();
    }

    /// Join the commit queue for `gsn` through the worker's `lane`; the ticket holds the
    /// committing worker's `link`. `proxy` counts the shared writes: none but the daemon's
    /// wake-up (its lock, a word every worker may write) when it is parked.
    pub(super) fn enqueue(
        &self,
        link: &Arc<Link>,
        lane: &Lane,
        gsn: u64,
        proxy: &crate::proxy::ProxyCounter,
    ) -> Result<Ticket, WalError> {
        if self.autonomous {
            // (Not reached: autonomous commits take their own tickets in `worker.rs`.)
            return Ok(crate::scheme::autonomous::ack::commit_ticket(
                &link.0,
                super::deps::ALL_LOGS.into(),
                gsn,
            ));
        }
        let acked = self.acked.load(SeqCst) >= gsn;
        if !acked {
            lane.wait_for(gsn);
        }
        // After the lane's store and the worker's publication of its `dgsn` (made before
        // this): the daemon may be parked waiting for either.
        if self.daemon_wait.notify() {
            proxy.wake();
        }
        if acked {
            self.fills_ok()?;
            return Ok(Ticket::DURABLE);
        }
        Ok(Ticket::waiter(Box::new(GsnWait {
            link: Arc::clone(link),
            gsn,
        })))
    }
}
