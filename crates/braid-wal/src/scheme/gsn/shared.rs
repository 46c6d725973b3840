//! What the gsn scheme's workers, its commit daemon and its tickets share: the logs, the page
//! clocks, the acknowledged GSN and the commit queue (the largest GSN waited for), and the
//! failure state. Commits join the queue in GSN order and are acknowledged once `acked`
//! reaches their GSN (passive group commit, Wang & Johnson Section 4.1; file devices: durable
//! GSN watermarks, see `commit.rs`).

use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::{Arc, OnceLock};

use braid_pmem::signal::PublishCell;
use crossbeam_utils::CachePadded;
use parking_lot::{Condvar, Mutex};

use super::commit::{GsnWait, Link};
use super::config::GsnConfig;
use super::counters::GsnCounters;
use super::log::{Log, Mode};
use super::pages::PageTable;
use crate::WalError;
use crate::scheme::Ticket;

/// What the workers, the commit daemon and the tickets share.
pub(crate) struct Shared {
    pub cfg: GsnConfig,
    pub mode: Mode,
    pub logs: Vec<Log>,
    pub pages: PageTable,
    /// Every commit with a GSN up to this is acknowledged.
    pub acked: CachePadded<AtomicU64>,
    /// The largest GSN a commit waits for (the commit queue, in GSN order).
    pub want: CachePadded<AtomicU64>,
    pub lock: Mutex<()>,
    pub waiter_cv: Condvar,
    pub daemon_cv: Condvar,
    pub waiters: AtomicUsize,
    pub daemon_sleeping: AtomicBool,
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

impl Shared {
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
        if self.waiters.load(SeqCst) > 0 {
            let _g = self.lock.lock();
            self.waiter_cv.notify_all();
        }
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
        let _g = self.lock.lock();
        self.waiter_cv.notify_all();
    }

    /// Join the commit queue for `gsn`; the ticket holds the committing worker's `link`.
    /// `proxy` counts the shared writes (the queue's word, the daemon's lock).
    pub(super) fn enqueue(
        &self,
        link: &Arc<Link>,
        gsn: u64,
        proxy: &crate::proxy::ProxyCounter,
    ) -> Result<Ticket, WalError> {
        if self.acked.load(SeqCst) >= gsn {
            self.fills_ok()?;
            return Ok(Ticket::Durable);
        }
        proxy.shared(1, 1);
        self.want.fetch_max(gsn, SeqCst);
        if self.daemon_sleeping.load(SeqCst) {
            proxy.shared(2, 1);
            let _g = self.lock.lock();
            self.daemon_cv.notify_one();
        }
        Ok(Ticket::Waiter(Box::new(GsnWait {
            link: Arc::clone(link),
            gsn,
        })))
    }
}
